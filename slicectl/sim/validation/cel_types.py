"""CEL declaration types of a structural schema, with the sizes the cost estimator reads.

Why: kube-apiserver estimates a rule's cost from the *declared* shape of the data, not from any
object: ``k8s.io/apiserver/pkg/cel/common.SchemaDeclType`` turns each schema node into a
``DeclType`` whose ``MaxElements`` bounds the size of that value (list items, map entries,
string length) and whose ``MinSerializedSize`` says how small one serialized value can be. This
module decides those two numbers the same way (written from that code, not copied):

- ``maxLength`` bounds a string at 4 bytes per character; with no ``maxLength`` an ``enum``
  bounds it by its longest value, else the whole request (3 MiB minus the quotes) does;
  ``format`` byte/duration/date/date-time have their own bounds;
- ``x-kubernetes-int-or-string`` is always an unbounded string (its ``maxLength`` is ignored);
- lists and maps without ``maxItems`` / ``maxProperties`` hold as many of their smallest
  elements as fit in one request;
- an object's minimum size counts its required properties that have no default.

The root of a resource (and an embedded resource) also declares ``apiVersion``, ``kind`` and
``metadata.name`` / ``metadata.generateName`` (unbounded strings) unless the schema declares
them as strings already.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_REQUEST_SIZE = 3 * 1024 * 1024
MIN_STRING_SIZE = 2  # ""
MIN_BOOL_SIZE = 4  # true
MIN_NUMBER_SIZE = 1  # 0
MAX_DATETIME_SIZE = 32
MIN_DATETIME_SIZE = 21
DATE_SIZE = 12
MAX_DURATION_SIZE = 32
MIN_DURATION_SIZE = 3

# Kinds that are of constant size for the cost estimator (cel-go's isScalar).
SCALAR_KINDS = frozenset({"bool", "double", "duration", "int", "timestamp", "uint"})


@dataclass
class Decl:
    """A CEL type; from a schema it also carries the size bounds (see module doc)."""

    kind: str  # object map list string bytes int uint double bool timestamp duration dyn
    max_elements: int = 0  # list items, map entries or string/bytes length; 0 for scalars
    min_size: int = 1
    fields: dict[str, Decl] = field(default_factory=dict)
    elem: Decl | None = None  # list items, map values
    key: Decl | None = None  # map keys


def simple(kind: str) -> Decl:
    """A type with no size information (literals, function results, type names)."""
    return Decl(kind)


_KEY = Decl("string", 0, MIN_STRING_SIZE)  # map keys: apiservercel.StringType, no bound set


def decl_type(schema: dict[str, Any], is_root: bool) -> Decl | None:
    """The DeclType of ``schema``, or None where a real server exposes nothing to CEL."""
    if schema.get("x-kubernetes-int-or-string"):
        return Decl("dyn", MAX_REQUEST_SIZE - 2, 1)
    if is_root:
        schema = _with_type_and_object_meta(schema)
    kind = schema.get("type")
    if kind == "array":
        return _list(schema)
    if kind == "object":
        return _object(schema)
    if kind == "string":
        return _string(schema)
    if kind == "boolean":
        return Decl("bool", 0, MIN_BOOL_SIZE)
    if kind == "number":
        return Decl("double", 0, MIN_NUMBER_SIZE)
    if kind == "integer":
        return Decl("int", 0, MIN_NUMBER_SIZE)
    return None


def _embedded(schema: Any) -> bool:
    return isinstance(schema, dict) and bool(schema.get("x-kubernetes-embedded-resource"))


def _list(schema: dict[str, Any]) -> Decl | None:
    items = schema.get("items")
    if not isinstance(items, dict):
        return None
    elem = decl_type(items, _embedded(items))
    if elem is None:
        return None
    limit = schema.get("maxItems")
    if isinstance(limit, int):
        bound = max(limit, 0)
    else:
        bound = (MAX_REQUEST_SIZE - 2) // (elem.min_size + 1)
    return Decl("list", bound, 2, elem=elem)


def _object(schema: dict[str, Any]) -> Decl | None:
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        value = decl_type(extra, _embedded(extra))
        if value is None:
            return None
        limit = schema.get("maxProperties")
        if isinstance(limit, int):
            bound = max(limit, 0)
        else:
            bound = (MAX_REQUEST_SIZE - 2) // (value.min_size + 6)
        return Decl("map", bound, 2, elem=value, key=_KEY)
    required = set(schema.get("required") or [])
    fields: dict[str, Decl] = {}
    min_size = 2  # {}
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        sub = decl_type(prop, _embedded(prop))
        if sub is None:
            continue
        fields[name] = sub
        if name in required and "default" not in prop:
            min_size += len(name) + sub.min_size + 4
    return Decl("object", 0, min_size, fields=fields)


def _string(schema: dict[str, Any]) -> Decl:
    fmt = schema.get("format")
    limit = schema.get("maxLength")
    if fmt == "byte":
        bound = max(limit, 0) if isinstance(limit, int) else MAX_REQUEST_SIZE - 2
        return Decl("bytes", bound, MIN_STRING_SIZE)
    if fmt == "duration":
        return Decl("duration", MAX_DURATION_SIZE, MIN_DURATION_SIZE)
    if fmt == "date":
        return Decl("timestamp", DATE_SIZE, DATE_SIZE)
    if fmt == "date-time":
        return Decl("timestamp", MAX_DATETIME_SIZE, MIN_DATETIME_SIZE)
    if isinstance(limit, int):
        bound = max(limit, 0) * 4  # maxLength counts runes; a rune is up to 4 bytes
    elif schema.get("enum"):
        bound = max((len(v.encode()) for v in schema["enum"] if isinstance(v, str)), default=0)
    else:
        bound = MAX_REQUEST_SIZE - 2
    return Decl("string", bound, MIN_STRING_SIZE)


def _is_string(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string"


def _with_type_and_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    meta = props.get("metadata")
    meta_props = (meta.get("properties") or {}) if isinstance(meta, dict) else {}
    if (_is_string(props.get("kind")) and _is_string(props.get("apiVersion"))
            and isinstance(meta, dict) and meta.get("type") == "object"
            and _is_string(meta_props.get("name"))
            and _is_string(meta_props.get("generateName"))):
        return schema
    string = {"type": "string"}
    return {**schema, "properties": {
        **props, "kind": string, "apiVersion": string,
        "metadata": {"type": "object",
                     "properties": {"name": string, "generateName": string}}}}


def size_at(root: Decl, path: list[str] | None) -> int | None:
    """``MaxElements`` of the node at ``path`` (first element: the variable), as the
    apiextensions size estimator finds it; None when the path leads nowhere."""
    if not path:
        return None
    node = root
    for name in path[1:]:
        if name in ("@items", "@values"):
            nxt = node.elem
        elif name == "@keys":
            nxt = node.key
        else:
            nxt = node.fields.get(name)
        if nxt is None:
            return None
        node = nxt
    return node.max_elements
