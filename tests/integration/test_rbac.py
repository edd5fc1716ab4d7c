"""The chart's RBAC grants exactly what the controller calls.

The controller runs in-process (as ``slicectl run`` does, leader election on) against its own
embedded API server through a scenario that exercises every kind of call it makes: initial sync,
pod churn, a slice deleted by hand and recreated, status writes, an invalid selector with a
repeated Warning Event, selector deletion, and a shutdown that releases the Lease. The test does
not depend on any other test having run.

Who made a call: the API server counts every request by (verb, group, resource, subresource,
code) as kube-apiserver's ``apiserver_request_total`` does. Both the server's counts and the
test client's own (an ``on_request`` hook) are reset once the setup is done, just before the
controller starts; the controller's calls are the difference. The hook has no API group, so a
test request is matched to the server's key by (verb, resource, subresource, code), and the
test fails loudly if that is ambiguous rather than guess. Verbs are mapped to RBAC verbs as the
apiserver's RequestInfoFactory does. Discovery (``GET /apis/<group>/<version>``, a non-resource
URL the server does not count) needs no grant: system:discovery allows it to every user. Then:

* every call the controller made must be granted by the rendered chart, and
* every grant must be used by some call, or be allow-listed with the reason
  (``unused_grants_allowed``: needed though not exercised).

On a real cluster (``SLICECTL_TEST_KUBECONFIG``) the server enforces RBAC, so the controller
runs as the chart's ServiceAccount, bound by the chart's own (Cluster)Roles, with a TokenRequest
token: the scenario must converge and the controller's own request counts (its
``slicectl_api_requests_total``) must show no 401 or 403 and every expected kind of call. The
"no unused grant" half needs the server's per-group request counts, so it is checked on the
embedded server only.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, EVENTS, PODS, Resource
from slicectl.model.apis import CORE, GATEWAY, SLICECTL
from slicectl.model.records import SelectorRef
from tests.chart_rbac import RbacRule, helm_unavailable_reason, render_chart, rendered_rbac_rules
from tests.integration.conftest import Cluster
from tests.integration.credentials import chart_identity, token_kubeconfig
from tests.integration.support import (
    CRD_PATH,
    ESEL,
    FIXTURE_CRDS,
    ClientRequests,
    apply_crd,
    apply_fixture_crd,
    create_pod,
    ensure_node,
    local_get,
    options,
    running_controller,
    selector_body,
    serves,
    set_ready,
    slices_of,
    wait_for_garbage_collection,
    wait_until,
)

WEB = {"app": "web"}
HTTP_PORT = [{"name": "http", "protocol": "TCP", "targetPort": "http"}]
# kube-apiserver's request verbs (apiserver_request_total) -> RBAC verbs. A DELETE of a collection
# would be ``deletecollection``; the server's counts fold it into DELETE, and slicectl never
# deletes collections (grep: no delete_collection in slicectl/), so DELETE -> delete.
RBAC_VERB = {"GET": "get", "LIST": "list", "WATCH": "watch", "POST": "create", "PUT": "update",
             "PATCH": "patch", "DELETE": "delete"}


def unused_grants_allowed(apis: tuple[SelectorRef, ...]) -> dict[RbacRule, str]:
    """Granted by the chart, not exercised by this scenario; each with why it must stay."""
    allowed: dict[RbacRule, str] = {
        ("discovery.k8s.io", "endpointslices", "get"):
            "re-read of a slice after a 409 on its patch (controller/writer.py), racy to provoke",
    }
    listed = [("", "pods"), ("", "nodes"), ("discovery.k8s.io", "endpointslices")]
    for api in apis:
        group, resource = api.group, api.plural
        allowed[(group, f"{resource}/finalizers", "update")] = (
            "OwnerReferencesPermissionEnforcement checks it for the slices' blockOwnerDeletion")
        listed.append((group, resource))
    for group, resource in listed:
        allowed[(group, resource, "list")] = (
            "informers stream their lists (a watch; v1.32 authorizes it as one) and LIST only "
            "on servers that refuse that (cache/informer.py)")
    return allowed


ServerKey = tuple[str, str, str, str, int]  # verb, group, resource, subresource, code


def controller_calls(server: dict[ServerKey, int], test: ClientRequests) -> dict[ServerKey, int]:
    """The server's request counts minus the test client's own requests."""
    remaining = Counter(server)
    for (verb, resource, code), n in test.counts.items():
        if not resource:  # discovery: non-resource paths, which the server does not count
            continue
        name, _, sub = resource.partition("/")
        keys = [k for k, left in remaining.items() if left > 0 and k[0] == verb
                and k[2] == name and k[3] == sub and k[4] == code]
        groups = {k[1] for k in keys}
        assert len(groups) == 1, f"test request {verb} {resource} {code} matches groups {groups}"
        remaining[keys[0]] -= n
        assert remaining[keys[0]] >= 0, f"server counted fewer {keys[0]} than the test sent"
    return {k: n for k, n in remaining.items() if n > 0}


def rbac_of(calls: dict[ServerKey, int]) -> set[RbacRule]:
    """(apiGroup, resource[/subresource], verb) of the requests."""
    rules: set[RbacRule] = set()
    for verb, group, resource, sub, _code in calls:
        assert verb in RBAC_VERB, f"unexpected request verb {verb} on {group}/{resource}"
        rules.add((group, f"{resource}/{sub}" if sub else resource, RBAC_VERB[verb]))
    return rules


@functools.cache
def _helm_reason() -> str | None:
    return helm_unavailable_reason()


async def endpoints(client: KubeClient, ns: str, name: str = "web") -> dict[str, bool]:
    """Published address -> ready, over the selector's slices."""
    return {a: bool(ep["conditions"].get("ready")) for s in await slices_of(client, ns, name)
            for ep in s.get("endpoints") or [] for a in ep["addresses"]}


