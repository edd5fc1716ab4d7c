"""OpenAPI v3 documents for every type the embedded API server serves.

Why: kubectl ``create``/``apply`` download ``/openapi/v3`` and the per group-version documents
before sending anything. From them kubectl decides (a) that the server validates fields itself
(a PATCH operation tagged with the kind's ``x-kubernetes-group-version-kind`` that takes a
``fieldValidation`` query parameter) and (b) how to compute the apply patch (strategic merge
patch when that PATCH operation accepts ``application/strategic-merge-patch+json``, using the
``x-kubernetes-patch-*`` extensions of the component schemas; JSON merge patch otherwise).

Built-in schemas come from :mod:`slicectl.sim.validation.builtin`; a custom resource gets its
version's ``openAPIV3Schema`` wrapped with ``apiVersion``/``kind``/``metadata`` (ObjectMeta) under
the name kube-apiserver gives it (``io.slicectl.v1alpha1.EndpointSelector``). The index lists each
document under a ``?hash=`` of its content (upper-case SHA-512 hex, like the real server).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from slicectl.sim.types import ResourceType
from slicectl.sim.validation.builtin import REF_PREFIX, builtin_schemas, kubernetes_version

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_ALWAYS = tuple(
    _META + n for n in ("Status", "DeleteOptions", "WatchEvent", "Patch", "APIResourceList")
)
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
_SMP = "application/strategic-merge-patch+json"


def gv_path(rt: ResourceType) -> str:
    """The index key of ``rt``'s document: ``api/v1`` or ``apis/<group>/<version>``."""
    return f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"


def custom_definition_name(rt: ResourceType, kind: str | None = None) -> str:
    """kube-apiserver's schema name for a custom kind: the group reversed, then version, kind."""
    group = ".".join(reversed(rt.group.split(".")))
    return f"{group}.{rt.version}.{kind or rt.kind}"


class OpenAPI:
    """The /openapi/v3 index and the per group-version documents, built once per type set."""

    def __init__(self, types: Iterable[ResourceType]) -> None:
        by_gv: dict[str, list[ResourceType]] = {}
        for rt in types:
            by_gv.setdefault(gv_path(rt), []).append(rt)
        self._documents = {gv: _build_document(rts) for gv, rts in sorted(by_gv.items())}
        self._index = {
            "paths": {
                gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(doc)}"}
                for gv, doc in self._documents.items()
            }
        }

    def index(self) -> dict[str, Any]:
        """The body of ``GET /openapi/v3``."""
        return self._index

    def document(self, gv_path: str) -> dict[str, Any] | None:
        """The body of ``GET /openapi/v3/<gv_path>``, or None when no such group-version."""
        return self._documents.get(gv_path.strip("/"))


def _hash(doc: dict[str, Any]) -> str:
    body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(body).hexdigest().upper()


def _build_document(rts: list[ResourceType]) -> dict[str, Any]:
    builtin = builtin_schemas()
    schemas: dict[str, Any] = {}
    roots: list[str] = list(_ALWAYS)
    paths: dict[str, Any] = {}
    for rt in rts:
        if rt.is_custom:
            name = custom_definition_name(rt)
            schemas[name] = _custom_schema(rt)
            schemas[name + "List"] = _custom_list_schema(rt, name)
            roots.append(_META + "ObjectMeta")
            roots.append(_META + "ListMeta")
        else:
            name = rt.definition or ""
            roots.append(name)
            roots.append(name + "List")
        paths.update(_paths(rt, name))
    for def_name in _reachable(builtin, [r for r in roots if r in builtin]):
        schemas[def_name] = builtin[def_name]
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": kubernetes_version()},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
    }


def _reachable(schemas: dict[str, Any], roots: list[str]) -> list[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        todo.extend(_refs(schemas[name]))
    return sorted(seen)


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            found.append(ref[len(REF_PREFIX):])
        for key, value in node.items():
            if key not in ("enum", "default", "example"):
                found.extend(_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_refs(value))
    return found


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF_PREFIX + name}


def _gvk(rt: ResourceType, kind: str | None = None) -> list[dict[str, str]]:
    return [{"group": rt.group, "kind": kind or rt.kind, "version": rt.version}]


