"""The stages a plan's writes go out in (``reconcile.write_stages``): concurrent where they can
be, and never an order in which an endpoint that stays published goes missing meanwhile."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.model.records import Endpoint, SliceRecord
from slicectl.reconcile import Plan, Settings, SliceSpec, SliceUpdate, plan, write_stages
from slicectl.reconcile.desired import Identity
from tests.unit.reconcile_builders import NODES, FakeCluster, make_selector, pods_range
from tests.unit.test_plan_properties import OPS, World

SEL = make_selector()


def _slices(*sizes: int) -> list[SliceRecord]:
    """Slices of consecutive pods, ``sizes`` endpoints each, as the planner would write them."""
    cluster, start = FakeCluster(), 0
    for n in sizes:
        p = plan(SEL, pods_range(n, start), NODES, [], Settings(max_endpoints_per_slice=n))
        (spec,) = p.creates
        cluster.apply(SEL, Plan(creates=(spec,)))
        start += n
    return sorted(cluster.slices, key=lambda s: s.endpoints[0].addresses)


def _spec_of(base: SliceRecord, endpoints: Iterable[Endpoint]) -> SliceSpec:
    return SliceSpec(base.address_type, base.ports, tuple(endpoints), base.labels)


def test_no_write_and_one_write_need_no_ordering() -> None:
    (a,) = _slices(3)
    assert write_stages(Plan()) == []
    one = Plan(updates=(SliceUpdate(a, _spec_of(a, a.endpoints[:2])),))
    assert write_stages(one) == [one]


def test_a_scale_ups_top_up_and_new_slice_go_together() -> None:
    (a,) = _slices(70)
    p = plan(SEL, pods_range(300), NODES, [a], Settings())
    assert (len(p.creates), len(p.updates)) == (2, 1), p
    (stage,) = write_stages(p)
    assert stage.writes == 3


def test_an_endpoint_moving_between_slices_is_added_before_it_is_removed() -> None:
    a, b = _slices(3, 3)
    moved = a.endpoints[0]
    give = SliceUpdate(a, _spec_of(a, a.endpoints[1:]))
    take = SliceUpdate(b, _spec_of(b, (*b.endpoints, moved)))
    stages = write_stages(Plan(updates=(give, take)))
    assert [s.updates for s in stages] == [(take,), (give,)]


def test_a_delete_waits_for_the_creates() -> None:
    a, b = _slices(2, 1)
    spec = _spec_of(b, b.endpoints)  # a new slice that shares no endpoint with the deleted one
    stages = write_stages(Plan(creates=(spec,), deletes=(a,)))
    assert [(s.creates, s.deletes) for s in stages] == [((spec,), ()), ((), (a,))]


def test_independent_removals_go_together() -> None:
    a, b, c = _slices(2, 2, 2)
    p = Plan(updates=(SliceUpdate(a, _spec_of(a, a.endpoints[:1])),), deletes=(b, c))
    (stage,) = write_stages(p)
    assert stage.writes == 3


def test_two_slices_trading_endpoints_go_together_in_the_last_stage() -> None:
    a, b = _slices(2, 2)
    to_b = SliceUpdate(a, _spec_of(a, (a.endpoints[0], b.endpoints[0])))
    to_a = SliceUpdate(b, _spec_of(b, (b.endpoints[1], a.endpoints[1])))
    (stage,) = write_stages(Plan(updates=(to_b, to_a)))
    assert sorted(map(repr, stage.updates)) == sorted(map(repr, (to_b, to_a)))


def _listed(state: dict[str, set[Identity]]) -> set[Identity]:
    return set().union(*state.values()) if state else set()


def _worst_orders(slices: list[SliceRecord], p: Plan) -> list[set[Identity]]:
    """What consumers may see between the stages' writes: within a stage any order, so every
    slice it writes shows only what it keeps (removals landed, additions not yet)."""
    state = {s.name: {e.identity for e in s.endpoints} for s in slices}
    seen = []
    for n, stage in enumerate(write_stages(p)):
        after = dict(state)
        for u in stage.updates:
            after[u.existing.name] = {e.identity for e in u.spec.endpoints}
        for d in stage.deletes:
            after.pop(d.name)
        for i, c in enumerate(stage.creates):
            after[f"new-{n}-{i}"] = {e.identity for e in c.endpoints}
        worst = {name: ids & after.get(name, set()) for name, ids in state.items()}
        seen.append(_listed(worst))
        state = after
    return seen


@settings(max_examples=150, deadline=None)
@given(
    max_n=st.integers(1, 6),
    budget=st.integers(0, 4),
    steps=st.lists(
        st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50), st.integers(0, 5)),
                 min_size=1, max_size=8),
        min_size=1, max_size=25,
    ),
)
def test_the_planners_plans_never_drop_an_endpoint_that_stays(
    max_n: int, budget: int, steps: list[list[tuple[str, int, int]]]
) -> None:
    """Whatever the planner writes (compaction included), taken stage by stage in the worst
    order within each stage, an endpoint listed before and after the plan is listed
    throughout, and every write of the plan goes out exactly once."""
    cfg = Settings(max_endpoints_per_slice=max_n)
    world, cluster = World(), FakeCluster()
    cluster.apply(SEL, plan(SEL, [], NODES, cluster.slices, cfg))
    for batch in steps:
        for op, index, extra in batch:
            world.apply(op, index, extra)
        before = cluster.slices
        p = plan(SEL, world.pods.values(), NODES, before, cfg, compaction_budget=budget)
        stages = write_stages(p)
        assert sorted(map(repr, (w for s in stages for w in (*s.creates, *s.updates,
                                                              *s.deletes)))) == sorted(
            map(repr, (*p.creates, *p.updates, *p.deletes)))
        cluster.apply(SEL, p)
        stays = _listed({s.name: {e.identity for e in s.endpoints} for s in before}) & _listed(
            {s.name: {e.identity for e in s.endpoints} for s in cluster.slices})
        for seen in _worst_orders(before, p):
            assert stays <= seen, "an endpoint that stays went missing between writes"
