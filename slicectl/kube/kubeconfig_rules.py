"""Which server, TLS settings and credential client-go takes from a kubeconfig's context.

kubernetes-asyncio's loader decides these its own way, and a review against kubectl v1.32 found
it sending a credential where kubectl sends another or none (RELIABILITY.md, "Found by a review
of kubeconfig handling against client-go"): an exec plugin run ahead of a static token, an
inline ``token`` sent instead of the ``tokenFile``'s, an empty ``certificate-authority-data``
that left the CA file unread and the system's CAs trusted, a removed ``gcp`` provider's cached
token sent, a user's relative certificate path taken from the cluster's file. So slicectl
decides here, as client-go's ``clientcmd`` and ``transport`` decide, and hands the loader only
what client-go would use (:func:`resolve`):

- Empty values are unset (client-go tests lengths); relative paths are their entry's file's.
- The server: a scheme in any case; none, and it is ``http://``; query and fragment dropped.
- Refused as kubectl refuses: CA file and data both, a CA with ``insecure-skip-tls-verify``,
  certificate (or key) file and data both, a certificate without a key, ``token`` with
  ``username``/``password``, a ``tokenFile`` with them, ``exec`` with ``auth-provider``, the
  removed ``gcp`` and ``azure`` providers and unknown ones.
- To a plain ``http://`` server the user's credentials are not read at all: no plugin runs.
- A static credential (token, token file, basic auth, client certificate) means the exec
  plugin never runs; a token or basic auth means the ``oidc`` provider's token is never sent.
- ``tokenFile`` wins over ``token`` and is read, trimmed, by the caller (and again each minute).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from slicectl.kube.kubeconfig_merge import Entry, Kubeconfig, KubeconfigError

_PATHS = {"cluster": ("certificate-authority",),
          "user": ("client-certificate", "client-key", "tokenFile")}
_REMOVED = {
    "gcp": 'The gcp auth plugin has been removed.\nPlease use the "gke-gcloud-auth-plugin" '
           "kubectl/client-go credential plugin instead.",
    "azure": "The azure auth plugin has been removed.\nPlease use the "
             "https://github.com/Azure/kubelogin kubectl/client-go credential plugin instead.",
}
# what the loader is handed of a user: the TLS client certificate and the exec plugin
_LOADER_USER_FIELDS = ("client-certificate", "client-certificate-data", "client-key",
                       "client-key-data", "exec")
_IMPERSONATION = ("as", "as-uid", "as-groups", "as-user-extra")


@dataclass(frozen=True)
class Resolved:
    """A context as client-go reads it."""

    server: str
    cluster: dict[str, Any]  # the cluster's fields, emptied ones unset, paths absolute
    cluster_directory: str
    user_name: str
    user: dict[str, Any]  # for the loader: certificate, and the exec plugin
    user_directory: str
    impersonation: dict[str, Any] = field(default_factory=dict)
    token: str = ""  # sent as is (no tokenFile)
    token_file: str = ""  # read, trimmed, re-read each minute; wins over ``token``
    basic: tuple[str, str] | None = None  # username, password
    oidc: dict[str, Any] | None = None  # the ``oidc`` auth provider, when its token is sent
    user_file: str = ""  # the file defining the user (an oidc provider's tokens go back there)


def resolve(config: Kubeconfig, context: str | None) -> Resolved:
    """The server and credential of ``context`` (default: the current one), as client-go."""
    name = context or config.current_context
    if not name:
        raise KubeconfigError("current-context is not set and no context was given")
    chosen = config.entries["context"].get(name)
    if chosen is None:
        raise KubeconfigError(f'context "{name}" does not exist')
    cluster_name = chosen.fields.get("cluster", "")
    cluster_entry = config.entries["cluster"].get(cluster_name)
    if cluster_entry is None:
        raise KubeconfigError(f'context "{name}": cluster "{cluster_name}" does not exist')
    cluster = _normalized(cluster_entry, "cluster")
    if not cluster.get("server"):
        raise KubeconfigError(f'no server found for cluster "{cluster_name}"')
    _check_cluster(cluster_name, cluster)
    user_name = chosen.fields.get("user", "")
    user_entry = config.entries["user"].get(user_name)  # none: anonymous, as client-go
    user = _normalized(user_entry, "user") if user_entry is not None else {}
    directory = user_entry.directory if user_entry is not None else cluster_entry.directory
    user_file = user_entry.file if user_entry is not None else ""
    server = normalized_server(cluster["server"])
    impersonation = {k: user[k] for k in _IMPERSONATION if k in user}
    if server.startswith("http://"):  # client-go reads no credential for a plain server
        return Resolved(server, cluster, cluster_entry.directory, user_name, {}, directory,
                        impersonation)
    _check_user(user_name, user)
    token, token_file = user.get("token", ""), user.get("tokenFile", "")
    # client-go's HasBasicAuth: a username (a password alone sends nothing, and lets the
    # exec plugin, the oidc provider or a token file be used)
    basic = (user["username"], user.get("password", "")) if user.get("username") else None
    if basic and token_file:
        raise KubeconfigError(f"user {user_name!r}: username/password or bearer token may be "
                              "set, but not both")
    loader_user = {k: user[k] for k in _LOADER_USER_FIELDS if k in user}
    if token or token_file or basic or "client-certificate" in user or (
            "client-certificate-data" in user):
        loader_user.pop("exec", None)  # client-go installs no plugin next to a static credential
    # the provider's round tripper yields to an Authorization header already set
    oidc = None if token or token_file or basic else user.get("auth-provider")
    return Resolved(server, cluster, cluster_entry.directory, user_name, loader_user, directory,
                    impersonation, token="" if token_file else token, token_file=token_file,
                    basic=basic, oidc=oidc, user_file=user_file)


def normalized_server(server: str) -> str:
    """``server`` as client-go's ``DefaultServerURL`` and ``ClientConfig`` make it."""
    parts = urlsplit(server)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc:
        parts, scheme = urlsplit("http://" + server), "http"
    return urlunsplit((scheme, parts.netloc, parts.path, "", "")).rstrip("/")


