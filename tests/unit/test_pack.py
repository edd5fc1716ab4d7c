"""Packing and compaction (reconcile/pack.py through plan()): fill before creating, in-place
replacement, free merging of slices written anyway, and compaction under a write budget."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.model.records import PodRecord, SelectorRecord
from slicectl.reconcile import Plan, Settings, new_slice_body, plan
from slicectl.reconcile.pack import FILL_EXTRA_WRITES
from tests.unit.reconcile_builders import (
    NODES,
    FakeCluster,
    ip4,
    make_pod,
    make_selector,
    pods_range,
)

S100 = Settings()


def seeded(sel: SelectorRecord, counts: list[int], max_n: int = 100) -> tuple[
        FakeCluster, list[PodRecord]]:
    """Slices holding ``counts`` endpoints each (pods numbered in order), and those pods."""
    cluster, pods, total = FakeCluster(), [], 0
    for n in counts:
        batch = pods_range(n, total)
        for spec in plan(sel, batch, NODES, [], Settings(max_n)).creates:
            cluster.add_raw(new_slice_body(sel, spec, None))
        pods += batch
        total += n
    return cluster, pods


def sizes(cluster: FakeCluster) -> list[int]:
    return sorted(len(s.endpoints) for s in cluster.slices)


def apply(sel: SelectorRecord, pods: list[PodRecord], cluster: FakeCluster, budget: int = 0,
          cfg: Settings = S100) -> Plan:
    p = plan(sel, pods, NODES, cluster.slices, cfg, compaction_budget=budget)
    cluster.apply(sel, p)
    assert plan(sel, pods, NODES, cluster.slices, cfg).empty, "re-plan without budget: no-op"
    return p


def test_rollout_step_replaces_in_place_with_one_write() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [100, 100])
    pods = pods[25:] + pods_range(25, 5000)  # 25 oldest gone, 25 new in the same sync
    p = apply(sel, pods, cluster)
    assert (len(p.creates), len(p.updates), len(p.deletes)) == (0, 1, 0)
    assert sizes(cluster) == [100, 100]


def test_whole_rollout_ends_at_the_ideal_count() -> None:
    sel = make_selector()
    cluster, old = seeded(sel, [100] * 5)
    new: list[PodRecord] = []
    serial = 10_000
    writes = 0
    while old:  # maxSurge 25: add 25, then delete the 25 oldest together with the next adds
        new += pods_range(25, serial)
        serial += 25
        writes += apply(sel, old + new, cluster).writes
        old = old[25:]
    writes += apply(sel, new, cluster).writes
    assert writes <= 22
    assert len(cluster.slices) == 6, "the first step's 25 went to a slice of their own"
    p = apply(sel, new, cluster, budget=3)  # once quiet: compaction
    assert p.writes <= 3 and sizes(cluster) == [100] * 5


def test_remainder_fills_untouched_slices_before_a_new_one_above_ideal() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [90, 20])
    p = apply(sel, pods + pods_range(85, 5000), cluster)
    assert not p.creates and len(p.updates) == 2
    assert sizes(cluster) == [95, 100]


def test_remainder_gets_its_own_slice_when_that_is_still_ideal() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [100])
    p = apply(sel, pods + pods_range(30, 5000), cluster)
    assert len(p.creates) == 1 and not p.updates
    assert sizes(cluster) == [30, 100]


def test_slices_written_anyway_are_merged_for_free() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [60, 60])
    flipped = [replace(p, ready=False) if i in (0, 70) else p for i, p in enumerate(pods)]
    survivors = [p for i, p in enumerate(flipped) if not 1 <= i <= 30 and not 71 <= i <= 100]
    p = apply(sel, survivors, cluster)
    assert p.writes == 2 and len(p.updates) == 1 and len(p.deletes) == 1
    assert sizes(cluster) == [60]


def test_create_absorbed_by_a_slice_written_anyway() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [100])
    pods = pods[40:] + pods_range(30, 5000)
    p = apply(sel, pods, cluster)
    assert p.writes == 1 and not p.creates
    assert sizes(cluster) == [90]


def test_slices_written_anyway_merge_when_the_donor_fits_exactly() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [60, 60])
    pods = pods[20:]  # 40 left in the first slice ...
    pods[40] = replace(pods[40], ready=False)  # ... and the second one is written anyway
    p = apply(sel, pods, cluster)
    assert (len(p.updates), len(p.deletes)) == (1, 1) and sizes(cluster) == [100]


def test_the_smallest_slice_written_anyway_is_the_one_merged_away() -> None:
    """Fewest endpoints move (each is briefly listed twice): the 10 go, not the 50."""
    sel = make_selector()
    cluster, pods = seeded(sel, [60, 60])
    big, small = sorted(cluster.slices, key=lambda s: s.name)
    pods = pods[10:60] + pods[110:]
    p = apply(sel, pods, cluster)
    assert [s.name for s in p.deletes] == [small.name]
    assert [s.name for s in cluster.slices] == [big.name] and sizes(cluster) == [60]


def test_budgeted_compaction_empties_the_smallest_slice_first() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [50, 30, 20])
    p = apply(sel, pods, cluster, budget=2)
    assert p.writes == 2 and sizes(cluster) == [50, 50], "the 20 moved, not the 50"


def test_a_selectors_groups_share_one_compaction_budget() -> None:
    sel = make_selector()
    cluster, pods = FakeCluster(), []
    for start in (0, 10, 20):  # three dual-stack batches: three slices per family
        batch = [make_pod(f"pod-{i:05d}", ip4(i), f"fd00::{i:x}") for i in range(start, start + 10)]
        for spec in plan(sel, batch, NODES, [], S100).creates:
            cluster.add_raw(new_slice_body(sel, spec, None))
        pods += batch
    p = apply(sel, pods, cluster, budget=2)
    assert p.writes == 2 and sizes(cluster) == [10, 10, 10, 10, 20], "one family compacted"
    p = apply(sel, pods, cluster, budget=2)
    assert p.writes == 2 and len(cluster.slices) == 4


def test_no_budget_no_compaction_and_a_budget_compacts_a_quiet_group() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [10, 10, 10, 10])
    assert apply(sel, pods, cluster).empty, "nothing changed and no budget: no write at all"
    p = apply(sel, pods, cluster, budget=5)
    assert sizes(cluster) == [40]
    assert (len(p.updates), len(p.deletes)) == (1, 3), "one host, three donors deleted"


def test_budget_spends_on_slices_written_anyway_first() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [10, 10, 10, 10])
    pods[0] = replace(pods[0], ready=False)  # its slice is written anyway
    p = apply(sel, pods, cluster, budget=3)
    assert sizes(cluster) == [40]
    assert p.writes == 1 + 3, "the flip's update, then 3 donors deleted into it"


def test_budget_bounds_the_extra_writes_and_repeated_syncs_converge() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [10, 10, 10, 10, 10, 10])
    steps = 0
    while len(cluster.slices) > 1:
        pods[steps] = replace(pods[steps], ready=not pods[steps].ready)
        p = apply(sel, pods, cluster, budget=1)
        assert p.writes <= 1 + 1
        steps += 1
        assert steps < 10
    assert sizes(cluster) == [60]


def test_budget_too_small_for_a_whole_donor_moves_part_of_it() -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, [60, 60, 60])  # 180 -> ideal 2; a donor of 60 needs 2 hosts
    pods[0] = replace(pods[0], ready=False)  # its slice is written anyway: a free host
    p = apply(sel, pods, cluster, budget=1)
    assert p.writes == 2 and sizes(cluster) == [20, 60, 100], "40 moved: the donor's update"
    pods[1] = replace(pods[1], ready=False)  # the same, now full, slice: no free host
    p = apply(sel, pods, cluster, budget=1)
    assert p.writes == 1 and sizes(cluster) == [20, 60, 100], "no affordable host: nothing"
    pods[2] = replace(pods[2], ready=False)
    p = apply(sel, pods, cluster, budget=2)  # the 20 left: its delete and one host's update
    assert sizes(cluster) == [80, 100] and p.writes == 3


def test_gaps_spread_over_many_slices_still_reach_the_ideal_count() -> None:
    """A rollout can leave a small slice next to several nearly full ones: emptying it at once
    needs more hosts than one quiet period's budget; it goes in parts."""
    sel = make_selector()
    cluster, pods = seeded(sel, [100, 100, 95, 90, 90, 25])  # 500 -> ideal 5
    periods = 0
    while len(cluster.slices) > 5:
        p = apply(sel, pods, cluster, budget=3)
        assert 0 < p.writes <= 3, "each quiet period spends within its budget, and something"
        periods += 1
        assert periods < 5
    assert sizes(cluster) == [100] * 5


