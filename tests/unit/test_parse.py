"""Raw API JSON -> records: identity checks, graceful degradation, selector validation."""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.model.parse import (
    ParseError,
    canonical_ip,
    endpoint_ip,
    parse_node,
    parse_pod,
    parse_selector,
    parse_slice,
    parse_version,
)
from slicectl.model.parse.objects import _checked_pod, _fast_endpoint, _fast_pod, _slice_endpoint
from slicectl.model.records import (
    ContainerPort,
    Endpoint,
    EndpointPort,
    ObjectVersion,
    OwnerRef,
    SelectorPort,
    SelectorRef,
    TargetRef,
)

API = SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector", "endpointselectors")
GATEWAY = SelectorRef(
    "gateway.networking.x-k8s.io", "v1alpha1", "XEndpointSelector", "xendpointselectors"
)


def pod_json(**over: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p1",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"app": "web"},
        },
        "spec": {
            "nodeName": "n1",
            "hostname": "h",
            "subdomain": "web",
            "containers": [
                {"name": "c", "ports": [{"name": "http", "containerPort": 8080}]},
                {"name": "d", "ports": [{"containerPort": 9000}]},
            ],
            "initContainers": [
                {"name": "side", "restartPolicy": "Always",
                 "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "UDP"}]},
                {"name": "init", "ports": [{"name": "init", "containerPort": 1}]},
            ],
        },
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "FD00::0001"}],
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"},
            ],
        },
    }
    raw.update(over)
    return raw


class TestCanonicalIP:
    @pytest.mark.parametrize(
        ("raw", "want"),
        [
            ("10.0.0.1", "10.0.0.1"),
            ("010.000.0.01", "10.0.0.1"),
            ("FD00:0:0::0001", "fd00::1"),
            ("::ffff:1.2.3.4", "1.2.3.4"),
            ("::ffff:001.2.3.4", "1.2.3.4"),
            ("::1.2.3.4", "::102:304"),
            ("2001:db8::", "2001:db8::"),
            ("000fd00::00000001", "fd00::1"),  # Go reads a group's every digit
            ("2001:db8::00000010.1.2.3", "2001:db8::a01:203"),
        ],
    )
    def test_valid(self, raw: str, want: str) -> None:
        assert canonical_ip(raw) == want

    @pytest.mark.parametrize(
        "raw", ["", "10.0.0", "10.0.0.256", "1.2.3.4.5", "fe80::1%eth0", "zz::1", "a.b.c.d",
                "10.0.0.-1", "\uff11.2.3.4", "1.2.3.4\n", "10.0.0.1\n", None, 17,
                "12345::1", "000012345::1"]
    )
    def test_invalid(self, raw: Any) -> None:
        assert canonical_ip(raw) is None


class TestEndpointIp:
    """The addresses the discovery validation's ValidateEndpointIP refuses (Go's net.IP
    IsUnspecified, IsLoopback, IsLinkLocalUnicast, IsLinkLocalMulticast)."""

    @pytest.mark.parametrize(
        "raw",
        ["0.0.0.0", "127.0.0.1", "127.255.0.9", "169.254.1.1", "169.254.169.254", "224.0.0.5",
         "224.0.0.255", "::", "::1", "fe80::1", "FEBF::1", "ff02::1", "ff12::1", "ff32::fb",
         "::ffff:127.0.0.1", "::ffff:169.254.0.1", "0127.0.0.1"],
    )
    def test_refused(self, raw: str) -> None:
        assert canonical_ip(raw) is not None
        assert endpoint_ip(raw) is None

    @pytest.mark.parametrize(
        ("raw", "want"),
        [("10.0.0.1", "10.0.0.1"), ("0.1.2.3", "0.1.2.3"), ("128.0.0.1", "128.0.0.1"),
         ("169.253.255.255", "169.253.255.255"), ("224.0.1.1", "224.0.1.1"),
         ("fec0::1", "fec0::1"), ("ff05::2", "ff05::2"), ("ff01::1", "ff01::1"),
         ("::ffff:010.0.0.1", "10.0.0.1"), ("FD00::0001", "fd00::1")],
    )
    def test_kept(self, raw: str, want: str) -> None:
        assert endpoint_ip(raw) == want

    def test_invalid_is_none(self) -> None:
        assert endpoint_ip("bogus") is None and endpoint_ip(None) is None


