"""managedFields as a real server writes them, in every representation it serves."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from slicectl.sim import managed
from tests.sim.conftest import PODS, Raw, pod

MERGE = "application/merge-patch+json"
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = obj["metadata"]["managedFields"]
    return entries


async def test_create_records_every_field_set_by_the_manager(raw: Raw) -> None:
    code, created, _ = await raw.request("POST", PODS, pod("p", {"app": "a"}),
                                         fieldManager="tester")
    assert code == 201
    [entry] = _entries(created)
    assert entry["manager"] == "tester" and entry["operation"] == "Update"
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["time"].endswith("Z") and "subresource" not in entry
    fields = entry["fieldsV1"]
    assert fields["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    container = fields["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert "." in container and "f:image" in container
    assert "f:terminationMessagePath" in container  # defaults are the creator's too
    assert "f:status" not in fields and "f:name" not in fields["f:metadata"]


async def test_manager_defaults_to_the_user_agent_prefix(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("p"))
    assert _entries(created)[0]["manager"] == "Python"  # aiohttp: "Python/3.x aiohttp/..."


async def test_updates_move_ownership_and_status_is_a_subresource(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p", {"app": "a", "keep": "k"}), fieldManager="maker")
    code, patched, _ = await raw.request(
        "PATCH", PODS + "/p", {"metadata": {"labels": {"app": "b"}}}, content_type=MERGE,
        fieldManager="relabeler")
    assert code == 200
    by_manager = {e["manager"]: e for e in _entries(patched)}
    assert by_manager["relabeler"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:app": {}}}}
    maker_labels = by_manager["maker"]["fieldsV1"]["f:metadata"]["f:labels"]
    assert "f:app" not in maker_labels and "f:keep" in maker_labels
    code, status, _ = await raw.request("PATCH", PODS + "/p/status",
                                        {"status": {"phase": "Running"}}, content_type=MERGE,
                                        fieldManager="kubelet")
    kubelet = next(e for e in _entries(status) if e["manager"] == "kubelet")
    assert kubelet["subresource"] == "status"
    assert kubelet["fieldsV1"] == {"f:status": {"f:phase": {}}}


async def test_no_op_write_keeps_managed_fields_and_resource_version(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("p", {"app": "a"}))
    _, again, _ = await raw.request("PATCH", PODS + "/p", {"metadata": {"labels": {"app": "a"}}},
                                    content_type=MERGE, fieldManager="someone-else")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == created["metadata"]["managedFields"]


async def test_a_write_that_changes_only_managed_fields_times_is_a_no_op(
    raw: Raw, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real server's IgnoreManagedFieldsTimestampsTransformer: the second PUT of ``[]`` to an
    EndpointSlice stores what the first stored (null lists, same owners), so it keeps the
    resourceVersion and the entry's time even when a second has passed between the two."""
    seconds = itertools.count()
    monkeypatch.setattr(managed, "now_timestamp",
                        lambda: f"2026-01-01T00:00:{next(seconds):02d}Z")
    slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    await raw.request("POST", slices, {"apiVersion": "discovery.k8s.io/v1",
                                       "kind": "EndpointSlice", "metadata": {"name": "s"},
                                       "addressType": "IPv4"})
    answers = []
    for _ in range(2):
        _, got, _ = await raw.request("GET", slices + "/s")
        code, put, _ = await raw.request("PUT", slices + "/s",
                                         {**got, "endpoints": [], "ports": []})
        assert code == 200, put
        answers.append(put["metadata"])
    assert answers[1]["resourceVersion"] == answers[0]["resourceVersion"]
    assert answers[1]["managedFields"] == answers[0]["managedFields"]


async def test_lists_watches_and_metadata_only_reads_carry_them(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p"))
    _, listed, _ = await raw.request("GET", PODS)
    assert listed["items"][0]["metadata"]["managedFields"]
    events = await raw.watch_lines(PODS, 1)
    assert events[0]["object"]["metadata"]["managedFields"]
    async with raw.session.get(raw.srv.url + PODS + "/p", headers={"Accept": META}) as resp:
        partial = await resp.json()
    assert partial["kind"] == "PartialObjectMetadata" and partial["metadata"]["managedFields"]


async def test_field_manager_is_validated_and_required_for_apply(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", PODS, pod("p"), fieldManager="m" * 129)
    assert code == 422 and body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more '
        "than 128 bytes")
    await raw.request("POST", PODS, pod("p"))
    code, body, _ = await raw.request("PATCH", PODS + "/p", b"metadata:\n  labels: {a: b}\n",
                                      content_type="application/apply-patch+yaml")
    assert code == 422 and body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
        "for apply patch")
    code, applied, _ = await raw.request("PATCH", PODS + "/p",
                                         b"apiVersion: v1\nkind: Pod\n"
                                         b"metadata:\n  labels: {a: b}\n",
                                         content_type="application/apply-patch+yaml",
                                         fieldManager="applier")
    assert code == 200
    entry = next(e for e in _entries(applied) if e["manager"] == "applier")
    assert entry["operation"] == "Apply"


async def test_apply_creates_an_object_that_does_not_exist(raw: Raw) -> None:
    """Server-side apply creates (patch.go sets forceAllowCreate for apply patches, and
    answers 201 when it did), so `kubectl apply --server-side` of a new object works; other
    patches of a missing object, and an apply to a missing object's status, are 404s."""
    doc = (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: fresh\n  labels: {app: a}\n"
           b"spec:\n  containers:\n  - {name: c, image: i}\n")
    code, _, _ = await raw.request("PATCH", PODS + "/fresh", {"metadata": {}},
                                   content_type=MERGE)
    assert code == 404
    code, _, _ = await raw.request("PATCH", PODS + "/fresh/status", doc,
                                   content_type="application/apply-patch+yaml",
                                   fieldManager="applier")
    assert code == 404
    code, created, _ = await raw.request("PATCH", PODS + "/fresh", doc,
                                         content_type="application/apply-patch+yaml",
                                         fieldManager="applier")
    assert code == 201, created
    assert created["metadata"]["labels"] == {"app": "a"} and created["metadata"]["uid"]
    [entry] = _entries(created)
    assert entry["manager"] == "applier" and entry["operation"] == "Apply"
    code, again, _ = await raw.request("PATCH", PODS + "/fresh", doc,
                                       content_type="application/apply-patch+yaml",
                                       fieldManager="applier")
    assert code == 200 and again["metadata"]["uid"] == created["metadata"]["uid"]


async def test_owner_references_are_atomic_items_of_a_keyed_list(raw: Raw) -> None:
    """kube-apiserver v1.32.6 answered a Lease created with one owner reference with
    ``{"f:ownerReferences": {".": {}, "k:{\\"uid\\":...}": {}}}``: OwnerReference is
    ``+structType=atomic``, so an item is one field, and the keyed list carries ``"."``."""
    uid = "11111111-1111-1111-1111-111111111111"
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": uid, "controller": True}
    code, created, _ = await raw.request("POST", PODS, pod("p", ownerReferences=[ref]))
    assert code == 201
    [entry] = _entries(created)
    assert entry["fieldsV1"]["f:metadata"]["f:ownerReferences"] == {
        ".": {}, f'k:{{"uid":"{uid}"}}': {}}
