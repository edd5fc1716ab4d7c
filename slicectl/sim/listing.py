"""LIST semantics: label and field selectors, resourceVersion matching, limit/continue paging.

Decides which objects a list or watch returns (:class:`Filter`, shared by both, built from the
sim's own selector code: :mod:`slicectl.sim.selectors`, :mod:`slicectl.sim.fieldsets`), at which
resourceVersion a list is served (unset/"0"/NotOlderThan: now; Exact, a positive limit with a
resourceVersion, or a continue token: the state rebuilt from history, 410 Expired past it), and
how pages are cut: keys in etcd order, an opaque continue token carrying the list's
resourceVersion and the next start key, encoded as the real server encodes it; a limit of 0 or
less is no limit.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from slicectl.sim import errors
from slicectl.sim.fieldsets import FieldSelector, FieldSelectorError, parse_field_selector
from slicectl.sim.options import query_int64
from slicectl.sim.selectors import LabelSelector, LabelSelectorError, parse_label_selector
from slicectl.sim.storage import Obj, Store
from slicectl.sim.types import ResourceType
from slicectl.sim.validation.errors import go_quote

_UINT = re.compile(r"[0-9]+")
FUTURE_REVISION = "etcdserver: mvcc: required revision is a future revision"
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True, slots=True)
class Filter:
    """Which objects a list or watch selects: namespace, labels, fields."""

    namespace: str = ""
    labels: LabelSelector = field(default_factory=LabelSelector)
    fields: FieldSelector = field(default_factory=FieldSelector)

    @property
    def trivial(self) -> bool:
        return self.labels.empty and self.fields.empty

    def matches(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(meta.get("labels") or {}):
            return False
        return self.fields.matches(obj)


def make_filter(rt: ResourceType, namespace: str, query: dict[str, str]) -> Filter:
    """The request's selectors, parsed by the sim's own code (400 with the real message)."""
    try:
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(rt, query.get("fieldSelector", ""))
    except (LabelSelectorError, FieldSelectorError) as exc:
        raise errors.bad_request(str(exc)) from exc
    return Filter(namespace, labels, fields)


def encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("version")
        return int(data["rv"]), str(data["start"])
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def resource_version(text: str, *, from_etcd: bool = False) -> int:
    """``text`` as ``APIObjectVersioner.ParseResourceVersion`` reads it: "" and "0" are 0,
    anything else ``strconv.ParseUint`` (no sign, no space, at most 2**64-1). A bad one is the
    storage error itself, a 500 without a reason, where the watch cache serves the request;
    etcd3's 400 where it goes to etcd (``from_etcd``)."""
    if text in ("", "0"):
        return 0
    why = "" if _UINT.fullmatch(text) else "invalid syntax"
    if not why and int(text) >= 2**64:
        why = "value out of range"
    if not why:
        return int(text)
    message = (f"resourceVersion: Invalid value: {go_quote(text)}: strconv.ParseUint: parsing "
               f"{go_quote(text)}: {why}")
    if from_etcd:
        raise errors.bad_request(f"invalid resource version: {message}")
    raise errors.ApiError(500, "", message)


def page_limit(query: dict[str, str]) -> int:
    """The page size a list asks for; 0 is no limit, and so is a negative one (the real
    server pages only when ``limit > 0``: ``limit=-1`` lists everything, served as an
    unlimited list is, not at an exact resourceVersion)."""
    limit = query_int64(query, "limit") or 0
    return max(limit, 0)


def snapshot_rv(store: Store, rt: ResourceType, query: dict[str, str]) -> tuple[int, str]:
    """The resourceVersion a list is served at, and the continue start key (\"\" = beginning)."""
    rv_text = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    token = query.get("continue", "")
    if token:
        if rv_text and rv_text != "0":
            raise errors.bad_request(
                "specifying resource version is not allowed when using continue")
        rv, start = decode_continue(token)
        if rv <= 0:
            return store.rv, start
        if rv < store.compacted_before(rt):
            err = errors.expired(CONTINUE_EXPIRED)
            err.metadata = {"continue": encode_continue(-1, start)}
            raise err
        return rv, start
    if not rv_text or rv_text == "0":  # (the query passed sim.listoptions.validate)
        return store.rv, ""
    exact = match == "Exact" or (not match and page_limit(query) > 0)
    rv = resource_version(rv_text, from_etcd=exact)  # shouldDelegateList: Exact goes to etcd
    if rv > store.rv:
        if exact:
            raise errors.ApiError(500, "", FUTURE_REVISION)
        raise errors.too_large_resource_version(rv, store.rv)
    if exact:
        if rv < store.compacted_before(rt):
            raise errors.expired("The resourceVersion for the provided list is too old.")
        return rv, ""
    return store.rv, ""


def list_objects(store: Store, rt: ResourceType, flt: Filter,
                 query: dict[str, str]) -> tuple[list[Obj], dict[str, Any]]:
    """The selected objects of one page and the list ``metadata``."""
    limit = page_limit(query)
    rv, start = snapshot_rv(store, rt, query)
    state = store.objects_at(rt, rv)
    if query.get("resourceVersion") == "0" and not query.get("continue"):
        limit = 0  # v1.32 serves resourceVersion=0 from its watch cache whole, ignoring limit
    keys = sorted(state)
    prefix = flt.namespace + "/" if flt.namespace and rt.namespaced else ""
    matches: Callable[[Obj], bool] = flt.matches
    items: list[Obj] = []
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    remaining = 0
    last_key = ""
    for key in keys:
        if prefix and not key.startswith(prefix):
            continue
        if start and key < start:
            continue
        obj = state[key]
        if not matches(obj):
            continue
        if limit and len(items) >= limit:
            remaining += 1
            if not flt.trivial:
                break
            continue
        items.append(obj)
        last_key = key
    if remaining:
        meta["continue"] = encode_continue(rv, last_key + "\x00")
        if flt.trivial:
            meta["remainingItemCount"] = remaining
    return items, meta
