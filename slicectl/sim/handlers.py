"""The REST verbs on one resource type: get, list, watch, create, update, patch, delete.

Decides the request flow of the generic registry: read, decode and type-check the body and
handle its unknown fields (:mod:`slicectl.sim.bodies`), validate the request's options
(:mod:`slicectl.sim.options`), apply the strategy (:mod:`slicectl.sim.objects`),
de-duplicate ownerReferences (with a Warning), default, validate (422 with causes), check
existence and optimistic concurrency (404, 409 AlreadyExists, 409 Conflict; a create carrying
a resourceVersion: 500), record managedFields (:mod:`slicectl.sim.managed`), store, and answer
with the object (201 on create), a Table or PartialObjectMetadata(List) when the Accept header
asks for one (:mod:`slicectl.sim.negotiation`), or a success Status where the real registry
returns one. A write that changes nothing is not stored (no new resourceVersion), as
etcd3's GuaranteedUpdate skips identical writes. CRD writes also (re)install the served types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from slicectl.sim import errors, listoptions, options, watch
from slicectl.sim.bodies import check_kind, decode_body, read_body, unknown_fields
from slicectl.sim.eventconv import is_events_v1, to_core, to_events_v1
from slicectl.sim.lifecycle import Lifecycle, check_preconditions
from slicectl.sim.listing import list_objects, make_filter, resource_version
from slicectl.sim.managed import keep_times, manager_name, record
from slicectl.sim.negotiation import (
    Representation,
    check_stream,
    is_a_list,
    not_a_list,
    partial,
    partial_list,
    representation,
)
from slicectl.sim.objects import (
    bump_generation,
    check_name,
    dedup_owner_references,
    deletion_done,
    drop_topology_on_v1,
    prepare_create,
    prepare_update,
    sets_resource_version,
)
from slicectl.sim.patch import (
    APPLY_PATCH,
    PatchError,
    UndecodablePatch,
    apply_patch,
    patch_type,
    patch_via,
)
from slicectl.sim.quota import CountQuotas
from slicectl.sim.registry import Registry, crd_status
from slicectl.sim.resources import (
    CRD_TYPE,
    allows_create_on_update,
    allows_unconditional_update,
    returns_deleted_object,
)
from slicectl.sim.storage import Obj, Store
from slicectl.sim.table import to_table
from slicectl.sim.types import ResourceType
from slicectl.sim.validation import (
    apply_defaults,
    decode_error,
    stored_form,
    stored_lists,
    validate,
)

JSON = "application/json"
_TYPE_META = frozenset({"kind", "apiVersion"})  # dropped from a built-in list's items
DUPLICATE_OWNERS = (".metadata.ownerReferences contains duplicate entries{}; API server dedups "
                    "owner references in 1.20+, and may reject such requests as early as 1.24; "
                    "please fix your requests; duplicate UID(s) observed: {}")


def json_response(body: Any, status: int = 200,
                  headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON,
                        headers=headers)


def wanted(request: web.Request, watch_list: bool = False) -> Representation:
    """The representation the request's Accept header asks for; its 406 where the handler
    negotiates (each handler asks first, before it reads a body or looks an object up)."""
    return representation(request.headers.get("Accept", ""), watch_list)


def patch_media(request: web.Request, rt: ResourceType) -> str:
    """A PATCH's patch type, or its 415 (:func:`slicectl.sim.patch.patch_type`)."""
    try:
        return patch_type(request.headers.get("Content-Type", ""), rt)
    except PatchError as exc:
        raise errors.ApiError(exc.code, exc.reason, exc.message) from exc


