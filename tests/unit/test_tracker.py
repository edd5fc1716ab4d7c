"""SliceTracker: own echoes ignored, external edits and deletions detected, stale cache found."""

from __future__ import annotations

from dataclasses import replace

from slicectl.controller.tracker import SliceTracker
from slicectl.model.records import SliceRecord

SEL = "ns/web"


def _slice(uid: str, generation: int) -> SliceRecord:
    return SliceRecord(
        namespace="ns", name=f"web-{uid}", uid=uid, resource_version="1", generation=generation,
        address_type="IPv4", labels={}, annotations={}, owner=None, ports=(), endpoints=(),
    )


def test_echo_of_own_write_does_not_sync_but_newer_generation_does() -> None:
    t = SliceTracker()
    t.wrote(SEL, "a", 3)
    assert not t.observe(SEL, _slice("a", 3))
    assert not t.observe(SEL, _slice("a", 2))
    assert t.observe(SEL, _slice("a", 4)), "someone else bumped the generation"


def test_unknown_slice_seeds_and_syncs_once() -> None:
    t = SliceTracker()
    assert t.observe(SEL, _slice("x", 7))
    assert t.tracked(SEL) == {"x": 7}
    assert not t.observe(SEL, _slice("x", 7))


def test_expected_deletion_is_quiet_unexpected_deletion_syncs() -> None:
    t = SliceTracker()
    t.wrote(SEL, "a", 1)
    t.wrote(SEL, "b", 1)
    t.deleted(SEL, "a")
    assert not t.observe_deletion(SEL, "a")
    assert t.observe_deletion(SEL, "b"), "a slice deleted by hand must be repaired"
    assert t.tracked(SEL) == {}


def test_seeded_after_restart_then_external_delete_is_repaired() -> None:
    t = SliceTracker()  # fresh after a restart
    t.observe(SEL, _slice("old", 5))  # the informer's initial list
    assert t.observe_deletion(SEL, "old")


def test_stale_when_cache_lags_behind_our_writes() -> None:
    t = SliceTracker()
    assert not t.stale(SEL, [])
    t.wrote(SEL, "a", 2)
    assert t.stale(SEL, []), "our create is not in the cache yet"
    assert t.stale(SEL, [_slice("a", 1)]), "our update is not in the cache yet"
    assert not t.stale(SEL, [_slice("a", 2)])
    assert not t.stale(SEL, [_slice("a", 3)])
    t.deleted(SEL, "a")
    assert t.stale(SEL, [_slice("a", 3)]), "our delete is not in the cache yet"
    assert not t.stale(SEL, [])


def test_forget_drops_selector_state() -> None:
    t = SliceTracker()
    t.wrote(SEL, "a", 1)
    t.forget(SEL)
    assert t.tracked(SEL) == {}
    assert not t.stale(SEL, [])


def test_deleted_marker_ignores_racing_update() -> None:
    t = SliceTracker()
    t.wrote(SEL, "a", 1)
    t.deleted(SEL, "a")
    assert not t.observe(SEL, replace(_slice("a", 2)))


def test_a_selector_whose_slices_all_went_leaves_nothing_behind() -> None:
    """Slices seen, then deleted (a standby watching the leader's slices of selectors that come
    and go, which it never syncs, so never forgets), settled by a relist, or expectations
    expired: the tracker must not keep an empty entry per selector for ever."""
    now = [0.0]
    t = SliceTracker(ttl=10.0, clock=lambda: now[0])
    for i in range(100):
        t.observe(f"ns/sel-{i}", _slice(f"u{i}", 1))  # the leader's slice, seen by a standby
        t.observe_deletion(f"ns/sel-{i}", f"u{i}")  # the garbage collector's deletion
    t.wrote("ns/relisted", "gone", 1)
    now[0] += 1.0
    assert t.reconcile_relist(set(), listed_at=now[0]) == {"ns/relisted"}
    t.wrote("ns/expired", "never-seen", 1)
    now[0] += 11.0
    t.stale("ns/expired", [])  # the expectation expires
    t.resolve_unknown_creates("ns/resolved", [])
    assert len(t) == 0


def test_a_refused_create_marks_the_selector_until_a_create_lands_or_it_goes() -> None:
    t = SliceTracker()
    t.create_started(SEL)
    t.create_settled(SEL, refused=True)  # a used-up quota
    assert t.creates_refused(SEL) and not t.has_unknown_creates(SEL)
    t.create_started(SEL)
    t.create_settled(SEL)  # the quota raised: a create landed
    assert not t.creates_refused(SEL)
    t.create_started(SEL)
    t.create_settled(SEL, refused=True)
    t.forget(SEL)  # the selector was deleted while refused
    assert not t.creates_refused(SEL) and len(t) == 0
