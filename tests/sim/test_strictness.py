"""Writes a real server refuses or treats differently: generated names, pod spec immutability,
renames, the pod IP fields' v1 conversion, when an EndpointSlice's generation moves, values of
the wrong type, request options, the request body limit and etcd's, v1 EndpointSlice topology
and a custom resource's kind."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from slicectl.sim.objects import NAME_SUFFIX_ALPHABET
from tests.sim.conftest import PODS, Raw, pod
from tests.sim.test_crd import CRDS, WIDGETS, crd, widget

MERGE = "application/merge-patch+json"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


async def test_generate_name_is_cut_to_58_plus_5(raw: Raw) -> None:
    body = pod("")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "x" * 62 + "-"
    code, created, _ = await raw.request("POST", PODS, body)
    assert code == 201
    name = created["metadata"]["name"]
    assert len(name) == 63 and name[:58] == "x" * 58
    assert set(name[58:]) <= set(NAME_SUFFIX_ALPHABET)


async def test_pod_spec_is_immutable_but_images_may_change(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p", node="node-a"))
    code, body, _ = await raw.request("PATCH", PODS + "/p", {"spec": {"nodeName": "node-b"}},
                                      content_type=MERGE)
    assert code == 422 and body["reason"] == "Invalid"
    cause = body["details"]["causes"][0]
    assert cause["field"] == "spec" and cause["reason"] == "FieldValueForbidden"
    assert cause["message"].startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow "
        "it to be set to 1 if it was previously negative)\n")
    assert "nodeName" in cause["message"]
    code, body, _ = await raw.request("GET", PODS + "/p")
    spec = body["spec"]
    spec["containers"][0]["image"] = "nginx:2"
    spec["activeDeadlineSeconds"] = 30
    spec["tolerations"] = [{"key": "k", "operator": "Exists"}]
    code, updated, _ = await raw.request("PUT", PODS + "/p", body)
    assert code == 200 and updated["spec"]["containers"][0]["image"] == "nginx:2"
    more: dict[str, Any] = dict(updated)
    more["spec"] = {**updated["spec"], "containers": [*updated["spec"]["containers"],
                                                      {"name": "d", "image": "busybox"}]}
    code, body, _ = await raw.request("PUT", PODS + "/p", more)
    assert code == 422
    assert body["details"]["causes"][0]["message"] == (
        "Forbidden: pod updates may not add or remove containers")
    raised = {**updated, "spec": {**updated["spec"], "activeDeadlineSeconds": 60}}
    code, body, _ = await raw.request("PUT", PODS + "/p", raised)
    assert code == 422 and "must be less than or equal to previous value" in body["message"]


async def test_status_writes_are_not_spec_updates(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p", node="node-a"))
    code, _, _ = await raw.request("PATCH", PODS + "/p/status", {"status": {"phase": "Running"}},
                                   content_type=MERGE)
    assert code == 200


async def test_pod_ip_fields_go_through_the_v1_conversion(raw: Raw) -> None:
    """podIP alone becomes podIPs; a podIP that disagrees with podIPs[0] wins; podIP is
    given back as podIPs[0] (Convert_v1_PodStatus_To_core_PodStatus and back)."""
    await raw.request("POST", PODS, pod("p", node="node-a"))

    async def status(patch: dict[str, Any]) -> dict[str, Any]:
        code, body, _ = await raw.request("PATCH", PODS + "/p/status", {"status": patch},
                                          content_type=MERGE)
        assert code == 200, body
        got: dict[str, Any] = body["status"]
        return got

    got = await status({"podIP": "10.0.0.9", "hostIP": "192.168.0.2"})
    assert got["podIPs"] == [{"ip": "10.0.0.9"}] and got["hostIPs"] == [{"ip": "192.168.0.2"}]
    got = await status({"podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]})
    assert got["podIPs"] == [{"ip": "10.0.0.9"}]  # the stored podIP disagreed, and won
    got = await status({"podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]})
    assert got["podIPs"] == [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}] and got["podIP"] == "10.0.0.7"
    _, body, _ = await raw.request("GET", PODS + "/p")
    assert body["status"]["podIPs"][1] == {"ip": "fd00::7"}


async def test_patch_or_put_that_renames_is_400(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p"))
    code, body, _ = await raw.request("PATCH", PODS + "/p", {"metadata": {"name": "q"}},
                                      content_type=MERGE)
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "the name of the object (q) does not match the name on the URL (p)"
    _, current, _ = await raw.request("GET", PODS + "/p")
    current["metadata"]["namespace"] = "other"
    code, body, _ = await raw.request("PUT", PODS + "/p", current)
    assert code == 400 and body["message"] == (
        "the namespace of the object (other) does not match the namespace on the request "
        "(default)")


def _slice(**extra: Any) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "s", "labels": {"a": "1"}}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}], **extra}


async def test_endpointslice_generation_moves_only_as_the_strategy_says(raw: Raw) -> None:
    code, created, _ = await raw.request("POST", SLICES, _slice())
    assert code == 201 and created["metadata"]["generation"] == 1

    async def generation_after(patch: dict[str, Any]) -> int:
        code, body, _ = await raw.request("PATCH", SLICES + "/s", patch, content_type=MERGE)
        assert code == 200, body
        generation: int = body["metadata"]["generation"]
        return generation

    assert await generation_after({"metadata": {"annotations": {"x": "y"}}}) == 1
    assert await generation_after({"metadata": {"labels": {"a": "2"}}}) == 2
    assert await generation_after({"endpoints": [{"addresses": ["10.0.0.2"]}]}) == 3
    assert await generation_after({"ports": []}) == 3  # [] is no change from unset


ES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def endpointslice(name: str, endpoint: dict[str, Any],
                  **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, **meta}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], **endpoint}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}


@pytest.mark.parametrize(("path", "body"), [
    (ES, endpointslice("a", {"conditions": {"ready": "yes"}})),
    (ES, endpointslice("b", {"hostname": 5})),
    (ES, endpointslice("c", {"nodeName": 123})),
    (ES, endpointslice("d", {"targetRef": "pod/x"})),
    (ES, endpointslice("e", {}, annotations={"a": 5})),
    (ES, {**endpointslice("f", {}), "ports": [{"name": "http", "port": 80.5}]}),
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"renewTime": "2026-01-01T00:00:00Z"}}),
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"acquireTime": "2026-01-01T00:00:00.123Z"}}),
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"holderIdentity": 5}}),
    # an int32 out of range, and times of the right shape that Go's time.Parse refuses
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 2**31}}),
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"renewTime": "2024-13-01T10:00:00.000000Z"}}),
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"renewTime": "2024-02-30T10:00:00.000000Z"}}),
    (LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
              "metadata": {"name": "l"}, "spec": {"acquireTime": "2024-02-01T10:00:60.000000Z"}}),
    (PODS, {**pod("t"), "status": {"startTime": "2024-02-01T25:00:00Z"}}),
    # Go's RFC 3339 layout takes an upper-case T and Z only (RFC 3339 allows either case)
    (PODS, {**pod("u"), "status": {"startTime": "2024-02-01t10:00:00Z"}}),
    (PODS, {**pod("v"), "status": {"startTime": "2024-02-01T10:00:00z"}}),
])
async def test_built_in_values_of_the_wrong_type_are_400(raw: Raw, path: str,
                                                          body: dict[str, Any]) -> None:
    """The body is decoded into its Go struct first: a wrong JSON type, or a MicroTime
    without exactly six fraction digits, is a decode error (400), never stored."""
    code, answer, _ = await raw.request("POST", path, body)
    assert code == 400, answer
    assert "cannot be handled as a" in answer["message"]
    assert (await raw.request("GET", f"{path}/{body['metadata']['name']}"))[0] == 404


async def test_a_patched_object_that_does_not_decode_is_422(raw: Raw) -> None:
    """patch.go decodes the patched JSON into the Go struct: a failure is an Invalid of the
    field ``patch`` (a body's is a 400)."""
    await raw.request("POST", ES, endpointslice("p", {}))
    code, answer, _ = await raw.request("PATCH", ES + "/p", {"endpoints": [
        {"addresses": ["10.0.0.1"], "conditions": {"ready": "yes"}}]}, content_type=MERGE)
    assert (code, answer["reason"]) == (422, "Invalid")
    [cause] = answer["details"]["causes"]
    assert cause["field"] == "patch" and cause["message"].endswith(
        "json: cannot unmarshal string into Go struct field endpoints[0].conditions.ready of "
        "type bool")


async def test_int32_overflow_names_the_literal(raw: Raw) -> None:
    code, answer, _ = await raw.request("POST", LEASES, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"leaseDurationSeconds": 2**31}})
    assert (code, answer["message"]) == (400, (
        'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number '
        "2147483648 into Go struct field spec.leaseDurationSeconds of type int32"))
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "m"},
            "spec": {"leaseDurationSeconds": 2**31 - 1, "leaseTransitions": 0}}
    assert (await raw.request("POST", LEASES, body))[0] == 201


