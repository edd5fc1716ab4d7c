"""A replica that stands by for a long time, then takes over.

Caches run on every replica, but the workers only while it leads (one *term*): what a standby
sees is the leader's work. Its takeover must start as a restart would, from the caches and the
objects (the first sync of each selector takes its trigger time from them), not from the
changes it watched the last leader publish, possibly weeks ago; and standing by must cost
nothing per selector created and deleted meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.controller.supervisor import cancel_quietly
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import PODS
from slicectl.model.records import ANNOTATION_TRIGGER_TIME
from slicectl.model.timefmt import parse_rfc3339
from slicectl.obs.metrics import Metrics
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    pod_body,
    selector_body,
    slices_of,
    wait_until,
)

CONFIG_BATCH = 0.0


def _stamp(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


async def _ready_pod(client: KubeClient, ns: str, name: str, ip: str, since: str) -> None:
    """A Running pod that turned Ready at ``since`` (the kubelet's lastTransitionTime)."""
    await client.create(PODS, pod_body(name, {"app": "web"}), ns)
    await client.patch(PODS, name, {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}],
    }}, ns, subresource="status")


@contextlib.asynccontextmanager
async def _caches(controller: Controller) -> AsyncIterator[asyncio.Task[None]]:
    caches = asyncio.create_task(controller.run_caches())
    try:
        await asyncio.wait_for(controller.caches_synced.wait(), 30)
        yield caches
    finally:
        controller.queue.shutdown()
        await cancel_quietly(caches)


async def _trigger_times(c: Cluster, name: str) -> list[str]:
    return [s["metadata"].get("annotations", {}).get(ANNOTATION_TRIGGER_TIME, "")
            for s in await slices_of(c.client, c.namespace, name)]


async def test_a_takeover_stamps_what_the_last_leader_left_unpublished(cluster: Cluster) -> None:
    """The standby watched web-1 turn Ready an hour ago (the leader published it then) and
    web-2 a minute ago, after the leader died. Its first write must say a minute ago: the
    oldest change it publishes. It said an hour ago: its queue had held web-1's change all
    along, the leader's work, and handed that time to the takeover's first sync."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.40.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    config = ControllerConfig(namespaces=(c.namespace,), batch_period=CONFIG_BATCH)
    leader = Controller(c.client, config)
    standby = Controller(c.client, config)
    async with _caches(standby), _caches(leader):
        workers = asyncio.create_task(leader.run_workers())
        try:
            async def served(n: int) -> bool:
                slices = await slices_of(c.client, c.namespace, "web")
                return sum(len(s["endpoints"]) for s in slices) == n

            await wait_until(lambda: served(1), what="the leader's first sync")
            an_hour_ago = _stamp(3600)
            await _ready_pod(c.client, c.namespace, "web-1", "10.40.0.2", an_hour_ago)
            await wait_until(lambda: served(2), what="the leader publishes web-1")
            [stamp] = await _trigger_times(c, "web")
            assert parse_rfc3339(stamp) == parse_rfc3339(an_hour_ago)
        finally:
            await cancel_quietly(workers)  # the leader dies
        a_minute_ago = _stamp(60)
        await _ready_pod(c.client, c.namespace, "web-2", "10.40.0.3", a_minute_ago)

        async def standby_sees_it() -> bool:
            return any(p.name == "web-2" and p.ready for p in standby.router.pods.values())

        await wait_until(standby_sees_it, what="the standby's cache shows web-2")
        takeover = asyncio.create_task(standby.run_workers())
        try:
            await wait_until(lambda: served(3), what="the new leader publishes web-2")
            [stamp] = await _trigger_times(c, "web")
            assert parse_rfc3339(stamp) == parse_rfc3339(a_minute_ago), (
                f"the takeover stamped {stamp}: web-1's change, published an hour before")
        finally:
            await cancel_quietly(takeover)


async def test_standing_by_keeps_nothing_of_selectors_created_and_deleted(
    cluster: Cluster,
) -> None:
    """Selectors come and go (with their slices, written by the leader) while a replica stands
    by for weeks: it must hold nothing for those that went, in its queue or its tracker."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.41.0.1", {"app": "web"})
    config = ControllerConfig(namespaces=(c.namespace,), batch_period=CONFIG_BATCH)
    leader = Controller(c.client, config)
    standby = Controller(c.client, config)
    async with _caches(standby), _caches(leader):
        workers = asyncio.create_task(leader.run_workers())
        try:
            for i in range(20):
                raw: dict[str, Any] = await c.client.create(
                    ESEL, selector_body(f"web-{i}", {"app": "web"}), c.namespace)

                async def published(name: str = f"web-{i}") -> bool:
                    return bool(await slices_of(c.client, c.namespace, name))

                await wait_until(published, what=f"web-{i}'s slice")
                await c.client.delete(ESEL, raw["metadata"]["name"], c.namespace)

            async def collected() -> bool:
                items = [s for i in range(20)
                         for s in await slices_of(c.client, c.namespace, f"web-{i}")]
                return not items and not len(standby.router.selectors)

            await wait_until(collected, what="every selector and slice gone")

            async def standby_holds_nothing() -> bool:
                return len(standby.queue) == 0 and len(standby.tracker) == 0

            with contextlib.suppress(AssertionError):
                await wait_until(standby_holds_nothing, limit=10)
            assert (len(standby.queue), len(standby.tracker)) == (0, 0), (
                "the standby still holds queue entries or expectations of deleted selectors")
        finally:
            await cancel_quietly(workers)


