"""Go's ``net/url`` and ``net/mail`` parsers, as kube-openapi's ``uri`` and ``email`` formats
call them (``url.ParseRequestURI``, ``mail.ParseAddress``).

Why: these two formats are whole parsers, not patterns, and the largest part of the string
format checks of :mod:`slicectl.sim.validation.strfmt`, which explains the versions followed
(Go 1.26's ``urlstrictcolons`` for URIs, the strictest of Go 1.23-1.26 for addresses): where a
port would be out of proportion they are harsher than a real server, never kinder.
"""

from __future__ import annotations

import ipaddress

from slicectl.sim.validation.names import go_len

HEX_DIGITS = "0123456789abcdefABCDEF"


def go_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``net.ParseIP`` (``netip.ParseAddr`` without a zone)."""
    if not text.isascii() or "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _host_byte(code: int) -> bool:
    """An ASCII byte ``url.shouldEscape`` leaves alone in a host or zone."""
    return code < 0x80 and (chr(code).isalnum() or chr(code) in "!$&'()*+,;=:[]<>\"-_.~")


def _escape_ok(text: str, mode: str) -> bool:
    """``url.unescape``'s checks in ``mode`` (path, host or zone): well-formed ``%XX``; in a
    host ``%XX`` only for bytes >= 0x80 or ``%25``, in a zone only for host bytes, a space or
    ``%25``; raw ASCII in either only if it needs no escaping."""
    i = 0
    while i < len(text):
        if text[i] == "%":
            pair = text[i + 1:i + 3]
            if len(pair) < 2 or not all(c in HEX_DIGITS for c in pair):
                return False
            byte = int(pair, 16)
            if mode == "host" and byte < 0x80 and pair != "25":
                return False
            if mode == "zone" and pair not in ("25", "20") and not _host_byte(byte):
                return False
            i += 3
            continue
        if mode != "path" and text[i] < "\x80" and not _host_byte(ord(text[i])):
            return False
        i += 1
    return True


def _host_ok(scheme: str, host: str) -> bool:
    """``url.parseHost`` (Go 1.26): a bracketed IPv6 literal (optional zone) and port, or a
    reg-name/IPv4 with an optional port."""
    bracket = host.rfind("[")
    if bracket > 0:
        return False
    if bracket == 0:
        close = host.rfind("]")
        port = host[close + 1:]
        if close < 0 or not _port_ok(port):
            return False
        name = host[1:close]
        zone = name.find("%25")
        addr = name if zone < 0 else name[:zone]
        if zone >= 0 and (len(name) == zone + 3 or not _escape_ok(name[zone:], "zone")):
            return False
        ip = go_ip(addr)
        return ip is not None and ip.version == 6
    first = host.find(":")
    if first >= 0:
        at = first if scheme in ("http", "https") else host.rfind(":")
        if not _port_ok(host[at:]):
            return False
    return _escape_ok(host, "host")


def _port_ok(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


def is_uri(text: str) -> bool:
    """``url.ParseRequestURI``: an absolute URI (opaque ones unchecked past the scheme) or an
    absolute path; the query is not checked, the path's escapes are."""
    if not text or any(c < " " or c == "\x7f" for c in text):
        return False
    if text == "*":
        return True
    scheme, rest = "", text
    for i, ch in enumerate(text):
        if ch.isascii() and ch.isalpha():
            continue
        if ch.isascii() and (ch.isdigit() or ch in "+-.") and i > 0:
            continue
        if ch == ":":
            if i == 0:
                return False
            scheme, rest = text[:i].lower(), text[i + 1:]
        break
    rest = rest[:-1] if rest.endswith("?") and rest.count("?") == 1 else rest.partition("?")[0]
    if not rest.startswith("/"):
        return scheme != ""
    if scheme and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        user, at, host = authority.rpartition("@")
        if not _host_ok(scheme, host):
            return False
        if at and not (all((c.isascii() and c.isalnum()) or c in "-._:~!$&'()*+,;=%@"
                               for c in user) and _escape_ok(user, "path")):
            return False
    return _escape_ok(rest, "path")


def _encoded(word: str) -> int:
    """``mime.WordDecoder`` on ``word``: 0 not an encoded word, 1 one in a charset it knows, 2
    one in a charset it does not (an error). Its text is taken to decode (harsher)."""
    if go_len(word) < 8 or word[:2] != "=?" or word[-2:] != "?=" or word.count("?") != 4:
        return 0
    charset, _, rest = word[2:-2].partition("?")
    if not charset or rest.partition("?")[0] not in ("b", "B", "q", "Q"):
        return 0
    return 1 if charset.lower() in ("utf-8", "iso-8859-1", "us-ascii") else 2


