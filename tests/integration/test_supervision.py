"""Issue 8, item 4: a background task that raises is never a Ready-but-dead replica.

The elector hit by a non-JSON 200 body, or a worker hit by an unexpected exception, must be
logged and recovered (restarted with backoff), so the replica goes on leading and writing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import orjson
import pytest

from slicectl.controller.sync import Syncer
from slicectl.obs.metrics import Metrics
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


async def _endpoints(c: Cluster) -> int:
    return sum(len(s["endpoints"]) for s in await slices_of(c.client, c.namespace, "web"))


async def _setup(c: Cluster) -> None:
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.60.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)


async def test_elector_recovers_from_a_non_json_lease_answer(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await _setup(c)
    faults = ClientFaults(monkeypatch)
    garbage = [0]

    async def non_json_lease(method: str, path: str) -> None:
        if "/leases/" in path and garbage[0] < 2:
            garbage[0] += 1
            orjson.loads(b"<html>proxy error</html>")  # what a 200 from a broken proxy does

    opts = options(c.kubeconfig, c.namespace, leader_elect=True, lease_duration=3.0,
                   renew_deadline=2.0, retry_period=0.25, lease_namespace=c.namespace,
                   lease_name="slicectl-sup")
    async with running_controller(opts):
        async def one() -> bool:
            return await _endpoints(c) == 1

        async def garbled() -> bool:
            return garbage[0] >= 1

        await wait_until(one, what="initial sync as leader")
        faults.after.append(non_json_lease)
        await wait_until(garbled, what="the lease answers were garbled")
        await create_pod(c.client, c.namespace, "web-1", "10.60.0.2", {"app": "web"})

        async def two() -> bool:
            return await _endpoints(c) == 2

        await wait_until(two, what="the replica leads and writes again after the garbage")


async def test_a_crashed_worker_is_restarted(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await _setup(c)
    crashes = [0]
    real = Metrics.observe_reconcile

    def crash_once(self: Metrics, *args: int) -> None:
        if crashes[0] == 0:
            crashes[0] += 1
            raise RuntimeError("injected bug in a worker")
        real(self, *args)

    monkeypatch.setattr(Metrics, "observe_reconcile", crash_once)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace, batch_period=0.0))
    async with running_controller(opts):
        async def one() -> bool:
            return await _endpoints(c) == 1

        await wait_until(one, what="initial sync")
        await create_pod(c.client, c.namespace, "web-1", "10.60.0.2", {"app": "web"})
        await create_pod(c.client, c.namespace, "web-2", "10.60.0.3", {"app": "web"})

        async def three() -> bool:
            return await _endpoints(c) == 3

        await wait_until(three, what="later changes are still synced after a worker crashed")
    assert crashes[0] == 1


async def test_a_worker_survives_a_cancellation_that_is_not_its_own(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CancelledError out of a sync that nobody asked for (a library's internal timeout
    gone wrong) ended the worker, and a TaskGroup takes a child that ends cancelled as
    nothing to report: the replica stayed ready with one worker fewer, none at all with
    ``concurrent_syncs`` 1, and never synced again. The worker now logs it and carries on."""
    c = cluster
    await _setup(c)
    strays = [0]
    real = Syncer.sync

    async def cancelled_once(self: Syncer, *args: Any, **kwargs: Any) -> Any:
        if strays[0] == 0:
            strays[0] += 1
            raise asyncio.CancelledError
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(Syncer, "sync", cancelled_once)
    opts = options(c.kubeconfig, c.namespace, batch_period=0.0)
    opts = dataclasses.replace(opts, controller=dataclasses.replace(opts.controller,
                                                                    concurrent_syncs=1))
    async with running_controller(opts):
        async def one() -> bool:
            return await _endpoints(c) == 1

        await wait_until(one, what="the selector synced by the one worker after the stray")
    assert strays[0] == 1
