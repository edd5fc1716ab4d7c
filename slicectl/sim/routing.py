"""Parse a resource URL the way kube-apiserver's RequestInfo resolver does.

Decides, from method, path and query, the request's verb (get/list/watch/create/update/patch/
delete/deletecollection), group, version, namespace, resource, name and subresource. A path
``/api/v1/namespaces/<ns>`` names the namespace itself; ``namespaces/<ns>/status`` and
``/finalize`` are its subresources; ``namespaces/<ns>/<resource>...`` is namespaced content.
"""

from __future__ import annotations

from dataclasses import dataclass

from multidict import MultiMapping

from slicectl.sim.options import query_bool

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    verb: str
    group: str
    version: str
    namespace: str
    resource: str
    name: str
    subresource: str

    @property
    def scope(self) -> str:
        if self.name or self.verb == "create":
            return "resource"
        return "namespace" if self.namespace else "cluster"


def resolve(method: str, path: str, query: MultiMapping[str]) -> RequestInfo | None:
    """The RequestInfo of a resource request, or None when ``path`` names no resource."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = "/".join(rest[2:])
    if resource == "namespaces" and namespace and not name:
        name = namespace
    if resource == "namespaces":
        namespace = ""
    method = method.upper()
    if method in ("GET", "HEAD"):
        verb = "get" if name else ("watch" if query_bool(query, "watch") else "list")
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = method.lower()
    return RequestInfo(verb, group, version, namespace, resource, name, subresource)
