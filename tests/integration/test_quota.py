"""A namespace whose ResourceQuota on EndpointSlices is used up.

The API server refuses every create past the quota with a 403 (``exceeded quota``), for as long
as nobody raises it or deletes slices; updates and deletes pass. A selector that needs a new
slice there must say so where an operator looks (a Warning Event, its status), retry with
backoff rather than in a loop, keep writing the slices it has (a pod that stops being ready is
still taken out of rotation), leave every other selector alone, and publish everything once the
quota is raised.

On a real cluster the test creates a ResourceQuota and writes its status itself, as
kube-controller-manager's resourcequota controller would (the admission plugin ignores a quota
whose status is empty); the embedded server has a knob for the same refusal
(:mod:`slicectl.sim.quota`). An embedded server started on its own serves no ResourceQuota
objects and its knob is out of reach: there the tests skip, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
import structlog

from slicectl.kube.errors import AlreadyExists
from slicectl.kube.resources import ENDPOINTSLICES, EVENTS, Resource
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    listing,
    options,
    running_controller,
    selector_body,
    serves,
    set_ready,
    slices_of,
    wait_until,
)
from tests.integration.test_observability import scrape

RESOURCEQUOTAS = Resource("", "v1", "resourcequotas", True, "ResourceQuota")
NO_QUOTA_OBJECTS = (
    "the server serves no ResourceQuota objects: an embedded API server started on its own "
    "(its quota knob, server.quota.limit, works only in the test's process)")
COUNT = "count/endpointslices.discovery.k8s.io"


async def limit_slices(c: Cluster, hard: int) -> None:
    """Allow at most ``hard`` EndpointSlices in the test's namespace from now on."""
    if c.server is not None:
        c.server.quota.limit(c.namespace, "endpointslices.discovery.k8s.io", hard)
        return
    if not await serves(c.client, "v1", "resourcequotas"):
        pytest.skip(NO_QUOTA_OBJECTS)
    body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "slices"},
            "spec": {"hard": {COUNT: str(hard)}}}
    with contextlib.suppress(AlreadyExists):
        await c.client.create(RESOURCEQUOTAS, body, c.namespace)
    await c.client.patch(RESOURCEQUOTAS, "slices", {"spec": body["spec"]}, c.namespace)
    used, _ = await c.client.list(ENDPOINTSLICES, c.namespace)
    status = {"status": {"hard": {COUNT: str(hard)}, "used": {COUNT: str(len(used))}}}
    await c.client.patch(RESOURCEQUOTAS, "slices", status, c.namespace, subresource="status")


async def warnings(c: Cluster, selector: str) -> list[dict[str, Any]]:
    items, _ = await c.client.list(EVENTS, c.namespace)
    return [e for e in items if e.get("reason") == "FailedToUpdateEndpointSlices"
            and (e.get("regarding") or {}).get("name") == selector]


async def ready_condition(c: Cluster, selector: str) -> dict[str, Any]:
    sel = await c.client.get(ESEL, selector, c.namespace)
    conditions = (sel.get("status") or {}).get("conditions") or []
    return next((x for x in conditions if x.get("type") == "Ready"), {})


