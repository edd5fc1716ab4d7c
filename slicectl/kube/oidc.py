"""A kubeconfig user's ``oidc`` auth provider, run as client-go's ``plugin/pkg/client/auth/oidc``
runs it.

kubernetes-asyncio's refresher, which slicectl used until now, read the id-token's claims as
standard base64 where a JWT is base64url (a token whose claims encode to ``-`` or ``_``, most
real ones, failed to load), refreshed five minutes early, needed a ``client-secret`` (public
clients have none) and a new refresh token in every answer, ignored ``idp-certificate-authority``
and never wrote the new tokens back. client-go's rules, kept here:

- ``idp-issuer-url`` and ``client-id`` are required.
- The ``id-token`` is sent while its ``exp`` claim is more than 10 seconds away; a token with no
  ``exp`` is expired, and one that is not a JWT is refused.
- Otherwise the ``refresh-token`` buys a new one: the token endpoint named by the issuer's
  discovery document, a ``refresh_token`` grant with the client's id and secret (HTTP basic
  auth, else form fields, as golang.org/x/oauth2 tries them); the answer must carry an
  ``access_token`` and an ``id_token``, and a new refresh token replaces the old one.
- The new tokens are written back into the kubeconfig file that defines the user, as kubectl
  writes them: a rotated refresh token lives on for the next process, or for kubectl sharing the
  file. Where client-go then fails the request (a read-only Secret mount), slicectl keeps the
  tokens in memory, with a warning.

Callers coalesce on one refresh (:class:`~slicectl.kube.connection.Connection`), and a refresh
that failed is not tried again for :data:`RETRY_AFTER` seconds: the identity provider is not
asked once per request.
"""

from __future__ import annotations

import base64
import functools
import re
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote_plus

import aiohttp
import orjson
import structlog
import yaml

from slicectl.kube.kubeconfig_merge import decode_base64

_log = structlog.get_logger("slicectl.kube")
EXPIRY_MARGIN = 10.0  # seconds: client-go's expiryDelta
RETRY_AFTER = 10.0  # seconds a failed refresh waits before the next one
TIMEOUT = aiohttp.ClientTimeout(total=30)  # one refresh, discovery and grant together
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class OidcError(Exception):
    """The provider's configuration is invalid, or a refresh failed."""


@functools.lru_cache(maxsize=4)  # asked before every request, of the one token held
def expires_at(id_token: str) -> float:
    """The ``exp`` claim of ``id_token`` (unix seconds; 0 without one), read as client-go reads
    it: base64url without padding, a number that may be fractional (then truncated)."""
    parts = id_token.split(".")
    if len(parts) != 3:
        raise OidcError("ID Token is not a valid JWT")
    payload = parts[1]
    if not _BASE64URL.fullmatch(payload):  # Go's RawURLEncoding: no padding, no other byte
        raise OidcError("ID Token is not a valid JWT: its claims are not base64url")
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError as exc:  # binascii.Error and orjson's decode error are ValueErrors
        raise OidcError(f"ID Token is not a valid JWT: {exc}") from None
    if not isinstance(claims, dict):
        raise OidcError("ID Token is not a valid JWT: its claims are not an object")
    exp = claims.get("exp", 0)
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise OidcError("ID Token is not a valid JWT: exp is not a number")
    return float(int(exp))