def flavour_resource(api: SelectorRef) -> Resource:
    return Resource(api.group, api.version, api.plural, kind=api.kind)


ControllerCounts = dict[tuple[str, str, int], float]  # (verb, resource, code) -> requests


async def controller_requests(metrics_port: int | None) -> ControllerCounts:
    """The controller's own request counts, from its ``slicectl_api_requests_total``."""
    _, text = await local_get(metrics_port, "/metrics")
    out: ControllerCounts = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "slicectl_api_requests_total":
                key = (sample.labels["verb"], sample.labels["resource"],
                       int(sample.labels["code"]))
                out[key] = out.get(key, 0.0) + sample.value
    return out


async def exercise_controller(
    api: Cluster, controller_kubeconfig: str, apis: tuple[SelectorRef, ...],
) -> ControllerCounts:
    """Run the controller through every kind of call it makes; counts start with it.

    Returns the controller's own request counts, read just before it stops.
    """
    client, ns = api.client, api.namespace
    await apply_crd(client, CRD_PATH)
    others = [api for api in apis if api != SLICECTL]
    for other in others:
        await apply_fixture_crd(client, FIXTURE_CRDS / f"{other.group}_{other.plural}.yaml",
                                real=api.real)
    for n in range(2):
        await ensure_node(client, f"node-{n}", f"zone-{n}")
    for i in range(3):
        await create_pod(client, ns, f"web-{i}", f"10.2.0.{i + 1}", WEB, node=f"node-{i % 2}")
    await client.create(ESEL, selector_body("web", WEB, ports=HTTP_PORT), ns)
    for other in others:  # the other flavours: served once each, under their own names
        body = {"apiVersion": other.api_version, "kind": other.kind,
                "metadata": {"name": f"web-{other.plural}-{other.group.split('.')[0]}"},
                "spec": {"selector": {"matchLabels": WEB},
                         "ports": [{"name": "http", "targetPort": 8080}]}}
        await client.create(flavour_resource(other), body, ns)

    opts = options(controller_kubeconfig, ns, selector_apis=apis, leader_elect=True,
                   lease_namespace=ns, lease_duration=3.0, renew_deadline=2.0,
                   retry_period=0.5, status_update_period=0.0, max_endpoints_per_slice=2,
                   metrics_bind_address="127.0.0.1:0")
    if api.server is not None:
        api.server.reset_counts()  # the setup above was all the test's own
    api.requests.clear()
    async with running_controller(opts) as running:
        for other in others:
            name = f"web-{other.plural}-{other.group.split('.')[0]}"

            async def flavour_served(name: str = name) -> bool:
                return len(await endpoints(client, ns, name)) == 3

            await wait_until(flavour_served, what=f"{other.api_version} selector served")
        want = {f"10.2.0.{i + 1}": True for i in range(3)}

        async def converged() -> bool:
            return await endpoints(client, ns) == want

        async def status_counts(n: int) -> bool:
            status = (await client.get(ESEL, "web", ns)).get("status") or {}
            return status.get("endpoints") == n

        await wait_until(converged, what="initial slices")
        await wait_until(lambda: status_counts(3), what="status written")

        # Pod churn: a new pod, one turning unready, one deleted.
        await create_pod(client, ns, "web-3", "10.2.0.4", WEB, node="node-1")
        await set_ready(client, ns, "web-0", False)
        await client.delete(PODS, "web-2", ns, grace_period_seconds=0)
        want = {"10.2.0.1": False, "10.2.0.2": True, "10.2.0.4": True}
        await wait_until(converged, what="slices after churn")
        await wait_until(lambda: status_counts(3), what="status after churn")

        # A slice deleted by hand is recreated.
        first = (await slices_of(client, ns, "web"))[0]["metadata"]["name"]
        await client.delete(ENDPOINTSLICES, first, ns)

        async def recreated() -> bool:
            names = {s["metadata"]["name"] for s in await slices_of(client, ns, "web")}
            return first not in names and await converged()

        await wait_until(recreated, what="slice recreated")

        # Scale down to one pod: two slices are more than one endpoint needs, one is deleted.
        for name in ("web-0", "web-1"):
            await client.delete(PODS, name, ns, grace_period_seconds=0)
        want = {"10.2.0.4": True}

        async def one_slice() -> bool:
            return len(await slices_of(client, ns, "web")) == 1 and await converged()

        await wait_until(one_slice, what="one slice left after scale-down")

        # An invalid selector (a label key the CRD schema does not check): Ready=False and a
        # Warning Event; a metadata change makes it warn again, a repeat that becomes a series.
        bad = selector_body("bad", {"not a key!": "x"}, ports=HTTP_PORT)
        await client.create(ESEL, bad, ns)

        async def warned() -> bool:
            items, _ = await client.list(EVENTS, ns)
            return any(e.get("reason") == "InvalidSpec" for e in items)

        await wait_until(warned, what="InvalidSpec event")
        await client.patch(ESEL, "bad", {"metadata": {"labels": {"touched": "1"}}}, ns,
                           patch_type="merge")

        async def not_ready() -> bool:
            status = (await client.get(ESEL, "bad", ns)).get("status") or {}
            conds = {c["type"]: c for c in status.get("conditions") or []}
            return bool(conds.get("Ready", {}).get("status") == "False")

        await wait_until(not_ready, what="invalid selector Ready=False")

        # Selector deletion: its slices go (garbage collection or the controller).
        uid = (await client.get(ESEL, "web", ns))["metadata"]["uid"]
        await client.delete(ESEL, "web", ns)

        async def gone() -> bool:
            return not await slices_of(client, ns, "web")

        await wait_for_garbage_collection(client, ns, uid, gone, real=api.real,
                                          what="slices gone with their selector")

        async def renewed() -> bool:  # a renewal of the Lease (the release comes at shutdown)
            own = await controller_requests(running.health.metrics_port)
            return any(verb == "PUT" and res == "leases" for verb, res, _ in own)

        await wait_until(renewed, what="the Lease renewed")
        counts = await controller_requests(running.health.metrics_port)
    # Leaving the block stops the controller as SIGTERM does: Lease released, Events flushed.
    return counts


