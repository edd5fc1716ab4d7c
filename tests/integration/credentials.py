"""Credentials on the API server under test: ServiceAccount tokens and kubeconfigs made from them.

A real cluster enforces authentication and RBAC, so tests that need "a client with only these
permissions" or "a client whose credentials are refused" build a kubeconfig for the same server
with another bearer token. The token comes from the TokenRequest API for a ServiceAccount in the
test's namespace (what a pod's projected token is), so nothing outlives the namespace.
"""

from __future__ import annotations

import base64
import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import yaml

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import AlreadyExists, NotFound
from slicectl.kube.resources import Resource
from tests.integration.support import SERVICEACCOUNTS, serves

if TYPE_CHECKING:
    from tests.integration.conftest import Cluster


async def service_account_token(client: KubeClient, ns: str, name: str) -> str:
    """A token for ServiceAccount ``ns/name`` (created if missing), from the TokenRequest API."""
    with contextlib.suppress(AlreadyExists):
        await client.create(SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                              "metadata": {"name": name}}, ns)
    review = await client.request(
        "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}})
    token: str = review["status"]["token"]
    return token


def token_kubeconfig(kubeconfig: str, token: str, path: Path) -> str:
    """A kubeconfig for the same server as ``kubeconfig``'s current context, as ``token``."""
    return user_kubeconfig(kubeconfig, {"token": token}, path)


def user_kubeconfig(kubeconfig: str, user: dict[str, Any], path: Path) -> str:
    """A kubeconfig for the same server as ``kubeconfig``'s current context, with the kubeconfig
    user ``user`` (a token, an exec plugin, ...)."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    current = doc.get("current-context") or doc["contexts"][0]["name"]
    context = next(c["context"] for c in doc["contexts"] if c["name"] == current)
    cluster = next(c for c in doc["clusters"] if c["name"] == context["cluster"])
    out = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster],
           "users": [{"name": "token-user", "user": user}],
           "contexts": [{"name": "token", "context": {"cluster": cluster["name"],
                                                      "user": "token-user"}}],
           "current-context": "token"}
    path.write_text(yaml.safe_dump(out))
    path.chmod(0o600)
    return str(path)


def with_cluster(source: str, path: Path, values: dict[str, Any],
                 defaults: dict[str, Any] | None = None) -> str:
    """``source`` written to ``path`` (0600) with its current context's cluster fields
    ``values`` set, and ``defaults`` set where the cluster has none."""
    doc = yaml.safe_load(Path(source).read_text())
    current = doc.get("current-context") or doc["contexts"][0]["name"]
    context = next(c["context"] for c in doc["contexts"] if c["name"] == current)
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
    cluster.update(values)
    for key, value in (defaults or {}).items():
        cluster.setdefault(key, value)
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return str(path)


def token_of(kubeconfig: str) -> str | None:
    """The bearer token of the current context's user, if it has one."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    current = doc.get("current-context") or doc["contexts"][0]["name"]
    context = next(c["context"] for c in doc["contexts"] if c["name"] == current)
    user = next(u["user"] for u in doc["users"] if u["name"] == context["user"])
    token = user.get("token")
    return str(token) if token else None


def current_cluster(kubeconfig: str) -> dict[str, Any]:
    """The current context's cluster entry (``server``, CA, ...), as the kubeconfig has it."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    current = doc.get("current-context") or doc["contexts"][0]["name"]
    context = next(c["context"] for c in doc["contexts"] if c["name"] == current)
    cluster: dict[str, Any] = next(
        c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
    return cluster


def server_ca_and_address(kubeconfig: str) -> tuple[bytes | None, str, int]:
    """The current context's CA certificate (PEM, None if absent), host and port."""
    cluster = current_cluster(kubeconfig)
    ca: bytes | None = None
    if cluster.get("certificate-authority-data"):
        ca = base64.b64decode(cluster["certificate-authority-data"])
    elif cluster.get("certificate-authority"):
        ca = Path(cluster["certificate-authority"]).read_bytes()
    url = urlsplit(cluster["server"])
    assert url.hostname is not None
    return ca, url.hostname, url.port or 443


_RBAC = "rbac.authorization.k8s.io"
RBAC_KINDS = {
    "ServiceAccount": SERVICEACCOUNTS,
    "Role": Resource(_RBAC, "v1", "roles", True, "Role"),
    "RoleBinding": Resource(_RBAC, "v1", "rolebindings", True, "RoleBinding"),
    "ClusterRole": Resource(_RBAC, "v1", "clusterroles", False, "ClusterRole"),
    "ClusterRoleBinding": Resource(_RBAC, "v1", "clusterrolebindings", False, "ClusterRoleBinding"),
}


@contextlib.asynccontextmanager
async def chart_identity(
    client: KubeClient, ns: str, docs: list[dict[str, Any]]
) -> AsyncIterator[str]:
    """A token of the chart's ServiceAccount in ``ns``, bound by the chart's own roles.

    ``docs`` is the chart rendered for namespace ``ns``; its ServiceAccount, Roles, ClusterRoles
    and bindings are created as rendered, except that cluster-wide names get ``-<ns>`` appended
    (several test sessions may share the cluster). Cluster-wide objects go on exit.
    """
    created: list[tuple[Resource, str]] = []
    account = ""
    try:
        for doc in docs:
            kind = doc.get("kind", "")
            if kind not in RBAC_KINDS:
                continue
            body = copy.deepcopy(doc)
            resource = RBAC_KINDS[kind]
            if not resource.namespaced:
                body["metadata"]["name"] = f"{body['metadata']['name']}-{ns}"
            if body.get("roleRef", {}).get("kind") == "ClusterRole":
                body["roleRef"]["name"] = f"{body['roleRef']['name']}-{ns}"
            if kind == "ServiceAccount":
                account = body["metadata"]["name"]
            await client.create(resource, body, ns if resource.namespaced else None)
            if not resource.namespaced:
                created.append((resource, body["metadata"]["name"]))
        assert account, "the chart renders no ServiceAccount"
        yield await service_account_token(client, ns, account)
    finally:
        for resource, name in reversed(created):
            with contextlib.suppress(NotFound):
                await client.delete(resource, name)


async def valid_token(api: Cluster) -> str:
    """A bearer token the server accepts that may list and watch pods in the test's namespace."""
    if api.server is not None:
        return api.server.token
    if not await serves(api.client, "v1", "serviceaccounts"):  # an embedded server: no RBAC
        token = token_of(api.kubeconfig)
        assert token, "the kubeconfig has no bearer token and the server no ServiceAccounts"
        return token
    token = await service_account_token(api.client, api.namespace, "reader")
    rbac = {"apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {"name": "reader"}}
    await api.client.create(RBAC_KINDS["Role"], {**rbac, "kind": "Role", "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]}, api.namespace)
    await api.client.create(RBAC_KINDS["RoleBinding"], {
        **rbac, "kind": "RoleBinding",
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": api.namespace}],
    }, api.namespace)
    return token
