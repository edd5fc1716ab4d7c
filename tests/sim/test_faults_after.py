"""Faults that strike after the server acted, mid-stream resets, raw watch lines, restarts.

Each test checks both halves of the fault: what the client sees (no answer, a 500, a body cut
short, a 410 after a restart) and what the server did anyway (the write is stored).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time

import aiohttp
import orjson
import pytest

from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.errors import Gone
from slicectl.kube.resources import LEASES
from slicectl.kube.resources import PODS as POD_RESOURCE
from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod, ssl_context, until

CUT = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)


async def test_lost_response_applies_the_write_then_resets(srv: EmbeddedApiServer,
                                                           raw: Raw) -> None:
    srv.faults.lost_response_rate = 1.0
    with pytest.raises(CUT):
        await raw.request("POST", PODS, pod("p"))
    with pytest.raises(CUT):
        await raw.request("PATCH", PODS + "/p", {"metadata": {"labels": {"a": "b"}}},
                          content_type="application/merge-patch+json")
    code, body, _ = await raw.request("GET", PODS + "/p")  # reads are never lost
    assert code == 200 and body["metadata"]["labels"] == {"a": "b"}
    code, body, _ = await raw.request("POST", PODS, pod("p"))  # a refused write is answered
    assert code == 409 and body["reason"] == "AlreadyExists"
    # aiohttp resends an idempotent request once when the connection is cut before the answer:
    # the resent DELETE finds the pod already gone (the first one was applied)
    try:
        code, _, _ = await raw.request("DELETE", PODS + "/p", gracePeriodSeconds=0)
    except CUT:
        code = 0
    assert code in (0, 404)
    srv.faults.lost_response_rate = 0.0
    code, _, _ = await raw.request("GET", PODS + "/p")
    assert code == 404
    assert srv.faults.injected["lost_response"] == 3


async def test_error_after_the_write_was_applied(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.faults.error_after_rate = 1.0
    code, body, _ = await raw.request("POST", PODS, pod("p"))
    assert code == 500 and body["reason"] == "InternalError"
    srv.faults.error_after_rate = 0.0
    code, body, _ = await raw.request("GET", PODS + "/p")
    assert code == 200 and body["metadata"]["name"] == "p"


async def test_list_body_cut_in_the_middle(srv: EmbeddedApiServer, raw: Raw) -> None:
    for i in range(20):
        await raw.request("POST", PODS, pod(f"p{i}"))
    srv.faults.list_reset_rate = 1.0
    with pytest.raises(CUT):
        await raw.request("GET", PODS)
    code, _, _ = await raw.request("GET", PODS + "/p1")  # a GET of one object is not a LIST
    assert code == 200
    srv.faults.list_reset_rate = 0.0
    code, body, _ = await raw.request("GET", PODS)
    assert code == 200 and len(body["items"]) == 20


async def test_watch_reset_mid_stream_is_not_a_clean_end(srv: EmbeddedApiServer,
                                                         raw: Raw) -> None:
    seen: list[bytes] = []

    async def consume() -> None:
        async with raw.session.get(srv.url + PODS, params={"watch": "true"}) as resp:
            async for line in resp.content:
                seen.append(line)

    task = asyncio.create_task(consume())
    await raw.request("POST", PODS, pod("a"))
    await until(lambda: bool(seen))
    assert srv.faults.reset_watches("pods") == 1
    with pytest.raises(CUT):
        await asyncio.wait_for(task, 5)


async def test_raw_watch_lines_and_truncated_streams(srv: EmbeddedApiServer,
                                                     raw: Raw) -> None:
    received = bytearray()

    async def consume() -> None:
        async with raw.session.get(srv.url + PODS, params={"watch": "true"}) as resp:
            async for chunk in resp.content.iter_any():
                received.extend(chunk)

    task = asyncio.create_task(consume())
    await until(lambda: srv.faults.open_watches("pods") > 0)
    assert srv.faults.inject_watch_line("pods", b"{not json\n") == 1
    await until(lambda: bool(received))
    assert bytes(received) == b"{not json\n"
    assert srv.faults.inject_watch_line("pods", b'{"type":"ADDED","object":{"kind":"Po',
                                        truncate=True) == 1
    await raw.request("POST", PODS, pod("after-the-cut"))  # never sent on the cut stream
    with pytest.raises(CUT):
        await asyncio.wait_for(task, 5)
    assert bytes(received).endswith(b'\n{"type":"ADDED","object":{"kind":"Po')


async def test_restart_keeps_objects_resets_history_and_connections(
        srv: EmbeddedApiServer, raw: Raw) -> None:
    async with await KubeClient.connect(srv.kubeconfig_path) as client:
        await client.create(POD_RESOURCE, pod("kept"), "default")
        _, rv = await client.list(POD_RESOURCE, "default")
        await client.create(POD_RESOURCE, pod("later"), "default")  # rv is now in the past
        srv.faults.restart(down_for=0.5)
        with pytest.raises(aiohttp.ClientError):  # (KubeClient would resend it 1 s later)
            await raw.request("GET", f"{PODS}/kept")  # still down: reset
        await asyncio.sleep(0.6)
        kept = await client.get(POD_RESOURCE, "kept", "default")
        assert int(kept["metadata"]["resourceVersion"]) <= int(rv)  # etcd kept its revisions
        with pytest.raises(Gone):
            async for _ in client.watch(POD_RESOURCE, "default", resource_version=rv,
                                        timeout_seconds=5):
                pass


async def test_latency_for_one_resource_only(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.faults.resource_latency = {"leases": 0.5}
    start = time.monotonic()
    await raw.request("GET", PODS)
    assert time.monotonic() - start < 0.5
    async with await KubeClient.connect(srv.kubeconfig_path) as client:
        start = time.monotonic()
        await client.list(LEASES, "default")
        assert time.monotonic() - start >= 0.5


async def test_write_log_tells_clients_apart(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.faults.record_writes = True
    await raw.request("POST", PODS, pod("w"))
    await raw.request("GET", PODS)
    [write] = srv.faults.writes
    assert (write.verb, write.resource, write.name, write.code) == ("create", "pods", "", 201)
    assert write.client_port > 0


def test_cli_flag_lost_response_rate() -> None:
    bad = subprocess.run([sys.executable, "-m", "slicectl", "apiserver", "--port", "0",
                          "--inject-lost-response-rate", "1.5"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "between 0 and 1" in bad.stderr
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kc")
        proc = subprocess.Popen(
            [sys.executable, "-m", "slicectl", "apiserver", "--port", "0", "--token", "t",
             "--kubeconfig-out", kubeconfig, "--inject-lost-response-rate", "1"],
            stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split()[1]

            async def create_then_get() -> tuple[bool, int]:
                connector = aiohttp.TCPConnector(ssl=ssl_context(kubeconfig))
                headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}
                async with aiohttp.ClientSession(connector=connector, headers=headers) as s:
                    lost = False
                    try:
                        async with s.post(url + PODS, data=orjson.dumps(pod("p"))) as resp:
                            await resp.read()
                    except CUT:
                        lost = True
                    async with s.get(url + PODS + "/p") as resp:
                        return lost, resp.status

            assert asyncio.run(create_then_get()) == (True, 200)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


async def test_discovery_can_fail(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.faults.discovery_error_rate = 1.0
    code, body, _ = await raw.request("GET", "/apis/coordination.k8s.io/v1")
    assert code == 503 and body["reason"] == "ServiceUnavailable"
    code, _, _ = await raw.request("GET", "/healthz")  # the server's own probes still answer
    assert code == 200
    srv.faults.discovery_error_rate = 0.0
    code, body, _ = await raw.request("GET", "/apis/coordination.k8s.io/v1")
    assert code == 200 and body["kind"] == "APIResourceList"


async def test_faults_aimed_at_one_resource(srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.faults.resource_error_rate = {"pods/status": 1.0}
    code, _, _ = await raw.request("POST", PODS, pod("p"))
    assert code == 201
    code, _, _ = await raw.request("PATCH", PODS + "/p/status", {"status": {"phase": "Running"}},
                                   content_type="application/merge-patch+json")
    assert code == 500
    srv.faults.resource_error_rate = {}
    srv.faults.lost_response_rate = 1.0
    srv.faults.after_resources = frozenset({"leases"})
    code, _, _ = await raw.request("POST", PODS, pod("q"))  # pods are not aimed at
    assert code == 201


async def test_spared_client_is_served_through_every_request_fault(srv: EmbeddedApiServer,
                                                                   raw: Raw) -> None:
    """A test's own driver (its User-Agent spared) is served while the client under test
    gets the faults: before and after acting, and the restart's refusals."""
    srv.faults.spared_agent = "model-driver/"
    srv.faults.error_rate = srv.faults.lost_response_rate = srv.faults.throttle_rate = 1.0
    srv.faults.discovery_error_rate = 1.0
    code, _, _ = await raw.request("POST", PODS, pod("p"))
    assert code in (429, 500)
    settings = ClientSettings(user_agent="model-driver/1")
    async with await KubeClient.connect(srv.kubeconfig_path, settings=settings) as driver:
        await driver.create(POD_RESOURCE, pod("q"), "default")
        srv.faults.restart(down_for=30.0)
        got = await driver.get(POD_RESOURCE, "q", "default")
        assert got["metadata"]["name"] == "q"
        assert (await driver.request("GET", "/api"))["kind"] == "APIVersions"
    with pytest.raises(CUT):
        await raw.request("GET", PODS + "/q")
