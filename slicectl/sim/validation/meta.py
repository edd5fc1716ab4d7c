"""``ValidateObjectMeta`` and ``ValidateObjectMetaAccessorUpdate``: the metadata rules every
stored object obeys.

Why: names, namespaces, labels and annotations are checked the same way for every kind; only
the name rule varies (DNS subdomain for most kinds, DNS label for namespaces), so the caller
passes it in, as ``ValidateObjectMeta(meta, requiresNamespace, nameFn, path)`` does upstream.
On update the uid and the deletion fields are immutable and a deleting object gains no
finalizers, whatever the kind (:func:`validate_object_meta_update`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.gotime import go_string
from slicectl.sim.validation.names import (
    dns1123_label_errors,
    go_len,
    go_lower,
    label_value_errors,
    mask_trailing_dash,
    qualified_name_errors,
)

NameCheck = Callable[[str], list[str]]
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
IMMUTABLE = "field is immutable"


def validate_object_meta(
    meta: Any, namespaced: bool, name_check: NameCheck, path: str = "metadata",
    kube_finalizers: bool = False,
) -> list[e.Cause]:
    """``ValidateObjectMeta``; ``kube_finalizers``: the kinds whose validation wraps it in
    Kubernetes' own (EndpointSlice, Pod, Namespace, Node, events.k8s.io Event; not Lease,
    core Event, CRD or a custom resource, as a v1.32.6 server answered), which also wants each
    finalizer without a ``/`` to be a standard one."""
    if not isinstance(meta, dict):
        return [e.required(path)]
    causes: list[e.Cause] = []
    name = meta.get("name") or ""
    generate = meta.get("generateName") or ""
    if generate:
        causes.extend(e.invalid(f"{path}.generateName", generate, m)
                      for m in name_check(mask_trailing_dash(str(generate))))
    if not name:
        if not generate:
            causes.append(e.required(f"{path}.name", "name or generateName is required"))
    else:
        causes.extend(e.invalid(f"{path}.name", name, m) for m in name_check(str(name)))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(e.required(f"{path}.namespace"))
        else:
            causes.extend(e.invalid(f"{path}.namespace", namespace, m)
                          for m in dns1123_label_errors(str(namespace)))
    elif namespace:
        causes.append(e.forbidden(f"{path}.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(e.invalid(f"{path}.generation", generation,
                                "must be greater than or equal to 0"))
    causes.extend(validate_labels(meta.get("labels"), f"{path}.labels"))
    causes.extend(validate_annotations(meta.get("annotations"), f"{path}.annotations"))
    causes.extend(_owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences"))
    causes.extend(_finalizers(meta.get("finalizers"), f"{path}.finalizers"))
    if kube_finalizers:
        causes.extend(_kube_finalizer_names(meta.get("finalizers"), f"{path}.finalizers"))
    return causes


_STANDARD_FINALIZERS = frozenset(("kubernetes", "orphan", "foregroundDeletion"))


def _kube_finalizer_names(finalizers: Any, path: str) -> list[e.Cause]:
    """``validateKubeFinalizerName`` of each finalizer, at its index: a name without a ``/``
    must be a standard finalizer (its qualified-name errors are ValidateFinalizers')."""
    if not isinstance(finalizers, list):
        return []
    return [e.invalid(f"{path}[{i}]", str(name), "name is neither a standard finalizer name "
                      "nor is it fully qualified")
            for i, name in enumerate(finalizers)
            if "/" not in str(name) and str(name) not in _STANDARD_FINALIZERS]


def validate_labels(labels: Any, path: str) -> list[e.Cause]:
    """``ValidateLabels``: qualified-name keys and label values."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [e.invalid(path, labels, "must be a map of string keys and values")]
    causes: list[e.Cause] = []
    for key, value in labels.items():
        causes.extend(e.invalid(path, key, m) for m in qualified_name_errors(str(key)))
        if not isinstance(value, str):
            causes.append(e.invalid(path, value, "must be a string"))
        else:
            causes.extend(e.invalid(path, value, m) for m in label_value_errors(value))
    return causes


def validate_annotations(annotations: Any, path: str) -> list[e.Cause]:
    """``ValidateAnnotations``: lower-cased qualified-name keys, total size at most 256 KiB."""
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [e.invalid(path, annotations, "must be a map of string keys and values")]
    causes: list[e.Cause] = []
    total = 0
    for key, value in annotations.items():
        causes.extend(e.invalid(path, key, m) for m in qualified_name_errors(go_lower(str(key))))
        total += go_len(str(key)) + go_len(value if isinstance(value, str) else json.dumps(value))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(e.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def _go_owner_references(refs: list[Any]) -> str:
    """``%#v`` of a ``[]v1.OwnerReference`` (the pointers' addresses are made up)."""
    def one(ref: dict[str, Any]) -> str:
        flags = ", ".join(
            f"{go}:(*bool)(nil)" if ref.get(key) is None else f"{go}:(*bool)(0xc000010000)"
            for key, go in (("controller", "Controller"),
                            ("blockOwnerDeletion", "BlockOwnerDeletion")))
        return ("v1.OwnerReference{" + ", ".join(
            f"{go}:{json.dumps(str(ref.get(key) or ''))}" for key, go in (
                ("apiVersion", "APIVersion"), ("kind", "Kind"), ("name", "Name"),
                ("uid", "UID"))) + ", " + flags + "}")
    return "[]v1.OwnerReference{" + ", ".join(
        one(r) if isinstance(r, dict) else one({}) for r in refs) + "}"


def _owner_references(refs: Any, path: str) -> list[e.Cause]:
    """``ValidateOwnerReferences``: every reference's errors name the list, not its index."""
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [e.invalid(path, refs, "must be a list")]
    causes: list[e.Cause] = []
    controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(e.invalid(path, ref, "must be an object"))
            continue
        api_version = str(ref.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        if api_version.count("/") > 1 or not version:
            group, version = "", ""
        kind = str(ref.get("kind") or "")
        if not version:
            causes.append(e.invalid(f"{path}.apiVersion", api_version,
                                    "version must not be empty"))
        if not kind:
            causes.append(e.invalid(f"{path}.kind", kind, "kind must not be empty"))
        for key in ("name", "uid"):
            if not ref.get(key):
                causes.append(e.invalid(f"{path}.{key}", str(ref.get(key) or ""),
                                        f"{key} must not be empty"))
        if (group, version, kind) == ("", "v1", "Event"):
            causes.append({"reason": "FieldValueInvalid", "message":
                           f"Invalid value: {_go_owner_references([ref])[20:-1]}: "
                           "/v1, Kind=Event is disallowed from being an owner", "field": path})
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name') or ''}"
            if controller:
                causes.append({"reason": "FieldValueInvalid", "message": (
                    f"Invalid value: {_go_owner_references(refs)}: Only one reference can "
                    f"have Controller set to true. Found \"true\" in references for "
                    f"{controller} and {current}"), "field": path})
            else:
                controller = current
    return causes


def _finalizers(finalizers: Any, path: str) -> list[e.Cause]:
    """``ValidateFinalizers``: qualified names; orphan and foregroundDeletion exclude each
    other."""
    if not isinstance(finalizers, list):
        return []
    causes = [e.invalid(path, name, m) for name in finalizers
              for m in qualified_name_errors(str(name))]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append({"reason": "FieldValueInvalid", "message":
                       f"Invalid value: {e.go_strings(finalizers)}: "
                       "finalizer orphan and foregroundDeletion cannot be both set",
                       "field": path})
    return causes


def validate_object_meta_update(meta: Any, old_meta: Any, path: str = "metadata") -> list[e.Cause]:
    """What ``ValidateObjectMetaAccessorUpdate`` still finds after ``rest.BeforeUpdate`` (see
    :func:`slicectl.sim.objects.prepare_update`): new finalizers on a deleting object, and a
    changed uid, deletionTimestamp or deletionGracePeriodSeconds. (A changed name or namespace
    is checkName's 400 first; creationTimestamp and generation are the stored ones.)"""
    if not isinstance(meta, dict) or not isinstance(old_meta, dict):
        return []
    causes: list[e.Cause] = []
    if old_meta.get("deletionTimestamp"):
        before = {str(f) for f in old_meta.get("finalizers") or []}
        found = meta.get("finalizers")
        extra = sorted({str(f) for f in found if str(f) not in before}
                       if isinstance(found, list) else ())
        if extra:
            causes.append(e.forbidden(f"{path}.finalizers", "no new finalizers can be added if "
                                      f"the object is being deleted, found new finalizers "
                                      f"{e.go_strings(extra)}"))
    uid = meta.get("uid") or ""
    if uid != (old_meta.get("uid") or ""):
        causes.append(e.invalid(f"{path}.uid", uid, IMMUTABLE))
    stamp = meta.get("deletionTimestamp")
    if _go_time(stamp) != _go_time(old_meta.get("deletionTimestamp")):  # the same instant
        causes.append({"reason": "FieldValueInvalid", "field": f"{path}.deletionTimestamp",
                       "message": f"Invalid value: {_go_time(stamp)}: {IMMUTABLE}"})
    grace = meta.get("deletionGracePeriodSeconds")
    if grace != old_meta.get("deletionGracePeriodSeconds"):
        causes.append(e.invalid(f"{path}.deletionGracePeriodSeconds", grace, IMMUTABLE))
    return causes


def _go_time(stamp: Any) -> str:
    """A ``*metav1.Time`` as a field error prints it (:func:`gotime.go_string`); "null" when
    unset."""
    if stamp is None:
        return '"null"'
    return go_string(str(stamp)) or str(stamp)