def _normalized(entry: Entry, kind: str) -> dict[str, Any]:
    fields = {k: v for k, v in entry.fields.items() if v not in ("", [], {})}
    for key in _PATHS.get(kind, ()):
        if key in fields and not os.path.isabs(fields[key]):
            fields[key] = os.path.normpath(os.path.join(entry.directory, fields[key]))
    return fields


def _check_cluster(name: str, cluster: dict[str, Any]) -> None:
    has_ca = "certificate-authority" in cluster or "certificate-authority-data" in cluster
    if "certificate-authority" in cluster and "certificate-authority-data" in cluster:
        raise KubeconfigError(f"certificate-authority-data and certificate-authority are both "
                              f"specified for {name}")
    if has_ca and cluster.get("insecure-skip-tls-verify") is True:
        raise KubeconfigError(f"cluster {name!r}: specifying a root certificates file with the "
                              "insecure flag is not allowed")


def _check_user(name: str, user: dict[str, Any]) -> None:
    methods = [m for m, present in (
        ("token", "token" in user),
        ("basicAuth", "username" in user or "password" in user)) if present]
    if len(methods) > 1:
        raise KubeconfigError(f"more than one authentication method found for {name}; found "
                              f"{methods}, only one is allowed")
    if "client-certificate" in user or "client-certificate-data" in user:
        if "client-certificate" in user and "client-certificate-data" in user:
            raise KubeconfigError(f"client-cert-data and client-cert are both specified for "
                                  f"{name}. client-cert-data will override.")
        if "client-key" in user and "client-key-data" in user:
            raise KubeconfigError(f"client-key-data and client-key are both specified for "
                                  f"{name}; client-key-data will override")
        if "client-key" not in user and "client-key-data" not in user:
            raise KubeconfigError(f"client-key-data or client-key must be specified for {name} "
                                  "to use the clientCert authentication method")
    provider = user.get("auth-provider")
    if provider is not None:
        if "exec" in user:
            raise KubeconfigError(f"authProvider cannot be provided in combination with an "
                                  f"exec plugin for {name}")
        provider_name = provider.get("name", "")
        if provider_name in _REMOVED:
            raise KubeconfigError(_REMOVED[provider_name])
        if provider_name != "oidc":
            raise KubeconfigError(f'no Auth Provider found for name "{provider_name}"')
