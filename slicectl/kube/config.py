"""Where the API server is and how to authenticate: kubeconfig or in-cluster service account.

Parsing kubeconfig (contexts, CA/cert data or files, tokens, exec plugins, auth providers) is
delegated to kubernetes-asyncio's loaders, imported only when a kubeconfig is used and then
without the generated API client the package would pull in with them, about 33 MB of RSS that
slicectl never uses (:mod:`slicectl.kube.kubeconfig_import`). In a pod (the production case)
there is nothing to parse, only two files and two variables, so :class:`ServiceAccount` reads
them as client-go's ``rest.InClusterConfig`` does and kubernetes-asyncio is never imported. What
comes out is a :class:`Connection`: a base URL, an SSL context and an ``Authorization`` header
source that re-reads a rotated service-account token (every minute, and after a 401), and renews
a kubeconfig user's credential (exec plugin, ``tokenFile``, OIDC) once it expired or was
refused, one renewal for all the requests waiting on it. The data path never touches
kubernetes-asyncio's models.

Lookup order: an explicit path, else ``$KUBECONFIG``, else in-cluster, else ``~/.kube/config``.
A list of files is merged as kubectl merges it (:mod:`slicectl.kube.kubeconfig_merge`).
The proxy, if any, is the kubeconfig cluster's ``proxy-url`` or the environment's, chosen as
client-go chooses it (:mod:`slicectl.kube.proxy`); a ``proxy-url`` client-go would refuse is a
:class:`ConfigError`. A kubeconfig user's impersonation (``as`` ...) becomes headers on every
request (:mod:`slicectl.kube.impersonation`). An exec plugin runs as client-go runs it,
``provideClusterInfo`` and ``interactiveMode`` included (:mod:`slicectl.kube.exec_credential`).
Answers are asked for gzip-encoded, as client-go asks, unless the cluster says
``disable-compression: true`` (or ``--disable-compression``).
Credentials are never logged and never appear in a repr; :meth:`Connection.redact` removes them
from any text built from a server's answer.

TLS is verified by default. Skipping verification takes an explicit choice, either
``insecure_skip_tls_verify`` (``slicectl run --insecure-skip-tls-verify``) or the kubeconfig's
``insecure-skip-tls-verify: true``, and each logs a warning: a bearer token sent to an
unverified server is a token given to whoever answers. To a plain ``http://`` server no
credential is sent at all (with a warning), as client-go reads a kubeconfig user only for a TLS
server.
"""

from __future__ import annotations

import asyncio
import math
import os
import ssl
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from slicectl.kube.exec_credential import ExecPluginError, Plugin, cluster_info
from slicectl.kube.exec_credential import run as run_plugin
from slicectl.kube.impersonation import ImpersonationError
from slicectl.kube.impersonation import headers as impersonation_headers
from slicectl.kube.kubeconfig_import import kube_config_api
from slicectl.kube.kubeconfig_merge import KubeconfigError, merged
from slicectl.kube.proxy import Proxy, ProxyError
from slicectl.kube.proxy import choose as choose_proxy

_log = structlog.get_logger("slicectl.kube")
REDACTED = "REDACTED"

_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
_IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
_TOKEN_REREAD = 60.0  # seconds a read service-account token is used before reading it again
# Credentials remembered for redaction, newest first: a rotated one is only in requests sent
# just before the rotation; every rotation kept (hourly in a pod, more often with some exec
# plugins) grew the set for the life of the process, and each API error was searched for all.
REMEMBERED_CREDENTIALS = 4


