"""The syntax half of the embedded server's CEL subset: tokens, the parser, compiled rules.

Why separate: parsing decides *which* CEL this server understands (anything else raises
:class:`Unsupported` and the rule is skipped, never failing an object); evaluation, in
:mod:`slicectl.sim.validation.cel`, decides what an understood rule means. Compiled rules are
cached per expression text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

Node = tuple[Any, ...]


class Unsupported(Exception):
    """The expression uses CEL this evaluator does not implement."""


@dataclass(frozen=True)
class CelType:
    name: str


TYPE_NAMES = ("int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type",
              "type")
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+\.\d+(?:[eE][+-]?\d+)?|0x[0-9a-fA-F]+|\d+[uU]?)
    | (?P<str>[rR]?(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'))
    | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>&&|\|\||==|!=|<=|>=|\?\.|[-+*/%!<>?:.,()\[\]{}])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
MACROS = ("all", "exists", "exists_one", "map", "filter")


def _tokenize(text: str) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"unexpected input at {pos}: {text[pos:pos + 10]!r}")
        pos = m.end()
        if m.group("num") is not None:
            raw = m.group("num").rstrip("uU")
            value: Any = float(raw) if "." in raw else int(raw, 0)
            tokens.append(("lit", value))
        elif m.group("str") is not None:
            tokens.append(("lit", _unquote(m.group("str"))))
        elif m.group("id") is not None:
            word = m.group("id")
            if word in ("true", "false"):
                tokens.append(("lit", word == "true"))
            elif word == "null":
                tokens.append(("lit", None))
            elif word == "in":
                tokens.append(("op", "in"))
            else:
                tokens.append(("id", word))
        else:
            tokens.append(("op", m.group("op")))
    tokens.append(("end", None))
    return tokens


def _unquote(token: str) -> str:
    raw = token[0] in "rR"
    body = token[2:-1] if raw else token[1:-1]
    if raw:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise Unsupported(f"escape \\{nxt}")
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> tuple[str, Any]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, Any]:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def accept(self, op: str) -> bool:
        if self.peek() == ("op", op):
            self.pos += 1
            return True
        return False

    def expect(self, op: str) -> None:
        if not self.accept(op):
            raise Unsupported(f"expected {op!r}, got {self.peek()[1]!r}")

    def parse(self) -> Node:
        node = self.expr()
        if self.peek()[0] != "end":
            raise Unsupported(f"unexpected {self.peek()[1]!r}")
        return node

    def expr(self) -> Node:
        cond = self.binary(0)
        if self.accept("?"):
            yes = self.expr()
            self.expect(":")
            no = self.expr()
            return ("cond", cond, yes, no)
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self._LEVELS[level]:
            op = self.take()[1]
            node = (op, node, self.binary(level + 1))
        return node

    def unary(self) -> Node:
        if self.accept("!"):
            return ("!", self.unary())
        if self.accept("-"):
            return ("neg", self.unary())
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while True:
            if self.accept("."):
                kind, name = self.take()
                if kind != "id":
                    raise Unsupported("field name expected")
                if self.accept("("):
                    node = ("method", node, name, self.args(")"))
                else:
                    node = ("select", node, name)
            elif self.accept("["):
                index = self.expr()
                self.expect("]")
                node = ("index", node, index)
            elif self.peek() == ("op", "?."):
                raise Unsupported("optional field selection")
            else:
                return node

    def args(self, close: str) -> list[Node]:
        items: list[Node] = []
        if self.accept(close):
            return items
        while True:
            items.append(self.expr())
            if self.accept(close):
                return items
            self.expect(",")
            if self.accept(close):
                return items

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "lit":
            return ("lit", value)
        if kind == "id":
            if self.accept("("):
                return ("call", value, self.args(")"))
            return ("var", value)
        if value == "(":
            node = self.expr()
            self.expect(")")
            return node
        if value == "[":
            return ("list", self.args("]"))
        if value == "{":
            entries: list[tuple[Node, Node]] = []
            while not self.accept("}"):
                key = self.expr()
                self.expect(":")
                entries.append((key, self.expr()))
                if not self.accept(","):
                    self.expect("}")
                    break
            return ("map", entries)
        raise Unsupported(f"unexpected {value!r}")


@cache
def compile_rule(text: str) -> Node:
    """Parse ``text`` (cached); raises Unsupported for syntax outside the subset."""
    try:
        return _Parser(text).parse()
    except RecursionError as exc:
        raise Unsupported("expression too deep") from exc
