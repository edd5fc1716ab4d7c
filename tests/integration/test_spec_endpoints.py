"""SPEC section 3 end to end: which pods are listed and what each endpoint says, as the running
controller writes them (the rules one by one are unit tests: tests/unit/test_endpoints.py,
test_parse.py, test_plan.py)."""

from __future__ import annotations

from typing import Any

from slicectl.kube.resources import EVENTS, PODS
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    Running,
    ensure_node,
    node_name,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)

WEB = {"app": "web"}
HTTP = [{"name": "http", "containerPort": 8080}]
H2C = "kubernetes.io/h2c"


async def make_pod(
    c: Cluster, name: str, ips: list[str], *, containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None, phase: str = "Running", **spec: str,
) -> None:
    """A pod on node-a with ``ips``; its containers default to one with the port ``http``."""
    body: dict[str, Any] = {
        "nodeName": node_name("node-a"),
        "containers": containers or [{"name": "main", "image": "x", "ports": HTTP}], **spec}
    if init:
        body["initContainers"] = init
    await c.client.create(PODS, {"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": name, "labels": WEB}, "spec": body},
                          c.namespace)
    status: dict[str, Any] = {"phase": phase,
                              "conditions": [{"type": "Ready", "status": "True"}]}
    if ips:
        status["podIP"], status["podIPs"] = ips[0], [{"ip": ip} for ip in ips]
    await c.client.patch(PODS, name, {"status": status}, c.namespace, subresource="status")


async def test_pods_become_endpoints_as_the_spec_says(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await make_pod(c, "named", ["10.0.0.1"], hostname="h0", subdomain="web")
    await make_pod(c, "other-subdomain", ["10.0.0.2"], hostname="h1", subdomain="other")
    await make_pod(c, "sidecar", ["10.0.0.3"], containers=[{"name": "main", "image": "x"}],
                   init=[{"name": "once", "image": "x", "ports": [
                             {"name": "http", "containerPort": 7070}]},
                         {"name": "side", "image": "x", "restartPolicy": "Always",
                          "ports": [{"name": "http", "containerPort": 9090}]}])
    await make_pod(c, "no-port", ["10.0.0.4"], containers=[{"name": "main", "image": "x"}])
    await make_pod(c, "dual", ["10.0.0.5", "fd00:0::0005"])
    await make_pod(c, "succeeded", ["10.0.0.6"], phase="Succeeded")
    await make_pod(c, "failed", ["10.0.0.7"], phase="Failed")
    await make_pod(c, "no-ip", [])
    ports = [{"name": "h", "targetPort": "http", "appProtocol": H2C}]
    await c.client.create(ESEL, selector_body("web", WEB, ports=ports), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        async def published() -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            return sum(len(s.get("endpoints") or []) for s in slices) == 6

        await wait_until(published, what="6 endpoints")
        listed: dict[tuple[str, str], tuple[list[Any], dict[str, Any]]] = {}
        for s in await slices_of(c.client, c.namespace, "web"):
            for ep in s["endpoints"]:
                listed[(ep["targetRef"]["name"], s["addressType"])] = (s.get("ports") or [], ep)

    def port(number: int) -> list[dict[str, Any]]:
        return [{"name": "h", "port": number, "protocol": "TCP", "appProtocol": H2C}]

    # terminal pods and pods without IPs are left out; a dual-stack pod is in both families
    assert sorted(listed) == [("dual", "IPv4"), ("dual", "IPv6"), ("named", "IPv4"),
                              ("no-port", "IPv4"), ("other-subdomain", "IPv4"),
                              ("sidecar", "IPv4")]
    assert listed[("dual", "IPv6")][1]["addresses"] == ["fd00::5"]  # canonical form
    # hostname only when the pod's subdomain is the selector's name
    assert listed[("named", "IPv4")][1]["hostname"] == "h0"
    assert "hostname" not in listed[("other-subdomain", "IPv4")][1]
    # a named port from the containers, else from a restartable init container (only)
    assert listed[("named", "IPv4")][0] == port(8080)
    assert listed[("sidecar", "IPv4")][0] == port(9090)
    # a name missing on a pod drops that port for that pod, which is still listed
    assert listed[("no-port", "IPv4")][0] == []
    for (name, _), (_, ep) in listed.items():
        assert ep["conditions"] == {"ready": True, "serving": True, "terminating": False}
        assert ep["nodeName"] == node_name("node-a") and ep["zone"] == "zone-a"
        assert ep["targetRef"]["kind"] == "Pod" and ep["targetRef"]["name"] == name


async def test_a_named_port_no_selected_pod_has_is_a_warning(cluster: Cluster) -> None:
    """A ``targetPort`` name that no selected pod declares (a typo, or pods of another
    version): SPEC section 3 drops the port for each such pod, so the slices list every pod
    without that port, useless to a consumer that needs it, while status says Ready. The
    operator gets a Warning Event (and log line) naming the port. A name that only some pods
    lack is normal (a rollout adding the port), and a selector with no pods lacks nothing:
    neither is warned about."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await make_pod(c, "a", ["10.0.0.1"])
    await make_pod(c, "b", ["10.0.0.2"], containers=[{"name": "main", "image": "x"}])
    typo = [{"name": "grpc", "protocol": "TCP", "targetPort": "grcp"}]
    await c.client.create(ESEL, selector_body("typo", WEB, ports=typo), c.namespace)
    partly = [{"name": "http", "protocol": "TCP", "targetPort": "http"}]
    await c.client.create(ESEL, selector_body("partly", WEB, ports=partly), c.namespace)
    await c.client.create(ESEL, selector_body("nothing", {"app": "none"}, ports=partly),
                          c.namespace)  # no pods, no endpoints: no port is missing

    async def warnings() -> list[dict[str, Any]]:
        events, _ = await c.client.list(EVENTS, c.namespace)
        return [e for e in events if e.get("type") == "Warning"]

    async with running_controller(options(c.kubeconfig, c.namespace)) as run:
        async def warned() -> bool:
            return bool(await warnings())

        await wait_until(warned, what="a Warning Event")
        await wait_until(lambda: _idle(run), what="every sync done")
    [event] = await warnings()
    assert event["regarding"]["name"] == "typo" and event["reason"] == "TargetPortNotFound"
    assert '"grcp"' in event["note"] and '"grpc"' in event["note"], event["note"]
    slices = await slices_of(c.client, c.namespace, "typo")
    assert sorted(e["addresses"][0] for s in slices for e in s["endpoints"]) == [
        "10.0.0.1", "10.0.0.2"], "the pods are still listed"
    assert all(not s.get("ports") for s in slices)


async def _idle(run: Running) -> bool:
    return bool(run.controller.idle())
