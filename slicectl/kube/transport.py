"""The HTTP connections of one client: a pooled aiohttp session to the server of a
:class:`~slicectl.kube.config.Connection`, and the credential on each request.

It decides what a request goes out on: no cap on pooled connections (as client-go has none:
every watch holds one for minutes, one per resource and watched namespace, so a capped pool ran
out with a few dozen namespaces and left writes and lease renewals queued for a connection
until their timeout; the token bucket, not the pool, bounds the request rate), the current
``Authorization`` header, a new pool when the client certificate changes (the pooled
connections, watches too, still present the old one), the TLS server name and proxy, and that
no write goes out twice unseen: aiohttp sends a PUT or DELETE again, once and at once, when
its connection breaks before the answer, though the server may have applied it, where client-go
resends no write that went out (Go's transport replays only GET, HEAD, OPTIONS and TRACE).
That resend skipped the rate limit, the write gate and the request metrics, and answered the
caller for itself (a 409, a 404) instead of the lost write: the break is raised as
:class:`ConnectionLost` instead, which aiohttp does not resend (a GET is still resent, once, at
once, as Go's transport replays one on a reused connection). :func:`broke_before_answer` tells
the client which breaks it resends a GET after, as client-go does.

Answers are asked for as Go's transport asks: ``Accept-Encoding: gzip`` (a real server
compresses those over 128 KiB: a large LIST), or no Accept-Encoding at all when the connection
disables compression (the kubeconfig's ``disable-compression``), where aiohttp would otherwise
offer gzip and deflate (and br, zstd, with their packages installed) on its own.

A proxy (:mod:`slicectl.kube.proxy`) is an argument of each request for an HTTP(S) proxy, as
aiohttp takes them, and the session's connector for a SOCKS5 one (:mod:`slicectl.kube.socks`).
Every connector bounds the TLS handshake as client-go does (:mod:`slicectl.kube.connector`).
"""

from __future__ import annotations

import errno
from typing import Any

import aiohttp
from multidict import CIMultiDict

from slicectl.kube.config import Connection
from slicectl.kube.connector import Connector
from slicectl.kube.socks import Socks5Connector


class ConnectionLost(aiohttp.ServerConnectionError):
    """The connection broke before a write's answer came: the server may have applied it."""


async def _writes_sent_once(request: aiohttp.ClientRequest,
                            send: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    """A middleware: a write's broken connection raised so that aiohttp does not resend it
    (module docstring)."""
    try:
        return await send(request)
    except aiohttp.ClientConnectorError:  # never connected: nothing went out (not resent)
        raise
    except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError) as exc:
        if request.method == "GET":
            raise
        raise ConnectionLost(f"{request.method} {request.url.path}: {exc!r}") from exc


def broke_before_answer(exc: BaseException) -> bool:
    """The connection was reset or closed before the answer's head came: what client-go resends
    a GET after (``IsConnectionReset``, ``IsProbableEOF`` on ``client.Do``'s error). Not a
    refused connection (nobody listens: the server is down), a timeout, or a body cut short
    once the answer began (client-go reads the body after deciding, and returns that error)."""
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return True
    return isinstance(exc, aiohttp.ClientOSError) and exc.errno == errno.ECONNRESET


def _request_options(conn: Connection) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if conn.server_hostname:
        kwargs["server_hostname"] = conn.server_hostname
    proxy = conn.proxy
    if proxy is not None and proxy.scheme != "socks5":
        kwargs["proxy"] = proxy.address
        if proxy.authorization is not None:  # the CONNECT's, for an HTTPS server
            kwargs["proxy_headers"] = {"Proxy-Authorization": proxy.authorization}
    return kwargs


class Transport:
    def __init__(self, conn: Connection, user_agent: str) -> None:
        self._conn = conn
        self._user_agent = user_agent
        self._session = self._new_session()
        self._identity = conn.identity  # the client certificate the session's connections use
        self._options = _request_options(conn)  # the same for every request of the connection
        proxy = conn.proxy
        self._proxy_authorization = (
            proxy.authorization if proxy is not None and proxy.scheme != "socks5"
            and not conn.host.startswith("https") else None)

    async def authorize(self, headers: dict[str, str]) -> aiohttp.ClientSession:
        """Put the credential in ``headers``; the session to send them on (a new one when
        the client certificate changed)."""
        value = await self._conn.authorization()
        if value:
            headers["Authorization"] = value
        if self._proxy_authorization is not None:  # a plain-HTTP server, through a proxy
            headers["Proxy-Authorization"] = self._proxy_authorization
        self._conn.reload_tls_files()
        if self._conn.identity != self._identity:
            self._identity = self._conn.identity
            old, self._session = self._session, self._new_session()
            await old.close()
        return self._session

    def options(self) -> dict[str, Any]:
        """The request arguments every request carries: TLS server name, proxy."""
        return self._options

    async def close(self) -> None:
        await self._session.close()

    def _new_session(self) -> aiohttp.ClientSession:
        proxy = self._conn.proxy
        connector: Connector
        if proxy is not None and proxy.scheme == "socks5":
            connector = Socks5Connector(proxy, limit=0, ssl=self._conn.ssl)
        else:
            connector = Connector(limit=0, ssl=self._conn.ssl)
        headers = CIMultiDict([("User-Agent", self._user_agent), *self._conn.impersonation])
        if self._conn.compression:
            headers["Accept-Encoding"] = "gzip"
        return aiohttp.ClientSession(
            connector=connector, headers=headers, middlewares=(_writes_sent_once,),
            skip_auto_headers=() if self._conn.compression else ("Accept-Encoding",))
