"""Validation, defaulting and pruning of the objects the embedded API server stores.

Why: one entry point per concern, dispatched on the :class:`ResourceType`, so the server core
never needs to know which kind has which rule:

- :func:`decode_error` is the JSON decoder's complaint about a built-in object whose values
  have the wrong types (a 400, before anything else looks at it);
- :func:`validate` returns Status causes (``reason``/``message``/``field``) phrased like
  kube-apiserver's; empty when the object is valid (``old`` is the stored object on update);
- :func:`apply_defaults` applies the defaults a real server applies before validation
  (structural ``default`` of custom resources at every level; the usual built-in defaults);
- :func:`prune_unknown` finds fields the schema does not declare (paths like ``spec.foo`` or
  ``spec.ports[0].bar``). With ``strict=False`` they are removed, as a real server's decoder
  drops them; with ``strict=True`` the object is left alone and the caller rejects the request
  (:func:`strict_errors` words them; fieldValidation=Strict refuses the write with
  :func:`strict_decoding_error`, Warn sends each as a warning);
- :func:`decode_repeated` decodes a body that names a key twice as a real server does;
- :func:`stored_form` makes an admitted object what storage gives back, as Go's JSON round
  trip makes it: empty or null ``metadata`` labels, annotations, finalizers, ownerReferences
  and generateName dropped (omitempty) for every kind; a custom resource's integral floats
  become integers; an EndpointSlice's ``endpoints``/``ports`` null when absent, each
  endpoint's ``conditions`` present (``{}`` when none were sent) and its null or empty
  omitempty fields dropped; :func:`stored_lists` then, after managedFields are recorded,
  makes empty lists null (an EndpointSlice's ``endpoints: []`` is read back as null).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slicectl.sim.gojson import plain
from slicectl.sim.types import ResourceType
from slicectl.sim.validation import kinds
from slicectl.sim.validation.builtin import builtin_schemas
from slicectl.sim.validation.crd import validate_crd
from slicectl.sim.validation.decode import decode_error as _decode_error
from slicectl.sim.validation.duplicates import MAX_ERRORS, typed, untyped
from slicectl.sim.validation.endpointslice import validate_endpointslice
from slicectl.sim.validation.errors import Cause, go_quote
from slicectl.sim.validation.govalues import stored_numbers
from slicectl.sim.validation.meta import validate_object_meta, validate_object_meta_update
from slicectl.sim.validation.names import dns1123_label_errors, dns1123_subdomain_errors
from slicectl.sim.validation.pod_update import validate_pod_update
from slicectl.sim.validation.prune import Compiler, Node, prune
from slicectl.sim.validation.schema import apply_schema_defaults, validate_value

__all__ = ["Cause", "apply_defaults", "decode_error", "decode_repeated", "prune_unknown",
           "stored_form", "stored_lists", "strict_decoding_detail", "strict_decoding_error",
           "strict_errors", "validate"]

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# ObjectMeta's omitempty fields a client sets: empty or null ones are not stored (nor read
# back), for every kind (a custom resource's metadata too: it is coerced through ObjectMeta).
_OMITEMPTY_META = ("labels", "annotations", "finalizers", "ownerReferences", "generateName")
_KUBE_FINALIZER_KINDS = frozenset((("", "Pod"), ("", "Namespace"), ("", "Node"),
                                   ("events.k8s.io", "Event")))


def validate(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None,
             subresource: str = "") -> list[Cause]:
    """Status causes for ``obj`` (empty when valid); ``old`` is the stored object on update.
    A custom resource's ``status`` subresource write has only its ``.status`` checked against
    the schema (rooted there: ``endpoints in body`` for ``status.endpoints``). On update the
    metadata rules of every kind come first (``BeforeUpdate`` checks them before the
    strategy's own)."""
    causes = [] if old is None else validate_object_meta_update(obj.get("metadata"),
                                                                 old.get("metadata"))
    return causes + _validate_kind(rt, obj, old, subresource)


def _validate_kind(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None,
                   subresource: str) -> list[Cause]:
    key = (rt.group, rt.kind)
    if key == ("discovery.k8s.io", "EndpointSlice"):
        return validate_endpointslice(obj, old)
    if key == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        return validate_crd(obj, old)
    name_rule = dns1123_label_errors if key == ("", "Namespace") else dns1123_subdomain_errors
    causes = validate_object_meta(obj.get("metadata"), rt.namespaced, name_rule,
                                  kube_finalizers=key in _KUBE_FINALIZER_KINDS)
    if rt.is_custom:
        schema = {k: v for k, v in (rt.schema or {}).items() if k != "properties"}
        props = {k: v for k, v in ((rt.schema or {}).get("properties") or {}).items()
                 if k not in ("metadata", "apiVersion", "kind")}
        schema["properties"] = props
        only = "status" if subresource == "status" else ""
        causes.extend(validate_value(obj, schema, "", old, old is not None, causes, only))
    elif key == ("", "Pod"):
        causes.extend(kinds.validate_pod(obj))
        if old is not None:
            causes.extend(validate_pod_update(obj, old))
        if subresource == "status":
            causes.extend(kinds.validate_pod_ips(obj))
    elif key == ("coordination.k8s.io", "Lease"):
        causes.extend(kinds.validate_lease(obj))
    elif key == ("", "Event"):
        causes.extend(kinds.validate_core_event(obj))
    elif key == ("events.k8s.io", "Event"):
        causes.extend(kinds.validate_events_v1(obj, old))
    return causes


def decode_repeated(rt: ResourceType, tree: Any) -> tuple[Any, list[str], str | None]:
    """A body that names a key twice (a :func:`slicectl.sim.gojson.repeated` tree): the value a
    real server decodes from it, the errors its strict decoder meets (a built-in's unknown
    fields among them, in document order; :mod:`.duplicates`), and the decode error of a
    replaced value of the wrong type (None: decode the value as usual)."""
    root = None if rt.is_custom else _prune_root(rt)
    if root is None:
        return plain(tree), untyped(tree), None
    return typed(tree, root)


def strict_errors(rt: ResourceType, unknown: list[str], met: Sequence[str] | None = None,
                  via: str = "body") -> list[str]:
    """The strict decoding errors of a write, one text each (``unknown field "spec.foo"``).

    ``unknown`` are :func:`prune_unknown`'s paths of the decoded object; ``met`` the errors the
    decoder met in the request document itself: a body's repeated keys (:func:`decode_repeated`,
    which for a built-in body already holds its unknown fields, in order) or a patch document's.
    ``via`` is how the object came: ``body``; ``patch`` (JSON or merge patch: the patched JSON
    is decoded); ``strategic`` (the patched map is converted). They word the unknown fields
    differently: the JSON decoder quotes each path as Go's ``%q`` does, in document order, at
    most 100; the unstructured converter (a strategic merge patch) and the custom-resource
    pruner print it between plain quotes, sorted, all of them."""
    if met is not None and not rt.is_custom and via == "body":
        return list(met)
    if rt.is_custom or via == "strategic":
        texts = sorted(f'unknown field "{path}"' for path in unknown)
    else:
        texts = [f"unknown field {go_quote(path)}" for path in unknown[:MAX_ERRORS]]
    return [*(met or ()), *texts]


def strict_decoding_error(rt: ResourceType, texts: list[str]) -> str:
    """The 400 of a fieldValidation=Strict body with :func:`strict_errors`."""
    return (f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            + strict_decoding_detail(texts))


def strict_decoding_detail(texts: list[str]) -> str:
    """``NewStrictDecodingError``'s text (what a patch's 422 carries)."""
    return "strict decoding error: " + ", ".join(texts)


def decode_error(rt: ResourceType, obj: dict[str, Any]) -> str | None:
    """Why a real server could not decode ``obj`` into its Go type (None: it can). Built-in
    kinds only; a custom resource is judged by its schema's validation instead."""
    root = None if rt.is_custom else _prune_root(rt)
    return None if root is None else _decode_error(obj, root)


def stored_form(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Make an admitted object what storage gives back, in place (see module doc)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in _OMITEMPTY_META:
            if key in meta and meta[key] in (None, "", {}, []):
                del meta[key]
    if rt.is_custom:
        stored_numbers(obj)
    elif (rt.group, rt.kind) == ("discovery.k8s.io", "EndpointSlice"):
        kinds.endpointslice_stored_shape(obj)


def stored_lists(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The last step of :func:`stored_form`, taken after managedFields are recorded (a real
    server's field manager sees the decoded request, storage the round trip): an
    EndpointSlice's empty ``endpoints``/``ports`` become null."""
    if (rt.group, rt.kind) == ("discovery.k8s.io", "EndpointSlice"):
        kinds.endpointslice_empty_lists(obj)


def apply_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Apply the defaults a real server applies on create/update, in place."""
    if rt.is_custom:
        apply_schema_defaults(obj, rt.schema or {})
    elif (rt.group, rt.kind) == ("", "Pod"):
        kinds.default_pod(obj)
    elif (rt.group, rt.kind) == ("discovery.k8s.io", "EndpointSlice"):
        kinds.default_endpointslice(obj)


def prune_unknown(rt: ResourceType, obj: dict[str, Any], strict: bool) -> list[str]:
    """Paths of undeclared fields of ``obj``; removed unless ``strict`` (see module doc)."""
    root = _prune_root(rt)
    return [] if root is None else prune(obj, root, remove=not strict)


_BUILTIN_COMPILER = Compiler()
# Custom resource schema (by identity) -> its compiled root; the schema is kept alive with it.
_CUSTOM_ROOTS: dict[int, tuple[dict[str, Any], Node]] = {}


def _prune_root(rt: ResourceType) -> Node | None:
    if not rt.is_custom:
        schema = builtin_schemas().get(rt.definition or "")
        return _BUILTIN_COMPILER.node(schema) if schema else None
    raw = rt.schema or {}
    cached = _CUSTOM_ROOTS.get(id(raw))
    if cached is not None and cached[0] is raw:
        return cached[1]
    schema = dict(raw)
    props = dict(schema.get("properties") or {})
    props["metadata"] = {"$ref": "#/components/schemas/" + _OBJECT_META}
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    schema["properties"] = props
    root = Compiler().node(schema)
    if len(_CUSTOM_ROOTS) >= 256:
        _CUSTOM_ROOTS.clear()
    _CUSTOM_ROOTS[id(raw)] = (raw, root)
    return root
