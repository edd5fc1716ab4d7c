"""The string ``format`` checks a real server runs on custom resources (kube-openapi's strfmt).

Why: kube-apiserver validates each string against its schema's ``format`` with
``strfmt.Default.Validates``, after apiextensions has blanked the formats it does not support
(``formats.go``), so ``format: uuid`` refuses ``"not-a-uuid"`` there; a test server letting it
through would be kinder than any real one. :func:`format_ok` decides it the same way: the name
is normalized as Go's registry does (every ``-`` removed, no case folding: ``UUID`` and
``date_time`` are not checked, nor is ``quantity``, supported but never registered), then the
value goes through a port of the upstream check: the same regexps (RE2's ``$``, ``\\s`` =
``[\\t\\n\\f\\r ]``, ASCII ``\\d``), Go's parsers for IPs (``ipv4``/``cidr`` sloppy, leading
zeros allowed; ``ipv6`` strict), MACs, durations, URIs, dates and mail addresses (the last two
in :mod:`slicectl.sim.validation.strfmt_address`), lengths in UTF-8 bytes. ``k8s-short-name``
and ``k8s-long-name`` are checked although only v1.34+ knows them (a later server is stricter
there).

Servers v1.32-v1.36 are Go 1.23-1.26 builds, which differ in places; the check then takes the
strictest, and where a port would be out of proportion it is harsher, never kinder:

- ``mac``: Go 1.23's ``net.ParseMAC`` (1.26 also takes the unseparated ``00005e005301``);
- ``uri``: Go 1.26's ``url.ParseRequestURI`` with ``urlstrictcolons`` on (at most one ``:`` in
  an http(s) host; on or off in a build depending on its go/godebug directive), which also
  refuses a ``[`` not opening the host and an IPv4 or invalid address in brackets;
- ``email``: ``net/mail.ParseAddress`` with Go 1.26's phrase (no comment after encoded words
  only; an encoded word of empty text is no word); an RFC 2047 word ``=?cs?b|q?text?=`` is
  taken to decode, so a charset Go does not know fails it even where the text would not have
  decoded (Go then ignores the word); domain literals are 1.23-1.26's (any IP, no ``IPv6:``);
- ``hostname``: ``\\p{L}`` and ``\\p{S}`` are this Python's Unicode (14.0, same classes as Go's
  15.0 for every character it has): characters assigned later are refused.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from slicectl.sim.validation.goregex import go_regex
from slicectl.sim.validation.names import go_len, go_lower, parse_ip_sloppy
from slicectl.sim.validation.strfmt_address import HEX_DIGITS, go_ip, is_email, is_uri

__all__ = ["format_ok"]

_WS = "[\t\n\f\r ]"  # RE2's \s (Python's ASCII \s also has \v)
_UUID = go_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = go_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = go_regex(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_UUID5 = go_regex(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_CREDIT_CARD = go_regex(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$")
_ISBN10 = go_regex(r"^(?:[0-9]{9}X|[0-9]{10})$")
_ISBN13 = go_regex(r"^(?:[0-9]{13})$")
_HEX_COLOR = go_regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_OCTET = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
_RGB_COLOR = go_regex(
    rf"^rgb\({_WS}*{_OCTET}{_WS}*,{_WS}*{_OCTET}{_WS}*,{_WS}*{_OCTET}{_WS}*\)$")
_BASE64 = go_regex(
    r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$")
_SSN = go_regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_NOT_DIGITS = re.compile("[^0-9]+")
_SPACES_AND_MINUS = re.compile(f"(?:{_WS}|-)+")
_SHORT_NAME = go_regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LONG_NAME = go_regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_BSON_ID = re.compile("[0-9a-fA-F]{24}")  # hex.DecodeString to 12 bytes
_DATE = re.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# HostnamePattern over each rune's class: "a" letter (\p{L}), "0" ASCII digit, "$" symbol
# (\p{S}, ASCII "$+<=>^`|~" too), "-" and "." themselves, "#" anything else.
_HOSTNAME = re.compile(r"[a0$](?:-?[a0$]{0,62})?|(?:[a0$](?:[a0$-]{0,61}[a0$])?\.)+a{2,63}")
_MAX_INT64 = 2**63 - 1
_U64 = 2**64 - 1


def _date(text: str) -> bool:
    """``time.Parse("2006-01-02", text)``: four-digit year (0000 too), month 01-12, real day."""
    found = _DATE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(g) for g in found.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= month <= 12 and 1 <= day <= _DAYS[month - 1] + (month == 2 and leap)


def _date_time(text: str) -> bool:
    """``IsDateTime``: split the lowercased text at ``t``; a date, then a time (second part)."""
    parts = go_lower(text).split("t")
    if go_len(text) < 4 or len(parts) < 2 or not _date(parts[0]):
        return False
    found = _TIME.fullmatch(parts[1])
    return found is not None and found[1] <= "23" and found[2] <= "59" and found[3] <= "59"


def _hostname(text: str) -> bool:
    """``IsHostname``: ``HostnamePattern``, at most 255 bytes, labels of at most 63."""
    if go_len(text) > 255 or any(go_len(label) > 63 for label in text.split(".")):
        return False
    shape = "".join(c if c in "-." else "0" if "0" <= c <= "9" else
                    {"L": "a", "S": "$"}.get(unicodedata.category(c)[0], "#") for c in text)
    return _HOSTNAME.fullmatch(shape) is not None


def _cidr(text: str) -> bool:
    """``ParseCIDRSloppy``: a sloppy IP, ``/``, decimal prefix length (any leading zeros)."""
    addr, slash, mask = text.partition("/")
    ip = parse_ip_sloppy(addr) if slash else None
    digits = mask.lstrip("0") or "0"
    return (ip is not None and mask.isascii() and mask.isdigit() and len(digits) <= 3
            and int(digits) <= ip.max_prefixlen)


def _hex2(raw: bytes) -> bool:
    return len(raw) == 2 and all(chr(b) in HEX_DIGITS for b in raw)


def _mac(text: str) -> bool:
    """Go 1.23's ``net.ParseMAC``: 6, 8 or 20 bytes as ``xx:xx``, ``xx-xx`` or ``xxxx.xxxx``."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) < 14:
        return False
    if raw[2] in b":-":
        count = (len(raw) + 1) // 3
        return ((len(raw) + 1) % 3 == 0 and count in (6, 8, 20) and all(
            _hex2(raw[x:x + 2]) and (x + 2 == len(raw) or raw[x + 2] == raw[2])
            for x in range(0, len(raw), 3)))
    if raw[4] == ord("."):
        count = 2 * (len(raw) + 1) // 5
        return ((len(raw) + 1) % 5 == 0 and count in (6, 8, 20) and all(
            _hex2(raw[x:x + 2]) and _hex2(raw[x + 2:x + 4])
            and (x + 4 == len(raw) or raw[x + 4] == ord(".")) for x in range(0, len(raw), 5)))
    return False