def _type_meta(rt: ResourceType) -> dict[str, Any]:
    return {
        "apiVersion": {
            "description": "APIVersion defines the versioned schema of this representation "
            "of an object.",
            "type": "string",
        },
        "kind": {
            "description": "Kind is a string value representing the REST resource this "
            "object represents.",
            "type": "string",
        },
    }


def _custom_schema(rt: ResourceType) -> dict[str, Any]:
    schema = copy.deepcopy(rt.schema or {})
    schema.setdefault("type", "object")
    props = schema.setdefault("properties", {})
    props.update(_type_meta(rt))
    props["metadata"] = {
        "allOf": [_ref(_META + "ObjectMeta")],
        "description": "Standard object's metadata.",
    }
    schema["x-kubernetes-group-version-kind"] = _gvk(rt)
    return schema


def _custom_list_schema(rt: ResourceType, item: str) -> dict[str, Any]:
    props = _type_meta(rt)
    props["items"] = {
        "description": f"List of {rt.plural}.",
        "type": "array",
        "items": _ref(item),
    }
    props["metadata"] = {"allOf": [_ref(_META + "ListMeta")], "description": "ListMeta."}
    return {
        "description": f"{rt.kind}List is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": props,
        "x-kubernetes-group-version-kind": _gvk(rt, rt.list_kind),
    }


def _query(name: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": True}}


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _operation(
    rt: ResourceType, action: str, op_id: str, body: str | None, response: str,
    params: list[dict[str, Any]], content_types: tuple[str, ...] = ("application/json",),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "tags": [f"{rt.group.split('.')[0] or 'core'}_{rt.version}"],
        "operationId": op_id,
        "parameters": params,
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": _ref(response)}},
            },
            "401": {"description": "Unauthorized"},
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rt)[0],
    }
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {ct: {"schema": _ref(body)} for ct in content_types},
        }
    return op


def _paths(rt: ResourceType, definition: str) -> dict[str, Any]:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    scope = "Namespaced" if rt.namespaced else ""
    kind = rt.kind
    base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else (
        f"{prefix}/{rt.plural}"
    )
    scope_params = [_path_param("namespace")] if rt.namespaced else []
    item_params = [*scope_params, _path_param("name")]
    write = [_query("dryRun"), _query("fieldManager"), _query("fieldValidation")]
    patch_types = _PATCH_TYPES if rt.is_custom else (*_PATCH_TYPES, _SMP)
    list_params = [
        _query(p) for p in ("labelSelector", "fieldSelector", "continue", "resourceVersion")
    ] + [_query("limit", "integer"), _query("watch", "boolean")]
    paths: dict[str, Any] = {
        base: {
            "get": _operation(rt, "list", f"list{scope}{kind}", None, definition + "List",
                              [*scope_params, *list_params]),
            "post": _operation(rt, "post", f"create{scope}{kind}", definition, definition,
                               [*scope_params, *write]),
            "delete": _operation(rt, "deletecollection", f"deleteCollection{scope}{kind}",
                                 _META + "DeleteOptions", _META + "Status",
                                 [*scope_params, *list_params]),
        },
        f"{base}/{{name}}": _item_ops(rt, scope + kind, definition, item_params, write,
                                      patch_types),
    }
    if rt.namespaced:
        paths[f"{prefix}/{rt.plural}"] = {
            "get": _operation(rt, "list", f"list{kind}ForAllNamespaces", None,
                              definition + "List", list_params),
        }
    if "status" in rt.subresources:
        paths[f"{base}/{{name}}/status"] = _item_ops(
            rt, f"{scope}{kind}Status", definition, item_params, write, patch_types,
            delete=False,
        )
    return paths


def _item_ops(
    rt: ResourceType, suffix: str, definition: str, item_params: list[dict[str, Any]],
    write: list[dict[str, Any]], patch_types: tuple[str, ...], delete: bool = True,
) -> dict[str, Any]:
    ops: dict[str, Any] = {
        "get": _operation(rt, "get", f"read{suffix}", None, definition, item_params),
        "put": _operation(rt, "put", f"replace{suffix}", definition, definition,
                          [*item_params, *write]),
        "patch": _operation(rt, "patch", f"patch{suffix}", _META + "Patch", definition,
                            [*item_params, *write, _query("force", "boolean")], patch_types),
    }
    if delete:
        ops["delete"] = _operation(rt, "delete", f"delete{suffix}", _META + "DeleteOptions",
                                   _META + "Status", item_params)
    return ops
