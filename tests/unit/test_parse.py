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
from slicectl.model.parse.objects import (
    _ENDPOINTS,
    _ENDPOINTS_MAX,
    _FAST_PORTS,
    _PORTS_MAX,
    _checked_pod,
    _fast_endpoint,
    _fast_pod,
    _slice_endpoint,
)
from slicectl.model.records import (
    LABEL_ZONE,
    ContainerPort,
    Endpoint,
    EndpointPort,
    ObjectVersion,
    OwnerRef,
    PodRecord,
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
            ("0fd00::1", "fd00::1"),  # five digits
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
         ("::ffff:010.0.0.1", "10.0.0.1"), ("FD00::0001", "fd00::1"),
         ("2002::1", "2002::1"), ("fd02::1", "fd02::1")],  # ff02::/16's 02 but no ff
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
            (lambda r: r["metadata"].update(labels={"a": "b", "c": 1}), "labels"),
            (lambda r: r["metadata"].update(labels=[]), "labels"),
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

    def test_ports_no_named_lookup_can_use_are_skipped(self) -> None:
        raw = pod_json()
        raw["spec"] = {"containers": [{"name": "c", "ports": [
            {"name": 5, "containerPort": 1}, {"name": "", "containerPort": 2},
            {"name": "a", "containerPort": "80"}, {"name": "b", "containerPort": True},
            {"name": "c", "containerPort": 0}, {"name": "d", "containerPort": 65536},
            {"name": "e", "containerPort": 65535}, "f",
            {"name": "g", "containerPort": 7, "protocol": 6}]}]}
        assert parse_pod(raw).container_ports == (ContainerPort("e", 65535),
                                                  ContainerPort("g", 7, ""))

    def test_equal_label_maps_are_one_object(self) -> None:
        """The pods of one ReplicaSet carry equal labels: held once, not once a pod."""
        first = _checked_pod(pod_json())
        second = _checked_pod(pod_json())
        assert first.labels is second.labels

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
        with pytest.raises(ParseError, match="labels"):
            parse_node({"metadata": {"name": "n", "labels": {LABEL_ZONE: 1}}})


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
                    "not an object",
                    {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "other"},
                    {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                     "name": "web", "uid": "sel", "controller": True},
                ],
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "appProtocol": "h2c"}, {},
                      {"name": "dns", "port": 53, "protocol": "UDP"}],
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
        assert s.ports == (EndpointPort("http", 80, "TCP", "h2c"), EndpointPort("", None, "TCP"),
                           EndpointPort("dns", 53, "UDP"))
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
        assert s.generation == 0, "no generation reads as 0"

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
    {**WELL_FORMED, "targetRef": {"kind": "Pod", "uid": "u"}},
    {**WELL_FORMED, "nodeName": "", "zone": None, "hostname": ""},
    {**WELL_FORMED, "zone": ""},  # read as no zone, as the checked parse and upstream do
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


def pod_shape(where: str, value: Any) -> dict[str, Any]:
    """:func:`fast_pod_json` with ``value`` at the dotted path ``where`` (None: removed)."""
    raw = fast_pod_json()
    *parents, leaf = where.split(".")
    node: Any = raw
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is None and isinstance(node, dict):
        node.pop(leaf, None)
    else:
        node[int(leaf) if leaf.isdigit() else leaf] = value
    return raw