async def test_a_used_up_quota_warns_keeps_the_slices_current_and_recovers(
    cluster: Cluster,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(2):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.71.0.{i + 1}", {"app": "web"})
    await create_pod(c.client, c.namespace, "small-0", "10.71.1.1", {"app": "small"})
    await limit_slices(c, 2)  # one slice for each selector, then no more
    opts = dataclasses.replace(
        options(c.kubeconfig, c.namespace, max_endpoints_per_slice=2),
        metrics_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
        await c.client.create(ESEL, selector_body("small", {"app": "small"}), c.namespace)
        await wait_until(listing(c.client, c.namespace, "web", {"web-0", "web-1"}),
                         what="web's first slice")
        await wait_until(listing(c.client, c.namespace, "small", {"small-0"}),
                         what="small's first slice")

        # web's slice is full: two more pods need a second slice, which the quota refuses.
        for i in (2, 3):
            await create_pod(c.client, c.namespace, f"web-{i}", f"10.71.0.{i + 1}",
                             {"app": "web"})
        await set_ready(c.client, c.namespace, "web-0", False)
        await create_pod(c.client, c.namespace, "small-1", "10.71.1.2", {"app": "small"})

        async def warned() -> bool:
            return any("exceeded quota" in e["note"] for e in await warnings(c, "web"))

        await wait_until(warned, what="a Warning Event on web naming the quota")

        async def web_0_unready() -> bool:
            eps = [ep for s in await slices_of(c.client, c.namespace, "web")
                   for ep in s["endpoints"] or []]
            return any(ep["targetRef"]["name"] == "web-0" and not ep["conditions"]["ready"]
                       for ep in eps)

        await wait_until(web_0_unready, what="web-0 out of rotation in web's existing slice")
        await wait_until(listing(c.client, c.namespace, "small", {"small-0", "small-1"}),
                         what="small, which needs no new slice, written as usual")

        async def failed_status() -> bool:
            return (await ready_condition(c, "web")).get("reason") == "SyncFailed"

        await wait_until(failed_status, what="web's Ready condition says SyncFailed")

        # Backing off, not looping: once nothing changes, each refusal at least doubles the
        # wait (1 s, 2 s, 4 s...), so a few seconds see only a few attempts.
        def refused(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
            return samples.get(("slicectl_api_requests_total", (
                ("code", "403"), ("resource", "endpointslices"), ("verb", "POST"))), 0.0)

        before = refused(await scrape(run.health.metrics_port))
        await asyncio.sleep(3.0)
        attempts = refused(await scrape(run.health.metrics_port)) - before
        assert attempts <= 2, f"{attempts:g} refused creates in 3 s: a retry loop"

        await limit_slices(c, 3)
        await wait_until(listing(c.client, c.namespace, "web",
                                 {"web-0", "web-1", "web-2", "web-3"}),
                         limit=60.0, what="web's new pods once the quota is raised")

        async def recovered() -> bool:
            return (await ready_condition(c, "web")).get("status") == "True"

        await wait_until(recovered, limit=60.0, what="web Ready again")


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def refusals(samples: Samples) -> tuple[float, float]:
    """The controller's refused slice creates and failed syncs, from its /metrics."""
    refused = samples.get(("slicectl_api_requests_total", (
        ("code", "403"), ("resource", "endpointslices"), ("verb", "POST"))), 0.0)
    failed = samples.get(("endpoint_slice_controller_syncs_total", (("result", "error"),)), 0.0)
    return refused, failed


@contextlib.asynccontextmanager
async def refused_again_and_again(c: Cluster) -> AsyncIterator[list[tuple[float, float]]]:
    """A selector that lacks four slices under a used-up quota, synced (and refused) after
    each of six pod changes; yields, once that is done, [(refused creates, failed syncs)]
    from its first refusal on."""
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.72.0.1", {"app": "web"})
    await limit_slices(c, 1)
    opts = dataclasses.replace(
        options(c.kubeconfig, c.namespace, max_endpoints_per_slice=1),
        metrics_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        async def counts() -> tuple[float, float]:
            return refusals(await scrape(run.health.metrics_port))

        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
        await wait_until(listing(c.client, c.namespace, "web", {"web-0"}), what="web's slice")
        for i in range(1, 5):  # four more one-endpoint slices, none of which fits
            await create_pod(c.client, c.namespace, f"web-{i}", f"10.72.0.{i + 1}",
                             {"app": "web"})

        async def refused_once() -> bool:
            return (await counts())[1] >= 1

        await wait_until(refused_once, what="a sync refused by the quota")
        first_refused, first_failed = await counts()
        for flip in range(6):  # each change syncs web at once, and each sync is refused
            await set_ready(c.client, c.namespace, "web-0", flip % 2 == 1)

            async def synced_again(n: float = first_failed + flip + 1) -> bool:
                return (await counts())[1] >= n

            await wait_until(synced_again, what="web synced again after a pod change")
        refused, failed = await counts()
        yield [(refused - first_refused, failed - first_failed)]


async def test_a_refused_create_is_not_sent_again_with_all_its_siblings(
    cluster: Cluster,
) -> None:
    """A sync sends its creates together; when the quota refuses them, the next syncs (every
    change to the selector's pods brings one, whatever the backoff) try one create, not all
    of them again: 20 new slices refused on every pod event would be 20 requests each."""
    async with refused_again_and_again(cluster) as counted:
        [(refused, failed)] = counted
    assert failed >= 6
    assert refused <= failed, (
        f"{refused:g} refused creates in {failed:g} failed syncs: every sync sent all its "
        "creates again")


async def test_the_same_refusal_is_one_warning_series(cluster: Cluster) -> None:
    """The server names the object it generated (``"web-x7k2p" is forbidden``), another name
    each time; in the Warning's note that made every refused sync a new Event and a new
    ``selector problem`` log line, where one series is the same problem seen again."""
    with structlog.testing.capture_logs() as logs:
        async with refused_again_and_again(cluster):
            pass
    notes = [line["note"] for line in logs if line["event"] == "selector problem"]
    assert len(notes) == 1, notes
    assert "exceeded quota" in notes[0]
