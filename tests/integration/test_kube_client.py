"""KubeClient over real HTTPS: CRUD, typed errors, pagination, continue-token expiry, watch
streams, 410 Gone, resends (a 429 or 5xx with Retry-After; a GET whose connection broke; never a
write that went out) and in-cluster credentials.

Requests are counted by the client itself (its ``on_request`` hook), so all but the fault
injection tests run on a real cluster too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog

from slicectl.kube import config, errors
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.paging import ListPage, collect
from slicectl.kube.resources import NAMESPACES, PODS
from slicectl.sim.listing import CONTINUE_EXPIRED
from slicectl.sim.resources import NAMESPACE_TYPE
from slicectl.sim.server import EmbeddedApiServer
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.credentials import server_ca_and_address, valid_token
from tests.integration.support import HANG_GUARD, unscheduled_pod, wait_until


def server_of(api: Cluster) -> EmbeddedApiServer:
    assert api.server is not None, "embedded_only tests run on the embedded server"
    return api.server


@pytest.fixture
async def calls() -> list[tuple[str, str, int, float]]:
    return []


@pytest.fixture
async def client(
    api: Cluster, calls: list[tuple[str, str, int, float]]
) -> AsyncIterator[KubeClient]:
    def hook(verb: str, resource: str, status: int, seconds: float) -> None:
        calls.append((verb, resource, status, time.monotonic()))

    async with await KubeClient.connect(api.kubeconfig, on_request=hook) as c:
        yield c


@pytest.fixture
def ns(api: Cluster) -> str:
    return api.namespace


async def test_rate_limiter_waits_are_reported_per_lane(api: Cluster, ns: str) -> None:
    """Each wait is reported with its lane, and the tokens are spaced as the bucket says.
    The spacing is checked from when each token was taken, not from the wait alone: a slower
    server's answers refill part of the bucket between requests. A request reports its wait
    once its token is taken; ``reserve_token`` reports it ahead, when it takes it."""
    waits: list[tuple[bool, float]] = []
    taken: list[float] = []
    settings = ClientSettings(qps=4.0, burst=2)

    def hook(background: bool, seconds: float) -> None:
        waits.append((background, seconds))
        taken.append(time.monotonic())

    async with await KubeClient.connect(api.kubeconfig, settings=settings,
                                        on_rate_limit=hook) as c:
        for _ in range(3):  # a burst of 2: the third token comes 0.25 s after the first
            await c.list(PODS, ns)
        assert [bg for bg, _ in waits] == [False] * 3
        assert waits[0][1] < 0.05 and taken[2] - taken[0] >= 0.24
        assert waits[2][1] > 0 or taken[1] - taken[0] >= 0.24  # it waited, unless answers did
        wait = c.reserve_token()  # the syncer's way: the wait is reported when the token is
        assert waits[-1] == (False, wait) and taken[-1] + wait - taken[2] >= 0.24
        c.refund_token()
        waits.clear()
        # Background requests take only tokens the foreground can spare: here, a full bucket
        # (two tokens, 0.5 s after the third was taken).
        await c.request("GET", f"/api/v1/namespaces/{ns}/pods", background=True)
        ((background, waited),) = waits
        assert background and waited > 0 and taken[-1] - taken[2] >= 0.49


async def test_long_waits_for_the_rate_limit_are_logged_but_not_every_one(
    api: Cluster, ns: str,
) -> None:
    settings = ClientSettings(qps=0.8, burst=1)
    with structlog.testing.capture_logs() as logs:
        async with await KubeClient.connect(api.kubeconfig, settings=settings) as c:
            await c.list(PODS, ns)  # the burst's token
            await c.list(PODS, ns)  # waits about 1.25 s: said once ...
            assert c.reserve_token() > 1.0  # ... and not again within 30 s
            c.refund_token()
    said = [e for e in logs if e["event"] == "client_side_throttling"]
    assert len(said) == 1, said
    assert said[0]["waited_s"] >= 1.0 and said[0]["requests"] == 1 and said[0]["qps"] == 0.8
    assert "--kube-api-qps" in said[0]["hint"]


async def test_short_waits_that_add_up_are_logged_too(api: Cluster, ns: str) -> None:
    """Workers that each wait a little for every token spend all their time waiting: at
    10 QPS, requests in a row wait up to 0.1 s each (less the time the server takes to
    answer), and once those waits add up to a second, that is said, once."""
    settings = ClientSettings(qps=10.0, burst=1)
    waited: list[float] = []
    with structlog.testing.capture_logs() as logs:
        async with await KubeClient.connect(
                api.kubeconfig, settings=settings,
                on_rate_limit=lambda _background, seconds: waited.append(seconds)) as c:
            while sum(waited) < 1.05 and len(waited) < 100:
                await c.list(PODS, ns)
    said = [e for e in logs if e["event"] == "client_side_throttling"]
    assert len(said) == 1, said
    assert said[0]["waited_s"] >= 1.0 and said[0]["requests"] >= 10


async def test_crud_and_typed_errors(client: KubeClient, ns: str) -> None:
    async with asyncio.timeout(HANG_GUARD):
        created = await client.create(PODS, unscheduled_pod("a"), ns)
        assert created["metadata"]["uid"]
        with pytest.raises(errors.AlreadyExists) as exists:
            await client.create(PODS, unscheduled_pod("a"), ns)
        assert exists.value.status == 409
        with pytest.raises(errors.NotFound):
            await client.get(PODS, "missing", ns)
        with pytest.raises(errors.Invalid) as invalid:
            await client.create(PODS, unscheduled_pod("Not_A_Valid_Name"), ns)
        assert invalid.value.status == 422 and invalid.value.body is not None

        patched = await client.patch(PODS, "a", {"metadata": {"labels": {"app": "y"}}}, ns)
        assert patched["metadata"]["labels"] == {"app": "y"}
        json_patched = await client.patch(
            PODS, "a", [{"op": "add", "path": "/metadata/labels/tier", "value": "web"}], ns,
            patch_type="json",
        )
        assert json_patched["metadata"]["labels"] == {"app": "y", "tier": "web"}

        stale = dict(created)  # the resourceVersion from before both patches
        with pytest.raises(errors.Conflict) as conflict:
            await client.replace(PODS, "a", stale, ns)
        assert conflict.value.reason == "Conflict"
        with pytest.raises(errors.Conflict):
            await client.delete(PODS, "a", ns, preconditions={"uid": "not-the-uid"})

        await client.delete(PODS, "a", ns, preconditions={"uid": created["metadata"]["uid"]})
        async with asyncio.timeout(HANG_GUARD):
            while True:
                try:
                    await client.get(PODS, "a", ns)
                except errors.NotFound:
                    break
                await asyncio.sleep(0.05)


async def test_a_patch_answered_as_metadata_only(client: KubeClient, ns: str) -> None:
    """What the slice writer asks for: the patched object's metadata (its new version), not
    the object, as kube-apiserver answers any write in the form Accept asks for; an error is
    still the typed Status."""
    async with asyncio.timeout(HANG_GUARD):
        await client.create(PODS, unscheduled_pod("m"), ns)
        answer = await client.patch(
            PODS, "m", [{"op": "add", "path": "/metadata/labels", "value": {"app": "z"}}], ns,
            patch_type="json", metadata_only=True)
        assert answer["kind"] == "PartialObjectMetadata" and "spec" not in answer
        assert answer["metadata"]["labels"] == {"app": "z"}
        stored = await client.get(PODS, "m", ns)
        assert answer["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
        with pytest.raises(errors.NotFound):
            await client.patch(PODS, "missing", {"metadata": {"labels": {"a": "b"}}}, ns,
                               metadata_only=True)


async def test_list_follows_continue_tokens(
    client: KubeClient, ns: str, calls: list[tuple[str, str, int, float]]
) -> None:
    async with asyncio.timeout(HANG_GUARD):
        for i in range(7):
            await client.create(PODS, unscheduled_pod(f"p{i}"), ns)
        calls.clear()
        items, rv = await client.list(PODS, ns, limit=2)
        assert sorted(i["metadata"]["name"] for i in items) == [f"p{i}" for i in range(7)]
        assert int(rv) > 0
        assert [c[:3] for c in calls] == [("LIST", "pods", 200)] * 4
        selected, _ = await client.list(PODS, ns, label_selector="app=nothing", limit=2)
        assert selected == []


async def test_a_list_whose_continue_token_expired_starts_over_at_a_newer_snapshot(
    client: KubeClient, ns: str, calls: list[tuple[str, str, int, float]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 410 a server answers an expired continue token comes from the client here, on the
    second page, so this runs on a real cluster too; the pod created after the first page shows
    the list started over without the token (a retried token would read the old snapshot), and
    no item of the dropped first page is listed twice. The next test has the server expire it."""
    asked: list[str] = []

    async def expire_second_page(method: str, path: str) -> None:
        if method == "GET" and path == PODS.path(ns):
            asked.append(path)
            if len(asked) == 2:
                raise errors.Gone(410, "Expired", CONTINUE_EXPIRED)

    async with asyncio.timeout(HANG_GUARD):
        for i in range(5):
            await client.create(PODS, unscheduled_pod(f"p{i}"), ns)
        ClientFaults(monkeypatch).before.append(expire_second_page)
        calls.clear()
        pages: list[ListPage] = []
        async for page in client.list_pages(PODS, ns, limit=2):
            pages.append(page)
            if len(pages) == 1:
                await client.create(PODS, unscheduled_pod("p5"), ns)  # after the snapshot
        assert [p.restarted for p in pages] == [False, True, False, False]
        items, _ = await collect(replay(pages))
        assert sorted(i["metadata"]["name"] for i in items) == [f"p{i}" for i in range(6)]
        assert len(asked) == 5
        assert [c[:3] for c in calls if c[0] == "LIST"] == [("LIST", "pods", 200)] * 4