async def test_timestamps_come_back_as_go_encodes_them(raw: Raw) -> None:
    """time.Time is kept in UTC and re-encoded: MicroTime with six digits, Time in whole
    seconds, the zero time as null."""
    code, body, _ = await raw.request("POST", LEASES, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "t"},
        "spec": {"renewTime": "2024-05-01T10:00:00.123456+02:00",
                 "acquireTime": "0001-01-01T00:00:00.000000Z"}})
    assert code == 201, body
    assert body["spec"] == {"renewTime": "2024-05-01T08:00:00.123456Z", "acquireTime": None}
    await raw.request("POST", PODS, pod("t"))
    code, body, _ = await raw.request("PATCH", PODS + "/t/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True",
         "lastTransitionTime": "2024-05-01T00:30:00.75-01:30"}]}}, content_type=MERGE)
    assert code == 200, body
    [ready] = [c for c in body["status"]["conditions"] if c["type"] == "Ready"]
    assert ready["lastTransitionTime"] == "2024-05-01T02:00:00Z"
    code, again, _ = await raw.request("GET", PODS + "/t")
    assert again["status"] == body["status"]


async def test_the_decoders_leniency_is_kept(raw: Raw) -> None:
    """null is the zero value, a Quantity may be a number, IntOrString either, and a Time
    any RFC 3339 form."""
    body = pod("q")
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 1, "memory": "64Mi"}}
    body["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"port": 8080, "path": None}}
    assert (await raw.request("POST", PODS, body))[0] == 201
    code, answer, _ = await raw.request("PATCH", PODS + "/q/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
        content_type=MERGE)
    assert code == 200, answer
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "m"},
             "spec": {"renewTime": "2026-01-01T00:00:00.123456Z", "leaseTransitions": 0}}
    assert (await raw.request("POST", LEASES, lease))[0] == 201


