"""The metadata rules a real server applies on every write, whatever the kind.

Why: the embedded server is the test oracle of a client that builds its own bodies; where it
is kinder than a real kube-apiserver, a client bug passes here and fails on a cluster. Each
test states the real answer: ``rest.BeforeUpdate`` with ``ValidateObjectMetaAccessorUpdate``
refuses a changed uid, a client-set deletionTimestamp or a finalizer added while deleting
(422); etcd3's ``store.Create`` refuses a create carrying a resourceVersion (500);
``dedupOwnerReferencesAndAddWarning`` drops duplicate ownerReferences with a Warning.
"""

from __future__ import annotations

import re
from typing import Any

from tests.sim.conftest import PODS, Raw, pod

MERGE = "application/merge-patch+json"
ES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
OTHER_UID = "22222222-2222-2222-2222-222222222222"


def es(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, **meta}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}


def cause(body: dict[str, Any]) -> tuple[str, str, str]:
    """The only cause of a 422, as (field, reason, message)."""
    assert body["reason"] == "Invalid", body
    [only] = body["details"]["causes"]
    return only["field"], only["reason"], only["message"]


async def test_a_patch_may_not_change_the_uid(raw: Raw) -> None:
    """BeforeUpdate keeps a non-empty uid from the body, so a changed one is refused; an empty
    or absent uid takes the stored one."""
    _, created, _ = await raw.request("POST", ES, es("u"))
    uid = created["metadata"]["uid"]
    code, body, _ = await raw.request("PATCH", ES + "/u", {"metadata": {"uid": OTHER_UID}},
                                      content_type=MERGE)
    assert code == 422
    assert body["message"] == (f'EndpointSlice.discovery.k8s.io "u" is invalid: metadata.uid: '
                               f'Invalid value: "{OTHER_UID}": field is immutable')
    assert cause(body) == ("metadata.uid", "FieldValueInvalid",
                           f'Invalid value: "{OTHER_UID}": field is immutable')
    for patch in ({"metadata": {"uid": None}}, {"metadata": {"uid": ""}}):
        code, body, _ = await raw.request("PATCH", ES + "/u", patch, content_type=MERGE)
        assert code == 200 and body["metadata"]["uid"] == uid, body
    put = {**created, "metadata": {**created["metadata"], "uid": "", "labels": {"a": "b"}}}
    del put["metadata"]["resourceVersion"]
    code, body, _ = await raw.request("PUT", ES + "/u", put)
    assert code == 200 and body["metadata"]["uid"] == uid and body["metadata"]["labels"]
    # a built-in's status strategy keeps the body's uid too
    await raw.request("POST", PODS, pod("p"))
    code, body, _ = await raw.request("PATCH", PODS + "/p/status",
                                      {"metadata": {"uid": OTHER_UID}}, content_type=MERGE)
    assert code == 422 and cause(body)[0] == "metadata.uid"