async def replay(pages: list[ListPage]) -> AsyncIterator[ListPage]:
    for page in pages:
        yield page


@pytest.mark.embedded_only(reason="fault injection: a forced compaction between two pages")
async def test_list_restarts_when_continue_token_expires(
    api: Cluster, client: KubeClient, ns: str, calls: list[tuple[str, str, int, float]]
) -> None:
    srv = server_of(api)
    async with asyncio.timeout(HANG_GUARD):
        for i in range(5):
            await client.create(PODS, unscheduled_pod(f"p{i}"), ns)
        bumped = False

        def compact_after_first_page(verb: str, resource: str, status: int, s: float) -> None:
            nonlocal bumped
            if verb == "LIST" and not bumped:
                bumped = True  # a write after the snapshot, then compaction: the token expires
                meta = {"name": "bump", "uid": "ns-bump",
                        "creationTimestamp": "2025-01-01T00:00:00Z"}
                srv.store.put(NAMESPACE_TYPE, {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": meta})
                srv.faults.compact()

        client._on_request = compact_after_first_page
        items, _ = await client.list(PODS, ns, limit=2)
        assert sorted(i["metadata"]["name"] for i in items) == [f"p{i}" for i in range(5)]
        assert srv.request_counts(verb="LIST", resource="pods", code=410) == 1
        names, _ = await client.list(NAMESPACES)
        assert "bump" in {n["metadata"]["name"] for n in names}


async def test_watch_streams_events_and_ends_on_timeout(client: KubeClient, ns: str) -> None:
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, ns)
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for event in client.watch(PODS, ns, resource_version=rv, timeout_seconds=2):
                if event.type != "BOOKMARK":
                    seen.append((event.type, event.object["metadata"]["name"]))

        task = asyncio.create_task(consume())
        await client.create(PODS, unscheduled_pod("w"), ns)
        await client.patch(PODS, "w", {"metadata": {"labels": {"app": "z"}}}, ns)
        await task  # ends normally when the server closes at timeoutSeconds
        assert seen == [("ADDED", "w"), ("MODIFIED", "w")]


async def test_long_lived_watches_never_starve_the_other_requests(api: Cluster, ns: str) -> None:
    """Every watch holds a connection for minutes (one per resource and watched namespace).
    A pool capped at burst + 64 ran out with a few dozen namespaces: the last watches never
    connected and every write or lease renewal queued for a connection until its timeout.
    client-go's transport has no such cap."""
    settings = ClientSettings(qps=1000.0, burst=1, request_timeout=10.0)
    async with await KubeClient.connect(api.kubeconfig, settings=settings) as c:
        _, rv = await c.list(PODS, ns)
        seen = [asyncio.Event() for _ in range(70)]  # more than the old cap of 65

        async def consume(i: int) -> None:
            async for event in c.watch(PODS, ns, resource_version=rv, timeout_seconds=120):
                if event.type == "ADDED":
                    seen[i].set()  # and the watch goes on, holding its connection

        tasks = [asyncio.create_task(consume(i)) for i in range(len(seen))]
        try:
            await api.client.create(PODS, unscheduled_pod("w"), ns)
            async with asyncio.timeout(HANG_GUARD):
                for event in seen:
                    await event.wait()
            assert (await c.get(PODS, "w", ns))["metadata"]["name"] == "w"
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def test_watch_from_compacted_version_raises_gone(
    api: Cluster, client: KubeClient, ns: str
) -> None:
    """On the embedded server the history is compacted by hand. A real one cannot be compacted
    from here, but ``resourceVersion=1`` is older than the watch cache of any cluster that has
    run for a while (the 410 then comes as an ERROR event in a 200 stream)."""
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, ns)
        await client.create(PODS, unscheduled_pod("x"), ns)
        if api.server is not None:
            api.server.faults.compact()
            with pytest.raises(errors.Gone):
                async for _ in client.watch(PODS, ns, resource_version=rv, timeout_seconds=5):
                    pass
            return
        with contextlib.suppress(errors.Gone):
            async for _ in client.watch(PODS, ns, resource_version="1", timeout_seconds=3):
                pass
            pytest.skip("fault injection: this kube-apiserver's watch cache still reaches back "
                        "to resourceVersion 1 (it started recently) and etcd cannot be "
                        "compacted from here")


