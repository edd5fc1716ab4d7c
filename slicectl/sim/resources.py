"""The built-in resource types the embedded server serves, and how each behaves on writes.

One :class:`ResourceType` per served group/version/resource; behaviour the real registry
strategies decide per type lives in ``extra`` (read through the helpers below) so storage,
handlers and garbage collection consult one table:

- ``generation``: when ``metadata.generation`` exists and what bumps it
  (``"spec"``, ``"non-metadata"``, ``"non-metadata-status"``, ``"endpointslice"``);
- ``reset_status_on_create``: the strategy wipes ``status`` on create (pods, services, CRs);
- ``return_deleted_object``: DELETE answers with the object rather than a success Status;
- ``create_on_update``: PUT of a missing object creates it (leases, events);
- ``unconditional_update``: PUT without ``metadata.resourceVersion`` is allowed.

Field selectors per type live in :mod:`slicectl.sim.fieldsets`.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.eventconv import CORE_EVENTS, EVENTS_V1
from slicectl.sim.types import ResourceType


def _rt(group: str, plural: str, kind: str, namespaced: bool, definition: str,
        **kwargs: Any) -> ResourceType:
    extra = kwargs.pop("extra", {})
    return ResourceType(
        group=group, version="v1", plural=plural, kind=kind, namespaced=namespaced,
        singular=kind.lower(), definition=definition, extra=extra, **kwargs,
    )


BUILTINS: tuple[ResourceType, ...] = (
    _rt("", "namespaces", "Namespace", False, "io.k8s.api.core.v1.Namespace",
        short_names=("ns",), subresources=frozenset({"status", "finalize"}),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        extra={"return_deleted_object": True, "unconditional_update": True}),
    _rt("", "pods", "Pod", True, "io.k8s.api.core.v1.Pod", short_names=("po",),
        subresources=frozenset({"status"}), categories=("all",),
        extra={"reset_status_on_create": True, "return_deleted_object": True,
               "unconditional_update": True}),
    _rt("", "nodes", "Node", False, "io.k8s.api.core.v1.Node", short_names=("no",),
        subresources=frozenset({"status"}),
        extra={"unconditional_update": True}),
    _rt("", "services", "Service", True, "io.k8s.api.core.v1.Service", short_names=("svc",),
        subresources=frozenset({"status"}), categories=("all",),
        extra={"reset_status_on_create": True, "return_deleted_object": True,
               "unconditional_update": True}),
    _rt("", "events", "Event", True, "io.k8s.api.core.v1.Event", short_names=("ev",),
        extra={"create_on_update": True, "unconditional_update": True}),
    _rt("events.k8s.io", "events", "Event", True, "io.k8s.api.events.v1.Event",
        short_names=("ev",),  # stored as the core Event it is validated as: 422s name that
        extra={"create_on_update": True, "unconditional_update": True, "invalid_group": ""}),
    _rt("discovery.k8s.io", "endpointslices", "EndpointSlice", True,
        "io.k8s.api.discovery.v1.EndpointSlice",
        extra={"generation": "endpointslice", "unconditional_update": True}),
    _rt("coordination.k8s.io", "leases", "Lease", True, "io.k8s.api.coordination.v1.Lease",
        extra={"create_on_update": True}),
    _rt("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", False,
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        short_names=("crd", "crds"), subresources=frozenset({"status"}),
        categories=("api-extensions",),
        extra={"generation": "spec"}),
)

CRD_TYPE = BUILTINS[-1]
NAMESPACE_TYPE = BUILTINS[0]
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def generation_policy(rt: ResourceType) -> str | None:
    if rt.is_custom:
        return "non-metadata-status" if "status" in rt.subresources else "non-metadata"
    policy: str | None = rt.extra.get("generation")
    return policy


def resets_status_on_create(rt: ResourceType) -> bool:
    return (rt.is_custom and "status" in rt.subresources) or bool(
        rt.extra.get("reset_status_on_create"))


def returns_deleted_object(rt: ResourceType) -> bool:
    """Whether a DELETE that removes the object answers with it (a custom resource's store
    does not: a success Status, as on a real v1.32.6)."""
    return bool(rt.extra.get("return_deleted_object"))


def allows_create_on_update(rt: ResourceType) -> bool:
    return bool(rt.extra.get("create_on_update"))


def allows_unconditional_update(rt: ResourceType) -> bool:
    return bool(rt.extra.get("unconditional_update"))


def storage_key(rt: ResourceType) -> tuple[str, str]:
    """Objects are stored once per group/resource, whatever version serves them; Events once
    for both groups that serve them (:mod:`slicectl.sim.eventconv`)."""
    key = (rt.group, rt.plural)
    return CORE_EVENTS if key == EVENTS_V1 else key
