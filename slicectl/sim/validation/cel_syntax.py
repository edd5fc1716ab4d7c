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


class Uint(int):
    """An unsigned literal (``1u``): an int to the evaluator, a uint to the type checker."""


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


def _tokenize(text: str) -> tuple[list[tuple[str, Any]], list[int]]:
    """The tokens of ``text`` and the offset in ``text`` where each starts."""
    tokens: list[tuple[str, Any]] = []
    offsets: list[int] = []
    lead = len(text) - len(text.lstrip())
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"unexpected input at {pos}: {text[pos:pos + 10]!r}")
        pos = m.end()
        offsets.append(lead + m.start(m.lastgroup or 0))
        if m.group("num") is not None:
            raw = m.group("num").rstrip("uU")
            value: Any = float(raw) if "." in raw else int(raw, 0)
            if raw != m.group("num"):
                value = Uint(value)
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
    offsets.append(lead + len(text))
    return tokens, offsets


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
        self.tokens, self.offsets = _tokenize(text)
        self.pos = 0
        self.at: dict[int, int] = {}  # id(node) -> offset of the token cel-go reports it at

    def mark(self, node: Node, offset: int) -> Node:
        self.at[id(node)] = offset
        return node

    def offset(self) -> int:
        return self.offsets[self.pos]

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
        where = self.offset()
        if self.accept("?"):
            yes = self.expr()
            self.expect(":")
            no = self.expr()
            return self.mark(("cond", cond, yes, no), where)
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self._LEVELS[level]:
            where = self.offset()
            op = self.take()[1]
            node = self.mark((op, node, self.binary(level + 1)), where)
        return node

    def unary(self) -> Node:
        where = self.offset()
        if self.accept("!"):
            return self.mark(("!", self.unary()), where)
        if self.accept("-"):
            return self.mark(("neg", self.unary()), where)
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while True:
            dot = self.offset()
            if self.accept("."):
                kind, name = self.take()
                if kind != "id":
                    raise Unsupported("field name expected")
                paren = self.offset()
                if self.accept("("):
                    args = self.args(")")
                    if name in MACROS:
                        _check_macro(name, args)
                    node = self.mark(("method", node, name, args), paren)
                else:
                    node = self.mark(("select", node, name), dot)
            elif self.accept("["):
                index = self.expr()
                self.expect("]")
                node = self.mark(("index", node, index), dot)
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
        where = self.offset()
        kind, value = self.take()
        if kind == "lit":
            return self.mark(("lit", value), where)
        if kind == "id":
            paren = self.offset()
            if self.accept("("):
                args = self.args(")")
                if value == "has" and (len(args) != 1 or args[0][0] != "select"):
                    raise Unsupported("has() needs a field selection")
                return self.mark(("call", value, args), paren)
            return self.mark(("var", value), where)
        if value == "(":
            node = self.expr()
            self.expect(")")
            return node
        if value == "[":
            return self.mark(("list", self.args("]")), where)
        if value == "{":
            entries: list[tuple[Node, Node]] = []
            while not self.accept("}"):
                key = self.expr()
                self.expect(":")
                entries.append((key, self.expr()))
                if not self.accept(","):
                    self.expect("}")
                    break
            return self.mark(("map", entries), where)
        raise Unsupported(f"unexpected {value!r}")


def _check_macro(name: str, args: list[Node]) -> None:
    """A macro call's shape (``x.all(v, p)``; ``map`` may also take a filter): any other is
    outside the subset, so the evaluator, the coster and the checker may rely on it."""
    if not args or args[0][0] != "var" or len(args) not in (2, 3):
        raise Unsupported(f"macro {name} needs a variable and an expression")
    if len(args) == 3 and name != "map":
        raise Unsupported(f"macro {name} takes two arguments")


@cache
def compile_rule(text: str) -> Node:
    """Parse ``text`` (cached); raises Unsupported for syntax outside the subset."""
    return parse_located(text)[0]


def parse_located(text: str) -> tuple[Node, dict[int, int]]:
    """Parse ``text`` afresh, with the offset cel-go reports for each node (by ``id``: the
    map is valid while the returned tree lives). Raises Unsupported like :func:`compile_rule`."""
    parser = _Parser(text)
    try:
        return parser.parse(), parser.at
    except RecursionError as exc:
        raise Unsupported("expression too deep") from exc
