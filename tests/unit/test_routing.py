"""Router: which informer events reach the queue, for which selector keys, and how soon."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from slicectl.controller.queue import UNDATED, WorkQueue
from slicectl.controller.routing import Router, record_key, selector_key
from slicectl.controller.tracker import SliceTracker
from slicectl.model.apis import GATEWAY, SLICECTL
from slicectl.model.records import (
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    NodeRecord,
    OwnerRef,
    SliceRecord,
)
from tests.unit.reconcile_builders import make_pod, make_selector

BATCH = 0.5


def router() -> Router:
    return Router(WorkQueue(), SliceTracker(), (SLICECTL, GATEWAY), BATCH)


KEYS = [selector_key(api, "default", name) for api in (SLICECTL, GATEWAY)
        for name in ("web", "api", "all")]


def pending(r: Router) -> set[str]:
    return {k for k in KEYS if r.queue.pending(k)}


def drain(r: Router) -> None:
    r.queue = WorkQueue()  # forget what is queued so far


def a_slice(uid: str, name: str = "web", generation: int = 1, group: str = "slicectl.io",
            owner_uid: str = "sel-uid") -> SliceRecord:
    owner = OwnerRef(f"{group}/v1alpha1", "EndpointSelector", name, owner_uid)
    return SliceRecord(
        namespace="default", name=f"{name}-{uid}", uid=uid, resource_version="1",
        generation=generation, address_type="IPv4",
        labels={LABEL_SELECTOR_NAME: name, LABEL_MANAGED_BY: "m"}, annotations={},
        owner=owner, ports=(), endpoints=())


async def test_pod_events_queue_only_matching_selectors_leading_edge() -> None:
    r = router()
    web, api = make_selector("web"), make_selector("api", uid="u2")
    r.selector_added(web)
    r.selector_added(api)
    drain(r)
    r.pod_added(make_pod("p1", "10.0.0.1", labels={"app": "web"}))
    assert pending(r) == {record_key(web)}
    key, _, _ = await asyncio.wait_for(r.queue.get(), timeout=5)  # quiet selector: at once
    assert key == record_key(web)
    r.queue.done(key)
    r.pod_added(make_pod("p2", "10.0.0.2", labels={"app": "web"}))
    assert pending(r) == {record_key(web)}
    with pytest.raises(TimeoutError):  # within the batch period of the last sync: it waits
        await asyncio.wait_for(r.queue.get(), timeout=0.05)


async def test_trigger_time_is_the_ready_transition_else_none_of_its_own() -> None:
    r = router()
    web = make_selector("web")
    r.selector_added(web)
    pending_pod = replace(make_pod("p1", "10.0.0.1", labels={"app": "web"}), ready=False)
    r.pod_added(pending_pod)
    drain(r)
    ready = replace(pending_pod, ready=True, ready_transition="2020-01-02T03:04:05Z",
                    resource_version="2")
    r.pod_updated(pending_pod, ready)
    _, _, trigger = await asyncio.wait_for(r.queue.get(), timeout=5)
    assert trigger == datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    drain(r)
    moved = replace(ready, pod_ips=("10.0.0.9",), resource_version="3")
    r.pod_updated(ready, moved)  # same Ready transition: a change, but undated (as upstream)
    _, _, trigger = await asyncio.wait_for(r.queue.get(), timeout=5)
    assert trigger == UNDATED
    drain(r)
    future = replace(moved, ready=False, ready_transition="2999-01-01T00:00:00Z",
                     resource_version="4")
    r.pod_updated(moved, future)  # a clock ahead of ours never dates a change in the future
    _, _, trigger = await asyncio.wait_for(r.queue.get(), timeout=5)
    assert trigger is not None and trigger <= time.time()


async def test_pods_of_the_first_lists_are_state_not_changes() -> None:
    """Before every cache listed, a pod's Ready time is how long it has been Ready, not when
    something changed: the first sync after a restart takes its trigger from the slices
    (reconcile.trigger), and the queue holds an undated change. Once listed, a pod that
    appears is a change dated by its Ready transition."""
    r = router()
    web = make_selector("web")
    r.selector_added(web)
    drain(r)
    old = replace(make_pod("p1", "10.0.0.1", labels={"app": "web"}),
                  ready_transition="2026-01-01T00:00:00Z")
    r.pod_added(old)
    _, _, trigger = await asyncio.wait_for(r.queue.get(), timeout=5)
    assert trigger == UNDATED
    r.queue.done(record_key(web))
    drain(r)
    r.listed = True
    r.pod_added(replace(old, name="p2", uid="p2", pod_ips=("10.0.0.2",)))
    _, _, trigger = await asyncio.wait_for(r.queue.get(), timeout=5)
    assert trigger == datetime(2026, 1, 1, tzinfo=UTC).timestamp()


async def test_pure_relabel_syncs_only_the_selectors_entered_and_left() -> None:
    r = router()
    for name in ("web", "api", "all"):
        r.selector_added(make_selector(name, uid=name, match={"app": name} if name != "all"
                                       else {"tier": "x"}))
    drain(r)
    old = make_pod("p1", "10.0.0.1", labels={"app": "web", "tier": "x"})
    r.pod_added(old)
    drain(r)
    moved = replace(old, labels={"app": "api", "tier": "x"}, resource_version="2")
    r.pod_updated(old, moved)
    keys = {k.rsplit("/", 1)[1] for k in pending(r)}
    assert keys == {"web", "api"}, "the 'all' selector still holds the same endpoint"


async def test_own_slice_echo_is_ignored_and_foreign_edit_or_delete_is_queued() -> None:
    r = router()
    key = selector_key(SLICECTL, "default", "web")
    s = a_slice("s1", generation=3)
    r.tracker.wrote(key, "s1", 3)
    r.slice_added(s)
    assert pending(r) == set(), "the echo of our own create"
    r.slice_updated(s, replace(s, generation=4, resource_version="2"))
    assert pending(r) == {key}, "someone else bumped the generation"
    drain(r)
    r.slice_deleted(replace(s, generation=4))
    assert pending(r) == {key}, "a deletion we did not make is repaired"


async def test_a_repair_never_cuts_a_grown_window_back() -> None:
    """The echo of our own write can beat the write's answer and look like a foreign edit; the
    repair it queues waits REPAIR_MIN_INTERVAL anyway, and must not reset a stream's window."""
    r = router()
    key = selector_key(SLICECTL, "default", "web")
    s = a_slice("s1", generation=3)
    r.tracker.wrote(key, "s1", 3)
    r.slice_added(s)
    r.queue.add(key, batch=BATCH)
    edge = r.queue._edges[key]
    edge.window = 4 * BATCH  # grown by a stream of additions
    r.slice_updated(s, replace(s, generation=4, resource_version="2"))
    assert r.queue.pending(key)
    assert edge.window == 4 * BATCH and not edge.removal
    r.selector_added(make_selector("web"))
    r.pod_added(make_pod("p2", "10.0.0.2", labels={"app": "web"}))
    r.pod_deleted(make_pod("p2", "10.0.0.2", labels={"app": "web"}))
    assert edge.window == BATCH and edge.removal, "a pod's removal still does"


