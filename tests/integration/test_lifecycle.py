"""Lifecycles of slices and selectors that other hands change, end to end through the controller.

Each test drives a sequence a user or another controller may cause (a slice replaced under its
own name, a slice handed to another manager while slicectl writes it) and then judges the
slices the API server holds, never the controller's caches.
"""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.kube.resources import ENDPOINTSLICES
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    listing,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)

HTTP = [{"name": "http", "protocol": "TCP", "targetPort": "http"}]


def _copy_without_endpoints(raw: dict[str, Any]) -> dict[str, Any]:
    """The slice as a user would re-create it from a saved manifest, its endpoints emptied."""
    meta = raw["metadata"]
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": meta["name"], "labels": meta["labels"],
                     "ownerReferences": meta["ownerReferences"]},
        "addressType": raw["addressType"], "ports": raw.get("ports") or [], "endpoints": [],
    }


async def test_a_slice_replaced_under_its_name_in_a_watch_gap_leaves_no_phantom(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleted and created again under the same name (``kubectl replace --force``, a restore
    from a saved manifest) while no watch is open, a slice comes back from the relist as an
    update of its predecessor, with another uid. The predecessor must leave the controller's
    picture: kept there, its endpoints looked published, and the pods it listed were never
    put back in the slice that really exists."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.81.0.1", {"app": "web"})
    await create_pod(c.client, c.namespace, "web-1", "10.81.0.2", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}, ports=HTTP), c.namespace)
    faults = ClientFaults(monkeypatch)
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        await wait_until(listing(c.client, c.namespace, "web", {"web-0", "web-1"}),
                         what="initial sync")
        [old] = await slices_of(c.client, c.namespace, "web")
        await faults.wait_delivered("endpointslices", old["metadata"]["name"])
        faults.open_gap("endpointslices")
        await c.client.delete(ENDPOINTSLICES, old["metadata"]["name"], c.namespace)
        await c.client.create(ENDPOINTSLICES, _copy_without_endpoints(old), c.namespace)
        faults.close_gap("endpointslices", gone=True)  # the informer must relist

        await wait_until(listing(c.client, c.namespace, "web", {"web-0", "web-1"}),
                         what="the replaced slice's pods listed again")


async def test_a_slice_with_its_labels_under_an_owner_that_is_no_selector_is_replaced(
    cluster: Cluster,
) -> None:
    """A slice carrying slicectl's managed-by and the selector's name, whose controller is
    something other than a selector (a Pod here; any kind of any other API group), is not the
    selector's: upstream deletes every such slice it lists (``ownedBy``), and consumers that
    find the selector's slices by label would otherwise route to whatever it lists. Only a
    slice owned by a selector of another flavour (an API this process does not serve) is left
    to that flavour's controller."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    pod = await create_pod(c.client, c.namespace, "web-0", "10.81.1.1", {"app": "web"})
    sel = await c.client.create(ESEL, selector_body("web", {"app": "web"}, ports=HTTP),
                                c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        await wait_until(listing(c.client, c.namespace, "web", {"web-0"}), what="initial sync")
        [ours] = await slices_of(c.client, c.namespace, "web")
        impostor = _copy_without_endpoints(ours)
        impostor["metadata"] = {
            "generateName": "web-", "labels": ours["metadata"]["labels"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web-0",
                                 "uid": pod["metadata"]["uid"], "controller": True}]}
        impostor["endpoints"] = [{"addresses": ["10.81.9.9"], "conditions": {"ready": True},
                                  "targetRef": {"kind": "Pod", "name": "elsewhere",
                                                "namespace": c.namespace}}]
        await c.client.create(ENDPOINTSLICES, impostor, c.namespace)

        async def owned_and_exact() -> bool:
            owners = [ref["uid"] for s in await slices_of(c.client, c.namespace, "web")
                      for ref in s["metadata"].get("ownerReferences") or []]
            exact = listing(c.client, c.namespace, "web", {"web-0"})
            return owners == [sel["metadata"]["uid"]] and await exact()

        await wait_until(owned_and_exact, what="the impostor deleted")
