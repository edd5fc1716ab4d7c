"""Property tests for the planner: any sequence of pod changes, planned and applied step by step
against the slices the previous plans produced, keeps the slices exact, bounded and minimal."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.model.records import LABEL_MANAGED_BY, ContainerPort, PodRecord, SelectorRecord
from slicectl.reconcile import Settings, plan
from slicectl.reconcile.desired import desired_state
from slicectl.reconcile.endpoints import ip_family
from slicectl.reconcile.labels import desired_labels
from slicectl.reconcile.types import _multisets_differ
from tests.unit.reconcile_builders import NODES, FakeCluster, make_pod, make_selector

OPS = ("add", "add", "remove", "flip", "relabel", "ip", "port")


def _selector(variant: int) -> SelectorRecord:
    return [
        make_selector(labels={"team": "x"}),
        make_selector(ports=[{"name": "http", "targetPort": "http"}]),
        make_selector(ip_families=["IPv6"], ports=[{"name": "p", "targetPort": 80}]),
        make_selector(ip_families=["IPv4", "IPv6"]),
    ][variant]


class World:
    def __init__(self) -> None:
        self.pods: dict[str, PodRecord] = {}
        self.ips = itertools.count(1)
        self.names = itertools.count(1)

    def new_ips(self, family: int) -> tuple[str, ...]:
        n = next(self.ips)
        v4, v6 = f"10.1.{n // 250}.{n % 250}", f"fd00::{n:x}"
        return ((v4,), (v6,), (v4, v6))[family]

    def apply(self, op: str, index: int, extra: int) -> tuple[str, PodRecord | None]:
        """Apply one change; returns its kind and the pod it touched (before the change)."""
        names = sorted(self.pods)
        if op == "add" or not names:
            name = f"p{next(self.names):04d}"
            ports = () if extra % 3 == 2 else (ContainerPort("http", 8080 + extra % 3),)
            self.pods[name] = make_pod(name, *self.new_ips(extra % 3), ready=extra % 2 == 0,
                                       node=("node-1", "node-2", "gone")[extra % 3], ports=ports)
            return "add", None
        name = names[index % len(names)]
        pod = self.pods[name]
        if op == "remove":
            del self.pods[name]
        elif op == "flip":
            self.pods[name] = replace(pod, ready=not pod.ready)
        elif op == "relabel":
            self.pods[name] = replace(pod, labels={"app": "other"})
        elif op == "ip":
            self.pods[name] = replace(pod, pod_ips=self.new_ips(extra % 3))
        else:
            self.pods[name] = replace(pod, container_ports=(ContainerPort("http", 9000 + extra),))
        return op, pod


def check_slices(sel: SelectorRecord, world: World, cluster: FakeCluster, cfg: Settings) -> None:
    desired = desired_state(sel, world.pods.values(), NODES)
    want = Counter((fam, ports, ep) for (fam, ports), eps in desired.groups.items()
                   for ep in eps.values())
    slices = cluster.slices
    have = Counter((s.address_type, tuple(sorted(s.ports, key=repr)), ep)
                   for s in slices for ep in s.endpoints)
    want_norm = Counter({(f, tuple(sorted(p, key=repr)), e): n for (f, p, e), n in want.items()})
    assert have == want_norm, "every desired endpoint exactly once, nothing else"
    labels = desired_labels(sel.name, sel.labels, cfg.managed_by)
    for s in slices:
        assert len(s.endpoints) <= cfg.max_endpoints_per_slice
        assert dict(s.labels) == labels and s.labels[LABEL_MANAGED_BY] == cfg.managed_by
        assert s.owner is not None and s.owner.uid == sel.uid and s.owner.controller
    if desired.total == 0:
        assert len(slices) == 1 and not slices[0].endpoints and not slices[0].ports
    else:
        assert all(s.endpoints for s in slices), "no empty slice besides the placeholder"


@settings(max_examples=150, deadline=None)
@given(
    variant=st.integers(0, 3),
    max_n=st.integers(1, 6),
    steps=st.lists(
        st.lists(
            st.tuples(st.sampled_from(OPS), st.integers(0, 50), st.integers(0, 5)),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=30,
    ),
)
def test_any_change_sequence(
    variant: int, max_n: int, steps: list[list[tuple[str, int, int]]]
) -> None:
    """Each step is a batch of changes (one sync after a burst), planned and applied."""
    sel = _selector(variant)
    cfg = Settings(max_endpoints_per_slice=max_n)
    world = World()
    cluster = FakeCluster()
    first = plan(sel, [], NODES, cluster.slices, cfg)
    cluster.apply(sel, first)
    for batch in steps:
        changes = [world.apply(op, index, extra) for op, index, extra in batch]
        old_total = sum(len(s.endpoints) for s in cluster.slices)
        p = plan(sel, world.pods.values(), NODES, cluster.slices, cfg)
        cluster.apply(sel, p)
        check_slices(sel, world, cluster, cfg)
        assert p.endpoints_added - p.endpoints_removed == p.desired_endpoints - old_total
        assert p.desired_endpoints == sum(len(s.endpoints) for s in cluster.slices)
        assert plan(sel, world.pods.values(), NODES, cluster.slices, cfg).empty, "re-plan no-op"
        kind, before = changes[0]
        if len(changes) == 1 and before is not None and kind in ("flip", "remove"):
            families = len({ip_family(ip) for ip in before.pod_ips})
            placeholder = 1 if p.desired_endpoints == 0 else 0
            assert p.writes <= families + placeholder, (kind, p)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 400),
    max_n=st.integers(1, 120),
    order=st.randoms(use_true_random=False),
)
def test_input_order_does_not_matter(n: int, max_n: int, order: object) -> None:
    sel = make_selector()
    pods = [make_pod(f"p{i:04d}", f"10.2.{i // 250}.{i % 250}") for i in range(n)]
    cfg = Settings(max_endpoints_per_slice=max_n)
    a = plan(sel, pods, NODES, [], cfg)
    shuffled = list(pods)
    order.shuffle(shuffled)  # type: ignore[attr-defined]
    assert plan(sel, shuffled, NODES, [], cfg) == a
    assert a.desired_slices == max(1, -(-n // max_n))
    assert len(a.creates) == max(1, -(-n // max_n))


_ITEMS = st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_ITEMS, _ITEMS, st.booleans(), st.randoms(use_true_random=False))
def test_multisets_differ_is_counter_inequality(
    a: list[tuple[int, bool]], b: list[tuple[int, bool]], permute: bool, rnd: random.Random,
) -> None:
    """The comparison behind ``SliceUpdate.endpoints_changed`` skips items that are the same
    object at the same place from either end; it still says exactly ``Counter(a) !=
    Counter(b)``, whether equal items are one object or several."""
    shared: dict[int, tuple[int]] = {}

    def objects(items: list[tuple[int, bool]]) -> list[tuple[int]]:
        return [shared.setdefault(v, (v,)) if same else (v,) for v, same in items]

    left = objects(a)
    right = objects(b)
    if permute:  # the same multiset, some places shared, some not
        right = list(left)
        rnd.shuffle(right)
    assert _multisets_differ(left, right) is (Counter(left) != Counter(right))
    assert _multisets_differ(tuple(left), tuple(right)) is (Counter(left) != Counter(right))