@settings(max_examples=120, deadline=None)
@given(
    counts=st.lists(st.integers(1, 12), min_size=1, max_size=6),
    max_n=st.integers(2, 12),
    budget=st.integers(0, 4),
    adds=st.integers(0, 30),
    removes=st.sets(st.integers(0, 80), max_size=20),
    flips=st.sets(st.integers(0, 80), max_size=5),
)
def test_budget_never_exceeded_and_slices_stay_exact(
    counts: list[int], max_n: int, budget: int, adds: int, removes: set[int], flips: set[int]
) -> None:
    counts = [min(c, max_n) for c in counts]
    sel = make_selector()
    cfg = Settings(max_n)
    cluster, pods = seeded(sel, counts, max_n)
    pods = [replace(p, ready=not p.ready) if i in flips else p for i, p in enumerate(pods)
            if i not in removes] + pods_range(adds, 9000)
    minimal = plan(sel, pods, NODES, cluster.slices, cfg)
    p = apply(sel, pods, cluster, budget, cfg)
    assert p.writes <= minimal.writes + budget
    if budget == 0:
        assert p == minimal
    listed = sorted(ep.target.name for s in cluster.slices for ep in s.endpoints if ep.target)
    assert listed == sorted(pod.name for pod in pods)
    assert all(len(s.endpoints) <= max_n for s in cluster.slices)
    if pods:
        assert all(s.endpoints for s in cluster.slices)
    if removes or flips or budget:
        return
    # A scale-up costs at most one write more than upstream's placement (full new slices, the
    # last part into the best-fitting slice or a new one) ...
    assert p.writes <= -(-adds // max_n) + FILL_EXTRA_WRITES
    # ... and fills before creating whenever that stays within it: the group then ends within
    # max(before, ideal) slices.
    ideal = -(-len(pods) // max_n)
    if len(cluster.slices) > max(len(counts), ideal) and len(counts) >= ideal:
        rooms = sorted((max_n - c for c in counts if c < max_n), reverse=True)
        hosts = next((i + 1 for i in range(len(rooms)) if sum(rooms[: i + 1]) >= adds),
                     len(rooms))
        left = max(0, adds - sum(rooms[:hosts]))
        assert hosts + -(-left // max_n) > -(-adds // max_n) + FILL_EXTRA_WRITES


@pytest.mark.parametrize(
    ("counts", "adds", "writes", "final"),
    [
        # 49 pods over 49 nearly full slices: one create, not 49 updates; compaction in quiet
        # periods brings the group back to its ideal count.
        ([99] * 50, 49, 1, [49] + [99] * 50),
        ([90] * 10, 100, 1, [90] * 10 + [100]),
        # Upstream's placement (two full slices, the 50 left into a half-full one): 3 writes,
        # where filling all five would take 5.
        ([50] * 5, 250, 3, [50] * 4 + [100] * 3),
        # Filling takes one write more than a create and keeps the group at its ideal count.
        ([100, 100, 95, 60], 45, 2, [100] * 4),
        # A full slice's worth left over at the ideal count fills the untouched slices with
        # the most room, only as many as it needs (not the nearly full one), instead of a new
        # slice beyond the ideal: one write more, within the limit.
        ([20, 20, 95], 100, 2, [40, 95, 100]),
        # A remainder that fits no untouched slice gets a new one while that is within the
        # ideal count: one create, not a top-up of the nearly full slice and a create.
        ([100, 95], 30, 1, [30, 95, 100]),
    ],
)
def test_filling_before_creating_costs_at_most_one_more_write(
    counts: list[int], adds: int, writes: int, final: list[int]
) -> None:
    sel = make_selector()
    cluster, pods = seeded(sel, counts)
    p = apply(sel, pods + pods_range(adds, 90_000), cluster)
    assert p.writes == writes
    assert sizes(cluster) == sorted(final)
