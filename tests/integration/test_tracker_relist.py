"""Tracker expectations against slices deleted behind slicectl's back never wedge a selector.

Issue 8, item 9: slicectl creates a slice while its slice watch is in a gap; someone deletes
that slice; the gap ends in 410 Gone and a relist that does not show the slice (and reports no
deletion: the cache never had it). And: someone deletes a new slice after its watch event and
before slicectl's create is answered. Either way the selector must not wait for a slice that no
longer exists.

The gaps, the 410 and the held answers are injected at the controller's client, so the tests
run on a real cluster too.
"""

from __future__ import annotations

import asyncio

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


async def _web_with_one_pod(c: Cluster) -> None:
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.80.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}, ports=HTTP), c.namespace)


async def test_slice_deleted_in_a_watch_gap_ending_in_410_does_not_wedge_the_selector(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await _web_with_one_pod(c)
    faults = ClientFaults(monkeypatch)
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        await wait_until(listing(c.client, c.namespace, "web", {"web-0"}), what="initial sync")
        [first] = await slices_of(c.client, c.namespace, "web")
        await faults.wait_delivered("endpointslices", first["metadata"]["name"])
        faults.open_gap("endpointslices")
        # A pod without the named port goes to a slice of its own port set: a create.
        await create_pod(c.client, c.namespace, "web-1", "10.80.0.2", {"app": "web"},
                         port_name="metrics")

        async def created() -> bool:
            return len(await slices_of(c.client, c.namespace, "web")) == 2

        await wait_until(created, what="the second slice created during the gap")
        for s in await slices_of(c.client, c.namespace, "web"):
            if any(ep["targetRef"]["name"] == "web-1" for ep in s["endpoints"]):
                await c.client.delete(ENDPOINTSLICES, s["metadata"]["name"], c.namespace)
        faults.close_gap("endpointslices", gone=True)  # the informer must relist

        await wait_until(listing(c.client, c.namespace, "web", {"web-0", "web-1"}),
                         what="the deleted slice recreated after the relist")


async def test_a_slice_deleted_before_the_answer_to_its_create_does_not_wedge_the_selector(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real server sends a write's watch event before its answer; someone else may delete
    the new slice in between (a person, a garbage collector). Recording the create once its
    answer came would expect the slice in the cache for good: every sync "stale" until the
    expectation expired, minutes later (a flake of the reliability suite's vandal, under CI
    load). Held answers make the window wide here."""
    c = cluster
    await _web_with_one_pod(c)
    held = [0]  # creates whose answer was held

    async def hold_create_answers(method: str, path: str) -> None:
        if method == "POST" and path.endswith("/endpointslices"):
            held[0] += 1
            await asyncio.sleep(1.0)  # it landed, its watch event went out; its answer waits

    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        await wait_until(listing(c.client, c.namespace, "web", {"web-0"}), what="initial sync")
        ClientFaults(monkeypatch).after.append(hold_create_answers)
        # A pod without the named port goes to a slice of its own port set: a create.
        await create_pod(c.client, c.namespace, "web-1", "10.80.0.2", {"app": "web"},
                         port_name="metrics")
        doomed: list[str] = []

        async def created() -> bool:
            doomed[:] = [s["metadata"]["name"] for s in await slices_of(
                c.client, c.namespace, "web") if any(
                    ep["targetRef"]["name"] == "web-1" for ep in s["endpoints"])]
            return bool(doomed)

        await wait_until(created, what="the second slice created", interval=0.005)
        await c.client.delete(ENDPOINTSLICES, doomed[0], c.namespace)  # before the answer
        # The slice may be listed before its create's answer reaches the client (the watch
        # event comes first on a real server): the answer is held a second from its arrival.

        async def answer_held() -> bool:
            return held[0] > 0

        await wait_until(answer_held, what="the create's answer held")
        monkeypatch.undo()

        await wait_until(listing(c.client, c.namespace, "web", {"web-0", "web-1"}),
                         what="the deleted slice recreated")
