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
from tests.reliability.checker import ESEL, L_MANAGED, L_SELECTOR, MANAGED_BY, check
from tests.reliability.churn import prepare

NS = "checked"


def endpoint(pod: str, ip: str, ready: bool) -> dict[str, Any]:
    return {"addresses": [ip], "targetRef": {"kind": "Pod", "namespace": NS, "name": pod},
            "conditions": {"ready": ready, "serving": ready, "terminating": False}}


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
        good: dict[str, Any]  # the slice as the controller would write it
        good = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "addressType": "IPv4", "ports": [],
                "metadata": {"name": "web-1", "labels": {L_SELECTOR: "web",
                                                         L_MANAGED: MANAGED_BY},
                             "ownerReferences": [{
                                 "apiVersion": "slicectl.io/v1alpha1",
                                 "kind": "EndpointSelector", "name": "web", "controller": True,
                                 "uid": web["metadata"]["uid"]}]},
                "endpoints": [endpoint("p1", "10.0.0.1", True),
                              endpoint("p2", "10.0.0.2", False)]}
        made = await client.create(ENDPOINTSLICES, good, NS)
        await client.patch(ESEL, "web", {"status": {
            "endpoints": 2, "readyEndpoints": 1, "endpointSlices": 1,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled",
                            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
            NS, subresource="status")
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