class TestPod:
    def test_full(self) -> None:
        pod = parse_pod(pod_json())
        assert (pod.namespace, pod.name, pod.uid, pod.resource_version) == ("ns", "p1", "u1", "7")
        assert pod.pod_ips == ("10.0.0.1", "fd00::1")
        assert pod.ready and pod.ready_transition == "2024-01-01T00:00:00Z"
        assert not pod.terminating
        assert (pod.node_name, pod.hostname, pod.subdomain) == ("n1", "h", "web")
        assert pod.labels == {"app": "web"}
        # unnamed port and non-restartable init container are not usable for lookup
        assert pod.container_ports == (
            ContainerPort("http", 8080, "TCP"),
            ContainerPort("metrics", 9090, "UDP"),
        )

    def test_invalid_ips_dropped_and_deduplicated(self) -> None:
        raw = pod_json()
        raw["status"]["podIPs"] = [
            {"ip": "bogus"}, {"ip": "010.0.0.1"}, {"ip": "10.0.0.1"}, "notanobject", {}
        ]
        assert parse_pod(raw).pod_ips == ("10.0.0.1",)

    @pytest.mark.parametrize(
        ("ips", "want"),
        [
            (["169.254.1.1"], ()),
            (["127.0.0.1"], ()),
            (["0.0.0.0"], ()),
            (["224.0.0.5", "10.0.0.7"], ("10.0.0.7",)),
            (["10.0.0.1", "fe80::1"], ("10.0.0.1",)),
            (["0.1.2.3"], ("0.1.2.3",)),
            (["10.0.0.1"], ("10.0.0.1",)),
        ],
    )
    def test_ips_no_slice_may_list_are_dropped(self, ips: list[str], want: tuple[str, ...]) -> None:
        raw = pod_json()
        raw["status"]["podIPs"] = [{"ip": ip} for ip in ips]
        assert parse_pod(raw).pod_ips == want
        fast = _fast_pod(raw)
        assert fast is None or fast == _checked_pod(raw), "the fast parse agrees or defers"

    @pytest.mark.parametrize("first", [True, False])
    def test_the_first_ready_condition_counts(self, first: bool) -> None:
        """A status that lists Ready twice (a real kube-apiserver v1.32.6 stores it, from a PUT
        or a merge patch) is read as upstream reads it: ``podutil.IsPodReady`` takes the first
        (``GetPodConditionFromList``), so kube-controller-manager publishes that one
        (``benchmarks/differential.py``, pods ``dup-ready`` and ``dup-unready``)."""
        raw = pod_json()
        raw["metadata"]["creationTimestamp"] = "2023-01-01T00:00:00Z"
        raw["spec"] = {"nodeName": "n1", "containers": [{"name": "c"}]}
        raw["status"]["podIPs"] = [{"ip": "10.0.0.1"}]
        raw["status"]["conditions"] = [
            {"type": "Ready", "status": str(first), "lastTransitionTime": "2024-01-01T00:00:00Z"},
            {"type": "Ready", "status": str(not first),
             "lastTransitionTime": "2024-02-02T00:00:00Z"},
        ]
        checked = _checked_pod(raw)  # the first sight of its labels
        fast = _fast_pod(raw)
        assert fast is not None, "the common shape takes the fast path"
        for pod in (fast, checked):
            assert (pod.ready, pod.ready_transition) == (first, "2024-01-01T00:00:00Z")

    def test_not_ready_and_terminating(self) -> None:
        raw = pod_json()
        raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        raw["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        pod = parse_pod(raw)
        assert pod.terminating and not pod.ready and pod.ready_transition is None

    def test_minimal(self) -> None:
        pod = parse_pod({"metadata": {"name": "a", "namespace": "b", "uid": "c"}})
        assert pod.pod_ips == () and pod.phase == "" and not pod.ready and pod.labels == {}

    @pytest.mark.parametrize(
        ("mutate", "message"),
        [
            (lambda r: r["metadata"].pop("name"), "metadata.name"),
            (lambda r: r["metadata"].pop("namespace"), "namespace"),
            (lambda r: r["metadata"].pop("uid"), "uid"),
            (lambda r: r.pop("metadata"), "metadata"),
            (lambda r: r["metadata"].update(labels=["x"]), "labels"),
            (lambda r: r["metadata"].update(labels={"a": 1}), "labels"),
            (lambda r: r.update(spec="x"), "spec"),
            (lambda r: r["status"].update(podIPs={"ip": "1.2.3.4"}), "podIPs"),
            (lambda r: r["spec"].update(nodeName=5), "nodeName"),
            (lambda r: r["spec"].update(containers=["x"]), "containers"),
        ],
    )
    def test_malformed(self, mutate: Any, message: str) -> None:
        raw = pod_json()
        mutate(raw)
        with pytest.raises(ParseError, match=message):
            parse_pod(raw)

    @pytest.mark.parametrize("raw", [None, [], "pod", 3])
    def test_not_an_object(self, raw: Any) -> None:
        with pytest.raises(ParseError):
            parse_pod(raw)


class TestNode:
    def test_partial_object_metadata(self) -> None:
        raw = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {
                "name": "n1",
                "resourceVersion": "5",
                "labels": {"topology.kubernetes.io/zone": "z1"},
            },
        }
        node = parse_node(raw)
        assert (node.name, node.zone, node.resource_version) == ("n1", "z1", "5")

    def test_no_zone(self) -> None:
        assert parse_node({"metadata": {"name": "n"}}).zone is None
        raw = {"metadata": {"name": "n", "labels": {"topology.kubernetes.io/zone": ""}}}
        assert parse_node(raw).zone is None

    def test_malformed(self) -> None:
        with pytest.raises(ParseError):
            parse_node({"metadata": {}})


