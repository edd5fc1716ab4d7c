"""What an operator sees: /metrics scraped from the running controller over HTTP.

The figures are checked against what happened on the API server (its slices, and the
controller's own request counts in the same scrape), so they run on a real cluster too.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families

from slicectl.cli.run import RunOptions
from slicectl.controller.routing import selector_key
from slicectl.kube.errors import ServerError
from slicectl.kube.resources import EVENTS
from slicectl.model.apis import SLICECTL
from tests.integration.client_faults import ClientFaults, matches
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    Running,
    create_pod,
    ensure_node,
    listing,
    local_get,
    options,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_until,
)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(port: int | None) -> Samples:
    """Every sample of the controller's /metrics, by name and sorted labels."""
    status, text = await local_get(port, "/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def _three_pods_and_a_create_that_fails(
    c: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[int], RunOptions]:
    """Three pods for one-endpoint slices, the second create of which fails once (500); the
    POSTs counted, and the options of a controller that serves /metrics."""
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.61.0.{i + 1}", {"app": "web"})
    faults = ClientFaults(monkeypatch)
    posts = [0]

    async def fail_second_create(method: str, path: str) -> None:
        if matches(method, path, "POST", "/endpointslices"):
            posts[0] += 1
            if posts[0] == 2:
                raise ServerError(500, "InternalError", "injected: one create fails")

    faults.before.append(fail_second_create)
    opts = dataclasses.replace(
        options(c.kubeconfig, c.namespace, max_endpoints_per_slice=1),
        metrics_bind_address="127.0.0.1:0")
    return posts, opts


async def _served_after_the_failure(c: Cluster, run: Running) -> None:
    async def served() -> bool:
        slices = await slices_of(c.client, c.namespace, "web")
        return len(slices) == 3 and run.controller.idle()

    await wait_until(served, what="3 one-endpoint slices after a failed create")


