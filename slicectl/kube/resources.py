"""Which URL serves a resource: group, version, plural and scope, nothing else.

A :class:`Resource` is a plain value so callers name what they talk to once (``PODS``,
``ENDPOINTSLICES``, or one built from a CRD) and the client turns it into the REST path the API
server routes: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    namespaced: bool = True
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        """The group-version root: ``/api/v1`` or ``/apis/<group>/<version>``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The REST path; a namespaced resource without a namespace means all namespaces."""
        parts = [self.prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return "/".join(parts)


PODS = Resource("", "v1", "pods", True, "Pod")
NODES = Resource("", "v1", "nodes", False, "Node")
NAMESPACES = Resource("", "v1", "namespaces", False, "Namespace")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", True, "EndpointSlice")
LEASES = Resource("coordination.k8s.io", "v1", "leases", True, "Lease")
EVENTS = Resource("events.k8s.io", "v1", "events", True, "Event")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition"
)


_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def request_labels(method: str, path: str, watch: bool = False) -> tuple[str, str]:
    """The (verb, resource) an API server would record for a request, for request metrics.

    The verb follows ``apiserver_request_total``: a GET of a collection is ``LIST``, a watch is
    ``WATCH``. The resource is the plural, with ``/<subresource>`` appended when there is one
    (``pods/status``); paths outside ``/api`` and ``/apis`` give an empty resource.
    """
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    if segments[:1] == ["api"]:
        rest = segments[2:]
    elif segments[:1] == ["apis"]:
        rest = segments[3:]
    else:
        return method.upper(), ""
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES)
    ):
        rest = rest[2:]
    resource = rest[0] if rest else ""
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    verb = method.upper()
    if verb == "GET":
        if watch:
            verb = "WATCH"
        elif len(rest) == 1:
            verb = "LIST"
    return verb, resource
