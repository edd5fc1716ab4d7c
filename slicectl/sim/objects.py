"""What the registry strategies do to an object on create and update.

Decides the server-owned metadata (name from generateName: the prefix cut to 58 characters
plus 5 from the real suffix alphabet; uid, creationTimestamp, generation), that an update or
patch may not rename the object (400, ``checkName``), what ``rest.BeforeUpdate`` keeps of the
body's metadata (a non-empty uid, a deletionTimestamp or grace period the stored object lacks:
left for validation to refuse, never silently replaced), which part of an object a write may
change (main resource writes keep the old status of types with a status subresource; /status
writes keep everything but status; namespace finalizers change only through /finalize), when
generation is bumped (per :func:`slicectl.sim.resources.generation_policy`; EndpointSlices
compared as ``Semantic.DeepEqual`` does), what the EndpointSlice strategy drops on v1
(``dropTopologyOnV1``), the ownerReferences every write de-duplicates
(``dedupOwnerReferences``), the resourceVersion a create may not carry, and the status a new
pod, service or namespace starts with.
"""

from __future__ import annotations

import copy
import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from slicectl.sim import errors
from slicectl.sim.resources import generation_policy, resets_status_on_create
from slicectl.sim.storage import Obj
from slicectl.sim.types import ResourceType

NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SERVER_META = ("creationTimestamp", "generation", "namespace", "name", "selfLink")
_DELETION_META = ("uid", "deletionTimestamp", "deletionGracePeriodSeconds")
_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid")
_UINT = re.compile(r"[0-9]+")


