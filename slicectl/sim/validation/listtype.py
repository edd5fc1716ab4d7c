"""``x-kubernetes-list-type`` set and map uniqueness of custom resources (structurallisttype).

Why: kube-apiserver checks list types after the OpenAPI validation, in a pass of its own, so
their causes come after every OpenAPI cause; a duplicate is not a blocking error (the CEL rules
still run). Each list's own duplicates come before those of the lists inside its items; a
list-map key prints as Go's ``%#v`` of a ``map[string]interface {}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.govalues import go_cause, go_value


def join_path(path: str, key: str) -> str:
    """``spec`` + ``ports`` is ``spec.ports``; at the root, just the key."""
    return f"{path}.{key}" if path else key


def sub_schema(schema: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The schema of property ``key``: declared, else additionalProperties, else None."""
    props = schema.get("properties") or {}
    sub = props[key] if key in props else schema.get("additionalProperties")
    return sub if isinstance(sub, dict) else None


def schema_nodes(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of a structural schema with its CRD field path, a node before its children
    (``properties[name]`` in order, then ``items``, then ``additionalProperties``)."""
    yield path, schema
    children = [(f"{path}.properties[{key}]", sub)
                for key, sub in (schema.get("properties") or {}).items()]
    children += [(f"{path}.{key}", schema.get(key)) for key in ("items", "additionalProperties")]
    for child_path, child in children:
        if isinstance(child, dict):
            yield from schema_nodes(child, child_path)


def _duplicate(field: str, shown: str) -> e.Cause:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {shown}",
            "field": field}


def list_type_errors(value: Any, schema: dict[str, Any], path: str) -> list[e.Cause]:
    """``ValidateListSetsAndMaps``: each list's duplicates, then those inside its items."""
    causes: list[e.Cause] = []
    if isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            causes.extend(_duplicate(f"{path}[{i}]", go_value(value[i]))
                          for i in _second_appearances(value))
        elif list_type == "map":
            causes.extend(_list_map(value, schema.get("x-kubernetes-list-map-keys") or [], path))
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                causes.extend(list_type_errors(item, items, f"{path}[{i}]"))
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = sub_schema(schema, key)
            if sub is not None:
                causes.extend(list_type_errors(item, sub, join_path(path, key)))
    return causes


def _identity(item: Any) -> tuple[str, Any]:
    """Go's equality of decoded JSON: scalars by type and value, compounds by their JSON."""
    if isinstance(item, dict | list):
        return "json", json.dumps(item, sort_keys=True, separators=(",", ":"))
    return type(item).__name__, item


def _second_appearances(items: list[Any]) -> list[int]:
    """``validateListSet``: the index of the second appearance of each repeated value (a third
    one is not reported)."""
    counts: dict[tuple[str, Any], int] = {}
    found: list[int] = []
    for i, item in enumerate(items):
        ident = _identity(item)
        counts[ident] = counts.get(ident, 0) + 1
        if counts[ident] == 2:
            found.append(i)
    return found


_UNSPECIFIED = object()  # a null item or a missing key, equal only to itself


def _list_map(value: list[Any], keys: list[str], path: str) -> list[e.Cause]:
    """``validateListMap``: the first item that is not an object (alone), else duplicate keys."""
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [go_cause("FieldValueInvalid", f"{path}[{i}]", item,
                             "must be an object for an array of list-type map")]
    if len(value) <= 1:
        return []
    if len(keys) == 1:
        idents: list[Any] = [item.get(keys[0], _UNSPECIFIED) if isinstance(item, dict)
                             else _UNSPECIFIED for item in value]
        marked = [("unspecified", 0) if x is _UNSPECIFIED else _identity(x) for x in idents]
        shown = [{} if x is _UNSPECIFIED else {keys[0]: x} for x in idents]
    else:
        shown = [{k: item[k] for k in keys if k in item} if isinstance(item, dict) else {}
                 for item in value]
        marked = [_identity(x) for x in shown]
    counts: dict[Any, int] = {}
    causes: list[e.Cause] = []
    for i, ident in enumerate(marked):
        counts[ident] = counts.get(ident, 0) + 1
        if counts[ident] == 2:
            causes.append(_duplicate(f"{path}[{i}]", go_value(shown[i], True)))
    return causes
