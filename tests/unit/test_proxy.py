"""The proxy choice (slicectl.kube.proxy) against what Go's httpproxy and client-go decide."""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from slicectl.kube.config import load_connection
from slicectl.kube.proxy import Proxy, ProxyError, UnsupportedScheme, choose, parse, uses_proxy
from slicectl.kube.transport import Transport
from tests.unit.kubeconfigs import one_context

TOKEN = {"token": "t0ken"}

NO_PROXY = ("corp.example, .svc.example, *.wild.example, 192.0.2.1, 192.0.2.2:8443, "
            "192.0.2.3:6443, 10.96.0.0/12, 2001:db8::1, [2001:db8::2]:443, [2001:db8::3]:6443, "
            "fd00:10:96::/112, api.example:6443")


@pytest.mark.parametrize(("host", "proxied"), [
    # never proxied, whatever NO_PROXY says
    ("localhost", False), ("LOCALHOST", False), ("127.0.0.1", False), ("127.3.4.5", False),
    ("::1", False), ("[::1]", False), ("::ffff:127.0.0.1", False),
    ("::2", True),  # not loopback
    # addresses
    ("192.0.2.1", False),  # the address, any port
    ("192.0.2.2", True),  # only port 8443 excepted
    ("192.0.2.3", False),  # port 6443 excepted
    ("192.0.2.4", True),
    ("10.100.0.1", False), ("10.111.255.254", False), ("10.112.0.1", True),  # the CIDR
    ("::ffff:10.100.0.1", False),  # IPv4-mapped: Go compares it as the IPv4 address
    ("2001:db8::1", False), ("2001:db8::2", True), ("2001:db8::3", False), ("2001:db8::4", True),
    ("fd00:10:96::abcd", False), ("fd00:10:97::1", True),
    # names
    ("corp.example", False), ("api.corp.example", False), ("Api.CORP.example", False),
    ("xcorp.example", True),  # a suffix only at a label boundary
    ("svc.example", True), ("kubernetes.svc.example", False),  # leading dot: subdomains only
    ("wild.example", True), ("a.b.wild.example", False),  # *. as a leading dot
    ("api.example", False),  # excepted at 6443, the port asked
    ("example", True), ("localhost.example", True), ("corp.example.net", True),
])
def test_no_proxy_as_go_reads_it(host: str, proxied: bool) -> None:
    assert uses_proxy(host, 6443, NO_PROXY) is proxied


def test_a_port_in_no_proxy_is_compared() -> None:
    assert uses_proxy("api.example", 443, "api.example:6443")
    assert not uses_proxy("api.example", 6443, "api.example:6443")
    assert uses_proxy("192.0.2.2", 443, "192.0.2.2:8443")


def test_star_and_malformed_entries() -> None:
    assert not uses_proxy("anything.example", 443, "foo, *")
    for junk in (":1", ",,, ", "10.0.0.0/99", "[]:80", "/", "ä..example"):  # IDNA refuses
        assert uses_proxy("anything.example", 443, junk), junk


def test_internationalised_names_compare_as_punycode() -> None:
    assert not uses_proxy("www.xn--fsq092h.com", 443, "示例.com")
    assert not uses_proxy("www.示例.com", 443, "xn--fsq092h.com")


@given(st.ip_addresses(), st.integers(0, 32))
def test_an_address_in_a_cidr_is_never_proxied(ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
                                              prefix: int) -> None:
    # (an IPv4-mapped address is Go's IPv4 address, in no IPv6 network: a case above)
    assume(not (isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None))
    bits = prefix if ip.version == 4 else prefix * 4
    # written with the host's bits set (10.1.2.3/8), as Go's ParseCIDR accepts it
    assert not uses_proxy(str(ip), 443, f"other.example, {ip}/{bits}")


@given(st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True))
def test_a_name_excepts_itself_and_its_subdomains_not_its_parent(name: str) -> None:
    assert not uses_proxy(name, 443, name)
    assert not uses_proxy(f"api.{name}", 443, name)
    assert uses_proxy(name, 443, f".{name}") or name == "localhost"
    assert uses_proxy(f"x{name}", 443, name) or f"x{name}" == "localhost"


ENV = {"HTTPS_PROXY": "proxy.corp.example:3128", "HTTP_PROXY": "http://plain.example",
       "NO_PROXY": "10.96.0.0/12,.svc"}


