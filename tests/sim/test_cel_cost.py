"""The CEL cost budget of CRDs: estimates as kube-apiserver makes them, and the refusals.

The expected figures are worked out by hand from cel-go's coster and the apiextensions size
estimator (see slicectl/sim/validation/cel_cost.py for the rules), so a change of the
estimator that moves any of them is a change of behaviour, not noise.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from slicectl.sim.validation.cel_budget import cost_message, rule_costs
from slicectl.sim.validation.cel_cost import estimate
from slicectl.sim.validation.cel_syntax import Unsupported
from slicectl.sim.validation.cel_types import decl_type
from slicectl.sim.validation.crd import validate_crd
from tests.sim.conftest import Raw

ROOT = Path(__file__).resolve().parents[2]
CHART_CRD = ROOT / "charts/slicectl/crds/slicectl.io_endpointselectors.yaml"
ALL_CRDS = [CHART_CRD, *sorted((ROOT / "tests/fixtures/crds").glob("*.yaml"))]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SCHEMA = "spec.validation.openAPIV3Schema"
TARGET_PORT_RULE = (f"{SCHEMA}.properties[spec].properties[ports].items.properties[targetPort]"
                    ".x-kubernetes-validations[0].rule")
HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
        "arrays, maps, and strings are declared)")
# The two rules of the CRD that a real v1.32 server refused (issue 7).
OLD_TARGET_PORT = {
    "rule": "type(self) == int ? (self >= 1 && self <= 65535) : (size(self) <= 15 && "
            "self.matches('^[a-z0-9]+(-[a-z0-9]+)*$') && self.matches('[a-z]'))",
    "message": "targetPort must be a number between 1 and 65535 or a port name"}
OLD_UNIQUE_NAMES = {
    "rule": "self.all(p, !has(p.name) || size(p.name) == 0 || "
            "self.exists_one(q, has(q.name) && q.name == p.name))",
    "message": "port names must be unique"}


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def refused_crd() -> dict[str, Any]:
    """The chart's CRD as it was when issue 7 was filed (its two expensive rules back)."""
    crd = copy.deepcopy(load(CHART_CRD))
    ports = schema_of(crd)["properties"]["spec"]["properties"]["ports"]
    ports["x-kubernetes-list-type"] = "atomic"
    del ports["x-kubernetes-list-map-keys"]
    ports["x-kubernetes-validations"].append(OLD_UNIQUE_NAMES)
    target = ports["items"]["properties"]["targetPort"]
    for key in ("minimum", "maximum", "pattern"):
        del target[key]
    target["x-kubernetes-validations"] = [OLD_TARGET_PORT]
    return crd


ISSUE_7_CAUSES = [
    {"reason": "FieldValueForbidden", "field": TARGET_PORT_RULE,
     "message": f"Forbidden: estimated rule cost exceeds budget by factor of 28.3x {HINT}"},
    {"reason": "FieldValueForbidden", "field": TARGET_PORT_RULE,
     "message": "Forbidden: contributed to estimated rule cost total exceeding cost limit for "
                "entire OpenAPIv3 schema"},
    {"reason": "FieldValueForbidden", "field": SCHEMA,
     "message": "Forbidden: x-kubernetes-validations estimated rule cost total for entire "
                f"OpenAPIv3 schema exceeds budget by factor of 2.8x {HINT}"},
]


async def test_issue_7_crd_is_refused_as_a_real_server_refuses_it(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", CRDS, refused_crd())
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"] == ISSUE_7_CAUSES
    assert body["message"].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "endpointselectors.slicectl.io" is '
        f"invalid: [{TARGET_PORT_RULE}: Forbidden: estimated rule cost exceeds budget by "
        "factor of 28.3x")
    code, _, _ = await raw.request("GET", CRDS + "/endpointselectors.slicectl.io")
    assert code == 404


async def test_every_crd_of_the_repository_is_accepted(raw: Raw) -> None:
    for path in ALL_CRDS:
        code, body, _ = await raw.request("POST", CRDS, load(path))
        assert code == 201, (path.name, body)


@pytest.mark.parametrize("path", ALL_CRDS, ids=lambda p: p.name)
def test_shipped_crds_stay_far_below_the_budget(path: Path) -> None:
    costs = rule_costs(schema_of(load(path)))
    assert costs, "no rule was costed"
    assert max(cost for _, cost in costs) < 10_000
    assert sum(cost for _, cost in costs) < 10_000