def _isbn(text: str, size: int) -> bool:
    digits = _SPACES_AND_MINUS.sub("", text)
    if size == 10:
        if _ISBN10.search(digits) is None:
            return False
        total = sum((i + 1) * int(digits[i]) for i in range(9))
        return (total + 10 * (10 if digits[9] == "X" else int(digits[9]))) % 11 == 0
    if _ISBN13.search(digits) is None:
        return False
    total = sum((3 if i % 2 else 1) * int(digits[i]) for i in range(12))
    return int(digits[12]) == (10 - total % 10) % 10


def _credit_card(text: str) -> bool:
    digits = _NOT_DIGITS.sub("", text)
    if _CREDIT_CARD.search(digits) is None:
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n % 10 + 1 if n >= 10 else n
    return total % 10 == 0


_UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9,
          "m": 60 * 10**9, "h": 3600 * 10**9}


def _go_duration(text: str) -> bool:
    """``time.ParseDuration``: ``[-+]?([0-9]*(\\.[0-9]*)?[a-zµμ]+)+`` with its overflow rules
    (uint64 arithmetic, a total of 1<<63 only when negative)."""
    s = text[1:] if text[:1] in ("-", "+") else text
    if s in ("", "0"):
        return s == "0"
    total, big = 0, 1 << 63
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            return False
        i = value = 0
        while i < len(s) and "0" <= s[i] <= "9":
            if value > big // 10 or (value := value * 10 + int(s[i])) > big:
                return False
            i += 1
        pre, s = i > 0, s[i:]
        frac, scale, post = 0, 1.0, False
        if s[:1] == ".":
            i, overflow = 1, False
            while i < len(s) and "0" <= s[i] <= "9":
                if not overflow:
                    nxt = frac * 10 + int(s[i])
                    overflow = frac > (big - 1) // 10 or nxt > big
                    if not overflow:
                        frac, scale = nxt, scale * 10
                i += 1
            post, s = i > 1, s[i:]
        if not pre and not post:
            return False
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        unit = _UNITS.get(s[:i])
        s = s[i:]
        if unit is None or value > big // unit:
            return False
        value *= unit
        if frac > 0:
            value += int(float(frac) * (float(unit) / scale))
            if value > big:
                return False
        total = (total + value) & _U64
        if total > big:
            return False
    return text[0] == "-" or total < big


