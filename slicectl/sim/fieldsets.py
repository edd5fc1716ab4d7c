"""Field selectors as kube-apiserver parses, converts and evaluates ``fieldSelector``.

Why its own code (not the controller's): see :mod:`slicectl.sim.selectors`. Written from
``k8s.io/apimachinery/pkg/fields/selector.go`` and the registries:

- parsing: terms split on unescaped ``,``; each term split at the first ``!=``, ``==`` or
  ``=`` (no trimming: ``a = b`` selects the field ``"a "``); values unescaped (``\\,``, ``\\=``,
  ``\\\\``); errors ``invalid selector: '<all>'; can't understand '<term>'``,
  ``invalid field selector: invalid escape sequence: \\x``;
- which field labels a type accepts (its ``AddFieldLabelConversionFunc``): an unknown one is
  ``field label not supported: <label>`` for types with their own conversion (pods, nodes,
  namespaces, services, events, custom resources) and ``"<label>" is not a known field
  selector: only "metadata.name", "metadata.namespace"`` for the others (EndpointSlices,
  Leases, CRDs), whose conversion is ``runtime.DefaultMetaV1FieldSelectorConversion``;
- what each field's value is (the registry's ``ToSelectableFields``): a field missing from the
  set reads as ``""``; pods' ``status.podIP`` is ``status.podIPs[0].ip``; booleans are
  ``true``/``false``; ``spec.host`` on pods is the old name of ``spec.nodeName``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slicectl.sim.types import ResourceType

Obj = dict[str, Any]
FieldSet = dict[str, str]


class FieldSelectorError(ValueError):
    """A ``fieldSelector`` the real server refuses; ``str()`` is its exact message."""


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _meta(obj: Obj, namespaced: bool) -> FieldSet:
    meta = obj.get("metadata") or {}
    found = {"metadata.name": _text(meta.get("name"))}
    if namespaced:
        found["metadata.namespace"] = _text(meta.get("namespace"))
    return found


def _pod(obj: Obj) -> FieldSet:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ips = status.get("podIPs") or []
    first = ips[0].get("ip") if ips and isinstance(ips[0], dict) else ""
    return {**_meta(obj, True),
            "spec.nodeName": _text(spec.get("nodeName")),
            "spec.restartPolicy": _text(spec.get("restartPolicy")),
            "spec.schedulerName": _text(spec.get("schedulerName")),
            "spec.serviceAccountName": _text(spec.get("serviceAccountName")),
            "spec.hostNetwork": _text(bool(spec.get("hostNetwork"))),
            "status.phase": _text(status.get("phase")),
            "status.podIP": _text(first),
            "status.nominatedNodeName": _text(status.get("nominatedNodeName"))}


def _event(obj: Obj) -> FieldSet:
    """A stored (core/v1) Event's fields, whichever group serves it."""
    fields = {f"involvedObject.{k}": _text(_get(obj, f"involvedObject.{k}")) for k in (
        "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")}
    reporting = obj.get("reportingComponent")
    fields.update({"reason": _text(obj.get("reason")), "reportingComponent": _text(reporting),
                   "source": _text(_get(obj, "source.component") or reporting),
                   "type": _text(obj.get("type"))})
    return {**fields, **_meta(obj, True)}


_EVENT_LABELS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion",
                 "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                 "reportingComponent", "source", "type", "metadata.namespace", "metadata.name")
_EVENTS_V1_LABELS = {"reason": "reason", "reportingController": "reportingComponent",
                     "type": "type", "metadata.namespace": "metadata.namespace",
                     "metadata.name": "metadata.name",
                     **{f"regarding.{k}": f"involvedObject.{k}" for k in (
                         "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                         "fieldPath")}}

_POD_LABELS = {label: label for label in (
    "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
    "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
    "status.podIP", "status.podIPs", "status.nominatedNodeName")} | {"spec.host": "spec.nodeName"}


@dataclass(frozen=True)
class TypeFields:
    """One type's field selector support: label -> internal label, and its field set."""

    labels: dict[str, str] | None  # None: DefaultMetaV1FieldSelectorConversion
    fields: Callable[[Obj], FieldSet]


def _same(*labels: str) -> dict[str, str]:
    return {label: label for label in labels}


_BUILTIN: dict[tuple[str, str], TypeFields] = {
    ("", "pods"): TypeFields(_POD_LABELS, _pod),
    ("", "nodes"): TypeFields(_same("metadata.name", "spec.unschedulable"), lambda o: {
        **_meta(o, False), "spec.unschedulable": _text(bool(_get(o, "spec.unschedulable")))}),
    ("", "namespaces"): TypeFields(_same("status.phase", "metadata.name"), lambda o: {
        **_meta(o, False), "status.phase": _text(_get(o, "status.phase")),
        "name": _text(_get(o, "metadata.name"))}),
    ("", "services"): TypeFields(
        _same("metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"),
        lambda o: {**_meta(o, True), "spec.clusterIP": _text(_get(o, "spec.clusterIP")),
                   "spec.type": _text(_get(o, "spec.type"))}),
    ("", "events"): TypeFields(_same(*_EVENT_LABELS), _event),
    # stored as core/v1 Events (slicectl.sim.eventconv): only the labels differ
    ("events.k8s.io", "events"): TypeFields(_EVENTS_V1_LABELS, _event),
}


def type_fields(rt: ResourceType) -> TypeFields:
    builtin = _BUILTIN.get((rt.group, rt.plural))
    if builtin is not None:
        return builtin
    if rt.is_custom:
        labels = _same("metadata.name", *(("metadata.namespace",) if rt.namespaced else ()),
                       *rt.extra.get("selectable_fields", ()))
        return TypeFields(labels, lambda o: {
            **_meta(o, rt.namespaced),
            **{label: _text(_get(o, label)) for label in rt.extra.get("selectable_fields", ())}})
    return TypeFields(None, lambda o: _meta(o, rt.namespaced))


def _split_terms(text: str) -> list[str]:
    terms, start, in_slash = [], 0, False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def _unescape(value: str) -> str:
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise FieldSelectorError(
                    f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise FieldSelectorError(
                f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()  # (internal label, equal?, value)
    fields: Callable[[Obj], FieldSet] | None = None

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, obj: Obj) -> bool:
        if not self.terms or self.fields is None:
            return True
        found = self.fields(obj)
        return all((found.get(label, "") == value) == equal
                   for label, equal, value in self.terms)


def parse_field_terms(text: str) -> list[tuple[str, bool, str]]:
    """``fields.ParseSelector``: the (label, equal?, value) terms, labels not yet checked
    against a type (the parameter codec does this much); raises :class:`FieldSelectorError`."""
    parsed: list[tuple[str, bool, str]] = []
    for term in sorted(_split_terms(text)) if text else ():
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        label, op, raw = split
        parsed.append((label, op != "!=", _unescape(raw)))
    return parsed


def parse_field_selector(rt: ResourceType, text: str) -> FieldSelector:
    """Parse, then convert every label for ``rt``; raises :class:`FieldSelectorError`."""
    parsed = parse_field_terms(text)
    spec = type_fields(rt)
    terms: list[tuple[str, bool, str]] = []
    for label, equal, value in parsed:
        if spec.labels is None:
            if label not in ("metadata.name", "metadata.namespace"):
                raise FieldSelectorError(f'"{label}" is not a known field selector: only '
                                         '"metadata.name", "metadata.namespace"')
            terms.append((label, equal, value))
        elif label in spec.labels:
            terms.append((spec.labels[label], equal, value))
        else:
            raise FieldSelectorError(f"field label not supported: {label}")
    return FieldSelector(tuple(terms), spec.fields)
