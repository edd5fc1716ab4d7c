"""RFC 6902 JSON patches, as evanphx/json-patch applies them for kube-apiserver.

What it decides: which operations apply and what they make of the document (a ``test`` of a
missing key reads null, ``True`` is not ``1``, a ``replace`` of the root takes an object),
and that anything else (a bad pointer or index, a missing ``value`` or ``from``, a failed
``test``) is the 422 a real server answers, a non-list 400 and more than 10,000
operations 413.
"""

from __future__ import annotations

import copy
from typing import Any

from slicectl.sim.patch.errors import INVALID, PatchError


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply the RFC 6902 operations ``ops`` to ``doc`` (changed in place and returned)."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise PatchError(400, "BadRequest", "json: cannot unmarshal object into Go value of "
                         "type jsonpatch.Patch")
    if len(ops) > 10000:
        raise PatchError(413, "RequestEntityTooLarge", "The request is too large: too many "
                         "operations in the JSON patch")
    for op in ops:
        doc = _json_patch_op(doc, op)
    return doc


def _json_patch_op(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    path = op.get("path")
    if not isinstance(path, str):
        raise PatchError(422, "Invalid", INVALID)
    if kind == "add":
        return _add(doc, path, copy.deepcopy(_required_value(op)))
    if kind == "remove":
        return _remove(doc, path)[0]
    if kind == "replace":
        value = copy.deepcopy(_required_value(op))
        if path == "" and isinstance(value, dict):
            return value  # the whole object; evanphx refuses other roots, or leaves them be
        doc, _ = _remove(doc, path)
        return _add(doc, path, value)
    if kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str) or source == "":
            raise PatchError(422, "Invalid", INVALID)  # evanphx: "missing from path"
        if kind == "move":
            doc, value = _remove(doc, source)
        else:
            value = copy.deepcopy(_get(doc, source))
        return _add(doc, path, value)
    if kind == "test":
        if not json_equal(doc if path == "" else _tested(doc, path), op.get("value")):
            raise PatchError(422, "Invalid", INVALID)
        return doc
    raise PatchError(422, "Invalid", INVALID)


def _required_value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise PatchError(422, "Invalid", INVALID)
    return op["value"]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(422, "Invalid", INVALID)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, append: bool) -> int:
    if append and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(422, "Invalid", INVALID)
    idx = int(token)
    limit = len(container) if append else len(container) - 1
    if idx > limit:
        raise PatchError(422, "Invalid", INVALID)
    return idx


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError(422, "Invalid", INVALID)
    node = doc
    for token in tokens[:-1]:
        node = _child(node, token)
    return node, tokens[-1]


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict) and token in node:
        return node[token]
    if isinstance(node, list):
        return node[_index(node, token, append=False)]
    raise PatchError(422, "Invalid", INVALID)


def _get(doc: Any, path: str) -> Any:
    node = doc
    for token in _pointer(path):
        node = _child(node, token)
    return node


def _tested(doc: Any, path: str) -> Any:
    """What a ``test`` compares: a missing key of an existing object reads as null (as in
    evanphx/json-patch); a missing parent, or a bad index, fails the patch."""
    parent, token = _parent(doc, path)
    if isinstance(parent, dict):
        return parent.get(token)
    if isinstance(parent, list):
        return parent[_index(parent, token, append=False)]
    raise PatchError(422, "Invalid", INVALID)


def _add(doc: Any, path: str, value: Any) -> Any:
    parent, token = _parent(doc, path)  # evanphx refuses to add at the root ("")
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, append=True), value)
    else:
        raise PatchError(422, "Invalid", INVALID)
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    parent, token = _parent(doc, path)
    if isinstance(parent, dict) and token in parent:
        return doc, parent.pop(token)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, token, append=False))
    raise PatchError(422, "Invalid", INVALID)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values (``True`` is not ``1``; ``1`` equals ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)