async def test_an_echo_that_beats_its_answer_does_not_hold_the_next_change() -> None:
    """On a real server the echo of our write usually comes before the write's answer, so the
    tracker takes it for a foreign edit. Its repair must not count as a pod change: the next
    independent pod change, inside the window of the sync that wrote, still goes at once, and
    the repair alone carries no trigger time."""
    now = [1000.0]
    r = Router(WorkQueue(clock=lambda: now[0]), SliceTracker(), (SLICECTL, GATEWAY), BATCH)
    key = selector_key(SLICECTL, "default", "web")
    r.selector_added(make_selector("web"))
    assert r.queue.get_nowait() is not None  # the selector's first sync
    r.queue.done(key)
    now[0] += 10.0  # quiet for longer than any window
    r.pod_added(make_pod("p1", "10.0.0.1", labels={"app": "web"}))
    got = r.queue.get_nowait()
    assert got is not None and got[0] == key, "a lone change goes at once (leading edge)"
    s = a_slice("s1", generation=2)
    now[0] += 0.005
    r.slice_added(s)  # the echo of the sync's write, before its answer: looks foreign
    r.queue.done(key)
    r.tracker.wrote(key, "s1", 2)  # the answer
    assert r.queue.pending(key), "the unknown slice is still looked at (once, later)"
    now[0] += 0.1  # well inside the window (BATCH) of the sync that wrote
    r.pod_added(make_pod("p2", "10.0.0.2", labels={"app": "web"}))
    got = r.queue.get_nowait()
    assert got is not None and got[0] == key, "the independent change is not held"
    assert got[2] is not None, "and its sync carries the pod's trigger time"
    r.queue.done(key)

    r2 = Router(WorkQueue(clock=lambda: now[0]), SliceTracker(), (SLICECTL, GATEWAY), BATCH)
    r2.slice_added(s)  # a slice nobody recorded: repaired, but it is no pod change
    now[0] += 1.0
    got = r2.queue.get_nowait()
    assert got is not None and got[0] == key and got[2] is None


async def test_flavours_with_the_same_name_have_separate_keys_and_slices() -> None:
    r = router()
    ours, theirs = a_slice("a", group="slicectl.io"), a_slice(
        "b", group="gateway.networking.x-k8s.io")
    r.slice_added(ours)
    r.slice_added(theirs)
    assert [s.uid for s in r.slices_of(selector_key(SLICECTL, "default", "web"))] == ["a"]
    assert [s.uid for s in r.slices_of(selector_key(GATEWAY, "default", "web"))] == ["b"]


