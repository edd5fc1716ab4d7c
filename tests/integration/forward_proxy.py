"""A forward proxy on loopback, HTTP CONNECT and SOCKS5 on one port, for the proxy tests.

It tunnels only to the names it is given a route for (``routes``: name -> real host and port),
so a client that reaches the API server under such a name (``kube-api.invalid``, which no
resolver answers) got there through the proxy and nowhere else. It records each tunnel asked
for (protocol, name, port), and with ``credentials`` it refuses a tunnel without them: an HTTP
CONNECT gets 407, a SOCKS5 greeting that offers no username/password method or sends others
gets refused, as real proxies do. With ``tls`` (a server context) the proxy itself is spoken to
over TLS, an ``https://`` proxy. Bytes inside a tunnel pass untouched (:func:`pipe`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import ssl
import struct
from dataclasses import dataclass, field

from tests.integration.wire import Link, pipe


@dataclass
class ForwardProxy:
    routes: dict[str, tuple[str, int]]
    credentials: tuple[str, str] | None = None
    tls: ssl.SSLContext | None = None
    port: int = 0
    tunnels: list[tuple[str, str, int]] = field(default_factory=list)  # protocol, name, port
    refused: list[str] = field(default_factory=list)  # why each refused tunnel was refused
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def __aenter__(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def url(self, scheme: str, user: str | None = None, password: str | None = None) -> str:
        auth = f"{user}:{password}@" if user is not None else ""
        return f"{scheme}://{auth}127.0.0.1:{self.port}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            first = await reader.readexactly(1)
            target = await (self._socks5(reader, writer) if first == b"\x05"
                            else self._connect(first, reader, writer))
            if target is None:
                return
            up_reader, up_writer = await asyncio.open_connection(*target)
            link = Link(writer, up_writer)
            await asyncio.gather(pipe(reader, up_writer, link), pipe(up_reader, writer, link))
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.transport.abort()
            self._tasks.discard(task)

    def _route(self, protocol: str, name: str, port: int) -> tuple[str, int] | None:
        if name not in self.routes:
            self.refused.append(f"{protocol}: no route to {name}")
            return None
        self.tunnels.append((protocol, name, port))
        return self.routes[name]

    async def _connect(self, first: bytes, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> tuple[str, int] | None:
        """An HTTP CONNECT request (its first byte read already)."""
        head = first + await reader.readuntil(b"\r\n\r\n")
        request, *header_lines = head.decode("latin-1").split("\r\n")
        method, authority, _ = request.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in header_lines if line)}
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            self.refused.append(f"http: {method}")
            return None
        if self.credentials is not None:
            user, password = self.credentials
            want = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            if headers.get("proxy-authorization") != want:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                             b"Proxy-Authenticate: Basic realm=\"test\"\r\n"
                             b"Content-Length: 0\r\n\r\n")
                self.refused.append("http: credentials")
                return None
        name, _, port = authority.rpartition(":")
        target = self._route("http", name.strip("[]"), int(port))
        if target is None:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return None
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        return target

    async def _socks5(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> tuple[str, int] | None:
        """RFC 1928 (CONNECT only), RFC 1929 username/password; the version byte read."""
        methods = await reader.readexactly((await reader.readexactly(1))[0])
        wanted = 0x02 if self.credentials is not None else 0x00
        if wanted not in methods:
            writer.write(b"\x05\xff")
            self.refused.append("socks5: no acceptable method")
            return None
        writer.write(bytes([5, wanted]))
        if self.credentials is not None:
            await reader.readexactly(1)  # the subnegotiation's version
            user = await reader.readexactly((await reader.readexactly(1))[0])
            password = await reader.readexactly((await reader.readexactly(1))[0])
            if (user.decode(), password.decode()) != self.credentials:
                writer.write(b"\x01\x01")
                self.refused.append("socks5: credentials")
                return None
            writer.write(b"\x01\x00")
        _, command, _, kind = await reader.readexactly(4)
        if kind == 3:
            name = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
        else:
            packed = await reader.readexactly(4 if kind == 1 else 16)
            name = str(ipaddress.ip_address(packed))
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        target = self._route("socks5", name, port) if command == 1 else None
        reply = 0 if target is not None else 2  # 2: connection not allowed by ruleset
        writer.write(bytes([5, reply, 0, 1, 0, 0, 0, 0, 0, 0]))
        await writer.drain()
        return target
