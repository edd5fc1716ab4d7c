"""Static worst-case cost of one CEL rule, as cel-go's ``checker.Cost`` estimates it.

Why: kube-apiserver refuses a CRD whose rules could cost too much to evaluate, and it decides
that before any object exists, from the schema alone (see :mod:`cel_budget`). This module is
the per-expression half: it walks a rule parsed by :mod:`cel_syntax` the way cel-go's coster
walks a checked AST (macros expanded into comprehensions), with the Kubernetes cost library's
rules for its functions and the apiextensions size estimator (:func:`cel_types.size_at`) for
the sizes of values reached from ``self``. Only the maximum is tracked: the minimum never
affects the maximum, and the server only compares the maximum with its limits.

What decides the figures (cel-go v0.22, Kubernetes 1.32):

- an identifier or a field selection costs 1 (a selection on a dyn value is free; ``has()``
  costs only its operand); constants 0; a list literal 10, a map literal 30;
- ``&&``/``||`` cost both sides; ``c ? a : b`` costs ``c`` plus the dearer branch;
- ``==``/``!=`` and string ``<``... cost 0.1 per element of the *smaller* operand's size;
  ``in`` a list costs the list's size; ``s.matches(re)`` costs
  ``ceil(0.1 * (len(s) + 1)) * ceil(0.25 * len(re))``; ``contains``/``startsWith``/
  ``endsWith``/string ``+``/``lowerAscii`` traverse their strings at 0.1 per element;
  the Kubernetes library functions follow :mod:`cel_cost_lib`; every other call costs 1 plus
  its arguments;
- a macro costs its range plus ``size(range)`` times its step and loop condition.

Sizes come from (in order) the expression itself (literals, results whose size is known), the
schema along the value's path, 1 for fixed-size scalars, else unbounded (2^64-1, saturating).
An identifier that is not an iteration variable (``int``, ``string``, ``oldSelf``) has a
one-element path, which the size estimator resolves to the rule's own node, exactly as the
real server does: ``type(self) == int`` on an int-or-string costs as much as a scan of it.
Syntax outside the subset, and functions this module has no cost rule for, raise
:class:`cel_syntax.Unsupported`.
"""

from __future__ import annotations

from slicectl.sim.validation.cel_cost_lib import (
    ACCU,
    MAX,
    REGEX,
    TRAVERSAL,
    Est,
    add,
    by_factor,
    library_call,
    library_equality,
    mul,
)
from slicectl.sim.validation.cel_syntax import TYPE_NAMES, Node, Unsupported, compile_rule
from slicectl.sim.validation.cel_types import SCALAR_KINDS, Decl, simple, size_at

__all__ = ["estimate"]

LIST_CREATE = 10
MAP_CREATE = 30


def estimate(text: str, root: Decl) -> int:
    """Worst-case cost of rule ``text`` evaluated with ``self`` of type ``root``."""
    return _Coster(root).cost(compile_rule(text)).cost