async def test_a_live_object_cannot_be_marked_deleted_by_a_write(raw: Raw) -> None:
    """deletionTimestamp and deletionGracePeriodSeconds come only from a DELETE."""
    await raw.request("POST", ES, es("d"))
    code, body, _ = await raw.request(
        "PATCH", ES + "/d", {"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}},
        content_type=MERGE)
    assert code == 422
    assert cause(body) == ("metadata.deletionTimestamp", "FieldValueInvalid",
                           "Invalid value: 2020-01-01 00:00:00 +0000 UTC: field is immutable")
    code, body, _ = await raw.request(
        "PATCH", ES + "/d", {"metadata": {"deletionGracePeriodSeconds": 30}},
        content_type=MERGE)
    assert code == 422
    assert cause(body) == ("metadata.deletionGracePeriodSeconds", "FieldValueInvalid",
                           "Invalid value: 30: field is immutable")
    _, stored, _ = await raw.request("GET", ES + "/d")
    assert "deletionTimestamp" not in stored["metadata"]


async def test_no_new_finalizers_while_deleting(raw: Raw) -> None:
    """A deleting object keeps its deletionTimestamp whatever the body says, and may lose
    finalizers but gain none."""
    await raw.request("POST", ES, es("f", finalizers=["example.com/x"]))
    _, deleting, _ = await raw.request("DELETE", ES + "/f")
    stamp = deleting["metadata"]["deletionTimestamp"]
    code, body, _ = await raw.request(
        "PATCH", ES + "/f", {"metadata": {"finalizers": ["example.com/x", "example.com/y",
                                                         "example.com/a"]}},
        content_type=MERGE)
    assert code == 422
    assert cause(body) == ("metadata.finalizers", "FieldValueForbidden", (
        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"example.com/a", "example.com/y"}'))
    code, body, _ = await raw.request(
        "PATCH", ES + "/f", {"metadata": {"deletionTimestamp": None, "labels": {"k": "v"}}},
        content_type=MERGE)
    assert code == 200 and body["metadata"]["deletionTimestamp"] == stamp
    code, body, _ = await raw.request("PATCH", ES + "/f", {"metadata": {"finalizers": None}},
                                      content_type=MERGE)
    assert code == 200
    assert (await raw.request("GET", ES + "/f"))[0] == 404


async def test_a_create_may_not_carry_a_resource_version(raw: Raw) -> None:
    """etcd3's store.Create refuses a parseable non-zero resourceVersion with a plain error
    (500, no reason); "0" and unparsable ones are dropped, as is any on a dry run (nothing
    reaches storage) or on a PUT that creates (GuaranteedUpdate, not Create)."""
    body = es("", generateName="rv-", resourceVersion="12345")
    del body["metadata"]["name"]
    code, answer, _ = await raw.request("POST", ES, body)
    assert code == 500
    assert answer == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": "resourceVersion should not be set on objects to be created",
                      "code": 500}
    code, listing, _ = await raw.request("GET", ES)
    assert listing["items"] == []
    for i, rv in enumerate(("0", "abc", "-1", "")):
        code, answer, _ = await raw.request("POST", ES, es(f"ok{i}", resourceVersion=rv))
        assert code == 201, (rv, answer)
    assert (await raw.request("POST", ES, es("dry", resourceVersion="7"), dryRun="All"))[0] == 201
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l", "resourceVersion": "99"}, "spec": {"holderIdentity": "a"}}
    assert (await raw.request("PUT", LEASES + "/l", lease))[0] == 201


def warnings(headers: Any) -> list[str]:
    return re.findall(r'299 - "(?:[^"\\]|\\.)*"', ", ".join(headers.getall("Warning", [])))


DEDUP = ("API server dedups owner references in 1.20+, and may reject such requests as early "
         "as 1.24; please fix your requests; duplicate UID(s) observed: ")


async def test_duplicate_owner_references_are_deduplicated(raw: Raw) -> None:
    """Entries equal to an earlier one (same uid, same fields) are dropped with a Warning: on
    create and update before admission, on a patch after it (the other wording)."""
    owners = [(await raw.request("POST", PODS, pod(name)))[1] for name in ("p", "q")]
    ref, other = ({"apiVersion": "v1", "kind": "Pod", "name": o["metadata"]["name"],
                   "uid": o["metadata"]["uid"]} for o in owners)
    code, body, headers = await raw.request("POST", ES, es("o", ownerReferences=[ref, ref, ref]))
    assert code == 201 and body["metadata"]["ownerReferences"] == [ref]
    assert warnings(headers) == [
        f'299 - ".metadata.ownerReferences contains duplicate entries; {DEDUP}{ref["uid"]}, '
        f'{ref["uid"]}"']
    code, body, headers = await raw.request(
        "PATCH", ES + "/o", {"metadata": {"ownerReferences": [ref, other, other]}},
        content_type=MERGE)
    assert code == 200 and body["metadata"]["ownerReferences"] == [ref, other]
    assert warnings(headers) == [
        '299 - ".metadata.ownerReferences contains duplicate entries after mutating admission '
        f'happens; {DEDUP}{other["uid"]}"']
    # the same uid with other fields is not a duplicate
    controlling = {**ref, "controller": True}
    code, body, headers = await raw.request(
        "PATCH", ES + "/o", {"metadata": {"ownerReferences": [ref, controlling]}},
        content_type=MERGE)
    assert code == 200 and body["metadata"]["ownerReferences"] == [ref, controlling]
    assert "Warning" not in headers


def lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {"holderIdentity": "a", **spec}}


async def test_a_lease_write_needs_a_resource_version(raw: Raw) -> None:
    """The Lease strategy allows no unconditional update, so a PUT without a resourceVersion,
    or a patch that removes it, is refused by Store.Update, which names the resource as the
    kind (the optimistic lock leader election relies on); an EndpointSlice's is allowed."""
    await raw.request("POST", LEASES, lease("l"))
    code, body, _ = await raw.request("PUT", LEASES + "/l", lease("l", holderIdentity="b"))
    assert (code, body["message"]) == (422, (
        'leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: '
        "0x0: must be specified for an update"))
    assert body["details"] == {
        "name": "l", "group": "coordination.k8s.io", "kind": "leases",
        "causes": [{"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                    "message": "Invalid value: 0x0: must be specified for an update"}]}
    for patch in ({"metadata": {"resourceVersion": None}, "spec": {"holderIdentity": "b"}},
                  {"metadata": {"resourceVersion": ""}}):
        code, body, _ = await raw.request("PATCH", LEASES + "/l", patch, content_type=MERGE)
        assert (code, body["details"]["kind"]) == (422, "leases"), body
    code, body, _ = await raw.request("GET", LEASES + "/l")
    assert body["spec"]["holderIdentity"] == "a"
    # a patch that leaves the resourceVersion alone carries the stored one
    code, body, _ = await raw.request("PATCH", LEASES + "/l", {"spec": {"holderIdentity": "b"}},
                                      content_type=MERGE)
    assert code == 200 and body["spec"]["holderIdentity"] == "b"
    await raw.request("POST", ES, es("s"))
    code, body, _ = await raw.request("PATCH", ES + "/s", {"metadata": {"resourceVersion": None,
                                                                        "labels": {"x": "y"}}},
                                      content_type=MERGE)
    assert code == 200 and body["metadata"]["labels"] == {"x": "y"}


async def test_a_lease_drops_the_fields_of_coordinated_leader_election(raw: Raw) -> None:
    """CoordinatedLeaderElection is off by default in 1.32-1.36: the strategy drops
    ``strategy`` and ``preferredHolder`` on create, and on update unless already stored."""
    code, body, _ = await raw.request("POST", LEASES, lease(
        "c", strategy="OldestEmulationVersion", preferredHolder="p"))
    assert code == 201 and body["spec"] == {"holderIdentity": "a"}
    body["spec"]["preferredHolder"] = "Bogus value"
    code, body, _ = await raw.request("PUT", LEASES + "/c", body)
    assert code == 200 and body["spec"] == {"holderIdentity": "a"}
