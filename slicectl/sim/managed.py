"""``metadata.managedFields``: who set which fields, written on every change as a real server does.

Why: a real kube-apiserver records field ownership on every create, update and patch, and
serves it in every GET, LIST and WATCH (metadata-only ones included). It is often the larger
part of a small object, so decode cost, memory and relist sizes measured against a server
without it are optimistic.

What is recorded (an approximation of structured-merge-diff, good for sizes and for who-owns-
what, not for server-side-apply conflict detection):

- the manager is the ``fieldManager`` query parameter (validated with the request's options,
  :mod:`slicectl.sim.options`), else the User-Agent up to its first ``/``
  (``prefixFromUserAgent``), cut to 128;
- operation ``Apply`` for ``application/apply-patch+yaml`` patches, ``Update`` otherwise;
  ``subresource: status`` for status writes; ``apiVersion`` of the request; ``time`` of the
  write; ``fieldsType: FieldsV1``;
- ``fieldsV1``: on create, every field of the object (defaults included, server-owned metadata
  and null fields excluded: a null is unset, as Go decodes it, so an EndpointSlice's absent
  ``endpoints`` stored as null is not owned, while an ``[]`` sent is); on update, the fields
  the write added or changed, which also leave every other manager's set (fields the write
  removed leave every set). Maps (labels, annotations) and the items of keyed lists
  (containers by ``name``, conditions by ``type``, container ports by
  ``containerPort``/``protocol``, ...) carry ``"."``; an owner reference is one field (atomic)
  and its list carries ``"."``; other lists are atomic; ``finalizers`` is a set (``v:"..."``);
- a write that changes nothing else keeps the managedFields it had (no new resourceVersion);
  an update that carries non-empty managedFields of its own replaces them, as on a real server;
- a write whose stored form differs only in the entries' times keeps the old times (a real
  server's ``IgnoreManagedFieldsTimestampsTransformer``), so it too is a no-op: a second
  ``endpoints: []`` PUT to an EndpointSlice, stored as null, is one whenever it lands.
"""

from __future__ import annotations

import json
from typing import Any

from slicectl.sim.objects import now_timestamp

Obj = dict[str, Any]
Path = tuple[str, ...]
DOT = "."
MAX_MANAGER = 128
_SERVER_META = frozenset({
    "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})
_MAPS = frozenset({"labels", "annotations", "nodeSelector", "matchLabels", "data"})
# x-kubernetes-list-map-keys of the keyed lists the served built-ins have (others are atomic)
_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "env": ("name",), "volumes": ("name",), "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",), "conditions": ("type",), "ownerReferences": ("uid",),
    "ports": ("containerPort", "protocol")}
# keyed lists whose items are atomic (OwnerReference is +structType=atomic): the list carries
# "." and each item is one field, as a real server records them
_ATOMIC_ITEMS = frozenset({"ownerReferences"})


def manager_name(field_manager: str, user_agent: str) -> str:
    if field_manager:
        return field_manager
    prefix = "".join(c for c in user_agent.split("/")[0] if c.isprintable())
    return prefix.encode()[:MAX_MANAGER].decode(errors="ignore")


def _list_key(name: str, items: list[Any]) -> tuple[str, ...] | None:
    keys = _LIST_KEYS.get(name)
    if keys is None or not all(isinstance(i, dict) and keys[0] in i for i in items):
        return None  # atomic (EndpointSlice endpoints and ports, tolerations, ...)
    return keys


def _flatten(value: Any, path: Path, out: dict[Path, Any], name: str = "") -> None:
    if value is None:  # unset, as Go decodes it (a nil pointer, slice or map)
        return
    if isinstance(value, dict) and value:
        if name in _MAPS:
            out[(*path, DOT)] = None
        for key, child in value.items():
            _flatten(child, (*path, f"f:{key}"), out, key)
        return
    if isinstance(value, list) and value:
        if name == "finalizers" and all(isinstance(v, str) for v in value):
            for item in value:
                out[(*path, "v:" + json.dumps(item))] = None
            return
        keys = _list_key(name, value)
        if keys is not None:
            if name in _ATOMIC_ITEMS:
                out[(*path, DOT)] = None
            for item in value:
                ident = json.dumps({k: item[k] for k in keys if k in item},
                                   separators=(",", ":"), sort_keys=True, default=str)
                item_path = (*path, "k:" + ident)
                if name in _ATOMIC_ITEMS:
                    out[item_path] = item
                    continue
                out[(*item_path, DOT)] = None
                for key, child in item.items():
                    _flatten(child, (*item_path, f"f:{key}"), out, key)
            return
    out[path] = value