@pytest.mark.parametrize(("server", "env", "want"), [
    ("https://api.example:6443", ENV, "http://proxy.corp.example:3128"),
    ("http://api.example:8080", ENV, "http://plain.example:80"),  # HTTP_PROXY for http only
    ("https://api.example", {"HTTP_PROXY": "http://plain.example"}, None),
    ("https://10.96.0.1:443", ENV, None),  # the service network, excepted by CIDR
    ("https://kubernetes.default.svc", ENV, None),
    ("https://127.0.0.1:6443", ENV, None),  # loopback
    ("https://api.example", {"https_proxy": "socks5://s.example"}, "socks5://s.example:1080"),
    ("https://api.example", {"HTTPS_PROXY": "https://u:p@s.example",
                             "https_proxy": "http://other"}, "https://u:REDACTED@s.example:443"),
    ("https://api.example", {"HTTPS_PROXY": "", "https_proxy": "lower:1"}, "http://lower:1"),
    ("https://api.example", {"HTTPS_PROXY": "p:1", "no_proxy": "api.example"}, None),
    # a server without a port is compared on its scheme's (Go's canonicalAddr)
    ("https://api.example", {"HTTPS_PROXY": "p:1", "NO_PROXY": "api.example:443"}, None),
    ("http://api.example", {"HTTP_PROXY": "p:1", "NO_PROXY": "api.example:80"}, None),
    ("https://api.example", {"HTTPS_PROXY": "p:1", "NO_PROXY": "api.example:80"},
     "http://p:1"),
    ("https://api.example:6443", {"HTTPS_PROXY": "p:1", "NO_PROXY": "api.example:443"},
     "http://p:1"),  # and one with a port on its own
    ("https://[2001:db8::9]:6443", {"HTTPS_PROXY": "[2001:db8::1]:3128"},
     "http://[2001:db8::1]:3128"),
])
def test_the_environment_proxy(server: str, env: dict[str, str], want: str | None) -> None:
    chosen, warning = choose(None, server, env)
    assert warning is None
    assert (chosen.shown if chosen else None) == want


def test_the_kubeconfig_proxy_wins_for_every_host() -> None:
    for server in ("https://127.0.0.1:6443", "https://10.96.0.1", "https://api.example"):
        chosen, _ = choose("socks5://tunnel:1080", server, ENV)
        assert chosen == Proxy("socks5", "tunnel", 1080, None, None, "kubeconfig proxy-url")


@pytest.mark.parametrize("value", ["socks5h://tunnel:1080", "ftp://p", "socks4://p:1"])
def test_an_unsupported_scheme_is_refused(value: str) -> None:
    with pytest.raises(UnsupportedScheme, match="must be http, https, or socks5"):
        choose(value, "https://api.example", {})
    with pytest.raises(UnsupportedScheme):  # Go would take it and fail each request
        choose(None, "https://api.example", {"HTTPS_PROXY": value})
    chosen, _ = choose(None, "https://api.example", {"HTTPS_PROXY": value, "NO_PROXY": "*"})
    assert chosen is None  # never used: no error


@pytest.mark.parametrize("value", ["http://p:notaport", "http://", "http://u:secret@:3128"])
def test_a_value_that_does_not_parse(value: str) -> None:
    with pytest.raises(ProxyError):
        parse(value, "kubeconfig proxy-url")
    chosen, warning = choose(None, "https://api.example", {"HTTPS_PROXY": value})
    assert chosen is None and warning is not None and "HTTPS_PROXY" in warning
    assert "secret" not in warning


def test_credentials_are_sent_never_shown() -> None:
    proxy = parse("http://alice:s3cr%40t:x@proxy.example:3128", "HTTPS_PROXY")
    assert (proxy.username, proxy.password) == ("alice", "s3cr@t:x")  # percent-decoded
    assert proxy.authorization == "Basic YWxpY2U6czNjckB0Ong="  # base64 of alice:s3cr@t:x
    assert proxy.address == "http://proxy.example:3128"
    assert proxy.shown == "http://alice:REDACTED@proxy.example:3128"
    assert parse("socks5://bob@[fd00::1]", "x").shown == "socks5://bob@[fd00::1]:1080"
    assert parse("p.example", "x").authorization is None
    assert parse("http://alice@p.example", "x").authorization == "Basic YWxpY2U6"  # alice:
    with pytest.raises(UnsupportedScheme) as err:
        parse("socks5h://alice:s3cret@proxy.example", "HTTPS_PROXY")
    assert "s3cret" not in str(err.value) and "proxy.example" in str(err.value)


async def test_what_each_request_carries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTPS server: the proxy named without credentials, which go in the CONNECT's header;
    a plain-HTTP one: the header on each request itself (the proxy reads it there)."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    basic = "Basic " + base64.b64encode(b"alice:pw").decode()
    conn = await load_connection(one_context(tmp_path, "https://api.example:6443", TOKEN,
                                              "http://alice:pw@proxy.example:3128"))
    transport = Transport(conn, "test")
    headers: dict[str, str] = {}
    await transport.authorize(headers)
    assert transport.options() == {"proxy": "http://proxy.example:3128",
                                   "proxy_headers": {"Proxy-Authorization": basic}}
    assert headers == {"Authorization": "Bearer t0ken"}
    assert conn.redact("refused: pw") == "refused: REDACTED"
    await transport.close()

    monkeypatch.setenv("HTTP_PROXY", "alice:pw@proxy.example:3128")
    conn = await load_connection(one_context(tmp_path, "http://api.example:8080", TOKEN))
    transport = Transport(conn, "test")
    headers = {}
    await transport.authorize(headers)
    assert headers == {"Proxy-Authorization": basic}  # and no bearer token over plain HTTP
    assert transport.options()["proxy"] == "http://proxy.example:3128"
    await transport.close()

    conn = await load_connection(one_context(tmp_path, "https://api.example:6443", TOKEN,
                                              "socks5://alice:pw@tunnel.example"))
    transport = Transport(conn, "test")
    assert transport.options() == {}  # the session's connector tunnels instead
    await transport.close()
