"""A write's body: read, decoded and type-checked, its unknown fields handled.

Decides what a real server's decoder answers before a create, update or patch reaches the
registry: the body at most 3 MiB (413 beyond, as ``MaxRequestBodyBytes``); JSON, YAML or the
protobuf kubectl's typed clients send (:mod:`slicectl.sim.protobuf`), other media 415; a
custom resource needs its ``kind`` and a string ``apiVersion``; apiVersion and kind match the
URL's; a value of the wrong JSON type is a 400 (:func:`decode_error`); unknown and repeated
fields are refused (``fieldValidation`` Strict: 400, or patch.go's 422 for a patched object),
reported in Warning headers (Warn), and pruned unless Strict.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import yaml
from aiohttp import web

from slicectl.sim import errors, gojson, options, protobuf
from slicectl.sim.protobuf import ProtobufError, is_protobuf
from slicectl.sim.storage import Obj
from slicectl.sim.types import ResourceType
from slicectl.sim.validation import (
    decode_error,
    decode_repeated,
    prune_unknown,
    strict_decoding_detail,
    strict_decoding_error,
    strict_errors,
)

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes


async def read_body(request: web.Request) -> bytes:
    """The request body; past :data:`MAX_REQUEST_BODY_BYTES` (the application's
    ``client_max_size``) the 413 ``limitedReadBody`` answers."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise errors.request_entity_too_large(f"limit is {MAX_REQUEST_BODY_BYTES}") from exc


async def decode_body(request: web.Request, rt: ResourceType, options_kind: str) -> Obj:
    """A create's or update's body as the object it decodes to (every 400 and 415 the
    decoder answers raised), unknown fields handled (:func:`unknown_fields`)."""
    raw = await read_body(request)
    options.validate_write(options_kind, request.query)
    media = request.content_type
    try:
        if is_protobuf(media):
            body = protobuf.decode(raw)
        elif "json" in media or "yaml" in media:
            body = yaml.safe_load(raw) if "yaml" in media else gojson.loads(raw)
        else:
            raise errors.unsupported_media_type(media)
    except ProtobufError as exc:
        raise errors.unsupported_media_type(f"{media}: {exc}") from exc
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise errors.bad_request(
            f"couldn't get version/kind; json parse error: {exc}") from exc
    met = replaced = None
    tree = gojson.repeated(raw) if "json" in media and not is_protobuf(media) else None
    if tree is not None and isinstance(body, dict):
        body, met, replaced = decode_repeated(rt, tree)
    if not isinstance(body, dict):
        raise errors.bad_request("couldn't get version/kind; json parse error: "
                                 "expected an object")
    kind = body.get("kind")
    if rt.is_custom and "apiVersion" in body and not isinstance(body["apiVersion"], str):
        raise errors.api_version_not_a_string(rt, body["apiVersion"])
    if rt.is_custom and not (kind and isinstance(kind, str)):  # Unstructured needs it
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"Object 'Kind' is missing in '{raw.decode(errors='replace')}'")
    check_kind(rt, body)
    undecodable = replaced or decode_error(rt, body)  # before every other check
    if undecodable:
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"{undecodable}")
    unknown_fields(request, rt, body, met=met)
    return body


def check_kind(rt: ResourceType, body: Obj) -> None:
    """The body's apiVersion and kind against the URL's: a 400 when they differ."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if rt.is_custom and not api_version:  # a built-in's default is the URL's; not a CR's
        raise errors.bad_request("the API version in the data () does not match the "
                                 f"expected API version ({rt.group_version})")
    if (api_version and api_version != rt.group_version
            and not (rt.is_custom and str(api_version).startswith(rt.group + "/"))):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the "
            f"expected API version ({rt.group_version})")
    if kind and kind != rt.kind:
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")


def unknown_fields(request: web.Request, rt: ResourceType, obj: Obj,
                   via: str = "body", met: Sequence[str] | None = None) -> None:
    """As the decoder does: Strict refuses unknown fields and those the request document
    repeats (``met``: see :func:`strict_errors`), a body with a 400, a patched object with
    patch.go's 422; Warn reports each in a Warning (sent with any answer, an error too);
    unknown fields are pruned unless Strict. It sees the whole object, before a status
    write throws its other parts away."""
    mode = options.field_validation(request.query)
    found = strict_errors(rt, prune_unknown(rt, obj, mode == "Strict"), met, via)
    if found and mode == "Strict" and via != "body":
        raise errors.patch_undecodable(obj, strict_decoding_detail(found))
    if found and mode == "Strict":
        raise errors.bad_request(strict_decoding_error(rt, found))
    if mode == "Warn":
        for text in found:
            errors.add_warning(request, text)
