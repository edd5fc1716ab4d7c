"""A kubeconfig user's ``as`` fields reach a real API server as impersonation: the server's
own account of who is asking (a SelfSubjectReview) names the impersonated identity.

The embedded server has a single identity: it refuses impersonation with a 403, which is what
the client must then see (never an answer as the kubeconfig's own user). The headers themselves
are checked in ``tests/unit/test_impersonation.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import Forbidden
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.credentials import token_of, user_kubeconfig

REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


async def test_the_server_sees_the_impersonated_identity(api: Cluster, tmp_path: Path) -> None:
    token = token_of(api.kubeconfig)
    if token is None:
        pytest.skip("the cluster's kubeconfig user has no token to base the test's user on")
    who = f"system:serviceaccount:{api.namespace}:nobody"
    user = {"token": token, "as": who, "as-groups": ["slicectl-test-group"],
            "as-user-extra": {"example.com/reason": ["impersonation test"]}}
    kubeconfig = user_kubeconfig(api.kubeconfig, user, tmp_path / "kc")
    async with await KubeClient.connect(kubeconfig) as client:
        if not api.real:
            with pytest.raises(Forbidden, match=f'users "{who}" is forbidden'):
                await client.list(PODS, api.namespace)
            return
        review = await client.request("POST", REVIEWS, json={
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        info = review["status"]["userInfo"]
        assert info["username"] == who
        assert "slicectl-test-group" in info["groups"]
        assert info["extra"] == {"example.com/reason": ["impersonation test"]}
        with pytest.raises(Forbidden, match="nobody"):  # the account has no role at all
            await client.list(PODS, api.namespace)
