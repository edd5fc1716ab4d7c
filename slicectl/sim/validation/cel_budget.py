"""The CEL cost budget of a CRD schema: per rule and for the whole schema, as on a real server.

Why: kube-apiserver refuses a CustomResourceDefinition whose ``x-kubernetes-validations`` could
cost too much, so a CRD that the embedded server accepts must be within the same budget
(apiextensions ``validation.go`` and ``cel_validation.go``, written from them):

- each rule's worst-case cost (:mod:`cel_cost`, over the node's :mod:`cel_types` declaration)
  is multiplied by the node's *cardinality*: the product of the ``maxItems`` /
  ``maxProperties`` of the lists and maps above it; where one of them is unbounded, by how many
  of the node's smallest serialized values fit in one 3 MiB request;
- a rule over ``StaticEstimatedCostLimit`` (10,000,000) is Forbidden at its
  ``...x-kubernetes-validations[i].rule`` path, "estimated rule cost exceeds budget by factor of
  ...", unless the version's schema is unchanged on an update;
- the sum over the schema (messageExpressions count too, not multiplied) over
  ``StaticEstimatedCRDCostLimit`` (100,000,000) makes the four dearest contributors (each at
  least 1% of that limit) Forbidden as having "contributed to ...", then the schema root.

A rule using ``oldSelf`` below the items of a list that is not ``x-kubernetes-list-type: map``
is Invalid ("oldSelf cannot be used on the uncorrelatable portion of the schema within
<that list>"): there is no old item to compare with; ``optionalOldSelf`` without ``oldSelf``
is Invalid too.

Each rule is type-checked first (:mod:`cel_check`), as the real server compiles it: a rule that
does not compile is Invalid ("compilation failed: ERROR: <input>:1:5: undefined field ..."),
one whose result is not a bool too ("cel expression must evaluate to a bool"); neither is
costed. A rule outside the CEL subset (:class:`cel_syntax.Unsupported`) cannot be checked or
costed here, so it is refused as well (never accepted unchecked, which would be kinder than a
real server); the shipped CRDs stay inside the subset.

Error order follows the real walk: a node's children (additionalProperties, properties,
items) before its own rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.cel_check import check_rule
from slicectl.sim.validation.cel_cost import estimate
from slicectl.sim.validation.cel_cost_lib import MAX, mul
from slicectl.sim.validation.cel_syntax import Unsupported, compile_rule
from slicectl.sim.validation.cel_types import MAX_REQUEST_SIZE, Decl, decl_type

RULE_LIMIT = 10_000_000  # StaticEstimatedCostLimit
SCHEMA_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit
HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
        "arrays, maps, and strings are declared)")


def cost_message(what: str, cost: int, limit: int) -> str:
    """getCostErrorMessage: the factor by which ``cost`` exceeds ``limit``."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return f"{what} exceeds budget by factor of {shown} {HINT}"


@dataclass
class _Walk:
    suppress_per_rule: bool
    total: int = 0
    dearest: list[tuple[int, str]] = field(default_factory=list)

    def observe(self, path: str, cost: int) -> None:
        self.total = min(self.total + cost, MAX)
        if cost < SCHEMA_LIMIT // 100:
            return
        self.dearest.append((cost, path))
        self.dearest.sort(key=lambda item: -item[0])
        del self.dearest[4:]


def rule_costs(schema: dict[str, Any]) -> list[tuple[str, int]]:
    """(relative path of each rule, its cost times cardinality), in walk order (for tests)."""
    walk = _Walk(suppress_per_rule=True)
    seen: list[tuple[str, int]] = []
    _node(schema, "", 1, True, None, walk, seen)
    return seen


def budget_causes(schema: dict[str, Any], path: str, suppress_per_rule: bool) -> list[e.Cause]:
    """Forbidden causes for an ``openAPIV3Schema`` at ``path`` that is over the budget."""
    walk = _Walk(suppress_per_rule)
    causes = _node(schema, path, 1, True, None, walk, [])
    if walk.total > SCHEMA_LIMIT:
        causes.extend(e.forbidden(p, "contributed to estimated rule cost total exceeding cost "
                                  "limit for entire OpenAPIv3 schema") for _, p in walk.dearest)
        causes.append(e.forbidden(path, cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            walk.total, SCHEMA_LIMIT)))
    return causes


def _join(path: str, suffix: str) -> str:
    return f"{path}.{suffix}" if path else suffix


def _child_cardinality(schema: dict[str, Any], cardinality: int | None) -> int | None:
    """extractMaxElements: how many children one value of ``schema`` can hold."""
    if cardinality is None:
        return None
    kind = schema.get("type")
    bound: Any = 1
    if kind == "object" and "additionalProperties" in schema:
        bound = schema.get("maxProperties")
    elif kind == "array":
        bound = schema.get("maxItems")
    if not isinstance(bound, int):
        return None
    return mul(cardinality, max(bound, 0))


def _uses_old_self(text: str) -> bool:
    try:
        return _mentions(compile_rule(text), "oldSelf")
    except Unsupported:
        return re.search(r"\boldSelf\b", re.sub(r"'[^']*'|\"[^\"]*\"", "", text)) is not None


