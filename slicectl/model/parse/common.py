"""Shared pieces of the parsers: the error type, strict JSON-shape helpers, name validators and
IP canonicalisation (and which IPs an EndpointSlice may carry).

The helpers raise :class:`ParseError` for a structural type error (an object where a list is
expected), which makes the whole object unusable; callers decide which pieces may degrade instead.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any


class ParseError(ValueError):
    """An object too malformed to become a record."""


PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})
_DIGITS = re.compile(r"[0-9]+")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_IANA_SVC_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def is_dns_subdomain(value: str) -> bool:
    """RFC 1123 subdomain (object names such as EndpointSlice names)."""
    return len(value) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(value))


def dns_label_error(value: str) -> str | None:
    """Why ``value`` is not an RFC 1123 label (EndpointSlice port names), or None."""
    if len(value) <= 63 and _DNS_LABEL.fullmatch(value):
        return None
    return f"{value!r} must be a lowercase RFC 1123 label of at most 63 characters"


def iana_svc_name_error(value: str) -> str | None:
    """Why ``value`` is not an IANA_SVC_NAME (a named container port), or None."""
    if (
        len(value) <= 15
        and _IANA_SVC_NAME.fullmatch(value)
        and "--" not in value
        and any("a" <= c <= "z" for c in value)
    ):
        return None
    return (
        f"{value!r} must be a port name (IANA_SVC_NAME: at most 15 lowercase alphanumerics or "
        "'-', with a letter, no leading, trailing or doubled '-') or a number 1..65535"
    )


def obj(value: Any, what: str, *, required: bool = False) -> Mapping[str, Any]:
    if value is None:
        if required:
            raise ParseError(f"{what} is required")
        return {}
    if not isinstance(value, Mapping):
        raise ParseError(f"{what} must be an object, not {type(value).__name__}")
    return value


def list_of(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(f"{what} must be a list, not {type(value).__name__}")
    return value


def string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ParseError(f"{what} must be a string, not {type(value).__name__}")
    return value


def integer(value: Any) -> int | None:
    """An integer JSON value (bools are not integers here), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def str_map(value: Any, what: str) -> dict[str, str]:
    mapping = obj(value, what)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise ParseError(f"{what} must map strings to strings")
    return dict(mapping)


def identity(raw: Any, kind: str, *, namespaced: bool = True) -> tuple[Mapping[str, Any], str]:
    """The object's metadata and a "kind ns/name" label for messages; checks the identity."""
    meta = obj(obj(raw, kind, required=True).get("metadata"), f"{kind}.metadata", required=True)
    name = string(meta.get("name"), f"{kind}.metadata.name")
    if not name:
        raise ParseError(f"{kind} without metadata.name")
    if namespaced and not string(meta.get("namespace"), f"{kind} {name} metadata.namespace"):
        raise ParseError(f"{kind} {name} without metadata.namespace")
    label = f"{kind} {meta.get('namespace')}/{name}" if namespaced else f"{kind} {name}"
    if namespaced and not string(meta.get("uid"), f"{label} metadata.uid"):
        raise ParseError(f"{label} without metadata.uid")
    return meta, label


def _sloppy_ipv4(text: str) -> str | None:
    parts = text.split(".")
    if len(parts) != 4 or not all(_DIGITS.fullmatch(p) for p in parts):
        return None
    octets = [int(p) for p in parts]  # leading zeros are decimal, as in Go's ParseIPSloppy
    if any(o > 255 for o in octets):
        return None
    return ".".join(map(str, octets))


_HEX = frozenset("0123456789abcdefABCDEF")


def canonical_ip(text: Any) -> str | None:
    """``text`` in canonical form, or None when it is not an IP address.

    Matches ``netutils.ParseIPSloppy(ip).String()``: IPv4 octets and IPv6 groups may have
    leading zeros; IPv4-mapped IPv6 (``::ffff:a.b.c.d``) is an IPv4 address; IPv6 is compressed
    lower-case; zones (``%eth0``) are rejected.
    """
    if not isinstance(text, str) or not text or "%" in text:
        return None
    if ":" not in text:
        return _sloppy_ipv4(text)
    head, _, tail = text.rpartition(":")
    if "." in tail:
        v4 = _sloppy_ipv4(tail)
        if v4 is None:
            return None
        text = f"{head}:{v4}"
    # a group may carry leading zeros past four digits (Go's parser reads every hex digit)
    text = ":".join(g.lstrip("0") or "0" if len(g) > 4 and _HEX.issuperset(g) else g
                    for g in text.split(":"))
    try:
        addr = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    mapped = addr.ipv4_mapped
    return str(mapped) if mapped is not None else addr.compressed


def endpoint_ip(text: Any) -> str | None:
    """``text`` in canonical form if an EndpointSlice may list it, else None.

    The API server refuses a slice whose addresses include an unspecified, loopback, link-local
    unicast or link-local multicast address (``ValidateEndpointIP`` in the discovery
    validation), while a pod's status may carry one (a host-network pod on a node with such an
    address, a virtual kubelet reporting 127.0.0.1). Listing it would get every write to that
    selector's slices refused, the other pods' changes with them, so such an IP is left out as
    an invalid one is.
    """
    ip = canonical_ip(text)
    if ip is None:
        return None
    addr = ipaddress.ip_address(ip)
    if addr.is_unspecified or addr.is_loopback or addr.is_link_local:
        return None
    packed = addr.packed
    if addr.version == 4:  # Go's IsLinkLocalMulticast: 224.0.0.0/24, ffX2::/16
        return None if packed[:3] == b"\xe0\x00\x00" else ip
    return None if packed[0] == 0xFF and packed[1] & 0x0F == 0x02 else ip