class TestSlice:
    def test_full(self) -> None:
        raw = {
            "metadata": {
                "name": "web-abc",
                "namespace": "ns",
                "uid": "s1",
                "resourceVersion": "9",
                "generation": 3,
                "labels": {"kubernetes.io/endpoint-selector-name": "web"},
                "annotations": {"a": "b"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "other"},
                    {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                     "name": "web", "uid": "sel", "controller": True},
                ],
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "appProtocol": "h2c"}, {}],
            "endpoints": [
                {
                    "addresses": ["10.0.0.1"],
                    "conditions": {"ready": False, "serving": True, "terminating": True},
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"},
                    "nodeName": "n1",
                    "zone": "z",
                    "hostname": "h",
                },
                {"addresses": ["10.0.0.2"]},
            ],
        }
        s = parse_slice(raw)
        assert (s.name, s.uid, s.resource_version, s.generation) == ("web-abc", "s1", "9", 3)
        assert s.owner == OwnerRef("slicectl.io/v1alpha1", "EndpointSelector", "web", "sel")
        assert s.selector_name == "web" and s.annotations == {"a": "b"}
        assert s.ports == (EndpointPort("http", 80, "TCP", "h2c"), EndpointPort("", None, "TCP"))
        assert s.endpoints[0] == Endpoint(
            ("10.0.0.1",), False, True, True, TargetRef("ns", "p", "u"), "n1", "z", "h"
        )
        # nil conditions: ready/serving unknown -> ready, terminating -> false
        assert s.endpoints[1] == Endpoint(("10.0.0.2",), True, True, False)
        assert not s.terminating

    def test_null_lists_and_deletion(self) -> None:
        raw = {
            "metadata": {"name": "a", "namespace": "b", "uid": "c", "deletionTimestamp": "x"},
            "addressType": "IPv6",
            "ports": None,
            "endpoints": None,
        }
        s = parse_slice(raw)
        assert s.ports == () and s.endpoints == () and s.terminating and s.owner is None

    def test_malformed(self) -> None:
        with pytest.raises(ParseError, match="endpoints"):
            parse_slice({"metadata": {"name": "a", "namespace": "b", "uid": "c"},
                         "endpoints": [{"addresses": "10.0.0.1"}]})


WELL_FORMED = {
    "addresses": ["10.0.0.1"],
    "conditions": {"ready": True, "serving": True, "terminating": False},
    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"},
    "nodeName": "n1",
    "zone": "z",
}
ENDPOINT_SHAPES: list[Any] = [
    WELL_FORMED,
    {**WELL_FORMED, "hostname": "h", "addresses": ["fd00::1", "fd00::2"]},
    {**WELL_FORMED, "conditions": {"ready": False}},
    {**WELL_FORMED, "conditions": {"serving": False, "terminating": True}},
    {**WELL_FORMED, "conditions": {"ready": None, "serving": None, "terminating": None}},
    {**WELL_FORMED, "conditions": {}},
    {**WELL_FORMED, "conditions": None},
    {**WELL_FORMED, "targetRef": {}},
    {**WELL_FORMED, "targetRef": None},
    {**WELL_FORMED, "targetRef": {"name": "p"}},
    {**WELL_FORMED, "targetRef": {"name": "p", "kind": None}},
    {**WELL_FORMED, "nodeName": "", "zone": None, "hostname": ""},
    {"addresses": []},
    {"addresses": None, "conditions": {}},
    {**WELL_FORMED, "addresses": ["10.0.0.1", 7]},
    {**WELL_FORMED, "addresses": "10.0.0.1"},
    {**WELL_FORMED, "conditions": []},
    {**WELL_FORMED, "targetRef": ["x"]},
    {**WELL_FORMED, "targetRef": ""},
    {**WELL_FORMED, "targetRef": {"name": 5}},
    {**WELL_FORMED, "nodeName": 3},
    {**WELL_FORMED, "zone": ["z"]},
    {**WELL_FORMED, "hostname": {}},
    {**WELL_FORMED, "nodeName": 0, "zone": False},
    {**WELL_FORMED, "addresses": [["10.0.0.1"]]},
    {**WELL_FORMED, "targetRef": {"name": "p", "uid": []}},
    None,
    "endpoint",
]


