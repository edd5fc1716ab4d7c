"""Name and IP checks of ``k8s.io/apimachinery/pkg/util/validation``, with their messages.

Why: object names, namespaces, hostnames, port names, app protocols and endpoint addresses are
checked by the same few predicates in the real server; keeping each predicate and its exact
message together here lets every validator use them unchanged. Label keys and values are
decided here too, from the upstream functions, not by the controller's
:mod:`slicectl.model.selector`: the server must be able to disagree with the controller.
Lengths are Go's (UTF-8 bytes) and patterns must match the whole value, as Go's anchored
regexps do (a trailing newline is no match).
"""

from __future__ import annotations

import functools
import ipaddress
import re

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(f"^{_LABEL}$")
_DNS_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(f"({_QUALIFIED_NAME_FMT})?")

DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_QUALIFIED_NAME_REGEX_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
NAME_PART_MSG = "name part " + _QUALIFIED_NAME_REGEX_MSG
# more than one '/': the whole key is refused with one message
QUALIFIED_NAME_MSG = ("a qualified name " + _QUALIFIED_NAME_REGEX_MSG
                      + " with an optional DNS subdomain prefix and '/' (e.g. "
                      "'example.com/MyName')")
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if go_len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS_LABEL.fullmatch(value):  # a subdomain that is no label has dots
        errs.append("must not contain dots" if _DNS_SUBDOMAIN.fullmatch(value)
                    else DNS1123_LABEL_MSG)
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if go_len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS_SUBDOMAIN.fullmatch(value):
        errs.append(DNS1123_SUBDOMAIN_MSG)
    return errs


def mask_trailing_dash(name: str) -> str:
    """``generateName`` prefixes may end with '-', checked as apimachinery's
    ``maskTrailingDash`` does: the dash and the byte before it become one 'a' (a multi-byte
    character before the dash is cut, and the result no valid name)."""
    data = name.encode("utf-8", "surrogatepass")
    if len(data) > 1 and name.endswith("-"):
        return data[:-2].decode("utf-8", "replace") + "a"
    return name


@functools.lru_cache(maxsize=65536)  # label keys recur on every write
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    parts = value.split("/")
    if len(parts) > 2:
        return (QUALIFIED_NAME_MSG,)
    errs: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif go_len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append(NAME_PART_MSG)
    return tuple(errs)


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name`` as label keys, finalizers and appProtocols."""
    return list(_qualified_name_errors(value))


@functools.lru_cache(maxsize=65536)
def _label_value_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    if go_len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(LABEL_VALUE_MSG)
    return tuple(errs)


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``: at most 63 bytes; empty, or alphanumeric at both ends."""
    return list(_label_value_errors(value))


_PORT_NAME_CHARSET = re.compile(r"[-a-z0-9]+")


def port_name_errors(value: str) -> list[str]:
    """``IsValidPortName``: an IANA_SVC_NAME (a named container port)."""
    errs = []
    if go_len(value) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.fullmatch(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def go_lower(value: str) -> str:
    """Go's ``strings.ToLower``: one rune for one (Python's ``lower`` makes U+0130 two)."""
    return "".join("i" if c == "\u0130" else c.lower() if len(c.lower()) == 1 else c
                   for c in value)


def go_len(value: str) -> int:
    """Go's ``len`` of a string: its UTF-8 bytes."""
    return len(value.encode("utf-8", "surrogatepass"))


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@functools.lru_cache(maxsize=65536)  # pure, and every endpoint address goes through here
def parse_ip_sloppy(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Go's ``netutils.ParseIPSloppy``: IPv4 octets (also the dotted tail of an IPv6 address)
    and IPv6 groups may carry any number of leading zeros; no zone (``%eth0``), ASCII digits
    only."""
    if not value.isascii() or "%" in value:
        return None
    *groups, tail = value.split(":")
    # an IPv6 group may carry leading zeros past four digits too (Go's xtoi reads them all)
    groups = [g.lstrip("0") or "0" if g and all(c in _HEX_DIGITS for c in g) else g
              for g in groups]
    if "." in tail:
        octets = [o.lstrip("0") or "0" if o.isdigit() else o for o in tail.split(".")]
        if len(octets) != 4 or not all(o.isdigit() and len(o) <= 3 and int(o) <= 255
                                       for o in octets):
            return None
        tail = ".".join(octets)
    elif groups and tail and all(c in _HEX_DIGITS for c in tail):
        tail = tail.lstrip("0") or "0"
    try:
        return ipaddress.ip_address(":".join([*groups, tail]))
    except ValueError:
        return None


@functools.lru_cache(maxsize=65536)
def special_ip_errors(value: str) -> tuple[str, ...]:
    """``ValidateNonSpecialIP``: endpoint addresses may not be special-purpose addresses."""
    ip = parse_ip_sloppy(value)
    if ip is None:
        return ("must be a valid IP address",)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    errs = []
    if ip.is_unspecified:
        errs.append(f"may not be unspecified ({value})")  # the address as written
    if ip.is_loopback:
        errs.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local and not ip.is_multicast:
        errs.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    packed = ip.packed  # Go's IsLinkLocalMulticast: 224.0.0.0/24, and ffX2::/16 (any flags)
    link_local_multicast = (
        packed[:3] == b"\xe0\x00\x00"
        if isinstance(ip, ipaddress.IPv4Address)
        else packed[0] == 0xFF and packed[1] & 0x0F == 0x02
    )
    if link_local_multicast:
        errs.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return tuple(errs)


@functools.lru_cache(maxsize=65536)
def ip_family_error(value: str, family: int) -> str | None:
    """``IsValidIPv4Address`` / ``IsValidIPv6Address``: the family is Go's, ``To4() != nil``,
    so an IPv4-mapped IPv6 address (``::ffff:10.0.0.1``) is a valid IPv4 address and not a
    valid IPv6 one."""
    ip = parse_ip_sloppy(value)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip is None or ip.version != family:
        return f"must be a valid IPv{family} address"
    return None
