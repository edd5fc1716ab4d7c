"""The trigger time of a selector's first sync (:func:`first_sync_trigger`): the selector's
creation when none of its slices exists, else the oldest Ready transition the slices'
newest annotation does not cover, else nothing known (the caller keeps the observed time)."""

from __future__ import annotations

from dataclasses import replace

from slicectl.model.records import (
    ANNOTATION_TRIGGER_TIME,
    OwnerRef,
    PodRecord,
    SelectorRecord,
    SliceRecord,
)
from slicectl.model.timefmt import parse_rfc3339
from slicectl.reconcile import Settings, first_sync_trigger, plan
from tests.unit.reconcile_builders import NODES, FakeCluster, make_pod, make_selector

CFG = Settings()
CREATED = "2026-03-01T10:00:00Z"
WRITTEN = "2026-03-02T10:00:00.250000000Z"  # the last write's annotation


def _world(
    annotation: str | None = WRITTEN,
) -> tuple[SelectorRecord, list[PodRecord], list[SliceRecord]]:
    sel = replace(make_selector(), creation_timestamp=CREATED)
    pods = [make_pod("a", "10.0.0.1"), make_pod("b", "10.0.0.2")]
    cluster = FakeCluster()
    cluster.apply(sel, plan(sel, pods, NODES, [], CFG), annotation)
    return sel, pods, cluster.slices


def _at(pod: PodRecord, when: str) -> PodRecord:
    """``pod`` as it was published, its Ready transition at ``when``."""
    return replace(pod, ready_transition=when)


def _unready(pod: PodRecord, when: str) -> PodRecord:
    """``pod`` turned unready at ``when``: a change the slices (which list it ready) miss."""
    return replace(pod, ready=False, ready_transition=when)


def test_a_selector_without_slices_takes_its_creation_time() -> None:
    sel, pods, _ = _world()
    assert first_sync_trigger(sel, pods, [], CFG) == parse_rfc3339(CREATED)


def test_slices_of_a_previous_selector_of_that_name_do_not_count() -> None:
    sel, pods, slices = _world()
    recreated = replace(sel, uid="new-uid", creation_timestamp="2026-03-05T00:00:00Z")
    assert first_sync_trigger(recreated, pods, slices, CFG) == parse_rfc3339(
        "2026-03-05T00:00:00Z")


def test_the_oldest_transition_after_the_last_write() -> None:
    sel, pods, slices = _world()
    a, b = pods
    changed = [_unready(a, "2026-03-03T08:00:00Z"), _unready(b, "2026-03-02T12:00:00Z")]
    assert first_sync_trigger(sel, changed, slices, CFG) == parse_rfc3339(
        "2026-03-02T12:00:00Z")
    old = [_unready(a, "2026-03-03T08:00:00Z"), _unready(b, "2026-03-01T12:00:00Z")]
    assert first_sync_trigger(sel, old, slices, CFG) == parse_rfc3339("2026-03-03T08:00:00Z")


def test_a_transition_in_the_second_of_the_last_write_counts() -> None:
    """Ready times have whole seconds: 10:00:00 may be 10:00:00.9, after the write at .25."""
    sel, pods, slices = _world()
    same_second = [_unready(pods[0], "2026-03-02T10:00:00Z")]
    assert first_sync_trigger(sel, same_second, slices, CFG) == parse_rfc3339(
        "2026-03-02T10:00:00Z")
    earlier = [_unready(pods[0], "2026-03-02T09:59:59Z")]
    assert first_sync_trigger(sel, earlier, slices, CFG) is None


def test_a_transition_the_slices_show_was_published() -> None:
    """The common annotation is a pod's Ready time, and the last write may have carried newer
    transitions in its batch. After a restart those pods still carry them: counting them would
    date a write made days later (a pod deleted while no slicectl ran, say) by changes the
    previous write published."""
    sel, pods, slices = _world(annotation="2026-03-02T10:00:00.000000000Z")
    a, b = _at(pods[0], "2026-03-02T10:00:00Z"), _at(pods[1], "2026-03-02T10:00:03Z")
    assert first_sync_trigger(sel, [a, b], slices, CFG) is None
    b_unready = _unready(pods[1], "2026-03-02T10:00:05Z")
    assert first_sync_trigger(sel, [a, b_unready], slices, CFG) == parse_rfc3339(
        "2026-03-02T10:00:05Z")
    c = _at(make_pod("c", "10.0.0.3"), "2026-03-02T10:00:04Z")  # new: not in any slice
    assert first_sync_trigger(sel, [a, b, c], slices, CFG) == parse_rfc3339(
        "2026-03-02T10:00:04Z")


def test_nothing_known_gives_none() -> None:
    sel, pods, slices = _world()
    assert first_sync_trigger(sel, pods, slices, CFG) is None  # no Ready times at all
    _, _, bare = _world(annotation=None)
    assert not any(ANNOTATION_TRIGGER_TIME in s.annotations for s in bare)
    assert first_sync_trigger(sel, [_at(pods[0], "2026-03-09T00:00:00Z")], bare, CFG) is None


def test_the_newest_annotation_of_several_slices_is_the_mark() -> None:
    sel, pods, slices = _world()
    (s,) = slices
    older = replace(s, name="web-older", uid="u2",
                    annotations={ANNOTATION_TRIGGER_TIME: "2026-02-01T00:00:00Z"})
    foreign = replace(s, name="web-foreign", uid="u3", owner=OwnerRef(
        "slicectl.io/v1alpha1", "EndpointSelector", "web", "other-uid"),
        annotations={ANNOTATION_TRIGGER_TIME: "2026-04-01T00:00:00Z"})
    changed = [_unready(pods[0], "2026-03-02T11:00:00Z")]
    assert first_sync_trigger(sel, changed, [older, s, foreign], CFG) == parse_rfc3339(
        "2026-03-02T11:00:00Z")
