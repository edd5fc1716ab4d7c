"""The JSON decoder's type check of built-in objects: a value of the wrong JSON type is a 400.

Why: a real server decodes a built-in object's body into its Go struct before anything else,
so ``"ready": "yes"`` for a bool, a number for a string, or a second-precision time for a
``MicroTime`` (parsed with exactly six fraction digits) is refused with 400 BadRequest
("... cannot be handled as a EndpointSlice: ..."), never stored. slicectl builds slice bodies,
slice patches and Lease specs by hand; without this check a wrong type would pass every test
here and fail on a cluster. Custom resources are not decoded into Go types: their schema's
validation (422) judges them instead.

What it accepts is the decoder's leniency, no more: ``null`` anywhere (the zero value), an
integer in the field's range (int32 or int64) for an integer, an integer or a string for
IntOrString, a string or a number for a Quantity, and an RFC 3339 time
with any fraction for ``Time``; timestamps come out as Go re-encodes them (:mod:`gotime`).
"""

from __future__ import annotations

from typing import Any

import orjson

from slicectl.sim.validation.builtin import builtin_schemas
from slicectl.sim.validation.gotime import TimeError, stored_micro_time, stored_time
from slicectl.sim.validation.prune import Node

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number",
               float: "number"}


def _special() -> tuple[Any, Any]:
    schemas = builtin_schemas()
    return schemas.get(_META + "MicroTime"), schemas.get("io.k8s.apimachinery.pkg.api.resource"
                                                         ".Quantity")


def decode_error(value: Any, root: Node) -> str | None:
    """The decoder's complaint about ``value`` (a built-in object), or None when it decodes;
    then ``value`` holds what the decoded object encodes to (its timestamps in UTC)."""
    micro, quantity = _special()
    return _check(value, root, "", micro, quantity)


def decode_error_at(value: Any, node: Node, path: str) -> str | None:
    """:func:`decode_error` of one field's value (``path`` names it), left unchanged."""
    micro, quantity = _special()
    return _check(orjson.loads(orjson.dumps(value)), node, path, micro, quantity)


def _check(value: Any, node: Node, path: str, micro: Any, quantity: Any) -> str | None:
    if value is None or node.anything:
        return None
    schema = node.schema
    kind, fmt = schema.get("type"), schema.get("format")
    if schema is quantity:
        ok = isinstance(value, str | int | float) and not isinstance(value, bool)
        return None if ok else _mismatch(value, path, "resource.Quantity")
    if fmt == "int-or-string":
        ok = isinstance(value, str | int) and not isinstance(value, bool)
        return None if ok else _mismatch(value, path, "intstr.IntOrString")
    if kind == "string":
        # a timestamp is parsed, once, where its container stores it back (_stored)
        return None if isinstance(value, str) else _mismatch(value, path, "string")
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and fmt == "int32":
            ok = -(2**31) <= value < 2**31
        elif ok:
            ok = -(2**63) <= value < 2**63  # Go's int and int64
        return None if ok else _mismatch(value, path, fmt or "int")
    if kind == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else _mismatch(value, path, fmt or "float64")
    if kind == "boolean":
        return None if isinstance(value, bool) else _mismatch(value, path, "bool")
    if kind == "array":
        if not isinstance(value, list):
            return _mismatch(value, path, "array")
        items = node.items()
        for i in range(len(value)):
            error = _check_child(value, i, items, f"{path}[{i}]", micro, quantity)
            if error:
                return error
        return None
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        if not isinstance(value, dict):
            return _mismatch(value, path, "object")
        for key in value:
            error = _check_child(value, key, node.prop(key), f"{path}.{key}" if path else key,
                                 micro, quantity)
            if error:
                return error
    return None


def _check_child(container: Any, key: Any, child: Node | None, path: str, micro: Any,
                 quantity: Any) -> str | None:
    """:func:`_check` of ``container[key]`` (``child`` its schema node, None: undeclared),
    a string stored back as the server re-encodes it."""
    if child is None:
        return None
    value = container[key]
    error = _check(value, child, path, micro, quantity)
    if error or not isinstance(value, str):
        return error
    try:
        container[key] = _stored(value, child.schema, micro)
    except TimeError as exc:
        return str(exc)
    return None


def _stored(text: str, schema: Any, micro: Any) -> str | None:
    """A decoded string as the server re-encodes it: timestamps parsed (a TimeError when Go's
    parser refuses one) and in UTC (see gotime)."""
    if schema is micro:
        return stored_micro_time(text)
    if schema.get("format") == "date-time":
        return stored_time(text)
    return text


def _mismatch(value: Any, path: str, go_type: str) -> str:
    """encoding/json's UnmarshalTypeError; a number names its literal (one that is no integer,
    or out of the field's range)."""
    what = _JSON_TYPES.get(type(value), "value")
    if what == "number":
        what = f"number {value if isinstance(value, int) else orjson.dumps(value).decode()}"
    return f"json: cannot unmarshal {what} into Go struct field {path} of type {go_type}"
