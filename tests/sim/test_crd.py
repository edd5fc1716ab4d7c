"""CustomResourceDefinitions: served on create, status subresource, generation, removal."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.sim.conftest import Raw

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
MERGE = "application/merge-patch+json"


def crd(scope: str = "Namespaced") -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": scope,
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema},
                               "subresources": {"status": {}}}]},
    }


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": 1}, "status": {"ready": True}}


async def test_crd_lifecycle(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", CRDS, crd())
    assert code == 201
    conditions = {c["type"]: c["status"] for c in body["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    code, listing, _ = await raw.request("GET", "/apis/example.com/v1")
    assert code == 200 and {r["name"] for r in listing["resources"]} == {"widgets",
                                                                       "widgets/status"}
    code, body, _ = await raw.request("POST", WIDGETS, widget("w"))
    assert code == 201 and "status" not in body and body["metadata"]["generation"] == 1
    _, body, _ = await raw.request("PATCH", WIDGETS + "/w/status", {"status": {"ready": True}},
                                   content_type=MERGE)
    assert body["status"] == {"ready": True} and body["metadata"]["generation"] == 1
    _, body, _ = await raw.request("PATCH", WIDGETS + "/w", {"spec": {"size": 2}},
                                   content_type=MERGE)
    assert body["metadata"]["generation"] == 2
    _, body, _ = await raw.request("PATCH", WIDGETS + "/w",
                                   {"metadata": {"labels": {"a": "b"}}}, content_type=MERGE)
    assert body["metadata"]["generation"] == 2
    code, body, _ = await raw.request("PATCH", WIDGETS + "/w", {"spec": {"size": 3}},
                                      content_type="application/strategic-merge-patch+json")
    assert code == 415
    stale = {**widget("w"), "metadata": {"name": "w", "resourceVersion": "1"}}
    code, body, _ = await raw.request("PUT", WIDGETS + "/w", stale)
    assert code == 409
    code, _, _ = await raw.request("DELETE", CRDS + "/widgets.example.com")
    assert code == 200
    code, _, _ = await raw.request("GET", WIDGETS + "/w")
    assert code == 404
    code, _, _ = await raw.request("GET", "/apis/example.com/v1")
    assert code == 404


async def test_cluster_scoped_custom_resource(raw: Raw) -> None:
    await raw.request("POST", CRDS, crd("Cluster"))
    code, body, _ = await raw.request("POST", "/apis/example.com/v1/widgets", widget("c"))
    assert code == 201 and "namespace" not in body["metadata"]
    code, listed, _ = await raw.request("GET", "/apis/example.com/v1/widgets")
    assert [w["metadata"]["name"] for w in listed["items"]] == ["c"]
    code, index, _ = await raw.request("GET", "/openapi/v3")
    assert "apis/example.com/v1" in index["paths"]


async def test_a_default_must_validate_against_its_own_schema(raw: Raw) -> None:
    """ValidateDefaults: a default of the wrong type, one with a field pruning would drop, or
    one its node's CEL rule refuses makes the CRD invalid; good defaults pass."""
    def with_spec(props: dict[str, Any]) -> dict[str, Any]:
        body = crd()
        body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
            "type": "object", "properties": props}
        return body

    where = "spec.validation.openAPIV3Schema.properties[spec].properties"
    bad: list[tuple[dict[str, Any], str, str]] = [
        ({"n": {"type": "integer", "default": "x"}}, f"{where}[n].default",
         "FieldValueTypeInvalid"),
        ({"o": {"type": "object", "properties": {"a": {"type": "string"}},
                "default": {"a": "x", "b": 1}}}, f"{where}[o].default", "FieldValueInvalid"),
        ({"m": {"type": "integer", "default": 20, "x-kubernetes-validations": [
            {"rule": "self < 10", "message": "too big"}]}}, f"{where}[m].default",
         "FieldValueInvalid"),
        ({"l": {"type": "array", "items": {"type": "string", "format": "uuid",
                                           "default": "nope"}}},
         f"{where}[l].items.default", "FieldValueTypeInvalid"),
    ]
    for props, field, reason in bad:
        code, body, _ = await raw.request("POST", CRDS, with_spec(props), dryRun="All")
        assert code == 422, body
        assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [
            (field, reason)], body
    good = {"n": {"type": "integer", "default": 3},
            "o": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                  "default": {"b": 1}},
            "m": {"type": "integer", "default": 5, "x-kubernetes-validations": [
                {"rule": "self < 10"}]}}
    code, body, _ = await raw.request("POST", CRDS, with_spec(good), dryRun="All")
    assert code == 201, body


async def test_deleting_the_crd_ends_the_watches_of_its_resources(raw: Raw) -> None:
    """On a real kube-apiserver v1.32.6 (2026-11-28) a watch of the custom resources ended a
    second after their CRD's deletion, its custom resources' DELETED events sent first (the
    CRD's storage, and its watch cache, are torn down); it stayed open here, sending bookmarks
    of a resource that no longer existed until its timeout."""
    await raw.request("POST", CRDS, crd())
    _, created, _ = await raw.request("POST", WIDGETS, widget("w"))
    rv = created["metadata"]["resourceVersion"]

    async def delete_crd() -> None:
        await asyncio.sleep(0.3)
        code, _, _ = await raw.request("DELETE", CRDS + "/widgets.example.com")
        assert code == 200

    deleting = asyncio.create_task(delete_crd())
    # the stream must end by itself: watch_lines gives up (fails) after 10 s, long before
    # the watch's own timeout
    events = await raw.watch_lines(WIDGETS, 1000, resourceVersion=rv, allowWatchBookmarks=True,
                                   timeoutSeconds=300)
    await deleting
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events
            if e["type"] != "BOOKMARK"] == [("DELETED", "w")]
