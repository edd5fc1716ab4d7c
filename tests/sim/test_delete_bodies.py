"""A DELETE's body decoded as a real kube-apiserver v1.32.6 decodes it into DeleteOptions.

Each expected answer below was captured from that server (on loopback, 2026-11-28) with the
same raw request, the object a Lease and the query ``dryRun=All``. Any body of one byte or
more is decoded (the query is then not read), and every decoding failure is a 500 with Go's
error text and no reason, before the object is looked up. The embedded server answered 400,
422 or 409 instead, or took the body: another kind deleted the object, spaces fell back to the
query, and ``"preconditions": "x"`` crashed the handler.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, install_chart_crd

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
DRY = '"dryRun":["All"]'


def _dry(members: str = "") -> str:
    """A JSON object of ``members`` (JSON text) and ``dryRun: [All]``."""
    return "{" + (members + "," if members else "") + DRY + "}"


def _find_kind(value: str) -> str:
    return (f"couldn't get version/kind; json parse error: json: cannot unmarshal {value} into "
            'Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
            'Kind string "json:\\"kind,omitempty\\"" }')


NOT_REGISTERED = ('no kind "Pod" is registered for version "{}" in scheme '
                  '"pkg/runtime/scheme.go:100"')


def _field(value: str, field: str, go_type: str) -> str:
    return f"json: cannot unmarshal {value} into Go struct field {field} of type {go_type}"


REFUSED = [
    ("   ", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
    ("\n", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
    ("{", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
    ("[]", _find_kind("array")),
    ("5", _find_kind("number")),
    ('"x"', _find_kind("string")),
    ("true", _find_kind("bool")),
    (_dry() + " x", "couldn't get version/kind; json parse error: invalid character 'x' "
                     "after top-level value"),
    (_dry() + "{}", "couldn't get version/kind; json parse error: invalid character '{' "
                     "after top-level value"),
    ('{"gracePeriodSeconds":NaN}', "couldn't get version/kind; json parse error: invalid "
                                   "character 'N' looking for beginning of value"),
    (_dry('"kind":5'), "couldn't get version/kind; json parse error: json: cannot "
                            "unmarshal number into Go struct field .kind of type string"),
    (_dry('"apiVersion":5'), "couldn't get version/kind; json parse error: json: cannot "
                                  "unmarshal number into Go struct field .apiVersion of type "
                                  "string"),
    (_dry('"kind":"Pod","apiVersion":"v1"'), NOT_REGISTERED.format("v1")),
    (_dry('"kind":"Pod"'), NOT_REGISTERED.format("meta.k8s.io/v1")),
    (_dry('"kind":"Status"'),
     "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
    (_dry('"kind":"Status","apiVersion":"v1"'),
     "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
    (_dry('"kind":"ListOptions","apiVersion":"meta.k8s.io/v1"'),
     "converting (v1.ListOptions) to (v1.DeleteOptions): unknown conversion"),
    (_dry('"gracePeriodSeconds":"5"'),
     _field("string", "DeleteOptions.gracePeriodSeconds", "int64")),
    (_dry('"gracePeriodSeconds":1.5'),
     _field("number 1.5", "DeleteOptions.gracePeriodSeconds", "int64")),
    (_dry('"gracePeriodSeconds":1e2'),
     _field("number 1e2", "DeleteOptions.gracePeriodSeconds", "int64")),
    (_dry('"gracePeriodSeconds":9223372036854775808'),
     _field("number 9223372036854775808", "DeleteOptions.gracePeriodSeconds", "int64")),
    (_dry('"orphanDependents":"true"'),
     _field("string", "DeleteOptions.orphanDependents", "bool")),
    (_dry('"orphanDependents":1'),
     _field("number", "DeleteOptions.orphanDependents", "bool")),
    ('{"dryRun":"All"}', _field("string", "DeleteOptions.dryRun", "[]string")),
    ('{"dryRun":[5]}', _field("number", "DeleteOptions.dryRun", "string")),
    ('{"dryRun":null,"gracePeriodSeconds":"x"}',
     _field("string", "DeleteOptions.gracePeriodSeconds", "int64")),
    (_dry('"propagationPolicy":5'),
     _field("number", "DeleteOptions.propagationPolicy", "v1.DeletionPropagation")),
    (_dry('"preconditions":{"uid":5}'),
     _field("number", "Preconditions.preconditions.uid", "types.UID")),
    (_dry('"preconditions":"x"'),
     _field("string", "DeleteOptions.preconditions", "v1.Preconditions")),
    (_dry('"preconditions":{"resourceVersion":5}'),
     _field("number", "Preconditions.preconditions.resourceVersion", "string")),
]


@pytest.fixture
async def lease(raw: Raw) -> str:
    code, body, _ = await raw.request("POST", LEASES, {"metadata": {"name": "victim"}})
    assert code == 201, body
    return f"{LEASES}/victim"


@pytest.mark.parametrize(("body", "message"), REFUSED)
async def test_a_body_that_does_not_decode_is_a_500(raw: Raw, lease: str, body: str,
                                                     message: str) -> None:
    code, answer, _ = await raw.request("DELETE", lease, body.encode(), dryRun="All")
    assert (code, answer) == (500, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Failure", "message": message, "code": 500})
    assert (await raw.request("GET", lease))[0] == 200


@pytest.mark.parametrize("body", [
    _dry('"kind":"DeleteOptions","apiVersion":"v2"'),
    _dry('"kind":"DeleteOptions","apiVersion":"coordination.k8s.io/v1"'),
    _dry('"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1beta1"'),
    _dry('"apiVersion":"v1"'),
    _dry('"kind":""'),
    _dry('"gracePeriodSeconds":null,"propagationPolicy":null'),
    _dry('"preconditions":{"bogus":5},"bogus":1'),
    _dry('"DryRun":["x"],"metadata":{"name":"x"}'),
])
async def test_delete_options_of_any_version_decode(raw: Raw, lease: str, body: str) -> None:
    """DeleteOptions is an unversioned kind; unknown members, ``null`` and other cases of a
    name are dropped (the body is still a dry run)."""
    code, answer, _ = await raw.request("DELETE", lease, body.encode(), dryRun="All")
    assert (code, answer["status"]) == (200, "Success")
    assert (await raw.request("GET", lease))[0] == 200


async def test_a_body_is_decoded_before_the_object_is_looked_up(raw: Raw) -> None:
    code, answer, _ = await raw.request("DELETE", f"{LEASES}/nope", b'{"kind":"Pod"}')
    assert (code, answer["message"]) == (500, NOT_REGISTERED.format("meta.k8s.io/v1"))


async def test_a_delete_collection_decodes_its_body_too(raw: Raw, lease: str) -> None:
    code, answer, _ = await raw.request("DELETE", LEASES, b"   ", dryRun="All")
    assert (code, answer["message"]) == (
        500, "couldn't get version/kind; json parse error: unexpected end of JSON input")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_of_another_media_type_is_a_415(raw: Raw, lease: str,
                                                     content_type: str) -> None:
    code, answer, _ = await raw.request("DELETE", lease, _dry().encode(),
                                        content_type=content_type, dryRun="All")
    assert (code, answer["reason"], answer["message"]) == (
        415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
        "accepted media types include: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")


@pytest.mark.parametrize(("body", "content_type"), [
    (b"dryRun: [All]", "application/yaml"),
    (b'{"dryRun":["All"]}', "Application/JSON; charset=utf-8"),
])
async def test_a_yaml_or_json_body_of_any_case_decodes(raw: Raw, lease: str, body: bytes,
                                                       content_type: str) -> None:
    code, answer, _ = await raw.request("DELETE", lease, body, content_type=content_type)
    assert (code, answer["status"]) == (200, "Success")
    assert (await raw.request("GET", lease))[0] == 200


async def test_a_null_body_is_empty_options_and_the_query_is_not_read(raw: Raw,
                                                                      lease: str) -> None:
    """How a probe deleted a Lease for real on a real server: ``null`` decodes to no options,
    so the query's ``dryRun`` is ignored."""
    code, answer, _ = await raw.request("DELETE", lease, b"null", dryRun="All")
    assert (code, answer["status"]) == (200, "Success")
    assert (await raw.request("GET", lease))[0] == 404


async def test_a_custom_resource_deleted_at_once_is_answered_with_a_status(raw: Raw) -> None:
    """The custom resource store does not return the deleted object (no
    ``ReturnDeletedObject``): a real server answered both a dry run and a real delete with a
    success Status; one held by a finalizer is answered with the object."""
    await install_chart_crd(raw)
    selectors = "/apis/slicectl.io/v1alpha1/namespaces/default/endpointselectors"
    meta: dict[str, Any] = {"name": "es"}
    body = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": meta, "spec": {"selector": {"matchLabels": {"a": "b"}}}}
    _, created, _ = await raw.request("POST", selectors, body)
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
              "details": {"name": "es", "group": "slicectl.io", "kind": "endpointselectors",
                          "uid": created["metadata"]["uid"]}}
    assert (await raw.request("DELETE", f"{selectors}/es", dryRun="All"))[:2] == (200, status)
    assert (await raw.request("DELETE", f"{selectors}/es"))[:2] == (200, status)
    meta["finalizers"] = ["x.io/y"]
    await raw.request("POST", selectors, body)
    code, answer, _ = await raw.request("DELETE", f"{selectors}/es")
    assert (code, answer["kind"]) == (200, "EndpointSelector")
