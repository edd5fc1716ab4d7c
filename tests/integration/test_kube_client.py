"""KubeClient against the embedded API server over real HTTPS: CRUD, typed errors, pagination,
continue-token expiry, watch streams and 429 handling."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from slicectl.kube import config, errors
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import NAMESPACES, PODS
from slicectl.sim.resources import NAMESPACE_TYPE
from slicectl.sim.server import EmbeddedApiServer

NS = "default"
HANG_GUARD = 30.0
pytestmark = pytest.mark.embedded_only


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
async def calls() -> list[tuple[str, str, int, float]]:
    return []


@pytest.fixture
async def client(
    srv: EmbeddedApiServer, calls: list[tuple[str, str, int, float]]
) -> AsyncIterator[KubeClient]:
    def hook(verb: str, resource: str, status: int, seconds: float) -> None:
        calls.append((verb, resource, status, time.monotonic()))

    async with await KubeClient.connect(srv.kubeconfig_path, on_request=hook) as c:
        yield c


async def test_crud_and_typed_errors(client: KubeClient) -> None:
    async with asyncio.timeout(HANG_GUARD):
        created = await client.create(PODS, pod("a"), NS)
        assert created["metadata"]["uid"]
        with pytest.raises(errors.AlreadyExists) as exists:
            await client.create(PODS, pod("a"), NS)
        assert exists.value.status == 409
        with pytest.raises(errors.NotFound):
            await client.get(PODS, "missing", NS)
        with pytest.raises(errors.Invalid) as invalid:
            await client.create(PODS, pod("Not_A_Valid_Name"), NS)
        assert invalid.value.status == 422 and invalid.value.body is not None

        patched = await client.patch(PODS, "a", {"metadata": {"labels": {"app": "y"}}}, NS)
        assert patched["metadata"]["labels"] == {"app": "y"}
        json_patched = await client.patch(
            PODS, "a", [{"op": "add", "path": "/metadata/labels/tier", "value": "web"}], NS,
            patch_type="json",
        )
        assert json_patched["metadata"]["labels"] == {"app": "y", "tier": "web"}

        stale = dict(created)  # the resourceVersion from before both patches
        with pytest.raises(errors.Conflict) as conflict:
            await client.replace(PODS, "a", stale, NS)
        assert conflict.value.reason == "Conflict"
        with pytest.raises(errors.Conflict):
            await client.delete(PODS, "a", NS, preconditions={"uid": "not-the-uid"})

        await client.delete(PODS, "a", NS, preconditions={"uid": created["metadata"]["uid"]})
        async with asyncio.timeout(HANG_GUARD):
            while True:
                try:
                    await client.get(PODS, "a", NS)
                except errors.NotFound:
                    break
                await asyncio.sleep(0.05)


async def test_list_follows_continue_tokens(
    srv: EmbeddedApiServer, client: KubeClient
) -> None:
    async with asyncio.timeout(HANG_GUARD):
        for i in range(7):
            await client.create(PODS, pod(f"p{i}"), NS)
        srv.reset_counts()
        items, rv = await client.list(PODS, NS, limit=2)
        assert sorted(i["metadata"]["name"] for i in items) == [f"p{i}" for i in range(7)]
        assert int(rv) > 0
        assert srv.request_counts(verb="LIST", resource="pods") == 4
        selected, _ = await client.list(PODS, NS, label_selector="app=nothing", limit=2)
        assert selected == []


async def test_list_restarts_when_continue_token_expires(
    srv: EmbeddedApiServer, client: KubeClient, calls: list[tuple[str, str, int, float]]
) -> None:
    async with asyncio.timeout(HANG_GUARD):
        for i in range(5):
            await client.create(PODS, pod(f"p{i}"), NS)
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
        items, _ = await client.list(PODS, NS, limit=2)
        assert sorted(i["metadata"]["name"] for i in items) == [f"p{i}" for i in range(5)]
        assert srv.request_counts(verb="LIST", resource="pods", code=410) == 1
        names, _ = await client.list(NAMESPACES)
        assert "bump" in {n["metadata"]["name"] for n in names}


async def test_watch_streams_events_and_ends_on_timeout(client: KubeClient) -> None:
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, NS)
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for event in client.watch(PODS, NS, resource_version=rv, timeout_seconds=2):
                if event.type != "BOOKMARK":
                    seen.append((event.type, event.object["metadata"]["name"]))

        task = asyncio.create_task(consume())
        await client.create(PODS, pod("w"), NS)
        await client.patch(PODS, "w", {"metadata": {"labels": {"app": "z"}}}, NS)
        await task  # ends normally when the server closes at timeoutSeconds
        assert seen == [("ADDED", "w"), ("MODIFIED", "w")]


async def test_watch_from_compacted_version_raises_gone(
    srv: EmbeddedApiServer, client: KubeClient
) -> None:
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, NS)
        await client.create(PODS, pod("x"), NS)
        srv.faults.compact()
        with pytest.raises(errors.Gone):
            async for _ in client.watch(PODS, NS, resource_version=rv, timeout_seconds=5):
                pass


async def test_stalled_watch_raises_watch_stalled(
    srv: EmbeddedApiServer, client: KubeClient
) -> None:
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, NS)
        stream = client.watch(
            PODS, NS, resource_version=rv, timeout_seconds=60, inactivity_timeout=0.5,
            allow_bookmarks=False,
        )
        with pytest.raises(errors.WatchStalled):
            async for _ in stream:
                pass


async def test_429_retry_after_is_honoured(
    srv: EmbeddedApiServer, client: KubeClient, calls: list[tuple[str, str, int, float]]
) -> None:
    async with asyncio.timeout(HANG_GUARD):
        await client.create(PODS, pod("t"), NS)
        srv.faults.throttle_rate = 0.5
        while not any(c[2] == 429 for c in calls):  # sequential GETs until one is throttled
            got = await client.get(PODS, "t", NS)
            assert got["metadata"]["name"] == "t"  # a throttled GET was retried to success
        srv.faults.throttle_rate = 0.0
        gets = [c for c in calls if c[0] == "GET"]
        assert gets[-1][2] == 200
        for sent, resent in itertools.pairwise(gets):
            if sent[2] == 429:  # resent only after the server's Retry-After (1 s)
                assert resent[3] - sent[3] >= 0.9


def service_account_files(srv: EmbeddedApiServer, directory: Path) -> Path:
    """A pod's ca.crt (the server's CA) and a token file holding a stale token."""
    kubeconfig = yaml.safe_load(Path(srv.kubeconfig_path).read_text())
    ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
    (directory / "ca.crt").write_bytes(ca)
    token_file = directory / "token"
    token_file.write_text("expired-token")
    return token_file


async def test_in_cluster_token_is_reread_after_401(
    srv: EmbeddedApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = service_account_files(srv, tmp_path)
    monkeypatch.setattr(config, "_IN_CLUSTER_TOKEN", str(token_file))
    monkeypatch.setattr(config, "_IN_CLUSTER_CA", str(tmp_path / "ca.crt"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(srv.port))
    statuses: list[int] = []
    async with asyncio.timeout(HANG_GUARD):
        client = await KubeClient.connect(on_request=lambda v, r, s, t: statuses.append(s))
        async with client:
            assert srv.token not in repr(client)
            with pytest.raises(errors.Unauthorized):
                await client.list(NAMESPACES)
            token_file.write_text(srv.token)  # the kubelet rotated the projected token
            items, _ = await client.list(NAMESPACES)
    assert "default" in {i["metadata"]["name"] for i in items}
    assert statuses == [401, 401, 401, 200]  # one re-read and resend per 401


async def test_watch_carries_a_one_megabyte_object(client: KubeClient) -> None:
    async with asyncio.timeout(HANG_GUARD):
        _, rv = await client.list(PODS, NS)
        big = pod("big")
        big["spec"]["containers"][0]["env"] = [{"name": "BLOB", "value": "x" * 1_000_000}]
        await client.create(PODS, big, NS)
        stream = client.watch(PODS, NS, resource_version=rv, timeout_seconds=5)
        async with contextlib.aclosing(stream):
            async for event in stream:
                assert event.type == "ADDED"
                env = event.object["spec"]["containers"][0]["env"]
                assert len(env[0]["value"]) == 1_000_000
                break
        assert client.malformed_lines == 0
