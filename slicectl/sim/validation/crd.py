"""CustomResourceDefinition validation (a practical subset of apiextensions' rules).

Why: a CRD that a real server would refuse must not become a served type here either: the
group, names, scope, versions (exactly one storage version, unique names, a schema for every
version) and the structural sanity of each ``openAPIV3Schema`` (typed object root, every
property typed unless int-or-string or preserve-unknown-fields) are checked with the
apiextensions messages.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.meta import validate_object_meta
from slicectl.sim.validation.names import dns1123_label_errors, dns1123_subdomain_errors

SCOPES = ["Cluster", "Namespaced"]


def validate_crd(obj: dict[str, Any], old: dict[str, Any] | None) -> list[e.Cause]:
    causes = validate_object_meta(obj.get("metadata"), False, dns1123_subdomain_errors)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [*causes, e.required("spec")]
    group = str(spec.get("group") or "")
    raw_names = spec.get("names")
    names: dict[str, Any] = raw_names if isinstance(raw_names, dict) else {}
    plural = str(names.get("plural") or "")
    name = str((obj.get("metadata") or {}).get("name") or "")
    if plural and group and name != f"{plural}.{group}":
        causes.append(e.invalid("metadata.name", name,
                                'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(e.required("spec.group"))
    else:
        causes.extend(e.invalid("spec.group", group, m) for m in dns1123_subdomain_errors(group))
        if "." not in group:
            causes.append(e.invalid("spec.group", group, "should be a domain with at least "
                                    "one dot"))
    causes.extend(_names(names))
    scope = spec.get("scope")
    if not scope:
        causes.append(e.required("spec.scope"))
    elif scope not in SCOPES:
        causes.append(e.not_supported("spec.scope", scope, SCOPES))
    causes.extend(_versions(spec.get("versions")))
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("group") != group:
            causes.append(e.invalid("spec.group", group, "field is immutable"))
        if old_spec.get("scope") != scope:
            causes.append(e.invalid("spec.scope", scope, "field is immutable"))
    return causes


def _names(names: dict[str, Any]) -> list[e.Cause]:
    causes: list[e.Cause] = []
    for field in ("plural", "singular"):
        value = names.get(field)
        if not value:
            if field == "plural":
                causes.append(e.required(f"spec.names.{field}"))
            continue
        causes.extend(e.invalid(f"spec.names.{field}", value, m)
                      for m in dns1123_label_errors(str(value)))
    for field in ("kind", "listKind"):
        value = names.get(field)
        if not value:
            if field == "kind":
                causes.append(e.required(f"spec.names.{field}"))
            continue
        if not str(value)[0].isalpha() or any(not c.isalnum() for c in str(value)):
            causes.append(e.invalid(f"spec.names.{field}", value, "may have mixed case, but "
                                    "should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?"))
    for i, short in enumerate(names.get("shortNames") or []):
        causes.extend(e.invalid(f"spec.names.shortNames[{i}]", short, m)
                      for m in dns1123_label_errors(str(short)))
    return causes


def _versions(versions: Any) -> list[e.Cause]:
    if not isinstance(versions, list) or not versions:
        return [e.invalid("spec.versions", versions or [], "must have exactly one version "
                          "marked as storage version")]
    causes: list[e.Cause] = []
    seen: set[str] = set()
    storage = 0
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            causes.append(e.invalid(path, version, "must be an object"))
            continue
        name = str(version.get("name") or "")
        if not name:
            causes.append(e.required(f"{path}.name"))
        else:
            causes.extend(e.invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name))
            if name in seen:
                causes.append(e.duplicate(f"{path}.name", name))
            seen.add(name)
        storage += 1 if version.get("storage") is True else 0
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        spath = f"{path}.schema.openAPIV3Schema"
        if not isinstance(schema, dict):
            causes.append(e.required(spath, "schemas are required"))
            continue
        if schema.get("type") != "object":
            causes.append(e.invalid(f"{spath}.type", schema.get("type", ""),
                                    "must be object at the root"))
        causes.extend(_structural(schema, spath))
    if storage != 1:
        causes.append(e.invalid("spec.versions", versions, "must have exactly one version "
                                "marked as storage version"))
    return causes


def _structural(schema: dict[str, Any], path: str) -> list[e.Cause]:
    causes: list[e.Cause] = []
    untyped_ok = schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields")
    if not schema.get("type") and not untyped_ok:
        causes.append(e.required(f"{path}.type", "must not be empty for specified object "
                                 "fields"))
    if schema.get("x-kubernetes-int-or-string") and schema.get("type"):
        causes.append(e.forbidden(f"{path}.type", "must be empty if "
                                  "x-kubernetes-int-or-string is true"))
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            causes.extend(_structural(sub, f"{path}.properties[{key}]"))
    if isinstance(schema.get("items"), dict):
        causes.extend(_structural(schema["items"], f"{path}.items"))
    if isinstance(schema.get("additionalProperties"), dict):
        causes.extend(_structural(schema["additionalProperties"],
                                  f"{path}.additionalProperties"))
    return causes
