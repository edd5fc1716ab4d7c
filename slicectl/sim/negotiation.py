"""Response representation negotiation: the object itself, a Table, or metadata only.

Why: clients ask for a transformed representation through the Accept header's parameters
(``application/json;as=Table;g=meta.k8s.io;v=v1``, ``as=PartialObjectMetadata`` for one object
or a watch, ``as=PartialObjectMetadataList`` for a list), as kube-apiserver's
``endpoints/handlers/response.go`` serves them. Decides which representation an Accept header
selects (the first clause this server can serve, JSON only: protobuf clauses are skipped, so a
client listing ``application/vnd.kubernetes.protobuf,application/json`` gets JSON), and how an
object becomes a ``PartialObjectMetadata``. A list asked for as a single PartialObjectMetadata,
or one object as a list, is 406 NotAcceptable, as on the real server.
"""

from __future__ import annotations

from typing import Any, Literal

from slicectl.sim import errors

Representation = Literal["object", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"]
META_API_VERSION = "meta.k8s.io/v1"
_TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")


def representation(accept: str) -> Representation:
    """The representation the first servable clause of ``accept`` asks for."""
    for clause in accept.split(","):
        media, _, param_text = clause.partition(";")
        media = media.strip().lower()
        if media not in ("application/json", "application/*", "*/*", "application/yaml"):
            continue
        params = {}
        for param in param_text.split(";"):
            key, _, value = param.partition("=")
            params[key.strip()] = value.strip()
        kind = params.get("as", "")
        if not kind:
            return "object"
        if (kind in _TRANSFORMS and params.get("g") == "meta.k8s.io"
                and params.get("v") in ("v1", "v1beta1")):
            return kind  # type: ignore[return-value]
    return "object"


def streaming_list(accept: str) -> Representation:
    """The representation of a streaming list (``sendInitialEvents`` with bookmarks), which is
    never a Table (``watchListEndpointRestrictions``): the first other servable clause; 406
    when the Accept header asks for a Table only."""
    others = [clause for clause in accept.split(",") if representation(clause) != "Table"]
    if not others:
        raise errors.ApiError(406, "NotAcceptable", "only the following media types are "
                              "accepted: application/json, application/yaml, "
                              "application/vnd.kubernetes.protobuf")
    return representation(",".join(others))


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
