"""A small CEL evaluator for CRD ``x-kubernetes-validations`` rules (parsing: ``cel_syntax``).

Why: slicectl's CRD validates its spec with CEL (non-empty selectors, unique port names, known
operators, int-or-string ranges); the embedded server must enforce those rules like a real one
without a CEL runtime dependency. This evaluates the subset those rules use:

- literals (int, double, string incl. raw ``r'..'``, bool, null), lists ``[..]``, maps ``{k: v}``;
- ``self`` / ``oldSelf`` and other variables, field access ``a.b``, indexing ``a[i]``;
- ``!``, unary ``-``, ``* / %``, ``+ -``, ``== != < <= > >=``, ``in``, ``&&``, ``||``
  (commutative error absorption as in CEL), ``c ? a : b``;
- ``has(a.b)``, ``size(x)``/``x.size()``, ``type(x)``, ``int(x)``, ``string(x)``, ``double(x)``,
  type names ``int string bool double list map null_type``;
- macros ``all exists exists_one map filter``; string methods ``matches startsWith endsWith
  contains lowerAscii upperAscii``.

Anything else (unknown functions, optionals, ``oldSelf``-only transition rules without an old
value, syntax outside the subset) raises :class:`Unsupported`: the caller skips that rule rather
than failing the object. Runtime errors (missing field, bad types) raise :class:`CelError`, which
a real server reports as a failed rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slicectl.sim.validation.cel_syntax import (
    MACROS,
    TYPE_NAMES,
    CelType,
    Node,
    Unsupported,
    compile_rule,
)
from slicectl.sim.validation.goregex import go_regex

__all__ = ["CelError", "CelType", "Unsupported", "evaluate", "type_of"]


class CelError(Exception):
    """Evaluation failed at runtime (e.g. ``no such key``)."""


def evaluate(text: str, variables: dict[str, Any]) -> Any:
    """Evaluate the CEL expression ``text`` with ``variables`` (e.g. ``{"self": obj}``)."""
    return _eval(compile_rule(text), variables)


def type_of(value: Any) -> CelType:
    if isinstance(value, bool):
        return CelType("bool")
    if isinstance(value, int):
        return CelType("int")
    if isinstance(value, float):
        return CelType("double")
    if isinstance(value, str):
        return CelType("string")
    if isinstance(value, list):
        return CelType("list")
    if isinstance(value, dict):
        return CelType("map")
    if isinstance(value, CelType):
        return CelType("type")
    return CelType("null_type")


def _eval(node: Node, env: dict[str, Any]) -> Any:
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "var":
        name = node[1]
        if name in env:
            return env[name]
        if name in TYPE_NAMES:
            return CelType(name)
        raise Unsupported(f"undeclared reference to {name!r}")
    if op in ("&&", "||"):
        return _logic(op, node[1], node[2], env)
    if op == "cond":
        cond = _eval(node[1], env)
        if not isinstance(cond, bool):
            raise CelError("no matching overload for '_?_:_'")
        return _eval(node[2] if cond else node[3], env)
    if op == "!":
        value = _eval(node[1], env)
        if not isinstance(value, bool):
            raise CelError("no matching overload for '!_'")
        return not value
    if op == "neg":
        value = _eval(node[1], env)
        if not _is_number(value):
            raise CelError("no matching overload for '-_'")
        return -value
    if op == "select":
        return _select(_eval(node[1], env), node[2])
    if op == "index":
        return _index(_eval(node[1], env), _eval(node[2], env))
    if op == "list":
        return [_eval(n, env) for n in node[1]]
    if op == "map":
        return {_eval(k, env): _eval(v, env) for k, v in node[1]}
    if op == "call":
        return _call(node[1], node[2], env)
    if op == "method":
        return _method(node[1], node[2], node[3], env)
    return _binary(op, _eval(node[1], env), _eval(node[2], env))


def _logic(op: str, left: Node, right: Node, env: dict[str, Any]) -> bool:
    decisive = op == "||"
    error: CelError | None = None
    try:
        value = _eval(left, env)
        if not isinstance(value, bool):
            raise CelError(f"no matching overload for '_{op}_'")
        if value is decisive:
            return decisive
    except CelError as exc:
        error = exc
    value = _eval(right, env)
    if not isinstance(value, bool):
        raise CelError(f"no matching overload for '_{op}_'")
    if value is decisive:
        return decisive
    if error is not None:
        raise error
    return not decisive


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _select(target: Any, name: str) -> Any:
    if not isinstance(target, dict):
        raise CelError(f"no such key: {name}")
    if name not in target:
        raise CelError(f"no such key: {name}")
    return target[name]


def _index(target: Any, key: Any) -> Any:
    if isinstance(target, list):
        if not isinstance(key, int) or isinstance(key, bool) or not 0 <= key < len(target):
            raise CelError(f"index out of bounds: {key}")
        return target[key]
    if isinstance(target, dict):
        if key not in target:
            raise CelError(f"no such key: {key}")
        return target[key]
    raise CelError("no matching overload for '_[_]'")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _binary(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op == "in":
        if isinstance(b, list):
            return any(_equal(a, x) for x in b)
        if isinstance(b, dict):
            return a in b
        raise CelError("no matching overload for '@in'")
    comparable = (_is_number(a) and _is_number(b)) or (
        type(a) is type(b) and isinstance(a, str | bool)
    )
    if op in ("<", "<=", ">", ">="):
        if not comparable:
            raise CelError(f"no matching overload for '_{op}_'")
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "+":
        if (_is_number(a) and _is_number(b)) or (type(a) is type(b) and isinstance(a, str | list)):
            return a + b
        raise CelError("no matching overload for '_+_'")
    if not (_is_number(a) and _is_number(b)):
        raise CelError(f"no matching overload for '_{op}_'")
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise CelError("division by zero" if op == "/" else "modulus by zero")
    if isinstance(a, int) and isinstance(b, int):
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return quotient if op == "/" else a - b * quotient
    return a / b if op == "/" else a % b


def _size(value: Any) -> int:
    if isinstance(value, str | list | dict):
        return len(value)
    raise CelError("no matching overload for 'size'")


def _call(name: str, args: list[Node], env: dict[str, Any]) -> Any:
    if name == "has":
        target = _eval(args[0][1], env)
        return isinstance(target, dict) and args[0][2] in target
    values = [_eval(a, env) for a in args]
    if name == "size" and len(values) == 1:
        return _size(values[0])
    if name == "type" and len(values) == 1:
        return type_of(values[0])
    if name == "int" and len(values) == 1:
        return _to_int(values[0])
    if name == "double" and len(values) == 1 and (_is_number(values[0])
                                                  or isinstance(values[0], str)):
        try:
            return float(values[0])
        except ValueError as exc:
            raise CelError(str(exc)) from exc
    if name == "string" and len(values) == 1:
        return _to_string(values[0])
    if name == "matches" and len(values) == 2:
        return _matches(values[0], values[1])
    raise Unsupported(f"function {name}/{len(values)}")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise CelError("no matching overload for 'int'")
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError as exc:
            raise CelError(f"cannot convert {value!r} to int") from exc
    raise CelError("no matching overload for 'int'")


def _to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise CelError("no matching overload for 'string'")


def _matches(text: Any, pattern: Any) -> bool:
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise CelError("no matching overload for 'matches'")
    try:
        return go_regex(pattern).search(text) is not None
    except re.error as exc:
        raise CelError(f"invalid regex {pattern!r}: {exc}") from exc


_STRING_METHODS: dict[str, Callable[[str, str], bool]] = {
    "startsWith": lambda s, a: s.startswith(a),
    "endsWith": lambda s, a: s.endswith(a),
    "contains": lambda s, a: a in s,
}


def _method(target_node: Node, name: str, args: list[Node], env: dict[str, Any]) -> Any:
    if name in MACROS:
        return _macro(_eval(target_node, env), name, args, env)
    target = _eval(target_node, env)
    values = [_eval(a, env) for a in args]
    if name == "size" and not values:
        return _size(target)
    if name == "matches" and len(values) == 1:
        return _matches(target, values[0])
    if name in _STRING_METHODS and len(values) == 1:
        if not isinstance(target, str) or not isinstance(values[0], str):
            raise CelError(f"no matching overload for '{name}'")
        return _STRING_METHODS[name](target, values[0])
    if name in ("lowerAscii", "upperAscii") and not values and isinstance(target, str):
        return target.lower() if name == "lowerAscii" else target.upper()
    raise Unsupported(f"method {name}/{len(values)}")


def _macro(target: Any, name: str, args: list[Node], env: dict[str, Any]) -> Any:
    if isinstance(target, list):
        items = target
    elif isinstance(target, dict):
        items = list(target)
    else:
        raise CelError(f"no matching overload for '{name}'")
    var = args[0][1]

    def run(body: Node, item: Any) -> Any:
        return _eval(body, {**env, var: item})

    def test(item: Any, body: Node) -> bool:
        value = run(body, item)
        if not isinstance(value, bool):
            raise CelError(f"no matching overload for '{name}'")
        return value

    if name == "all":
        return _fold_logic(items, lambda i: test(i, args[1]), want=False)
    if name == "exists":
        return _fold_logic(items, lambda i: test(i, args[1]), want=True)
    if name == "exists_one":
        return sum(1 for i in items if test(i, args[1])) == 1
    if name == "filter":
        return [i for i in items if test(i, args[1])]
    if len(args) == 3:
        return [run(args[2], i) for i in items if test(i, args[1])]
    return [run(args[1], i) for i in items]


def _fold_logic(items: list[Any], check: Callable[[Any], bool], want: bool) -> bool:
    """``all`` stops at the first false, ``exists`` at the first true; errors absorb like CEL."""
    error: CelError | None = None
    for item in items:
        try:
            if check(item) is want:
                return want
        except CelError as exc:
            error = exc
    if error is not None:
        raise error
    return not want
