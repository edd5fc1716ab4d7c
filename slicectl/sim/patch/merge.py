"""The two merge patches: RFC 7386 JSON merge patches and Kubernetes strategic merge patches.

Strategic merge patches read ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``
from the built-in schemas (lists merged by key, primitive lists merged as sets, others
replaced) and honour ``$patch: replace|delete|merge``, ``$retainKeys``,
``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``; an unknown directive or
a list item without its merge key is a 400.
"""

from __future__ import annotations

import copy
from typing import Any

from slicectl.sim.objects import deep_copy
from slicectl.sim.patch.errors import PatchError
from slicectl.sim.validation.builtin import resolve


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (returns a new value; neither argument is changed)."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    return _merge_into(deep_copy(target) if isinstance(target, dict) else {}, deep_copy(patch))


def _merge_into(result: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Merge private ``patch`` into private ``result`` in place."""
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _merge_into(current if isinstance(current, dict) else {}, value)
        else:
            result[key] = value
    return result


_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"


def strategic_merge(original: Any, patch: dict[str, Any], schema: Any) -> dict[str, Any]:
    """Apply a strategic merge patch ``patch`` to the map ``original`` (returns a new map)."""
    base = original if isinstance(original, dict) else {}
    return _merge_map(base, patch, resolve(schema) if schema else None)


def _prop(schema: Any, key: str) -> tuple[Any, str, str | None]:
    """(resolved sub-schema, patch strategy, merge key) of field ``key``."""
    if not isinstance(schema, dict):
        return None, "", None
    node = (schema.get("properties") or {}).get(key)
    if node is None:
        extra = schema.get("additionalProperties")
        return (resolve(extra) if isinstance(extra, dict) else None), "", None
    strategy = str(node.get("x-kubernetes-patch-strategy", ""))
    merge_key = node.get("x-kubernetes-patch-merge-key")
    return resolve(node), strategy, merge_key if isinstance(merge_key, str) else None


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Any) -> dict[str, Any]:
    directive = patch.get(_DIRECTIVE)
    if directive == "replace":
        return _merge_map({}, {k: v for k, v in patch.items() if k != _DIRECTIVE}, schema)
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise PatchError(400, "BadRequest", f"Unknown patch type: {directive}")
    result = {k: copy.deepcopy(v) for k, v in original.items()}
    retain = patch.get(_RETAIN_KEYS)
    if isinstance(retain, list):
        for key in list(result):
            if key not in retain:
                del result[key]
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN_KEYS):
            continue
        if key.startswith(_ORDER):
            if isinstance(value, list):
                orders[key[len(_ORDER):]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVES):
            field = key[len(_DELETE_PRIMITIVES):]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        sub, strategy, merge_key = _prop(schema, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _merge_map(current if isinstance(current, dict) else {}, value, sub)
        elif isinstance(value, list) and "merge" in strategy.split(","):
            current = result.get(key)
            items = resolve(sub.get("items")) if isinstance(sub, dict) else None
            result[key] = _merge_list(
                current if isinstance(current, list) else [], value, items, merge_key
            )
        else:
            result[key] = _strip(copy.deepcopy(value), sub)
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            _, _, merge_key = _prop(schema, field)
            result[field] = _reorder(result[field], order, merge_key)
    return result


def _merge_list(
    original: list[Any], patch: list[Any], items: Any, merge_key: str | None
) -> list[Any]:
    if any(isinstance(p, dict) and p.get(_DIRECTIVE) == "replace" for p in patch):
        return [_strip(copy.deepcopy(p), items) for p in patch
                if not (isinstance(p, dict) and _DIRECTIVE in p)]
    if merge_key is None:
        result = [copy.deepcopy(v) for v in original]
        result.extend(copy.deepcopy(v) for v in patch if v not in result)
        return result
    result = [copy.deepcopy(v) for v in original]
    for element in patch:
        if not isinstance(element, dict) or merge_key not in element:
            raise PatchError(400, "BadRequest", f"map: {element} does not contain declared "
                             f"merge key: {merge_key}")
        key_value = element[merge_key]
        pos = next((i for i, v in enumerate(result)
                    if isinstance(v, dict) and v.get(merge_key) == key_value), None)
        if element.get(_DIRECTIVE) == "delete":
            result = [v for v in result
                      if not (isinstance(v, dict) and v.get(merge_key) == key_value)]
        elif pos is None:
            result.append(_merge_map({}, element, items))
        else:
            result[pos] = _merge_map(result[pos], element, items)
    return result


def _reorder(values: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    def ident(v: Any) -> Any:
        return v.get(merge_key) if merge_key and isinstance(v, dict) else v

    wanted = [ident(o) for o in order]
    ordered = [v for w in wanted for v in values if ident(v) == w]
    rest = [v for v in values if ident(v) not in wanted]
    return ordered + rest


def _strip(value: Any, schema: Any) -> Any:
    """A new value with strategic-merge directives removed (applied against nothing)."""
    if isinstance(value, dict):
        return _merge_map({}, value, schema)
    if isinstance(value, list):
        items = resolve(schema.get("items")) if isinstance(schema, dict) else None
        return [_strip(v, items) for v in value
                if not (isinstance(v, dict) and v.get(_DIRECTIVE) == "delete")]
    return value
