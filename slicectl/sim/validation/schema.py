"""Structural-schema validation and defaulting of custom resources.

Why: a custom resource is checked against its version's ``openAPIV3Schema`` exactly where a real
server checks it: defaults are applied (every level, defaults of defaults too), unknown fields
are pruned (:mod:`slicectl.sim.validation.prune`), then values are validated
(type, nullable, required, enum, minimum/maximum incl. exclusive, min/maxLength, pattern,
min/maxItems, min/maxProperties, ``x-kubernetes-int-or-string``, list-type set/map uniqueness)
and ``x-kubernetes-validations`` rules run through :mod:`slicectl.sim.validation.cel`.
A rule outside the CEL subset is skipped (it cannot be enforced, and must not crash the server);
a transition rule (using ``oldSelf``) only runs on update when an old value exists.
Messages follow kube-openapi's (``spec.x in body must be of type integer: "string"``).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from slicectl.sim.validation import cel
from slicectl.sim.validation import errors as e

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def apply_schema_defaults(value: Any, schema: dict[str, Any]) -> None:
    """Fill missing properties that have a ``default``, at every level, in place."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value and isinstance(sub, dict):
                apply_schema_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                if key not in props:
                    apply_schema_defaults(item, extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_schema_defaults(item, schema["items"])


def validate_value(
    value: Any, schema: dict[str, Any], path: str, old: Any = None, has_old: bool = False
) -> list[e.Cause]:
    type_error = _type_error(value, schema, path)
    if type_error is not None:
        return [type_error]
    if value is None:
        return []
    causes = _check_node(value, schema, path)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                causes.append(e.required(_join(path, key)))
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if key in props else extra if isinstance(extra, dict) else None
            if isinstance(sub, dict):
                old_item = old.get(key) if isinstance(old, dict) else None
                causes.extend(validate_value(item, sub, _join(path, key), old_item,
                                             has_old and isinstance(old, dict) and key in old))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            causes.extend(validate_value(item, schema["items"], f"{path}[{i}]"))
        causes.extend(_list_uniqueness(value, schema, path))
    causes.extend(_rules(value, schema, path, old, has_old))
    return causes


def _type_error(value: Any, schema: dict[str, Any], path: str) -> e.Cause | None:
    """The type mismatch of ``value`` (children of a mistyped value are not checked)."""
    shown = path or "<root>"
    wanted = schema.get("type")
    if value is None:
        if schema.get("nullable") or not wanted:
            return None
        return e.invalid(path, "null", f"{shown} in body must be of type {wanted}: \"null\"")
    actual = json_type(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual not in ("integer", "string"):
            return e.invalid(path, actual, f"{shown} in body must be of type "
                             f"integer-or-string: \"{actual}\"")
    elif wanted and not (actual == wanted or (wanted == "number" and actual == "integer")):
        return e.invalid(path, actual, f"{shown} in body must be of type {wanted}: "
                         f"\"{actual}\"")
    return None


def _check_node(value: Any, schema: dict[str, Any], path: str) -> list[e.Cause]:
    shown = path or "<root>"
    actual = json_type(value)
    causes: list[e.Cause] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        causes.append(e.not_supported(path, value, [str(x) for x in enum]))
    if actual in ("integer", "number"):
        causes.extend(_range(value, schema, path, shown))
    if isinstance(value, str):
        causes.extend(_string(value, schema, path, shown))
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            causes.append(e.too_many(path, len(value), schema["maxItems"]))
        if "minItems" in schema and len(value) < schema["minItems"]:
            causes.append(e.invalid(path, len(value), f"{shown} in body should have at least "
                                    f"{schema['minItems']} items"))
    if isinstance(value, dict):
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            causes.append(e.too_many(path, len(value), schema["maxProperties"]))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            causes.append(e.invalid(path, len(value), f"{shown} in body should have at least "
                                    f"{schema['minProperties']} properties"))
    return causes


def _range(value: float, schema: dict[str, Any], path: str, shown: str) -> list[e.Cause]:
    causes: list[e.Cause] = []
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            op = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            causes.append(e.invalid(path, value, f"{shown} in body should be {op} {low}"))
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            op = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            causes.append(e.invalid(path, value, f"{shown} in body should be {op} {high}"))
    return causes


def _string(value: str, schema: dict[str, Any], path: str, shown: str) -> list[e.Cause]:
    causes: list[e.Cause] = []
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(e.too_long(path, schema["maxLength"]))
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(e.invalid(path, value, f"{shown} in body should be at least "
                                f"{schema['minLength']} chars long"))
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                causes.append(e.invalid(path, value, f"{shown} in body should match "
                                        f"'{pattern}'"))
        except re.error:
            pass  # an RE2 construct Python lacks: the CRD was accepted, so do not fail here
    return causes


def _list_uniqueness(value: list[Any], schema: dict[str, Any], path: str) -> list[e.Cause]:
    list_type = schema.get("x-kubernetes-list-type")
    causes: list[e.Cause] = []
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                causes.append(e.duplicate(f"{path}[{i}]", item))
            seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: list[Any] = []
        for i, item in enumerate(value):
            ident = {k: item.get(k) for k in keys} if isinstance(item, dict) else item
            if ident in seen_keys:
                causes.append(e.duplicate(f"{path}[{i}]", ident))
            seen_keys.append(ident)
    return causes


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
            detail = rule.get("message") or f"failed rule: {text}"
        except cel.Unsupported:
            continue
        except cel.CelError as exc:
            ok, detail = False, f"{text}: {exc}"
        if ok is True:
            continue
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