class ConfigError(Exception):
    """The configuration cannot be loaded (missing variables, unreadable or empty files)."""


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
    username: str | None = None
    password: str | None = None

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
        self._token_file = token_file
        self._token = ""
        self._read_at = -math.inf
        self.read_token()

    def read_token(self) -> None:
        """Read the token file now (it must exist and not be empty)."""
        try:
            with open(self._token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            raise ConfigError(f"in-cluster config: cannot read the token file "
                              f"{self._token_file}: {exc.strerror}") from exc
        if not token:
            raise ConfigError(f"in-cluster config: the token file {self._token_file} is empty")
        self._token, self._read_at = token, time.monotonic()

    def reread(self) -> None:
        """Read the token file again; if that fails, keep the last token until the next try
        (a 401 will say whether it is stale)."""
        try:
            self.read_token()
        except ConfigError as exc:
            _log.warning("service-account token not re-read", error=str(exc))
            self._read_at = time.monotonic()

    async def get_api_key_with_prefix(self, _name: str) -> str:
        if time.monotonic() - self._read_at >= _TOKEN_REREAD:
            self.reread()
        return f"Bearer {self._token}"

    def get_basic_auth_token(self) -> None:
        return None


class Connection:
    """A loaded client configuration: host, TLS and a refreshable credential."""

    def __init__(
        self, configuration: Any, loader: Any, in_cluster: bool,
        insecure_skip_tls_verify: bool = False, disable_compression: bool = False,
    ) -> None:
        self._cfg = configuration  # kubernetes_asyncio Configuration; holds the credential
        self._loader = loader
        self._in_cluster = in_cluster
        # the last REMEMBERED_CREDENTIALS credentials sent (header, and the bare credential),
        # oldest first, for redact()
        self._secrets: dict[str, None] = {}
        self._renewal: asyncio.Future[None] | None = None  # the credential renewal under way
        self.host: str = str(configuration.host).rstrip("/")
        self.server_hostname: str | None = getattr(configuration, "tls_server_name", None)
        self.proxy = _proxy(getattr(configuration, "proxy", None), self.host)
        self.impersonation = [] if in_cluster else _impersonation(loader)
        # whether answers may come gzip-encoded (client-go's default); a cluster's
        # ``disable-compression: true`` or ``--disable-compression`` asks for them as they are
        self.compression = not disable_compression
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
        self._plain_http = not self.host.startswith("https")
        if self._plain_http:
            _log.warning("the API server is plain HTTP: no credentials are sent to it "
                         "(as kubectl)", host=self.host)
        # bumped when a renewal brings a new client certificate: connections made with the
        # old one must go (client-go closes them all), which the client sees by this number
        self.identity = 0

    def __repr__(self) -> str:
        return f"Connection(host={self.host!r}, in_cluster={self._in_cluster})"

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value, renewed first if an exec credential expired;
        None for a plain HTTP server (anyone on the path would read it)."""
        if self._plain_http:
            return None
        if self._exec_credential_expired():
            await self.refresh()
        header = await self._header()
        if header is not None and header not in self._secrets:
            self._remember(header)
        return header

    def _remember(self, header: str) -> None:
        _, _, credential = header.partition(" ")
        values = [header, credential.strip()] if credential.strip() else [header]
        self._secrets.update(dict.fromkeys(values))
        while len(self._secrets) > 2 * REMEMBERED_CREDENTIALS:
            del self._secrets[next(iter(self._secrets))]

    def redact(self, text: str) -> str:
        """``text`` with every credential this connection has sent replaced by REDACTED."""
        secrets = [*self._secrets, *([self.proxy.password] if self.proxy and
                                      self.proxy.password else [])]
        for secret in sorted(secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    async def refresh(self, refused: str | None = None) -> None:
        """Renew the credential: re-read the token file (in-cluster, or a kubeconfig's
        ``tokenFile``), re-run the exec plugin, refresh an OIDC token.

        ``refused`` is the header a server answered 401 to: if the credential has changed since,
        that request is simply sent again. Callers that arrive while a renewal runs wait for it
        instead of starting their own, so an expiry or a burst of 401s costs one plugin run. A
        renewal that fails is logged and the last credential kept: the server says whether it
        still works, and a request never fails on the renewal itself.
        """
        if refused is not None and refused != await self._header():
            return
        if self._renewal is None:
            self._renewal = asyncio.ensure_future(self._renew())
            self._renewal.add_done_callback(self._renewed)
        await asyncio.shield(self._renewal)  # a waiter cancelled leaves it to the others

    def _renewed(self, renewal: asyncio.Future[None]) -> None:
        if self._renewal is renewal:
            self._renewal = None

    async def _renew(self) -> None:
        loader = self._loader
        if self._in_cluster:
            loader.reread()
            return
        if hasattr(loader, "exec_plugin_expiry"):
            del loader.exec_plugin_expiry
        try:  # the kubeconfig user again: the plugin re-run, a tokenFile re-read, OIDC refreshed
            await loader._load_authentication()
        except Exception as exc:  # whatever the plugin did, keep the last credential
            _log.warning("credential not renewed; the last one is kept",
                         error=self.redact(str(exc)))
            return
        if getattr(loader, "token", None):
            self._cfg.api_key["BearerToken"] = loader.token
        self._take_client_certificate(loader)

    def _take_client_certificate(self, loader: Any) -> None:
        """An exec plugin may hand out a client certificate instead of a token (it lands in a
        file named after its content): new handshakes present it from now on."""
        cert, key = getattr(loader, "cert_file", None), getattr(loader, "key_file", None)
        if not cert or cert == self._cfg.cert_file or not isinstance(self.ssl, ssl.SSLContext):
            return
        self.ssl.load_cert_chain(cert, key or None)
        self._cfg.cert_file, self._cfg.key_file = cert, key
        self.identity += 1

    async def _header(self) -> str | None:
        value = await self._cfg.get_api_key_with_prefix("BearerToken")
        if not value and self._cfg.username and self._cfg.password:
            value = self._cfg.get_basic_auth_token()
        return str(value) if value else None

    def _exec_credential_expired(self) -> bool:
        """Whether the exec plugin's credential is past its ``expirationTimestamp``: client-go's
        rule, with no margin (kubernetes-asyncio's own five-minute margin would re-run a plugin
        that hands out shorter-lived credentials on every request)."""
        if self._in_cluster:
            return False
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        return isinstance(expiry, datetime) and expiry <= datetime.now(UTC)


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
                          disable_compression=disable_compression)
    path = _kubeconfig_path(path)
    configuration, config_exception, kube_config = kube_config_api()
    cfg = configuration()
    try:
        loader = kube_config.KubeConfigLoader(
            config_dict=merged(path, kube_config.ConfigNode), config_base_path=None,
            active_context=context)
        cluster = loader._cluster.value
        disable_compression = disable_compression or cluster.get("disable-compression") is True
        _exec_plugin_as_client_go(loader, kube_config.FileOrData, insecure=(
            insecure_skip_tls_verify or cluster.get("insecure-skip-tls-verify") is True),
            disable_compression=disable_compression)
        await loader.load_and_set(cfg)
    except Exception as exc:  # not YAML, a list where a map belongs ...: one clear error
        known = (config_exception, ExecPluginError, KubeconfigError, OSError)
        detail = str(exc) if isinstance(exc, known) else f"{type(exc).__name__}: {exc}"
        raise ConfigError(f"kubeconfig {path}: {detail}") from exc
    return Connection(cfg, loader, in_cluster=False,
                      insecure_skip_tls_verify=insecure_skip_tls_verify,
                      disable_compression=disable_compression)


def _exec_plugin_as_client_go(loader: Any, file_or_data: Any, *, insecure: bool,
                              disable_compression: bool) -> None:
    """Run the kubeconfig user's exec plugin, if it has one, as client-go runs it
    (:mod:`slicectl.kube.exec_credential`) in place of kubernetes-asyncio's runner, which
    provides no cluster info, passes the controller's standard input and takes any version."""
    user, cluster = loader._user, loader._cluster
    config = user.safe_get("exec") if user is not None else None
    if not isinstance(config, dict):
        return
    plugin = Plugin.parse(config, str(loader._current_context["context"].safe_get("user")),
                          _base_dir(user.path))
    info = cluster_info(cluster.value, _base_dir(cluster.path), insecure=insecure,
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


def _base_dir(kubeconfig_file: str | None) -> str:
    """The directory a kubeconfig's relative paths are in."""
    return os.path.dirname(os.path.abspath(kubeconfig_file)) if kubeconfig_file else os.getcwd()


def _proxy(configured: str | None, host: str) -> Proxy | None:
    """The proxy client-go would take to ``host`` (:mod:`slicectl.kube.proxy`), logged once."""
    try:
        chosen, warning = choose_proxy(configured, host, os.environ)
    except ProxyError as exc:
        raise ConfigError(str(exc)) from None
    if warning is not None:
        _log.warning("proxy variable ignored", reason=warning)
    if chosen is not None:
        _log.info("connecting through a proxy", proxy=chosen.shown, named_by=chosen.source)
    return chosen


def _impersonation(loader: Any) -> list[tuple[str, str]]:
    """The kubeconfig user's impersonation headers (kubernetes-asyncio reads none of them)."""
    user = getattr(loader, "_user", None)
    fields = getattr(user, "value", None)
    if not isinstance(fields, dict):
        return []
    try:
        return impersonation_headers(fields, getattr(user, "name", ""))
    except ImpersonationError as exc:
        raise ConfigError(f"kubeconfig: {exc}") from None


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


def _ssl_context(cfg: Any, host: str) -> ssl.SSLContext | bool:
    if not host.startswith("https"):
        return True  # plain HTTP: aiohttp ignores TLS settings
    if cfg.verify_ssl:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
        # Python 3.13's default adds OpenSSL's RFC 5280 checks, which Go's crypto/x509 does not
        # make: a cluster CA without key usage, or a serving certificate without an authority
        # key identifier, is one kubectl and client-go talk to. And Go takes every certificate
        # it is given as a CA for a trust anchor: an intermediate CA in the kubeconfig, without
        # its root, is trusted (OpenSSL's partial chains; 3.13 sets them, 3.11 and 3.12 not).
        ctx.verify_flags = ((ctx.verify_flags & ~ssl.VERIFY_X509_STRICT)
                            | ssl.VERIFY_X509_PARTIAL_CHAIN)
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    return ctx
