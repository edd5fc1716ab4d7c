"""Fault injection, request accounting and the ``slicectl apiserver`` command."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time

import aiohttp

from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod, ssl_context


async def test_injected_errors_and_throttling(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.faults.error_rate = 1.0
    code, body, _ = await raw.request("GET", PODS)
    assert code == 500 and body["reason"] == "InternalError"
    srv.faults.error_rate = 0.0
    srv.faults.throttle_rate = 1.0
    code, body, headers = await raw.request("GET", PODS)
    # API Priority and Fairness's rejection, as a real v1.32.6 sent it: Go's http.Error text,
    # no Status (so a client finds no reason nor details.retryAfterSeconds), and Retry-After
    assert (code, body, headers["Content-Type"], headers["Retry-After"]) == (
        429, "Too many requests, please try again later.\n", "text/plain; charset=utf-8", "1")
    srv.faults.throttle_rate = 0.0
    srv.faults.latency_ms = 150
    start = time.monotonic()
    code, _, _ = await raw.request("GET", PODS)
    assert code == 200 and time.monotonic() - start >= 0.15
    code, _, _ = await raw.request("GET", "/healthz")
    assert code == 200


async def test_drop_watches_ends_stream(srv: EmbeddedApiServer, raw: Raw) -> None:
    task = asyncio.create_task(raw.watch_lines(PODS, 100, limit_s=10))
    await asyncio.sleep(0.3)
    assert srv.faults.drop_watches() == 1
    events = await asyncio.wait_for(task, 5)
    assert events == []


async def test_stalled_watch_sends_nothing_then_catches_up(srv: EmbeddedApiServer,
                                                           raw: Raw) -> None:
    received: list[tuple[float, str]] = []

    async def consume() -> None:
        async with raw.session.get(srv.url + PODS, params={"watch": "true",
                                                           "allowWatchBookmarks": "true"}) as r:
            async for line in r.content:
                if b'"ADDED"' in line:
                    received.append((time.monotonic(), "ADDED"))
                    return
                received.append((time.monotonic(), "BOOKMARK"))

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.3)
    stalled_at = time.monotonic()
    srv.faults.stall_watches(1.0)
    await raw.request("POST", PODS, pod("p"))
    await asyncio.wait_for(task, 10)
    assert all(t < stalled_at or t >= stalled_at + 0.9 for t, _ in received)
    assert received[-1][1] == "ADDED"


async def test_metrics_count_requests(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.reset_counts()
    await raw.request("POST", PODS, pod("p"))
    await raw.request("PATCH", PODS + "/p", {"metadata": {"labels": {"a": "b"}}},
                      content_type="application/merge-patch+json")
    await raw.request("GET", PODS + "/missing")
    await raw.request("GET", PODS)
    assert srv.request_counts(verb="create") == 1
    assert srv.request_counts(verb="PATCH", resource="pods") == 1
    assert srv.request_counts(code=404) == 1
    assert srv.counts()[("LIST", "", "pods", "", 200)] == 1
    code, text, _ = await raw.request("GET", "/metrics")
    assert code == 200
    assert ('apiserver_request_total{code="201",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1'
            in text)
    srv.reset_counts()
    assert srv.request_counts() == 0


def test_cli_serves_version_with_token() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kc")
        proc = subprocess.Popen(
            [sys.executable, "-m", "slicectl", "apiserver", "--port", "0", "--token", "secret",
             "--kubeconfig-out", kubeconfig], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split()[1]

            async def probe() -> tuple[int, int]:
                connector = aiohttp.TCPConnector(ssl=ssl_context(kubeconfig))
                async with aiohttp.ClientSession(connector=connector) as session:
                    async with session.get(url + "/version",
                                           headers={"Authorization": "Bearer secret"}) as resp:
                        version = resp.status
                    async with session.get(url + "/api/v1/pods") as resp:
                        anonymous = resp.status
                return version, anonymous

            assert asyncio.run(probe()) == (200, 401)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
