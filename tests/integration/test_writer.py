"""SliceWriter against a real API server: a 409 refreshes the one slice and retries at once;
a plan's writes go out stage by stage.

The writer is driven directly with plans built from a deliberately stale copy of a slice, so
the server's optimistic-concurrency check fires deterministically; and with plans of several
writes, to see which go out together and which wait (the stages of ``write_stages``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import SliceVanished, SliceWriter, WriteResult
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_selector, parse_slice
from slicectl.model.records import Endpoint, PodRecord, SelectorRecord, SliceRecord
from slicectl.reconcile import Plan, Settings, SliceSpec, SliceUpdate, plan
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import ESEL, selector_body

KEY = "slicectl.io/ns/web"
HOLD = 0.5  # seconds each EndpointSlice write is held in the concurrency tests (a slow server)


def pod(i: int, ready: bool = True, ns: str = "") -> PodRecord:
    return PodRecord(namespace=ns, name=f"web-{i}", uid=f"uid-{i}", resource_version="1",
                     labels={"app": "web"}, phase="Running", pod_ips=(f"10.10.0.{i + 1}",),
                     ready=ready, ready_transition=None, terminating=False, node_name="",
                     hostname="", subdomain="")


def held_writes(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """From now on, every EndpointSlice write is held ``HOLD`` s before it goes out (at the
    client, so on any cluster): slice name -> when it went out."""
    sent: dict[str, float] = {}

    async def hold(method: str, path: str) -> None:
        if method != "GET" and "/endpointslices/" in path:
            await asyncio.sleep(HOLD)
            sent[path.rsplit("/", 1)[1]] = time.monotonic()

    ClientFaults(monkeypatch).before.append(hold)
    return sent


async def selector(c: Cluster) -> SelectorRecord:
    raw = await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    return parse_selector(raw, SLICECTL)


def _respec(base: SliceRecord, endpoints: tuple[Endpoint, ...]) -> SliceSpec:
    return SliceSpec(base.address_type, base.ports, endpoints, base.labels)


async def _one_pod_slices(c: Cluster, writer: SliceWriter, sel: SelectorRecord,
                          n: int) -> dict[str, SliceRecord]:
    """``n`` slices of one endpoint each, by pod name."""
    pods = [pod(i, ns=c.namespace) for i in range(n)]
    one = Settings(max_endpoints_per_slice=1)
    created = (await writer.apply(KEY, sel, plan(sel, pods, {}, [], one), None)).created
    return {s.endpoints[0].target.name: s for s in created if s.endpoints[0].target}


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
    by_pod = await _one_pod_slices(c, writer, sel, 3)
    created = list(by_pod.values())
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


async def test_independent_writes_of_a_plan_go_out_together(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three slices to rewrite, each request held 0.5 s: the three are sent at once, so they
    go out within one hold of each other (one after another, the last would go out two holds
    after the first)."""
    c = cluster
    sel = await selector(c)
    writer = SliceWriter(c.client, SliceTracker())
    slices = await _one_pod_slices(c, writer, sel, 3)
    flipped = [pod(i, ready=False, ns=c.namespace) for i in range(3)]
    wanted = plan(sel, flipped, {}, list(slices.values()), Settings(max_endpoints_per_slice=1))
    assert len(wanted.updates) == 3
    sent = held_writes(monkeypatch)
    result = await writer.apply(KEY, sel, wanted, None)
    assert len(result.updated) == 3
    acted = list(sent.values())
    assert len(acted) == 3 and max(acted) - min(acted) < HOLD, acted
    for s in slices.values():
        live = parse_slice(await c.client.get(ENDPOINTSLICES, s.name, c.namespace))
        assert [e.ready for e in live.endpoints] == [False]


async def test_a_moving_endpoint_is_listed_by_its_new_slice_before_its_old_one_drops_it(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = cluster
    sel = await selector(c)
    writer = SliceWriter(c.client, SliceTracker())
    slices = await _one_pod_slices(c, writer, sel, 2)
    old, new = slices["web-0"], slices["web-1"]
    move = Plan(updates=(SliceUpdate(old, _respec(old, ())),
                         SliceUpdate(new, _respec(new, (*new.endpoints, *old.endpoints)))))
    acted = held_writes(monkeypatch)
    await writer.apply(KEY, sel, move, None)
    # the drop was sent only once the addition was answered, so it was held after it
    assert acted[old.name] - acted[new.name] >= 0.9 * HOLD, acted
    live = parse_slice(await c.client.get(ENDPOINTSLICES, new.name, c.namespace))
    assert sorted(e.target.name for e in live.endpoints if e.target) == ["web-0", "web-1"]


async def test_a_failed_write_lets_its_stage_finish_and_stops_the_plan(
    cluster: Cluster,
) -> None:
    """A stage's other writes still land and are reported; no later stage is started."""
    c = cluster
    sel = await selector(c)
    writer = SliceWriter(c.client, SliceTracker())
    slices = await _one_pod_slices(c, writer, sel, 3)
    gone, kept, doomed = slices["web-0"], slices["web-1"], slices["web-2"]
    await c.client.delete(ENDPOINTSLICES, gone.name, c.namespace)
    fresh = plan(sel, [pod(5, ns=c.namespace)], {}, [], Settings())
    mixed = Plan(creates=fresh.creates,
                 updates=(SliceUpdate(gone, _respec(gone, ())),),
                 deletes=(doomed,))  # a delete waits for the create: a second stage
    result = WriteResult()
    with pytest.raises(SliceVanished):
        await writer.apply(KEY, sel, mixed, None, result)
    assert len(result.created) == 1 and result.deleted == []
    await c.client.get(ENDPOINTSLICES, result.created[0].name, c.namespace)
    await c.client.get(ENDPOINTSLICES, doomed.name, c.namespace)  # not deleted
    await c.client.get(ENDPOINTSLICES, kept.name, c.namespace)


HANDED_OVER: dict[str, dict[str, Any]] = {
    "to another manager": {"metadata": {"labels": {
        "endpointslice.kubernetes.io/managed-by": "other.example.com"}}},
    "to another selector": {"metadata": {"labels": {
        "kubernetes.io/endpoint-selector-name": "api"}}},
    "disowned": {"metadata": {"ownerReferences": None}},
}


@pytest.mark.parametrize("change", list(HANDED_OVER))
async def test_a_conflict_with_a_slice_no_longer_ours_leaves_it_alone(
    cluster: Cluster, change: str
) -> None:
    """The 409's fresh copy is the slice as someone else left it. Relabelled for another
    manager or selector, or disowned, it is not this selector's slice any more: the writer
    must neither relabel it back (a write to a slice of another manager) nor fail the sync;
    it is gone from this selector's point of view, and the cache will say so."""
    c = cluster
    sel = await selector(c)
    writer = SliceWriter(c.client, SliceTracker())
    pods = [pod(i, ns=c.namespace) for i in range(2)]
    (created,) = (await writer.apply(KEY, sel, plan(sel, pods, {}, [], Settings()), None)).created
    handed = await c.client.patch(ENDPOINTSLICES, created.name, HANDED_OVER[change],
                                  c.namespace)
    pods[0] = pod(0, ready=False, ns=c.namespace)
    with pytest.raises(SliceVanished):
        await writer.apply(KEY, sel, plan(sel, pods, {}, [created], Settings()), None)
    after = await c.client.get(ENDPOINTSLICES, created.name, c.namespace)
    assert after["metadata"]["resourceVersion"] == handed["metadata"]["resourceVersion"]
