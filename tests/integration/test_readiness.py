"""/readyz of ``slicectl run``: ready after the first full sync, even with nothing to sync."""

from __future__ import annotations

import dataclasses
import re

import pytest
import structlog

from slicectl.kube.errors import ServerError
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    local_get,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)

DISCOVERY = re.compile(r"/api/v1|/apis/[^/]+/[^/]+")  # a group version's APIResourceList


async def test_ready_with_no_selectors_at_all(cluster: Cluster) -> None:
    opts = dataclasses.replace(options(cluster.kubeconfig, cluster.namespace),
                               health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = run.health.health_port

        async def ready() -> bool:
            return (await local_get(port, "/readyz"))[0] == 200

        await wait_until(ready, what="/readyz 200 with zero selectors")


async def test_ready_only_after_the_first_sync_wrote_the_slices(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.8.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = run.health.health_port

        async def ready() -> bool:
            return (await local_get(port, "/readyz"))[0] == 200

        await wait_until(ready, what="/readyz 200")
        slices = await slices_of(c.client, c.namespace, "web")
        assert sum(len(s["endpoints"]) for s in slices) == 1, "ready before the first sync"


async def test_not_ready_while_the_selector_api_could_not_be_looked_up(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed look-up (a 5xx, no answer: the API server down at start) says nothing about
    whether the selector API is served. It let the caches count as synced without the
    selectors, so /readyz said ready, and 'initial sync done' came, before any selector was
    listed, let alone synced; only an API found unserved may leave them behind."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.8.1.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    discovery_fails = [True]

    async def discovery_503(method: str, path: str) -> None:
        if discovery_fails[0] and method == "GET" and DISCOVERY.fullmatch(path):
            raise ServerError(503, "ServiceUnavailable", "injected: discovery failed")

    ClientFaults(monkeypatch).before.append(discovery_503)
    opts = options(c.kubeconfig, c.namespace)
    opts = dataclasses.replace(
        opts, controller=dataclasses.replace(opts.controller, api_retry_period=0.2))
    with structlog.testing.capture_logs() as logs:
        async with running_controller(opts) as run:
            controller = run.controller

            async def others_listed_and_looked_up_twice() -> bool:
                failed = [e for e in logs if e["event"] == "selector API look-up failed; retrying"]
                return len(failed) >= 2 and all(
                    inf.synced.is_set() for inf in controller._informers)

            await wait_until(others_listed_and_looked_up_twice,
                             what="pods, nodes, slices listed; two failed look-ups")
            assert not controller.caches_synced.is_set()
            assert not run.health.ready
            discovery_fails[0] = False

            async def ready() -> bool:
                return run.health.ready

            await wait_until(ready, what="ready once the selector API is looked up")
            slices = await slices_of(c.client, c.namespace, "web")
            assert sum(len(s["endpoints"]) for s in slices) == 1, "ready before the first sync"