POD_SHAPES: list[Any] = [
    fast_pod_json(),
    pod_shape("metadata.labels", None),
    pod_shape("metadata.labels", {}),
    pod_shape("metadata.labels", ["app"]),
    pod_shape("metadata.labels", {"app": ["web"]}),
    pod_shape("metadata.labels", {"app": "first-sight"}),
    pod_shape("metadata.name", ""),
    pod_shape("metadata.name", 5),
    pod_shape("metadata.namespace", ""),
    pod_shape("metadata.namespace", 5),
    pod_shape("metadata.uid", None),
    pod_shape("metadata.uid", ""),
    pod_shape("metadata.uid", 5),
    pod_shape("metadata.resourceVersion", None),
    pod_shape("metadata.resourceVersion", 7),
    pod_shape("metadata.creationTimestamp", None),
    pod_shape("metadata.deletionTimestamp", "2024-01-01T00:00:00Z"),
    pod_shape("spec", None),
    pod_shape("spec", "x"),
    pod_shape("status", None),
    pod_shape("status", []),
    pod_shape("status.phase", "Succeeded"),
    pod_shape("status.phase", None),
    pod_shape("status.phase", ""),
    pod_shape("status.phase", 5),
    pod_shape("status.podIPs", None),
    pod_shape("status.podIPs", {"ip": "10.0.0.1"}),
    pod_shape("status.podIPs", ["10.0.0.1", {"ip": 5}, {}]),
    pod_shape("status.podIPs", [{"ip": "010.0.0.1"}, {"ip": "bogus"}, {"ip": "fd00::1"}]),
    pod_shape("status.podIPs", [{"ip": "127.0.0.1"}, {"ip": "10.0.0.9"}]),
    pod_shape("status.conditions", None),
    pod_shape("status.conditions", {"type": "Ready"}),
    pod_shape("status.conditions", ["x", {"type": "Ready", "status": "True"}]),
    pod_shape("status.conditions", [{"type": "Ready", "status": "False",
                                     "lastTransitionTime": ""}]),
    pod_shape("status.conditions", [{"type": "Ready", "status": "True",
                                     "lastTransitionTime": 5}]),
    pod_shape("spec.nodeName", ""),
    pod_shape("spec.nodeName", None),
    pod_shape("spec.nodeName", 5),
    pod_shape("spec.hostname", ["h"]),
    pod_shape("spec.subdomain", None),
    pod_shape("spec.containers", None),
    pod_shape("spec.containers", "c"),
    pod_shape("spec.containers", ["c"]),
    pod_shape("spec.containers.0.ports", None),
    pod_shape("spec.containers.0.ports", "http"),
    pod_shape("spec.containers.0.ports", ["http", {"name": "b", "containerPort": 2}]),
    pod_shape("spec.containers.0.ports", [{"name": "a", "containerPort": 0},
                                          {"name": "b", "containerPort": 65536},
                                          {"name": "c", "containerPort": 65535},
                                          {"name": "", "containerPort": 3}]),
    pod_shape("spec.containers.0.ports", [{"name": 5, "containerPort": 1}]),
    pod_shape("spec.containers.0.ports", [{"name": "a", "containerPort": "80"}]),
    pod_shape("spec.containers.0.ports", [{"name": "a", "containerPort": True}]),
    pod_shape("spec.containers.0.ports", [{"name": "a", "containerPort": 1, "protocol": 6}]),
    pod_shape("spec.containers.0.ports", [{"name": "a", "containerPort": 1, "protocol": ""}]),
    pod_shape("spec.initContainers", None),
    pod_shape("spec.initContainers", "i"),
    pod_shape("spec.initContainers", ["i"]),
    pod_shape("spec.initContainers.0.ports", "metrics"),
    pod_shape("spec.initContainers.1.restartPolicy", "Always"),
    None,
    ["pod"],
]


class TestPodFastPath:
    """The fast parse (:func:`_fast_pod`) against the checked one, as the slice endpoints'
    are: it gives the same record or defers, and never takes a shape the checked one refuses.
    Its labels are seen first, as a running controller has seen them: the fast parse defers
    on a label map it meets for the first time."""

    @pytest.mark.parametrize("raw", POD_SHAPES)
    def test_same_record_or_error_as_the_checked_parse(self, raw: Any) -> None:
        seen = _checked_pod(fast_pod_json())
        fast = _fast_pod(raw)  # first: the checked parse would make its labels seen
        try:
            want: PodRecord | Exception = _checked_pod(raw)
        except ParseError as exc:
            want = exc
        if isinstance(want, Exception):
            assert fast is None, "a shape the checked parse refuses is never accepted"
        else:
            assert fast is None or fast == want
        assert seen.labels == {"app": "web"}

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


def test_the_shared_record_tables_stay_bounded() -> None:
    """Endpoints and container-port lists are shared through tables that are cleared when
    full: a cluster whose pods keep changing never makes them grow past their bound."""
    for i in range(_ENDPOINTS_MAX + 10):
        _fast_endpoint({**WELL_FORMED, "addresses": [f"10.{i >> 16}.{i >> 8 & 255}.{i & 255}"]})
    assert 0 < len(_ENDPOINTS) <= _ENDPOINTS_MAX
    seen = _checked_pod(fast_pod_json())
    for i in range(_PORTS_MAX + 10):
        raw = fast_pod_json()
        raw["spec"]["containers"][0]["ports"][0]["containerPort"] = i + 1
        assert _fast_pod(raw) is not None
    assert 0 < len(_FAST_PORTS) <= _PORTS_MAX
    assert seen.labels == {"app": "web"}


