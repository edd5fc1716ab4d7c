"""A small OpenID Connect identity provider on loopback, for the ``oidc`` auth provider's tests.

It serves what client-go's ``oidc`` refresher asks of a real one (Dex, Keycloak, Okta): the
discovery document at ``/.well-known/openid-configuration`` naming its token endpoint, and that
endpoint's ``refresh_token`` grant. Each grant is recorded (form and headers) and answered from
a queue the test fills; an empty queue is a 400 ``invalid_grant``, as a provider answers a
refresh token it does not know. With ``basic_auth=False`` it refuses client credentials in an
``Authorization`` header, as providers that only take them as form fields do. ``discovery``
replaces the discovery document's answer and ``delay`` slows the token endpoint, for the
failures a client must name.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from slicectl.sim.tls import make_certificates, server_context


def jwt(exp: Any, **claims: Any) -> str:
    """An unsigned JWT with claims ``claims`` and ``exp`` (none if None), base64url encoded."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    body = {**claims, **({"exp": exp} if exp is not None else {})}
    return f"{part({'alg': 'none'})}.{part(body)}.sig"


def fresh_jwt(seconds: float = 3600.0, **claims: Any) -> str:
    """A JWT that expires ``seconds`` from now."""
    return jwt(int(time.time() + seconds), **claims)


@dataclass
class Grant:
    form: dict[str, str]
    authorization: str | None


@dataclass
class IdentityProvider:
    basic_auth: bool = True
    tls: bool = False
    answers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    grants: list[Grant] = field(default_factory=list)
    discoveries: int = 0
    discovery: tuple[int, dict[str, Any]] | None = None  # its answer, if not the usual one
    delay: float = 0.0  # seconds the token endpoint takes to answer
    url: str = ""
    ca_pem: bytes = b""
    _runner: web.AppRunner | None = None

    def answer(self, status: int = 200, **body: Any) -> None:
        """Queue the token endpoint's next answer."""
        self.answers.append((status, body))

    async def __aenter__(self) -> IdentityProvider:
        app = web.Application()
        app.router.add_get("/issuer/.well-known/openid-configuration", self._discovery)
        app.router.add_post("/issuer/token", self._token)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        context = None
        if self.tls:
            self.ca_pem, cert, key = make_certificates("127.0.0.1")
            context = server_context(cert, key)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{port}/issuer"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _discovery(self, _request: web.Request) -> web.Response:
        self.discoveries += 1
        if self.discovery is not None:
            return web.json_response(self.discovery[1], status=self.discovery[0])
        return web.json_response({"issuer": self.url, "token_endpoint": f"{self.url}/token"})

    async def _token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        authorization = request.headers.get("Authorization")
        self.grants.append(Grant(form, authorization))
        await asyncio.sleep(self.delay)
        if authorization is not None and not self.basic_auth:
            return web.json_response({"error": "invalid_client"}, status=401)
        if not self.answers:
            return web.json_response({"error": "invalid_grant"}, status=400)
        status, body = self.answers.pop(0)
        return web.json_response(body, status=status)
