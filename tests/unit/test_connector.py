"""The TLS handshake has its own bound, client-go's 10 s (slicectl.kube.connector), inside the
request's connect timeout: a server that accepts the connection and never answers the
handshake fails the request as a connection error, for the caller to retry, where aiohttp
waited out the whole connect timeout (30 s here). The bound is made short here, and what is
checked is which one ended the request: the handshake's (a connection error that says so), not
the connect timeout's (a TimeoutError)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from slicectl.kube import connector
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.sim.tls import make_certificates
from tests.unit.kubeconfigs import one_context


@pytest.fixture
async def mute_server() -> AsyncIterator[int]:
    """A TCP server that accepts, reads and never writes a byte: a stalled TLS handshake."""
    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(4096):
            pass
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


async def test_a_stalled_handshake_ends_at_its_own_bound(
    tmp_path: Path, mute_server: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(make_certificates("127.0.0.1")[0])
    kubeconfig = one_context(tmp_path, f"https://127.0.0.1:{mute_server}", {"token": "t"},
                             certificate_authority=str(ca))
    monkeypatch.setattr(connector, "TLS_HANDSHAKE_TIMEOUT", 0.3)
    settings = ClientSettings(request_timeout=600.0)
    async with await KubeClient.connect(kubeconfig, settings=settings) as client:
        with pytest.raises(aiohttp.ClientConnectorError) as failed:
            async with asyncio.timeout(5.0):  # a hang guard, far above the bound
                await client.request("GET", "/version")
    assert isinstance(failed.value.os_error, ConnectionAbortedError)
    assert "SSL handshake is taking longer than 0.3 seconds" in str(failed.value.os_error)


async def test_plain_http_is_dialled_without_a_handshake_bound() -> None:
    """asyncio refuses a handshake timeout on a connection without TLS: the bound is only
    given with TLS (a plain ``http://`` server, as in kubectl proxy's, still works)."""
    async def version(_request: web.Request) -> web.Response:
        return web.json_response({"major": "1"})

    app = web.Application()
    app.router.add_get("/version", version)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession(connector=connector.Connector()) as session, \
                session.get(f"http://127.0.0.1:{port}/version") as response:
            assert (response.status, await response.json()) == (200, {"major": "1"})
    finally:
        await runner.cleanup()
