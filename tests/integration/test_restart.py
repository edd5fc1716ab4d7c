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
import time
from collections.abc import AsyncIterator

from slicectl.kube.resources import PODS
from slicectl.model.records import ANNOTATION_TRIGGER_TIME
from slicectl.model.timefmt import parse_rfc3339
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    SliceWrites,
    create_pod,
    ensure_node,
    pod_body,
    pod_status,
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


async def test_the_first_write_after_a_restart_is_dated_by_what_changed_while_down(
    cluster: Cluster,
) -> None:
    """The write that published a pod is dated by its Ready transition; after a restart that
    pod still carries it, and so does every pod the new process lists: neither is a change.
    A pod deleted while no slicectl ran has no time of its own, so the write that removes it
    is dated when the restarted process saw it, not by the Ready times of the pods it keeps
    (which would report the whole downtime as network-programming latency)."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await c.client.create(ESEL, selector_body("dated", {"app": "dated"}, ports=PORTS),
                          c.namespace)

    async def endpoints(n: int) -> bool:
        return sum(len(s["endpoints"]) for s in
                   await slices_of(c.client, c.namespace, "dated")) == n

    async with slicectl_process(c):
        async def placeholder() -> bool:
            return len(await slices_of(c.client, c.namespace, "dated")) == 1

        await wait_until(placeholder, what="the selector's placeholder slice")
        ready_since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for i in range(3):
            await c.client.create(PODS, pod_body(f"dated-{i}", {"app": "dated"},
                                                 node="node-a"), c.namespace)
            status = pod_status(f"10.4.0.{i + 1}")
            status["status"]["conditions"][0]["lastTransitionTime"] = ready_since  # kubelet's
            await c.client.patch(PODS, f"dated-{i}", status, c.namespace, subresource="status")
        await wait_until(lambda: endpoints(3), what="first process published three pods")
    (first,) = await slices_of(c.client, c.namespace, "dated")
    assert (parse_rfc3339(first["metadata"]["annotations"][ANNOTATION_TRIGGER_TIME])
            == parse_rfc3339(ready_since)), "a write is dated by the Ready transition it carries"
    await asyncio.sleep(2.0)  # so that "when seen" and the Ready time are seconds apart
    deleted_at = time.time()
    await c.client.delete(PODS, "dated-0", c.namespace, grace_period_seconds=0)
    async with slicectl_process(c):
        await wait_until(lambda: endpoints(2), what="restarted process removed the pod")
    (only,) = await slices_of(c.client, c.namespace, "dated")
    stamped = parse_rfc3339(only["metadata"]["annotations"][ANNOTATION_TRIGGER_TIME])
    assert stamped is not None and stamped >= deleted_at - 0.5, (
        f"the removal is dated {deleted_at - (stamped or 0):.1f} s before the pod was deleted")
