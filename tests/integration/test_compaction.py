"""Fragmentation is repaired: once a selector has been quiet, slicectl compacts its slices back
to the ideal count, spending at most COMPACTION_WRITES extra writes."""

from __future__ import annotations

import asyncio

from slicectl.controller.sync import COMPACTION_WRITES
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.support import (
    SliceWrites,
    options,
    running_controller,
    slices_of,
    wait_until,
)
from tests.integration.test_controller import converge_web, endpoint_total, setup_web


async def test_fragmented_selector_is_compacted_once_quiet(cluster: Cluster) -> None:
    c = cluster
    await setup_web(c)  # 250 pods: slices of 100, 100 and 50 (oldest first, in name order)
    writes = SliceWrites(c.client, c.namespace)
    await writes.start()
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.05)):
        await converge_web(c, writes)
        left = 250
        # 60 pods leave the first full slice, then 60 the second: 40 + 40 + 50, ideal 2 slices.
        for doomed in (range(0, 60), range(100, 160)):
            await asyncio.gather(*(c.client.delete(PODS, f"web-{i}", c.namespace,
                                                   grace_period_seconds=0) for i in doomed))
            left -= len(doomed)

            async def published(n: int = left) -> bool:
                return await endpoint_total(c) == n

            await wait_until(published, what=f"{left} endpoints")
        fragmented = writes.total

        async def compacted() -> bool:
            return len(await slices_of(c.client, c.namespace, "web")) == 2

        await wait_until(compacted, what="2 slices for 130 endpoints")
        await writes.quiet()
        names = sorted(ep["targetRef"]["name"] for s in await slices_of(c.client, c.namespace,
                                                                        "web")
                       for ep in s["endpoints"])
        assert names == sorted(f"web-{i}" for i in [*range(60, 100), *range(160, 250)])
        assert writes.total - fragmented <= COMPACTION_WRITES
    await writes.stop()
