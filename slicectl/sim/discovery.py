"""Discovery documents: /api, /apis, /apis/<group>, the per group-version resource lists, /version.

Decides what clients learn about the served types: each served resource with its singular
name, scope, kind, verbs, short names and categories, plus one ``<plural>/<sub>`` entry per
subresource (``get``/``patch``/``update``), in the shapes kube-apiserver answers (the legacy,
non-aggregated form; clients asking for aggregated discovery fall back to it, as they do
against older servers).
"""

from __future__ import annotations

import platform
from typing import Any

from slicectl.sim.registry import Registry
from slicectl.sim.types import ResourceType
from slicectl.sim.validation.builtin import kubernetes_version


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in registry.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _resource(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural, "singularName": rt.singular or rt.kind.lower(),
        "namespaced": rt.namespaced, "kind": rt.kind, "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    entries = [main]
    for sub in sorted(rt.subresources):
        verbs = ["update"] if sub == "finalize" else ["get", "patch", "update"]
        entries.append({"name": f"{rt.plural}/{sub}", "singularName": "",
                        "namespaced": rt.namespaced, "kind": rt.kind, "verbs": verbs})
    return entries


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = [rt for rt in registry.types() if rt.group == group and rt.version == version]
    if not types:
        return None
    resources = [entry for rt in types for entry in _resource(rt)]
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}


def version_info() -> dict[str, str]:
    git_version = kubernetes_version()
    major, minor = git_version.lstrip("v").split(".")[:2]
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {"major": major, "minor": minor, "gitVersion": git_version,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
            "platform": f"linux/{machine}"}
