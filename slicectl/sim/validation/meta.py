"""``ValidateObjectMeta``: the metadata rules every stored object obeys.

Why: names, namespaces, labels and annotations are checked the same way for every kind; only
the name rule varies (DNS subdomain for most kinds, DNS label for namespaces), so the caller
passes it in, as ``ValidateObjectMeta(meta, requiresNamespace, nameFn, path)`` does upstream.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from slicectl.model.selector import label_key_error, label_value_error
from slicectl.sim.validation import errors as e
from slicectl.sim.validation.names import (
    LABEL_VALUE_MSG,
    dns1123_label_errors,
    mask_trailing_dash,
    qualified_name_errors,
)

NameCheck = Callable[[str], list[str]]
# The same few label keys and values recur on every write: remember their verdicts.
_label_key_error = functools.lru_cache(maxsize=65536)(label_key_error)
_label_value_error = functools.lru_cache(maxsize=65536)(label_value_error)
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def validate_object_meta(
    meta: Any, namespaced: bool, name_check: NameCheck, path: str = "metadata"
) -> list[e.Cause]:
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
    causes.extend(validate_labels(meta.get("labels"), f"{path}.labels"))
    causes.extend(validate_annotations(meta.get("annotations"), f"{path}.annotations"))
    causes.extend(_owner_references(meta.get("ownerReferences"), f"{path}.ownerReferences"))
    return causes


def validate_labels(labels: Any, path: str) -> list[e.Cause]:
    """``ValidateLabels``: qualified-name keys and label values."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [e.invalid(path, labels, "must be a map of string keys and values")]
    causes: list[e.Cause] = []
    for key, value in labels.items():
        if _label_key_error(str(key)) is not None:
            causes.extend(e.invalid(path, key, m) for m in qualified_name_errors(str(key)))
        if not isinstance(value, str):
            causes.append(e.invalid(path, value, "must be a string"))
        elif _label_value_error(value) is not None:
            if len(value) > 63:
                causes.append(e.invalid(path, value, "must be no more than 63 characters"))
            if _label_value_error(value[:63]) is not None:
                causes.append(e.invalid(path, value, LABEL_VALUE_MSG))
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
        causes.extend(e.invalid(path, key, m) for m in qualified_name_errors(str(key).lower()))
        total += len(str(key).encode()) + len(
            (value if isinstance(value, str) else json.dumps(value)).encode()
        )
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(e.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def _owner_references(refs: Any, path: str) -> list[e.Cause]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [e.invalid(path, refs, "must be a list")]
    causes: list[e.Cause] = []
    controllers = 0
    for i, ref in enumerate(refs):
        item = f"{path}[{i}]"
        if not isinstance(ref, dict):
            causes.append(e.invalid(item, ref, "must be an object"))
            continue
        for key in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(key):
                causes.append(e.invalid(f"{item}.{key}", ref.get(key, ""), f"{key} must not "
                                        "be empty"))
        if ref.get("controller") is True:
            controllers += 1
    if controllers > 1:
        causes.append(e.invalid(path, refs, "Only one reference can have Controller set to "
                                "true"))
    return causes