async def test_stalled_watch_raises_watch_stalled(client: KubeClient, ns: str) -> None:
    """A watch on an idle namespace, without bookmarks: nothing arrives, which is a stall."""
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, ns)
        stream = client.watch(
            PODS, ns, resource_version=rv, timeout_seconds=60, inactivity_timeout=0.5,
            allow_bookmarks=False,
        )
        with pytest.raises(errors.WatchStalled):
            async for _ in stream:
                pass


@pytest.mark.embedded_only(reason="fault injection: half the requests answered 429")
async def test_429_retry_after_is_honoured(
    api: Cluster, client: KubeClient, ns: str, calls: list[tuple[str, str, int, float]]
) -> None:
    srv = server_of(api)
    async with asyncio.timeout(HANG_GUARD):
        await client.create(PODS, unscheduled_pod("t"), ns)
        srv.faults.throttle_rate = 0.5
        while not any(c[2] == 429 for c in calls):  # sequential GETs until one is throttled
            got = await client.get(PODS, "t", ns)
            assert got["metadata"]["name"] == "t"  # a throttled GET was retried to success
        srv.faults.throttle_rate = 0.0
        gets = [c for c in calls if c[0] == "GET"]
        assert gets[-1][2] == 200
        for sent, resent in itertools.pairwise(gets):
            if sent[2] == 429:  # resent only after the server's Retry-After (1 s)
                assert resent[3] - sent[3] >= 0.9


