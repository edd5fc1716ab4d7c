"""``ValidatePodUpdate``: what of a pod's spec may change after it was created.

Why: a real server refuses almost every pod spec change (a controller or fixture that relies on
changing, say, ``nodeName`` or a container port in place passes against a lenient server and
fails on a cluster). Written from ``pkg/apis/core/validation/validation.go``: containers may
not be added or removed; container and init container images may change (non-empty, no
surrounding whitespace); ``activeDeadlineSeconds`` may be set, or lowered, never raised or
unset; tolerations may only be added (existing ones may change only their
``tolerationSeconds``); scheduling gates may only be removed; a negative
``terminationGracePeriodSeconds`` may become 1. Any other difference is ``spec: Forbidden: pod
updates may not change fields other than ...`` followed by a diff of the two specs.
"""

from __future__ import annotations

import json
from typing import Any

from slicectl.sim.validation import errors as e

UPDATABLE = ",".join((
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
    "negative)",
))
MAX_INT32 = 2**31 - 1


def _containers(new: list[Any], old: list[Any], path: str) -> tuple[list[e.Cause], bool]:
    if len(new) != len(old):
        return [e.forbidden(path, "pod updates may not add or remove containers")], True
    causes: list[e.Cause] = []
    for i, container in enumerate(new):
        image = container.get("image") if isinstance(container, dict) else None
        if not image:
            causes.append(e.required(f"{path}[{i}].image"))
        elif isinstance(image, str) and image.strip() != image:
            causes.append(e.invalid(f"{path}[{i}].image", image,
                                    "must not have leading or trailing whitespace"))
    return causes, False


def _deadline(new: Any, old: Any) -> list[e.Cause]:
    path = "spec.activeDeadlineSeconds"
    if new is not None:
        if not isinstance(new, int) or new < 0 or new > MAX_INT32:
            return [e.invalid(path, new, f"must be between 0 and {MAX_INT32}, inclusive")]
        if old is not None and old < new:
            return [e.invalid(path, new, "must be less than or equal to previous value")]
    elif old is not None:
        return [e.invalid(path, None, "must not update from a positive integer to nil value")]
    return []


def _tolerations(new: list[Any], old: list[Any]) -> list[e.Cause]:
    for was in old:
        base = {k: v for k, v in (was or {}).items() if k != "tolerationSeconds"}
        if not any(isinstance(t, dict) and {k: v for k, v in t.items()
                                            if k != "tolerationSeconds"} == base for t in new):
            return [e.forbidden("spec.tolerations",
                                "existing toleration can not be modified except its "
                                "tolerationSeconds")]
    return []


def _gates(new: list[Any], old: list[Any]) -> list[e.Cause]:
    had = {g.get("name") for g in old if isinstance(g, dict)}
    return [e.forbidden(f"spec.schedulingGates[{i}].name",
                        f"only deletion is allowed, but found new scheduling gate "
                        f"'{g.get('name')}'")
            for i, g in enumerate(new) if isinstance(g, dict) and g.get("name") not in had]


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A readable stand-in for the ``cmp.Diff`` the real message carries."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            if key in old:
                lines.append(f"-\t{key}: {json.dumps(old[key], sort_keys=True)},")
            if key in new:
                lines.append(f"+\t{key}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def validate_pod_update(new_pod: dict[str, Any], old_pod: dict[str, Any]) -> list[e.Cause]:
    new = new_pod.get("spec") if isinstance(new_pod.get("spec"), dict) else {}
    old = old_pod.get("spec") if isinstance(old_pod.get("spec"), dict) else {}
    assert isinstance(new, dict) and isinstance(old, dict)
    causes: list[e.Cause] = []
    for field in ("containers", "initContainers"):
        found, stop = _containers(new.get(field) or [], old.get(field) or [], f"spec.{field}")
        causes.extend(found)
        if stop:
            return causes
    deadline = _deadline(new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds"))
    if deadline and new.get("activeDeadlineSeconds") is not None:
        return causes + deadline  # out of range or raised: the real check stops here
    causes.extend(deadline)
    causes.extend(_tolerations(new.get("tolerations") or [], old.get("tolerations") or []))
    causes.extend(_gates(new.get("schedulingGates") or [], old.get("schedulingGates") or []))
    if new == old:
        return causes
    munged = dict(new)
    for field in ("containers", "initContainers"):
        if field in new:
            munged[field] = [{**c, "image": o.get("image")} if isinstance(c, dict) and isinstance(
                o, dict) else c for c, o in zip(new[field], old.get(field) or [], strict=False)]
    for field in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(field, None)
        if field in old:
            munged[field] = old[field]
    old_grace = old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != old:
        causes.append(e.forbidden("spec", "pod updates may not change fields other than "
                                  f"{UPDATABLE}\n{_diff(old, munged)}"))
    return causes
