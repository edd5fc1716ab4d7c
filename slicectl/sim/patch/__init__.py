"""Apply PATCH bodies the way kube-apiserver does.

Why: clients (kubectl apply/label/patch, slicectl's own writers) send JSON merge patches
(RFC 7386), JSON patches (RFC 6902) and strategic merge patches; the embedded server must give
the object they would get from a real server, and refuse what a real server refuses:

- a malformed body is ``400 BadRequest``; a JSON patch that cannot be applied (a failed ``test``,
  a missing path) is ``422 Invalid`` "the server rejected our request due to an error in our
  request", as ``NewGenericServerResponse(422, ...)`` does in the real patch handler;
- strategic merge patch on a custom resource, or an unknown content type (matched exactly,
  :func:`patch_type`), is ``415 UnsupportedMediaType``.

This module decides which patch applies and how its document is read (media type, decoding,
the strict decoder's 400s); the patches themselves are :mod:`.jsonpatch` (RFC 6902) and
:mod:`.merge` (RFC 7386 and strategic merge), their refusals :mod:`.errors`.
:func:`apply_patch` also returns the strict decoder's findings in the patch document itself (a
key named twice; a JSON patch operation's unknown member), which patch.go reports, under
fieldValidation Strict or Warn, before those of the patched object.
``application/apply-patch+yaml`` (server-side apply) is approximated: the YAML is applied as a
strategic merge patch (built-ins) or merge patch (custom resources), without field ownership.
"""

from __future__ import annotations

from typing import Any

import yaml

from slicectl.sim import gojson
from slicectl.sim.objects import deep_copy
from slicectl.sim.patch.errors import INVALID, PatchError, UndecodablePatch
from slicectl.sim.patch.jsonpatch import json_patch
from slicectl.sim.patch.merge import merge_patch, strategic_merge
from slicectl.sim.types import ResourceType
from slicectl.sim.validation.builtin import builtin_schemas
from slicectl.sim.validation.duplicates import patch_operations, untyped

__all__ = ["APPLY_PATCH", "JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "PatchError",
           "UndecodablePatch", "apply_patch", "merge_patch", "patch_type", "patch_via"]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


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
    media = patch_type(content_type, rt)
    applied = media == APPLY_PATCH
    if applied:
        patch = _decode_applied(patch_body, rt)
        media = MERGE_PATCH if rt.is_custom else STRATEGIC_MERGE_PATCH
    else:
        patch = _decode_json(patch_body)
    found = _document_errors(patch_body, patch, media) if strict_decode and not applied else []
    if media == JSON_PATCH:
        if strict_decode:
            _check_operations(patch)
        result: Any = json_patch(deep_copy(original), patch)
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
        raise PatchError(422, "Invalid", INVALID)
    return result, found


def patch_type(content_type: str, rt: ResourceType) -> str:
    """The patch type of a PATCH's Content-Type as ``PatchResource`` reads it: what comes
    before a first ``;`` that is not the first character, compared exactly (no case folding,
    no trimming); else a 415, which a real server answers before anything else. A built-in's
    go-restful route refuses first, in its own words, a Content-Type none of whose
    comma-separated media types (parameters cut, spaces trimmed) it consumes."""
    accepted = [JSON_PATCH, MERGE_PATCH] + ([] if rt.is_custom else [STRATEGIC_MERGE_PATCH])
    accepted.append(APPLY_PATCH)
    content_type = content_type.strip()  # as Go's HTTP reader gives a header's value
    cut = content_type.find(";")
    media = content_type[:cut] if cut > 0 else content_type
    if media in accepted:
        return media
    offered = [part.split(";")[0].strip() for part in content_type.split(",")]
    if not rt.is_custom and not set(offered) & set(accepted):
        raise PatchError(415, "UnsupportedMediaType", "415: Unsupported Media Type")
    raise PatchError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                     "format - accepted media types include: " + ", ".join(accepted))


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
    media = content_type.split(";")[0].strip()
    return "strategic" if media in (STRATEGIC_MERGE_PATCH, APPLY_PATCH) else "patch"


def _decode_json(body: bytes) -> Any:
    try:
        return gojson.loads(body)
    except ValueError as exc:
        raise PatchError(400, "BadRequest", f"error decoding patch: {exc}") from exc


def _decode_applied(body: bytes, rt: ResourceType) -> dict[str, Any]:
    """An apply patch's document, read into a map as ``applyPatcher`` reads it (null is an
    empty one), of exactly ``rt``'s type (``versionCheckManager``, a 400 otherwise)."""
    patch = _decode_yaml(body)
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise PatchError(400, "BadRequest", "error decoding YAML: error unmarshaling JSON: "
                         "while decoding JSON: " + _cannot_unmarshal(patch, _GO_MAP))
    gvk = _group_version_kind(patch)
    if gvk != (rt.group, rt.version, rt.kind):
        group, version, kind = gvk
        raise PatchError(400, "BadRequest", f"invalid object type: {group}/{version}, "
                         f"Kind={kind}")
    return patch


def _group_version_kind(obj: dict[str, Any]) -> tuple[str, str, str]:
    """Unstructured's ``GroupVersionKind()``: a field that is no string reads as "", and an
    apiVersion ``schema.ParseGroupVersion`` refuses (two slashes) empties all three."""
    api_version, kind = (value if isinstance(value := obj.get(key), str) else ""
                         for key in ("apiVersion", "kind"))
    if api_version.count("/") > 1:
        return "", "", ""
    group, _, version = api_version.rpartition("/")
    return group, version, kind


def _decode_yaml(body: bytes) -> Any:
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise PatchError(400, "BadRequest", f"error decoding YAML: {exc}") from exc
