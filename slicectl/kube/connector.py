"""The connector every client session dials with: aiohttp's, with client-go's bound on the TLS
handshake.

Why: client-go's transport gives the TCP connection 30 seconds and then the TLS handshake 10
more (``TLSHandshakeTimeout``); aiohttp bounds both together by the request's connect timeout
(30 seconds here; asyncio's own 60 for the handshake when there is none). A connection that
stalls in its handshake (a server that accepts and then hangs, a half-dead path) held a watch
that long before it was tried again. The handshake is now given :data:`TLS_HANDSHAKE_TIMEOUT`
seconds, directly and through a SOCKS5 tunnel (:mod:`slicectl.kube.socks`); then it fails as a
connection error, which the client and the informers retry as any other.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

TLS_HANDSHAKE_TIMEOUT = 10.0  # seconds, client-go's TLSHandshakeTimeout


class Connector(aiohttp.TCPConnector):
    """A TCPConnector whose TLS handshakes last at most :data:`TLS_HANDSHAKE_TIMEOUT`."""

    async def _wrap_create_connection(  # aiohttp's hook for a new connection
        self, *args: Any, **kwargs: Any,
    ) -> tuple[asyncio.Transport, ResponseHandler]:
        return await super()._wrap_create_connection(*args, **_bounded(kwargs))

    async def _wrap_existing_connection(  # and for TLS on a socket already connected
        self, *args: Any, **kwargs: Any,
    ) -> tuple[asyncio.Transport, ResponseHandler]:
        return await super()._wrap_existing_connection(*args, **_bounded(kwargs))


def _bounded(kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs.get("ssl"):
        kwargs.setdefault("ssl_handshake_timeout", TLS_HANDSHAKE_TIMEOUT)
    return kwargs