class Api:
    def __init__(self, store: Store, registry: Registry, lifecycle: Lifecycle,
                 bookmark_interval: float) -> None:
        self.store = store
        self.registry = registry
        self.lifecycle = lifecycle
        self.bookmark_interval = bookmark_interval
        self.quota = CountQuotas()

    # -- reads ------------------------------------------------------------------------------

    def _existing(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rt, namespace, name)
        if obj is None:
            raise errors.not_found(rt, name)
        return obj

    def _render(self, rt: ResourceType, obj: Obj) -> Obj:
        """The stored object as served at ``rt``'s version (custom resources keep one copy;
        events.k8s.io/v1 Events are stored as core/v1 ones)."""
        if is_events_v1(rt):
            return to_events_v1(obj)
        if rt.is_custom and obj.get("apiVersion") != rt.group_version:
            return {**obj, "apiVersion": rt.group_version}
        return obj

    def _list_items(self, rt: ResourceType, objs: list[Obj]) -> list[Obj]:
        """``objs`` as a list serves them: a built-in kind's items without ``kind`` and
        ``apiVersion`` (Go's typed list drops its items' TypeMeta), a custom resource's items
        as they are (unstructured lists keep them)."""
        rendered = [self._render(rt, o) for o in objs]
        if rt.is_custom:
            return rendered
        return [{k: v for k, v in o.items() if k not in _TYPE_META} for o in rendered]

    def _served(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        """The stored object as ``rt`` serves it, the old object of an update or a patch."""
        obj = self.store.get(rt, namespace, name)
        return None if obj is None else self._render(rt, obj)

    def _put(self, rt: ResourceType, obj: Obj) -> Obj:
        """Store an admitted object written through ``rt``, in its stored form."""
        return self.store.put(rt, to_core(obj) if is_events_v1(rt) else obj)

    def _answer(self, request: web.Request, rt: ResourceType, obj: Obj, status: int = 200,
                headers: dict[str, str] | None = None) -> web.Response:
        obj = self._render(rt, obj)
        form = wanted(request)
        event = self.store.last_event
        if form == "object" and event is not None and event.obj is obj:
            # just stored: answer with the bytes its watch event carries (serialized once)
            return web.Response(body=event.body(), status=status, content_type=JSON,
                                headers=headers)
        if form == "Table":
            include = request.query.get("includeObject", "Metadata")
            meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            return json_response(to_table(rt, [obj], meta, include), status, headers)
        if form == "PartialObjectMetadata":
            return json_response(partial(obj), status, headers)
        if form == "PartialObjectMetadataList":
            raise not_a_list(form)
        return json_response(obj, status, headers)

    def get(self, request: web.Request, rt: ResourceType, namespace: str,
            name: str) -> web.Response:
        wanted(request)
        # from the watch cache when a version is named: it must be one it has reached
        rv = resource_version(request.query.get("resourceVersion", ""))
        if rv > self.store.rv:
            raise errors.too_large_resource_version(rv, self.store.rv)
        return self._answer(request, rt, self._existing(rt, namespace, name))

    def list(self, request: web.Request, rt: ResourceType, namespace: str) -> web.Response:
        query = dict(request.query)
        listoptions.validate(query, watch=False)
        form = wanted(request)
        items, meta = list_objects(self.store, rt, make_filter(rt, namespace, query), query)
        if form == "PartialObjectMetadataList":
            return json_response(partial_list(items, meta))
        if form == "PartialObjectMetadata":
            raise is_a_list(form)
        if form == "Table":
            include = query.get("includeObject", "Metadata")
            return json_response(to_table(rt, [self._render(rt, o) for o in items], meta,
                                          include))
        return json_response({"kind": rt.list_kind, "apiVersion": rt.group_version,
                              "metadata": meta, "items": self._list_items(rt, items)})

    async def watch(self, request: web.Request, rt: ResourceType,
                    namespace: str) -> web.StreamResponse:
        query = dict(request.query)
        listoptions.watch_defaults(query)
        listoptions.validate(query, watch=True)
        form = wanted(request, watch_list=bool(options.query_bool(query, "sendInitialEvents")
                                               and options.query_bool(query,
                                                                      "allowWatchBookmarks")))
        check_stream(request.headers.get("Accept", ""))
        flt = make_filter(rt, namespace, query)
        render: Callable[[Obj], dict[str, Any]] | None = None
        if form == "Table":
            include = query.get("includeObject", "Metadata")

            def render(obj: Obj) -> dict[str, Any]:
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                return to_table(rt, [self._render(rt, obj)], meta, include)

        meta_only = form in ("PartialObjectMetadata", "PartialObjectMetadataList")
        if render is None and not meta_only and is_events_v1(rt):
            def render(obj: Obj) -> dict[str, Any]:
                return self._render(rt, obj)

        watcher, finished = watch.start(self.store, rt, flt, query, render, meta_only)
        return await watch.stream(request, self.store, watcher, finished, query,
                                  self.bookmark_interval)

    # -- writes -----------------------------------------------------------------------------

    def _admit(self, request: web.Request, rt: ResourceType, obj: Obj, old: Obj | None,
               subresource: str = "") -> None:
        """Defaults and validation shared by every write (a body was decoded, and its unknown
        fields handled, by :meth:`_body`; a patched object by :meth:`patch`)."""
        duplicates = dedup_owner_references(obj["metadata"])
        if duplicates:  # a patch's are found after admission only, and worded so
            after = " after mutating admission happens" if request.method == "PATCH" else ""
            errors.add_warning(request, DUPLICATE_OWNERS.format(after, ", ".join(duplicates)))
        apply_defaults(rt, obj)
        causes = validate(rt, obj, old, subresource)
        if causes:
            raise errors.invalid(rt, obj["metadata"].get("name", ""), causes)
        stored_form(rt, obj)

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        if not rt.namespaced:
            return
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        ns = self.store.get(ns_type, "", namespace)
        if ns is None:
            raise errors.not_found(ns_type, namespace)
        if ns["metadata"].get("deletionTimestamp"):
            why = (f"unable to create new content in namespace {namespace} because it is "
                   "being terminated")
            err = errors.forbidden(rt, name, why)
            assert err.details is not None
            err.details["causes"] = [{"reason": "NamespaceTerminating", "message": why,
                                      "field": "metadata.namespace"}]
            raise err

    @errors.keeps_headers
    async def create(self, request: web.Request, rt: ResourceType,
                     namespace: str) -> web.Response:
        wanted(request)
        body = await decode_body(request, rt, "CreateOptions")
        body_ns = (body.get("metadata") or {}).get("namespace") if isinstance(
            body.get("metadata"), dict) else None
        if rt.namespaced and body_ns and body_ns != namespace:
            raise errors.bad_request("the namespace of the provided object does not match "
                                     "the namespace sent on the request")
        return self._create(request, rt, namespace, body, posted=True)

    def _create(self, request: web.Request, rt: ResourceType, namespace: str,
                body: Obj, posted: bool = False) -> web.Response:
        """Create ``body``; ``posted``: by a POST, which reaches etcd3's ``store.Create`` and
        its resourceVersion check (a PUT that creates does not; a dry run reaches no store)."""
        headers = errors.response_headers(request)
        dry_run = options.dry_run(request.query)
        refuse_rv = posted and not dry_run and sets_resource_version(body.get("metadata"))
        prepare_create(rt, body, namespace)
        name = body["metadata"]["name"]
        self._admit(request, rt, body, None)
        self._check_namespace(rt, namespace, name)
        if self.quota.applies(rt, namespace):
            self.quota.admit(rt, namespace, name, self.store.count(rt, namespace))
        if refuse_rv:
            raise errors.resource_version_on_create()
        if self.store.get(rt, namespace, name) is not None:
            raise errors.already_exists(rt, name)
        if rt is CRD_TYPE:
            body["status"] = crd_status(body)
        self._record(request, rt, None, body, "")
        stored_lists(rt, body)
        if dry_run:
            return self._answer(request, rt, body, 201, headers)
        stored = self._put(rt, body)
        if rt is CRD_TYPE:
            self._crd_changed(stored)
        return self._answer(request, rt, stored, 201, headers)

    @errors.keeps_headers
    async def update(self, request: web.Request, rt: ResourceType, namespace: str, name: str,
                     subresource: str) -> web.Response:
        if not name:
            raise errors.name_required()
        wanted(request)
        body = await decode_body(request, rt, "UpdateOptions")
        check_name(body, name, namespace)
        meta = body["metadata"]
        old = self._served(rt, namespace, name)
        # The body's uid is a precondition (the update's Preconditions): a PUT meant for one
        # object never lands on another of the same name, nor re-creates a deleted one.
        uid = meta.get("uid")
        if old is None:
            if allows_create_on_update(rt) and not subresource:
                if uid:
                    raise errors.uid_precondition_failed(rt, name, uid, "")
                return self._create(request, rt, namespace, body)
            raise errors.not_found(rt, name)
        if uid and uid != old["metadata"].get("uid"):
            raise errors.uid_precondition_failed(rt, name, uid, old["metadata"].get("uid", ""),
                                                 namespace)
        if not meta.get("resourceVersion") and not allows_unconditional_update(rt):
            raise errors.resource_version_required(rt, name)
        return self._write(request, rt, old, body, subresource)

    @errors.keeps_headers
    async def patch(self, request: web.Request, rt: ResourceType, namespace: str, name: str,
                    subresource: str) -> web.Response:
        media = patch_media(request, rt)
        if not name:
            raise errors.name_required()
        wanted(request)
        raw = await read_body(request)
        options.validate_write("PatchOptions", request.query, apply=media == APPLY_PATCH)
        old = self._served(rt, namespace, name)
        # Server-side apply creates what is missing (patch.go: forceAllowCreate for apply
        # patches, answered 201); any other patch of a missing object is a 404.
        creates = old is None and media == APPLY_PATCH and not subresource
        if old is None and not creates:
            raise errors.not_found(rt, name)
        try:
            patched, met = apply_patch(old or {}, raw, media, rt,
                                       options.field_validation(request.query) != "Ignore")
        except PatchError as exc:
            raise errors.ApiError(exc.code, exc.reason, exc.message) from exc
        except UndecodablePatch as exc:
            raise errors.patch_undecodable(exc.value, exc.why) from exc
        kind = patched.get("kind")
        if rt.is_custom and not (kind and isinstance(kind, str)):  # decoded as Unstructured
            raise errors.patch_undecodable(patched)
        undecodable = decode_error(rt, patched)
        if undecodable:
            raise errors.patch_undecodable(patched, undecodable)
        check_kind(rt, patched)
        unknown_fields(request, rt, patched, patch_via(media), met)
        meta = patched.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        check_name(patched, name, namespace)
        if old is None:
            return self._create(request, rt, namespace, patched)
        if not meta.get("resourceVersion"):  # the patch removed it: as a PUT without one
            if not allows_unconditional_update(rt):
                raise errors.resource_version_required(rt, name)
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._write(request, rt, old, patched, subresource)

    def _write(self, request: web.Request, rt: ResourceType, old: Obj, new: Obj,
               subresource: str) -> web.Response:
        name = old["metadata"]["name"]
        rv = new["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt, name, errors.STALE_OBJECT)
        headers = errors.response_headers(request)
        result = prepare_update(rt, old, new, subresource)
        dropped = drop_topology_on_v1(rt, old, result)
        if rt is CRD_TYPE and not subresource:
            result["status"] = crd_status(result)
        self._admit(request, rt, result, old, subresource)
        bump_generation(rt, old, result, changed=dropped)
        result["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        self._record(request, rt, old, result, subresource)
        stored_lists(rt, result)
        keep_times(old, result)
        if options.dry_run(request.query) or result == old:
            return self._answer(request, rt, old if result == old else result, 200, headers)
        if deletion_done(result):
            return self._answer(request, rt, self.store.remove(rt, old), 200, headers)
        stored = self._put(rt, result)
        if rt is CRD_TYPE:
            self._crd_changed(stored)
        return self._answer(request, rt, stored, 200, headers)

    def _record(self, request: web.Request, rt: ResourceType, old: Obj | None, new: Obj,
                subresource: str) -> None:
        """Who changed what: ``metadata.managedFields`` (:mod:`slicectl.sim.managed`)."""
        field_manager = request.query.get("fieldManager", "")  # validated with the options
        manager = manager_name(field_manager, request.headers.get("User-Agent", ""))
        operation = "Apply" if request.content_type == APPLY_PATCH else "Update"
        record(old, new, manager, operation, subresource, rt.group_version,
               "status" in rt.subresources)

    def _crd_changed(self, crd: Obj) -> None:
        for rt in self.registry.install_crd(crd):
            self.store.drop_bucket(rt)

    # -- deletes ----------------------------------------------------------------------------

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        raw = await read_body(request)
        return options.delete_options(raw, request.headers.get("Content-Type", ""),
                                      request.query)

    def _delete_one(self, rt: ResourceType, obj: Obj,
                    delete_options: dict[str, Any]) -> tuple[Obj, bool]:
        if rt is CRD_TYPE:
            self._drop_custom_objects(obj)
        result, gone = self.lifecycle.delete(rt, obj, delete_options)
        if rt is CRD_TYPE and gone:
            self.registry.remove_crd(obj["metadata"]["name"])
        return result, gone

    def _drop_custom_objects(self, crd: Obj) -> None:
        types = self.registry.crd_types.get(crd["metadata"]["name"], [])
        if types:
            rt = types[0]
            for obj in list(self.store.bucket(rt).objects.values()):
                self.store.remove(rt, obj)
            self.store.drop_bucket(rt)

    async def delete(self, request: web.Request, rt: ResourceType, namespace: str,
                     name: str) -> web.Response:
        wanted(request)
        delete_options = await self._delete_options(request)
        obj = self._existing(rt, namespace, name)
        if delete_options.get("dryRun"):
            check_preconditions(rt, obj, delete_options)
            result, gone = obj, not (obj["metadata"].get("finalizers") or (
                rt.group, rt.plural) == ("", "pods"))
        else:
            result, gone = self._delete_one(rt, obj, delete_options)
        if gone and not returns_deleted_object(rt):
            details: dict[str, Any] = {"name": name}
            if rt.group:
                details["group"] = rt.group
            details.update(kind=rt.plural, uid=obj["metadata"]["uid"])
            return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Success", "details": details})
        return self._answer(request, rt, result)

    async def delete_collection(self, request: web.Request, rt: ResourceType,
                                namespace: str) -> web.Response:
        wanted(request)
        query = dict(request.query)
        query.pop("limit", None)
        query.pop("continue", None)
        listoptions.validate(query, watch=False)
        delete_options = await self._delete_options(request)
        items, meta = list_objects(self.store, rt, make_filter(rt, namespace, query), query)
        deleted = items if delete_options.get("dryRun") else [
            self._delete_one(rt, obj, delete_options)[0] for obj in items]
        meta["resourceVersion"] = str(self.store.rv)
        return json_response({"kind": rt.list_kind, "apiVersion": rt.group_version,
                              "metadata": meta, "items": self._list_items(rt, deleted)})
