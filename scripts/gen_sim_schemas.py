#!/usr/bin/env python3
"""Generate slicectl/sim/schemas/builtin.json.gz, the built-in OpenAPI schemas of the sim.

Why: the embedded API server serves OpenAPI v3 (kubectl needs it) and validates/prunes built-in
objects against the real Kubernetes schemas, but the schemas must not be a runtime dependency.
The dev dependency ``kubernetes-validate`` ships them as JSON Schema; this script extracts the
definitions reachable from the kinds the sim serves, converts the JSON-Schema-isms back to the
OpenAPI 3.0 shape kube-apiserver publishes, and writes a small committed gzip file.

Version: Kubernetes v1.32, the same minor as the kubectl the tests drive, so kubectl sees exactly
the schemas its own release was built against.

Conversions (to match a real ``/openapi/v3/apis/<gv>`` document):
- ``"type": ["string", "null"]`` -> ``"type": "string"`` (the real schemas carry no null types);
- ``"$ref": "#/$defs/X"`` -> ``"#/components/schemas/X"``, wrapped in ``allOf`` when the
  reference has sibling keys (description...), as kube-openapi does;
- IntOrString / Quantity ``oneOf`` -> ``type: string`` (+ ``format: int-or-string``);
- the synthetic ``enum`` kubernetes-validate puts on ``apiVersion`` / ``kind`` is dropped.

Usage: ``.venv/bin/python scripts/gen_sim_schemas.py``
"""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path
from typing import Any

K8S_VERSION = "v1.32.0"
OUT = Path(__file__).resolve().parent.parent / "slicectl" / "sim" / "schemas" / "builtin.json.gz"

ROOTS = [
    "io.k8s.api.core.v1.Pod",
    "io.k8s.api.core.v1.PodList",
    "io.k8s.api.core.v1.Node",
    "io.k8s.api.core.v1.NodeList",
    "io.k8s.api.core.v1.Namespace",
    "io.k8s.api.core.v1.NamespaceList",
    "io.k8s.api.core.v1.Service",
    "io.k8s.api.core.v1.ServiceList",
    "io.k8s.api.core.v1.Event",
    "io.k8s.api.core.v1.EventList",
    "io.k8s.api.events.v1.Event",
    "io.k8s.api.events.v1.EventList",
    "io.k8s.api.discovery.v1.EndpointSlice",
    "io.k8s.api.discovery.v1.EndpointSliceList",
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.coordination.v1.LeaseList",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
]

_SOURCE_REF = "#/$defs/"
_TARGET_REF = "#/components/schemas/"


def _load_source() -> dict[str, Any]:
    base = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    path = base / f"{K8S_VERSION}-local" / "_definitions.json"
    defs: dict[str, Any] = json.loads(path.read_text())["$defs"]
    return defs


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_SOURCE_REF):
            out.add(ref[len(_SOURCE_REF):])
        for key, value in node.items():
            if key != "enum":
                _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


def reachable(defs: dict[str, Any], roots: list[str]) -> list[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(defs[name], found)
        todo.extend(found - seen)
    return sorted(seen)


def convert(node: Any, *, top: bool = False) -> Any:
    """One JSON Schema node -> the OpenAPI 3.0 node kube-apiserver publishes."""
    if isinstance(node, list):
        return [convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    one_of = node.get("oneOf")
    if isinstance(one_of, list) and all(isinstance(o, dict) and "type" in o for o in one_of):
        kinds = {t for o in one_of for t in _types(o["type"])}
        out["type"] = "string"
        if "integer" in kinds:
            out["format"] = "int-or-string"
    for key, value in node.items():
        if key == "oneOf" and "type" in out:
            continue
        if key == "type":
            types = _types(value)
            if types:
                out["type"] = types[0]
        elif key == "$ref" and isinstance(value, str):
            out["$ref"] = _TARGET_REF + value[len(_SOURCE_REF):]
        elif key == "properties" and isinstance(value, dict):
            props = {k: convert(v) for k, v in value.items()}
            if top:
                for meta in ("apiVersion", "kind"):
                    if isinstance(props.get(meta), dict):
                        props[meta].pop("enum", None)
            out[key] = props
        elif key in ("enum", "default", "example", "x-kubernetes-group-version-kind"):
            out[key] = value
        else:
            out[key] = convert(value)
    if "$ref" in out and len(out) > 1:
        out["allOf"] = [{"$ref": out.pop("$ref")}]
    return out


def _types(value: Any) -> list[str]:
    if isinstance(value, str):
        return [] if value == "null" else [value]
    return [t for t in value if t != "null"]


def main() -> None:
    defs = _load_source()
    names = reachable(defs, ROOTS)
    converted = {name: convert(defs[name], top=True) for name in names}
    body = json.dumps(
        {"kubernetesVersion": K8S_VERSION, "schemas": converted},
        sort_keys=True, separators=(",", ":"),
    ).encode()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
    print(f"wrote {OUT} ({len(names)} definitions, {len(body)} bytes raw)")


if __name__ == "__main__":
    main()
