"""Apply PATCH bodies the way kube-apiserver does.

Why: clients (kubectl apply/label/patch, slicectl's own writers) send JSON merge patches
(RFC 7386), JSON patches (RFC 6902) and strategic merge patches; the embedded server must give
the object they would get from a real server, and refuse what a real server refuses:

- a malformed body is ``400 BadRequest``; a JSON patch that cannot be applied (a failed ``test``,
  a missing path) is ``422 Invalid`` "the server rejected our request due to an error in our
  request", as ``NewGenericServerResponse(422, ...)`` does in the real patch handler;
- strategic merge patch on a custom resource, or an unknown content type, is
  ``415 UnsupportedMediaType`` listing the accepted media types.

Strategic merge patches read ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``
from the built-in schemas and honour ``$patch: replace|delete|merge``, ``$retainKeys``,
``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``.
:func:`apply_patch` also returns the strict decoder's findings in the patch document itself (a
key named twice; a JSON patch operation's unknown member), which patch.go reports, under
fieldValidation Strict or Warn, before those of the patched object.
``application/apply-patch+yaml`` (server-side apply) is approximated: the YAML is applied as a
strategic merge patch (built-ins) or merge patch (custom resources), without field ownership.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from slicectl.sim import gojson
from slicectl.sim.objects import deep_copy
from slicectl.sim.types import ResourceType
from slicectl.sim.validation.builtin import builtin_schemas, resolve
from slicectl.sim.validation.duplicates import patch_operations, untyped

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class PatchError(Exception):
    """A patch the server rejects: ``code`` is the HTTP status, ``reason`` the Status reason."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


class UndecodablePatch(Exception):
    """A patch whose result is no object: patch.go's 422 on the field ``patch`` with
    ``value`` and ``why``."""

    def __init__(self, value: Any, why: str) -> None:
        super().__init__(why)
        self.value = value
        self.why = why


_GO_TYPE_META = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                 'Kind string "json:\\"kind,omitempty\\"" }')


def apply_patch(
    original: dict[str, Any], patch_body: bytes, content_type: str, rt: ResourceType,
    strict_decode: bool = True,
) -> tuple[dict[str, Any], list[str]]:
    """``original`` with the patch applied (``original`` is never mutated), and the strict
    errors of the patch document. ``strict_decode``: fieldValidation is Strict or Warn, under
    which patch.go first reads a JSON or merge patch into Go types with the strict decoder,
    whose shape errors it answers and whose strict errors it reports; otherwise none."""
    media = content_type.split(";")[0].strip().lower()
    accepted = [JSON_PATCH, MERGE_PATCH] + ([] if rt.is_custom else [STRATEGIC_MERGE_PATCH])
    if media not in (*accepted, APPLY_PATCH):
        raise PatchError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join([*accepted, APPLY_PATCH]),
        )
    applied = media == APPLY_PATCH
    if applied:
        patch = _decode_yaml(patch_body)
        media = MERGE_PATCH if rt.is_custom else STRATEGIC_MERGE_PATCH
    else:
        patch = _decode_json(patch_body)
    found = _document_errors(patch_body, patch, media) if strict_decode and not applied else []
    if media == JSON_PATCH:
        if strict_decode:
            _check_operations(patch)
        result: Any = _json_patch(deep_copy(original), patch)
    elif media == MERGE_PATCH:
        if not isinstance(patch, dict):
            if strict_decode and not applied and patch is not None:
                raise PatchError(400, "BadRequest",
                                 "error decoding patch: " + _cannot_unmarshal(patch, _GO_MAP))
            if isinstance(patch, list) and not applied:  # evanphx takes an array as the result
                raise UndecodablePatch(patch, "couldn't get version/kind; json parse error: "
                                       + _cannot_unmarshal(patch, _GO_TYPE_META))
            raise PatchError(400, "BadRequest", "Invalid JSON Patch")
        result = merge_patch(original, patch)
    else:
        if patch is None and not applied:
            patch = {}  # null decodes to a nil map: nothing to merge
        if not isinstance(patch, dict):
            raise PatchError(400, "BadRequest", "strategic merge patch must be a JSON object"
                             if applied else _cannot_unmarshal(patch, _GO_MAP))
        schema = builtin_schemas().get(rt.definition or "")
        result = strategic_merge(original, patch, schema)
    if not isinstance(result, dict):
        raise PatchError(422, "Invalid", "the server rejected our request due to an error in "
                         "our request")
    return result, found


_GO_MAP = "map[string]interface {}"
_GO_OP = "handlers.jsonPatchOp"


