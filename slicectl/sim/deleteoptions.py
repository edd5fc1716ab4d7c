"""A DELETE's body decoded into DeleteOptions the way a real kube-apiserver decodes it.

Why: the delete handlers decode a body (any body of one byte or more, spaces too) with the
meta codecs into ``metav1.DeleteOptions`` and answer every failure with a 500 that carries Go's
error text and no reason (``ErrorToAPIStatus`` of a plain error). A lenient decoder here would
take a body that a real server refuses: another kind (``Pod``, ``Status``) deleted the object,
``"dryRun": "All"`` was a 422, ``"gracePeriodSeconds": "5"`` was served.

The steps, in the decoder's order (each answer captured from v1.32.6):

* the Content-Type picks the serializer: JSON (also when absent), YAML or protobuf; any other
  is a 415 listing the three;
* the kind is found (``SimpleMetaFactory.Interpret``, encoding/json into ``{apiVersion,
  kind}``, keys matched in any case): a document that is no JSON object or ``null`` is
  ``couldn't get version/kind; json parse error: ...``;
* an empty kind or version is DeleteOptions in ``meta.k8s.io/v1``; ``DeleteOptions`` is an
  unversioned kind (any apiVersion decodes); another meta kind decodes but has no conversion
  (``converting (v1.Status) to (v1.DeleteOptions): unknown conversion``); anything else is
  ``no kind "Pod" is registered for version "v1" in scheme ...``;
* the members are read into the struct (sigs.k8s.io/json: case-sensitive names, unknown ones
  dropped, ``null`` is the zero value); the first value of a wrong JSON type is encoding/json's
  ``UnmarshalTypeError`` (:func:`_type_error`).

A ``null`` body is empty options, so the query (its ``dryRun`` too) is ignored, as there.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from slicectl.sim import errors, protobuf
from slicectl.sim.gojson import Number, Pairs, literal_tree, syntax_error

MEDIA_TYPES = ("application/json", "application/yaml", protobuf.MEDIA_TYPE)
_FIND_KIND = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
              'Kind string "json:\\"kind,omitempty\\"" }')
_NO_CONVERSION = frozenset({  # kinds the meta scheme creates, none convertible to DeleteOptions
    "CreateOptions", "UpdateOptions", "Status", "APIVersions", "APIGroupList", "APIGroup",
    "APIResourceList"})
_META_V1_KINDS = frozenset({"ListOptions", "GetOptions", "PatchOptions", "Table", "TableOptions",
                            "PartialObjectMetadata", "PartialObjectMetadataList"})
_INT64 = re.compile(r"-?(0|[1-9][0-9]*)")
# member -> (Go type in messages, JSON kind it takes: "int", "bool", "string", "strings", or
# a nested struct's members)
_Field = tuple[str, Any]
_PRECONDITIONS: dict[str, _Field] = {"uid": ("types.UID", "string"),
                                     "resourceVersion": ("string", "string")}
_FIELDS: dict[str, _Field] = {
    "kind": ("string", "string"),
    "apiVersion": ("string", "string"),
    "gracePeriodSeconds": ("int64", "int"),
    "preconditions": ("v1.Preconditions", _PRECONDITIONS),
    "orphanDependents": ("bool", "bool"),
    "propagationPolicy": ("v1.DeletionPropagation", "string"),
    "dryRun": ("[]string", "strings"),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("bool", "bool"),
}


class DecodeError(Exception):
    """The decoder's error text: the handler answers it as a 500 without a reason."""


def decode(raw: bytes, content_type: str) -> dict[str, Any]:
    """The DeleteOptions a non-empty DELETE body decodes to (only the members the Go struct
    has, ``null`` ones dropped); raises the 415 or the decoder's 500."""
    media = content_type.split(";", 1)[0].strip().lower() or MEDIA_TYPES[0]
    if media not in MEDIA_TYPES:
        raise errors.ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                              "unknown format - accepted media types include: "
                              + ", ".join(MEDIA_TYPES))
    try:
        if media == protobuf.MEDIA_TYPE:
            return protobuf.decode(raw)
        return _decode_json(_yaml_to_json(raw) if media == MEDIA_TYPES[1] else raw)
    except (DecodeError, protobuf.ProtobufError) as exc:
        raise errors.ApiError(500, "", str(exc)) from exc


