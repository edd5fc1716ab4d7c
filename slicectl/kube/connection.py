"""A loaded client configuration: the server, its TLS context and proxy, and the credential
sent to it, renewed when it expires or is refused.

It decides how the credential behaves at run time, whatever configuration it came from
(:mod:`slicectl.kube.config`): a static one (token, token file, basic auth) is sent as it is, a
token file read again each minute; an exec plugin's is renewed at its ``expirationTimestamp``
(client-go's rule, no margin) or after a 401, by one plugin run for every request waiting on
it, and an OIDC id-token 10 seconds before its ``exp`` or after a 401 (:mod:`slicectl.kube.oidc`);
a renewal that fails keeps the last credential. Credentials are never logged, never in a
repr, and :meth:`Connection.redact` removes the last few sent from any text built from a
server's answer. To a plain ``http://`` server no credential is sent (with a warning), and
disabled TLS verification is always logged: a bearer token sent to an unverified server is a
token given to whoever answers.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from datetime import UTC, datetime
from typing import Any

import structlog

from slicectl.kube.oidc import OidcError, OidcProvider
from slicectl.kube.proxy import Proxy, ProxyError
from slicectl.kube.proxy import choose as choose_proxy
from slicectl.kube.static_credentials import StaticCredential
from slicectl.kube.tls_files import TlsFiles

_log = structlog.get_logger("slicectl.kube")
REDACTED = "REDACTED"
# Credentials remembered for redaction, newest first: a rotated one is only in requests sent
# just before the rotation; every rotation kept (hourly in a pod, more often with some exec
# plugins) grew the set for the life of the process, and each API error was searched for all.
REMEMBERED_CREDENTIALS = 4


class ConfigError(Exception):
    """The configuration cannot be loaded (missing variables, unreadable or empty files)."""


def _https(url: str) -> bool:
    return url[:8].lower() == "https://"


class Connection:
    """A loaded client configuration: host, TLS and a refreshable credential."""

    def __init__(
        self, configuration: Any, loader: Any, in_cluster: bool,
        insecure_skip_tls_verify: bool = False, disable_compression: bool = False, *,
        static: StaticCredential | None = None,
        impersonation: list[tuple[str, str]] | None = None, oidc: OidcProvider | None = None,
        tls_files: tuple[str, ...] = (),
    ) -> None:
        self._cfg = configuration  # kubernetes_asyncio Configuration; holds the credential
        self._loader = loader
        self._static = static  # a kubeconfig user's token, token file or basic auth
        self._oidc = oidc  # a kubeconfig user's oidc auth provider
        self._in_cluster = in_cluster
        # the last REMEMBERED_CREDENTIALS credentials sent (header, and the bare credential),
        # oldest first, for redact()
        self._secrets: dict[str, None] = {}
        self._renewal: asyncio.Future[None] | None = None  # the credential renewal under way
        self.host: str = str(configuration.host).rstrip("/")
        self.server_hostname: str | None = getattr(configuration, "tls_server_name", None)
        self.proxy = _proxy(getattr(configuration, "proxy", None), self.host)
        self.impersonation = impersonation or []
        # whether answers may come gzip-encoded (client-go's default); a cluster's
        # ``disable-compression: true`` or ``--disable-compression`` asks for them as they are
        self.compression = not disable_compression
        if insecure_skip_tls_verify:
            configuration.verify_ssl = False
            _log.warning("TLS verification of the API server is disabled "
                         "(--insecure-skip-tls-verify): anyone on the path can read the token",
                         host=self.host)
        elif _https(self.host) and not configuration.verify_ssl:
            _log.warning("TLS verification of the API server is disabled by the kubeconfig "
                         "(insecure-skip-tls-verify: true): anyone on the path can read the token",
                         host=self.host)
        try:
            self.ssl: ssl.SSLContext | bool = _ssl_context(configuration, self.host)
        except (ssl.SSLError, OSError) as exc:  # a CA or certificate that is not PEM ...
            raise ConfigError(f"TLS settings for {self.host}: {exc}") from None
        self._plain_http = not _https(self.host)
        if self._plain_http:
            _log.warning("the API server is plain HTTP: no credentials are sent to it "
                         "(as kubectl)", host=self.host)
        # bumped when a renewal brings a new client certificate, or the TLS files changed:
        # connections made before must go (client-go closes them all), which the client sees
        # by this number
        self.identity = 0
        # the CA file, client certificate and key files, read again as they rotate
        self._tls_files = TlsFiles(tls_files) if tls_files and isinstance(
            self.ssl, ssl.SSLContext) else None

    def __repr__(self) -> str:
        return f"Connection(host={self.host!r}, in_cluster={self._in_cluster})"

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value, renewed first if an exec credential expired or an
        OIDC id-token is about to; None for a plain HTTP server (anyone on the path would read
        it)."""
        if self._plain_http:
            return None
        if self._credential_expired():
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

    def reload_tls_files(self) -> None:
        """Read the CA and client certificate files again if they are due
        (:mod:`slicectl.kube.tls_files`); when they changed and load, connections from now on
        use them (``identity`` is bumped)."""
        files = self._tls_files
        if files is None or not files.due():
            return
        contents = files.changed()
        if contents is None:
            return
        try:
            context = _ssl_context(self._cfg, self.host)
        except (ssl.SSLError, OSError) as exc:
            files.check_soon()
            _log.warning("changed TLS files do not load; the last ones are kept",
                         files=list(files.paths), error=str(exc))
            return
        files.accept(contents)
        self.ssl = context
        self.identity += 1
        _log.info("TLS files changed: new connections use them", files=list(files.paths))

    def tls_refused(self) -> None:
        """A TLS handshake failed: the CA or the client certificate may have rotated."""
        if self._tls_files is not None:
            self._tls_files.check_soon()

    async def refresh(self, refused: str | None = None) -> None:
        """Renew the credential: re-read the token file (in-cluster, or a kubeconfig's
        ``tokenFile``), re-run the exec plugin, refresh an OIDC token.

        ``refused`` is the header a server answered 401 to: if the credential has changed since,
        that request is simply sent again. Callers that arrive while a renewal runs wait for it
        instead of starting their own, so an expiry or a burst of 401s costs one plugin run. A
        renewal that fails is logged and the last credential kept: the server says whether it
        still works, and a request never fails on the renewal itself.
        """
        if self._tls_files is not None:  # an expired client certificate is a 401 too
            self._tls_files.check_soon()
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
        if self._static is not None:  # nothing else was loaded: a token file is read again
            if self._static.token_file is not None:
                self._static.token_file.reread()
            return
        if self._oidc is not None:
            try:
                await self._oidc.refresh()
            except OidcError as exc:
                _log.warning("OIDC token not refreshed; the last one is kept", error=str(exc))
            return
        if hasattr(loader, "exec_plugin_expiry"):
            del loader.exec_plugin_expiry
        try:  # the kubeconfig user again: the exec plugin re-run
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
        if self._static is not None:
            return self._static.header()
        if self._oidc is not None:
            return f"Bearer {self._oidc.id_token}" if self._oidc.id_token else None
        value = await self._cfg.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None

    def _credential_expired(self) -> bool:
        """Whether the OIDC id-token needs a refresh (:meth:`OidcProvider.needs_refresh`), or the
        exec plugin's credential is past its ``expirationTimestamp``: client-go's rule, with no
        margin (kubernetes-asyncio's own five-minute margin would re-run a plugin that hands out
        shorter-lived credentials on every request)."""
        if self._oidc is not None:
            return self._oidc.needs_refresh()
        if self._in_cluster:
            return False
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        return isinstance(expiry, datetime) and expiry <= datetime.now(UTC)


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


def _ssl_context(cfg: Any, host: str) -> ssl.SSLContext | bool:
    if not _https(host):
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
