"""The controller under a hostile API server: 500s, 429s, dropped watches, compaction.

While faults are on, pods churn; the controller must converge to exactly the right slices
(no duplicate, no missing endpoint) and, once the faults stop, make no further write.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from slicectl.kube.errors import AlreadyExists, ServerError
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
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

pytestmark = pytest.mark.embedded_only(
    reason="fault injection: 500s, 429s, latency, dropped watches and compaction")
T = TypeVar("T")


async def retried(op: Callable[[], Awaitable[T]]) -> T:
    """The test's own calls retry injected 500s (the embedded server fails before acting)."""
    for _ in range(50):
        try:
            return await op()
        except ServerError:
            await asyncio.sleep(0.01)
    raise AssertionError("too many injected failures in a row")


async def test_converges_exactly_under_errors_throttling_and_dropped_watches(
    cluster: Cluster,
) -> None:
    c = cluster
    assert c.server is not None
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(120):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.9.{i // 200}.{i % 200 + 1}",
                         {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

    def slice_writes() -> int:  # the server's own count: a watch would be cut by the faults
        assert c.server is not None
        return sum(c.server.request_counts(verb=v, resource="endpointslices")
                   for v in ("POST", "PUT", "PATCH", "DELETE"))

    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.05)):
        async def all_listed() -> bool:
            return sum(len(s["endpoints"]) for s in
                       await slices_of(c.client, c.namespace, "web")) == 120

        await wait_until(all_listed, what="initial convergence")
        faults = c.server.faults
        faults.error_rate, faults.throttle_rate, faults.drop_watches_every = 0.2, 0.1, 1.0
        try:
            for i in range(0, 40, 2):
                await retried(lambda i=i: set_ready(c.client, c.namespace, f"web-{i}", False))
            for i in range(100, 120):
                await retried(lambda i=i: c.client.delete(PODS, f"web-{i}", c.namespace,
                                                          grace_period_seconds=0))
            c.server.faults.compact()  # every watch must relist from here on
            for i in range(200, 215):
                name = f"web-{i}"
                with contextlib.suppress(AlreadyExists):  # a retried create that had landed
                    await retried(lambda name=name: c.client.create(
                        PODS, pod_body(name, {"app": "web"}), c.namespace))
                await retried(lambda name=name, i=i: c.client.patch(
                    PODS, name, pod_status(f"10.9.9.{i - 199}"), c.namespace,
                    subresource="status"))
            await asyncio.sleep(2.0)  # let the controller work through the faults
        finally:
            faults.error_rate = faults.throttle_rate = faults.drop_watches_every = 0.0

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
