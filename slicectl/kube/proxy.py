"""Which proxy, if any, the API server's connections go through: the one client-go would take.

Why: kubectl and client-go reach the API server through the kubeconfig cluster's ``proxy-url``
when it names one (then for every host, loopback included), else through ``HTTPS_PROXY`` (or
``HTTP_PROXY`` for a plain-HTTP server) as Go's ``http.ProxyFromEnvironment`` reads them, in a
pod too (``rest.InClusterConfig`` leaves the proxy to the environment). A controller that
ignored them could not reach a server behind a proxy that kubectl reaches, and one that read
them as Python's urllib does would proxy what Go does not: urllib ignores CIDR entries in
``NO_PROXY``, the usual way a pod's ``NO_PROXY`` excepts the service network (``10.96.0.0/12``).

What it decides, as Go's ``golang.org/x/net/http/httpproxy`` does:

* the variables: the upper-case name first, then the lower-case one; an empty value is unset;
* a value is a URL of scheme ``http``, ``https`` or ``socks5``, or else ``host[:port]`` of an
  HTTP proxy; a missing port is the scheme's (80, 443, 1080). A value that does not parse is
  ignored, as Go ignores it, with a warning here; a URL of another scheme (``socks5h://``) is a
  configuration error at start, where Go would take it and fail every request;
* never a proxy for ``localhost`` or a loopback address;
* ``NO_PROXY`` entries, comma-separated and case-insensitive: ``*`` (no proxy at all), an IP
  or a CIDR (``10.0.0.0/8``, ``fd00::/8``), an IP with a port, a domain that matches itself and
  its subdomains (``example.com``), a domain with a leading dot or ``*.`` that matches only its
  subdomains, each optionally with ``:port``;
* a kubeconfig ``proxy-url`` of another scheme, or without a host, is refused as client-go's
  ``clientcmd`` refuses it (:class:`ProxyError`, a configuration error at start).

A proxy's credentials (``http://user:password@proxy:3128``, percent-decoded) are sent as Go
sends them (a ``Proxy-Authorization`` header for HTTP proxies, the username/password method for
SOCKS5) and never shown: requests name the proxy by :attr:`Proxy.address`, without them (an
aiohttp error repeats the proxy URL it was given), and logs by :attr:`Proxy.shown`.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

SCHEMES = ("http", "https", "socks5")
DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080}
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class ProxyError(ValueError):
    """A proxy URL client-go would refuse, or one that does not parse."""


class UnsupportedScheme(ProxyError):
    """A proxy URL of a scheme other than http, https and socks5."""


@dataclass(frozen=True)
class Proxy:
    """A proxy to send requests through."""

    scheme: str  # http | https | socks5
    host: str
    port: int
    username: str | None
    password: str | None
    source: str  # where it was named: "kubeconfig proxy-url", "HTTPS_PROXY", ...

    @property
    def address(self) -> str:
        """The URL without credentials: what a request names, and what an error may show."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def shown(self) -> str:
        """The URL with the password replaced, for logs."""
        if self.username is None:
            return self.address
        secret = ":REDACTED" if self.password is not None else ""
        return self.address.replace("://", f"://{self.username}{secret}@", 1)

    @property
    def authorization(self) -> str | None:
        """The ``Proxy-Authorization`` header an HTTP(S) proxy is sent, as Go sends it."""
        if self.username is None:
            return None
        pair = f"{self.username}:{self.password or ''}"
        return "Basic " + base64.b64encode(pair.encode()).decode()


def parse(value: str, source: str) -> Proxy:
    """``value`` as a proxy: a URL of a known scheme, or ``host[:port]`` of an HTTP proxy."""
    text = value.strip()
    shown = _without_credentials(text)
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ProxyError(f"{source} {shown!r} is not a proxy URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UnsupportedScheme(f"{source} {shown!r}: unsupported scheme {scheme!r}, must be "
                                "http, https, or socks5")
    if not parts.hostname:
        raise ProxyError(f"{source} {shown!r} names no host")
    user, password = parts.username, parts.password
    return Proxy(scheme, parts.hostname, port or DEFAULT_PORTS[scheme],
                 None if user is None else unquote(user),
                 None if password is None else unquote(password), source)