def now_timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def timestamp_in(seconds: float) -> str:
    """RFC 3339 time ``seconds`` from now (a graceful deletion's deletionTimestamp)."""
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def shift_timestamp(stamp: str, seconds: float) -> str:
    try:
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        when = datetime.now(UTC)
    return (when + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def deep_copy(value: Any) -> Any:
    """A deep copy of a JSON value (orjson's round trip: far faster than copy.deepcopy)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:  # a YAML body's non-string keys or dates: copy them as they are
        return copy.deepcopy(value)


def generated_name(prefix: str) -> str:
    """``SimpleNameGenerator``: the prefix cut to 58 characters, then 5 random characters."""
    return prefix[:58] + "".join(random.choices(NAME_SUFFIX_ALPHABET, k=5))


def check_name(obj: Obj, name: str, namespace: str) -> None:
    """``checkName`` of the update and patch handlers: the body may not rename the object."""
    found = obj.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    obj_name = str(meta.get("name") or "")
    if obj_name != name:
        raise errors.bad_request(f"the name of the object ({obj_name}) does not match the name "
                                 f"on the URL ({name})")
    obj_ns = str(meta.get("namespace") or "")
    if namespace and obj_ns and obj_ns != namespace:
        raise errors.bad_request(f"the namespace of the object ({obj_ns}) does not match the "
                                 f"namespace on the request ({namespace})")


def semantic(value: Any) -> Any:
    """A value as ``equality.Semantic.DeepEqual`` compares it: null, [] and {} are unset."""
    if isinstance(value, dict):
        kept = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def metadata_of(rt: ResourceType, obj: Any) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.bad_request(f"{rt.kind} in version \"{rt.version}\" cannot be handled as a "
                                 f"{rt.kind}: metadata must be an object")
    return meta


def prepare_create(rt: ResourceType, obj: Obj, namespace: str) -> None:
    meta = metadata_of(rt, obj)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generated_name(str(meta["generateName"]))
    if not meta.get("name"):
        raise errors.invalid(rt, "", [{
            "reason": "FieldValueRequired", "field": "metadata.name",
            "message": "Required value: name or generateName is required"}])
    if rt.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                "managedFields"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_timestamp()
    if generation_policy(rt):
        meta["generation"] = 1
    elif not isinstance(meta.get("generation"), int):  # a type that keeps no generation
        meta.pop("generation", None)                    # stores the client's, as Go would
    obj["apiVersion"] = rt.group_version
    obj["kind"] = rt.kind
    drop_topology_on_v1(rt, None, obj)
    _drop_gated_lease_fields(rt, None, obj)
    if resets_status_on_create(rt):
        obj.pop("status", None)
    if rt.group == "" and rt.plural == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj)}
    elif rt.group == "" and rt.plural == "namespaces":
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}


def _qos_class(pod: Obj) -> str:
    containers = (pod.get("spec") or {}).get("containers") or []
    requests_seen = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {} if isinstance(c, dict) else {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        if limits or requests:
            requests_seen = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_update(rt: ResourceType, old: Obj, new: Obj, subresource: str) -> Obj:
    """The object to store for a write of ``new`` over ``old`` (``new`` may be changed)."""
    old_meta = old["metadata"]
    if subresource in ("status", "finalize"):
        result = {**old, "metadata": dict(old_meta)}
        if subresource == "finalize":
            spec = dict(old.get("spec") or {})
            spec["finalizers"] = (new.get("spec") or {}).get("finalizers") or []
            result["spec"] = spec
        elif "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        uid = metadata_of(rt, new).get("uid")
        if uid and not rt.is_custom:
            # the built-in status strategies keep the body's uid (a custom resource's keeps
            # the stored metadata whole): BeforeUpdate leaves a changed one to validation
            result["metadata"]["uid"] = uid
        return result
    meta = metadata_of(rt, new)
    for key in _SERVER_META:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    _before_update(meta, old_meta)
    new["apiVersion"] = rt.group_version
    new["kind"] = rt.kind
    if "status" in rt.subresources:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    if rt.group == "" and rt.plural == "namespaces":
        new["spec"] = old.get("spec") or {}
    _drop_gated_lease_fields(rt, old, new)
    return new


_LEASE_GATED = ("strategy", "preferredHolder")  # CoordinatedLeaderElection, off by default


def _drop_gated_lease_fields(rt: ResourceType, old: Obj | None, new: Obj) -> None:
    """The Lease strategy drops the fields of a gate that is off, unless the stored Lease
    already has them (PrepareForCreate / PrepareForUpdate)."""
    spec = new.get("spec")
    if rt.group != "coordination.k8s.io" or not isinstance(spec, dict):
        return
    old_spec = (old or {}).get("spec")
    for key in _LEASE_GATED:
        if key in spec and not (isinstance(old_spec, dict) and old_spec.get(key) is not None):
            new["spec"] = spec = {k: v for k, v in spec.items() if k != key}


def _before_update(meta: dict[str, Any], old_meta: dict[str, Any]) -> None:
    """``rest.BeforeUpdate``: the stored uid only when the body has none; the stored
    deletionTimestamp when there is one (an update never removes or moves it), the stored
    grace period when the body has none. Anything else the body says of them stays, for
    ``ValidateObjectMetaAccessorUpdate`` to refuse."""
    for key in _DELETION_META:
        if meta.get(key) is None or meta.get(key) == "":
            meta.pop(key, None)
    if not meta.get("uid") and old_meta.get("uid"):
        meta["uid"] = old_meta["uid"]
    if old_meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = old_meta["deletionTimestamp"]
    grace = old_meta.get("deletionGracePeriodSeconds")
    if grace is not None and meta.get("deletionGracePeriodSeconds") is None:
        meta["deletionGracePeriodSeconds"] = grace


def drop_topology_on_v1(rt: ResourceType, old: Obj | None, new: Obj) -> bool:
    """``dropTopologyOnV1``: a v1 EndpointSlice write clears ``endpoints[].deprecatedTopology``,
    on update only when the endpoints changed. True when it cleared any (the endpoints had
    changed, so the strategy, which compares before it drops, moves the generation)."""
    if (rt.group, rt.kind) != ("discovery.k8s.io", "EndpointSlice"):
        return False
    endpoints = new.get("endpoints")
    if not isinstance(endpoints, list) or (
            old is not None and semantic(old.get("endpoints")) == semantic(endpoints)):
        return False
    dropped = False
    for endpoint in endpoints:
        if isinstance(endpoint, dict) and "deprecatedTopology" in endpoint:
            dropped = endpoint.pop("deprecatedTopology") is not None or dropped
    return dropped


def dedup_owner_references(meta: dict[str, Any]) -> list[str]:
    """``dedupOwnerReferences``: drop every ownerReference equal to an earlier one (same uid
    and the same other fields; null and unset alike); the uids of those dropped."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list) or len(refs) < 2:
        return []
    kept: list[Any] = []
    seen: list[tuple[Any, ...]] = []
    duplicates: list[str] = []
    for ref in refs:
        if not isinstance(ref, dict):
            kept.append(ref)  # validation refuses it
            continue
        key = (*(str(ref.get(f) or "") for f in _OWNER_FIELDS), ref.get("controller"),
               ref.get("blockOwnerDeletion"))
        if key in seen:
            duplicates.append(str(ref.get("uid") or ""))
            continue
        seen.append(key)
        kept.append(ref)
    if duplicates:
        meta["ownerReferences"] = kept
    return duplicates


def sets_resource_version(meta: Any) -> bool:
    """A create body's resourceVersion that etcd3's ``store.Create`` refuses: one that parses
    as a non-zero uint64 (anything else is dropped, as ``PrepareObjectForStorage`` does)."""
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return isinstance(rv, str) and bool(_UINT.fullmatch(rv)) and 0 < int(rv) < 2**64


def bump_generation(rt: ResourceType, old: Obj, new: Obj, changed: bool = False) -> None:
    """Move ``new``'s generation as the type's strategy does (``changed``: it must move)."""
    policy = generation_policy(rt)
    if not policy:
        return
    meta = new["metadata"]
    generation = old["metadata"].get("generation", 1)
    meta["generation"] = generation + 1 if changed or _moved(policy, old, new) else generation


def _moved(policy: str, old: Obj, new: Obj) -> bool:
    if policy == "spec":
        return bool(old.get("spec") != new.get("spec"))
    ignored = ("metadata", "status") if policy == "non-metadata-status" else ("metadata",)
    before = {k: v for k, v in old.items() if k not in ignored}
    after = {k: v for k, v in new.items() if k not in ignored}
    if policy == "endpointslice":
        # the strategy: anything but metadata changed, or the labels changed
        # (annotations, finalizers, owners alone do not bump it)
        return semantic(before) != semantic(after) or (
            old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {})
    return before != after


def deletion_done(obj: Obj) -> bool:
    """An object marked for deletion whose finalizers and grace period are all through."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and not meta.get(
        "deletionGracePeriodSeconds")