def _mentions(node: Any, name: str) -> bool:
    """Whether the parsed rule refers to the variable ``name``."""
    if isinstance(node, tuple) and node and node[0] == "var":
        return bool(node[1] == name)
    if isinstance(node, tuple) and node and node[0] == "lit":
        return False
    return isinstance(node, tuple | list) and any(_mentions(part, name) for part in node)


def _node(schema: dict[str, Any], path: str, cardinality: int | None, is_root: bool,
          uncorrelatable: str | None, walk: _Walk, seen: list[tuple[str, int]]
          ) -> list[e.Cause]:
    causes: list[e.Cause] = []
    below = _child_cardinality(schema, cardinality)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        causes += _node(extra, _join(path, "additionalProperties"), below, False,
                        uncorrelatable, walk, seen)
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict):
            causes += _node(prop, _join(path, f"properties[{name}]"), below, False,
                            uncorrelatable, walk, seen)
    if isinstance(schema.get("items"), dict):
        # items of a list are only matched with old ones by key in a list-type map
        in_list = uncorrelatable
        if in_list is None and schema.get("x-kubernetes-list-type") != "map":
            in_list = path
        causes += _node(schema["items"], _join(path, "items"), below, False, in_list, walk,
                        seen)
    rules = schema.get("x-kubernetes-validations")
    if not isinstance(rules, list) or not rules:
        return causes
    decl = decl_type(schema, is_root or bool(schema.get("x-kubernetes-embedded-resource")))
    if decl is None:
        return causes
    times = cardinality if cardinality is not None else MAX_REQUEST_SIZE // (decl.min_size + 1)
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        where = _join(path, f"x-kubernetes-validations[{i}]")
        refused = _compile_error(rule, where, decl)
        if refused is not None:
            causes.append(refused)
            causes.extend(_old_self(rule, where, uncorrelatable))
            continue
        for key, what, multiply in (("rule", "estimated rule cost", True),
                                    ("messageExpression", "estimated messageExpression cost",
                                     False)):
            text = rule.get(key)
            if not isinstance(text, str) or not text.strip():
                continue
            try:
                base = estimate(text, decl)
            except Unsupported as why:
                if key == "rule":  # type-checked, but it has no cost rule here
                    causes.append(_refused(rule, where, _cannot_check(why)))
                continue
            cost = (0 if base == 0 else mul(base, times)) if multiply else base
            seen.append((f"{where}.{key}", cost))
            if not walk.suppress_per_rule and cost > RULE_LIMIT:
                causes.append(e.forbidden(f"{where}.{key}",
                                          cost_message(what, cost, RULE_LIMIT)))
            walk.observe(f"{where}.{key}", cost)
        causes.extend(_old_self(rule, where, uncorrelatable))
    return causes


def _compile_error(rule: dict[str, Any], where: str, decl: Decl) -> e.Cause | None:
    """The Invalid cause of a rule that does not compile (or cannot be checked here)."""
    text = rule.get("rule")
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        checked = check_rule(text, decl)
    except Unsupported as why:
        return _refused(rule, where, _cannot_check(why))
    if checked.errors:
        return _refused(rule, where, "compilation failed: " + "\n".join(checked.errors))
    if not checked.is_bool:
        return _refused(rule, where, "cel expression must evaluate to a bool")
    return None


def _cannot_check(why: Unsupported) -> str:
    return f"compilation failed: the embedded API server cannot check this rule ({why})"


def _refused(rule: dict[str, Any], where: str, detail: str) -> e.Cause:
    return e.invalid_printed(f"{where}.rule", _go_rule(rule), detail)


def _go_rule(rule: dict[str, Any]) -> str:
    """The internal ValidationRule as Go's ``%#v`` prints it (pointers as a fixed address)."""
    def text(key: str) -> str:
        value = rule.get(key)
        return e.show(value if isinstance(value, str) else "")

    def pointer(key: str, go_type: str) -> str:
        return f"({go_type})({'nil' if rule.get(key) is None else '0xc000010000'})"

    return (f"apiextensions.ValidationRule{{Rule:{text('rule')}, Message:{text('message')}, "
            f"MessageExpression:{text('messageExpression')}, "
            f"Reason:{pointer('reason', '*apiextensions.FieldValueErrorReason')}, "
            f"FieldPath:{text('fieldPath')}, "
            f"OptionalOldSelf:{pointer('optionalOldSelf', '*bool')}}}")


def _old_self(rule: dict[str, Any], where: str, uncorrelatable: str | None) -> list[e.Cause]:
    text = rule.get("rule")
    if not isinstance(text, str) or not text.strip():
        return []
    if _uses_old_self(text):
        if uncorrelatable is None:
            return []
        return [e.invalid(f"{where}.rule", text, "oldSelf cannot be used on the uncorrelatable "
                          f"portion of the schema within {uncorrelatable}")]
    if "optionalOldSelf" in rule and rule["optionalOldSelf"] is not None:
        return [e.invalid(f"{where}.optionalOldSelf", rule["optionalOldSelf"],
                          "may not be set if oldSelf is not used in rule")]
    return []
