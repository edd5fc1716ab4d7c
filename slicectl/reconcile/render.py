"""Plan entries -> API JSON: the body of a create and the merge patch of an update.

Field names are exactly the EndpointSlice API's (absent optional fields omitted, ``ports`` and
``endpoints`` never null). An update is an RFC 7386 merge patch carrying only the top-level
fields that changed (labels key by key, a removed label set to null), plus the cached
``metadata.resourceVersion`` as an optimistic-concurrency precondition and the trigger-time
annotation. ownerReferences are never patched: only slices owned by the selector are updated.
"""

from __future__ import annotations

from typing import Any

from slicectl.model.parse import is_dns_subdomain
from slicectl.model.records import (
    ANNOTATION_TRIGGER_TIME,
    Endpoint,
    EndpointPort,
    SelectorRecord,
)
from slicectl.reconcile.types import SliceSpec, SliceUpdate

SLICE_API_VERSION = "discovery.k8s.io/v1"


def endpoint_to_json(ep: Endpoint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "addresses": list(ep.addresses),
        "conditions": {"ready": ep.ready, "serving": ep.serving, "terminating": ep.terminating},
    }
    if ep.hostname:
        out["hostname"] = ep.hostname
    if ep.target is not None:
        t = ep.target
        out["targetRef"] = {"kind": t.kind, "namespace": t.namespace, "name": t.name, "uid": t.uid}
    if ep.node_name:
        out["nodeName"] = ep.node_name
    if ep.zone:
        out["zone"] = ep.zone
    return out


def port_to_json(p: EndpointPort) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "protocol": p.protocol}
    if p.port is not None:
        out["port"] = p.port
    if p.app_protocol is not None:
        out["appProtocol"] = p.app_protocol
    return out


def generate_name(selector_name: str) -> str:
    """Upstream ``getEndpointSlicePrefix``: ``<name>-``, or ``<name>`` if that is no valid prefix.

    As in apimachinery's ``maskTrailingDash``, a prefix is validated with its trailing dash and
    the character before it replaced by one letter (so a 253-character name keeps its dash).
    """
    masked = f"{selector_name[:-1]}a" if selector_name else "-"
    return f"{selector_name}-" if is_dns_subdomain(masked) else selector_name


def owner_reference(selector: SelectorRecord) -> dict[str, Any]:
    return {
        "apiVersion": selector.api.api_version,
        "kind": selector.api.kind,
        "name": selector.name,
        "uid": selector.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_slice_body(
    selector: SelectorRecord, spec: SliceSpec, trigger_time: str | None
) -> dict[str, Any]:
    """The full EndpointSlice to POST for a planned create."""
    metadata: dict[str, Any] = {
        "generateName": generate_name(selector.name),
        "namespace": selector.namespace,
        "labels": dict(spec.labels),
        "ownerReferences": [owner_reference(selector)],
    }
    if trigger_time:
        metadata["annotations"] = {ANNOTATION_TRIGGER_TIME: trigger_time}
    return {
        "apiVersion": SLICE_API_VERSION,
        "kind": "EndpointSlice",
        "metadata": metadata,
        "addressType": spec.address_type,
        "ports": [port_to_json(p) for p in spec.ports],
        "endpoints": [endpoint_to_json(ep) for ep in spec.endpoints],
    }


def slice_patch(
    selector: SelectorRecord, update: SliceUpdate, trigger_time: str | None
) -> dict[str, Any]:
    """The merge patch for a planned update: changed fields only, guarded by resourceVersion."""
    existing, spec = update.existing, update.spec
    if existing.owner is None or existing.owner.uid != selector.uid:
        raise ValueError(f"slice {existing.key} is not owned by {selector.key}; never patched")
    metadata: dict[str, Any] = {"resourceVersion": existing.resource_version}
    if update.labels_changed:
        labels: dict[str, str | None] = {
            k: v for k, v in spec.labels.items() if existing.labels.get(k) != v
        }
        labels.update({k: None for k in existing.labels if k not in spec.labels})
        metadata["labels"] = labels
    old_trigger = existing.annotations.get(ANNOTATION_TRIGGER_TIME)
    if trigger_time and trigger_time != old_trigger:
        metadata["annotations"] = {ANNOTATION_TRIGGER_TIME: trigger_time}
    elif not trigger_time and old_trigger is not None:
        metadata["annotations"] = {ANNOTATION_TRIGGER_TIME: None}
    patch: dict[str, Any] = {"metadata": metadata}
    if update.endpoints_changed:
        patch["endpoints"] = [endpoint_to_json(ep) for ep in spec.endpoints]
    if update.ports_changed:
        patch["ports"] = [port_to_json(p) for p in spec.ports]
    return patch
