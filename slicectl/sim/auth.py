"""Who may talk to the embedded server, and the kubeconfig that says how.

Decides authentication: a request needs ``Authorization: Bearer <token>`` with the server's
token, except the health and version endpoints, which real clusters expose to anonymous
clients. A request that asks to impersonate is refused (403): there is no other identity.
The kubeconfig written for a server carries its URL, CA (certificate-authority-data) and token
under one context named ``slicectl-sim``, usable by kubectl and kubernetes-asyncio.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from collections.abc import Mapping
from pathlib import Path

import yaml

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/livez", "/version"})
CONTEXT = "slicectl-sim"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def authorized(path: str, header: str, token: str) -> bool:
    if path in OPEN_PATHS or path.startswith(("/healthz/", "/readyz/", "/livez/")):
        return True
    scheme, _, presented = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip(), token)


def impersonated(headers: Mapping[str, str]) -> str | None:
    """The user a request asks to act as (``Impersonate-*`` headers), if it asks: this server
    has one identity and no way to take another, so such a request is refused (a real one
    would act as that user, with that user's permissions), never served as its sender."""
    if not any(k.lower().startswith("impersonate-") for k in headers):
        return None
    return headers.get("Impersonate-User") or ""


def write_kubeconfig(path: Path, url: str, ca_pem: bytes, token: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT,
                                                   "namespace": "default"}}],
        "current-context": CONTEXT,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
