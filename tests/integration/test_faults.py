"""The controller under a hostile API server: 500s, 429s, dropped watches, compaction.

While faults are on, pods churn; the controller must converge to exactly the right slices
(no duplicate, no missing endpoint) and, once the faults stop, make no further write.

On a real cluster the server cannot be made to answer 500 or 429 or to compact, so the faults
are on the wire instead: the controller talks through ``WireProxy``, which resets all its
connections (watches and requests in flight) every half second, and stalls them now and then.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from slicectl.kube.errors import AlreadyExists, ServerError
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    SliceWrites,
    create_pod,
    ensure_node,
    options,
    pod_body,
    pod_status,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_until,
)
from tests.integration.wire import WireProxy

T = TypeVar("T")


async def retried(op: Callable[[], Awaitable[T]]) -> T:
    """The test's own calls retry injected 500s (the embedded server fails before acting)."""
    for _ in range(50):
        try:
            return await op()
        except ServerError:
            await asyncio.sleep(0.01)
    raise AssertionError("too many injected failures in a row")


@contextlib.asynccontextmanager
async def faults_on(c: Cluster, wire: WireProxy | None) -> AsyncIterator[None]:
    """The embedded server's 500s, 429s and watch drops; or, on a real cluster, wire resets."""
    if wire is None:
        assert c.server is not None
        faults = c.server.faults
        faults.error_rate, faults.throttle_rate, faults.drop_watches_every = 0.2, 0.1, 1.0
        try:
            yield
        finally:
            faults.error_rate = faults.throttle_rate = faults.drop_watches_every = 0.0
        return

    cuts = 0

    async def cut() -> None:
        nonlocal cuts
        for n in itertools.count():
            await asyncio.sleep(0.5)
            if n % 4 == 3:
                wire.stall(new_too=True)
                await asyncio.sleep(0.3)
                wire.restore()
            cuts += wire.drop()

    task = asyncio.create_task(cut())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        wire.restore()
    assert cuts > 0, "the controller's connections were never cut"


async def test_converges_exactly_under_errors_throttling_and_dropped_watches(
    cluster: Cluster, wire: WireProxy | None, tmp_path: Path,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(120):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.9.{i // 200}.{i % 200 + 1}",
                         {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    # The test's own watch goes around the wire faults; the embedded server's drops would cut it,
    # so there the server's own request count is used.
    writes = SliceWrites(c.client, c.namespace)
    await writes.start()

    def slice_writes() -> int:
        if c.server is None:
            return writes.total
        return sum(c.server.request_counts(verb=v, resource="endpointslices")
                   for v in ("POST", "PUT", "PATCH", "DELETE"))

    kubeconfig = wire.kubeconfig(c.kubeconfig, tmp_path / "wire.yaml") if wire else c.kubeconfig
    async with running_controller(options(kubeconfig, c.namespace, batch_period=0.05)):
        async def all_listed() -> bool:
            return sum(len(s["endpoints"]) for s in
                       await slices_of(c.client, c.namespace, "web")) == 120

        await wait_until(all_listed, what="initial convergence")
        async with faults_on(c, wire):
            for i in range(0, 40, 2):
                await retried(functools.partial(set_ready, c.client, c.namespace, f"web-{i}",
                                                False))
            for i in range(100, 120):
                await retried(functools.partial(c.client.delete, PODS, f"web-{i}", c.namespace,
                                                grace_period_seconds=0))
            if c.server is not None:
                c.server.faults.compact()  # every watch must relist from here on
            for i in range(200, 215):
                name = f"web-{i}"
                with contextlib.suppress(AlreadyExists):  # a retried create that had landed
                    await retried(functools.partial(
                        c.client.create, PODS, pod_body(name, {"app": "web"}), c.namespace))
                await retried(functools.partial(
                    c.client.patch, PODS, name, pod_status(f"10.9.9.{i - 199}"), c.namespace,
                    subresource="status"))
            await asyncio.sleep(2.0)  # let the controller work through the faults

        want = {f"web-{i}": i % 2 == 1 or i >= 40 for i in [*range(100), *range(200, 215)]}

        async def exact() -> bool:
            eps = [ep for s in await slices_of(c.client, c.namespace, "web")
                   for ep in s["endpoints"]]
            got = {ep["targetRef"]["name"]: ep["conditions"]["ready"] for ep in eps}
            return len(eps) == len(got) and got == want

        await wait_until(exact, limit=60.0, what="exact slices after the faults")
        await asyncio.sleep(1.0)
        settled = slice_writes()
        await asyncio.sleep(1.5)
        assert slice_writes() == settled, "no write once everything is right"
        print(f"\nconverged under faults; {settled} slice write attempts in all")
    await writes.stop()