def choose(configured: str | None, server: str,
           environ: Mapping[str, str]) -> tuple[Proxy | None, str | None]:
    """The proxy for ``server`` (a URL): the kubeconfig's ``configured`` one for every host
    (:class:`ProxyError` if client-go would refuse it), else the environment's; with a warning
    for the caller to log when a variable names a proxy that does not parse."""
    if configured:
        return parse(configured, "kubeconfig proxy-url"), None
    return from_environment(server, environ)


def from_environment(server: str, environ: Mapping[str, str]) -> tuple[Proxy | None, str | None]:
    """The proxy Go's ``ProxyFromEnvironment`` gives for ``server`` (a URL), and why none was
    taken when the variable's value does not parse (a warning for the caller to log: Go goes
    without a proxy then). A value of another scheme is :class:`UnsupportedScheme`: Go would
    take it and fail every request on it."""
    url = urlsplit(server)
    names = ("HTTPS_PROXY", "https_proxy") if url.scheme == "https" else (
        "HTTP_PROXY", "http_proxy")
    name, value = _first_set(environ, names)
    if value is None:
        return None, None
    _, no_proxy = _first_set(environ, ("NO_PROXY", "no_proxy"))
    if not uses_proxy(url.hostname or "", url.port or DEFAULT_PORTS.get(url.scheme, 443),
                      no_proxy or ""):
        return None, None
    try:
        return parse(value, name), None
    except UnsupportedScheme:
        raise
    except ProxyError as exc:
        return None, f"{exc}; connecting without a proxy, as client-go does"


def uses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """Whether a request to ``host:port`` goes through the environment's proxy (module
    docstring): not for localhost, loopback, or a match in ``no_proxy``."""
    host = _ascii(host.strip().lower().strip("[]"))
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    for entry in no_proxy.split(","):
        if _excepts(entry.strip().lower(), host, str(port), ip):
            return False
    return True


def _excepts(entry: str, host: str, port: str, ip: _Address | None) -> bool:
    """Whether one ``NO_PROXY`` entry excepts ``host:port`` (``ip``: the host as an address)."""
    if not entry:
        return False
    if entry == "*":
        return True
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False  # a malformed entry is skipped, as Go skips it
        return ip is not None and ip.version == network.version and ip in network
    name, entry_port = _split_port(entry)
    if not name:
        return False
    entry_ip = _ip(name)
    if entry_ip is not None:
        return ip is not None and ip == entry_ip and entry_port in ("", port)
    if name.startswith("*."):
        name = name[1:]
    whole = not name.startswith(".")
    suffix = "." + _ascii(name.lstrip("."))
    if host.endswith(suffix) or (whole and host == suffix[1:]):
        return entry_port in ("", port)
    return False


def _without_credentials(text: str) -> str:
    """A proxy value with whatever precedes its last ``@`` (user and password) replaced."""
    if "@" not in text:
        return text
    scheme, sep, rest = text.rpartition("://")
    return f"{scheme}{sep}REDACTED@{rest.rpartition('@')[2]}"


def _split_port(entry: str) -> tuple[str, str]:
    """``host:port``, ``[v6]:port`` or a bare host (a bare IPv6 address has no port)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


def _ip(host: str) -> _Address | None:
    """``host`` as an address; an IPv4-mapped IPv6 one as its IPv4 address, which Go's
    ``net.IP`` compares, contains and calls loopback as it does the IPv4 one."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _ascii(name: str) -> str:
    """An internationalised name as its ASCII (punycode) form, as Go compares them."""
    if name.isascii():
        return name
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


def _first_set(environ: Mapping[str, str], names: tuple[str, str]) -> tuple[str, str | None]:
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return names[0], None