class TestSliceEndpointFastPath:
    @pytest.mark.parametrize("raw", ENDPOINT_SHAPES)
    def test_same_record_or_error_as_the_checked_parse(self, raw: Any) -> None:
        try:
            want: Endpoint | Exception = _slice_endpoint(raw, "ep")
        except ParseError as exc:
            want = exc
        fast = _fast_endpoint(raw)
        if isinstance(want, Exception):
            assert fast is None, "a shape the checked parse refuses is never accepted"
        else:
            assert fast is None or fast == want

    @pytest.mark.parametrize("raw", ENDPOINT_SHAPES)
    def test_the_same_with_every_other_shape_cached(self, raw: Any) -> None:
        """The cache is looked up before the values are checked: no cached lookalike (a
        falsy value next to a cached None or "") lets a refused shape through."""
        for other in ENDPOINT_SHAPES:
            _fast_endpoint(other)
        self.test_same_record_or_error_as_the_checked_parse(raw)

    def test_the_common_shape_takes_the_fast_path(self) -> None:
        assert _fast_endpoint(WELL_FORMED) == Endpoint(
            ("10.0.0.1",), True, True, False, TargetRef("ns", "p", "u", "Pod"), "n1", "z")

    def test_an_equal_endpoint_is_the_same_record_and_a_different_one_is_not(self) -> None:
        first = _fast_endpoint(dict(WELL_FORMED))
        assert first is not None and _fast_endpoint(dict(WELL_FORMED)) is first
        unready = _fast_endpoint({**WELL_FORMED, "conditions": {"ready": False}})
        assert unready is not None and not unready.ready and first.ready
        no_ref = _fast_endpoint({**WELL_FORMED, "targetRef": {}})
        assert no_ref is not None and no_ref.target is None


