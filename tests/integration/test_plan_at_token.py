"""A sync that waits for its rate-limit token plans again when the token is due.

Under the client's rate limit (a burst of syncs across many selectors), a plan made when the
sync began is stale by the time its write may go out. The syncer takes the token first and, if
it had to wait, plans from the caches of that moment: the write carries the changes that came
during the wait instead of leaving them to the next sync a window later. Runs against the
embedded server or a real cluster (``SLICECTL_TEST_KUBECONFIG``); it needs no fault knob.

The controller passes that wait on to the queue (``WorkQueue.throttled``): a stream held back by
the rate limit takes its share of the client's rate at once (the rule itself:
tests/unit/test_queue.py).
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slicectl.controller.routing import selector_key
from slicectl.controller.sync import Syncer, SyncResult
from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import Prepaid, SliceWriter
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_selector
from slicectl.model.records import PodRecord
from slicectl.reconcile import Settings, plan
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    HANG_GUARD,
    SyncInputs,
    create_pod,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)
from tests.unit.reconcile_builders import make_pod

KEY = "slicectl.io/ns/web"
PODS = 10
SLOW_QPS = 0.5  # a throttled sync waits 2 s for its token: the test acts well within that


def _pod(i: int, ns: str) -> PodRecord:
    return make_pod(f"web-{i}", f"10.44.0.{i + 1}", namespace=ns, node="")


class ReservingWriter(SliceWriter):
    """A :class:`SliceWriter` that keeps the wait of every rate-limit token a sync took."""

    def __init__(self, client: KubeClient, tracker: SliceTracker) -> None:
        super().__init__(client, tracker)
        self.waits: list[float] = []

    def reserve(self, token: Prepaid) -> float:
        wait = super().reserve(token)
        self.waits.append(wait)
        return wait


async def _throttled_syncer(
    c: Cluster, qps: float,
) -> tuple[Syncer, SyncInputs, KubeClient, ReservingWriter]:
    raw = await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    inputs = SyncInputs(parse_selector(raw, SLICECTL))
    slow = await KubeClient.connect(c.kubeconfig, settings=ClientSettings(qps=qps, burst=1))
    await slow.list(ENDPOINTSLICES, c.namespace)  # spends the only token: the next one waits
    tracker = SliceTracker()
    writer = ReservingWriter(slow, tracker)
    syncer = Syncer(inputs, tracker, writer, Settings(), publish_status=None,
                    warn=lambda *_: None)
    return syncer, inputs, slow, writer


async def _waiting_for_its_token(writer: ReservingWriter, sync: asyncio.Task[SyncResult]) -> None:
    """Wait until ``sync`` planned, took its token and sleeps until the token is due."""
    async def taken() -> bool:
        return bool(writer.waits) or sync.done()

    await wait_until(taken, what="the sync's token taken")
    assert not sync.done() and writer.waits[0] > 0, "the sync did not wait for its token"


async def test_a_throttled_sync_writes_the_changes_that_came_while_it_waited(
    cluster: Cluster,
) -> None:
    c = cluster
    syncer, inputs, slow, writer = await _throttled_syncer(c, qps=SLOW_QPS)
    try:
        inputs.pods = [_pod(0, c.namespace)]
        sync = asyncio.create_task(syncer.sync(KEY, None))
        await _waiting_for_its_token(writer, sync)  # with a plan of one endpoint
        inputs.pods = [_pod(i, c.namespace) for i in range(3)]  # two more pods became ready
        result = await asyncio.wait_for(sync, 10)
        assert len(result.writes.created) == 1 and result.writes.writes == 1
        assert result.throttled, "the controller learns that the sync waited for its token"
        (live,) = await slices_of(c.client, c.namespace, "web")
        assert sorted(e["targetRef"]["name"] for e in live["endpoints"]) == [
            "web-0", "web-1", "web-2"], "the write carried the pods that came during the wait"
        assert live["metadata"]["generation"] == 1, "one write: created with all three"
    finally:
        await slow.close()


async def test_a_sync_whose_token_was_there_is_not_throttled(cluster: Cluster) -> None:
    c = cluster
    syncer, inputs, slow, _ = await _throttled_syncer(c, qps=2.0)
    try:
        await asyncio.sleep(0.6)  # the bucket refilled its one token
        inputs.pods = [_pod(0, c.namespace)]
        result = await asyncio.wait_for(syncer.sync(KEY, None), 10)
        assert result.writes.writes == 1 and not result.throttled
    finally:
        await slow.close()


async def test_a_throttled_sync_with_nothing_left_to_write_gives_its_token_back(
    cluster: Cluster,
) -> None:
    c = cluster
    syncer, inputs, slow, writer = await _throttled_syncer(c, qps=SLOW_QPS)
    try:
        one = [_pod(0, c.namespace)]
        first = plan(inputs.sel, one, {}, [], Settings())
        written = await SliceWriter(c.client, SliceTracker()).apply(KEY, inputs.sel, first, None)
        inputs.cached = list(written.created)  # the slice lists web-0, as the pods say
        inputs.pods = [*one, _pod(1, c.namespace)]  # web-1 became ready: an update to make
        sync = asyncio.create_task(syncer.sync(KEY, None))
        await _waiting_for_its_token(writer, sync)
        inputs.pods = one  # ... and went away again while the sync waited
        result = await asyncio.wait_for(sync, 10)
        assert result.writes.writes == 0, "the slice already says what the pods say"
        (live,) = await slices_of(c.client, c.namespace, "web")
        assert live["metadata"]["generation"] == 1
        assert slow.reserve_token() == 0.0, "the unused token went back: the next request " \
            "has it at once"
    finally:
        await slow.close()


@pytest.mark.parametrize("qps", [2.0, 1000.0])
async def test_the_controller_tells_the_queue_which_syncs_waited_for_their_token(
    cluster: Cluster, qps: float,
) -> None:
    c = cluster
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               client=ClientSettings(qps=qps, burst=2))
    async with running_controller(opts) as running:
        queue = running.controller.queue
        reported: list[str] = []
        throttled = queue.throttled

        def record(key: str) -> None:
            reported.append(key)
            throttled(key)

        queue.throttled = record  # type: ignore[method-assign]
        # Start the pods once the initial sync is done: on a slow machine the start-up LISTs,
        # throttled too, can take longer than the pods, and one initial sync would take them all.
        await asyncio.wait_for(running.controller.initial_sync_done.wait(), HANG_GUARD)
        # A pod every 100 ms asks for a sync (and a write) about as often: at 2 QPS with a
        # burst of 2 some of them must wait, however fast or slow the server answers.
        for i in range(PODS):
            await create_pod(c.client, c.namespace, f"web-{i}", f"10.44.1.{i + 1}", {"app": "web"})
            await asyncio.sleep(0.1)

        async def published() -> bool:
            listed = sum(len(s.get("endpoints") or []) for s in
                         await slices_of(c.client, c.namespace, "web"))
            return listed == PODS

        await wait_until(published, what=f"{PODS} endpoints")
        metrics = running.controller.metrics
        assert metrics is not None
        waited = {s.name: s.value for family in text_string_to_metric_families(
            metrics.render().decode()) for s in family.samples
            if s.labels.get("lane") == "foreground" and "le" not in s.labels}
    key = selector_key(SLICECTL, c.namespace, "web")
    assert waited["slicectl_rate_limiter_wait_seconds_count"] >= PODS / 2, "waits not counted"
    if qps < 10:
        assert key in reported, "a sync that waited for its token was not passed on"
        assert waited["slicectl_rate_limiter_wait_seconds_sum"] >= 1.0, "2 QPS waits not seen"
    else:
        assert reported == [], "a sync that never waited was reported as throttled"
        assert waited["slicectl_rate_limiter_wait_seconds_sum"] < 0.5
