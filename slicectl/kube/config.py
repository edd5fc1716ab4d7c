"""Where the API server is and how to authenticate: kubeconfig or in-cluster service account.

In a pod (the production case) there is nothing to parse, only two files and two variables, so
:class:`ServiceAccount` reads them as client-go's ``rest.InClusterConfig`` does and
kubernetes-asyncio is never imported. A kubeconfig is read, merged and resolved as kubectl
resolves it, by slicectl's own rules (:mod:`slicectl.kube.kubeconfig_merge`,
:mod:`slicectl.kube.kubeconfig_rules`): the server, TLS settings and the one credential
client-go would use. kubernetes-asyncio's loader is then handed only that context, for what it
still does (CA and certificate data to files), imported without the generated API
client it would pull in, about 33 MB of RSS (:mod:`slicectl.kube.kubeconfig_import`). An exec
plugin runs as client-go runs it (:mod:`slicectl.kube.exec_credential`), and so does the
``oidc`` auth provider (:mod:`slicectl.kube.oidc`); a token, token file or basic auth is sent by
slicectl itself (:mod:`slicectl.kube.static_credentials`). What comes out is a
:class:`~slicectl.kube.connection.Connection`.

Lookup order: an explicit path, else ``$KUBECONFIG``, else in-cluster, else ``~/.kube/config``.
The proxy, if any, is the kubeconfig cluster's ``proxy-url`` or the environment's, chosen as
client-go chooses it (:mod:`slicectl.kube.proxy`). A kubeconfig user's impersonation (``as``
...) becomes headers on every request (:mod:`slicectl.kube.impersonation`). Answers are asked
for gzip-encoded, as client-go asks, unless the cluster says ``disable-compression: true`` (or
``--disable-compression``). The CA file and a client certificate and key given as files are
read again as they rotate (:mod:`slicectl.kube.tls_files`). TLS is verified unless
``insecure_skip_tls_verify`` (``slicectl run --insecure-skip-tls-verify``) or the kubeconfig's
``insecure-skip-tls-verify: true`` says otherwise, each with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from slicectl.kube.connection import REMEMBERED_CREDENTIALS, ConfigError, Connection
from slicectl.kube.exec_credential import ExecPluginError, Plugin, cluster_info
from slicectl.kube.exec_credential import run as run_plugin
from slicectl.kube.impersonation import ImpersonationError
from slicectl.kube.impersonation import headers as impersonation_headers
from slicectl.kube.kubeconfig_import import kube_config_api
from slicectl.kube.kubeconfig_merge import KubeconfigError, merged
from slicectl.kube.kubeconfig_rules import Resolved, resolve
from slicectl.kube.oidc import OidcError, OidcProvider
from slicectl.kube.static_credentials import StaticCredential, TokenFile, TokenFileError

__all__ = ["REMEMBERED_CREDENTIALS", "ConfigError", "Connection", "ServiceAccount",
           "load_connection"]

_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
_IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


class ServiceAccount:
    """In-cluster settings: ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``, the
    mounted CA and the mounted token, re-read every minute (the kubelet rotates projected tokens
    well before they expire) and on demand after a 401. It offers the few attributes of
    kubernetes-asyncio's ``Configuration`` that :class:`Connection` reads."""

    verify_ssl = True
    cert_file: str | None = None
    key_file: str | None = None
    tls_server_name: str | None = None
    proxy: str | None = None

    def __init__(self, environ: Mapping[str, str], token_file: str, ca_file: str) -> None:
        host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise ConfigError("in-cluster config: KUBERNETES_SERVICE_HOST and "
                              "KUBERNETES_SERVICE_PORT must both be set and not empty")
        self.host = f"https://[{host}]:{port}" if ":" in host or "%" in host else (
            f"https://{host}:{port}")
        if not os.path.isfile(ca_file) or os.path.getsize(ca_file) == 0:
            raise ConfigError(f"in-cluster config: the CA file {ca_file} is missing or empty")
        self.ssl_ca_cert = ca_file
        try:
            self._token = TokenFile(token_file)
        except TokenFileError as exc:
            raise ConfigError(f"in-cluster config: {exc}") from None

    def reread(self) -> None:
        """Read the token file again (after a 401); a failure keeps the last token."""
        self._token.reread()

    async def get_api_key_with_prefix(self, _name: str) -> str:
        return f"Bearer {self._token.current()}"