class _Coster:
    def __init__(self, root: Decl) -> None:
        self.root = root
        self.scopes: dict[str, list[Est]] = {}

    def size(self, est: Est, scalar_fallback: bool = True) -> int:
        if est.size is not None:
            return est.size
        if est.path and est.path[0] != ACCU:
            found = size_at(self.root, est.path)
            if found is not None:
                return found
        if scalar_fallback and est.type.kind in SCALAR_KINDS:
            return 1
        return MAX

    def library_size(self, est: Est) -> int:
        return self.size(est, scalar_fallback=False)

    def elem_size(self, lst: Est) -> int:
        """Size of a list's elements, looked up along its path (library listElementNode)."""
        if not lst.path or lst.path[0] == ACCU:
            return MAX
        found = size_at(self.root, [*lst.path, "@items"])
        return MAX if found is None else found

    def library(self, name: str, recv: Est | None, args: list[Est], base: int) -> Est:
        found = library_call(name, recv, args, self.library_size, self.elem_size)
        if found is None:
            raise Unsupported(f"function {name}/{len(args)}")
        cost, typ, size = found
        return Est(add(cost, base), typ, size=size)

    def cost(self, node: Node) -> Est:
        op = node[0]
        if op == "lit":
            return _literal(node[1])
        if op == "var":
            return self.ident(node[1])
        if op == "select":
            return self.select(node[1], node[2])
        if op == "list":
            items = [self.cost(n) for n in node[1]]
            elem = items[0].type if items and all(
                i.type.kind == items[0].type.kind for i in items) else simple("dyn")
            return Est(add(*(i.cost for i in items), LIST_CREATE), Decl("list", elem=elem),
                       size=len(items))
        if op == "map":
            parts = [self.cost(n) for pair in node[1] for n in pair]
            return Est(add(*(p.cost for p in parts), MAP_CREATE),
                       Decl("map", key=simple("dyn"), elem=simple("dyn")), size=len(node[1]))
        if op == "call":
            return self.call(node[1], node[2])
        if op == "method":
            return self.method(node[1], node[2], node[3])
        if op == "index":
            return self.index(node[1], node[2])
        if op == "neg" and node[1][0] == "lit" and type(node[1][1]) in (int, float):
            return _literal(-node[1][1])  # CEL's grammar reads -1 as one literal
        if op in ("!", "neg"):
            inner = self.cost(node[1])
            return Est(add(1, inner.cost), simple("bool") if op == "!" else inner.type)
        if op == "cond":
            cond, yes, no = (self.cost(n) for n in node[1:4])
            kind = yes.type if yes.type.kind == no.type.kind else simple("dyn")
            return Est(add(cond.cost, max(yes.cost, no.cost)), kind,
                       size=max(self.size(yes), self.size(no)))
        return self.binary(op, self.cost(node[1]), self.cost(node[2]))

    def ident(self, name: str) -> Est:
        scope = self.scopes.get(name)
        if scope:
            rng = scope[-1]
            kind = rng.type.kind
            if kind == "list":
                return Est(1, rng.type.elem or simple("dyn"), [*(rng.path or []), "@items"])
            if kind == "map":
                return Est(1, rng.type.key or simple("string"), [*(rng.path or []), "@keys"])
            return Est(1, simple("dyn"))
        if name in ("self", "oldSelf"):
            return Est(1, self.root, [name])
        if name in TYPE_NAMES:
            return Est(1, simple("type"), [name])
        raise Unsupported(f"undeclared reference to {name!r}")

    def select(self, target: Node, name: str) -> Est:
        operand = self.cost(target)
        kind = operand.type.kind
        cost = add(operand.cost, 1) if kind in ("object", "map") else operand.cost
        if kind == "object":
            typ = operand.type.fields.get(name, simple("dyn"))
        elif kind == "map":
            typ = operand.type.elem or simple("dyn")
        else:
            typ = simple("dyn")
        return Est(cost, typ, [*(operand.path or []), name])

    def index(self, target: Node, key: Node) -> Est:
        container, sub = self.cost(target), self.cost(key)
        typ = container.type.elem if container.type.kind in ("list", "map") else None
        suffix = "@values" if container.type.kind in ("map", "dyn") else "@items"
        return Est(add(1, container.cost, sub.cost), typ or simple("dyn"),
                   [*(container.path or []), suffix])

    def binary(self, op: str, lhs: Est, rhs: Est) -> Est:
        args = add(lhs.cost, rhs.cost)
        kinds = {lhs.type.kind, rhs.type.kind}
        boolean = simple("bool")
        if op in ("&&", "||"):
            return Est(args, boolean)
        if op in ("==", "!="):
            special = library_equality(lhs, rhs) if op == "==" else None
            cost = self.compare(lhs, rhs) if special is None else special
            return Est(add(cost, args), boolean)
        if op in ("<", "<=", ">", ">="):
            costs = []
            if kinds <= {"string", "bytes", "dyn"}:  # less_string, less_bytes
                costs.append(add(self.compare(lhs, rhs), args))
            if not kinds <= {"string", "bytes"}:  # the O(1) numeric, bool, time overloads
                costs.append(add(1, args))
            return Est(max(costs), boolean)
        if op == "in":
            rkind = rhs.type.kind
            costs = []
            if rkind in ("list", "dyn"):  # in_list: O(size of the list)
                costs.append(add(by_factor(self.size(rhs), 1.0), args))
            if rkind != "list":  # in_map
                costs.append(add(1, args))
            return Est(max(costs), boolean)
        if op == "+":
            return self.plus(lhs, rhs, args)
        return Est(add(1, args), lhs.type if lhs.type.kind != "dyn" else rhs.type)

    def compare(self, lhs: Est, rhs: Est) -> int:
        return by_factor(min(self.size(lhs), self.size(rhs)), TRAVERSAL)

    def plus(self, lhs: Est, rhs: Est, args: int) -> Est:
        kinds = {lhs.type.kind, rhs.type.kind}
        size = add(self.size(lhs), self.size(rhs))
        costs, result_size = [], None
        if kinds <= {"string", "bytes", "dyn"}:  # add_string, add_bytes: a copy of both
            costs.append(add(by_factor(size, TRAVERSAL), args))
            result_size = size
        if kinds <= {"list", "dyn"}:  # add_list: O(1), but its size is tracked
            costs.append(add(1, args))
            result_size = size
        if not kinds <= {"string", "bytes", "list"}:  # numbers, durations, timestamps
            costs.append(add(1, args))
        typ = lhs.type if lhs.type.kind != "dyn" else rhs.type
        return Est(max(costs), typ, size=result_size)

    def call(self, name: str, args: list[Node]) -> Est:
        if name == "has":
            return Est(self.cost(args[0][1]).cost, simple("bool"))
        ests = [self.cost(a) for a in args]
        total = add(*(e.cost for e in ests))
        results = {"size": "int", "type": "type", "int": "int", "uint": "uint",
                   "double": "double", "string": "string", "bool": "bool", "dyn": "dyn",
                   "matches": "bool"}
        if name not in results or len(ests) != (2 if name == "matches" else 1):
            return self.library(name, None, ests, total)
        cost = add(1, total)
        if name == "string" and ests[0].type.kind in ("bytes", "dyn"):
            cost = max(cost, add(by_factor(self.size(ests[0]), TRAVERSAL), total))
        return Est(cost, simple(results[name]))

    def method(self, target: Node, name: str, args: list[Node]) -> Est:
        if name in ("all", "exists", "exists_one", "map", "filter"):
            return self.macro(target, name, args)
        ests = [self.cost(a) for a in args]
        total = add(*(e.cost for e in ests))
        recv = self.cost(target)
        base = add(recv.cost, total)
        if name == "size" and not ests:
            return Est(add(1, base), simple("int"))
        if len(ests) == 1 and name == "matches":
            text = by_factor(add(self.size(recv), 1), TRAVERSAL)
            regex = by_factor(self.size(ests[0]), REGEX)
            return Est(add(mul(text, regex), base), simple("bool"))
        if len(ests) == 1 and name in ("startsWith", "endsWith"):
            return Est(add(by_factor(self.size(ests[0]), TRAVERSAL), base), simple("bool"))
        if len(ests) == 1 and name == "contains":
            text = by_factor(self.size(recv), TRAVERSAL)
            sub = by_factor(self.size(ests[0]), TRAVERSAL)
            return Est(add(mul(text, sub), base), simple("bool"))
        if not ests and name in ("lowerAscii", "upperAscii"):
            size = self.size(recv, scalar_fallback=False)
            return Est(add(by_factor(size, TRAVERSAL), base), simple("string"), size=size)
        return self.library(name, recv, ests, base)

    def macro(self, target: Node, name: str, args: list[Node]) -> Est:
        rng = self.cost(target)
        var = args[0][1]
        self.scopes.setdefault(var, []).append(rng)
        try:
            body = [self.cost(a) for a in args[1:]]
        finally:
            self.scopes[var].pop()
        # Per element: loop condition + step, of the comprehension each macro expands to.
        if name == "all":  # cond !strictly_false(@r) = 2; step @r && p
            per, init, result, typ = add(2, 1, body[0].cost), 0, 1, simple("bool")
        elif name == "exists":  # cond !strictly_false(!@r) = 3; step @r || p
            per, init, result, typ = add(3, 1, body[0].cost), 0, 1, simple("bool")
        elif name == "exists_one":  # step p ? @r + 1 : @r; result @r == 1
            per, init, result, typ = add(body[0].cost, 2), 0, 2, simple("bool")
        elif name == "filter":  # step p ? @r + [x] : @r
            per, init, result = add(body[0].cost, 13), LIST_CREATE, 1
            typ = Decl("list", elem=rng.type.elem or simple("dyn"))
        else:  # map: step @r + [f], or with a filter p ? @r + [f] : @r
            transform = add(12, body[-1].cost)
            per = transform if len(body) == 1 else add(body[0].cost, transform)
            init, result, typ = LIST_CREATE, 1, Decl("list", elem=body[-1].type)
        count = self.size(rng)
        return Est(add(rng.cost, init, result, mul(count, per)), typ, size=count)


def _literal(value: object) -> Est:
    if isinstance(value, bool):
        kind, size = "bool", 1
    elif isinstance(value, int):
        kind, size = "int", 1
    elif isinstance(value, float):
        kind, size = "double", 1
    elif isinstance(value, str):
        kind, size = "string", len(value)
    else:
        kind, size = "null_type", 1
    return Est(0, simple(kind), size=size, literal=value)
