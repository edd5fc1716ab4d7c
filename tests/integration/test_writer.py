"""SliceWriter against a real API server: a 409 refreshes the one slice and retries at once.

The writer is driven directly with plans built from a deliberately stale copy of a slice, so
the server's optimistic-concurrency check fires deterministically.
"""

from __future__ import annotations

import pytest

from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import SliceVanished, SliceWriter
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_selector, parse_slice
from slicectl.model.records import PodRecord, SelectorRecord
from slicectl.reconcile import Settings, plan
from tests.integration.conftest import Cluster
from tests.integration.support import ESEL, selector_body

KEY = "slicectl.io/ns/web"


def pod(i: int, ready: bool = True, ns: str = "") -> PodRecord:
    return PodRecord(namespace=ns, name=f"web-{i}", uid=f"uid-{i}", resource_version="1",
                     labels={"app": "web"}, phase="Running", pod_ips=(f"10.10.0.{i + 1}",),
                     ready=ready, ready_transition=None, terminating=False, node_name="",
                     hostname="", subdomain="")


async def selector(c: Cluster) -> SelectorRecord:
    raw = await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    return parse_selector(raw, SLICECTL)


async def test_conflict_refreshes_the_one_slice_and_retries_at_once(cluster: Cluster) -> None:
    c = cluster
    sel = await selector(c)
    tracker = SliceTracker()
    writer = SliceWriter(c.client, tracker)
    pods = [pod(i, ns=c.namespace) for i in range(3)]
    first = await writer.apply(KEY, sel, plan(sel, pods, {}, [], Settings()), None)
    (created,) = first.created
    # Someone else writes the slice: our cached copy (``created``) is now stale.
    await c.client.patch(ENDPOINTSLICES, created.name, {"metadata": {"annotations": {
        "example.com/touched": "yes"}}}, c.namespace)
    pods[1] = pod(1, ready=False, ns=c.namespace)
    result = await writer.apply(KEY, sel, plan(sel, pods, {}, [created], Settings()), None)
    assert result.conflicts == 1
    assert [s.name for s in result.updated] == [created.name]
    live = parse_slice(await c.client.get(ENDPOINTSLICES, created.name, c.namespace))
    assert {e.target.name: e.ready for e in live.endpoints if e.target} == {
        "web-0": True, "web-1": False, "web-2": True}
    assert live.annotations.get("example.com/touched") == "yes", "the other writer's field kept"
    assert tracker.tracked(KEY) == {live.uid: live.generation}


async def test_conflict_with_a_slice_already_right_writes_nothing(cluster: Cluster) -> None:
    c = cluster
    sel = await selector(c)
    writer = SliceWriter(c.client, SliceTracker())
    pods = [pod(i, ns=c.namespace) for i in range(2)]
    (created,) = (await writer.apply(KEY, sel, plan(sel, pods, {}, [], Settings()), None)).created
    pods[0] = pod(0, ready=False, ns=c.namespace)
    wanted = plan(sel, pods, {}, [created], Settings())
    assert len(wanted.updates) == 1
    # Another writer already made exactly the change we are about to make.
    fresh = await c.client.get(ENDPOINTSLICES, created.name, c.namespace)
    fresh["endpoints"][[e["targetRef"]["name"] for e in fresh["endpoints"]].index("web-0")][
        "conditions"] = {"ready": False, "serving": False, "terminating": False}
    before = (await c.client.replace(ENDPOINTSLICES, created.name, fresh, c.namespace))
    result = await writer.apply(KEY, sel, wanted, None)
    assert result.conflicts == 1 and result.updated == []
    after = await c.client.get(ENDPOINTSLICES, created.name, c.namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_slice_deleted_meanwhile_is_tolerated_on_delete_and_reported_on_update(
    cluster: Cluster,
) -> None:
    c = cluster
    sel = await selector(c)
    writer = SliceWriter(c.client, SliceTracker())
    one = Settings(max_endpoints_per_slice=1)
    pods = [pod(i, ns=c.namespace) for i in range(3)]
    created = (await writer.apply(KEY, sel, plan(sel, pods, {}, [], one), None)).created
    by_pod = {s.endpoints[0].target.name: s for s in created if s.endpoints[0].target}
    await c.client.delete(ENDPOINTSLICES, by_pod["web-2"].name, c.namespace)
    # From the stale cache, dropping web-2 deletes a slice that is already gone: not an error.
    result = await writer.apply(KEY, sel, plan(sel, pods[:2], {}, created, one), None)
    assert result.deleted == [] and result.created == [] and result.updated == []
    # Updating a slice that is gone says so, so the sync waits for the cache instead of failing.
    await c.client.delete(ENDPOINTSLICES, by_pod["web-1"].name, c.namespace)
    flipped = [pods[0], pod(1, ready=False, ns=c.namespace)]
    stale = [by_pod["web-0"], by_pod["web-1"]]
    with pytest.raises(SliceVanished):
        await writer.apply(KEY, sel, plan(sel, flipped, {}, stale, one), None)