def _cannot_unmarshal(value: Any, into: str, field: str = "") -> str:
    """encoding/json's UnmarshalTypeError text for ``value`` read into the Go type ``into``."""
    kind = ("object" if isinstance(value, dict) else "array" if isinstance(value, list)
            else "string" if isinstance(value, str) else "bool" if isinstance(value, bool)
            else "number")
    where = f"Go struct field {field}" if field else "Go value"
    return f"json: cannot unmarshal {kind} into {where} of type {into}"


def _check_operations(ops: Any) -> None:
    """patch.go's strict read of a JSON patch into ``[]jsonPatchOp``: the first value of a
    wrong type is a 400 (``null`` is the zero value, never wrong)."""
    def refuse(value: Any, into: str, field: str = "") -> None:
        raise PatchError(400, "BadRequest",
                         "error decoding patch: " + _cannot_unmarshal(value, into, field))

    if ops is None:
        return
    if not isinstance(ops, list):
        refuse(ops, "[]" + _GO_OP)
    for op in ops:
        if op is not None and not isinstance(op, dict):
            refuse(op, _GO_OP)
        for key, value in (op or {}).items():
            if key in ("op", "path", "from") and value is not None and not isinstance(value, str):
                refuse(value, "string", f"jsonPatchOp.{key}")


def _document_errors(patch_body: bytes, patch: Any, media: str) -> list[str]:
    """The strict errors patch.go's ``kjson.UnmarshalStrict`` finds in a JSON patch document
    (``patch``, as decoded from ``patch_body``): a JSON patch is read into ``[]jsonPatchOp``,
    a merge or strategic merge patch into a map. Only a repeated key needs the second read."""
    tree = gojson.repeated(patch_body)
    if media == JSON_PATCH:
        return patch_operations(tree if tree is not None else patch)
    return [] if tree is None else untyped(tree)


def patch_via(content_type: str) -> str:
    """How patch.go turns the patched document into the object (see ``strict_errors``): a
    strategic merge patch (an apply patch here too) converts a map, the others decode JSON."""
    media = content_type.split(";")[0].strip().lower()
    return "strategic" if media in (STRATEGIC_MERGE_PATCH, APPLY_PATCH) else "patch"


def _decode_json(body: bytes) -> Any:
    try:
        return gojson.loads(body)
    except ValueError as exc:
        raise PatchError(400, "BadRequest", f"error decoding patch: {exc}") from exc


def _decode_yaml(body: bytes) -> Any:
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise PatchError(400, "BadRequest", f"error decoding YAML: {exc}") from exc


# --- RFC 7386 --------------------------------------------------------------------------------

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


# --- RFC 6902 --------------------------------------------------------------------------------

_INVALID = "the server rejected our request due to an error in our request"


def _json_patch(doc: Any, ops: Any) -> Any:
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
        raise PatchError(422, "Invalid", _INVALID)
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
            raise PatchError(422, "Invalid", _INVALID)  # evanphx: "missing from path"
        if kind == "move":
            doc, value = _remove(doc, source)
        else:
            value = copy.deepcopy(_get(doc, source))
        return _add(doc, path, value)
    if kind == "test":
        if not json_equal(doc if path == "" else _tested(doc, path), op.get("value")):
            raise PatchError(422, "Invalid", _INVALID)
        return doc
    raise PatchError(422, "Invalid", _INVALID)


def _required_value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise PatchError(422, "Invalid", _INVALID)
    return op["value"]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(422, "Invalid", _INVALID)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, append: bool) -> int:
    if append and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(422, "Invalid", _INVALID)
    idx = int(token)
    limit = len(container) if append else len(container) - 1
    if idx > limit:
        raise PatchError(422, "Invalid", _INVALID)
    return idx


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError(422, "Invalid", _INVALID)
    node = doc
    for token in tokens[:-1]:
        node = _child(node, token)
    return node, tokens[-1]


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict) and token in node:
        return node[token]
    if isinstance(node, list):
        return node[_index(node, token, append=False)]
    raise PatchError(422, "Invalid", _INVALID)


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
    raise PatchError(422, "Invalid", _INVALID)


def _add(doc: Any, path: str, value: Any) -> Any:
    parent, token = _parent(doc, path)  # evanphx refuses to add at the root ("")
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, append=True), value)
    else:
        raise PatchError(422, "Invalid", _INVALID)
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    parent, token = _parent(doc, path)
    if isinstance(parent, dict) and token in parent:
        return doc, parent.pop(token)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, token, append=False))
    raise PatchError(422, "Invalid", _INVALID)


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


# --- strategic merge patch ------------------------------------------------------------------

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