@dataclass
class OidcProvider:
    """The ``oidc`` provider of kubeconfig user ``user_name``, defined in file ``source``."""

    config: dict[str, str] = field(repr=False)  # its config (tokens!), updated by each refresh
    user_name: str
    source: str
    ca: ssl.SSLContext = field(repr=False, default_factory=ssl.create_default_context)
    _failed_at: float = field(default=float("-inf"), repr=False)
    # how the client's credentials go to the token endpoint, to try in turn: in the header,
    # then as form fields; once one works, that one alone (golang.org/x/oauth2's probe)
    _auth_styles: tuple[bool, ...] = field(default=(False, True), repr=False)

    @classmethod
    def parse(cls, provider: dict[str, Any], user_name: str, source: str) -> OidcProvider:
        config = provider.get("config") or {}
        if not isinstance(config, dict) or not all(
                isinstance(v, str) for v in config.values()):
            raise OidcError(f"user {user_name!r}: auth-provider config must be a map of strings")
        for required in ("idp-issuer-url", "client-id"):
            if not config.get(required):
                raise OidcError(f"Must provide {required}")
        ca = ssl.create_default_context()
        try:
            if config.get("idp-certificate-authority-data"):
                ca = ssl.create_default_context(cadata=decode_base64(
                    config["idp-certificate-authority-data"]).decode("ascii"))
            if config.get("idp-certificate-authority"):
                ca.load_verify_locations(cafile=config["idp-certificate-authority"])
        except (ValueError, OSError) as exc:  # bad base64; ssl.SSLError is an OSError
            raise OidcError(f"user {user_name!r}: the identity provider's CA: {exc}") from None
        return cls(dict(config), user_name, source, ca)

    @property
    def id_token(self) -> str:
        return self.config.get("id-token", "")

    def needs_refresh(self) -> bool:
        """Whether the id-token is missing or expires within :data:`EXPIRY_MARGIN`, and no
        refresh failed in the last :data:`RETRY_AFTER` seconds."""
        if self.id_token and expires_at(self.id_token) > time.time() + EXPIRY_MARGIN:
            return False
        return time.monotonic() - self._failed_at >= RETRY_AFTER

    async def refresh(self) -> None:
        """Buy a new id-token with the refresh token and write both back to the kubeconfig."""
        try:
            self.config = await self._refreshed()
        except OidcError:
            self._failed_at = time.monotonic()
            raise
        self._persist()

    async def _refreshed(self) -> dict[str, str]:
        refresh_token = self.config.get("refresh-token", "")
        if not refresh_token:
            raise OidcError("No valid id-token, and cannot refresh without refresh-token")
        try:
            answer = await self._grant(refresh_token)
        except (OidcError, aiohttp.ClientError, TimeoutError) as exc:
            raise OidcError(f"failed to refresh token: {str(exc) or type(exc).__name__}") from None
        id_token = answer.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise OidcError("token response did not contain an id_token, either the scope "
                            '"openid" wasn\'t requested upon login, or the provider doesn\'t '
                            "support id_tokens as part of the refresh response")
        expires_at(id_token)
        config = {**self.config, "id-token": id_token}
        if isinstance(answer.get("refresh_token"), str) and answer["refresh_token"]:
            config["refresh-token"] = answer["refresh_token"]
        return config

    async def _grant(self, refresh_token: str) -> dict[str, Any]:
        async with aiohttp.ClientSession(timeout=TIMEOUT, trust_env=True) as session:
            token_url = await self._token_endpoint(session)
            for params_auth in self._auth_styles:
                status, body, content_type = await self._post(
                    session, token_url, refresh_token, params_auth)
                if 200 <= status < 300:
                    self._auth_styles = (params_auth,)
                    return _token_answer(body, content_type)
            raise OidcError(f"oauth2: cannot fetch token: {status}\nResponse: "
                            f"{body[:200].decode('utf-8', 'replace')}")

    async def _token_endpoint(self, session: aiohttp.ClientSession) -> str:
        issuer = self.config["idp-issuer-url"].rstrip("/")
        async with session.get(f"{issuer}/.well-known/openid-configuration",
                               ssl=self.ca) as response:
            body = await response.read()
            if response.status != 200:
                shown = body[:80].decode("utf-8", "replace") + ("..." if len(body) > 80 else "")
                raise OidcError(f"oidc: failed to query metadata endpoint {response.status} "
                                f"{response.reason}: {shown!r}")
        try:
            metadata = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise OidcError(f"oidc: failed to decode provider discovery object: {exc}") from None
        token_url = metadata.get("token_endpoint") if isinstance(metadata, dict) else None
        if not isinstance(token_url, str) or not token_url:
            raise OidcError("oidc: discovery object doesn't contain a token_endpoint")
        return token_url

    async def _post(self, session: aiohttp.ClientSession, url: str, refresh_token: str,
                    params_auth: bool) -> tuple[int, bytes, str]:
        client_id, secret = self.config["client-id"], self.config.get("client-secret", "")
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if params_auth:
            form.update({"client_id": client_id, **({"client_secret": secret} if secret else {})})
        else:
            pair = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        async with session.post(url, data=form, headers=headers, ssl=self.ca) as response:
            return response.status, await response.read(), response.content_type

    def _persist(self) -> None:
        """Write the provider's config into the user's entry of its kubeconfig file, read
        again first (kubectl may have written it since)."""
        try:
            with open(self.source, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
            users = doc.get("users") if isinstance(doc, dict) else None
            user = next((u.get("user") for u in users or [] if isinstance(u, dict)
                         and u.get("name") == self.user_name), None)
            provider = user.get("auth-provider") if isinstance(user, dict) else None
            if not isinstance(provider, dict):
                raise OidcError("the user's auth-provider is no longer in the file")
            provider["config"] = dict(self.config)
            text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
            with open(self.source, "w", encoding="utf-8") as f:  # in place, as kubectl writes
                f.write(text)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, OidcError) as exc:
            _log.warning("refreshed OIDC tokens not written back to the kubeconfig; they live "
                         "in this process only", kubeconfig=self.source, user=self.user_name,
                         error=f"{type(exc).__name__}: {exc}")


def _token_answer(body: bytes, content_type: str) -> dict[str, Any]:
    """A token endpoint's answer: JSON, or a form as some providers send (oauth2's rule)."""
    if content_type in ("application/x-www-form-urlencoded", "text/plain"):
        answer: Any = dict(parse_qsl(body.decode("utf-8", "replace")))
    else:
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise OidcError(f"oauth2: cannot parse json: {exc}") from None
    if not isinstance(answer, dict) or not answer.get("access_token"):
        raise OidcError("oauth2: server response missing access_token")
    return dict(answer)