def _yaml_to_json(raw: bytes) -> bytes:
    try:
        return json.dumps(yaml.safe_load(raw)).encode()
    except (yaml.YAMLError, TypeError, ValueError) as exc:
        raise DecodeError(f"error converting YAML to JSON: {exc}") from exc


def _decode_json(raw: bytes) -> dict[str, Any]:
    text = raw.decode("utf-8", "replace")
    try:
        doc = literal_tree(text)
    except ValueError as exc:
        raise DecodeError("couldn't get version/kind; json parse error: "
                          + syntax_error(text, exc)) from exc
    api_version, kind = _find_kind(doc)
    group, _, version = api_version.rpartition("/")
    if api_version.count("/") > 1:
        raise DecodeError(f"unexpected GroupVersion string: {api_version}")
    if not version and not group:
        group, version = "meta.k8s.io", "v1"
    kind = kind or "DeleteOptions"
    if kind in _NO_CONVERSION or ((group, version) == ("meta.k8s.io", "v1")
                                  and kind in _META_V1_KINDS):
        raise DecodeError(f"converting (v1.{kind}) to (v1.DeleteOptions): unknown conversion")
    if kind != "DeleteOptions":
        shown = f"{group}/{version}" if group else version
        raise DecodeError(f'no kind "{kind}" is registered for version "{shown}" in scheme '
                          '"pkg/runtime/scheme.go:100"')
    return _read_struct(doc, _FIELDS, "DeleteOptions", "") if isinstance(doc, Pairs) else {}


def _find_kind(doc: Any) -> tuple[str, str]:
    """``SimpleMetaFactory.Interpret``: (apiVersion, kind), read by encoding/json, which
    matches names in any case and keeps a member's last value."""
    if doc is None:
        return "", ""
    if not isinstance(doc, Pairs):
        raise DecodeError("couldn't get version/kind; json parse error: json: cannot "
                          f"unmarshal {_json_kind(doc)} into Go value of type {_FIND_KIND}")
    found = {"apiversion": "", "kind": ""}
    for key, value in doc:
        name = key.lower()
        if name not in found or value is None:
            continue
        if not isinstance(value, str) or isinstance(value, Number):
            raise DecodeError("couldn't get version/kind; json parse error: json: cannot "
                              f"unmarshal {_json_kind(value)} into Go struct field "
                              f".{'apiVersion' if name == 'apiversion' else name} of type string")
        found[name] = value
    return found["apiversion"], found["kind"]


def _read_struct(doc: Pairs, fields: dict[str, _Field], struct: str,
                 path: str) -> dict[str, Any]:
    """The struct's members (a member's last value wins); the first wrong type raises."""
    out: dict[str, Any] = {}
    for key, value in doc:
        if key not in fields:
            continue  # case-sensitive: "DryRun" is unknown, and dropped
        go_type, takes = fields[key]
        field = f"{path}{key}"
        if value is None:
            out.pop(key, None)
        elif isinstance(takes, dict):
            if not isinstance(value, Pairs):
                raise _type_error(value, struct, field, go_type)
            out[key] = _read_struct(value, takes, go_type.rpartition(".")[2], f"{field}.")
        else:
            out[key] = _scalar(value, takes, struct, field, go_type)
    return out


def _scalar(value: Any, takes: str, struct: str, field: str, go_type: str) -> Any:
    if takes == "strings":
        if not isinstance(value, list):
            raise _type_error(value, struct, field, go_type)
        return [_scalar(item, "string", struct, field, "string") if item is not None else ""
                for item in value]
    if takes == "int" and isinstance(value, Number):
        if _INT64.fullmatch(value) and -2**63 <= int(value) < 2**63:
            return int(value)
        raise DecodeError(f"json: cannot unmarshal number {value} into Go struct field "
                          f"{struct}.{field} of type {go_type}")
    if takes == "bool" and isinstance(value, bool):
        return value
    if takes == "string" and isinstance(value, str) and not isinstance(value, Number):
        return str(value)
    raise _type_error(value, struct, field, go_type)


def _type_error(value: Any, struct: str, field: str, go_type: str) -> DecodeError:
    return DecodeError(f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                       f"{struct}.{field} of type {go_type}")


def _json_kind(value: Any) -> str:
    if isinstance(value, Number):
        return "number"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, Pairs) else "array"
