"""Response representation negotiation: the object itself, a Table, or metadata only, or 406.

Why: clients ask for a representation through the Accept header (``application/json;as=Table;
g=meta.k8s.io;v=v1``, ``as=PartialObjectMetadata`` for one object or a watch,
``as=PartialObjectMetadataList`` for a list), and a real kube-apiserver answers 406 to an Accept
it cannot serve. A server that served JSON to anything would hide a client's bad header.

Two checks, as on a v1.32.6 server (every answer captured on loopback, 2026-11-28):

* a built-in type's routes are go-restful's (:func:`check_route`): some clause's bare media type
  must be exactly ``*/*`` or one the route produces (``application/json``, ``application/yaml``,
  ``application/vnd.kubernetes.protobuf``: no ``application/*``, no other case), else a 406
  ``406: Not Acceptable`` listing them (a list also its watch streams), before anything else;
* every handler negotiates (:func:`representation`, ``NegotiateOutputMediaType``): the clauses
  in goautoneg's order (by ``q``, then specific types first: :func:`parse_accept`), each against
  JSON, YAML and protobuf (``*/*`` and ``application/*`` match them in that order). A clause
  fits when its parameters do: ``stream`` only ``watch`` and not on YAML, ``sv`` only ``v1``;
  ``as``/``g``/``v`` name a Table (JSON or YAML only, and not for a streaming list) or a
  PartialObjectMetadata(List) in ``meta.k8s.io`` ``v1`` or ``v1beta1``, and nothing else; a
  custom resource untransformed is JSON or YAML only (not protobuf). No fit is a 406 ``only
  the following media types are accepted``. A watch then needs a stream serializer for the
  first fitting clause (:func:`check_stream`): YAML has none.

This server writes JSON only: a protobuf clause is skipped (``protobuf,json`` gets JSON, a
protobuf-only Accept a 406 where a real server serves protobuf for a built-in type), and YAML
is answered with JSON (which YAML parsers read). A list asked for as a single
PartialObjectMetadata, or one object as a list, is 406 NotAcceptable, as on the real server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from slicectl.sim import errors

Representation = Literal["object", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"]
META_API_VERSION = "meta.k8s.io/v1"
MEDIA_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
STREAM_TYPES = ("application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
_WRITTEN = ("json", "yaml")  # the subtypes of application/ this server answers (as JSON)
_PARTIAL = ("PartialObjectMetadata", "PartialObjectMetadataList")


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of an Accept header, as goautoneg parses it."""

    type: str
    subtype: str
    q: float
    params: dict[str, str]


