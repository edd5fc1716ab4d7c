"""Issue 8, item 2: /readyz must not wait for an idle queue.

Under steady pod churn the queue is never idle, yet a replica is ready as soon as its caches
synced and every selector known at start was synced once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

from slicectl.kube.errors import ApiError
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    local_get,
    options,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_until,
)

SELECTORS = 8
PODS_EACH = 3


async def test_ready_under_steady_churn(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for s in range(SELECTORS):
        for i in range(PODS_EACH):
            await create_pod(c.client, c.namespace, f"p{s}-{i}", f"10.40.{s}.{i + 1}",
                             {"group": f"g{s}"})
        await c.client.create(ESEL, selector_body(f"sel-{s}", {"group": f"g{s}"}), c.namespace)

    stop = asyncio.Event()
    flips = [0]

    async def churn() -> None:  # every selector sees a change at least every batch period
        ready = False
        while not stop.is_set():
            for s in range(SELECTORS):
                with contextlib.suppress(ApiError):
                    await set_ready(c.client, c.namespace, f"p{s}-0", ready)
                flips[0] += 1
            ready = not ready

    # A batch period longer than the churn's cycle keeps a key of every selector pending.
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace, batch_period=1.0),
                               health_probe_bind_address="127.0.0.1:0")
    churner = asyncio.create_task(churn())
    try:
        async with running_controller(opts) as run:
            port = run.health.health_port

            async def ready() -> bool:
                return (await local_get(port, "/readyz"))[0] == 200

            await wait_until(ready, limit=60.0, what="/readyz 200 while pods churn")
            assert not churner.done(), "the churn was still going when the replica got ready"
            for s in range(SELECTORS):  # every selector was synced once before ready
                assert await slices_of(c.client, c.namespace, f"sel-{s}"), f"sel-{s} not synced"
            stop.set()
            await churner
    finally:
        stop.set()
        await asyncio.gather(churner, return_exceptions=True)
