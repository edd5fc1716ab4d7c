"""Type-checking a CRD's CEL rule, as kube-apiserver compiles it before it accepts the CRD.

Why: a real server refuses a CRD whose rule does not compile (an undefined field, an operator
or function applied to the wrong types, a result that is not a bool) with a 422 naming the
rule; before this module the embedded server accepted every such CRD and then skipped the
rule, which is kinder than a real server. This module decides, for the CEL subset the
embedded server understands (:mod:`cel_syntax`), the errors cel-go's checker reports, in its
words and at its positions (``ERROR: <input>:1:5: undefined field 'nope'`` and the caret
line), from the rule's declared type (:func:`cel_types.decl_type`).

It knows the signatures of exactly the functions the embedded server evaluates
(:mod:`slicectl.sim.validation.cel`), and raises :class:`cel_syntax.Unsupported` for any
other: the caller refuses such a rule too, since accepting it would leave it unevaluated and
the objects it should refuse accepted. That is harsher than a real server, which knows the
whole Kubernetes CEL library (``quantity()``, ``split()``, ``sum()`` ...), and never kinder.
Object types print as ``object`` where cel-go prints a generated name (``selfType...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slicectl.sim.validation.cel_syntax import (
    MACROS,
    TYPE_NAMES,
    Node,
    Uint,
    Unsupported,
    parse_located,
)
from slicectl.sim.validation.cel_types import Decl
from slicectl.sim.validation.goregex import go_regex

__all__ = ["SIGNATURES", "CheckResult", "check_rule"]


@dataclass(frozen=True)
class T:
    """A CEL type: ``name`` and its parameters (list element; map key and value)."""

    name: str
    params: tuple[T, ...] = ()
    decl: Decl | None = None  # the schema's object type, for its fields

    def __str__(self) -> str:
        if self.params:
            return f"{self.name}({', '.join(map(str, self.params))})"
        return self.name


DYN, ERR, BOOL, INT, UINT, DOUBLE = T("dyn"), T("!error!"), T("bool"), T("int"), T("uint"), \
    T("double")
STRING, BYTES, NULL, TYPE = T("string"), T("bytes"), T("null"), T("type")
DURATION, TIMESTAMP = T("google.protobuf.Duration"), T("google.protobuf.Timestamp")
NUMBERS = ("int", "uint", "double")
ORDERED = (*NUMBERS, "string", "bytes", "bool", DURATION.name, TIMESTAMP.name)
_SCALARS = {"int": INT, "uint": UINT, "double": DOUBLE, "bool": BOOL, "string": STRING,
            "bytes": BYTES, "duration": DURATION, "timestamp": TIMESTAMP}
# The functions the embedded server both costs and evaluates (slicectl.sim.validation.cel),
# with their signatures: name -> {receiver type, or "" for a global: {argument types: result}}.
# A rule calling anything else is refused (see the module doc): accepting it would leave the
# rule unevaluated, and the objects it should refuse accepted.
SIGNATURES: dict[str, dict[str, dict[tuple[str, ...], T]]] = {
    "size": {"": {(k,): INT for k in ("string", "bytes", "list", "map")},
             **{k: {(): INT} for k in ("string", "bytes", "list", "map")}},
    "matches": {"": {("string", "string"): BOOL}, "string": {("string",): BOOL}},
    **{n: {"string": {("string",): BOOL}} for n in ("contains", "startsWith", "endsWith")},
    **{n: {"string": {(): STRING}} for n in ("lowerAscii", "upperAscii")},
    "int": {"": {(k,): INT for k in (*NUMBERS, "string")}},
    "double": {"": {(k,): DOUBLE for k in (*NUMBERS, "string")}},
    "string": {"": {(k,): STRING for k in ORDERED}},
}


@dataclass(frozen=True)
class CheckResult:
    errors: list[str]  # cel-go's "ERROR: <input>:L:C: ..." blocks, in source order
    is_bool: bool  # the rule's result can be a bool (bool or dyn)


def check_rule(text: str, self_decl: Decl) -> CheckResult:
    """Type-check ``text`` with ``self`` (and ``oldSelf``) of ``self_decl``."""
    node, at = parse_located(text)
    checker = _Checker(text, at, from_decl(self_decl))
    result = checker.type_of(node)
    return CheckResult([m for _, m in sorted(checker.errors)], result.name in ("bool", "dyn",
                                                                             ERR.name))


def from_decl(decl: Decl) -> T:
    if decl.kind == "list":
        return T("list", (from_decl(decl.elem) if decl.elem else DYN,))
    if decl.kind == "map":
        return T("map", (STRING, from_decl(decl.elem) if decl.elem else DYN))
    if decl.kind == "object":
        return T("object", decl=decl)
    return _SCALARS.get(decl.kind, DYN)


def _same(a: T, b: T) -> bool:
    """Whether ``a`` and ``b`` unify (dyn and an earlier error unify with anything)."""
    if DYN.name in (a.name, b.name) or ERR.name in (a.name, b.name):
        return True
    if a.name != b.name or len(a.params) != len(b.params):
        return False
    if a.name == "object":
        return a.decl is b.decl
    return all(_same(x, y) for x, y in zip(a.params, b.params, strict=True))


class _Checker:
    def __init__(self, text: str, at: dict[int, int], self_type: T) -> None:
        self.text, self.at = text, at
        self.scopes: dict[str, list[T]] = {"self": [self_type], "oldSelf": [self_type]}
        self.errors: list[tuple[int, str]] = []

    def error(self, node: Node, message: str) -> T:
        offset = self.at.get(id(node), 0)
        line_no = self.text.count("\n", 0, offset) + 1
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        line = self.text[start:] if end < 0 else self.text[start:end]
        column = offset - start
        self.errors.append((offset, f"ERROR: <input>:{line_no}:{column + 1}: {message}\n"
                                    f" | {line}\n | {'.' * column}^"))
        return ERR

    def overload(self, node: Node, fn: str, args: list[T], recv: T | None = None) -> T:
        if any(a.name == ERR.name for a in [*args, *([recv] if recv else [])]):
            return ERR
        shown = f"({', '.join(map(str, args))})"
        if recv is not None:
            shown = f"{recv}.{shown}"
        return self.error(node, f"found no matching overload for '{fn}' applied to '{shown}'")

    def type_of(self, node: Node) -> T:
        op = node[0]
        if op == "lit":
            value = node[1]
            return (BOOL if isinstance(value, bool) else UINT if isinstance(value, Uint) else
                    INT if isinstance(value, int) else
                    DOUBLE if isinstance(value, float) else STRING if isinstance(value, str)
                    else NULL)
        if op == "var":
            return self.var(node)
        if op == "select":
            return self.select(node, self.type_of(node[1]), node[2])
        if op == "index":
            return self.index(node)
        if op == "list":
            return self.list_literal(node[1])
        if op == "map":
            for key, value in node[1]:
                self.type_of(key), self.type_of(value)
            return T("map", (DYN, DYN))
        if op == "call":
            return self.call(node)
        if op == "method":
            return self.method(node)
        if op in ("!", "neg"):
            return self.unary(node)
        if op == "cond":
            cond, yes, no = (self.type_of(n) for n in node[1:4])
            if cond.name in ("bool", DYN.name) and _same(yes, no):
                return yes if yes.name != DYN.name else no
            return self.overload(node, "_?_:_", [cond, yes, no])
        return self.binary(node, op, self.type_of(node[1]), self.type_of(node[2]))

    def var(self, node: Node) -> T:
        name = node[1]
        if self.scopes.get(name):
            return self.scopes[name][-1]
        if name in TYPE_NAMES:
            return TYPE
        return self.error(node, f"undeclared reference to '{name}' (in container '')")

    def select(self, node: Node, target: T, name: str) -> T:
        if target.name == "object" and target.decl is not None:
            found = target.decl.fields.get(name)
            return from_decl(found) if found else self.error(node, f"undefined field '{name}'")
        if target.name == "map":
            return target.params[1]
        if target.name in (DYN.name, ERR.name):
            return target
        return self.error(node, f"type '{target}' does not support field selection")

    def index(self, node: Node) -> T:
        target, key = self.type_of(node[1]), self.type_of(node[2])
        if target.name == "list" and key.name in ("int", "uint", DYN.name):
            return target.params[0]
        if target.name == "map" and _same(target.params[0], key):
            return target.params[1]
        if target.name == DYN.name:
            return DYN
        return self.overload(node, "_[_]", [target, key])

    def list_literal(self, items: list[Node]) -> T:
        elem: T | None = None
        for item in items:
            typ = self.type_of(item)
            if elem is None or elem.name == DYN.name:
                elem = typ
            elif not _same(elem, typ):
                self.error(item, f"expected type '{elem}' but found '{typ}'")
        return T("list", (elem or DYN,))

    def unary(self, node: Node) -> T:
        inner = self.type_of(node[1])
        if node[0] == "!":
            return BOOL if inner.name in ("bool", DYN.name) else self.overload(node, "!_", [inner])
        if inner.name in ("int", "double", DURATION.name, DYN.name):
            return inner
        return self.overload(node, "-_", [inner])

    def binary(self, node: Node, op: str, lhs: T, rhs: T) -> T:
        fn = "@in" if op == "in" else f"_{op}_"
        dyn = DYN.name in (lhs.name, rhs.name)
        if op in ("&&", "||"):
            ok = {lhs.name, rhs.name} <= {"bool", DYN.name, ERR.name}
            return BOOL if ok else self.overload(node, fn, [lhs, rhs])
        if op in ("==", "!="):
            ok = _same(lhs, rhs)
            return BOOL if ok else self.overload(node, fn, [lhs, rhs])
        if op in ("<", "<=", ">", ">="):
            ok = dyn or (lhs.name in ORDERED and _same(lhs, rhs)) or (
                lhs.name in NUMBERS and rhs.name in NUMBERS)
            return BOOL if ok else self.overload(node, fn, [lhs, rhs])
        if op == "in":
            ok = rhs.name == DYN.name or (rhs.name in ("list", "map") and _same(lhs, rhs.params[0]))
            return BOOL if ok else self.overload(node, fn, [lhs, rhs])
        if dyn:
            return lhs if rhs.name == DYN.name else rhs
        result = _arithmetic(op, lhs, rhs)
        return result if result else self.overload(node, fn, [lhs, rhs])

    def call(self, node: Node) -> T:
        name, args = node[1], node[2]
        if name == "has":
            target = self.type_of(args[0][1])
            if self.select(node, target, args[0][2]).name == ERR.name:
                return ERR
            return BOOL
        types = [self.type_of(a) for a in args]
        if name == "type" and len(types) == 1:
            return TYPE
        if name == "matches" and len(args) == 2:
            self.regex(args[1])
        return self.signature(node, name, None, types)

    def method(self, node: Node) -> T:
        target, name, args = node[1], node[2], node[3]
        recv = self.type_of(target)
        if name in MACROS:
            return self.macro(target, recv, name, args)
        types = [self.type_of(a) for a in args]
        if name == "matches" and len(args) == 1:
            self.regex(args[0])
        return self.signature(node, name, recv, types)

    def signature(self, node: Node, name: str, recv: T | None, types: list[T]) -> T:
        sigs = SIGNATURES.get(name, {})
        receivers = [k for k in sigs if k]
        if recv is None and "" not in sigs:
            raise Unsupported(f"function {name}/{len(types)}")
        if recv is not None and not receivers:
            raise Unsupported(f"method {name}/{len(types)}")
        if recv is not None and recv.name in (DYN.name, ERR.name):
            results = {str(r): r for k in receivers for r in sigs[k].values()}
            return next(iter(results.values())) if len(results) == 1 else DYN
        for params, result in sigs.get("" if recv is None else recv.name, {}).items():
            if len(params) == len(types) and all(
                    t.name in (p, DYN.name, ERR.name) for p, t in zip(params, types, strict=True)):
                return result
        return self.overload(node, name, types, recv)

    def macro(self, target: Node, recv: T, name: str, args: list[Node]) -> T:
        if recv.name in ("list", "map"):
            var_type = recv.params[0]
        elif recv.name in (DYN.name, ERR.name):
            var_type = DYN
        else:
            self.error(target, f"expression of type '{recv}' cannot be range of a "
                               "comprehension (must be list, map, or dynamic)")
            var_type = DYN
        self.scopes.setdefault(args[0][1], []).append(var_type)
        try:
            body = [(n, self.type_of(n)) for n in args[1:]]
        finally:
            self.scopes[args[0][1]].pop()
        predicates = body if name != "map" else body[:-1]
        for n, typ in predicates:
            if typ.name not in ("bool", DYN.name, ERR.name):
                self.error(n, f"expected type 'bool' but found '{typ}'")
        if name == "map":
            return T("list", (body[-1][1],))
        if name == "filter":
            return T("list", (var_type,))
        return BOOL

    def regex(self, node: Node) -> None:
        if node[0] != "lit" or not isinstance(node[1], str):
            return
        try:
            go_regex(node[1])
        except re.error:
            self.error(node, "invalid matches argument")


def _arithmetic(op: str, lhs: T, rhs: T) -> T | None:
    """The result of ``lhs op rhs`` for + - * / %, or None when no overload takes them."""
    names = (lhs.name, rhs.name)
    if op in ("*", "/") or (op == "-" and lhs.name in NUMBERS):
        return lhs if lhs == rhs and lhs.name in NUMBERS else None
    if op == "%":
        return lhs if lhs == rhs and lhs.name in ("int", "uint") else None
    if op == "+":
        if lhs.name in (*NUMBERS, "string", "bytes", DURATION.name) and lhs == rhs:
            return lhs
        if lhs.name == "list" and _same(lhs, rhs):
            return lhs if lhs.params[0].name != DYN.name else rhs
        if set(names) == {DURATION.name, TIMESTAMP.name}:
            return TIMESTAMP
        return None
    table = {(DURATION.name, DURATION.name): DURATION, (TIMESTAMP.name, TIMESTAMP.name): DURATION,
             (TIMESTAMP.name, DURATION.name): TIMESTAMP}
    return table.get(names)