def flatten(obj: Obj, subresource: str, status_subresource: bool) -> dict[Path, Any]:
    """The leaf paths (``f:``/``k:``/``v:`` steps) of the fields a write of ``obj`` covers."""
    out: dict[Path, Any] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if subresource == "status" and key != "status":
            continue
        if not subresource and status_subresource and key == "status":
            continue
        if key == "metadata" and isinstance(value, dict):
            for mkey, mvalue in value.items():
                if mkey not in _SERVER_META:
                    _flatten(mvalue, ("f:metadata", f"f:{mkey}"), out, mkey)
            continue
        _flatten(value, (f"f:{key}",), out, key)
    return out


def _nest(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for step in path:
            node = node.setdefault(step, {})
    return root


def _paths(fields: Any, prefix: Path = ()) -> set[Path]:
    if not isinstance(fields, dict) or not fields:
        return {prefix} if prefix else set()
    found: set[Path] = set()
    for step, child in fields.items():
        found |= _paths(child, (*prefix, step))
    return found


def _entry(manager: str, operation: str, api_version: str, subresource: str,
           paths: set[Path]) -> dict[str, Any]:
    entry: dict[str, Any] = {"manager": manager, "operation": operation,
                             "apiVersion": api_version, "time": now_timestamp(),
                             "fieldsType": "FieldsV1", "fieldsV1": _nest(paths)}
    if subresource:
        entry["subresource"] = subresource
    return entry


def record(old: Obj | None, new: Obj, manager: str, operation: str, subresource: str,
           api_version: str, status_subresource: bool) -> None:
    """Set ``new``'s managedFields for a write by ``manager`` over ``old`` (None: create)."""
    meta = new["metadata"]
    if old is None:
        paths = set(flatten(new, subresource, status_subresource))
        meta["managedFields"] = [_entry(manager, operation, api_version, subresource, paths)]
        return
    old_meta = old["metadata"]
    base = old_meta.get("managedFields") or []
    sent = meta.get("managedFields")
    if isinstance(sent, list) and sent and not subresource and sent != base:
        base = sent  # the client rewrote managedFields itself
    if _same_but_managed_fields(old, new):
        meta["managedFields"] = base
        return
    before = flatten(old, subresource, status_subresource)
    after = flatten(new, subresource, status_subresource)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    gone = set(before) - set(after)
    entries: list[dict[str, Any]] = []
    mine: set[Path] = set()
    for entry in base:
        if not isinstance(entry, dict):
            continue
        owned = _paths(entry.get("fieldsV1"))
        if (entry.get("manager"), entry.get("operation"), entry.get("subresource", "")) == (
                manager, operation, subresource):
            mine = owned - gone
            continue
        kept = owned - changed - gone
        if kept == owned:
            entries.append(entry)
        elif kept:
            entries.append({**entry, "fieldsV1": _nest(kept)})
    mine |= changed
    if mine:
        entries.append(_entry(manager, operation, api_version, subresource, mine))
    meta["managedFields"] = entries


def _same_but_managed_fields(old: Obj, new: Obj) -> bool:
    return {**new, "metadata": {**new["metadata"], "managedFields": None}} == {
        **old, "metadata": {**old["metadata"], "managedFields": None}}


def _untimed(entries: Any) -> Any:
    if not isinstance(entries, list):
        return entries
    return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e
            for e in entries]


def keep_times(old: Obj, new: Obj) -> None:
    """Give ``new`` (in its stored form) ``old``'s managedFields when they differ only in
    their times and nothing else differs (``IgnoreManagedFieldsTimestampsTransformer``)."""
    kept = old["metadata"].get("managedFields")
    if _untimed(new["metadata"].get("managedFields")) == _untimed(kept) and \
            _same_but_managed_fields(old, new):
        new["metadata"]["managedFields"] = kept


def record_sim_write(old: Obj, new: Obj, manager: str, subresource: str) -> None:
    """managedFields for a write the server makes itself (the kubelet it plays)."""
    record(old, new, manager, "Update", subresource, str(new.get("apiVersion", "v1")),
           status_subresource=True)