def parse_accept(header: str) -> list[Clause]:
    """goautoneg's ``ParseAccept``: clauses split at commas and trimmed of spaces; one without a
    ``/`` (but ``*``) or with two is dropped; ``q`` read, a parameter without one ``=``
    dropped; then sorted with its comparison, by Go's insertion sort (short lists)."""
    clauses: list[Clause] = []
    for part in header.split(","):
        media, *param_texts = part.strip(" ").split(";")
        kind, _, subtype = media.partition("/")
        kind = kind.strip(" ")
        if (not subtype and kind != "*") or "/" in subtype:
            continue
        q, params = 1.0, {}
        for text in param_texts:
            key, *value = text.split("=")
            if len(value) != 1 or not value[0]:
                continue
            if key.strip(" ") == "q":
                q = _parse_float(value[0])
            else:
                params[key.strip(" ")] = value[0].strip(" ")
        clauses.append(Clause(kind, subtype.strip(" ") or "*", q, params))
    for i in range(1, len(clauses)):  # Go's insertionSort, which sort.Sort uses for n <= 12
        j = i
        while j > 0 and _before(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def _parse_float(text: str) -> float:
    """``strconv.ParseFloat``'s value, 0 when it fails (as goautoneg ignores the error)."""
    try:
        return float(text) if text == text.strip() and "_" not in text else 0.0
    except ValueError:
        return 0.0


def _before(a: Clause, b: Clause) -> bool:
    """goautoneg's ``Less``."""
    return a.q > b.q or (a.type != "*" and b.type == "*") or (
        a.subtype != "*" and b.subtype == "*")


def check_route(accept: str, is_list: bool) -> None:
    """go-restful's ``matchesAccept`` for a built-in type's route (``is_list``: the GET of a
    collection, which also produces the watch streams); raises its 406."""
    for part in (accept or "*/*").split(","):
        media = part.split(";", 1)[0].strip(" ")
        if media == "*/*" or media in MEDIA_TYPES:
            return
    offered = MEDIA_TYPES + (STREAM_TYPES if is_list else ())
    raise errors.ApiError(406, "NotAcceptable", "406: Not Acceptable\n\nAvailable "
                          "representations: " + ", ".join(offered), {})


def representation(accept: str, watch_list: bool = False) -> Representation:
    """What ``accept`` asks for (``watch_list``: a streaming list, never a Table); raises the
    handler's 406. (A custom resource's JSON-or-YAML-only rule needs nothing more here: this
    server skips protobuf clauses for every type.)"""
    if not accept:
        return "object"
    for clause in parse_accept(accept):
        for subtype in _WRITTEN:
            if _matches(clause, subtype):
                form = _fit(clause.params, subtype, watch_list)
                if form is not None:
                    return form
    raise not_acceptable(MEDIA_TYPES)


def check_stream(accept: str) -> None:
    """``NegotiateOutputMediaTypeStream``: the first clause that fits must have a stream
    serializer (JSON; YAML has none); raises its 406, which lists the streams."""
    for clause in parse_accept(accept or "*/*"):
        for subtype in _WRITTEN:
            if _matches(clause, subtype) and _fit(clause.params, subtype, False):
                if subtype == "json":
                    return
                raise not_acceptable(STREAM_TYPES)
    raise not_acceptable(STREAM_TYPES)


def _matches(clause: Clause, subtype: str) -> bool:
    return (clause.type, clause.subtype) in (("application", subtype), ("application", "*"),
                                             ("*", "*"))


def _fit(params: dict[str, str], subtype: str, watch_list: bool) -> Representation | None:
    """``acceptMediaTypeOptions`` with the scope's restrictions: the representation a clause's
    parameters ask for on ``application/<subtype>``, None when they do not fit."""
    stream, server_version = params.get("stream", ""), params.get("sv", "")
    if stream and (subtype != "json" or stream != "watch"):
        return None
    if server_version and server_version != "v1":
        return None
    if not {"as", "g", "v"} & params.keys():
        return "object"
    kind, group, version = params.get("as", ""), params.get("g", ""), params.get("v", "")
    if group != "meta.k8s.io" or version not in ("v1", "v1beta1"):
        return None
    if kind == "Table" and not watch_list:
        return "Table"
    return kind if kind in _PARTIAL else None  # type: ignore[return-value]


def not_acceptable(offered: tuple[str, ...]) -> errors.ApiError:
    return errors.ApiError(406, "NotAcceptable", "only the following media types are "
                           "accepted: " + ", ".join(offered))


def partial(obj: dict[str, Any]) -> dict[str, Any]:
    """One object's PartialObjectMetadata."""
    return {"kind": "PartialObjectMetadata", "apiVersion": META_API_VERSION,
            "metadata": obj["metadata"]}


def partial_list(items: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadataList", "apiVersion": META_API_VERSION,
            "metadata": meta, "items": [partial(o) for o in items]}


def not_a_list(kind: str) -> errors.ApiError:
    return errors.ApiError(406, "NotAcceptable", f"you requested {kind}, but the requested "
                           "object is not a list")


def is_a_list(kind: str) -> errors.ApiError:
    return errors.ApiError(406, "NotAcceptable", f"you requested {kind}, but the requested "
                           "object is a list")
