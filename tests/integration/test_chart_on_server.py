"""The chart as a real API server takes it: every rendered object accepted by a dry-run create
with strict field validation (the server's own validation, cross-field checks included, which
the JSON schemas of ``scripts/chart_check.py`` do not make), with no warning; and the
controller's pod, as its Deployment would have the ReplicaSet create it, admitted by Pod
Security admission in a namespace that enforces the ``restricted`` standard.

The embedded server has no Pod Security admission and no apps, policy or flowcontrol APIs, so
this runs on a real cluster only.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import structlog

from slicectl.kube.errors import Forbidden
from slicectl.kube.resources import NAMESPACES, PODS
from tests.chart_rbac import helm_unavailable_reason, render_chart
from tests.integration.conftest import Cluster

# The chart's kinds (the CRD aside: it is installed once, checked by the CRD tests) -> plural
PLURALS = {"ServiceAccount": "serviceaccounts", "Service": "services",
           "Deployment": "deployments", "PodDisruptionBudget": "poddisruptionbudgets",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
           "Role": "roles", "RoleBinding": "rolebindings", "FlowSchema": "flowschemas"}
DRY_RUN = {"dryRun": "All", "fieldValidation": "Strict"}


def _collection(doc: dict[str, Any], ns: str) -> str:
    api_version, kind = doc["apiVersion"], doc["kind"]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    scoped = f"/namespaces/{ns}" if doc["metadata"].get("namespace") else ""
    return f"{base}{scoped}/{PLURALS[kind]}"


def _pod_of(deployment: dict[str, Any], ns: str, **security: Any) -> dict[str, Any]:
    template = copy.deepcopy(deployment["spec"]["template"])
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {**template["metadata"], "name": "slicectl-psa", "namespace": ns},
           "spec": template["spec"]}
    pod["spec"]["containers"][0]["securityContext"].update(security)
    return pod


async def test_the_chart_is_accepted_and_runs_restricted(api: Cluster) -> None:
    if not api.real:
        pytest.skip("the embedded server has no Pod Security admission, apps or policy APIs")
    reason = helm_unavailable_reason()
    if reason:
        pytest.skip(reason)
    ns = api.namespace
    enforce = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn")}
    await api.client.patch(NAMESPACES, ns, {"metadata": {"labels": enforce}})
    docs = render_chart({"flowSchema": {"enabled": True}}, namespace=ns)
    created = []
    with structlog.testing.capture_logs() as logs:
        for doc in docs:
            if doc["kind"] == "CustomResourceDefinition":
                continue
            answer = await api.client.request("POST", _collection(doc, ns), params=DRY_RUN,
                                              json=doc)
            assert answer["metadata"]["name"] == doc["metadata"]["name"]
            created.append(doc["kind"])
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        # the pod names its ServiceAccount, which admission looks up: this one for real
        account = next(d for d in docs if d["kind"] == "ServiceAccount")
        await api.client.request("POST", _collection(account, ns), json=account)
        await api.client.request("POST", PODS.path(ns), params=DRY_RUN,
                                 json=_pod_of(deployment, ns))
    assert {"Deployment", "ServiceAccount", "FlowSchema"} <= set(created), created
    warned = [e for e in logs if e["event"] == "api_server_warning"]
    assert not warned, warned
    # and the admission is there to refuse: the same pod allowed to escalate privileges
    with pytest.raises(Forbidden, match="restricted"):
        await api.client.request("POST", PODS.path(ns), params=DRY_RUN,
                                 json=_pod_of(deployment, ns, allowPrivilegeEscalation=True))
