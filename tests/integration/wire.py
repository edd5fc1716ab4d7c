"""A TCP proxy between a test's client and a real API server, to break the wire there.

The embedded server injects faults itself (``EmbeddedApiServer.faults``); a real cluster does
not, but the connection to it can still be broken from outside. ``WireProxy`` forwards bytes
untouched (TLS passes through end to end, so the client still verifies the server's certificate)
and can, on demand:

* ``drop()``: reset every open connection (a watch ends mid-stream, as when an apiserver
  restarts or a load balancer cuts an idle connection);
* ``stall()``: stop forwarding on the connections open now, without closing them (a half-dead
  connection: the client's only defence is its own timeout); new connections still flow,
  unless ``new_too`` (then nothing gets through until ``restore()``: a server that hangs);
* ``refuse()``: reset open connections and every new one until ``restore()`` (the server is
  unreachable: every request fails);
* ``resume()``: everything stalled flows again, bytes held included (a partition heals, a
  frozen server resumes).

It decides nothing about HTTP: faults that need a status code (500, 429) or a crafted body stay
with the embedded server.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from pathlib import Path

from tests.integration.credentials import with_cluster


class Link:
    """One client connection and its upstream twin."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.writers = (client, upstream)
        self.flowing = asyncio.Event()
        self.flowing.set()

    def abort(self) -> None:
        for w in self.writers:
            w.transport.abort()
        self.flowing.set()  # wake a stalled pipe so it sees the closed transport and ends


class WireProxy:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.listen_port = 0
        self._server: asyncio.Server | None = None
        self._links: set[Link] = set()
        self._refusing = False
        self._stalling = False

    async def __aenter__(self) -> WireProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.listen_port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def kubeconfig(self, source: str, path: Path) -> str:
        """``source`` with its current context's server replaced by this proxy."""
        # the certificate names the real host
        defaults = {} if _is_ip(self.host) else {"tls-server-name": self.host}
        return with_cluster(source, path, {"server": f"https://127.0.0.1:{self.listen_port}"},
                            defaults)

    def drop(self) -> int:
        """Reset every open connection; how many there were."""
        links = list(self._links)
        for link in links:
            link.abort()
        self._links.clear()
        return len(links)

    def stall(self, *, new_too: bool = False) -> int:
        """Stop forwarding on the open connections (left open); how many there were."""
        self._stalling = new_too
        for link in self._links:
            link.flowing.clear()
        return len(self._links)

    def refuse(self) -> None:
        self._refusing = True
        self.drop()

    def restore(self) -> None:
        """New connections flow again (stalled ones stay stalled until dropped)."""
        self._refusing = self._stalling = False

    def resume(self) -> None:
        """Stalled connections carry their held bytes and flow again, new ones too."""
        self.restore()
        for link in self._links:
            link.flowing.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.transport.abort()
            return
        link = Link(writer, up_writer)
        if self._stalling:
            link.flowing.clear()
        self._links.add(link)
        try:
            await asyncio.gather(pipe(reader, up_writer, link), pipe(up_reader, writer, link))
        finally:
            self._links.discard(link)
            link.abort()


async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, link: Link) -> None:
    """Forward ``src`` to ``dst`` while ``link`` flows, until either end closes."""
    with contextlib.suppress(OSError, asyncio.IncompleteReadError, ConnectionError):
        while data := await src.read(65536):
            await link.flowing.wait()
            if dst.transport.is_closing():
                return
            dst.write(data)
            await dst.drain()
    with contextlib.suppress(OSError, RuntimeError):
        dst.write_eof()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
