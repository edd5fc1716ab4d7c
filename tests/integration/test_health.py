"""The health and metrics listeners over real HTTP: /healthz, /readyz transitions, /metrics."""

from __future__ import annotations

import asyncio
import time

import pytest

from slicectl.obs.health import HealthServer, parse_bind_address
from slicectl.obs.metrics import Metrics
from tests.integration.support import local_get


def test_parse_bind_address() -> None:
    assert parse_bind_address(":8080") == (None, 8080)
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind_address("[::1]:9090") == ("::1", 9090)
    assert parse_bind_address("0") is None
    assert parse_bind_address("") is None
    for bad in ("8080", "host:", "host:http", ":70000"):
        with pytest.raises(ValueError):
            parse_bind_address(bad)


async def test_readyz_healthz_and_metrics_over_http() -> None:
    metrics = Metrics()
    server = HealthServer(
        metrics, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0")
    watches_ok = [True]
    server.add_liveness_check(
        "watches", lambda: (watches_ok[0], "" if watches_ok[0] else "pods watch stalled"))
    await server.start()
    try:
        assert server.metrics_port and server.health_port
        assert server.metrics_port != server.health_port

        status, body = await local_get(server.health_port, "/readyz")
        assert status == 500 and "[-]initial-sync" in body
        server.set_ready()
        status, body = await local_get(server.health_port, "/readyz")
        assert status == 200 and "readyz check passed" in body

        status, body = await local_get(server.health_port, "/healthz")
        assert status == 200 and "[+]watches ok" in body and "[+]event-loop ok" in body
        watches_ok[0] = False
        status, body = await local_get(server.health_port, "/healthz")
        assert status == 500 and "[-]watches failed: pods watch stalled" in body

        metrics.set_leader(True)
        status, body = await local_get(server.metrics_port, "/metrics")
        assert status == 200
        assert "slicectl_leader 1.0" in body
        assert "endpoint_slice_controller_syncs_total" in body
        # /metrics is only on the metrics listener, probes only on the health listener.
        assert (await local_get(server.health_port, "/metrics"))[0] == 404
        assert (await local_get(server.metrics_port, "/healthz"))[0] == 404
    finally:
        await server.stop()


async def test_blocked_event_loop_fails_liveness() -> None:
    server = HealthServer(
        None, health_probe_bind_address="127.0.0.1:0",
        loop_lag_threshold=1.0, loop_probe_interval=0.05, loop_lag_window=60.0)
    await server.start()
    try:
        assert server.metrics_port is None  # no Metrics: no metrics listener
        status, _ = await local_get(server.health_port, "/healthz")
        assert status == 200
        time.sleep(2.0)  # block the loop on purpose  # noqa: ASYNC251
        await asyncio.sleep(0.1)  # let the probe task observe the lag
        status, body = await local_get(server.health_port, "/healthz")
        assert status == 500 and "[-]event-loop failed: event loop blocked" in body
    finally:
        await server.stop()


async def test_shared_address_serves_everything_on_one_port() -> None:
    # A fixed port is needed for sharing; pick a free one first.
    probe = HealthServer(None, health_probe_bind_address="127.0.0.1:0")
    await probe.start()
    port = probe.health_port
    await probe.stop()
    server = HealthServer(
        Metrics(), metrics_bind_address=f"127.0.0.1:{port}",
        health_probe_bind_address=f"127.0.0.1:{port}")
    await server.start()
    try:
        assert server.metrics_port == server.health_port == port
        assert (await local_get(port, "/metrics"))[0] == 200
        assert (await local_get(port, "/healthz"))[0] == 200
    finally:
        await server.stop()


async def test_a_connection_that_never_finishes_its_request_is_closed() -> None:
    """Any pod in the cluster reaches these ports. A client that opens connections and never
    completes a request (slowloris), or never sends one, must not hold them for good: each
    costs a file descriptor and ~5 KB, enough to exhaust the process. kube-apiserver's and
    controller-runtime's servers close them (ReadHeaderTimeout 32 s, IdleTimeout 90 s)."""
    assert HealthServer.IDLE_TIMEOUT <= 90.0
    server = HealthServer(Metrics(), metrics_bind_address="127.0.0.1:0",
                          health_probe_bind_address="127.0.0.1:0", idle_timeout=0.5)
    await server.start()
    try:
        for port in (server.health_port, server.metrics_port):
            silent = await asyncio.open_connection("127.0.0.1", port)
            slow = await asyncio.open_connection("127.0.0.1", port)
            slow[1].write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            await slow[1].drain()
            for reader, writer in (silent, slow):
                assert await asyncio.wait_for(reader.read(), timeout=30) == b""  # EOF: closed
                writer.close()
        status, _ = await local_get(server.health_port, "/healthz")  # still serving
        assert status == 200
    finally:
        await server.stop()