async def test_node_zone_change_queues_the_selectors_of_its_pods() -> None:
    r = router()
    web = make_selector("web")
    r.selector_added(web)
    r.pod_added(make_pod("p1", "10.0.0.1", labels={"app": "web"}, node="n1"))
    r.pod_added(make_pod("p2", "10.0.0.2", labels={"app": "other"}, node="n2"))
    drain(r)
    r.node_updated(NodeRecord("n1", None), NodeRecord("n1", None))
    assert pending(r) == set(), "no zone change, nothing to do"
    r.node_updated(NodeRecord("n1", None), NodeRecord("n1", "zone-a"))
    assert pending(r) == {record_key(web)}


async def test_the_echo_of_our_own_status_write_is_not_a_sync() -> None:
    wanted = {"endpoints": 3}
    r = Router(WorkQueue(), SliceTracker(), (SLICECTL, GATEWAY), BATCH,
               status_expected=lambda _key, status: status == wanted)
    web = make_selector("web")
    r.selector_added(web)
    drain(r)
    r.selector_updated(web, replace(web, resource_version="9", status={"endpoints": 3}))
    assert pending(r) == set()
    r.selector_updated(web, replace(web, generation=2, resource_version="10"))
    assert pending(r) == {record_key(web)}


async def test_a_status_that_is_not_what_the_last_sync_wanted_syncs_the_selector() -> None:
    """Someone else's status write, or ours seen late after a watch gap (issue 8, restart)."""
    r = Router(WorkQueue(), SliceTracker(), (SLICECTL, GATEWAY), BATCH,
               status_expected=lambda _key, status: status == {"endpoints": 45})
    web = make_selector("web")
    r.selector_added(web)
    drain(r)
    r.selector_updated(web, replace(web, resource_version="9", status={"endpoints": 47}))
    assert pending(r) == {record_key(web)}
    key, _, trigger = await r.queue.get()
    assert key == record_key(web)
    assert trigger is None, "a status is no pod change: it carries no trigger time"


async def test_only_changes_that_can_remove_an_endpoint_are_marked_removals() -> None:
    r = router()
    web = make_selector("web")
    r.selector_added(web)
    key = record_key(web)
    pending_pod = replace(make_pod("p1", labels={"app": "web"}), ready=False)
    r.pod_added(pending_pod)
    assert not r.queue._edges[key].removal, "a new pod adds"
    running = replace(make_pod("p1", "10.0.0.1", labels={"app": "web"}), resource_version="2")
    r.pod_updated(pending_pod, running)
    assert not r.queue._edges[key].removal, "getting an IP and Ready adds"
    await r.queue.get()  # a sync resets the flag
    r.queue.done(key)
    unready = replace(running, ready=False, resource_version="3")
    r.pod_updated(running, unready)
    assert r.queue._edges[key].removal, "losing Ready unreadies an endpoint"
    await asyncio.wait_for(r.queue.get(), timeout=5)
    r.queue.done(key)
    r.pod_deleted(unready)
    assert r.queue._edges[key].removal, "a deletion removes"


async def test_a_pod_turning_terminal_while_still_ready_is_a_removal() -> None:
    """Succeeded or Failed takes the endpoint away even when Ready is still True in that update
    (a kubelet may write the phase first): no window grown for additions may hold it."""
    r = router()
    web = make_selector("web")
    r.selector_added(web)
    key = record_key(web)
    running = replace(make_pod("p1", "10.0.0.1", labels={"app": "web"}), phase="Running")
    r.pod_added(running)
    await r.queue.get()
    r.queue.done(key)
    done = replace(running, phase="Succeeded", resource_version="2")
    assert done.ready, "the case: Ready is still True"
    r.pod_updated(running, done)
    assert r.queue._edges[key].removal


async def test_a_sync_woken_from_waiting_for_the_cache_gets_no_trigger_time_of_its_own() -> None:
    """A sync that found the slice cache behind our writes waits for the slice event (the
    tracker's waiting mark). That event wakes it, but it is no change of the selector's pods:
    the woken sync keeps the trigger time it had (none, for a repair), never the moment of the
    wake-up, which would stamp its write with a change that never happened."""
    r = router()
    key = selector_key(SLICECTL, "default", "web")
    r.tracker.wait_for_cache(key)  # a repair's sync (no trigger time) found the cache behind
    r.slice_added(a_slice("s1", generation=1))  # ... and the slice event wakes it
    got, _, trigger = await asyncio.wait_for(r.queue.get(), timeout=5)
    assert got == key
    assert trigger is None, "the wake-up dated a change that never happened"
