"""Bodies that name a key twice: the value Go decodes from them, and the strict errors.

Why: JSON allows an object to repeat a key, and a real server neither refuses such a body nor
takes its last value the way orjson does. Its decoder (sigs.k8s.io/json, a fork of Go's
encoding/json) reads the members in order into the Go value:

- a repeated key of a struct decodes into the same field again: a struct (or a pointer to one)
  is merged, fields of the second occurrence over those of the first; a map is reused, its
  entries merged; a slice is reused, each element decoded into the one at its index (merged
  again when it is a struct) and cut to the new length; a scalar is replaced; ``null`` empties
  the field (a pointer's, map's or slice's answer: Go leaves a field held by value as it was,
  which the schema here cannot tell apart, so that case alone differs);
- a custom resource decodes into ``map[string]interface{}``, and a patch document into a map
  too: there the last value wins whole (orjson's answer);
- the strict decoder (fieldValidation Strict or Warn) reports ``duplicate field "path"`` for a
  key met twice in one object literal, interleaved in document order with ``unknown field
  "path"`` of a typed object, each error once, at most 100 of them (``saveStrictError``).
  Keys inside an unknown field or an opaque one (RawExtension, FieldsV1) are never looked at.

:func:`typed` gives a built-in's value and errors, :func:`untyped` the errors of a document
decoded into maps, and :func:`patch_operations` those of a JSON patch read into patch.go's
``[]jsonPatchOp``. The trees come from :func:`slicectl.sim.gojson.repeated`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from slicectl.sim.gojson import Pairs, plain
from slicectl.sim.validation.decode import decode_error_at
from slicectl.sim.validation.errors import go_quote
from slicectl.sim.validation.prune import Node

MAX_ERRORS = 100  # saveStrictError's cap
_PATCH_OP_FIELDS = frozenset(("op", "path", "from", "value"))


class StrictErrors:
    """The strict decoder's errors in the order it met them, each once, at most 100; and
    the first value of the wrong type among those a later occurrence replaces (``fatal``:
    Go's decoder saves it and refuses the body, whatever came after)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._seen: set[str] = set()
        self.fatal: str | None = None

    def add(self, kind: str, path: str) -> None:
        text = f"{kind} field {go_quote(path)}"
        if len(self.texts) < MAX_ERRORS and text not in self._seen:
            self._seen.add(text)
            self.texts.append(text)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def typed(tree: Any, root: Node) -> tuple[Any, list[str], str | None]:
    """A built-in body's decoded value, its strict errors (unknown and duplicate), and the
    type error of a value a repeated key replaced (the merged value is checked as usual)."""
    found = StrictErrors()
    return _decode(tree, root, None, "", found), found.texts, found.fatal


def _opaque(node: Node | None) -> bool:
    """A field Go decodes as raw bytes or into an interface (RawExtension, FieldsV1, JSON),
    or one nothing declares: nothing inside it is looked at."""
    return node is None or node.anything or not any(
        key in node.schema for key in ("properties", "additionalProperties", "items"))


def _decode(value: Any, node: Node | None, into: Any, path: str, found: StrictErrors) -> Any:
    if _opaque(node):
        return plain(value)
    assert node is not None
    if isinstance(value, Pairs):
        return _object(value, node, into, path, found)
    if isinstance(value, list):
        items = node.items()
        old = into if isinstance(into, list) else []
        return [_decode(item, items, old[i] if i < len(old) else None, f"{path}[{i}]", found)
                for i, item in enumerate(value)]
    return value


def _object(members: Pairs, node: Node, into: Any, path: str,
            found: StrictErrors) -> dict[str, Any]:
    is_map = isinstance(node.schema.get("additionalProperties"), dict) and not node.schema.get(
        "properties")
    result: dict[str, Any] = dict(into) if isinstance(into, dict) else {}
    seen: set[str] = set()
    repeated = {key for key, count in Counter(key for key, _ in members).items() if count > 1}
    for key, sub in members:
        child = node.prop(key)
        if child is None and not node.extra_any:
            found.add("unknown", _join(path, key))
            continue
        if key in seen:
            found.add("duplicate", _join(path, key))
        seen.add(key)
        if key in repeated and child is not None and found.fatal is None:
            found.fatal = decode_error_at(plain(sub), child, _join(path, key))
        result[key] = _decode(sub, child, None if is_map else result.get(key), _join(path, key),
                              found)
    return result


def untyped(tree: Any, path: str = "", found: StrictErrors | None = None) -> list[str]:
    """The duplicate-field errors of a document decoded into maps and slices."""
    found = found if found is not None else StrictErrors()
    if isinstance(tree, Pairs):
        seen: set[str] = set()
        for key, sub in tree:
            if key in seen:
                found.add("duplicate", _join(path, key))
            seen.add(key)
            untyped(sub, _join(path, key), found)
    elif isinstance(tree, list):
        for i, item in enumerate(tree):
            untyped(item, f"{path}[{i}]", found)
    return found.texts


def patch_operations(tree: Any) -> list[str]:
    """The strict errors of a JSON patch decoded into ``[]jsonPatchOp`` (``op``, ``path``,
    ``from`` and an untyped ``value``), each prefixed ``json patch`` as patch.go words them.
    ``tree`` is a plain decoded document or a :func:`~slicectl.sim.gojson.repeated` tree."""
    found = StrictErrors()
    for i, op in enumerate(tree if isinstance(tree, list) else []):
        members = op if isinstance(op, Pairs) else list(op.items()) if isinstance(
            op, dict) else []
        seen: set[str] = set()
        for key, sub in members:
            where = f"[{i}].{key}"
            if key not in _PATCH_OP_FIELDS:
                found.add("unknown", where)
                continue
            if key in seen:
                found.add("duplicate", where)
            seen.add(key)
            if key == "value":
                untyped(sub, where, found)
    return ["json patch " + text for text in found.texts]