async def test_a_replica_that_stops_leading_reports_no_slices(cluster: Cluster) -> None:
    """The slice gauges are the leader's view. A replica that lost the lease kept showing its
    last term's figures, also for selectors deleted while it stood by (nothing syncs them
    there), so a sum over the replicas counted the slices twice after a failover."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.42.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    metrics = Metrics()
    config = ControllerConfig(namespaces=(c.namespace,), batch_period=CONFIG_BATCH)
    replica = Controller(c.client, config, metrics=metrics)

    def gauge(name: str) -> float | None:
        return metrics.registry.get_sample_value(f"endpoint_slice_controller_{name}")

    async with _caches(replica):
        term = asyncio.create_task(replica.run_workers())
        try:
            async def counted() -> bool:
                return gauge("num_endpoint_slices") == 1 and gauge("endpoints_desired") == 1

            await wait_until(counted, what="the leader's slice gauges")
        finally:
            await cancel_quietly(term)  # the lease is lost
        await c.client.delete(ESEL, "web", c.namespace)
        await wait_until(lambda: _true(not len(replica.router.selectors)),
                         what="the standby's cache drops the selector")
        assert (gauge("num_endpoint_slices"), gauge("endpoints_desired"),
                gauge("desired_endpoint_slices")) == (0, 0, 0)


async def _true(value: bool) -> bool:
    return value


async def test_a_term_that_ends_as_the_next_begins_leaves_the_next_one_working(
    cluster: Cluster,
) -> None:
    """The lease lost and won again at once: the elector cancels the workers and the next
    term's start. The first term's end, finishing after the next term began, must not stop
    the new term's events from reaching the queue."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.43.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    config = ControllerConfig(namespaces=(c.namespace,), batch_period=CONFIG_BATCH)
    replica = Controller(c.client, config)

    async def served(n: int) -> bool:
        slices = await slices_of(c.client, c.namespace, "web")
        return sum(len(s["endpoints"]) for s in slices) == n

    async with _caches(replica):
        first = asyncio.create_task(replica.run_workers())
        await wait_until(lambda: served(1), what="the first term's sync")
        first.cancel()
        second = asyncio.create_task(replica.run_workers())
        try:
            await asyncio.gather(first, return_exceptions=True)
            await create_pod(c.client, c.namespace, "web-1", "10.43.0.2", {"app": "web"})
            await wait_until(lambda: served(2), what="the second term serves a new pod")
        finally:
            await cancel_quietly(second)
