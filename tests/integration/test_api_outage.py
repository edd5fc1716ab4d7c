"""Issue 8, items 3 and 5: an API server that errors or is away must not end the process.

* The "is this selector API served" look-up tolerates 5xx and connection errors (it retries
  with backoff); only a 404 means "not served".
* Liveness means "this process is broken", never "the API server is unreachable": informers
  failing for a long time leave /healthz green, and an API server that is down when the
  process starts is waited for instead of exiting.
* /healthz answers while every API request hangs (it never waits on the API server), and
  /metrics carries the event loop lag histogram.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import aiohttp
import orjson
import pytest

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

DISCOVERY = "/apis/slicectl.io/v1alpha1"


async def _setup(c: Cluster) -> None:
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.50.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)


async def _served(c: Cluster) -> bool:
    slices = await slices_of(c.client, c.namespace, "web")
    return sum(len(s["endpoints"]) for s in slices) == 1


@pytest.mark.parametrize("fault", ["503", "connection reset", "non-JSON 200"])
async def test_selector_api_lookup_survives_server_errors(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    c = cluster
    await _setup(c)
    faults = ClientFaults(monkeypatch)
    failures = [0]

    async def flaky_discovery(method: str, path: str) -> None:
        if path == DISCOVERY and failures[0] < 3:
            failures[0] += 1
            if fault == "503":
                raise ServerError(503, "ServiceUnavailable", "injected")
            if fault == "non-JSON 200":
                orjson.loads(b"<html>gateway</html>")  # what a 200 from a broken proxy does
            raise aiohttp.ClientConnectionError("injected: connection reset by peer")

    faults.before.append(flaky_discovery)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await wait_until(lambda: _served(c), what="selector served after discovery errors")
    assert failures[0] == 3


async def test_unreachable_api_server_at_start_is_waited_for(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await _setup(c)
    faults = ClientFaults(monkeypatch)
    faults.down = True
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = run.health.health_port
        assert port is not None
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # the process stays up and alive while it waits
            status, body = await local_get(port, "/healthz")
            assert status == 200, body
            await asyncio.sleep(0.2)
        faults.down = False
        await wait_until(lambda: _served(c), what="served once the API server is back")


async def test_failing_watches_do_not_fail_liveness(cluster: Cluster) -> None:
    c = cluster
    await _setup(c)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               health_probe_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = run.health.health_port
        assert port is not None
        await wait_until(lambda: _served(c), what="initial sync")
        # What a long API server outage does to the informers' counters.
        for informer in run.controller._informers:
            informer.stats.consecutive_failures = 100
        status, body = await local_get(port, "/healthz")
        assert status == 200, f"an unreachable API server is not a broken process:\n{body}"


async def test_healthz_answers_while_every_api_request_hangs(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await _setup(c)
    faults = ClientFaults(monkeypatch)
    opts = dataclasses.replace(options(c.kubeconfig, c.namespace),
                               health_probe_bind_address="127.0.0.1:0",
                               metrics_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        port = run.health.health_port
        assert port is not None
        await wait_until(lambda: _served(c), what="initial sync")
        hang = asyncio.Event()

        async def hang_everything(method: str, path: str) -> None:
            await hang.wait()

        faults.before.append(hang_everything)
        try:
            for _ in range(5):
                status, _ = await asyncio.wait_for(local_get(port, "/healthz"), 5.0)
                assert status == 200
                await asyncio.sleep(0.2)
            metrics_port = run.health.metrics_port
            assert metrics_port is not None
            status, text = await local_get(metrics_port, "/metrics")
            assert status == 200
            assert "slicectl_event_loop_lag_seconds_bucket" in text
            assert "slicectl_event_loop_lag_seconds_count" in text
        finally:
            faults.before.clear()
            hang.set()
