"""The plan for a selector being deleted (upstream checklist #34): no slice is created, so the
plan never races the garbage collector, yet its slices (kept while a finalizer holds the
selector) drop dead endpoints and keep the others' conditions current, and nothing still
wanted is lost on the way (no endpoint moves into a slice that would have to be created)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.model.records import ContainerPort
from slicectl.reconcile import Settings, plan
from slicectl.reconcile.desired import GroupKey, Identity, desired_state
from slicectl.reconcile.ports import normalize_ports
from tests.unit.reconcile_builders import NODES, FakeCluster, make_pod, make_selector
from tests.unit.test_plan_properties import OPS, World, _selector

CFG = Settings(max_endpoints_per_slice=2)


def _published(cluster: FakeCluster) -> Counter[tuple[GroupKey, Identity]]:
    """Listed endpoints by group (family, port list) and identity."""
    return Counter(((s.address_type, normalize_ports(s.ports)), ep.identity)
                   for s in cluster.slices for ep in s.endpoints)


def test_no_create_but_dead_endpoints_leave_and_conditions_follow() -> None:
    sel = make_selector()
    cluster = FakeCluster()
    pods = {p.name: p for p in (make_pod(f"p{i}", f"10.0.0.{i}") for i in range(1, 4))}
    cluster.apply(sel, plan(sel, pods.values(), NODES, cluster.slices, CFG))
    assert len(cluster.slices) == 2
    deleting = replace(sel, deleting=True)
    del pods["p1"]
    pods["p2"] = replace(pods["p2"], ready=False)
    pods["p9"] = make_pod("p9", "10.0.0.9")  # new: it would need a slice, or room in one
    p = plan(deleting, pods.values(), NODES, cluster.slices, CFG, compaction_budget=5)
    assert not p.creates
    cluster.apply(deleting, p)
    listed = {ep.addresses[0]: ep for s in cluster.slices for ep in s.endpoints}
    assert set(listed) == {"10.0.0.2", "10.0.0.3"}
    assert listed["10.0.0.2"].ready is False
    assert plan(deleting, pods.values(), NODES, cluster.slices, CFG).empty


def test_no_slices_no_writes() -> None:
    """Checklist #54: an owner being deleted with no slices gets no API call (no placeholder)."""
    sel = replace(make_selector(), deleting=True)
    assert plan(sel, [make_pod("a", "10.0.0.1")], NODES, [], CFG).empty
    assert plan(sel, [], NODES, [], CFG).empty


def test_every_endpoint_gone_deletes_the_slices() -> None:
    sel = make_selector()
    cluster = FakeCluster()
    cluster.apply(sel, plan(sel, [make_pod("a", "10.0.0.1")], NODES, cluster.slices, CFG))
    p = plan(replace(sel, deleting=True), [], NODES, cluster.slices, CFG)
    assert not p.creates and [s.name for s in p.deletes] == [s.name for s in cluster.slices]


@settings(max_examples=120, deadline=None)
@given(
    variant=st.integers(0, 3),
    max_n=st.integers(1, 5),
    before=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50), st.integers(0, 5)),
                    min_size=1, max_size=25),
    after=st.lists(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50),
                                      st.integers(0, 5)), min_size=1, max_size=6),
                   min_size=1, max_size=8),
    budget=st.integers(0, 4),
)
def test_nothing_still_wanted_is_lost(
    variant: int, max_n: int, before: list[tuple[str, int, int]],
    after: list[list[tuple[str, int, int]]], budget: int,
) -> None:
    """Slices built one change at a time (so fragmented), then the selector is being deleted:
    every later plan creates nothing, lists only wanted endpoints, and keeps every wanted
    endpoint it listed before."""
    sel = _selector(variant)
    cfg = Settings(max_endpoints_per_slice=max_n)
    world, cluster = World(), FakeCluster()
    for op, index, extra in before:
        world.apply(op, index, extra)
        cluster.apply(sel, plan(sel, world.pods.values(), NODES, cluster.slices, cfg))
    deleting = replace(sel, deleting=True)
    for batch in after:
        listed_before = _published(cluster)
        for op, index, extra in batch:
            world.apply(op, index, extra)
        p = plan(deleting, world.pods.values(), NODES, cluster.slices, cfg,
                 compaction_budget=budget)
        assert not p.creates
        cluster.apply(deleting, p)
        wanted = Counter((group, ep.identity)
                         for group, eps in desired_state(deleting, world.pods.values(),
                                                         NODES).groups.items()
                         for ep in eps.values())
        listed = _published(cluster)
        assert listed <= wanted, "only wanted endpoints are listed"
        kept = wanted & listed_before
        assert kept <= listed, "a wanted endpoint listed before stays listed in its group"
        assert all(len(s.endpoints) <= max_n for s in cluster.slices)
        assert plan(deleting, world.pods.values(), NODES, cluster.slices, cfg).empty


def test_an_endpoint_that_changed_ports_moves_into_the_slice_it_leaves() -> None:
    """Recycling still turns the create into an update of the emptied slice (as upstream)."""
    sel = make_selector(ports=[{"name": "http", "targetPort": "http"}])
    cluster = FakeCluster()
    pod = make_pod("a", "10.0.0.1", ports=[ContainerPort("http", 8080)])
    cluster.apply(sel, plan(sel, [pod], NODES, cluster.slices, CFG))
    moved = replace(pod, container_ports=(ContainerPort("http", 9090),))
    p = plan(replace(sel, deleting=True), [moved], NODES, cluster.slices, CFG)
    assert not p.creates and not p.deletes and len(p.updates) == 1
    cluster.apply(sel, p)
    (s,) = cluster.slices
    assert [port.port for port in s.ports] == [9090] and len(s.endpoints) == 1


def test_an_endpoint_whose_ports_changed_leaves_a_slice_still_in_use_with_no_create() -> None:
    """Its new group has no slice, and the one it leaves still lists another endpoint (so it
    cannot be recycled): publishing it would take a create, so it is dropped."""
    sel = make_selector(ports=[{"name": "http", "targetPort": "http"}])
    cluster = FakeCluster()
    a, b = (make_pod(n, ip, ports=[ContainerPort("http", 8080)])
            for n, ip in (("a", "10.0.0.1"), ("b", "10.0.0.2")))
    cluster.apply(sel, plan(sel, [a, b], NODES, cluster.slices, CFG))
    moved = replace(a, container_ports=(ContainerPort("http", 9090),))
    p = plan(replace(sel, deleting=True), [moved, b], NODES, cluster.slices, CFG)
    assert not p.creates and not p.deletes and len(p.updates) == 1
    cluster.apply(sel, p)
    (s,) = cluster.slices
    assert [ep.target.name for ep in s.endpoints if ep.target] == ["b"]
