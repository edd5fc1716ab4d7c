"""Pod -> endpoint conversion, port resolution, address families and labels (SPEC section 3;
upstream checklist items 4-21)."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from slicectl.model.parse import parse_slice
from slicectl.model.records import (
    IPV4,
    IPV6,
    ContainerPort,
    Endpoint,
    EndpointPort,
    NodeRecord,
    PodRecord,
    SelectorPort,
    TargetRef,
)
from slicectl.reconcile import Settings, plan
from slicectl.reconcile.desired import desired_state
from slicectl.reconcile.endpoints import pod_endpoints, pod_included
from slicectl.reconcile.labels import desired_labels, is_reserved
from slicectl.reconcile.ports import find_port, normalize_ports, resolve_ports, unresolved_ports
from slicectl.reconcile.render import endpoint_to_json
from tests.unit.reconcile_builders import NODES, FakeCluster, make_pod, make_selector


def to_endpoint(
    pod: PodRecord, family: str, node: NodeRecord | None, name: str
) -> Endpoint | None:
    return pod_endpoints(pod, node, name).get(family)


class TestInclusion:
    @pytest.mark.parametrize("phase", ["Pending", "Running", "Unknown", ""])
    def test_live_phases_with_ip_included(self, phase: str) -> None:
        assert pod_included(make_pod("p", "10.0.0.1", phase=phase))

    @pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
    def test_terminal_phases_excluded(self, phase: str) -> None:
        assert not pod_included(make_pod("p", "10.0.0.1", phase=phase))

    def test_no_ip_excluded(self) -> None:
        assert not pod_included(make_pod("p"))

    def test_terminating_included(self) -> None:
        assert pod_included(make_pod("p", "10.0.0.1", terminating=True))

    def test_other_namespace_and_unmatched_left_out(self) -> None:
        sel = make_selector()
        pods = [
            make_pod("in", "10.0.0.1"),
            make_pod("other-ns", "10.0.0.2", namespace="elsewhere"),
            make_pod("unmatched", "10.0.0.3", labels={"app": "db"}),
            make_pod("done", "10.0.0.4", phase="Succeeded"),
        ]
        state = desired_state(sel, pods, NODES)
        names = [ep.target.name for g in state.groups.values() for ep in g.values() if ep.target]
        assert names == ["in"]


class TestConditions:
    @pytest.mark.parametrize(
        ("ready", "terminating", "want"),
        [
            (True, False, (True, True, False)),
            (False, False, (False, False, False)),
            (True, True, (False, True, True)),
            (False, True, (False, False, True)),
        ],
    )
    def test_matrix(self, ready: bool, terminating: bool, want: tuple[bool, bool, bool]) -> None:
        pod = make_pod("p", "10.0.0.1", ready=ready, terminating=terminating)
        ep = to_endpoint(pod, IPV4, None, "web")
        assert ep is not None
        assert (ep.ready, ep.serving, ep.terminating) == want


class TestFields:
    def test_zone_node_target(self) -> None:
        pod = make_pod("p", "10.0.0.1", node="node-2", uid="the-uid")
        ep = to_endpoint(pod, IPV4, NODES["node-2"], "web")
        assert ep is not None
        assert ep.node_name == "node-2" and ep.zone == "zone-b"
        assert ep.target == TargetRef("default", "p", "the-uid", "Pod")
        assert ep.addresses == ("10.0.0.1",)

    def test_missing_node_still_listed_without_zone(self) -> None:
        sel = make_selector()
        state = desired_state(sel, [make_pod("p", "10.0.0.1", node="ghost")], NODES)
        (group,) = state.groups.values()
        (ep,) = group.values()
        assert ep.node_name == "ghost" and ep.zone is None

    def test_node_without_zone(self) -> None:
        ep = to_endpoint(make_pod("p", "10.0.0.1"), IPV4, NodeRecord("node-1", None), "web")
        assert ep is not None and ep.zone is None

    def test_unscheduled_pod_has_no_node(self) -> None:
        ep = to_endpoint(make_pod("p", "10.0.0.1", node=""), IPV4, None, "web")
        assert ep is not None and ep.node_name is None

    @pytest.mark.parametrize(
        ("hostname", "subdomain", "want"),
        [("h", "web", "h"), ("h", "other", None), ("", "web", None), ("h", "", None)],
    )
    def test_hostname(self, hostname: str, subdomain: str, want: str | None) -> None:
        pod = make_pod("p", "10.0.0.1", hostname=hostname, subdomain=subdomain)
        ep = to_endpoint(pod, IPV4, None, "web")
        assert ep is not None and ep.hostname == want

    def test_family_filter(self) -> None:
        pod = make_pod("p", "10.0.0.1", "fd00::1")
        v4 = to_endpoint(pod, IPV4, None, "web")
        v6 = to_endpoint(pod, IPV6, None, "web")
        assert v4 is not None and v4.addresses == ("10.0.0.1",)
        assert v6 is not None and v6.addresses == ("fd00::1",)
        assert to_endpoint(make_pod("q", "10.0.0.2"), IPV6, None, "web") is None


class TestFamilies:
    def test_default_families_are_those_present(self) -> None:
        sel = make_selector()

        def families(*pods: PodRecord) -> set[str]:
            return {family for family, _ in desired_state(sel, pods, NODES).groups}

        assert families(make_pod("a", "10.0.0.1")) == {IPV4}
        assert families(make_pod("a", "fd00::1")) == {IPV6}
        assert families(make_pod("a", "10.0.0.1"), make_pod("b", "fd00::2")) == {IPV4, IPV6}

    def test_dual_stack_pod_one_endpoint_per_family(self) -> None:
        sel = make_selector()
        p = plan(sel, [make_pod("a", "10.0.0.1", "fd00::1")], NODES, [], Settings())
        assert sorted(s.address_type for s in p.creates) == [IPV4, IPV6]
        for spec in p.creates:
            (ep,) = spec.endpoints
            assert len(ep.addresses) == 1
            assert (":" in ep.addresses[0]) == (spec.address_type == IPV6)

    def test_ip_families_restricts(self) -> None:
        pods = [make_pod("a", "10.0.0.1", "fd00::1"), make_pod("b", "10.0.0.2")]
        v4 = plan(make_selector(ip_families=["IPv4"]), pods, NODES, [], Settings())
        assert [(s.address_type, len(s.endpoints)) for s in v4.creates] == [(IPV4, 2)]
        v6 = plan(make_selector(ip_families=["IPv6"]), pods, NODES, [], Settings())
        assert [(s.address_type, len(s.endpoints)) for s in v6.creates] == [(IPV6, 1)]
        assert v6.creates[0].endpoints[0].target == TargetRef("default", "a", "uid-a")

    def test_shared_ip_pods_both_listed(self) -> None:
        pods = [make_pod("a", "10.0.0.1", ready=True), make_pod("b", "10.0.0.1", ready=False)]
        (spec,) = plan(make_selector(), pods, NODES, [], Settings()).creates
        assert [(e.target.name if e.target else "", e.ready) for e in spec.endpoints] == [
            ("a", True),
            ("b", False),
        ]


HTTP = ContainerPort("http", 8080)


class TestPorts:
    def test_numeric_target_port_as_is(self) -> None:
        assert find_port(make_pod("p", "10.0.0.1"), SelectorPort(80)) == 80

    def test_named_requires_name_and_protocol(self) -> None:
        pod = make_pod("p", "10.0.0.1", ports=[HTTP, ContainerPort("dns", 53, "UDP")])
        assert find_port(pod, SelectorPort("http")) == 8080
        assert find_port(pod, SelectorPort("http", protocol="UDP")) is None
        assert find_port(pod, SelectorPort("dns", protocol="UDP")) == 53
        assert find_port(pod, SelectorPort("missing")) is None

    def test_regular_container_wins_over_sidecar(self) -> None:
        # PodRecord.container_ports lists containers first, then restartable init containers.
        pod = make_pod("p", "10.0.0.1", ports=[HTTP, ContainerPort("http", 9999)])
        assert find_port(pod, SelectorPort("http")) == 8080

    def test_resolved_ports_carry_selector_fields(self) -> None:
        pod = make_pod("p", "10.0.0.1", ports=[HTTP])
        sel_ports = (
            SelectorPort("http", "web", "TCP", "kubernetes.io/h2c"),
            SelectorPort(53, "dns", "UDP"),
            SelectorPort(3868, "diam", "SCTP"),
            SelectorPort("grpc", "grpc"),  # missing on this pod: dropped for it
        )
        assert set(resolve_ports(pod, sel_ports)) == {
            EndpointPort("web", 8080, "TCP", "kubernetes.io/h2c"),
            EndpointPort("dns", 53, "UDP"),
            EndpointPort("diam", 3868, "SCTP"),
        }

    def test_normalize_ports(self) -> None:
        a, b = EndpointPort("a", 1), EndpointPort("b", 2, "UDP")
        assert normalize_ports(None) == normalize_ports([]) == ()
        assert normalize_ports([b, a]) == normalize_ports([a, b])

    def test_missing_named_port_puts_pod_in_own_group(self) -> None:
        sel = make_selector(ports=[{"name": "http", "targetPort": "http"}])
        pods = [make_pod("with", "10.0.0.1", ports=[HTTP]), make_pod("without", "10.0.0.2")]
        p = plan(sel, pods, NODES, [], Settings())
        groups = {spec.ports: [e.target.name for e in spec.endpoints if e.target]
                  for spec in p.creates}
        assert groups == {(EndpointPort("http", 8080),): ["with"], (): ["without"]}

    def test_five_port_mappings_give_five_slices(self) -> None:
        sel = make_selector(ports=[{"name": "http", "targetPort": "http"}])
        pods = [
            make_pod(f"p{i:03d}", f"10.0.{i // 250}.{i % 250}",
                     ports=[ContainerPort("http", 8000 + i % 5)])
            for i in range(300)
        ]
        p = plan(sel, pods, NODES, [], Settings())
        assert sorted(len(s.endpoints) for s in p.creates) == [60] * 5
        assert {s.ports[0].port for s in p.creates} == {8000, 8001, 8002, 8003, 8004}
        assert {s.address_type for s in p.creates} == {IPV4}
        assert not p.updates and not p.deletes

    def test_no_ports_then_nil_ports_no_write(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        pods = [make_pod("a", "10.0.0.1")]
        first = plan(sel, pods, NODES, cluster.slices, Settings())
        assert len(first.creates) == 1 and first.creates[0].ports == ()
        cluster.apply(sel, first)
        for obj in cluster.objects.values():
            obj["ports"] = None  # what an API server may return
        assert plan(sel, pods, NODES, cluster.slices, Settings()).empty


class TestLabels:
    def test_reserved_never_copied(self) -> None:
        labels = desired_labels(
            "web",
            {
                "team": "ml",
                "app.kubernetes.io/name": "x",
                "kubernetes.io/service-name": "evil",
                "endpointslice.kubernetes.io/managed-by": "evil",
                "endpointslice.kubernetes.io/skip-mirror": "true",
                "kubernetes.io/endpoint-selector-name": "evil",
                "service.kubernetes.io/headless": "",
            },
            "me",
        )
        assert labels == {
            "team": "ml",
            "app.kubernetes.io/name": "x",
            "kubernetes.io/endpoint-selector-name": "web",
            "endpointslice.kubernetes.io/managed-by": "me",
        }

    def test_is_reserved(self) -> None:
        assert is_reserved("kubernetes.io/service-name")
        assert is_reserved("endpointslice.kubernetes.io/anything")
        assert not is_reserved("app.kubernetes.io/name")
        assert not is_reserved("team")


def test_unresolved_ports_are_the_named_ones_no_listed_endpoint_got() -> None:
    grpc = SelectorPort("grcp", "grpc", "TCP")
    http = SelectorPort("http", "http", "TCP")
    dns = SelectorPort("dns", "dns", "UDP")
    numeric = SelectorPort(8080, "metrics", "TCP")
    listed = [(EndpointPort("http", 80, "TCP"), EndpointPort("metrics", 8080, "TCP")),
              (EndpointPort("metrics", 8080, "TCP"),),  # a pod without http: fine
              (EndpointPort("dns", 53, "TCP"),)]  # the name, on another protocol
    assert unresolved_ports((grpc, http, dns, numeric), listed) == [grpc, dns]
    assert unresolved_ports((numeric,), []) == []
    assert unresolved_ports((grpc, http), []) == [], "no endpoints: no port is missing"


def _echoed(ep: Endpoint) -> Endpoint:
    """``ep`` as a slice's watch echo brings it back: rendered as the writer sends it,
    through JSON, parsed as the cache parses it."""
    raw = {"metadata": {"name": "s", "namespace": "default", "uid": "s-uid"},
           "addressType": IPV4, "endpoints": [orjson.loads(orjson.dumps(endpoint_to_json(ep)))]}
    (parsed,) = parse_slice(raw).endpoints
    return parsed


SHARED_PODS = (
    make_pod("shared-ready", "10.9.0.1"),
    make_pod("shared-unready", "10.9.0.2", ready=False),
    make_pod("shared-terminating", "10.9.0.3", terminating=True),
    make_pod("shared-host", "10.9.0.4", hostname="h", subdomain="web", node="node-2"),
    make_pod("shared-nozone", "10.9.0.5", node="gone"),
)


@pytest.mark.parametrize("pod", SHARED_PODS, ids=lambda p: p.name)
def test_the_planner_and_the_slice_cache_share_one_record_per_endpoint(pod: PodRecord) -> None:
    """Whichever comes first, the endpoint the planner builds for a pod and the one a slice
    listing it parses to are one record: a sync then finds the slice's endpoints unchanged
    by identity (``pack_group``), not by comparing every field of every endpoint."""
    (built,) = pod_endpoints(pod, NODES.get(pod.node_name), "web").values()
    assert _echoed(built) is built
    echoed_first = _echoed(replace(built, target=TargetRef("default", f"{pod.name}-2", "u2")))
    renamed = replace(pod, name=f"{pod.name}-2", uid="u2")
    assert pod_endpoints(renamed, NODES.get(pod.node_name), "web")[IPV4] is echoed_first
