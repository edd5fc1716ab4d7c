"""/readyz of ``slicectl run``: ready after the first full sync, even with nothing to sync."""

from __future__ import annotations

import dataclasses

import aiohttp

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


async def _readyz(port: int) -> int:
    async with aiohttp.ClientSession() as http, http.get(
        f"http://127.0.0.1:{port}/readyz"
    ) as resp:
        return resp.status


async def test_ready_with_no_selectors_at_all(cluster: Cluster) -> None:
    opts = dataclasses.replace(options(cluster.kubeconfig, cluster.namespace),
                               health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = health_port(run)

        async def ready() -> bool:
            return await _readyz(port) == 200

        await wait_until(ready, what="/readyz 200 with zero selectors")


async def test_ready_only_after_the_first_sync_wrote_the_slices(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.8.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = health_port(run)

        async def ready() -> bool:
            return await _readyz(port) == 200

        await wait_until(ready, what="/readyz 200")
        slices = await slices_of(c.client, c.namespace, "web")
        assert sum(len(s["endpoints"]) for s in slices) == 1, "ready before the first sync"


def health_port(run: Running) -> int:
    port = run.health.health_port
    assert port is not None, "the health server is bound"
    return port
