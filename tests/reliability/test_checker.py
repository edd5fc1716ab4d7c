"""The independent checker catches what it must: it is run on hand-made slices, no controller.

A check that cannot fail proves nothing, so every kind of problem the suite relies on it to
find is planted once: a missing, a duplicated, an undesired endpoint, wrong readiness, a slice
not owned by its selector, slices of a deleted selector, a modified foreign slice, a wrong status.
"""

from __future__ import annotations

import copy
from typing import Any

from slicectl.cli.workload import pod_manifest, running_status
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, PODS
from slicectl.sim.server import EmbeddedApiServer
from tests.reliability.checker import (
    ESEL,
    L_MANAGED,
    L_SELECTOR,
    MANAGED_BY,
    SUITE_LABEL,
    check,
)
from tests.reliability.churn import prepare

NS = "checked"


def endpoint(pod: str, ip: str, ready: bool) -> dict[str, Any]:
    return {"addresses": [ip], "targetRef": {"kind": "Pod", "namespace": NS, "name": pod},
            "conditions": {"ready": ready, "serving": ready, "terminating": False},
            "nodeName": "node-0", "zone": "z0"}


def web_slice(web: dict[str, Any], name: str, family: str,
              endpoints: list[dict[str, Any]]) -> dict[str, Any]:
    """A slice of selector ``web`` as the controller would write it (port http/8080)."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "addressType": family, "endpoints": endpoints,
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "metadata": {"name": name, "labels": {
                L_SELECTOR: "web", SUITE_LABEL: "reliability", L_MANAGED: MANAGED_BY},
                "ownerReferences": [{
                    "apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                    "name": "web", "controller": True, "blockOwnerDeletion": True,
                    "uid": web["metadata"]["uid"]}]}}


async def report_reconciled(client: KubeClient, web: dict[str, Any], *, endpoints: int,
                            ready: int, slices: int) -> None:
    """Write the status the controller would report for ``web`` with these counts."""
    await client.patch(ESEL, "web", {"status": {
        "endpoints": endpoints, "readyEndpoints": ready, "endpointSlices": slices,
        "observedGeneration": web["metadata"]["generation"],
        "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
        NS, subresource="status")


async def test_checker_finds_every_planted_problem(srv: EmbeddedApiServer) -> None:
    async with await KubeClient.connect(srv.kubeconfig_path) as client:
        await prepare(client, NS, {"web": {"app": "a"}, "old": {"app": "b"}})
        for name, ip, ready in (("p1", "10.0.0.1", True), ("p2", "10.0.0.2", False),
                                ("p3", "", True)):
            await client.create(PODS, pod_manifest(name, {"app": "a"}, "node-0",
                                                   [("http", 8080)]), NS)
            if ip:
                await client.patch(PODS, name, running_status(ip, ready), NS,
                                   subresource="status")
        web = await client.get(ESEL, "web", NS)
        good = web_slice(web, "web-1", "IPv4", [endpoint("p1", "10.0.0.1", True),
                                                endpoint("p2", "10.0.0.2", False)])
        made = await client.create(ENDPOINTSLICES, good, NS)
        await report_reconciled(client, web, endpoints=2, ready=1, slices=1)
        await client.delete(ESEL, "old", NS)
        verdict = await check(client, NS, deleted={"old"})
        assert verdict.ok, verdict.problems
        assert verdict.desired == 2

        async def problems_with(endpoints: list[dict[str, Any]], **kw: Any) -> list[str]:
            current = await client.get(ENDPOINTSLICES, "web-1", NS)
            await client.replace(ENDPOINTSLICES, "web-1", {**current, "endpoints": endpoints},
                                 NS)
            return (await check(client, NS, **kw)).problems

        p1, p2 = good["endpoints"]
        assert "missing" in str(await problems_with([p1]))
        assert "more than once" in str(await problems_with([p1, p2, p1]))
        assert "wrong address/conditions" in str(
            await problems_with([p1, {**p2, "conditions": {"ready": True, "serving": True,
                                                           "terminating": False}}]))
        assert "not desired" in str(await problems_with([p1, p2, endpoint("p3", "10.0.0.3",
                                                                          True)]))
        assert not await problems_with([p1, p2])
        await client.patch(ESEL, "web", {"status": {"readyEndpoints": 2}}, NS,
                           subresource="status")
        assert "status" in str((await check(client, NS)).problems)
        assert (await check(client, NS, status=False)).ok
        await client.patch(ESEL, "web", {"status": {"readyEndpoints": 1}}, NS,
                           subresource="status")
        orphan = copy.deepcopy(good)
        orphan["metadata"].update(name="old-1", ownerReferences=[])
        orphan["metadata"]["labels"][L_SELECTOR] = "old"
        orphan["endpoints"] = []
        await client.create(ENDPOINTSLICES, orphan, NS)
        assert "slices of a deleted selector" in str((await check(
            client, NS, deleted={"old"})).problems)
        await client.delete(ENDPOINTSLICES, "old-1", NS)
        assert "modified or deleted" in str((await check(
            client, NS, foreign={"web-1": "1"})).problems)
        assert (await check(client, NS, foreign={
            "web-1": (await client.get(ENDPOINTSLICES, "web-1", NS))[
                "metadata"]["resourceVersion"]})).ok
        stranger = copy.deepcopy(good)
        # owned by an object that exists (an absent owner would have it garbage-collected)
        stranger["metadata"]["ownerReferences"][0].update(
            uid=made["metadata"]["uid"], kind="EndpointSlice", name="web-1",
            apiVersion="discovery.k8s.io/v1")
        stranger["metadata"]["name"] = "web-2"
        stranger["endpoints"] = []
        await client.create(ENDPOINTSLICES, stranger, NS)
        assert "not owned by it" in str((await check(client, NS)).problems)
        assert made["metadata"]["name"] == "web-1"


async def test_checker_judges_families_ports_nodes_labels_and_placeholders(
        srv: EmbeddedApiServer) -> None:
    """The rules the model-based test (tests/integration/test_model_based.py) relies on: one
    endpoint per family, the pod's own ports, zone, the selector's labels, slice size, the
    placeholder, matchExpressions and observedGeneration."""
    async with await KubeClient.connect(srv.kubeconfig_path) as client:
        await prepare(client, NS, {"web": {"app": "a"}})
        for name, ips in (("p1", ["10.0.0.1", "fd00::1"]), ("p2", ["10.0.0.2"])):
            await client.create(PODS, pod_manifest(name, {"app": "a"}, "node-0",
                                                   [("http", 8080)]), NS)
            status = running_status(ips[0], True)
            status["status"]["podIPs"] = [{"ip": ip} for ip in ips]
            await client.patch(PODS, name, status, NS, subresource="status")
        web = await client.get(ESEL, "web", NS)
        v4 = [endpoint("p1", "10.0.0.1", True), endpoint("p2", "10.0.0.2", True)]
        v6 = [endpoint("p1", "fd00::1", True)]
        await client.create(ENDPOINTSLICES, web_slice(web, "web-4", "IPv4", v4), NS)
        await client.create(ENDPOINTSLICES, web_slice(web, "web-6", "IPv6", v6), NS)
        await report_reconciled(client, web, endpoints=3, ready=3, slices=2)
        assert (await check(client, NS)).ok, (await check(client, NS)).problems
        assert "more than 1 endpoints" in str((await check(client, NS, max_per_slice=1)).problems)

        async def problems_with(name: str, change: dict[str, Any]) -> list[str]:
            current = await client.get(ENDPOINTSLICES, name, NS)
            await client.replace(ENDPOINTSLICES, name, {**current, **change}, NS)
            found = (await check(client, NS)).problems
            now = await client.get(ENDPOINTSLICES, name, NS)
            await client.replace(ENDPOINTSLICES, name, {
                **now, **{k: current[k] for k in change},
                "metadata": {**current["metadata"],
                             "resourceVersion": now["metadata"]["resourceVersion"]}}, NS)
            assert (await check(client, NS)).ok
            return found

        wrong = "wrong address/conditions/node/ports"
        assert wrong in str(await problems_with("web-6", {"ports": [
            {"name": "http", "port": 9090, "protocol": "TCP"}]}))
        assert wrong in str(await problems_with("web-6", {"endpoints": [
            {**v6[0], "zone": "z1"}]}))
        assert "missing" in str(await problems_with("web-6", {"endpoints": [
            endpoint("p2", "fd00::2", True)]}))  # p2 has no IPv6 address: p1's is missing
        current = await client.get(ENDPOINTSLICES, "web-6", NS)
        assert "labels" in str(await problems_with("web-6", {"metadata": {
            **current["metadata"], "labels": {L_SELECTOR: "web", L_MANAGED: MANAGED_BY}}}))
        extra = web_slice(web, "web-e", "IPv4", [])
        await client.create(ENDPOINTSLICES, extra, NS)
        assert "empty slice" in str((await check(client, NS, status=False)).problems)
        await client.delete(ENDPOINTSLICES, "web-e", NS)
        # a spec change (generation 2, the same pods) not yet observed in status
        await client.patch(ESEL, "web", {"spec": {"selector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["a", "b"]}]}}}, NS)
        assert "observedGeneration" in str((await check(client, NS)).problems)
        # matchExpressions that select nothing: every listed endpoint is undesired and a
        # placeholder is wanted
        await client.patch(ESEL, "web", {"spec": {"selector": {"matchExpressions": [
            {"key": "app", "operator": "NotIn", "values": ["a"]}]}}}, NS)
        found = str((await check(client, NS, status=False)).problems)
        assert "listed but not desired" in found and "placeholder" in found