@contextlib.asynccontextmanager
async def counting_client(
    api: Cluster, calls: list[tuple[str, str, int, float]], resent: list[tuple[str, str, int]],
) -> AsyncIterator[KubeClient]:
    """A client that notes each request's answer in ``calls`` (verb, resource, status, when)
    and each resend in ``resent`` (verb, resource, the status that caused it)."""
    def on_request(verb: str, resource: str, status: int, seconds: float) -> None:
        calls.append((verb, resource, status, time.monotonic()))

    async with await KubeClient.connect(
        api.kubeconfig, on_request=on_request,
        on_retry=lambda verb, resource, status: resent.append((verb, resource, status)),
    ) as c:
        yield c


@pytest.mark.embedded_only(reason="fault injection: every request answered 500 for a while")
async def test_a_5xx_is_resent_when_and_only_when_it_carries_retry_after(
    api: Cluster, ns: str, calls: list[tuple[str, str, int, float]],
) -> None:
    """client-go resends a 429 and any 5xx whose ``Retry-After`` says when (an etcd timeout's
    ServerTimeout, a 504 "Too large resource version"), for every verb, each resend counted; a
    5xx without one is the caller's to retry."""
    srv = server_of(api)
    resent: list[tuple[str, str, int]] = []
    async with counting_client(api, calls, resent) as c, asyncio.timeout(HANG_GUARD):
        await c.create(PODS, unscheduled_pod("t"), ns)
        srv.faults.error_rate = 1.0
        try:
            with pytest.raises(errors.ServerError):
                await c.get(PODS, "t", ns)
            assert [s for _, _, s, _ in calls[1:]] == [500] and not resent
            srv.faults.error_retry_after = 1

            async def through_500s(verb: str, send: Awaitable[dict[str, Any]]) -> None:
                calls.clear()
                resent.clear()
                srv.faults.error_rate = 1.0
                answer = asyncio.ensure_future(send)

                async def resent_twice() -> bool:  # each 500 resent after its Retry-After
                    return len(resent) >= 2 or answer.done()

                await wait_until(resent_twice, what="two resends")
                srv.faults.error_rate = 0.0
                assert (await answer)["metadata"]["name"] == "t"
                assert calls[-1][2] == 200 and {s for _, _, s, _ in calls[:-1]} == {500}
                assert resent == [(verb, "pods", 500)] * (len(calls) - 1)
                for sent, again in itertools.pairwise(calls):
                    assert again[3] - sent[3] >= 0.9

            await through_500s("GET", c.get(PODS, "t", ns))
            await through_500s("PATCH", c.patch(PODS, "t", {"metadata": {"labels": {"a": "b"}}},
                                                ns))
        finally:
            srv.faults.error_rate, srv.faults.error_retry_after = 0.0, 0


