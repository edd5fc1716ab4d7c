"""Restart safety: SIGKILL mid-sync, start again, converge without duplicates or rewrites.

The controller runs as a real ``slicectl run`` process. A ResourceQuota on EndpointSlices
holds the big selector's sync after its first two creates (the later ones are refused until the
quota is raised), so on either server the kill lands mid-sync, with two of six slices written.
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
from tests.integration.test_quota import limit_slices, warnings

PORTS = [{"name": "http", "targetPort": 8080}]


@contextlib.asynccontextmanager
async def slicectl_process(c: Cluster) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "slicectl", "run", "--kubeconfig", c.kubeconfig,
        "--namespace", c.namespace, "--metrics-bind-address=0",
        "--health-probe-bind-address=0", "--kube-api-qps=1000", "--kube-api-burst=1000",
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

    async with slicectl_process(c) as first:
        async def small_done() -> bool:
            return sum(len(s["endpoints"]) for s in
                       await slices_of(c.client, c.namespace, "small")) == 30

        await wait_until(small_done, what="first selector converged")
        await writes.quiet()
        small_before = {s["metadata"]["name"]: s["metadata"]["resourceVersion"]
                        for s in await slices_of(c.client, c.namespace, "small")}
        await asyncio.gather(*(pod("big", i) for i in range(600)))
        await limit_slices(c, len(small_before) + 2)  # big's third create is refused
        await c.client.create(ESEL, selector_body("big", {"app": "big"}, ports=PORTS),
                              c.namespace)

        async def refused_mid_sync() -> bool:
            return any("exceeded quota" in e["note"] for e in await warnings(c, "big"))

        await wait_until(refused_mid_sync, what="big's sync held by the quota")
        first.send_signal(signal.SIGKILL)
        await first.wait()

    await writes.quiet(0.3)
    partial = {s["metadata"]["name"]: s["metadata"]["resourceVersion"]
               for s in await slices_of(c.client, c.namespace, "big")}
    print(f"\nkilled after {len(partial)} of 6 slices of the big selector were created")
    assert len(partial) == 2, "killed mid-sync: the quota let two creates through"
    await limit_slices(c, 100)
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


async def test_writes_after_a_restart_are_dated_only_by_changes_with_a_time(
    cluster: Cluster,
) -> None:
    """The write that published a pod is dated by its Ready transition; after a restart that
    pod still carries it, and so does every pod the new process lists: neither is a change.
    A pod deleted while no slicectl ran has no time of its own, so the write that removes it
    carries none, as upstream's write for a change with no trigger time: not the Ready times of
    the pods it keeps (which would report the whole downtime as network-programming latency),
    nor the moment the restarted process saw it (the controller's clock, not the change's)."""
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
    await c.client.delete(PODS, "dated-0", c.namespace, grace_period_seconds=0)
    async with slicectl_process(c):
        await wait_until(lambda: endpoints(2), what="restarted process removed the pod")
    (only,) = await slices_of(c.client, c.namespace, "dated")
    stamped = (only["metadata"].get("annotations") or {}).get(ANNOTATION_TRIGGER_TIME)
    assert stamped is None, f"the removal is dated {stamped}, it has no time of its own"