def check_against_chart(
    recorded: set[RbacRule], values: dict[str, Any], apis: tuple[SelectorRef, ...],
) -> set[RbacRule]:
    """Assert the chart grants every recorded call; the grants this scenario did not use."""
    reason = _helm_reason()
    if reason:
        pytest.skip(reason)
    granted = rendered_rbac_rules(values)
    missing = recorded - granted
    assert not missing, f"the controller calls what the chart does not grant: {sorted(missing)}"
    allowed = set(unused_grants_allowed(apis))
    stale = allowed - granted
    assert not stale, f"allow-listed grants the chart no longer has (drop them): {sorted(stale)}"
    unused = granted - recorded
    unexplained = unused - allowed
    assert not unexplained, (
        f"the chart grants what the controller never called: {sorted(unexplained)}")
    return unused


@pytest.mark.parametrize(("apis", "values"), [
    pytest.param((SLICECTL,), {}, id="default-values"),
    pytest.param((SLICECTL, CORE, GATEWAY),
                 {"selectorApis": [a.api_version for a in (SLICECTL, CORE, GATEWAY)]},
                 id="all-selector-apis"),
])
async def test_chart_grants_exactly_what_the_controller_calls(
    api: Cluster, tmp_path: Path, apis: tuple[SelectorRef, ...], values: dict[str, Any],
) -> None:
    reason = _helm_reason()
    if reason:
        pytest.skip(reason)
    if api.server is None:
        await on_a_cluster(api, tmp_path, apis, values)
        return
    own = await exercise_controller(api, api.kubeconfig, apis)
    assert not [k for k in own if k[2] in (401, 403)], own
    calls = controller_calls(api.server.counts(), api.requests)
    recorded = rbac_of(calls)
    print(f"\n[rbac] selector APIs {[a.api_version for a in apis]}; controller calls "
          "(verb, group, resource, subresource, code): count")
    for key, n in sorted(calls.items()):
        print(f"[rbac]   {key}: {n}")
    for rule in expected_calls(apis):
        assert rule in recorded, f"scenario did not exercise {rule}"
    unused = check_against_chart(recorded, values, apis)
    print(f"[rbac] granted by the chart, not called in this scenario: {sorted(unused)}")