@pytest.mark.embedded_only(reason="fault injection: connections reset after the server acted")
async def test_a_write_whose_answer_was_lost_is_not_sent_again_unseen(
    api: Cluster, client: KubeClient, ns: str, calls: list[tuple[str, str, int, float]],
) -> None:
    """A PUT or DELETE whose connection broke before its answer may have been applied: it is
    not sent again behind the caller's back (aiohttp resends those methods once, at once, as
    client-go never resends a write that went out), which would skip the rate limit, the write
    gate and the request metrics, and answer for the resend (a 409, a 404) instead. The
    caller sees the lost answer, as client-go's would."""
    srv = server_of(api)
    guarded: list[str] = []
    async with asyncio.timeout(HANG_GUARD):
        pod = await client.create(PODS, unscheduled_pod("t"), ns)
        pod["metadata"]["labels"] = {"a": "b"}
        sent = {verb: srv.request_counts(verb=verb, resource="pods") for verb in ("PUT", "DELETE")}
        srv.faults.lost_response_rate = 1.0
        try:
            with pytest.raises(aiohttp.ClientConnectionError):
                await client.replace(PODS, "t", pod, ns, guard=lambda: guarded.append("PUT"))
            with pytest.raises(aiohttp.ClientConnectionError):
                await client.delete(PODS, "t", ns, grace_period_seconds=0,
                                    guard=lambda: guarded.append("DELETE"))
        finally:
            srv.faults.lost_response_rate = 0.0
        assert {verb: srv.request_counts(verb=verb, resource="pods") - n
                for verb, n in sent.items()} == {"PUT": 1, "DELETE": 1}
        assert guarded == ["PUT", "DELETE"]
        assert [(verb, status) for verb, _, status, _ in calls[1:]] == [("PUT", 0), ("DELETE", 0)]
        with pytest.raises(errors.NotFound):  # the DELETE was applied
            await client.get(PODS, "t", ns)


