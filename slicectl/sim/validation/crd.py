"""CustomResourceDefinition validation (a practical subset of apiextensions' rules).

Why: a CRD that a real server would refuse must not become a served type here either: the
group, names, scope, versions (exactly one storage version, unique names, a schema for every
version), the structural sanity of each ``openAPIV3Schema`` (typed object root, every
property typed unless int-or-string or preserve-unknown-fields, list-map keys required or
defaulted) and the CEL cost budget of its ``x-kubernetes-validations``
(:mod:`slicectl.sim.validation.cel_budget`) are checked with the apiextensions messages.

Paths: a real server hoists a schema shared by every version to ``spec.validation`` before it
validates, so the schema errors of such a CRD (structural and cost) name
``spec.validation.openAPIV3Schema``; a CRD whose versions differ gets
``spec.versions[i].schema.openAPIV3Schema``.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.cel_budget import budget_causes
from slicectl.sim.validation.listtype import schema_nodes
from slicectl.sim.validation.meta import validate_object_meta
from slicectl.sim.validation.names import dns1123_label_errors, dns1123_subdomain_errors
from slicectl.sim.validation.schema import default_errors

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
    version_causes = _versions(spec.get("versions"))
    causes.extend(version_causes)
    if not version_causes:  # defaults are checked, CEL compiled and costed, in a valid
        causes.extend(_defaults(spec))  # structural schema only
        causes.extend(_budget(spec, (old or {}).get("spec")))
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
        if not isinstance(_schema_of(version), dict):
            causes.append(e.required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
    for spath, _, schema in _schemas(versions):
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
    for where, node in schema_nodes(schema, path):
        untyped_ok = node.get("x-kubernetes-int-or-string") or node.get(
            "x-kubernetes-preserve-unknown-fields")
        if not node.get("type") and not untyped_ok:
            causes.append(e.required(f"{where}.type", "must not be empty for specified object "
                                     "fields"))
        if node.get("x-kubernetes-int-or-string") and node.get("type"):
            causes.append(e.forbidden(f"{where}.type", "must be empty if "
                                      "x-kubernetes-int-or-string is true"))
        causes.extend(_list_map(node, where))
        causes.extend(_rule_fields(node, where))
    return causes


def _list_map(schema: dict[str, Any], path: str) -> list[e.Cause]:
    """x-kubernetes-list-type map: keys are scalar item properties, required or defaulted."""
    list_type, keys = schema.get("x-kubernetes-list-type"), schema.get(
        "x-kubernetes-list-map-keys") or []
    why = "must be map if x-kubernetes-list-map-keys is non-empty"
    if keys and list_type is None:
        return [e.required(f"{path}.x-kubernetes-list-type", why)]
    if keys and list_type != "map":
        return [e.invalid(f"{path}.x-kubernetes-list-type", list_type, why)]
    if list_type != "map":
        return []
    if not keys:
        return [e.required(f"{path}.x-kubernetes-list-map-keys",
                           "must not be empty if x-kubernetes-list-type is map")]
    items = schema.get("items")
    if not isinstance(items, dict) or items.get("type") != "object":
        return [e.invalid(f"{path}.items.type", (items or {}).get("type", ""),
                          "must be object if parent array's x-kubernetes-list-type is map")]
    causes: list[e.Cause] = []
    props, required = items.get("properties") or {}, set(items.get("required") or [])
    for key in keys:
        prop = props.get(key)
        where = f"{path}.items.properties[{key}]"
        if not isinstance(prop, dict):
            causes.append(e.invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                    "entries must all be names of item properties"))
        elif prop.get("type") in ("array", "object"):
            causes.append(e.invalid(f"{where}.type", prop["type"], "must be a scalar type if "
                                    "parent array's x-kubernetes-list-type is map"))
        elif key not in required and "default" not in prop:
            causes.append(e.required(f"{where}.default", "this property is in "
                                     "x-kubernetes-list-map-keys, so it must have a default "
                                     "or be a required property"))
    return causes


def _rule_fields(schema: dict[str, Any], path: str) -> list[e.Cause]:
    """The non-CEL checks of each x-kubernetes-validations entry."""
    causes: list[e.Cause] = []
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        where = f"{path}.x-kubernetes-validations[{i}]"
        text = rule.get("rule") if isinstance(rule, dict) else None
        message = rule.get("message") if isinstance(rule, dict) else None
        if not isinstance(text, str) or not text.strip():
            causes.append(e.required(f"{where}.rule", "rule is not specified"))
        elif isinstance(message, str) and message and not message.strip():
            causes.append(e.invalid(f"{where}.message", message,
                                    "message must be non-empty if specified"))
        elif isinstance(message, str) and any(c in message.strip() for c in "\r\n"):
            causes.append(e.invalid(f"{where}.message", message,
                                    "message must not contain line breaks"))
        elif any(c in text.strip() for c in "\r\n") and not (message or "").strip():
            causes.append(e.required(f"{where}.message",
                                     "message must be specified if rule contains line breaks"))
    return causes


def _schema_of(version: Any) -> Any:
    return ((version.get("schema") or {}) if isinstance(version, dict) else {}).get(
        "openAPIV3Schema")


def _schemas(versions: list[Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(path, version, schema) of each schema to check: one ``spec.validation`` schema when
    every version has the same (a real server hoists it there), else one per version."""
    found = [(i, v, _schema_of(v)) for i, v in enumerate(versions)
             if isinstance(v, dict) and isinstance(_schema_of(v), dict)]
    if found and len(found) == len(versions) and all(s == found[0][2] for _, _, s in found):
        return [("spec.validation.openAPIV3Schema", found[0][1], found[0][2])]
    return [(f"spec.versions[{i}].schema.openAPIV3Schema", v, s) for i, v, s in found]


def _defaults(spec: dict[str, Any]) -> list[e.Cause]:
    """Every ``default`` outside ``metadata`` must validate against its own node's schema."""
    return [cause for root, _, schema in _schemas(spec.get("versions") or [])
            for where, node in schema_nodes(schema, root)
            if "default" in node and not where.startswith(f"{root}.properties[metadata]")
            for cause in default_errors(node["default"], node, f"{where}.default")]


def _budget(spec: dict[str, Any], old_spec: Any) -> list[e.Cause]:
    """CEL cost causes; per-rule limits are waived for a version whose schema is unchanged."""
    old_schemas = {v.get("name"): _schema_of(v) for v in
                   ((old_spec or {}).get("versions") or []) if isinstance(v, dict)}
    causes: list[e.Cause] = []
    for path, version, schema in _schemas(spec.get("versions") or []):
        name = version.get("name")
        unchanged = name in old_schemas and old_schemas[name] == schema
        causes.extend(budget_causes(schema, path, unchanged))
    return causes