class TestVersion:
    def test_identity_and_version_only(self) -> None:
        raw = {"metadata": {"name": "s", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                            "generation": 3}, "endpoints": "not read"}
        assert parse_version(raw, "EndpointSlice") == ObjectVersion("ns", "s", "u", "7", 3)

    def test_no_generation_reads_as_0(self) -> None:
        raw = {"metadata": {"name": "s", "namespace": "ns", "uid": "u"}}
        assert parse_version(raw, "EndpointSlice").generation == 0

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
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": ["http"]}, "object"),
            ({"selector": {"matchLabels": {"a": "b"}}, "ports": [{"name": 5, "targetPort": 1}]},
             "name"),
            ({"selector": "app=web"}, "spec.selector"),
            # wrong JSON types: the shipped CRDs' schemas refuse these first (a real server
            # answers 422), but a spec is never a reason to raise
            ({"selector": {"matchLabels": ["a"]}}, "matchLabels"),
            ({"selector": {"matchLabels": {"a": 1}}}, "matchLabels"),
            ({"selector": {"matchExpressions": {"key": "a", "operator": "Exists"}}},
             "matchExpressions"),
            ({"selector": {"matchExpressions": ["a"]}}, "matchExpressions[0]"),
            ({"selector": {"matchExpressions": [{"key": 5, "operator": "Exists"}]}}, "key"),
            ({"selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": "b"}]}},
             "values"),
            ({"selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}},
             "values"),
            ("not an object", "spec"),
        ],
    )
    def test_invalid_spec_sets_error(self, spec: Any, message: str) -> None:
        rec = parse_selector(selector_json(spec), API)
        assert rec.error is not None and message in rec.error
        assert rec.selector.empty and rec.ports == ()
        assert rec.name == "web"

    @pytest.mark.parametrize(
        ("port", "valid"),
        [
            ({"name": "a" * 63, "targetPort": 1}, True),  # a DNS label: at most 63 characters
            ({"name": "a" * 64, "targetPort": 1}, False),
            ({"targetPort": "a" * 15}, True),  # an IANA_SVC_NAME: at most 15 characters
            ({"targetPort": "a" * 16}, False),
            ({"targetPort": "h2c"}, True),  # digits are fine with a letter among them
            ({"targetPort": "z80"}, True),
            ({"targetPort": True}, False),  # a JSON bool is no port number
            ({"targetPort": 65535}, True),
            ({"targetPort": 65536}, False),
            ({"targetPort": 1, "appProtocol": 5}, False),
        ],
    )
    def test_port_name_and_target_limits(self, port: dict[str, Any], valid: bool) -> None:
        rec = parse_selector(selector_json({"selector": {"matchLabels": {"a": "b"}},
                                            "ports": [port]}), API)
        assert (rec.error is None) is valid, rec.error

    def test_at_most_100_ports(self) -> None:
        """The README's limit (the CRDs' maxItems, and EndpointSlice's documented one)."""
        ports = [{"name": f"p{i}", "targetPort": i + 1} for i in range(101)]
        spec = {"selector": {"matchLabels": {"a": "b"}}, "ports": ports[:100]}
        rec = parse_selector(selector_json(spec), API)
        assert rec.error is None and len(rec.ports) == 100
        rec = parse_selector(selector_json({**spec, "ports": ports}), API)
        assert rec.error is not None and "at most 100" in rec.error

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

    def test_no_generation_reads_as_0(self) -> None:
        raw = selector_json({"selector": {"matchLabels": {"a": "b"}}})
        del raw["metadata"]["generation"]
        assert parse_selector(raw, API).generation == 0

    def test_unusable_metadata_raises(self) -> None:
        with pytest.raises(ParseError):
            parse_selector({"metadata": {"name": "a", "namespace": "b"}, "spec": {}}, API)
        with pytest.raises(ParseError):
            parse_selector({"spec": {}}, API)