@pytest.mark.embedded_only(reason="fault injection: every request reset for a while")
async def test_a_get_whose_connection_broke_is_resent_and_counted(
    api: Cluster, ns: str, calls: list[tuple[str, str, int, float]],
) -> None:
    """client-go resends a GET whose connection was reset or closed before the answer, 1 s
    later, up to 10 times, each through the rate limiter and counted as a retry (a paginated
    LIST goes on from its page, instead of failing back to its first); a write is never resent
    so (it may have been applied)."""
    srv = server_of(api)
    resent: list[tuple[str, str, int]] = []
    async with counting_client(api, calls, resent) as c, asyncio.timeout(HANG_GUARD):
        await c.create(PODS, unscheduled_pod("t"), ns)
        calls.clear()
        srv.faults.down(HANG_GUARD)
        try:
            with pytest.raises(aiohttp.ClientConnectionError):
                await c.patch(PODS, "t", {"metadata": {"labels": {"a": "b"}}}, ns)
            assert [(v, s) for v, _, s, _ in calls] == [("PATCH", 0)] and not resent
            calls.clear()
            answer = asyncio.ensure_future(c.get(PODS, "t", ns))

            async def resent_twice() -> bool:
                return len(resent) >= 2 or answer.done()

            await wait_until(resent_twice, what="two resends")
        finally:
            srv.faults.down(0)
        assert (await answer)["metadata"]["name"] == "t"
        assert calls[-1][2] == 200 and {s for _, _, s, _ in calls[:-1]} == {0}
        assert resent == [("GET", "pods", 0)] * (len(calls) - 1)
        for sent, again in itertools.pairwise(calls):
            assert again[3] - sent[3] >= 0.9


async def test_in_cluster_token_is_reread_after_401(
    api: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod's ca.crt (the server's CA) and a token file holding a stale token, then rotated."""
    ca, host, port = server_ca_and_address(api.kubeconfig)
    if ca is None:
        pytest.skip("the kubeconfig names no CA certificate, which in-cluster config requires")
    (tmp_path / "ca.crt").write_bytes(ca)
    token_file = tmp_path / "token"
    token_file.write_text("expired-token")
    token = await valid_token(api)
    monkeypatch.setattr(config, "_IN_CLUSTER_TOKEN", str(token_file))
    monkeypatch.setattr(config, "_IN_CLUSTER_CA", str(tmp_path / "ca.crt"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(port))
    statuses: list[int] = []
    async with asyncio.timeout(HANG_GUARD):
        client = await KubeClient.connect(on_request=lambda v, r, s, t: statuses.append(s))
        async with client:
            assert token not in repr(client)
            with pytest.raises(errors.Unauthorized):
                await client.list(PODS, api.namespace)
            token_file.write_text(token)  # the kubelet rotated the projected token
            await client.list(PODS, api.namespace)
    assert statuses == [401, 401, 401, 200]  # one re-read and resend per 401


async def test_watch_carries_a_one_megabyte_object(client: KubeClient, ns: str) -> None:
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, ns)
        big = unscheduled_pod("big")
        big["spec"]["containers"][0]["env"] = [{"name": "BLOB", "value": "x" * 1_000_000}]
        await client.create(PODS, big, ns)
        stream = client.watch(PODS, ns, resource_version=rv, timeout_seconds=5)
        async with contextlib.aclosing(stream):
            async for event in stream:
                assert event.type == "ADDED"
                env = event.object["spec"]["containers"][0]["env"]
                assert len(env[0]["value"]) == 1_000_000
                break
        assert client.malformed_lines == 0


async def test_server_warnings_are_logged_once_each(api: Cluster, ns: str) -> None:
    """A real server keeps the object and drops an unknown field with a ``Warning`` header
    (``fieldValidation`` defaults to Warn): the client says so, once per text."""
    pods = []
    for i in range(3):
        pod = unscheduled_pod(f"warned-{i}")
        pod["spec"]["bogusField"] = i
        pod["metadata"]["bogusMeta"] = "x"
        pods.append(pod)
    with structlog.testing.capture_logs() as logs:
        async with await KubeClient.connect(api.kubeconfig) as c:
            for pod in pods:
                created = await c.create(PODS, pod, ns)
                assert "bogusField" not in created["spec"]
    said = sorted(e["warning"] for e in logs if e["event"] == "api_server_warning")
    assert said == ['unknown field "metadata.bogusMeta"', 'unknown field "spec.bogusField"'], logs
    assert {e["method"] for e in logs if e["event"] == "api_server_warning"} == {"POST"}
