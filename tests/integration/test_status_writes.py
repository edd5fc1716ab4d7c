"""The status write budget (SPEC section 1), through the running controller.

A status write is an API write: it is made when the Ready condition or ``observedGeneration``
changes, and a change of the counts alone is written at most once per
``--status-update-period``. Status writes are counted where the controller sends them, at its
client (ClientFaults: PATCHes of the status subresource that the server answered), so these
tests run on a real cluster too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from slicectl.controller.routing import selector_key
from slicectl.model.apis import SLICECTL
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    Running,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)

WEB = {"app": "web"}
PERIOD = 60.0  # --status-update-period: no count-only write is due within a test


@dataclass
class StatusWrites:
    answered: int = 0  # PATCHes of a selector's status that the server answered
    latency: float = 0.0  # seconds each one is held before it is sent


@pytest.fixture
def status_writes(monkeypatch: pytest.MonkeyPatch) -> StatusWrites:
    """The status writes of every client in the test process (the controller's)."""
    writes = StatusWrites()
    faults = ClientFaults(monkeypatch)

    def is_status_write(method: str, path: str) -> bool:
        return method == "PATCH" and "/endpointselectors/" in path and path.endswith("/status")

    async def hold(method: str, path: str) -> None:
        if is_status_write(method, path) and writes.latency:
            await asyncio.sleep(writes.latency)

    async def count(method: str, path: str) -> None:
        if is_status_write(method, path):
            writes.answered += 1

    faults.before.append(hold)
    faults.after.append(count)
    return writes


async def status(c: Cluster) -> dict[str, Any]:
    status: dict[str, Any] = (await c.client.get(ESEL, "web", c.namespace)).get("status", {})
    return status


async def written(c: Cluster, running: Running, generation: int) -> bool:
    """The status of ``generation`` is on the server and its write was answered, so counted."""
    key = selector_key(SLICECTL, c.namespace, "web")
    return (not running.controller.status.pending(key)
            and (await status(c)).get("observedGeneration") == generation)


async def endpoints(c: Cluster) -> int:
    return sum(len(s.get("endpoints") or []) for s in await slices_of(c.client, c.namespace,
                                                                      "web"))


async def test_a_status_write_in_flight_is_not_written_again_by_the_next_sync(
    cluster: Cluster, status_writes: StatusWrites,
) -> None:
    """A sync that comes while the previous sync's status write is still on its way must judge
    against that write, not against the cache (which cannot show it yet): the condition is
    the same, so the new counts wait for the period instead of a second write at once."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(2):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.0.0.{i + 1}", WEB)
    await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace,
                                          status_update_period=PERIOD)) as running:
        await wait_until(lambda: written(c, running, 1), what="the status of generation 1")
        before = status_writes.answered
        status_writes.latency = 1.0
        await c.client.patch(ESEL, "web", {"spec": {"ports": [{"targetPort": 8080}]}},
                             c.namespace, patch_type="merge")  # generation 2: written
        await create_pod(c.client, c.namespace, "web-2", "10.0.0.3", WEB)  # counts only

        async def published() -> bool:
            return await endpoints(c) == 3

        await wait_until(published, what="3 endpoints")
        await wait_until(lambda: written(c, running, 2), what="the status of generation 2")
        assert status_writes.answered - before == 1
        assert (await status(c))["endpoints"] == 2  # the count waits for its period


async def test_counts_alone_are_written_at_most_once_per_period(
    cluster: Cluster, status_writes: StatusWrites,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.0.0.1", WEB)
    await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace,
                                          status_update_period=PERIOD)) as running:
        await wait_until(lambda: written(c, running, 1), what="the status of generation 1")
        assert (await status(c))["endpoints"] == 1
        before = status_writes.answered
        assert before >= 1, "the status of generation 1 was written, so counted"
        for i in range(1, 4):
            await create_pod(c.client, c.namespace, f"web-{i}", f"10.0.0.{i + 1}", WEB)

            async def published(n: int = i + 1) -> bool:
                return await endpoints(c) == n

            await wait_until(published, what=f"{i + 1} endpoints")
        assert status_writes.answered == before
        assert (await status(c))["endpoints"] == 1