_DURATION_TERM = re.compile(f"([0-9]+){_WS}*([A-Za-z\u00b5]+)")
_DURATION_UNITS = (("ns", "nano"), ("us", "\u00b5s", "micro"), ("ms", "milli"), ("s", "sec"),
                   ("m", "min"), ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))


def _duration(text: str) -> bool:
    """strfmt's ``ParseDuration``: Go's, else every ``<int><space><unit>`` found anywhere
    (an int beyond int64 fails it all; one known unit, or unit prefix, suffices)."""
    if _go_duration(text):
        return True
    known = False
    for term in _DURATION_TERM.finditer(text):
        digits = term[1].lstrip("0")
        if len(digits) > 19 or (digits and int(digits) > _MAX_INT64):
            return False
        unit = term[2].lower()
        known = known or any(unit == v or (v == vs[-1] and unit.startswith(v))
                             for vs in _DURATION_UNITS for v in vs)
    return known


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: _BSON_ID.fullmatch(s) is not None,
    "uri": is_uri,
    "email": is_email,
    "hostname": _hostname,
    "ipv4": lambda s: parse_ip_sloppy(s) is not None and "." in s,
    "ipv6": lambda s: go_ip(s) is not None and ":" in s,
    "cidr": _cidr,
    "mac": _mac,
    "uuid": lambda s: _UUID.search(s) is not None,
    "uuid3": lambda s: _UUID3.search(s) is not None,
    "uuid4": lambda s: _UUID4.search(s) is not None,
    "uuid5": lambda s: _UUID5.search(s) is not None,
    "isbn": lambda s: _isbn(s, 10) or _isbn(s, 13),
    "isbn10": lambda s: _isbn(s, 10),
    "isbn13": lambda s: _isbn(s, 13),
    "creditcard": _credit_card,
    "ssn": lambda s: go_len(s) == 11 and _SSN.search(s) is not None,
    "hexcolor": lambda s: _HEX_COLOR.search(s) is not None,
    "rgbcolor": lambda s: _RGB_COLOR.search(s) is not None,
    "byte": lambda s: _BASE64.search(s) is not None,
    "password": lambda s: True,
    "date": _date,
    "duration": _duration,
    "datetime": _date_time,
    "k8sshortname": lambda s: go_len(s) <= 63 and _SHORT_NAME.search(s) is not None,
    "k8slongname": lambda s: go_len(s) <= 253 and _LONG_NAME.search(s) is not None,
}


def format_ok(fmt: str, value: str) -> bool:
    """Whether a real server accepts ``value`` for ``format: fmt`` (True when it does not check
    that format)."""
    check = _CHECKS.get(fmt.replace("-", ""))
    return check is None or check(value)
