"""SOCKS5 connections for aiohttp, the one proxy kind client-go takes that aiohttp lacks.

Why: a kubeconfig's ``proxy-url: socks5://...`` (kubectl through ``ssh -D``, the documented
way to reach a private cluster) or ``HTTPS_PROXY=socks5://...`` is what client-go dials through
its SOCKS5 dialer. python-socks makes the tunnel (RFC 1928, with RFC 1929 username and
password from the URL); this connector hands the tunnelled socket to aiohttp, which does TLS
on it as on any connection: the cluster's CA, and ``tls-server-name`` when the kubeconfig sets
one (a connector that started TLS itself would check the server's name instead).

What it decides: the server's name goes to the proxy unresolved, as Go's dialer sends it (the
proxy resolves it; the client may not be able to); a tunnel the proxy refuses (credentials,
rules) or cannot reach is a connection error of aiohttp's own kind, as a refused direct
connection is.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler
from python_socks import ProxyError, ProxyType
from python_socks.async_.asyncio import Proxy as SocksTunnel

from slicectl.kube.connector import Connector
from slicectl.kube.proxy import Proxy


class _Unresolved(AbstractResolver):
    """The name as it is: the proxy resolves it."""

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [{"hostname": host, "host": host, "port": port, "family": family,
                 "proto": 0, "flags": 0}]

    async def close(self) -> None:
        return None


class Socks5Connector(Connector):
    """A TCPConnector whose connections are tunnels through ``proxy`` (scheme socks5)."""

    def __init__(self, proxy: Proxy, **kwargs: Any) -> None:
        super().__init__(resolver=_Unresolved(), **kwargs)
        self._proxy = proxy

    async def _wrap_create_connection(  # aiohttp's hook (aiohttp-socks overrides it too)
        self, *args: Any, addr_infos: list[Any], req: aiohttp.ClientRequest,
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 (aiohttp's signature)
        client_error: type[Exception] = aiohttp.ClientConnectorError, **kwargs: Any,
    ) -> tuple[asyncio.Transport, ResponseHandler]:
        host, port = addr_infos[0][4][:2]
        tunnel = SocksTunnel(ProxyType.SOCKS5, self._proxy.host, self._proxy.port,
                             self._proxy.username, self._proxy.password, rdns=True,
                             loop=self._loop)
        try:
            sock = await tunnel.connect(host, port, timeout=timeout.sock_connect)
        except OSError as exc:  # the proxy itself unreachable
            raise client_error(req.connection_key, exc) from exc
        except ProxyError as exc:  # the proxy refused the tunnel
            raise client_error(req.connection_key,
                               OSError(f"SOCKS5 proxy {self._proxy.shown}: {exc}")) from exc
        try:
            return await self._wrap_existing_connection(
                *args, req=req, timeout=timeout, client_error=client_error, sock=sock, **kwargs)
        except BaseException:
            sock.close()
            raise
