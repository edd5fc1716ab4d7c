"""Cost arithmetic of cel-go's estimator, and the Kubernetes CEL library functions' costs.

Why separate from :mod:`cel_cost`: that module walks expressions; this one holds the saturating
arithmetic both use and the per-function rules of ``k8s.io/apiserver/pkg/cel/library/cost.go``
(written from it) for the library functions a CRD rule may call: string functions of the
extended strings library (``trim``, ``substring``, ``split``, ``join``, ``find``...), list
functions (``indexOf``, ``isSorted``, ``sum``, ``min``, ``max``), ``quantity``, ``url``,
``ip``/``cidr`` and their O(1) accessors. These are costed even though the embedded evaluator
does not run them (a rule it cannot run is skipped at validation time): a CRD is refused
here exactly when a real server refuses it. Sizes of library results follow the same code
(e.g. ``split`` yields at most one element per character, or its literal limit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from slicectl.sim.validation.cel_types import Decl, simple

MAX = 2**64 - 1
TRAVERSAL = 0.1  # common.StringTraversalCostFactor
REGEX = 0.25  # common.RegexStringLengthCostFactor
ACCU = "@result"  # the comprehension accumulator: never sized through the schema

# Accessors and predicates the library charges 1 for (cost.go's "nominal cost" cases).
NOMINAL = {
    "sign": "int", "asInteger": "int", "isInteger": "bool", "asApproximateFloat": "double",
    "isGreaterThan": "bool", "isLessThan": "bool", "compareTo": "int", "add": "quantity",
    "sub": "quantity", "getScheme": "string", "getHostname": "string", "getHost": "string",
    "getPort": "string", "getEscapedPath": "string", "getQuery": "map", "masked": "cidr",
    "prefixLength": "int", "family": "int", "isUnspecified": "bool", "isLoopback": "bool",
    "isLinkLocalMulticast": "bool", "isLinkLocalUnicast": "bool", "isGlobalUnicast": "bool",
}
# Types whose equality the library charges 1 for.
O1_EQUALITY = frozenset({"quantity", "ip", "cidr"})


def add(*values: int) -> int:
    return min(sum(values), MAX)


def mul(a: int, b: int) -> int:
    return min(a * b, MAX)


def by_factor(x: int, factor: float) -> int:
    """cel-go's multiplyByCostFactor: float product rounded up, saturating."""
    xf = float(x)
    if xf > 0 and factor > 0 and xf > float(MAX) / factor:
        return MAX
    ceil = math.ceil(xf * factor)
    return MAX if ceil >= 2.0**64 else int(ceil)


@dataclass
class Est:
    """What the coster knows of one expression node."""

    cost: int
    type: Decl
    path: list[str] | None = None
    size: int | None = None  # ComputedSize: literals, or a call result of known size
    literal: object = None  # the value of a literal node


Sizer = Callable[[Est], int]  # the library's sizeEstimate: no fixed size for scalars


def library_call(name: str, recv: Est | None, args: list[Est], size: Sizer,
                 elem_size: Callable[[Est], int]) -> tuple[int, Decl, int | None] | None:
    """(cost without arguments and receiver, result type, result size) of a library call;
    None when ``name`` is not a library function with its own cost rule."""
    string, boolean = simple("string"), simple("bool")
    if name in NOMINAL:
        return 1, simple(NOMINAL[name]), None
    if recv is not None and name in ("trim", "substring"):
        sz = size(recv)
        return by_factor(sz, TRAVERSAL), string, sz
    if recv is not None and name == "split":
        sz = size(recv)
        limit = args[1].literal if len(args) > 1 else None
        count = (limit % 2**64) if isinstance(limit, int) and not isinstance(limit, bool) else sz
        return by_factor(sz, 2 * TRAVERSAL), Decl("list", elem=string), count
    if recv is not None and name == "join" and recv.type.kind == "list":
        count = size(recv)
        sz = mul(count, elem_size(recv))
        if args:
            sz = add(sz, mul(size(args[0]), count - 1 if count > 0 else 0))
        return by_factor(sz, TRAVERSAL), string, sz
    if recv is not None and name in ("find", "findAll") and args:
        text = by_factor(add(size(recv), 1), TRAVERSAL)
        regex = by_factor(size(args[0]), REGEX)
        typ = string if name == "find" else Decl("list", elem=string)
        return mul(text, regex), typ, size(recv)
    if recv is not None and name in ("isSorted", "sum", "max", "min", "indexOf",
                                     "lastIndexOf"):
        result = {"isSorted": boolean, "indexOf": simple("int"),
                  "lastIndexOf": simple("int")}.get(name)
        if recv.type.kind != "list":
            return by_factor(size(recv), TRAVERSAL), result or simple("dyn"), None
        elem = recv.type.elem or simple("dyn")
        per = 1
        if elem.kind in ("string", "bytes"):
            per = add(1, by_factor(elem_size(recv), TRAVERSAL))
        return mul(size(recv), per), result or elem, None
    if recv is None and args and name == "isURL":
        return 1, boolean, None
    if recv is None and args and name in ("url", "quantity", "isQuantity", "isIP", "isCIDR",
                                          "cidr", "ip"):
        sz = size(args[0])
        typ = {"url": simple("url"), "quantity": simple("quantity"), "cidr": simple("cidr"),
               "ip": simple("ip")}.get(name, boolean)
        return by_factor(sz, TRAVERSAL), typ, sz if name == "url" else None
    if recv is not None and name == "ip" and not args:
        return 1, simple("ip"), None
    if recv is not None and name in ("containsIP", "containsCIDR") and args:
        cost = by_factor(16 + 16, TRAVERSAL)  # compare two IPs of at most 16 bytes
        if name == "containsCIDR":
            cost = add(cost, by_factor(16, TRAVERSAL), 1)  # mask, compare prefix lengths
        if args[0].type.kind == "string":
            cost = add(cost, by_factor(size(args[0]), TRAVERSAL))  # parse it first
        return cost, boolean, None
    return None


def library_equality(lhs: Est, rhs: Est) -> int | None:
    """The library's own cost of ``==`` between two values of one of its types."""
    if lhs.type.kind != rhs.type.kind:
        return None
    if lhs.type.kind in O1_EQUALITY:
        return 1
    if lhs.type.kind == "url":
        # cost.go sizes both sides from the right-hand side's computed size (or 1).
        return by_factor(rhs.size if rhs.size is not None else 1, TRAVERSAL)
    return None
