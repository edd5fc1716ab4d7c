"""A kubeconfig user with the ``oidc`` auth provider, against the API server under test.

The identity provider (tests/identity_provider.py) hands out, as the refreshed id-token, a token
the server accepts: the embedded server's own (made a JWT here), or on a real cluster a
ServiceAccount token, which is one. What is checked is end to end: the expired id-token in the
kubeconfig is never sent, the refreshed one is, and the rotated refresh token is in the file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import PODS
from tests.identity_provider import IdentityProvider, fresh_jwt, jwt
from tests.integration.conftest import Cluster
from tests.integration.credentials import user_kubeconfig, valid_token


@pytest.fixture
def embedded_options() -> dict[str, Any]:
    return {"token": fresh_jwt(7200.0, sub="system:admin")}  # an id-token may be sent as is


def _user(idp: IdentityProvider, id_token: str) -> dict[str, Any]:
    return {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": idp.url, "client-id": "slicectl", "id-token": id_token,
        "refresh-token": "rt-1"}}}


def _written(path: str) -> dict[str, str]:
    """The provider config in the kubeconfig file now."""
    doc = yaml.safe_load(Path(path).read_text())
    return dict(doc["users"][0]["user"]["auth-provider"]["config"])


async def test_an_expired_id_token_is_refreshed_before_it_is_sent(
    api: Cluster, tmp_path: Path,
) -> None:
    token = await valid_token(api)
    sent: list[int] = []
    async with IdentityProvider() as idp:
        idp.answer(access_token="at", id_token=token, refresh_token="rt-2")
        path = user_kubeconfig(api.kubeconfig, _user(idp, jwt(1)), tmp_path / "kc")
        async with await KubeClient.connect(
            path, on_request=lambda v, r, s, t: sent.append(s)) as client:
            await client.list(PODS, api.namespace)
    assert sent == [200]  # no request went out with the expired token
    config = _written(path)
    assert (config["id-token"], config["refresh-token"]) == (token, "rt-2")


async def test_a_refused_id_token_is_refreshed_once_and_the_requests_resent(
    api: Cluster, tmp_path: Path,
) -> None:
    """An id-token the server refuses though it has not expired (its signing key rotated, say):
    the 401s of every request in flight take one refresh, and each is sent again. client-go
    would send the refused token until it expires."""
    token = await valid_token(api)
    statuses: list[int] = []
    async with IdentityProvider() as idp:
        idp.answer(access_token="at", id_token=token)
        path = user_kubeconfig(api.kubeconfig, _user(idp, fresh_jwt()), tmp_path / "kc")
        async with await KubeClient.connect(
            path, on_request=lambda v, r, s, t: statuses.append(s)) as client:
            await asyncio.gather(*(client.list(PODS, api.namespace) for _ in range(5)))
    assert len(idp.grants) == 1
    assert sorted(statuses) == [200] * 5 + [401] * 5