def test_issue_7_rule_costs() -> None:
    costs = dict(rule_costs(schema_of(refused_crd())))
    target = TARGET_PORT_RULE.removeprefix(SCHEMA + ".")
    # type(self) == int: 2 + 1 + ceil(0.1 * 3145726) (the `int` identifier is sized as self);
    # else branch: 3 + (1 + 314573 * 6) + (1 + 314573 * 2); 100 ports.
    assert costs[target] == (314576 + 2516589) * 100
    unique = "properties[spec].properties[ports].x-kubernetes-validations[1].rule"
    assert costs[unique] == 331202  # O(n^2) over 100 ports, names of at most 63 characters


def string_list(**bounds: int) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "string", "maxLength": 10}
    return {"type": "array", "items": item, **bounds}


def test_bounded_and_unbounded_lists() -> None:
    rule = "self.all(x, x.startsWith('a'))"
    # range 1 + result 1 + items * (loop condition 2 + step (1 + startsWith 2))
    assert estimate(rule, _decl(string_list(maxItems=10))) == 2 + 10 * 5
    # unbounded: as many "" (2 bytes) plus a comma as fit in 3 MiB
    assert estimate(rule, _decl(string_list())) == 2 + (3 * 1024 * 1024 - 2) // 3 * 5


def test_max_length_bounds_matches() -> None:
    rule = "self.matches('^[a-z]+$')"  # regex of 8 characters: ceil(8 * 0.25) = 2
    bounded = _decl({"type": "string", "maxLength": 10})  # 10 runes = up to 40 bytes
    assert estimate(rule, bounded) == 1 + 5 * 2  # ceil(0.1 * 41) = 5
    assert estimate(rule, _decl({"type": "string"})) == 1 + 314573 * 2
    enum = _decl({"type": "string", "enum": ["TCP", "SCTP"]})
    assert estimate(rule, enum) == 1 + 1 * 2


def test_int_or_string_is_an_unbounded_string_whatever_its_max_length() -> None:
    port = _decl({"x-kubernetes-int-or-string": True, "maxLength": 15})
    assert estimate("type(self) == int", port) == 2 + 1 + 314573
    assert estimate("self.matches('[a-z]')", port) == 1 + 314573 * 2


def nested(inner_bounds: dict[str, int]) -> dict[str, Any]:
    leaf = {"type": "string", "maxLength": 4,
            "x-kubernetes-validations": [{"rule": "self.startsWith('x')"}]}
    inner = {"type": "array", **inner_bounds, "items": {
        "type": "object", "required": ["leaf"], "properties": {"leaf": leaf}}}
    return {"type": "object", "properties": {"outer": {"type": "array", "maxItems": 10, "items": {
        "type": "object", "properties": {"inner": inner}}}}}