async def test_writes_of_a_failed_sync_are_counted(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sync whose writes partly landed before one failed still made those changes: upstream
    counts ``changes`` per acknowledged write, whatever the rest of the sync does."""
    c = cluster
    posts, opts = await _three_pods_and_a_create_that_fails(c, monkeypatch)
    async with running_controller(opts) as run:
        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
        await _served_after_the_failure(c, run)
        got = await scrape(run.health.metrics_port)
    assert posts[0] >= 4, "the failed create was not retried"
    created = got[("endpoint_slice_controller_changes_total", (("operation", "create"),))]
    acknowledged = got[("slicectl_api_requests_total",
                        (("code", "201"), ("resource", "endpointslices"), ("verb", "POST")))]
    assert acknowledged == 3
    assert created == acknowledged, "creates acknowledged in a failed sync were not counted"
    assert got[("endpoint_slice_controller_syncs_total", (("result", "error"),))] == 1
    assert got[("slicectl_trigger_to_write_seconds_count", ())] == 3


async def test_each_write_is_timed_when_its_own_answer_comes(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``slicectl_trigger_to_write_seconds`` runs to each write's acknowledgement: a write of
    a sync that landed is counted and timed while another write of that sync is still out (as
    writes waiting in turn for rate-limit tokens are), not only when the whole sync ends."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(2):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.63.0.{i + 1}", {"app": "web"})
    faults = ClientFaults(monkeypatch)
    posts = [0]
    release = asyncio.Event()

    async def hold_second_create(method: str, path: str) -> None:
        if matches(method, path, "POST", "/endpointslices"):
            posts[0] += 1
            if posts[0] == 2:
                await release.wait()

    faults.before.append(hold_second_create)
    opts = dataclasses.replace(
        options(c.kubeconfig, c.namespace, max_endpoints_per_slice=1),
        metrics_bind_address="127.0.0.1:0")
    try:
        async with running_controller(opts) as run:
            await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
            port = run.health.metrics_port

            async def timed(writes: int) -> bool:
                got = await scrape(port)
                return got[("slicectl_trigger_to_write_seconds_count", ())] == writes

            await wait_until(lambda: timed(1), what="the first create timed, the second held")
            got = await scrape(port)
            assert posts[0] == 2 and not release.is_set()
            assert got[("endpoint_slice_controller_changes_total",
                        (("operation", "create"),))] == 1
            assert got[("endpoint_slice_controller_syncs_total", (("result", "success"),))] == 0
            release.set()
            await wait_until(lambda: timed(2), what="the second create timed once released")
    finally:
        release.set()


async def test_every_line_about_a_selector_names_it_the_same_way(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An operator filters the logs by ``selector``: the Warning behind a failed sync must
    carry the same value as the "sync failed" and "synced" lines of that selector."""
    c = cluster
    _, opts = await _three_pods_and_a_create_that_fails(c, monkeypatch)
    with structlog.testing.capture_logs() as logs:
        async with running_controller(opts) as run:
            await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
            await _served_after_the_failure(c, run)
    named = {line["event"]: line["selector"] for line in logs if "selector" in line}
    assert {"selector problem", "sync failed", "synced"} <= named.keys()
    assert set(named.values()) == {selector_key(SLICECTL, c.namespace, "web")}, named


async def test_an_invalid_spec_is_logged_once_not_on_every_sync(cluster: Cluster) -> None:
    """An invalid selector is still served (its last valid spec), so every change of its pods
    syncs it, and each sync reports the spec again: to the Event, which folds the repeats into
    one series, and to the log, which must not grow a Warning per sync under steady churn."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.62.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

    async def served_ready(want: bool) -> None:
        async def served() -> bool:
            eps = [ep for s in await slices_of(c.client, c.namespace, "web")
                   for ep in s.get("endpoints") or []]
            return bool(eps) and eps[0]["conditions"]["ready"] is want

        await wait_until(served, what=f"ready={want} served")

    with structlog.testing.capture_logs() as logs:
        async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
            await served_ready(True)
            # Passes the CRD schema (matchLabels keys are not checked there) but not slicectl.
            await c.client.patch(ESEL, "web", {"spec": {"selector": {"matchLabels": {
                "app": "web", "not a valid key!": "x"}}}}, c.namespace, patch_type="merge")

            async def warned() -> bool:
                return any(line["event"] == "selector problem" for line in logs)

            await wait_until(warned, what="the InvalidSpec warning")
            for flip in range(6):
                await set_ready(c.client, c.namespace, "web-0", flip % 2 == 1)
                await served_ready(flip % 2 == 1)
    synced = [line for line in logs if line["event"] == "synced"]
    assert len(synced) >= 6, "every readiness flip was a sync"
    warnings = [line for line in logs if line["event"] == "selector problem"]
    assert len(warnings) == 1, f"{len(warnings)} warnings for one invalid spec"
    assert warnings[0]["reason"] == "InvalidSpec"


async def test_a_sync_stuck_on_the_api_server_shows_before_it_ends(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A create that hangs holds its sync: the longest-running gauge grows while it hangs (an
    alert can fire before any sync ends), the depth counts no key waiting for its window, and
    both return to 0 once the write goes through."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.62.0.1", {"app": "web"})
    faults = ClientFaults(monkeypatch)
    release = asyncio.Event()

    async def hang_creates(method: str, path: str) -> None:
        if matches(method, path, "POST", "/endpointslices"):
            await release.wait()

    faults.before.append(hang_creates)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               metrics_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
        port = run.health.metrics_port

        async def stuck() -> bool:
            got = await scrape(port)
            return got[("slicectl_longest_running_sync_seconds", ())] >= 1.5

        await wait_until(stuck, what="the hanging sync shown as running for 1.5 s")
        got = await scrape(port)
        assert got[("slicectl_queue_adds_total", ())] >= 1
        release.set()

        async def done() -> bool:
            got = await scrape(port)
            return (bool(await slices_of(c.client, c.namespace, "web"))
                    and got[("slicectl_longest_running_sync_seconds", ())] == 0
                    and got[("slicectl_queue_depth", ())] == 0)

        await wait_until(done, what="the slice written and the gauges back at 0")


async def test_a_sync_that_fails_before_writing_warns_on_the_selector(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Upstream emits FailedToUpdateEndpointSlices for any failed sync; a failure that is no
    write's (here the planner raising, as a bug would) must be on the object too, where an
    operator looks first, not only in the controller's log. The retry then succeeds."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.63.0.1", {"app": "web"})
    from slicectl.reconcile import plan as real_plan

    calls = [0]

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("injected: the planner failed")
        return real_plan(*args, **kwargs)

    monkeypatch.setattr("slicectl.controller.sync.plan", failing_once)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
        await wait_until(listing(c.client, c.namespace, "web", {"web-0"}),
                         what="the slice written by the retry")

        async def warnings() -> list[dict[str, Any]]:
            items, _ = await c.client.list(EVENTS, c.namespace)
            return [e for e in items if e.get("reason") == "FailedToUpdateEndpointSlices"
                    and (e.get("regarding") or {}).get("name") == "web"]

        async def warned() -> bool:
            return bool(await warnings())

        await wait_until(warned, what="the Warning Event on the selector")
        [event] = await warnings()
    assert event["type"] == "Warning"
    assert "injected: the planner failed" in event["note"]


@pytest.mark.embedded_only(reason="fault injection: every request answered 429 for a while")
async def test_resends_after_a_429_are_counted(cluster: Cluster) -> None:
    """A request the server throttles is resent after its ``Retry-After`` (at most 60 s, up to
    10 times), holding its caller meanwhile: each resend is counted, as client-go's
    ``rest_client_request_retries_total`` counts them, so a sync held that way shows why."""
    c = cluster
    assert c.server is not None
    opts = options(c.kubeconfig, c.namespace)
    opts = dataclasses.replace(  # paginated LISTs and their watches, each resent alike
        opts, controller=dataclasses.replace(opts.controller, watch_list=False),
        metrics_bind_address="127.0.0.1:0")
    c.server.faults.throttle_rate = 1.0
    try:
        async with running_controller(opts) as run:
            port = run.health.metrics_port

            async def resent() -> bool:
                got = await scrape(port)
                return sum(v for (name, _), v in got.items()
                           if name == "slicectl_api_request_retries_total") >= 2

            await wait_until(resent, what="two resends after a 429 counted")
            c.server.faults.throttle_rate = 0.0
            await asyncio.wait_for(run.controller.caches_synced.wait(), 60)
            got = await scrape(port)
    finally:
        c.server.faults.throttle_rate = 0.0
    retries = {labels: v for (name, labels), v in got.items()
               if name == "slicectl_api_request_retries_total"}
    throttled = {labels: v for (name, labels), v in got.items()
                 if name == "slicectl_api_requests_total" and ("code", "429") in labels}
    assert retries and all(("code", "429") in labels for labels in retries)
    for labels, count in retries.items():
        assert throttled[labels] >= count, "a resend counted without its 429"
