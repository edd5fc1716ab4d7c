"""The chart's FlowSchema (``flowSchema.enabled``) on a real API server: requests sent with the
chart's ServiceAccount are classified by it, at the priority level upstream's EndpointSlice
controller is served at, where without it they land in the built-in service-accounts
FlowSchema (workload-low).

The server says how it classified a request in every answer's ``X-Kubernetes-PF-FlowSchema-UID``
and ``X-Kubernetes-PF-PriorityLevel-UID`` headers. The embedded server has no API Priority and
Fairness, so the test runs on a real cluster only.
"""

from __future__ import annotations

import contextlib
import copy
import ssl
from typing import Any

import aiohttp
import pytest

from slicectl.kube.errors import NotFound
from slicectl.kube.resources import Resource
from tests.chart_rbac import helm_unavailable_reason, render_chart
from tests.integration.conftest import Cluster
from tests.integration.credentials import chart_identity, server_ca_and_address
from tests.integration.support import wait_until

_GROUP = "flowcontrol.apiserver.k8s.io"
FLOW_SCHEMAS = Resource(_GROUP, "v1", "flowschemas", False, "FlowSchema")
PRIORITY_LEVELS = Resource(_GROUP, "v1", "prioritylevelconfigurations", False,
                           "PriorityLevelConfiguration")


async def _classified(api: Cluster, token: str) -> tuple[str, str]:
    """The FlowSchema and priority level UIDs the server gave a request sent with ``token``."""
    ca, host, port = server_ca_and_address(api.kubeconfig)
    tls = ssl.create_default_context(cadata=ca.decode() if ca else None)
    url = f"https://{host}:{port}/api/v1/namespaces/{api.namespace}/pods"
    async with aiohttp.ClientSession() as http, http.get(
            url, headers={"Authorization": f"Bearer {token}"}, ssl=tls) as resp:
        assert resp.status == 200, await resp.text()
        return (resp.headers["X-Kubernetes-PF-FlowSchema-UID"],
                resp.headers["X-Kubernetes-PF-PriorityLevel-UID"])


async def test_the_charts_flowschema_serves_slicectl_beside_upstream(api: Cluster) -> None:
    if not api.real:
        pytest.skip("the embedded server has no API Priority and Fairness")
    reason = helm_unavailable_reason()
    if reason:
        pytest.skip(reason)
    docs = render_chart({"flowSchema": {"enabled": True}}, namespace=api.namespace)
    (schema,) = [copy.deepcopy(d) for d in docs if d.get("kind") == "FlowSchema"]
    schema["metadata"]["name"] += f"-{api.namespace}"  # cluster-wide: one per test namespace
    level: dict[str, Any] = await api.client.get(
        PRIORITY_LEVELS, schema["spec"]["priorityLevelConfiguration"]["name"])
    service_accounts = await api.client.get(FLOW_SCHEMAS, "service-accounts")
    async with chart_identity(api.client, api.namespace, docs) as token:
        before = await _classified(api, token)
        assert before[0] == service_accounts["metadata"]["uid"]
        assert before[1] != level["metadata"]["uid"]
        created = await api.client.create(FLOW_SCHEMAS, schema)
        try:
            want = (created["metadata"]["uid"], level["metadata"]["uid"])

            async def taken() -> bool:  # the server's APF configuration follows in a moment
                return await _classified(api, token) == want

            await wait_until(taken, limit=30.0, what="requests classified by the chart's "
                             "FlowSchema", interval=0.2)
        finally:
            with contextlib.suppress(NotFound):
                await api.client.delete(FLOW_SCHEMAS, schema["metadata"]["name"])
