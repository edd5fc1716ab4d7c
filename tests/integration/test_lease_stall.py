"""Lease requests alone stall past the renew deadline while pods keep churning (issue 8, item 1
end to end, with the real elector): the replica steps down without spinning, keeps answering
/healthz, and leads and converges again once Lease requests flow."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import aiohttp
import pytest

import slicectl.controller.sync as sync_module
from slicectl import reconcile
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_until,
)


async def test_lease_stall_parks_the_replica_and_it_recovers(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(4):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.95.0.{i + 1}", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    plans = [0]
    real_plan = reconcile.plan

    def counted_plan(*args: Any, **kw: Any) -> Any:
        plans[0] += 1
        return real_plan(*args, **kw)

    monkeypatch.setattr(sync_module, "plan", counted_plan)
    faults = ClientFaults(monkeypatch)
    lease_flow = asyncio.Event()
    lease_flow.set()

    async def stall_leases(method: str, path: str) -> None:
        if "/leases" in path:
            await lease_flow.wait()

    faults.before.append(stall_leases)
    opts = dataclasses.replace(
        options(c.kubeconfig, c.namespace, leader_elect=True, lease_duration=2.0,
                renew_deadline=1.5, retry_period=0.25, lease_namespace=c.namespace,
                lease_name="slicectl-stall", batch_period=0.0),
        health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = run.health.health_port
        assert port is not None

        async def endpoints() -> dict[str, bool]:
            return {ep["targetRef"]["name"]: ep["conditions"]["ready"]
                    for s in await slices_of(c.client, c.namespace, "web")
                    for ep in s["endpoints"]}

        async def initial() -> bool:
            return len(await endpoints()) == 4

        await wait_until(initial, what="initial sync as leader")
        lease_flow.clear()  # etcd is slow for Lease writes only
        before = plans[0]
        deadline = time.monotonic() + 4.0  # past the renew deadline
        ready = False
        async with aiohttp.ClientSession() as http:
            while time.monotonic() < deadline:
                await set_ready(c.client, c.namespace, "web-0", ready)
                ready = not ready
                async with asyncio.timeout(5), http.get(
                        f"http://127.0.0.1:{port}/healthz") as resp:
                    assert resp.status == 200, await resp.text()
                await asyncio.sleep(0.05)
        stalled_plans = plans[0] - before
        print(f"\nplan() calls while the Lease was stuck for 4 s: {stalled_plans}")
        assert not run.controller.gate.may_write(), "stepped down while the Lease was stuck"
        # A spin runs plan() thousands of times; a few syncs before the deadline are fine.
        assert stalled_plans < 200, f"plan() ran {stalled_plans} times in 4 s"
        lease_flow.set()
        await set_ready(c.client, c.namespace, "web-0", True)

        async def recovered() -> bool:
            return await endpoints() == {f"web-{i}": True for i in range(4)}

        await wait_until(recovered, what="leads and converges again")
