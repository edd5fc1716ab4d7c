"""The set of served resource types: the built-ins plus whatever the stored CRDs define.

Decides which ``ResourceType`` answers a group/version/resource (URL routing, discovery,
OpenAPI) and turns a CustomResourceDefinition into one type per served version, with its
schema, scope, subresources and printer columns. A CRD's ``status`` gets the conditions the
apiextensions controllers would set (NamesAccepted, Established: True) and its acceptedNames
and storedVersions. ``generation`` counts changes so OpenAPI and discovery know when to rebuild.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.objects import now_timestamp
from slicectl.sim.resources import BUILTINS, storage_key
from slicectl.sim.storage import Obj, StorageKey
from slicectl.sim.types import ResourceType


class Registry:
    def __init__(self) -> None:
        self.by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self.by_storage: dict[StorageKey, ResourceType] = {}
        self.crd_types: dict[str, list[ResourceType]] = {}  # CRD name -> its served types
        self.generation = 0
        for rt in BUILTINS:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self.by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self.by_storage.setdefault(storage_key(rt), rt)
        self.generation += 1

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.by_gvr.get((group, version, plural))

    def types(self) -> list[ResourceType]:
        return list(self.by_gvr.values())

    def group_versions(self) -> dict[str, list[str]]:
        """group -> served versions, preferred first (built-in order, then CRD order)."""
        groups: dict[str, list[str]] = {}
        for rt in self.by_gvr.values():
            versions = groups.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return groups

    def install_crd(self, crd: Obj) -> list[ResourceType]:
        """Serve the CRD's versions (replacing earlier ones); return the types no longer served."""
        name = crd["metadata"]["name"]
        old = self.crd_types.pop(name, [])
        for rt in old:
            self.by_gvr.pop((rt.group, rt.version, rt.plural), None)
        new = crd_types(crd)
        self.crd_types[name] = new
        for rt in new:
            self.by_gvr[(rt.group, rt.version, rt.plural)] = rt
            self.by_storage[storage_key(rt)] = rt
        self.generation += 1
        kept = {(rt.group, rt.version, rt.plural) for rt in new}
        return [rt for rt in old if (rt.group, rt.version, rt.plural) not in kept]

    def remove_crd(self, name: str) -> list[ResourceType]:
        old = self.crd_types.pop(name, [])
        for rt in old:
            self.by_gvr.pop((rt.group, rt.version, rt.plural), None)
            self.by_storage.pop(storage_key(rt), None)
        self.generation += 1
        return old


def crd_types(crd: Obj) -> list[ResourceType]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    types: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True}
        subresources = frozenset((version.get("subresources") or {}).keys())
        types.append(ResourceType(
            group=group,
            version=version["name"],
            plural=names.get("plural", ""),
            kind=names.get("kind", ""),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or names.get("kind", "").lower(),
            short_names=tuple(names.get("shortNames") or ()),
            subresources=subresources,
            categories=tuple(names.get("categories") or ()),
            schema=schema,
            printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            extra={"crd": crd["metadata"]["name"], "storage": bool(version.get("storage")),
                   "selectable_fields": tuple(
                       str(f.get("jsonPath", "")).lstrip(".")
                       for f in version.get("selectableFields") or () if isinstance(f, dict))},
        ))
    return types


def crd_status(crd: Obj) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", names.get("kind", "").lower())
    names.setdefault("listKind", names.get("kind", "") + "List")
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    previous = (crd.get("status") or {}).get("storedVersions") or []
    now = now_timestamp()

    def condition(ctype: str, reason: str, message: str) -> dict[str, Any]:
        return {"type": ctype, "status": "True", "lastTransitionTime": now,
                "reason": reason, "message": message}

    return {
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted",
                      "the initial names have been accepted"),
        ],
        "acceptedNames": names,
        "storedVersions": list(dict.fromkeys([*previous, *stored])),
    }