async def load_connection(
    kubeconfig: str | None = None, context: str | None = None, *,
    insecure_skip_tls_verify: bool = False, disable_compression: bool = False,
) -> Connection:
    """Load the configuration in kubectl's order (see the module docstring)."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if not path and os.environ.get("KUBERNETES_SERVICE_HOST"):
        account = ServiceAccount(os.environ, _IN_CLUSTER_TOKEN, _IN_CLUSTER_CA)
        return Connection(account, account, in_cluster=True,
                          insecure_skip_tls_verify=insecure_skip_tls_verify,
                          disable_compression=disable_compression,
                          tls_files=() if insecure_skip_tls_verify else (_IN_CLUSTER_CA,))
    path = _kubeconfig_path(path)
    configuration, config_exception, kube_config = kube_config_api()
    cfg = configuration()
    try:
        chosen = resolve(merged(path), context)
        static = _static(chosen)
        oidc = await _oidc(chosen)
        impersonation = impersonation_headers(chosen.impersonation, chosen.user_name)
        disable_compression = (disable_compression
                               or chosen.cluster.get("disable-compression") is True)
        loader = kube_config.KubeConfigLoader(config_dict=_one_context(chosen),
                                              config_base_path=None)
        _exec_plugin_as_client_go(loader, kube_config.FileOrData, chosen, insecure=(
            insecure_skip_tls_verify or chosen.cluster.get("insecure-skip-tls-verify") is True),
            disable_compression=disable_compression)
        await loader.load_and_set(cfg)
    except Exception as exc:  # a plugin that failed, a file that is not there ...: one error
        known = (config_exception, ExecPluginError, KubeconfigError, ImpersonationError,
                 TokenFileError, OidcError, OSError)
        detail = str(exc) if isinstance(exc, known) else f"{type(exc).__name__}: {exc}"
        raise ConfigError(f"kubeconfig {path}: {detail}") from exc
    return Connection(cfg, loader, in_cluster=False,
                      insecure_skip_tls_verify=insecure_skip_tls_verify,
                      disable_compression=disable_compression, static=static,
                      impersonation=impersonation, oidc=oidc,
                      tls_files=_tls_files(chosen, insecure_skip_tls_verify))


def _static(chosen: Resolved) -> StaticCredential | None:
    """The user's token, token file or basic auth, if client-go would send one."""
    if not (chosen.token or chosen.token_file or chosen.basic):
        return None
    token_file = TokenFile(chosen.token_file) if chosen.token_file else None
    return StaticCredential(chosen.token, token_file, chosen.basic)


def _tls_files(chosen: Resolved, insecure: bool) -> tuple[str, ...]:
    """The files client-go reads again as they rotate (:mod:`slicectl.kube.tls_files`): the CA
    file, when given as a file and verified against, and the client certificate and key when
    both are files."""
    files = []
    if not insecure and chosen.cluster.get("insecure-skip-tls-verify") is not True and (
            "certificate-authority" in chosen.cluster):
        files.append(chosen.cluster["certificate-authority"])
    if "client-certificate" in chosen.user and "client-key" in chosen.user:
        files += [chosen.user["client-certificate"], chosen.user["client-key"]]
    return tuple(files)


async def _oidc(chosen: Resolved) -> OidcProvider | None:
    """The user's ``oidc`` provider, its id-token refreshed now if it has none valid: a refresh
    token that no longer works is a clear error at start, not a 401 later."""
    if chosen.oidc is None:
        return None
    provider = OidcProvider.parse(chosen.oidc, chosen.user_name, chosen.user_file)
    if provider.needs_refresh():
        await provider.refresh()
    return provider


def _one_context(chosen: Resolved) -> dict[str, Any]:
    """A kubeconfig of the chosen context alone, its paths absolute, for kubernetes-asyncio's
    loader: the cluster, and of the user only what the loader still does for it."""
    return {"current-context": "slicectl",
            "clusters": [{"name": "slicectl",
                          "cluster": {**chosen.cluster, "server": chosen.server}}],
            "users": [{"name": chosen.user_name or "slicectl", "user": chosen.user}],
            "contexts": [{"name": "slicectl", "context": {
                "cluster": "slicectl", "user": chosen.user_name or "slicectl"}}]}


def _exec_plugin_as_client_go(loader: Any, file_or_data: Any, chosen: Resolved, *,
                              insecure: bool, disable_compression: bool) -> None:
    """Run the kubeconfig user's exec plugin, if client-go would run it, as client-go runs it
    (:mod:`slicectl.kube.exec_credential`) in place of kubernetes-asyncio's runner, which
    provides no cluster info, passes the controller's standard input and takes any version."""
    config = chosen.user.get("exec")
    if not isinstance(config, dict):
        return
    plugin = Plugin.parse(config, chosen.user_name, chosen.user_directory)
    cluster = {**chosen.cluster, "server": chosen.server}
    if insecure:  # kubectl's --insecure-skip-tls-verify clears the CA, so the plugin gets none
        cluster = {k: v for k, v in cluster.items() if not k.startswith("certificate-authority")}
    info = cluster_info(cluster, chosen.cluster_directory, insecure=insecure,
                        disable_compression=disable_compression) if (
        plugin.provide_cluster_info) else None

    async def load_from_exec_plugin() -> bool:
        credential = await run_plugin(plugin, info)
        if credential.expires is not None:
            loader.exec_plugin_expiry = credential.expires
        elif hasattr(loader, "exec_plugin_expiry"):
            del loader.exec_plugin_expiry
        if credential.token:
            loader.token = f"Bearer {credential.token}"
        if credential.certificate:  # to files named after their content, as the loader does
            pair = {"certificate": credential.certificate, "key": credential.key}
            loader.cert_file, loader.key_file = (
                file_or_data(pair, None, data_key_name=name, base64_file_content=False).as_file()
                for name in ("certificate", "key"))
        return True

    loader.load_from_exec_plugin = load_from_exec_plugin


def _home_kubeconfig() -> str:
    return os.path.expanduser("~/.kube/config")


def _kubeconfig_path(path: str | None) -> str:
    """The kubeconfig to load (``path``, a list as ``$KUBECONFIG`` has, or the home one);
    ConfigError when none of its files exists: kubernetes-asyncio would read that as an empty
    kubeconfig ("Expected key current-context"), pointing into a file that is not there."""
    if not path:
        home = _home_kubeconfig()
        if not os.path.exists(home):
            raise ConfigError("not in a cluster (KUBERNETES_SERVICE_HOST is not set), no "
                              f"--kubeconfig or $KUBECONFIG given, and no {home}")
        return home
    if not any(os.path.exists(os.path.expanduser(p)) for p in path.split(os.pathsep) if p):
        raise ConfigError(f"kubeconfig {path}: no such file")
    return path
