"""Every selector API flavour, invalid specs, and pods whose Node is not known yet.

The core ``discovery.k8s.io/v1alpha1`` EndpointSelector and the Gateway API
``XEndpointSelector`` are served here by CRDs of those groups (tests/fixtures/crds); they have
no status subresource, so slicectl writes no status for them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import structlog

from slicectl.kube.errors import NotFound
from slicectl.kube.resources import EVENTS, Resource
from slicectl.model.apis import CORE, GATEWAY, SLICECTL
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    CRD_PATH,
    ESEL,
    FIXTURE_CRDS,
    ROOT,
    Running,
    apply_crd,
    apply_fixture_crd,
    create_pod,
    ensure_node,
    load_yaml,
    node_name,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)

CORE_ESEL = Resource("discovery.k8s.io", "v1alpha1", "endpointselectors", kind="EndpointSelector")
XESEL = Resource("gateway.networking.x-k8s.io", "v1alpha1", "xendpointselectors",
                 kind="XEndpointSelector")


def flavour_body(api_version: str, kind: str, name: str, port: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "ports": [port]}}


async def test_all_three_selector_apis_with_the_same_name_coexist(cluster: Cluster) -> None:
    c = cluster
    for crd in ("discovery.k8s.io_endpointselectors",
                "gateway.networking.x-k8s.io_xendpointselectors"):
        await apply_fixture_crd(c.client, FIXTURE_CRDS / f"{crd}.yaml", real=c.real)
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.4.0.{i + 1}", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"},
                                              ports=[{"name": "http", "targetPort": "http"}]),
                          c.namespace)
    await c.client.create(CORE_ESEL, flavour_body(
        "discovery.k8s.io/v1alpha1", "EndpointSelector", "web",
        {"name": "http", "targetPort": 8080}), c.namespace)
    await c.client.create(XESEL, flavour_body(
        "gateway.networking.x-k8s.io/v1alpha1", "XEndpointSelector", "web",
        {"name": "grpc", "port": 9000}), c.namespace)
    opts = options(c.kubeconfig, c.namespace, selector_apis=(SLICECTL, CORE, GATEWAY))
    async with running_controller(opts):
        async def three_owners() -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            owners = {s["metadata"]["ownerReferences"][0]["apiVersion"] for s in slices}
            return len(slices) == 3 and len(owners) == 3 and all(
                len(s["endpoints"]) == 3 for s in slices)

        await wait_until(three_owners, what="one slice per flavour")
        by_owner = {s["metadata"]["ownerReferences"][0]["kind"] + "/" +
                    s["metadata"]["ownerReferences"][0]["apiVersion"]: s
                    for s in await slices_of(c.client, c.namespace, "web")}
        assert by_owner["EndpointSelector/slicectl.io/v1alpha1"]["ports"] == [
            {"name": "http", "port": 8080, "protocol": "TCP"}]
        assert by_owner["EndpointSelector/discovery.k8s.io/v1alpha1"]["ports"] == [
            {"name": "http", "port": 8080, "protocol": "TCP"}]
        assert by_owner["XEndpointSelector/gateway.networking.x-k8s.io/v1alpha1"]["ports"] == [
            {"name": "grpc", "port": 9000, "protocol": "TCP"}]

        async def status_written() -> bool:
            status = (await c.client.get(ESEL, "web", c.namespace)).get("status", {})
            return bool(status.get("endpoints") == 3)

        await wait_until(status_written, what="status on the slicectl.io flavour")
        core = await c.client.get(CORE_ESEL, "web", c.namespace)
        assert "status" not in core or not core["status"]


async def test_invalid_selector_gets_ready_false_and_an_event_while_others_are_served(
    cluster: Cluster,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.5.0.1", {"app": "web"})
    # Passes the CRD schema (label keys in matchLabels are not checked there) but not slicectl.
    bad = selector_body("bad", {"not a valid key!": "x"})
    await c.client.create(ESEL, bad, c.namespace)
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        async def web_served() -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            return sum(len(s["endpoints"]) for s in slices) == 1

        await wait_until(web_served, what="valid selector served")

        async def bad_reported() -> bool:
            status = (await c.client.get(ESEL, "bad", c.namespace)).get("status", {})
            conds = {x["type"]: x for x in status.get("conditions", [])}
            ready = conds.get("Ready", {})
            return bool(ready.get("status") == "False" and ready.get("reason") == "InvalidSpec")

        await wait_until(bad_reported, what="Ready=False InvalidSpec")

        async def warned() -> bool:
            events, _ = await c.client.list(EVENTS, c.namespace)
            return any(e.get("type") == "Warning" and e.get("regarding", {}).get("name") == "bad"
                       and e.get("reason") == "InvalidSpec" for e in events)

        await wait_until(warned, what="Warning event on the invalid selector")
        assert await slices_of(c.client, c.namespace, "bad") == []


async def test_pod_on_unknown_node_is_listed_and_gets_its_zone_when_the_node_appears(
    cluster: Cluster,
) -> None:
    c = cluster
    node = f"late-node-{c.namespace}"
    await create_pod(c.client, c.namespace, "web-0", "10.6.0.1", {"app": "web"}, node=node)
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        async def listed_without_zone() -> bool:
            eps = [ep for s in await slices_of(c.client, c.namespace, "web")
                   for ep in s["endpoints"]]
            return (len(eps) == 1 and eps[0].get("nodeName") == node_name(node)
                    and "zone" not in eps[0])

        await wait_until(listed_without_zone, what="pod listed before its node exists")
        await ensure_node(c.client, node, "zone-late")

        async def zoned() -> bool:
            eps = [ep for s in await slices_of(c.client, c.namespace, "web")
                   for ep in s["endpoints"]]
            return len(eps) == 1 and eps[0].get("zone") == "zone-late"

        await wait_until(zoned, what="zone filled in when the node appears")


async def test_the_readme_example_is_accepted_and_served(cluster: Cluster) -> None:
    c = cluster
    example = load_yaml(ROOT / "examples/endpointselector.yaml")
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "vllm-0", "10.7.0.1",
                     {"app": "vllm", "model": "qwen3-32b"})
    created = await c.client.create(ESEL, example, c.namespace)
    assert created["spec"]["ports"][0]["appProtocol"] == "kubernetes.io/h2c"
    async with running_controller(options(c.kubeconfig, c.namespace)):
        async def served() -> bool:
            slices = await slices_of(c.client, c.namespace, "llm-backends")
            return [len(s["endpoints"]) for s in slices] == [1] and slices[0]["ports"] == [
                {"name": "http", "port": 8080, "protocol": "TCP",
                 "appProtocol": "kubernetes.io/h2c"}]

        await wait_until(served, what="the example selector's slice")


async def test_a_selector_api_installed_after_the_start_is_served_without_a_restart(
        api: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run: slicectl started before ``kubectl apply`` of the CRD. It stays up and
    ready (KEP-6116's non-blocking start), says in one warning what is missing and how to fix
    it, and serves the selectors once the CRD is there, without a restart.

    A real cluster, shared, may have the CRD already and must keep it: there the selector
    API's discovery answers 404 at the client, as a cluster without the CRD does, until the
    test applies it."""
    c = api
    missing = [c.real]

    async def not_served_yet(method: str, path: str) -> None:
        if missing[0] and path == f"/apis/{SLICECTL.group}/{SLICECTL.version}":
            raise NotFound(404, "NotFound", "injected: the server could not find the "
                           "requested resource")

    ClientFaults(monkeypatch).before.append(not_served_yet)
    opts = options(c.kubeconfig, c.namespace)
    opts = replace(opts, controller=replace(opts.controller, api_retry_period=0.2))
    with structlog.testing.capture_logs() as logs:
        async with running_controller(opts) as run:
            await wait_until(lambda: _ready(run), what="ready without the CRD")
            missing[0] = False
            await apply_crd(c.client, CRD_PATH)
            await ensure_node(c.client, "node-a", "zone-a")
            await create_pod(c.client, c.namespace, "web-0", "10.4.9.1", {"app": "web"})
            await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

            async def listed() -> bool:
                slices = await slices_of(c.client, c.namespace, "web")
                return sum(len(s.get("endpoints") or ()) for s in slices) == 1

            await wait_until(listed, what="the pod listed once the CRD is installed")
    unserved = [e for e in logs if e["event"].startswith("selector API not served")]
    assert unserved and all(e["log_level"] == "warning" for e in unserved)
    hint = str(unserved[0].get("hint"))
    assert "endpointselectors.slicectl.io" in hint and "CRD" in hint, unserved[0]


async def _ready(run: Running) -> bool:
    return run.health.ready
