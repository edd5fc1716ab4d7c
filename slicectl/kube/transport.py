"""The HTTP connections of one client: a pooled aiohttp session to the server of a
:class:`~slicectl.kube.config.Connection`, and the credential on each request.

It decides what a request goes out on: no cap on pooled connections (as client-go has none:
every watch holds one for minutes, one per resource and watched namespace, so a capped pool ran
out with a few dozen namespaces and left writes and lease renewals queued for a connection
until their timeout; the token bucket, not the pool, bounds the request rate), the current
``Authorization`` header, a new pool when the client certificate changes (the pooled
connections, watches too, still present the old one), and the TLS server name and proxy.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from slicectl.kube.config import Connection


class Transport:
    def __init__(self, conn: Connection, user_agent: str) -> None:
        self._conn = conn
        self._user_agent = user_agent
        self._session = self._new_session()
        self._identity = conn.identity  # the client certificate the session's connections use

    async def authorize(self, headers: dict[str, str]) -> aiohttp.ClientSession:
        """Put the credential in ``headers``; the session to send them on (a new one when
        the client certificate changed)."""
        value = await self._conn.authorization()
        if value:
            headers["Authorization"] = value
        if self._conn.identity != self._identity:
            self._identity = self._conn.identity
            old, self._session = self._session, self._new_session()
            await old.close()
        return self._session

    def options(self) -> dict[str, Any]:
        """The request arguments every request carries: TLS server name, proxy."""
        kwargs: dict[str, Any] = {}
        if self._conn.server_hostname:
            kwargs["server_hostname"] = self._conn.server_hostname
        if self._conn.proxy:
            kwargs["proxy"] = self._conn.proxy
        return kwargs

    async def close(self) -> None:
        await self._session.close()

    def _new_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=0, ssl=self._conn.ssl)
        return aiohttp.ClientSession(
            connector=connector, headers={"User-Agent": self._user_agent})
