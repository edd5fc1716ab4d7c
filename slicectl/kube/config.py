"""Where the API server is and how to authenticate: kubeconfig or in-cluster service account.

Parsing kubeconfig (contexts, CA/cert data or files, tokens, exec plugins, auth providers) is
delegated to kubernetes-asyncio's loaders, which are imported lazily (they pull in the whole
generated client). What comes out is a :class:`Connection`: a base URL, an SSL context and an
``Authorization`` header source that re-reads a rotated service-account token and re-runs an
exec plugin whose credential expired. The data path never touches kubernetes-asyncio's models.

Lookup order: an explicit path, else ``$KUBECONFIG``, else in-cluster, else ``~/.kube/config``.
Credentials are never logged and never appear in a repr; :meth:`Connection.redact` removes them
from any text built from a server's answer.

TLS is verified by default. Skipping verification takes an explicit choice, either
``insecure_skip_tls_verify`` (``slicectl run --insecure-skip-tls-verify``) or the kubeconfig's
``insecure-skip-tls-verify: true``, and each logs a warning: a bearer token sent to an
unverified server is a token given to whoever answers.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

import structlog

_log = structlog.get_logger("slicectl.kube")
REDACTED = "REDACTED"

_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
_IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


class Connection:
    """A loaded client configuration: host, TLS and a refreshable credential."""

    def __init__(
        self, configuration: Any, loader: Any, in_cluster: bool,
        insecure_skip_tls_verify: bool = False,
    ) -> None:
        self._cfg = configuration  # kubernetes_asyncio Configuration; holds the credential
        self._loader = loader
        self._in_cluster = in_cluster
        self._secrets: set[str] = set()  # every credential value sent so far, for redact()
        self.host: str = str(configuration.host).rstrip("/")
        self.server_hostname: str | None = getattr(configuration, "tls_server_name", None)
        self.proxy: str | None = getattr(configuration, "proxy", None) or None
        if insecure_skip_tls_verify:
            configuration.verify_ssl = False
            _log.warning("TLS verification of the API server is disabled "
                         "(--insecure-skip-tls-verify): anyone on the path can read the token",
                         host=self.host)
        elif self.host.startswith("https") and not configuration.verify_ssl:
            _log.warning("TLS verification of the API server is disabled by the kubeconfig "
                         "(insecure-skip-tls-verify: true): anyone on the path can read the token",
                         host=self.host)
        self.ssl: ssl.SSLContext | bool = _ssl_context(configuration, self.host)

    def __repr__(self) -> str:
        return f"Connection(host={self.host!r}, in_cluster={self._in_cluster})"

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value, refreshed when its source rotated or expired."""
        if self._exec_credential_expired():
            await self.refresh()
        value = await self._cfg.get_api_key_with_prefix("BearerToken")
        if not value and self._cfg.username and self._cfg.password:
            value = self._cfg.get_basic_auth_token()
        if not value:
            return None
        header = str(value)
        if header not in self._secrets:
            self._secrets.add(header)
            _, _, credential = header.partition(" ")
            if credential.strip():
                self._secrets.add(credential.strip())
        return header

    def redact(self, text: str) -> str:
        """``text`` with every credential this connection has sent replaced by REDACTED."""
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    async def refresh(self) -> None:
        """Force a new credential (after a 401): re-read the token file, re-run the plugin."""
        loader = self._loader
        if loader is None:
            return
        if self._in_cluster:
            loader._read_token_file()
        elif "exec" in (loader._user or {}):
            if hasattr(loader, "exec_plugin_expiry"):
                del loader.exec_plugin_expiry
            await loader.load_from_exec_plugin()
        else:
            return
        if getattr(loader, "token", None):
            self._cfg.api_key["BearerToken"] = loader.token

    def _exec_credential_expired(self) -> bool:
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        if expiry is None or self._in_cluster:
            return False
        from kubernetes_asyncio.config.kube_config import _is_expired

        return bool(_is_expired(expiry))


async def load_connection(
    kubeconfig: str | None = None, context: str | None = None, *,
    insecure_skip_tls_verify: bool = False,
) -> Connection:
    """Load the configuration in kubectl's order (see the module docstring)."""
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader
    from kubernetes_asyncio.config.kube_config import load_kube_config

    cfg = Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if not path and os.environ.get("KUBERNETES_SERVICE_HOST"):
        loader: Any = InClusterConfigLoader(
            token_filename=_IN_CLUSTER_TOKEN, cert_filename=_IN_CLUSTER_CA, try_refresh_token=True
        )
        loader.load_and_set(cfg)
        return Connection(cfg, loader, in_cluster=True,
                          insecure_skip_tls_verify=insecure_skip_tls_verify)
    path = path or _home_kubeconfig()
    loader = await load_kube_config(
        config_file=path, context=context, client_configuration=cfg, persist_config=False
    )
    return Connection(cfg, loader, in_cluster=False,
                      insecure_skip_tls_verify=insecure_skip_tls_verify)


def _home_kubeconfig() -> str:
    return os.path.expanduser("~/.kube/config")


def _ssl_context(cfg: Any, host: str) -> ssl.SSLContext | bool:
    if not host.startswith("https"):
        return True  # plain HTTP: aiohttp ignores TLS settings
    if cfg.verify_ssl:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    return ctx
