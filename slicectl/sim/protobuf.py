"""Decode the Kubernetes protobuf request bodies kubectl sends, into the JSON dicts we store.

Why: kubectl's typed clients (``kubectl create namespace``, for one) POST
``application/vnd.kubernetes.protobuf`` even to a server that answers JSON. The envelope is the
magic ``k8s\\x00`` followed by a ``runtime.Unknown`` (1: typeMeta{1: apiVersion, 2: kind},
2: raw, 3: contentEncoding, 4: contentType); ``raw`` is the object's own message.

What it decides: which messages can be decoded (a small table of field numbers taken from
k8s.io/apimachinery meta/v1 and k8s.io/api core/v1 ``generated.proto``: ObjectMeta,
OwnerReference, Time, Namespace, DeleteOptions), and how proto values become JSON the way the
Go types marshal them: zero values (``""``, 0, false, empty lists, maps and messages) are
omitted, as ``omitempty`` omits them, and a ``Time`` becomes RFC 3339 seconds. A kind outside
the table is not guessed at: :class:`ProtobufError` lets the caller answer 415.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Union

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """The body is not a protobuf message this server can decode."""


# A field is (json name, type, repeated); a type is a scalar name or a nested message table.
FieldType = Union[str, "Message"]
Message = dict[int, tuple[str, FieldType, bool]]

TIME = "time"  # meta/v1 Time: 1 seconds, 2 nanos
# Go pointer fields (*int64, *bool): present zero values are kept, they mean something.
PTR_INT, PTR_BOOL = "*int", "*bool"
MAP = "map"  # map<string, string>: entries with 1 key, 2 value

OWNER_REFERENCE: Message = {
    1: ("kind", "string", False),
    3: ("name", "string", False),
    4: ("uid", "string", False),
    5: ("apiVersion", "string", False),
    6: ("controller", PTR_BOOL, False),
    7: ("blockOwnerDeletion", PTR_BOOL, False),
}

OBJECT_META: Message = {
    1: ("name", "string", False),
    2: ("generateName", "string", False),
    3: ("namespace", "string", False),
    4: ("selfLink", "string", False),
    5: ("uid", "string", False),
    6: ("resourceVersion", "string", False),
    7: ("generation", "int", False),
    8: ("creationTimestamp", TIME, False),
    9: ("deletionTimestamp", TIME, False),
    10: ("deletionGracePeriodSeconds", PTR_INT, False),
    11: ("labels", MAP, True),
    12: ("annotations", MAP, True),
    13: ("ownerReferences", OWNER_REFERENCE, True),
    14: ("finalizers", "string", True),
}

NAMESPACE: Message = {
    1: ("metadata", OBJECT_META, False),
    2: ("spec", {1: ("finalizers", "string", True)}, False),
    3: ("status", {1: ("phase", "string", False)}, False),
}

DELETE_OPTIONS: Message = {
    1: ("gracePeriodSeconds", PTR_INT, False),
    2: ("preconditions", {1: ("uid", "string", False),
                          2: ("resourceVersion", "string", False)}, False),
    3: ("orphanDependents", PTR_BOOL, False),
    4: ("propagationPolicy", "string", False),
    5: ("dryRun", "string", True),
}

# (apiVersion, kind) -> the object's message.
KINDS: dict[tuple[str, str], Message] = {
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
}

_UNKNOWN: Message = {
    1: ("typeMeta", {1: ("apiVersion", "string", False), 2: ("kind", "string", False)}, False),
    2: ("raw", "bytes", False),
    3: ("contentEncoding", "string", False),
    4: ("contentType", "string", False),
}


def is_protobuf(media_type: str) -> bool:
    return media_type.split(";", 1)[0].strip().lower() == MEDIA_TYPE


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of an enveloped object (``apiVersion`` and ``kind`` included)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("provided object is not a Kubernetes protobuf message")
    envelope = _message(body[len(MAGIC):], _UNKNOWN)
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {envelope['contentEncoding']!r}")
    message = KINDS.get((api_version, kind))
    if message is None:
        raise ProtobufError(f"no protobuf decoder for {api_version}, Kind={kind}")
    obj = _message(envelope.get("raw", b""), message)
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: varints as int, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated length-delimited field")
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _message(data: bytes, message: Message) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    pointers: set[str] = set()
    for number, raw in _fields(data):
        spec = message.get(number)
        if spec is None:
            continue  # an unknown field: dropped, as the Go decoder drops it
        name, ftype, repeated = spec
        value = _value(raw, ftype)
        if ftype in (PTR_INT, PTR_BOOL):
            pointers.add(name)
        if ftype == MAP:
            assert isinstance(value, tuple)
            obj.setdefault(name, {})[value[0]] = value[1]
        elif repeated:
            obj.setdefault(name, []).append(value)
        else:
            obj[name] = value
    return {k: v for k, v in obj.items()
            if k in pointers or v not in ("", 0, False, None, {}, [], b"")}


def _value(raw: int | bytes, ftype: FieldType) -> Any:
    if isinstance(ftype, dict):
        return _message(_bytes(raw), ftype)
    if ftype in ("int", "bool", PTR_INT, PTR_BOOL):
        if not isinstance(raw, int):
            raise ProtobufError("expected a varint")
        if ftype in ("bool", PTR_BOOL):
            return raw != 0
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    data = _bytes(raw)
    if ftype == "bytes":
        return data
    if ftype == TIME:
        seconds = dict(_fields(data)).get(1, 0)
        if not seconds:
            return None
        assert isinstance(seconds, int)
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if ftype == MAP:
        entry = dict(_fields(data))
        return (_text(entry.get(1, b"")), _text(entry.get(2, b"")))
    return _text(data)


def _bytes(raw: int | bytes) -> bytes:
    if not isinstance(raw, bytes):
        raise ProtobufError("expected a length-delimited field")
    return raw


def _text(raw: int | bytes) -> str:
    try:
        return _bytes(raw).decode()
    except UnicodeDecodeError as exc:
        raise ProtobufError("invalid UTF-8 in a string field") from exc