def fast_pod_json() -> dict[str, Any]:
    """A pod of the common shape the fast parse takes: IPv4 only, every piece well typed."""
    raw = pod_json()
    raw["metadata"]["creationTimestamp"] = "2023-01-01T00:00:00Z"
    raw["status"]["podIPs"] = [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.1"}]
    return raw


class TestPodFastPath:
    """The fast parse (:func:`_fast_pod`) against the checked one."""

    @pytest.mark.parametrize("unnamed", [False, True])
    def test_the_common_shape_takes_the_fast_path(self, unnamed: bool) -> None:
        """Unnamed container ports are common (nothing looks them up, so most pods do not
        name theirs): such a pod is no odd shape, and the checked parse costs 4x more."""
        raw = fast_pod_json()
        if not unnamed:
            del raw["spec"]["containers"][1]
        seen = _checked_pod(raw)
        fast = _fast_pod(raw)
        assert fast is not None and fast == seen and fast.pod_ips == ("10.0.0.1", "10.0.0.2")
        assert fast.container_ports == (ContainerPort("http", 8080), ContainerPort("metrics", 9090,
                                                                                   "UDP"))


class TestVersion:
    def test_identity_and_version_only(self) -> None:
        raw = {"metadata": {"name": "s", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                            "generation": 3}, "endpoints": "not read"}
        assert parse_version(raw, "EndpointSlice") == ObjectVersion("ns", "s", "u", "7", 3)

    def test_identity_is_checked(self) -> None:
        with pytest.raises(ParseError, match="uid"):
            parse_version({"metadata": {"name": "s", "namespace": "ns"}}, "EndpointSlice")


def selector_json(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    metadata = {"name": "web", "namespace": "ns", "uid": "u", "generation": 4,
                "labels": {"team": "ml"}, **meta}
    return {"metadata": metadata, "spec": spec, "status": {"endpoints": 3}}


class TestSelector:
    def test_valid(self) -> None:
        spec = {
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "ipFamilies": ["IPv6", "IPv4"],
            "ports": [
                {"name": "http", "targetPort": "http", "appProtocol": "kubernetes.io/h2c"},
                {"name": "dns", "targetPort": 53, "protocol": "UDP"},
            ],
        }
        rec = parse_selector(selector_json(spec, creationTimestamp="t0"), API)
        assert rec.error is None
        assert rec.selector.matches({"app": "web", "tier": "x"})
        assert not rec.selector.matches({"app": "web"})
        assert rec.ip_families == ("IPv6", "IPv4")
        assert rec.ports == (
            SelectorPort("http", "http", "TCP", "kubernetes.io/h2c"),
            SelectorPort(53, "dns", "UDP"),
        )
        assert (rec.generation, rec.creation_timestamp, rec.labels) == (4, "t0", {"team": "ml"})
        assert rec.status == {"endpoints": 3} and not rec.deleting

    def test_gateway_port_field(self) -> None:
        spec = {"selector": {"matchLabels": {"app": "v"}},
                "ports": [{"name": "default", "port": 9002, "protocol": "TCP"}]}
        rec = parse_selector(selector_json(spec), GATEWAY)
        assert rec.error is None and rec.ports == (SelectorPort(9002, "default"),)
        assert rec.api.api_version == "gateway.networking.x-k8s.io/v1alpha1"

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ({"selector": {}}, "spec.selector must not be empty"),
            ({}, "spec.selector is required"),
            ({"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "operator"),
            ({"selector": {"matchLabels": {"a": "b c"}}}, "invalid label value"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"targetPort": 0}]},
             "1 and 65535"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"targetPort": 70000}]}, "65535"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"targetPort": "Http"}]},
             "IANA_SVC_NAME"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"targetPort": "8080"}]},
             "IANA_SVC_NAME"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"targetPort": "a--b"}]},
             "IANA_SVC_NAME"),
            # a trailing newline passes Python's "$", not Go's
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"targetPort": "http\n"}]},
             "IANA_SVC_NAME"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"name": "a\n", "targetPort": 1}]},
             "RFC 1123"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"name": "x"}]}, "required"),
            ({"selector": {"matchLabels": {"a": "b"}},
              "ports": [{"targetPort": 1, "protocol": "ICMP"}]}, "protocol"),
            # a flavour whose schema does not type it (the slicectl CRD's does)
            ({"selector": {"matchLabels": {"a": "b"}},
              "ports": [{"targetPort": 1, "protocol": ["TCP"]}]}, "protocol"),
            ({"selector": {"matchLabels": {"a": "b"}},
              "ports": [{"name": "a", "targetPort": 1}, {"name": "a", "targetPort": 2}]}, "unique"),
            ({"selector": {"matchLabels": {"a": "b"}},
              "ports": [{"targetPort": 1}, {"targetPort": 2}]}, "unique"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"name": "A_b", "targetPort": 1}]},
             "RFC 1123"),
            ({"selector": {"matchLabels": {"a": "b"}},
              "ports": [{"targetPort": 1, "appProtocol": "not valid!"}]}, "appProtocol"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ipFamilies": ["IPv5"]}, "ipFamilies"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ipFamilies": ["IPv4", "IPv4"]}, "repeat"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": "x"}, "list"),
            ({"selector": "app=web"}, "spec.selector"),
            ("not an object", "spec"),
        ],
    )
    def test_invalid_spec_sets_error(self, spec: Any, message: str) -> None:
        rec = parse_selector(selector_json(spec), API)
        assert rec.error is not None and message in rec.error
        assert rec.selector.empty and rec.ports == ()
        assert rec.name == "web"

    def test_name_too_long_for_label(self) -> None:
        rec = parse_selector(selector_json({"selector": {"matchLabels": {"a": "b"}}},
                                           name="x" * 64), API)
        assert rec.error is not None and "label value" in rec.error

    def test_single_unnamed_port_ok(self) -> None:
        rec = parse_selector(selector_json({"selector": {"matchLabels": {"a": "b"}},
                                            "ports": [{"targetPort": 80}]}), API)
        assert rec.error is None and rec.ports == (SelectorPort(80),)

    def test_deleting(self) -> None:
        raw = selector_json({"selector": {"matchLabels": {"a": "b"}}}, deletionTimestamp="t")
        assert parse_selector(raw, API).deleting

    def test_unusable_metadata_raises(self) -> None:
        with pytest.raises(ParseError):
            parse_selector({"metadata": {"name": "a", "namespace": "b"}, "spec": {}}, API)
        with pytest.raises(ParseError):
            parse_selector({"spec": {}}, API)