async def test_lease_transitions_may_not_be_negative(raw: Raw) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n"},
             "spec": {"holderIdentity": "a", "leaseTransitions": -1}}
    code, answer, _ = await raw.request("POST", LEASES, lease)
    assert code == 422 and answer["details"]["causes"][0]["field"] == "spec.leaseTransitions"


async def test_a_put_bodys_uid_is_a_precondition(raw: Raw) -> None:
    """The uid in a PUT body must be the stored object's: another object of the same name is
    a 409, and so is a Lease deleted meanwhile (a PUT re-creates a missing Lease only when
    the body names no uid)."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "u"},
             "spec": {"holderIdentity": "a"}}
    _, created, _ = await raw.request("POST", LEASES, lease)
    other = {**created, "metadata": {**created["metadata"], "uid": "1111-other"}}
    code, answer, _ = await raw.request("PUT", LEASES + "/u", other)
    assert code == 409 and "Precondition failed: UID in precondition: 1111-other" in (
        answer["message"])
    await raw.request("DELETE", LEASES + "/u")
    code, answer, _ = await raw.request("PUT", LEASES + "/u", created)
    assert code == 409 and "UID in object meta: " in answer["message"]
    assert (await raw.request("GET", LEASES + "/u"))[0] == 404
    assert (await raw.request("PUT", LEASES + "/u", lease))[0] == 201


def _options_invalid(kind: str, causes: list[dict[str, str]]) -> dict[str, Any]:
    texts = [f"{c['field']}: {c['message']}" for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{kind}.meta.k8s.io "" is invalid: {summary}', "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": kind, "causes": causes}, "code": 422}


DRY_RUN_BOGUS = {"reason": "FieldValueNotSupported", "field": "dryRun",
                 "message": 'Unsupported value: []string{"Bogus"}: supported values: "All"'}


async def test_write_options_are_validated_first(raw: Raw) -> None:
    """ValidateCreate/Update/PatchOptions run before the body is looked at: an unknown dryRun
    or fieldValidation value, or force on a non-apply patch, is a 422 and nothing is written."""
    code, body, _ = await raw.request("POST", SLICES, _slice(), dryRun="Bogus")
    assert (code, body) == (422, _options_invalid("CreateOptions", [DRY_RUN_BOGUS]))
    assert (await raw.request("GET", SLICES + "/s"))[0] == 404
    code, body, _ = await raw.request("POST", SLICES, _slice(), fieldValidation="Bogus")
    assert (code, body) == (422, _options_invalid("CreateOptions", [{
        "reason": "FieldValueNotSupported", "field": "fieldValidation",
        "message": 'Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", '
                   '"Warn"'}]))
    assert (await raw.request("POST", SLICES, _slice(), dryRun="All"))[0] == 201
    assert (await raw.request("GET", SLICES + "/s"))[0] == 404  # a valid dry run stores nothing
    code, created, _ = await raw.request("POST", SLICES, _slice(), fieldValidation="Ignore")
    assert code == 201
    code, body, _ = await raw.request("PUT", SLICES + "/s", created, dryRun="Bogus")
    assert (code, body) == (422, _options_invalid("UpdateOptions", [DRY_RUN_BOGUS]))
    code, body, _ = await raw.request("PATCH", SLICES + "/s", {"metadata": {"labels": {"a": "2"}}},
                                      content_type=MERGE, force="false")
    assert (code, body) == (422, _options_invalid("PatchOptions", [{
        "reason": "FieldValueForbidden", "field": "force",
        "message": "Forbidden: may not be specified for non-apply patch"}]))
    code, body, _ = await raw.request("PATCH", SLICES + "/missing", {}, content_type=MERGE,
                                      dryRun="Bogus")
    assert (code, body) == (422, _options_invalid("PatchOptions", [DRY_RUN_BOGUS]))
    _, stored, _ = await raw.request("GET", SLICES + "/s")
    assert stored["metadata"]["labels"] == {"a": "1"}


async def test_delete_options_are_validated_first(raw: Raw) -> None:
    """ValidateDeleteOptions: orphanDependents with a propagationPolicy, or a dryRun other than
    All, is a 422 and nothing is deleted; a body's options win over the query's."""
    await raw.request("POST", SLICES, _slice())
    code, body, _ = await raw.request("DELETE", SLICES + "/s", {
        "kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": True,
        "propagationPolicy": "Background"})
    assert (code, body) == (422, _options_invalid("DeleteOptions", [{
        "reason": "FieldValueInvalid", "field": "propagationPolicy",
        "message": 'Invalid value: "Background": orphanDependents and deletionPropagation '
                   "cannot be both set"}]))
    code, body, _ = await raw.request("DELETE", SLICES + "/s", {"dryRun": ["All", "Bogus"]})
    assert (code, body) == (422, _options_invalid("DeleteOptions", [{
        "reason": "FieldValueNotSupported", "field": "dryRun",
        "message": 'Unsupported value: []string{"All", "Bogus"}: supported values: "All"'}]))
    code, body, _ = await raw.request("DELETE", SLICES + "/missing", dryRun="Bogus")
    assert (code, body) == (422, _options_invalid("DeleteOptions", [DRY_RUN_BOGUS]))
    code, body, _ = await raw.request("DELETE", SLICES + "/s", propagationPolicy="Bogus")
    assert (code, body) == (422, _options_invalid("DeleteOptions", [{
        "reason": "FieldValueNotSupported", "field": "propagationPolicy",
        "message": 'Unsupported value: "Bogus": supported values: "Foreground", "Background", '
                   '"Orphan", "nil"'}]))
    assert (await raw.request("DELETE", SLICES + "/s", dryRun="All"))[0] == 200
    assert (await raw.request("GET", SLICES + "/s"))[0] == 200
    # with a body the query is not read: this is no dry run
    assert (await raw.request("DELETE", SLICES + "/s", {}, dryRun="All"))[0] == 200
    assert (await raw.request("GET", SLICES + "/s"))[0] == 404


MAX_BODY = 3 * 1024 * 1024


async def test_a_body_over_3_mib_is_413(raw: Raw) -> None:
    """MaxRequestBodyBytes: limitedReadBody reads at most 3 MiB, one byte more is a 413 Status."""
    big = pod("big")
    big["spec"]["containers"][0]["env"] = [{"name": f"E{i}", "value": "x" * 1000}
                                           for i in range(3000)]
    data = orjson.dumps(big)
    assert len(data) < MAX_BODY
    code, body, _ = await raw.request("POST", PODS, data + b" " * (MAX_BODY + 1 - len(data)))
    assert (code, body) == (413, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Request entity too large: limit is 3145728",
        "reason": "RequestEntityTooLarge", "code": 413})
    # exactly 3 MiB is read, decoded, validated, and then refused by etcd (next test)
    code, body, _ = await raw.request("POST", PODS, data + b" " * (MAX_BODY - len(data)))
    assert (code, body["message"]) == (500, "etcdserver: request is too large")


ETCD_LIMIT = 3 * 512 * 1024  # etcd's --max-request-bytes default


def _env_pod(name: str, size: int) -> dict[str, Any]:
    """A pod whose JSON is about ``size`` bytes, grown by one long env value."""
    body = pod(name)
    body["spec"]["containers"][0]["env"] = [{"name": "E", "value": ""}]
    body["spec"]["containers"][0]["env"][0]["value"] = "x" * (size - len(orjson.dumps(body)))
    return body


async def test_an_object_over_etcds_request_limit_is_refused_and_not_stored(raw: Raw) -> None:
    """etcd refuses a write over 1.5 MiB and kube-apiserver answers with etcd's message in a
    500 with no reason; nothing is stored and no event is sent. The body itself is far under
    the 3 MiB a request may carry."""
    code, body, _ = await raw.request("POST", PODS, _env_pod("big", ETCD_LIMIT + 1000))
    assert (code, body) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: request is too large", "code": 500})
    assert (await raw.request("GET", PODS + "/big"))[0] == 404
    code, _, _ = await raw.request("POST", PODS, _env_pod("fits", ETCD_LIMIT - 4000))
    assert code == 201
    # a dry run reaches no etcd
    code, _, _ = await raw.request("POST", PODS, _env_pod("dry", ETCD_LIMIT + 1000),
                                   dryRun="All")
    assert code == 201


async def test_a_patch_that_grows_an_object_past_etcds_limit_changes_nothing(raw: Raw) -> None:
    """A merge patch of a few hundred kilobytes of addresses on a slice of 1,000 endpoints:
    the patch is small, the object it makes is not."""
    endpoints = [{"addresses": [f"10.{i // 250}.{i % 250}.1"], "hostname": f"h{i}"}
                 for i in range(1000)]
    code, created, _ = await raw.request("POST", SLICES, _slice(endpoints=endpoints))
    assert code == 201, created
    node = ".".join(["n" * 60] * 4)  # a 243-character DNS subdomain
    grown = [{"addresses": [f"10.{i // 250}.{i % 250}.{a}" for a in range(1, 101)],
              "hostname": f"h{i}", "nodeName": node} for i in range(1000)]
    assert ETCD_LIMIT < len(orjson.dumps(grown)) < MAX_BODY
    code, body, _ = await raw.request("PATCH", SLICES + "/s", {"endpoints": grown},
                                      content_type=MERGE)
    assert (code, body["message"]) == (500, "etcdserver: request is too large")
    code, now, _ = await raw.request("GET", SLICES + "/s")
    assert now["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert now["endpoints"] == created["endpoints"]


async def test_v1_endpointslices_drop_deprecated_topology(raw: Raw) -> None:
    """dropTopologyOnV1: cleared on create, and on an update whose endpoints changed (the
    generation still moves, as the strategy compares before it drops)."""
    body = _slice()
    body["endpoints"][0]["deprecatedTopology"] = {"kubernetes.io/hostname": "n1"}
    code, created, _ = await raw.request("POST", SLICES, body)
    stored = [{"addresses": ["10.0.0.1"], "conditions": {}}]  # conditions: always, as Go's
    assert code == 201 and created["endpoints"] == stored
    code, patched, _ = await raw.request("PATCH", SLICES + "/s", {"endpoints": [
        {"addresses": ["10.0.0.1"], "deprecatedTopology": {"kubernetes.io/hostname": "n1"}}]},
        content_type=MERGE)
    assert code == 200 and patched["endpoints"] == stored
    assert patched["metadata"]["generation"] == 2
    assert patched["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]


async def test_a_custom_resource_without_kind_is_400(raw: Raw) -> None:
    """Custom resources decode as Unstructured, which requires kind (NewMissingKindErr)."""
    await raw.request("POST", CRDS, crd())
    body = widget("nokind")
    del body["kind"]
    data = orjson.dumps(body)
    code, answer, _ = await raw.request("POST", WIDGETS, data)
    assert (code, answer["reason"], answer["message"]) == (400, "BadRequest", (
        f"Widget in version \"v1\" cannot be handled as a Widget: Object 'Kind' is missing in "
        f"'{data.decode()}'"))
    code, answer, _ = await raw.request("PUT", WIDGETS + "/nokind", {**body, "kind": ""})
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert (await raw.request("GET", WIDGETS + "/nokind"))[0] == 404


async def test_a_patch_that_removes_a_custom_resources_kind_is_422(raw: Raw) -> None:
    """patch.go decodes the patched JSON into a new Unstructured: without kind that is
    NewMissingKindErr, answered as an Invalid of the field ``patch``."""
    await raw.request("POST", CRDS, crd())
    await raw.request("POST", WIDGETS, widget("w"))
    code, answer, _ = await raw.request("PATCH", WIDGETS + "/w", {"kind": None},
                                        content_type=MERGE)
    assert (code, answer["reason"]) == (422, "Invalid")
    assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer["message"].endswith("'")
    assert "Object 'Kind' is missing in '{" in answer["message"]
    [cause] = answer["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("patch", "FieldValueInvalid")
    assert set(answer["details"]) == {"causes"}
    code, answer, _ = await raw.request("PATCH", WIDGETS + "/w",
                                        [{"op": "replace", "path": "/kind", "value": ""}],
                                        content_type="application/json-patch+json")
    assert (code, answer["reason"]) == (422, "Invalid")
    code, now, _ = await raw.request("GET", WIDGETS + "/w")
    assert now["kind"] == "Widget" and now["metadata"]["generation"] == 1


async def test_lone_surrogates_and_bad_utf8_decode_as_go_decodes_them(raw: Raw) -> None:
    """encoding/json takes a lone surrogate escape or invalid UTF-8 in a string as U+FFFD;
    what is no JSON (NaN) stays a 400."""
    body = orjson.dumps(endpointslice("u", {})).replace(
        b'"metadata":{', b'"metadata":{"annotations":{"a":"\\ud800x\xff"},', 1)
    code, created, _ = await raw.request("POST", ES, body)
    assert code == 201, created
    assert created["metadata"]["annotations"] == {"a": "\ufffdx\ufffd"}
    code, patched, _ = await raw.request("PATCH", ES + "/u",
                                         b'{"metadata":{"labels":{"b":"\\udc00"}}}',
                                         content_type=MERGE)
    assert code == 422 and "\ufffd" in patched["message"]  # a label value it cannot be
    code, patched, _ = await raw.request("PATCH", ES + "/u", b'{"metadata":{"annotations":'
                                         b'{"b":"\\udc00"}}}', content_type=MERGE)
    assert code == 200 and patched["metadata"]["annotations"]["b"] == "\ufffd"
    code, answer, _ = await raw.request("PATCH", ES + "/u", b'{"metadata":{"generation":NaN}}',
                                        content_type=MERGE)
    assert code == 400, answer


async def test_delete_options_are_read_as_go_reads_json(raw: Raw) -> None:
    """A DeleteOptions body goes through the same decoder as any other body: a lone surrogate
    is U+FFFD, not a 400; NaN is still refused, with the delete decoder's 500
    (tests/sim/test_delete_bodies.py)."""
    await raw.request("POST", ES, endpointslice("d", {}))
    code, answer, _ = await raw.request("DELETE", ES + "/d",
                                        b'{"kind":"DeleteOptions","apiVersion":"v1",'
                                        b'"dryRun":["All"],"x":"\\ud800"}')
    assert code == 200, answer
    code, answer, _ = await raw.request("DELETE", ES + "/d", b'{"gracePeriodSeconds":NaN}')
    assert code == 500, answer
    assert (await raw.request("GET", ES + "/d"))[0] == 200
