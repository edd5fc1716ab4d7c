"""Unit tests of slicectl.sim.openapi and slicectl.sim.table."""

from __future__ import annotations

from typing import Any

from slicectl.sim.openapi import OpenAPI
from slicectl.sim.table import human_duration, jsonpath, to_table
from slicectl.sim.types import ResourceType

POD = ResourceType("", "v1", "pods", "Pod", True, subresources=frozenset({"status"}),
                   definition="io.k8s.api.core.v1.Pod")
ES = ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True,
                  definition="io.k8s.api.discovery.v1.EndpointSlice")
CR = ResourceType(
    "slicectl.io", "v1alpha1", "endpointselectors", "EndpointSelector", True,
    subresources=frozenset({"status"}),
    schema={"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "selector": {"type": "object"}}}, "status": {"type": "object", "properties": {
            "endpoints": {"type": "integer"}}}}},
    printer_columns=({"name": "Endpoints", "type": "integer", "jsonPath": ".status.endpoints"},
                     {"name": "Ready", "type": "string",
                      "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}),
)


def patch_ops(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [item["patch"] for item in doc["paths"].values() if "patch" in item]


def test_index_lists_every_group_version_with_content_hash() -> None:
    api = OpenAPI([POD, ES, CR])
    paths = api.index()["paths"]
    assert set(paths) == {"api/v1", "apis/discovery.k8s.io/v1", "apis/slicectl.io/v1alpha1"}
    url = paths["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    assert len(url.split("hash=")[1]) == 128
    other = OpenAPI([POD, ES])
    assert other.index()["paths"]["api/v1"] == paths["api/v1"]
    assert api.document("apis/nope/v1") is None


def test_builtin_document_has_reachable_schemas_and_patch_metadata() -> None:
    doc = OpenAPI([POD]).document("api/v1")
    assert doc is not None
    schemas = doc["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert "io.k8s.api.discovery.v1.EndpointSlice" not in schemas
    for schema in schemas.values():
        assert not isinstance(schema.get("type"), list)
    ops = patch_ops(doc)
    assert ops and all("fieldValidation" in [p["name"] for p in op["parameters"]] for op in ops)
    assert all("application/strategic-merge-patch+json" in op["requestBody"]["content"]
               for op in ops)


def test_custom_resource_document_wraps_schema() -> None:
    doc = OpenAPI([CR]).document("apis/slicectl.io/v1alpha1")
    assert doc is not None
    schema = doc["components"]["schemas"]["io.slicectl.v1alpha1.EndpointSelector"]
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert "spec" in schema["properties"] and "kind" in schema["properties"]
    assert schema["x-kubernetes-group-version-kind"][0]["kind"] == "EndpointSelector"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in doc["components"]["schemas"]
    ops = patch_ops(doc)
    assert ops and all("application/strategic-merge-patch+json" not in op["requestBody"]["content"]
                       for op in ops)
    assert CR.schema is not None and "metadata" not in CR.schema["properties"]


def test_tables() -> None:
    pod = {"metadata": {"name": "p", "creationTimestamp": "2020-01-01T00:00:00Z"},
           "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
           "status": {"phase": "Running", "containerStatuses": [
               {"ready": True, "restartCount": 2}, {"ready": False, "restartCount": 1}]}}
    table = to_table(POD, [pod], {"resourceVersion": "5"})
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name", "Ready", "Status", "Restarts", "Age"]
    assert table["rows"][0]["cells"][:4] == ["p", "1/2", "Running", 3]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert "object" not in to_table(POD, [pod], {}, "None")["rows"][0]
    es = {"metadata": {"name": "s"}, "addressType": "IPv4", "ports": [{"port": 80}],
          "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(5)]}
    cells = to_table(ES, [es], {})["rows"][0]["cells"]
    assert cells[:4] == ["s", "IPv4", "80", "10.0.0.0,10.0.0.1,10.0.0.2 + 2 more..."]
    cr = {"metadata": {"name": "e"}, "status": {"endpoints": 4, "conditions": [
        {"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}}
    table = to_table(CR, [cr], {}, "Object")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Endpoints", "Ready"]
    assert table["rows"][0]["cells"] == ["e", 4, "True"]
    assert table["rows"][0]["object"] is cr


def test_human_duration_and_jsonpath() -> None:
    assert [human_duration(s) for s in (5, 150, 3600 * 3, 86400 * 3)] == [
        "5s", "2m30s", "3h", "3d"]
    assert jsonpath({"a": {"b": [1, 2]}}, ".a.b[1]") == [2]
    assert jsonpath({"a": 1}, ".missing") == []
