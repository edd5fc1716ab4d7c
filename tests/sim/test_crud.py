"""Create/get/update/patch semantics of the embedded server over real HTTPS."""

from __future__ import annotations

from slicectl.sim.objects import NAME_SUFFIX_ALPHABET
from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod

SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


def endpoint_slice(name: str) -> dict[str, object]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "labels": {"a": "1"}}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": []}


async def test_create_sets_server_metadata(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", PODS, pod("", generateName="web-"))
    assert code == 201
    meta = body["metadata"]
    assert meta["name"].startswith("web-") and len(meta["name"]) == 9
    assert set(meta["name"][4:]) <= set(NAME_SUFFIX_ALPHABET)
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 1
    assert body["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


async def test_resource_versions_increase_globally(raw: Raw) -> None:
    _, a, _ = await raw.request("POST", PODS, pod("a"))
    _, b, _ = await raw.request("POST", SLICES, endpoint_slice("s"))
    _, c, _ = await raw.request("POST", PODS, pod("c"))
    rvs = [int(x["metadata"]["resourceVersion"]) for x in (a, b, c)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_already_exists_and_not_found(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("dup"))
    code, body, _ = await raw.request("POST", PODS, pod("dup"))
    assert code == 409
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'pods "dup" already exists', "reason": "AlreadyExists",
                    "details": {"name": "dup", "kind": "pods"}, "code": 409}
    code, body, _ = await raw.request("GET", PODS + "/missing")
    assert code == 404 and body["reason"] == "NotFound"
    assert body["message"] == 'pods "missing" not found'
    code, body, _ = await raw.request("GET", SLICES + "/missing")
    assert body["details"] == {"name": "missing", "group": "discovery.k8s.io",
                               "kind": "endpointslices"}
    assert body["message"] == 'endpointslices.discovery.k8s.io "missing" not found'


async def test_stale_update_conflicts(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("p"))
    created["metadata"]["labels"] = {"v": "1"}
    code, updated, _ = await raw.request("PUT", PODS + "/p", created)
    assert code == 200 and updated["metadata"]["labels"] == {"v": "1"}
    created["metadata"]["labels"] = {"v": "2"}
    code, body, _ = await raw.request("PUT", PODS + "/p", created)
    assert code == 409 and body["reason"] == "Conflict"
    assert body["message"].startswith('Operation cannot be fulfilled on pods "p": the object')


async def test_invalid_lists_causes(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", PODS, pod(""))
    assert code == 422 and body["reason"] == "Invalid"
    assert body["details"]["kind"] == "Pod"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueRequired"


async def test_missing_namespace_and_wrong_kind(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", "/api/v1/namespaces/nope/pods", pod("x"))
    assert code == 404 and body["message"] == 'namespaces "nope" not found'
    wrong = {**pod("x"), "kind": "Service"}
    code, body, _ = await raw.request("POST", PODS, wrong)
    assert code == 400 and body["reason"] == "BadRequest"


async def test_status_subresource_split(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p"))
    code, body, _ = await raw.request(
        "PATCH", PODS + "/p", {"status": {"phase": "Running"}, "metadata": {"labels": {"a": "b"}}},
        content_type="application/merge-patch+json")
    assert code == 200
    assert body["status"]["phase"] == "Pending" and body["metadata"]["labels"] == {"a": "b"}
    code, body, _ = await raw.request(
        "PATCH", PODS + "/p/status",
        {"status": {"phase": "Running"}, "metadata": {"labels": {"a": "c"}}},
        content_type="application/merge-patch+json")
    assert code == 200
    assert body["status"]["phase"] == "Running" and body["metadata"]["labels"] == {"a": "b"}


async def test_unchanged_write_keeps_resource_version(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("p", {"a": "b"}))
    code, body, _ = await raw.request("PATCH", PODS + "/p", {"metadata": {"labels": {"a": "b"}}},
                                      content_type="application/merge-patch+json")
    assert code == 200
    assert body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_endpointslice_generation(raw: Raw) -> None:
    _, body, _ = await raw.request("POST", SLICES, endpoint_slice("s"))
    assert body["metadata"]["generation"] == 1
    merge = "application/merge-patch+json"
    _, body, _ = await raw.request("PATCH", SLICES + "/s",
                                   {"metadata": {"annotations": {"x": "y"}}}, content_type=merge)
    assert body["metadata"]["generation"] == 1
    _, body, _ = await raw.request("PATCH", SLICES + "/s", {"metadata": {"labels": {"a": "2"}}},
                                   content_type=merge)
    assert body["metadata"]["generation"] == 2
    _, body, _ = await raw.request("PATCH", SLICES + "/s",
                                   {"endpoints": [{"addresses": ["10.0.0.2"]}]},
                                   content_type=merge)
    assert body["metadata"]["generation"] == 3


async def test_delete_returns_object_or_status(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p"))
    code, body, _ = await raw.request("DELETE", PODS + "/p")
    assert code == 200 and body["kind"] == "Pod"
    _, created, _ = await raw.request("POST", SLICES, endpoint_slice("s"))
    code, body, _ = await raw.request("DELETE", SLICES + "/s")
    assert code == 200 and body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["uid"] == created["metadata"]["uid"]


async def test_delete_preconditions(raw: Raw) -> None:
    """``rest.BeforeDelete``'s wording (a real v1.32.6 server's, 2026-11-24), for a dry run
    too, whose answer is otherwise a real delete's (a Status for a type that returns no
    object); and nothing is deleted."""
    _, created, _ = await raw.request("POST", PODS, pod("p"))
    uid = created["metadata"]["uid"]
    for options in ({"preconditions": {"uid": "other"}},
                    {"preconditions": {"uid": "other"}, "dryRun": ["All"]}):
        code, body, _ = await raw.request("DELETE", PODS + "/p", options)
        assert (code, body["message"], body["details"]) == (409, (
            f'Operation cannot be fulfilled on Pod "p": the UID in the precondition (other) '
            f"does not match the UID in record ({uid}). The object might have been deleted "
            "and then recreated"), {"name": "p", "kind": "Pod"})
    stale = {"preconditions": {"resourceVersion": "1"}, "dryRun": ["All"]}
    code, body, _ = await raw.request("DELETE", PODS + "/p", stale)
    assert code == 409 and body["message"].startswith(
        'Operation cannot be fulfilled on Pod "p": the ResourceVersion in the precondition (1) '
        "does not match the ResourceVersion in record (")
    code, _, _ = await raw.request("GET", PODS + "/p")
    assert code == 200


async def test_unauthorized(srv: EmbeddedApiServer, raw: Raw) -> None:
    async with raw.session.get(srv.url + PODS, headers={"Authorization": "Bearer wrong"}) as resp:
        assert resp.status == 401
        body = await resp.json()
    assert body["reason"] == "Unauthorized" and body["code"] == 401
    async with raw.session.get(srv.url + "/version", headers={"Authorization": ""}) as resp:
        assert resp.status == 200


async def test_discovery(raw: Raw) -> None:
    code, body, _ = await raw.request("GET", "/api/v1")
    names = {r["name"] for r in body["resources"]}
    assert {"pods", "pods/status", "namespaces", "nodes", "services", "events"} <= names
    code, body, _ = await raw.request("GET", "/apis")
    groups = {g["name"] for g in body["groups"]}
    assert {"discovery.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io",
            "events.k8s.io"} <= groups
    code, body, _ = await raw.request("GET", "/openapi/v3")
    assert code == 200 and "api/v1" in body["paths"]
