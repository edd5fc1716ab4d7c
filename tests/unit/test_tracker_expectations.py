"""Tracker expectations never wedge a selector (issue 8, items 8 and 9): unknown creates are
settled from the server's slices (the selector's own only), relists settle what they
contradict, old ones expire."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import pytest
from structlog.testing import capture_logs

from slicectl.controller.routing import Router, record_key
from slicectl.controller.sync import StaleCache, Syncer
from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import Prepaid, WriteResult
from slicectl.model.apis import GATEWAY
from slicectl.model.records import NodeRecord, PodRecord, SelectorRecord, SliceRecord
from slicectl.reconcile import Plan, Settings
from tests.unit.reconcile_builders import make_selector
from tests.unit.test_routing import a_slice, router

KEY = "slicectl.io/ns/web"


def slice_(uid: str, generation: int = 1, ns: str = "ns") -> SliceRecord:
    return SliceRecord(namespace=ns, name=f"web-{uid}", uid=uid, resource_version="1",
                       generation=generation, labels={}, annotations={}, address_type="IPv4",
                       ports=(), endpoints=(), owner=None, terminating=False)


def test_an_unknown_create_that_landed_is_waited_for_in_the_cache() -> None:
    t = SliceTracker()
    t.create_started(KEY)
    assert t.has_unknown_creates(KEY)
    assert t.resolve_unknown_creates(KEY, [slice_("a")]) == 1
    assert not t.has_unknown_creates(KEY)
    assert t.stale(KEY, [])  # the server has it, the cache not yet: do not create again
    assert not t.stale(KEY, [slice_("a")])


def test_an_unknown_create_that_did_not_land_lets_the_sync_go_on() -> None:
    t = SliceTracker()
    t.create_started(KEY)
    assert t.resolve_unknown_creates(KEY, []) == 0
    assert not t.stale(KEY, [])


def test_an_answered_create_leaves_no_mark() -> None:
    t = SliceTracker()
    t.create_started(KEY)
    t.create_settled(KEY)
    assert not t.has_unknown_creates(KEY)


def test_a_relist_without_our_slice_drops_the_expectation_and_syncs() -> None:
    now = [100.0]
    t = SliceTracker(clock=lambda: now[0])
    t.wrote(KEY, "a", 1)
    assert t.stale(KEY, [])
    assert t.reconcile_relist(set(), listed_at=101.0) == {KEY}
    assert not t.stale(KEY, [])


def test_a_relist_started_before_the_write_settles_nothing() -> None:
    now = [100.0]
    t = SliceTracker(clock=lambda: now[0])
    t.wrote(KEY, "a", 1)
    assert t.reconcile_relist(set(), listed_at=99.0) == set()
    assert t.stale(KEY, [])


def test_a_relist_completes_an_expected_deletion() -> None:
    now = [100.0]
    t = SliceTracker(clock=lambda: now[0])
    t.deleted(KEY, "a")
    assert t.reconcile_relist(set(), listed_at=101.0) == set()  # ours: nothing to repair
    assert t.tracked(KEY) == {}


def test_a_relist_of_another_namespace_leaves_expectations_alone() -> None:
    t = SliceTracker()
    t.wrote(KEY, "a", 1)
    assert t.reconcile_relist(set(), listed_at=1e12, namespace="other") == set()
    assert t.tracked(KEY) == {"a": 1}


def test_expectations_expire() -> None:
    now = [100.0]
    t = SliceTracker(ttl=60.0, clock=lambda: now[0])
    t.wrote(KEY, "a", 2)
    assert t.stale(KEY, [slice_("a", generation=1)])
    now[0] += 61.0
    assert not t.stale(KEY, [slice_("a", generation=1)])


def test_only_expectations_the_cache_never_bore_out_are_warned_about() -> None:
    """Our own writes stay recorded after their echo (the next echo is compared with them),
    so most expectations that expire were met long ago: a quiet selector's next sync must not
    warn that the cache was trusted."""
    now = [100.0]
    t = SliceTracker(ttl=60.0, clock=lambda: now[0])
    t.wrote(KEY, "a", 2)
    t.deleted(KEY, "b")
    assert not t.stale(KEY, [slice_("a", generation=2)])
    now[0] += 61.0
    with capture_logs() as logs:
        assert not t.stale(KEY, [slice_("a", generation=2)])
    assert logs == [] and t.tracked(KEY) == {}
    t.wrote(KEY, "c", 3)
    now[0] += 61.0
    with capture_logs() as logs:
        assert not t.stale(KEY, [slice_("a", generation=2), slice_("c", generation=1)])
    assert [(e["event"], e["slices"]) for e in logs] == [
        ("slice expectations expired; trusting the cache", 1)]


def test_a_deleted_slice_held_by_a_finalizer_does_not_keep_the_cache_stale() -> None:
    t = SliceTracker()
    t.deleted(KEY, "a")
    assert t.stale(KEY, [slice_("a")])
    terminating = SliceRecord(namespace="ns", name="web-a", uid="a", resource_version="2",
                              generation=1, labels={}, annotations={}, address_type="IPv4",
                              ports=(), endpoints=(), owner=None, terminating=True)
    assert not t.stale(KEY, [terminating])


def test_a_write_answered_after_its_slice_was_deleted_expects_nothing() -> None:
    """The echo of our create and someone else's deletion of that slice both came before the
    create's answer (a real server sends the echo first): recording the answer then would
    keep the cache stale until the expectation expired, the selector unserved meanwhile."""
    t = SliceTracker()
    assert t.observe(KEY, slice_("a"))  # the echo, not yet known as ours
    assert t.observe_deletion(KEY, "a")  # someone else's delete: repair
    t.wrote(KEY, "a", 1)  # the create's answer, late
    assert not t.stale(KEY, [])
    t.deleted(KEY, "a")  # a delete of ours answered after the event, too
    assert not t.stale(KEY, []) and t.tracked(KEY) == {}


def test_deletions_are_remembered_for_the_ttl_only() -> None:
    now = [100.0]
    t = SliceTracker(ttl=60.0, clock=lambda: now[0])
    t.observe_deletion(KEY, "a")
    now[0] += 61.0
    t.observe_deletion(KEY, "b")  # prunes what is older than the ttl
    t.wrote(KEY, "a", 1)
    t.wrote(KEY, "b", 1)
    assert t.tracked(KEY) == {"a": 1}, "a's deletion is forgotten, b's still known"


def test_a_live_read_answered_after_a_deletion_event_expects_nothing_of_that_slice() -> None:
    t = SliceTracker()
    t.create_started(KEY)
    t.observe_deletion(KEY, "a")  # "a" was deleted after the server answered the read ...
    assert t.resolve_unknown_creates(KEY, [slice_("a"), slice_("b")]) == 1  # ... and here it is
    assert t.tracked(KEY) == {"b": 1}


class _RouterInputs:
    """The syncer's view of a bare router (the controller's, without informers)."""

    def __init__(self, router: Router) -> None:
        self._r = router

    def selector(self, key: str) -> SelectorRecord | None:
        return self._r.selector(key)

    def pods_of(self, key: str) -> Iterable[PodRecord]:
        return self._r.pods_of(key)

    def nodes(self) -> Mapping[str, NodeRecord]:
        return {}

    def slices(self, key: str) -> Iterable[SliceRecord]:
        return self._r.slices_of(key)


class _Server:
    """A writer over a server holding ``live`` (all that matches any label selector); its
    writes land and change nothing."""

    def __init__(self, live: list[SliceRecord]) -> None:
        self.live = live

    def reserve(self, token: Prepaid) -> float:
        token.reserved = True
        return 0.0

    def refund(self, token: Prepaid) -> None:
        token.reserved = False

    async def live_slices(self, namespace: str, label_selector: str) -> list[SliceRecord]:
        return list(self.live)

    async def apply(self, key: str, selector: SelectorRecord, plan: Plan,
                    trigger_time: str | None, result: WriteResult | None = None,
                    token: Prepaid | None = None) -> WriteResult:
        return result or WriteResult()


async def test_an_unknown_create_is_not_settled_with_another_flavours_slices() -> None:
    """Two flavours' selectors of one name in one namespace: the server's slices, read by label
    after a create's answer was lost, include the other flavour's, which the router never files
    under this key. Expected here, they refused every sync as stale until they expired."""
    r = router()
    ours = make_selector("web")
    r.selector_added(ours)
    r.selector_added(replace(make_selector("web", uid="gw-uid"), api=GATEWAY))
    theirs = a_slice("b", group=GATEWAY.group, owner_uid="gw-uid")
    r.slice_added(theirs)
    key = record_key(ours)
    server = _Server([theirs])
    syncer = Syncer(_RouterInputs(r), r.tracker, server, Settings(managed_by="m"),
                    publish_status=None, warn=lambda *_: None)
    r.tracker.create_started(key)
    await syncer.sync(key, None)  # not StaleCache
    assert r.tracker.tracked(key) == {}
    server.live.append(a_slice("a", owner_uid=ours.uid))  # one of ours landed unseen
    r.tracker.create_started(key)
    with pytest.raises(StaleCache):  # ... and is still waited for
        await syncer.sync(key, None)
    assert r.tracker.tracked(key) == {"a": 1}
