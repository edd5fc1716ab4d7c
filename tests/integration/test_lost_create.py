"""Issue 8, item 8: a create whose response is lost must not produce a duplicate slice.

The server applies the create, the answer never reaches the controller (a connection reset
after the request was processed), and the watch is slow to show the new slice. The retry must
not create a second slice for the same endpoints. All three faults are injected at the
controller's client, and its creates counted there, so the test runs on a real cluster too.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)


async def test_lost_create_response_makes_no_duplicate(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.70.0.{i + 1}", {"app": "web"})
    faults = ClientFaults(monkeypatch)
    lost = [0]
    created = [0]  # slice creates the server answered with success (the lost one too)

    async def stall_watches_first(method: str, path: str) -> None:
        if method == "POST" and path.endswith("/endpointslices") and lost[0] == 0:
            faults.open_gap("endpointslices")  # the watch shows the slice only much later
            asyncio.get_running_loop().call_later(4.0, faults.close_gap, "endpointslices")

    async def lose_first_answer(method: str, path: str) -> None:
        if method == "POST" and path.endswith("/endpointslices"):
            created[0] += 1
            if lost[0] == 0:
                lost[0] += 1
                raise aiohttp.ServerDisconnectedError("injected: response lost after the write")

    faults.before.append(stall_watches_first)
    faults.after.append(lose_first_answer)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

        async def served() -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            return sum(len(s["endpoints"]) for s in slices) >= 3

        await wait_until(served, what="the selector served")
        await asyncio.sleep(6.0)  # past the stall: any duplicate has been written by now
        slices = await slices_of(c.client, c.namespace, "web")
        names = [ep["targetRef"]["name"] for s in slices for ep in s["endpoints"]]
        assert lost[0] == 1
        assert created[0] == 1, f"{created[0]} slices created for one slice's worth of endpoints"
        assert len(slices) == 1, f"duplicate slices: {[s['metadata']['name'] for s in slices]}"
        assert sorted(names) == ["web-0", "web-1", "web-2"]


@pytest.mark.embedded_only(
    reason="fault injection: slice creates answered 500 with Retry-After after they landed")
async def test_a_create_resent_after_an_applied_500_leaves_no_duplicate(
    cluster: Cluster,
) -> None:
    """The server applied a slice create, then answered 500 with Retry-After (an etcd
    timeout after the write): the client resends it, as client-go does, and a second slice with
    the same endpoints lands under another generated name. The controller must end with one
    slice listing each pod once."""
    c = cluster
    assert c.server is not None
    faults = c.server.faults
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.71.0.{i + 1}", {"app": "web"})
    faults.after_resources = frozenset({"endpointslices"})
    faults.error_retry_after = 1
    faults.error_after_rate = 1.0
    try:
        async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
            await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

            async def duplicated() -> bool:
                return len(await slices_of(c.client, c.namespace, "web")) >= 2

            await wait_until(duplicated, what="a resent create landing twice")
            faults.error_after_rate = 0.0

            async def healed() -> bool:
                slices = await slices_of(c.client, c.namespace, "web")
                return len(slices) == 1 and sorted(
                    ep["targetRef"]["name"] for ep in slices[0]["endpoints"]
                ) == ["web-0", "web-1", "web-2"]

            await wait_until(healed, what="one slice listing each pod once")
    finally:
        faults.error_after_rate, faults.error_retry_after = 0.0, 0
        faults.after_resources = frozenset()