async def on_a_cluster(
    api: Cluster, tmp_path: Path, apis: tuple[SelectorRef, ...], values: dict[str, Any],
) -> None:
    """The scenario on a server other than the test's own embedded one."""
    if await serves(api.client, "rbac.authorization.k8s.io/v1", "clusterroles"):
        # RBAC is enforced: the controller runs as the chart's ServiceAccount.
        docs = render_chart(values, namespace=api.namespace)
        async with chart_identity(api.client, api.namespace, docs) as token:
            kubeconfig = token_kubeconfig(api.kubeconfig, token, tmp_path / "controller.yaml")
            own = await exercise_controller(api, kubeconfig, apis)
    else:  # no RBAC (an embedded server started separately): nothing to bind or enforce
        own = await exercise_controller(api, api.kubeconfig, apis)
    # The repeated Warning's series is patched when the recorder flushes at shutdown, after
    # the controller's metrics are gone: the Event itself shows the patch was made and allowed.
    items, _ = await api.client.list(EVENTS, api.namespace)
    if any(e.get("reason") == "InvalidSpec" and e.get("series") for e in items):
        own[("PATCH", "events", 200)] = own.get(("PATCH", "events", 200), 0.0) + 1
    check_enforced_by_the_server(own, apis, values)


def expected_calls(apis: tuple[SelectorRef, ...]) -> list[RbacRule]:
    """Every kind of call the scenario is meant to exercise."""
    expected = [("", "pods", "watch"), ("", "nodes", "watch"),
                ("discovery.k8s.io", "endpointslices", "create"),
                ("discovery.k8s.io", "endpointslices", "patch"),
                ("discovery.k8s.io", "endpointslices", "delete"),
                ("slicectl.io", "endpointselectors/status", "patch"),
                ("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch"),
                ("coordination.k8s.io", "leases", "get"),
                ("coordination.k8s.io", "leases", "create"),
                ("coordination.k8s.io", "leases", "update")]
    expected += [(a.group, a.plural, "watch") for a in apis]
    return expected


def check_enforced_by_the_server(
    own: ControllerCounts, apis: tuple[SelectorRef, ...], values: dict[str, Any],
) -> None:
    """On a real cluster: nothing refused, and every expected kind of call was made (and
    therefore allowed by the chart's roles). The client's counts carry no API group."""
    print(f"\n[rbac] controller's own requests as the chart's ServiceAccount: {sorted(own)}")
    refused = {k: n for k, n in own.items() if k[2] in (401, 403)}
    assert not refused, f"the server refused the chart's ServiceAccount: {refused}"
    made = {(resource, RBAC_VERB[verb]) for verb, resource, _code in own
            if resource}  # none refused; discovery ("") needs no grant
    for _group, resource, verb in expected_calls(apis):
        assert (resource, verb) in made, f"scenario did not exercise {resource} {verb}"
    granted = {(resource, verb) for _g, resource, verb in rendered_rbac_rules(values)}
    assert made <= granted, f"calls the chart does not grant: {sorted(made - granted)}"
