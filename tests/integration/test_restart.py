"""Restart safety: SIGKILL mid-sync, start again, converge without duplicates or rewrites.

The controller runs as a real ``slicectl run`` process. On the embedded server every request
gets 150 ms of injected latency, and the first process may send 5 requests a second (a sync's
creates go out together, paced only by the rate limiter), so the kill lands between two slice
creates; on a real cluster the kill lands wherever it lands and the same assertions hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator

from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    SliceWrites,
    create_pod,
    ensure_node,
    selector_body,
    slices_of,
    wait_until,
)

PORTS = [{"name": "http", "targetPort": 8080}]


@contextlib.asynccontextmanager
async def slicectl_process(
    c: Cluster, qps: int = 1000, burst: int = 1000
) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "slicectl", "run", "--kubeconfig", c.kubeconfig,
        "--namespace", c.namespace, "--metrics-bind-address=0",
        "--health-probe-bind-address=0", f"--kube-api-qps={qps}", f"--kube-api-burst={burst}",
        "--batch-period=0s", "--log-format=json",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def test_sigkill_mid_sync_then_restart_converges_without_duplicates(
    cluster: Cluster,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    sem = asyncio.Semaphore(32)

    async def pod(app: str, i: int) -> None:
        async with sem:
            await create_pod(c.client, c.namespace, f"{app}-{i}", f"10.{2 if app == 'big' else 3}"
                             f".{i // 250}.{i % 250 + 1}", {"app": app}, node="node-a")

    await asyncio.gather(*(pod("small", i) for i in range(30)))
    await c.client.create(ESEL, selector_body("small", {"app": "small"}, ports=PORTS),
                          c.namespace)
    writes = SliceWrites(c.client, c.namespace)
    await writes.start()

    async with slicectl_process(c, qps=5, burst=1) as first:
        async def small_done() -> bool:
            return sum(len(s["endpoints"]) for s in
                       await slices_of(c.client, c.namespace, "small")) == 30

        await wait_until(small_done, what="first selector converged")
        await writes.quiet()
        small_before = {s["metadata"]["name"]: s["metadata"]["resourceVersion"]
                        for s in await slices_of(c.client, c.namespace, "small")}
        await asyncio.gather(*(pod("big", i) for i in range(600)))
        if c.server is not None:
            c.server.faults.latency_ms = 150  # slow writes so the kill lands mid-sync
        created_before_kill = writes.counts["ADDED"]
        await c.client.create(ESEL, selector_body("big", {"app": "big"}, ports=PORTS),
                              c.namespace)

        async def some_big_slices() -> bool:
            return writes.counts["ADDED"] >= created_before_kill + 2

        await wait_until(some_big_slices, what="first big slices")
        first.send_signal(signal.SIGKILL)
        await first.wait()

    if c.server is not None:
        c.server.faults.latency_ms = 0
    await writes.quiet(0.3)
    partial = {s["metadata"]["name"]: s["metadata"]["resourceVersion"]
               for s in await slices_of(c.client, c.namespace, "big")}
    print(f"\nkilled after {len(partial)} of 6 slices of the big selector were created")
    assert 0 < len(partial) < 6 or c.server is None
    before_restart = writes.total

    async with slicectl_process(c):
        async def big_done() -> bool:
            return sum(len(s["endpoints"]) for s in
                       await slices_of(c.client, c.namespace, "big")) == 600

        await wait_until(big_done, what="big selector converged after restart")
        await writes.quiet()

    big = await slices_of(c.client, c.namespace, "big")
    names = [ep["targetRef"]["name"] for s in big for ep in s["endpoints"]]
    assert len(names) == len(set(names)) == 600, "no endpoint listed twice"
    assert len(big) == 6 and all(len(s["endpoints"]) == 100 for s in big)
    small_after = {s["metadata"]["name"]: s["metadata"]["resourceVersion"]
                   for s in await slices_of(c.client, c.namespace, "small")}
    assert small_after == small_before, "slices that were right were not rewritten"
    for s in big:
        name = s["metadata"]["name"]
        if name in partial:
            assert s["metadata"]["resourceVersion"] == partial[name], f"{name} was rewritten"
    print(f"restart: {writes.total - before_restart} slice writes "
          f"(expected {6 - len(partial)} creates), small selector untouched")
    assert writes.total - before_restart == 6 - len(partial)
    await writes.stop()
