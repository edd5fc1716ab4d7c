"""The endpoint memo of desired state: a sync with the selector's memo plans exactly what a sync
without it plans, whatever changed in between (pods, their nodes' zones, the selector's spec),
and it does reuse the endpoints of pods whose records did not change."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.model.records import ContainerPort, NodeRecord, PodRecord, SelectorRecord
from slicectl.reconcile import EndpointMemo, Settings, plan
from slicectl.reconcile.desired import desired_state
from tests.unit.reconcile_builders import NODES, FakeCluster, make_pod, make_selector

SELECTORS = (
    make_selector(),
    make_selector(ports=[{"name": "http", "targetPort": "http"}]),
    make_selector(ip_families=["IPv6"], ports=[{"name": "p", "targetPort": 80}]),
    make_selector(ip_families=["IPv4", "IPv6"]),
    make_selector(match={"app": "web", "tier": "a"}),
    make_selector(namespace="other"),
    make_selector("web2", match={"app": "web"}),
)
ZONES = (NODES, {**NODES, "node-1": NodeRecord("node-1", "zone-c")},
         {"node-2": NodeRecord("node-2", "")})
OPS = ("add", "flip", "remove", "relabel", "tier", "ip", "port", "node", "move", "same",
       "zones", "selector")


def _pod(n: int, extra: int) -> PodRecord:
    v4, v6 = f"10.3.{n // 250}.{n % 250}", f"fd00::3:{n:x}"
    return make_pod(f"p{n:03d}", *((v4,), (v6,), (v4, v6))[extra % 3], ready=extra % 2 == 0,
                    node=("node-1", "node-2", "gone")[extra % 3],
                    ports=(ContainerPort("http", 8080 + extra % 2),),
                    namespace="other" if extra == 5 else "default",
                    hostname="h" if extra == 4 else "", subdomain="web" if extra == 4 else "")


def _change(pods: dict[str, PodRecord], op: str, index: int, extra: int, n: int) -> None:
    names = sorted(pods)
    if op == "add" or not names:
        pod = _pod(n, extra)
        pods[pod.name] = pod
        return
    name = names[index % len(names)]
    pod = pods[name]
    if op == "remove":
        del pods[name]
    elif op == "flip":
        pods[name] = replace(pod, ready=not pod.ready)
    elif op == "relabel":
        pods[name] = replace(pod, labels={"app": "other"})
    elif op == "tier":
        pods[name] = replace(pod, labels={"app": "web", "tier": "ab"[extra % 2]})
    elif op == "ip":
        pods[name] = replace(pod, pod_ips=(f"10.4.0.{extra + 1}",))
    elif op == "port":
        pods[name] = replace(pod, container_ports=(ContainerPort("http", 9000 + extra),))
    elif op == "node":
        pods[name] = replace(pod, node_name=("node-1", "node-2", "gone")[extra % 3])
    elif op == "move":
        pods[name] = replace(pod, namespace=("default", "other")[extra % 2])
    elif op == "same":
        pods[name] = replace(pod)  # a new record, equal to the old one


@settings(max_examples=150, deadline=None)
@given(
    max_n=st.integers(1, 5),
    steps=st.lists(
        st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 40), st.integers(0, 6)),
                 min_size=1, max_size=6),
        min_size=1, max_size=25,
    ),
)
def test_a_memo_never_changes_the_plan(max_n: int, steps: list[list[tuple[str, int, int]]]) -> None:
    cfg = Settings(max_endpoints_per_slice=max_n)
    pods: dict[str, PodRecord] = {}
    nodes = NODES
    sel: SelectorRecord = SELECTORS[0]
    memo = EndpointMemo()
    cluster = FakeCluster()
    serial = 0
    for batch in steps:
        for op, index, extra in batch:
            serial += 1
            if op == "zones":
                nodes = ZONES[extra % len(ZONES)]
            elif op == "selector":
                sel = replace(SELECTORS[extra % len(SELECTORS)], uid=sel.uid)
            else:
                _change(pods, op, index, extra, serial)
        with_memo = plan(sel, pods.values(), nodes, cluster.slices, cfg, memo=memo)
        assert with_memo == plan(sel, pods.values(), nodes, cluster.slices, cfg)
        assert desired_state(sel, pods.values(), nodes, memo) == desired_state(
            sel, pods.values(), nodes)
        cluster.apply(sel, with_memo)


def test_unchanged_records_keep_their_endpoints_and_only_selected_pods_are_kept() -> None:
    sel = make_selector()
    pods = [make_pod(f"p{i}", f"10.0.0.{i + 1}") for i in range(5)]
    pods.append(make_pod("db", "10.0.0.9", labels={"app": "db"}))
    memo = EndpointMemo()
    first = desired_state(sel, pods, NODES, memo)
    assert len(memo) == 5, "the unselected pod is not remembered"
    pods[2] = replace(pods[2], ready=False)
    second = desired_state(sel, pods, NODES, memo)
    (before,), (after,) = first.groups.values(), second.groups.values()
    reused = [name for name, ep in after.items() if ep is before[name]]
    assert len(reused) == 4 and not after[next(k for k in after if k[3] == "p2")].ready
    del pods[0]
    desired_state(sel, pods, NODES, memo)
    assert len(memo) == 4, "a pod that is gone leaves the memo"


def test_a_zone_change_rebuilds_the_endpoint() -> None:
    sel = make_selector()
    pods = [make_pod("p", "10.0.0.1")]
    memo = EndpointMemo()
    desired_state(sel, pods, NODES, memo)
    moved = {"node-1": NodeRecord("node-1", "zone-z")}
    (group,) = desired_state(sel, pods, moved, memo).groups.values()
    assert [ep.zone for ep in group.values()] == ["zone-z"]
