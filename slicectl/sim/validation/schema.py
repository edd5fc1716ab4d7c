"""Structural-schema validation and defaulting of custom resources, as kube-apiserver does them.

Why: a custom resource is checked against its version's ``openAPIV3Schema`` exactly where, and in
the order, a real server checks it, because clients and humans read the Status causes:

- defaulting (:func:`apply_schema_defaults`): a missing property, or a ``null`` one that is not
  ``nullable``, takes its ``default`` (at every level, defaults of defaults too); a non-nullable
  ``null`` without a default is dropped (``PruneNonNullableNullsWithoutDefaults``); a ``null``
  list item stays and fails validation;
- :func:`validate_value` then yields, in kube-apiserver's order, the OpenAPI errors
  (kube-openapi's validators per node: type, string, number, items/maxItems, enum, then object:
  maxProperties, additionalProperties, properties in name order, required), then the
  list-type set/map duplicates, then the ``x-kubernetes-validations`` rules (pre-order, node
  before children). The rules are skipped when any earlier error (ObjectMeta's included, passed
  as ``prior``) is of a blocking type (Unsupported, Required, TooLong, TooMany, TypeInvalid):
  the real server then adds one ``<nil>: Invalid value: "null": some validation rules were not
  checked...`` cause instead. Duplicates alone do not block the rules.

Where the real server iterates a Go map (properties, object keys) its order varies between
requests; here it is the property name order for schema properties and the object's own key
order otherwise, both of which the real server also produces. Values in messages are printed as
Go prints them (``%v``/``%#v``: ``map[string]interface {}{"name":"a"}``, ``1e+06``), and JSON
numbers follow Go's decoding (an integer beyond int64 is a float64; ``80.0`` is an integer for
``type: integer``). A rule outside the CEL subset is skipped (it cannot be enforced and must not
crash the server); a transition rule (using ``oldSelf``) only runs when an old value exists.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from typing import Any

from slicectl.sim.validation import cel
from slicectl.sim.validation import errors as e
from slicectl.sim.validation.goregex import go_regex
from slicectl.sim.validation.govalues import go_cause as _cause
from slicectl.sim.validation.govalues import go_float, go_value, json_type
from slicectl.sim.validation.listtype import join_path as _join
from slicectl.sim.validation.listtype import list_type_errors, schema_nodes
from slicectl.sim.validation.listtype import sub_schema as _sub_schema
from slicectl.sim.validation.prune import Compiler, prune
from slicectl.sim.validation.strfmt import format_ok

# Error types after which kube-apiserver does not run the CEL rules (``hasBlockingErr``).
BLOCKING = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
                      "FieldValueTooMany", "FieldValueTypeInvalid"})
RULES_NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
                     "correct the existing errors to complete validation")
_MAX_JSON_INT_FLOAT = float(2**53)


def _drops_null(sub: dict[str, Any]) -> bool:
    return not sub.get("nullable")


def apply_schema_defaults(value: Any, schema: dict[str, Any]) -> None:
    """Default missing and non-nullable null properties, drop other such nulls, in place."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and "default" in sub and (
                    key not in value or (value[key] is None and _drops_null(sub))):
                value[key] = copy.deepcopy(sub["default"])
        for key in list(value):
            sub = _sub_schema(schema, key)
            if sub is None:
                continue
            if value[key] is None and _drops_null(sub):
                del value[key]
                continue
            apply_schema_defaults(value[key], sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, item in enumerate(value):
            if item is None and _drops_null(items) and "default" in items:
                value[i] = copy.deepcopy(items["default"])
            apply_schema_defaults(value[i], items)


def validate_value(
    value: Any, schema: dict[str, Any], path: str, old: Any = None, has_old: bool = False,
    prior: Sequence[e.Cause] = (), only: str = "",
) -> list[e.Cause]:
    """Causes for ``value`` in the real server's order; ``prior`` are earlier causes (ObjectMeta)
    that count when deciding whether the CEL rules run.

    ``only`` names the one property of the object a subresource write validates (``status``):
    the OpenAPI checks then see that property alone, rooted at it, as the status strategy's
    ``statusSchemaValidator`` does (``endpoints in body ...`` for the field
    ``status.endpoints``, `` in body must be of type object`` for ``status`` itself); the
    list-type and CEL checks still walk the whole object."""
    if only:
        causes = _openapi_of(value.get(only) if isinstance(value, dict) else None,
                             _sub_schema(schema, only) or {}, _join(path, only))
    else:
        causes = _openapi(value, schema, path)
    causes.extend(list_type_errors(value, schema, path))
    if not _any_rules(schema):  # cel.NewValidator is nil: nothing to run or to skip
        return causes
    if any(c["reason"] in BLOCKING for c in (*prior, *causes)):
        causes.append(e.invalid("<nil>", None, RULES_NOT_CHECKED))
    else:
        causes.extend(_rules_tree(value, schema, path, old, has_old))
    return causes


def _any_rules(schema: dict[str, Any]) -> bool:
    """Whether any node of ``schema`` carries ``x-kubernetes-validations``."""
    return any(node.get("x-kubernetes-validations") for _, node in schema_nodes(schema, ""))


def default_errors(value: Any, schema: dict[str, Any], field: str) -> list[e.Cause]:
    """``ValidateDefaults`` for one ``default`` (``field`` ends in ``.default``): the value
    against the schema node that carries it (kube-openapi, rooted there), then no field that
    pruning would drop, then that node's CEL rules with ``oldSelf`` being the value too."""
    causes = _openapi_of(value, schema, field)
    if causes:
        return causes
    if prune(copy.deepcopy(value), Compiler().node(schema), remove=False):
        return [e.invalid(field, value, "must not have unknown fields")]
    return _rules_tree(value, schema, field, value, True)


def _openapi_of(value: Any, schema: dict[str, Any], field: str) -> list[e.Cause]:
    """kube-openapi's errors for ``value`` validated on its own (its messages name paths from
    it, with an empty root name), reported under ``field`` (``ValidateCustomResource``)."""
    if value is None:  # absent (or a dropped null): the real server has nothing to check
        return []
    causes = _openapi(value, schema, "", root="")
    for cause in causes:
        sub = cause.get("field", "")
        cause["field"] = f"{field}{sub}" if not sub or sub.startswith("[") else f"{field}.{sub}"
    return causes


def _openapi(value: Any, schema: dict[str, Any], path: str,
             root: str = "<root>") -> list[e.Cause]:
    """kube-openapi's SchemaValidator: every validator that applies to the value's kind."""
    causes: list[e.Cause] = []
    type_error = _type_error(value, schema, path, root)
    if type_error is not None:
        causes.append(type_error)
    kind = json_type(value)
    if kind == "string":
        causes.extend(_string(value, schema, path, root))
        if not format_ok(str(schema.get("format") or ""), value):
            causes.append(_cause("FieldValueTypeInvalid", path, value, f"{path or root} in "
                                 f"body must be of type {schema['format']}: {go_value(value)}"))
    elif kind in ("integer", "number"):
        causes.extend(_number(value, schema, path, root))
    elif kind == "array":
        causes.extend(_array(value, schema, path, root))
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and not _in_enum(value, enum):
        allowed = ", ".join(json.dumps(v if isinstance(v, str) else json.dumps(v)) for v in enum)
        causes.append({"reason": "FieldValueNotSupported", "message": f"Unsupported value: "
                       f"{go_value(value)}: supported values: {allowed}", "field": path})
    if kind == "object":
        causes.extend(_object(value, schema, path, root))
    return causes


def _in_enum(value: Any, enum: list[Any]) -> bool:
    return any((type(v) is type(value) and v == value) or (
        json_type(v) in ("integer", "number") and json_type(value) in ("integer", "number")
        and v == value) for v in enum)


def _types(schema: dict[str, Any]) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    return [schema["type"]] if isinstance(schema.get("type"), str) else []


def _is_float_int(value: Any) -> bool:
    return (isinstance(value, float | int) and not isinstance(value, bool)
            and json_type(value) == "number" and abs(value) <= _MAX_JSON_INT_FLOAT
            and float(value).is_integer())


def _type_error(value: Any, schema: dict[str, Any], path: str, root: str) -> e.Cause | None:
    """kube-openapi's typeValidator (a mismatch is a TypeInvalid cause; the value's own
    validators still run)."""
    types, fmt = _types(schema), schema.get("format") or ""
    if not types and not fmt:
        return None
    shown = path or root

    def mismatch(expected: str, got: str) -> e.Cause:
        return _cause("FieldValueTypeInvalid", path, got,
                      f"{shown} in body must be of type {expected}: \"{got}\"")

    if value is None:
        if types and "null" not in types and not schema.get("nullable"):
            return mismatch(",".join(types), "null")
        return None
    actual = json_type(value)
    fits = (actual in types or (actual == "integer" and "number" in types)
            or (actual == "number" and "integer" in types and _is_float_int(value)))
    data_format = {"integer": "int64", "number": "float64"}.get(actual, "")
    if actual in ("string", "array"):
        if fmt and "integer" not in types and "number" not in types:
            return None
    elif fmt and not (fits or data_format == fmt):
        return mismatch(fmt, data_format)
    return None if fits else mismatch(",".join(types), actual)


def _string(value: str, schema: dict[str, Any], path: str, root: str) -> list[e.Cause]:
    """The first of maxLength, minLength and pattern that fails (kube-openapi stops there)."""
    shown = path or root
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return [e.too_long(path, schema["maxLength"])]
    if "minLength" in schema and len(value) < schema["minLength"]:
        return [_cause("FieldValueInvalid", path, value, f"{shown} in body should be at least "
                       f"{schema['minLength']} chars long")]
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if go_regex(pattern).search(value) is None:
                return [_cause("FieldValueInvalid", path, value,
                               f"{shown} in body should match '{pattern}'")]
        except re.error:
            pass  # an RE2 construct Python lacks: the CRD was accepted, so do not fail here
    return []


def _number(value: float, schema: dict[str, Any], path: str, root: str) -> list[e.Cause]:
    """multipleOf, minimum, maximum, in kube-openapi's order; bounds print as Go float64s."""
    shown = path or root
    number = float(value) if json_type(value) == "number" else value
    causes: list[e.Cause] = []
    factor = schema.get("multipleOf")
    if isinstance(factor, int | float) and factor > 0:
        ratio = number / factor
        if not (abs(ratio) <= _MAX_JSON_INT_FLOAT and float(ratio).is_integer()):
            causes.append(_cause("FieldValueInvalid", path, number, f"{shown} in body should be "
                                 f"a multiple of {go_float(float(factor))}"))
    for bound, exclusive, word in (("minimum", "exclusiveMinimum", "greater than"),
                                   ("maximum", "exclusiveMaximum", "less than")):
        if not isinstance(schema.get(bound), int | float):
            continue
        limit = schema[bound]
        strict = bool(schema.get(exclusive))
        low = bound == "minimum"
        if (number < limit if low else number > limit) or (strict and number == limit):
            op = word if strict else f"{word} or equal to"
            causes.append(_cause("FieldValueInvalid", path, number,
                                 f"{shown} in body should be {op} {go_float(float(limit))}"))
    return causes


def _array(value: list[Any], schema: dict[str, Any], path: str, root: str) -> list[e.Cause]:
    """Items first, then minItems and maxItems."""
    shown = path or root
    causes: list[e.Cause] = []
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            causes.extend(_openapi(item, items, f"{path}[{i}]"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(_cause("FieldValueInvalid", path, len(value), f"{shown} in body should "
                             f"have at least {schema['minItems']} items"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(e.too_many(path, len(value), schema["maxItems"]))
    return causes


def _object(value: dict[str, Any], schema: dict[str, Any], path: str,
            root: str) -> list[e.Cause]:
    """min/maxProperties, additionalProperties (key order), properties (name order),
    required."""
    shown = path or root
    causes: list[e.Cause] = []
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        causes.append(_cause("FieldValueInvalid", path, len(value), f"{shown} in body should "
                             f"have at least {schema['minProperties']} properties"))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        causes.append(e.too_many(path, len(value), schema["maxProperties"]))
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, item in value.items():
            if key not in props:
                causes.extend(_openapi(item, extra, _join(path, key)))
    for key in sorted(props):
        if key in value and isinstance(props[key], dict):
            causes.extend(_openapi(value[key], props[key], _join(path, key)))
    causes.extend(e.required(_join(path, key)) for key in schema.get("required") or []
                  if key not in value)
    return causes


def _rules_tree(
    value: Any, schema: dict[str, Any], path: str, old: Any, has_old: bool
) -> list[e.Cause]:
    """The CEL rules of this node, then of its children (null values are not checked)."""
    if value is None:
        return []
    causes = _rules(value, schema, path, old, has_old)
    if isinstance(value, dict):
        for key, item in value.items():
            sub = _sub_schema(schema, key)
            if sub is not None:
                old_item = old.get(key) if isinstance(old, dict) else None
                causes.extend(_rules_tree(item, sub, _join(path, key), old_item,
                                          has_old and isinstance(old, dict) and key in old))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        olds = _correlatable_items(schema, old)
        for i, item in enumerate(value):
            key = _map_key(schema, item)
            causes.extend(_rules_tree(item, schema["items"], f"{path}[{i}]", olds.get(key),
                                      key in olds))
    return causes


def _map_key(schema: dict[str, Any], item: Any) -> tuple[str, ...] | None:
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(item, dict):
        return None
    return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)


def _correlatable_items(schema: dict[str, Any], old: Any) -> dict[Any, Any]:
    """The old items a transition rule on a list's items sees: only a ``map`` list's items
    correlate, by their key fields (``makeMapList``); any other list's items have no oldSelf."""
    if not isinstance(old, list):
        return {}
    pairs = ((_map_key(schema, item), item) for item in old)
    return {key: item for key, item in pairs if key is not None}


def _rule_message(rule: dict[str, Any], env: dict[str, Any], text: str) -> str:
    """A failed rule's message: its ``messageExpression`` when that gives a string with some
    text and no line break; else ``ruleMessageOrDefault`` (the message, or ``failed rule:``
    and the rule, trimmed)."""
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression.strip():
        try:
            said = cel.evaluate(expression, env)
        except (cel.Unsupported, cel.CelError):
            said = None
        if isinstance(said, str) and said.strip() and "\n" not in said and "\r" not in said:
            return said
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    return f"failed rule: {text.strip()}"


def _rules(
    value: Any, schema: dict[str, Any], path: str, old: Any, has_old: bool
) -> list[e.Cause]:
    causes: list[e.Cause] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule.get("rule") if isinstance(rule, dict) else None
        if not isinstance(text, str):
            continue
        transition = "oldSelf" in text
        if transition and not has_old:
            continue
        env = {"self": value, **({"oldSelf": old} if transition else {})}
        try:
            ok = cel.evaluate(text, env)
            detail = ""
        except cel.Unsupported:
            continue
        except cel.CelError as exc:
            ok, detail = False, f"{text}: {exc}"
        if ok is True:
            continue
        detail = detail or _rule_message(rule, env, text)
        field = path
        if isinstance(rule.get("fieldPath"), str):
            field = path + rule["fieldPath"] if path else rule["fieldPath"].lstrip(".")
        if rule.get("reason") == "FieldValueForbidden":
            causes.append(e.forbidden(field, detail))
        elif rule.get("reason") == "FieldValueRequired":
            causes.append(e.required(field, detail))
        else:
            causes.append(e.invalid(field, json_type(value), detail))
    return causes
