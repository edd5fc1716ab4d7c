"""Connection lifetimes as a real kube-apiserver's: an idle keep-alive connection is closed.

A real v1.32.6 serves with Go's ``http.Server{IdleTimeout: 90s}`` (secure_serving.go): on
loopback it closed an idle HTTP/1.1 connection 90.0 s after its last answer. aiohttp's default
keeps one for an hour, which would spare a client the race of reusing a pooled connection the
server is closing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from slicectl.sim.server import IDLE_TIMEOUT, EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod, ssl_context, until

IDLE = 0.5  # the idle timeout of the server below, in seconds


@pytest.fixture
async def srv() -> AsyncIterator[EmbeddedApiServer]:
    async with EmbeddedApiServer(idle_timeout=IDLE) as server:
        yield server


def test_the_idle_timeout_is_the_real_servers() -> None:
    assert IDLE_TIMEOUT == 90.0


async def test_an_idle_connection_is_closed_after_the_idle_timeout(
        srv: EmbeddedApiServer) -> None:
    reader, writer = await asyncio.open_connection(
        srv.host, srv.port, ssl=ssl_context(srv.kubeconfig_path))
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    # read() returns at the end of the stream only: the server must close the connection
    data = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 200") and b"connection: close" not in head


async def test_a_watch_outlives_the_idle_timeout(raw: Raw) -> None:
    """The idle timeout is for connections between requests, not for a long request."""
    srv = raw.srv
    task = asyncio.create_task(raw.watch_lines(PODS, 1, limit_s=30, resourceVersion="0"))
    await until(lambda: srv.faults.open_watches("pods") == 1)
    await asyncio.sleep(2 * IDLE)
    await raw.request("POST", PODS, pod("late"))
    events = await asyncio.wait_for(task, 30)
    assert [e["object"]["metadata"]["name"] for e in events] == ["late"]