def test_cardinality_is_the_product_of_enclosing_max_items() -> None:
    path = ("properties[outer].items.properties[inner].items.properties[leaf]"
            ".x-kubernetes-validations[0].rule")
    assert rule_costs(nested({"maxItems": 20})) == [(path, 2 * 10 * 20)]
    # an unbounded list above: as many of the leaf's smallest values ("") as fit in 3 MiB
    assert rule_costs(nested({})) == [(path, 2 * (3 * 1024 * 1024 // 3))]


def test_cost_message_factors() -> None:
    assert cost_message("x", 12_000_000, 10**7) == f"x exceeds budget by factor of 1.200000x {HINT}"
    assert cost_message("x", 28_311_650, 10**6).startswith("x exceeds budget by factor of 28.3x")
    assert "factor of more than 100x" in cost_message("x", 10**10, 10**7)


def crd_with(rule: str, schema_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", **(schema_extra or {}),
        "properties": {"text": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": rule}]}}}
    return {"metadata": {"name": "widgets.example.com"}, "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": schema}}]}}


# 314573 (an unbounded string) * ceil(280 / 4) + 2: over the per-rule limit, under the total.
EXPENSIVE = "self.text.matches('" + "[a-z]" * 56 + "')"


def test_per_rule_limit_is_waived_for_an_unchanged_schema_on_update() -> None:
    expensive = crd_with(EXPENSIVE)
    path = f"{SCHEMA}.properties[spec].x-kubernetes-validations[0].rule"
    causes = validate_crd(expensive, None)
    assert [(c["field"], c["message"]) for c in causes] == [
        (path, f"Forbidden: estimated rule cost exceeds budget by factor of 2.2x {HINT}")]
    assert validate_crd(expensive, copy.deepcopy(expensive)) == []
    changed = crd_with(EXPENSIVE + " || true")
    assert [c["field"] for c in validate_crd(changed, expensive)] == [path]


def test_per_version_schemas_are_reported_per_version() -> None:
    crd = crd_with(EXPENSIVE)
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2.update(name="v2", storage=False)
    v2["schema"]["openAPIV3Schema"]["description"] = "differs"
    crd["spec"]["versions"].append(v2)
    assert [c["field"] for c in validate_crd(crd, None)] == [
        f"spec.versions[{i}].schema.openAPIV3Schema.properties[spec]"
        ".x-kubernetes-validations[0].rule" for i in (0, 1)]


def test_list_map_keys_must_be_required_or_defaulted() -> None:
    crd = crd_with("true", {"required": []})
    spec = schema_of(crd)["properties"]["spec"]
    spec["properties"]["ports"] = {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    assert [(c["field"], c["reason"]) for c in validate_crd(crd, None)] == [
        (f"{SCHEMA}.properties[spec].properties[ports].items.properties[name].default",
         "FieldValueRequired")]
    spec["properties"]["ports"]["items"]["properties"]["name"]["default"] = ""
    assert validate_crd(crd, None) == []


def _decl(schema: dict[str, Any]) -> Any:
    decl = decl_type(schema, False)
    assert decl is not None
    return decl


def test_negative_literals_and_message_expressions() -> None:
    number = _decl({"type": "integer"})
    assert estimate("self > -1", number) == 2  # -1 is one literal in CEL's grammar
    assert estimate("-self < 1", number) == 3  # unary minus on a value is a call
    node = {"type": "array", "maxItems": 7, "items": {
        "type": "string", "maxLength": 10,
        "x-kubernetes-validations": [{"rule": "self != 'a'",
                                      "messageExpression": "'bad: ' + self"}]}}
    # rule: 1 + ceil(0.1 * min(40, 1)), times 7 items; the messageExpression is not
    # multiplied: 1 + ceil(0.1 * (5 + 40)).
    assert rule_costs(node) == [
        ("items.x-kubernetes-validations[0].rule", 2 * 7),
        ("items.x-kubernetes-validations[0].messageExpression", 6)]


def test_kubernetes_library_functions() -> None:
    text = _decl({"type": "string", "maxLength": 30})  # up to 120 bytes
    # split: 0.2 per byte, then at most one element per byte (or the literal limit), each
    # element sized as the rule's own node (its path is ["@items"]): 1 + 3 per element.
    assert estimate("self.split(',').all(x, x.size() < 3)", text) == 1 + 24 + 1 + 120 * 6
    assert estimate("self.split(',', 3).all(x, x.size() < 3)", text) == 1 + 24 + 1 + 3 * 6
    # quantity(s): 0.1 per byte; equality of two quantities: 1
    assert estimate("quantity(self) == quantity('1')", text) == 1 + 12 + 1 + 0 + 1
    with pytest.raises(Unsupported):
        estimate("self.reverse() == 'a'", text)


def test_old_self_only_where_old_items_can_be_found() -> None:
    transition = [{"rule": "self == oldSelf", "message": "immutable"}]
    crd = crd_with("true")
    spec = schema_of(crd)["properties"]["spec"]
    spec["properties"] = {
        "atomic": {"type": "array", "maxItems": 3, "items": {
            "type": "string", "maxLength": 5, "x-kubernetes-validations": transition}},
        "keyed": {"type": "array", "maxItems": 3, "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["k"], "items": {
                      "type": "object", "required": ["k"],
                      "properties": {"k": {"type": "string", "maxLength": 5}},
                      "x-kubernetes-validations": transition}},
        "text": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self != 'oldSelf'", "optionalOldSelf": True}]},
    }
    assert [(c["field"], c["message"]) for c in validate_crd(crd, None)] == [
        (f"{SCHEMA}.properties[spec].properties[atomic].items.x-kubernetes-validations[0].rule",
         'Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable '
         f"portion of the schema within {SCHEMA}.properties[spec].properties[atomic]"),
        (f"{SCHEMA}.properties[spec].properties[text].x-kubernetes-validations[0]"
         ".optionalOldSelf", "Invalid value: true: may not be set if oldSelf is not used in rule"),
    ]