def _vchar(ch: str) -> bool:
    return "!" <= ch <= "~" or ch >= "\x80"


class _Mail:
    """``net/mail``'s addrParser, as ``ParseAddress`` runs it on a single address."""

    def __init__(self, text: str) -> None:
        self.s = text

    def skip_space(self) -> None:
        self.s = self.s.lstrip(" \t")

    def consume(self, ch: str) -> bool:
        found = self.s.startswith(ch)
        self.s = self.s[found:]
        return found

    def comment(self) -> str | None:
        """``consumeComment`` (after its ``(``): nested, ``\\`` escapes; None if unclosed."""
        depth, i, out = 1, 0, []
        while i < len(self.s) and depth:
            if self.s[i] == "\\" and i + 1 < len(self.s):
                i += 1
            elif self.s[i] in "()":
                depth += 1 if self.s[i] == "(" else -1
            if depth:
                out.append(self.s[i])
            i += 1
        self.s = self.s[i:]
        return None if depth else "".join(out)

    def skip_cfws(self) -> bool:
        self.skip_space()
        while self.consume("("):
            if self.comment() is None:
                return False
            self.skip_space()
        return True

    def quoted(self) -> str | None:
        out: list[str] = []
        escaped = False
        for i, ch in enumerate(self.s[1:], 1):
            if not escaped and ch == '"':
                self.s = self.s[i + 1:]
                return "".join(out)
            if not (_vchar(ch) or ch in " \t"):
                return None
            escaped = not escaped and ch == "\\"
            if not escaped:
                out.append(ch)
        return None

    def atom(self, permissive: bool) -> str | None:
        i = 0
        while i < len(self.s) and (self.s[i] == "." or (
                _vchar(self.s[i]) and self.s[i] not in '()<>[]:;@\\,"')):
            i += 1
        word, self.s = self.s[:i], self.s[i:]
        if not word or (not permissive and (word[0] == "." or ".." in word or word[-1] == ".")):
            return None
        return word

    def addr_spec(self) -> bool:
        """local-part (dot-atom or quoted) ``@`` domain (dot-atom or an IP domain-literal)."""
        orig = self.s
        self.skip_space()
        local = self.quoted() if self.s.startswith('"') else self.atom(False)
        ok = bool(local) and self.consume("@")
        self.skip_space()
        if ok and self.s.startswith("["):
            end = self.s.find("]")
            ok = end > 0 and go_ip(self.s[1:end]) is not None  # Go 1.23-1.26: net.ParseIP
            self.s = self.s[end + 1:]
        elif ok:
            ok = self.atom(False) is not None
        if not ok:
            self.s = orig
        return ok

    def phrase(self) -> bool:
        """``consumePhrase`` as Go 1.26 runs it (stricter than 1.23's): CFWS between words only
        once a plain (not encoded) word came; an encoded word of empty text is no word."""
        words = plain = 0
        while True:
            if plain and not self.skip_cfws():
                return False
            self.skip_space()
            quoted = self.s.startswith('"')
            word = None if not self.s else self.quoted() if quoted else self.atom(True)
            encoded = 0 if quoted or word is None else _encoded(word)
            if word is None or encoded == 2:
                return words > 0
            words += not encoded or not word.endswith("??=")
            plain += not encoded

    def address(self, group: bool) -> bool:
        """``parseAddress``: an addr-spec (and a comment), ``[phrase] <addr-spec>``, or with
        ``group`` a group of exactly one address (``ParseAddress`` wants one)."""
        self.skip_space()
        if self.s and self.addr_spec():
            self.skip_space()
            if not self.consume("("):
                return True
            text = self.comment()  # consumeDisplayNameComment
            return text is not None and all(
                _encoded(w) != 2 for w in text.replace("\t", " ").split(" "))
        if not self.s or (not self.s.startswith("<") and not self.phrase()):
            return False
        self.skip_space()
        if group and self.consume(":"):
            return self.address(False) and self.skip_cfws() and self.consume(";") and (
                self.skip_cfws())
        return self.consume("<") and self.addr_spec() and self.consume(">")


def is_email(text: str) -> bool:
    """``mail.ParseAddress(text)`` succeeds."""
    parser = _Mail(text)
    return parser.address(True) and parser.skip_cfws() and not parser.s
