"""The embedded server answers as a real kube-apiserver v1.32 does where it used to differ.

Every expected answer below was captured from a real kube-apiserver v1.32.0 (2026-11-22): Leases
POSTed with ``dryRun=All`` to a throwaway namespace, and the chart CRD
(charts/slicectl/crds/slicectl.io_endpointselectors.yaml) installed under a throwaway group,
renamed back to slicectl.io here. The same requests go over HTTP to the embedded server:

- label keys and values judged by apimachinery's ``IsQualifiedName`` / ``IsValidLabelValue``
  (a key with two or more '/' gets the one "a qualified name ..." message; lengths in bytes;
  a trailing newline is no match);
- a fieldValidation=Strict 400 reads ``<Kind> in version "<v>" cannot be handled as a <Kind>:
  strict decoding error: ...`` (a custom resource's paths sorted, a built-in's in body order);
- the unknown-field ``Warning`` goes out with the answer even when the write then fails;
- a status-subresource write has only ``.status`` checked by the schema (``endpoints in body``
  for the field ``status.endpoints``);
- an integral float in a custom resource is served as an integer (``80.0`` -> ``80``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.sim.conftest import Raw, install_chart_crd

NS = "simleft-ns"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
ESELS = f"/apis/slicectl.io/v1alpha1/namespaces/{NS}/endpointselectors"
SEL = {"matchLabels": {"app": "x"}}
MERGE = "application/merge-patch+json"

# Messages exactly as the real server printed them (note the double spaces after the commas).
QUALIFIED = ("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
             "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
             "[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
             "'example.com/MyName')")
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
             "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
             "[A-Za-z0-9]')")
PREFIX_SUBDOMAIN = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
SUBDOMAIN = PREFIX_SUBDOMAIN.removeprefix("prefix part ")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, "
               "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
               "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
               "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
TOO_LONG_63 = "must be no more than 63 characters"
NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
               "correct the existing errors to complete validation")
NOT_CHECKED_CAUSE = {"reason": "FieldValueInvalid", "field": "<nil>",
                     "message": f'Invalid value: "null": {NOT_CHECKED}'}


def _invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> dict[str, Any]:
    """A captured 422 Status: ``<Kind>.<group> "<name>" is invalid: <field: message, ...>``."""
    texts = [f"{c['field']}: {c['message']}" for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"{kind}.{group} {_quote(name)} is invalid: {summary}", "reason": "Invalid",
            "details": {"name": name, "group": group, "kind": kind, "causes": causes},
            "code": 422}


def _quote(text: str) -> str:
    """Go's ``%q`` of the plain strings used here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label_causes(field: str, value: str, messages: list[str]) -> list[dict[str, str]]:
    return [{"reason": "FieldValueInvalid", "message": f"Invalid value: {_quote(value)}: {m}",
             "field": field} for m in messages]


def _bad_request(message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "BadRequest", "code": 400}


def _es(name: str, spec: Any, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": name, **meta}, "spec": spec}


async def _namespace(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    assert code == 201, body


async def _stored_selector(raw: Raw) -> None:
    await install_chart_crd(raw, NS)
    code, body, _ = await raw.request("POST", ESELS, _es("st", {
        "selector": SEL, "ports": [{"targetPort": 80}]}))
    assert code == 201, body


# -- 1. label keys and values -----------------------------------------------------------------

LABEL_KEYS = [
    ("a/b/c", [QUALIFIED]),
    ("a/b/c/d", [QUALIFIED]),
    ("//", [QUALIFIED]),
    ("/", ["prefix part must be non-empty", "name part must be non-empty", NAME_PART]),
    ("/x", ["prefix part must be non-empty"]),
    ("a/", ["name part must be non-empty", NAME_PART]),
    ("", ["name part must be non-empty", NAME_PART]),
    ("Ex.com/x", [PREFIX_SUBDOMAIN]),
    ("a_b/c", [PREFIX_SUBDOMAIN]),
    ("x/" + "a" * 64, ["name part " + TOO_LONG_63]),
    ("a" * 64, ["name part " + TOO_LONG_63]),
    ("-a", [NAME_PART]),
    ("a/-b", [NAME_PART]),
    ("a\n", [NAME_PART]),
    ("ok.example/x_y", []),
]
LABEL_VALUES = [
    ("a" * 64, [TOO_LONG_63]),
    ("-" + "a" * 63, [TOO_LONG_63, LABEL_VALUE]),
    ("-x", [LABEL_VALUE]),
    ("a b", [LABEL_VALUE]),
    ("ok\n", [LABEL_VALUE]),
    ("é" * 32, [TOO_LONG_63, LABEL_VALUE]),  # 64 bytes: Go counts bytes
    ("", []),
]


@pytest.mark.parametrize(("key", "messages"), LABEL_KEYS, ids=repr)
async def test_label_keys_as_the_real_server_judges_them(
        raw: Raw, key: str, messages: list[str]) -> None:
    await _namespace(raw)
    lease = {"metadata": {"name": "l", "labels": {key: "v"}}}
    code, body, _ = await raw.request("POST", LEASES, lease, dryRun="All")
    if not messages:
        assert code == 201, body
        return
    assert (code, body) == (422, _invalid("Lease", "coordination.k8s.io", "l", _label_causes(
        "metadata.labels", key, messages)))


@pytest.mark.parametrize(("value", "messages"), LABEL_VALUES, ids=repr)
async def test_label_values_as_the_real_server_judges_them(
        raw: Raw, value: str, messages: list[str]) -> None:
    await _namespace(raw)
    lease = {"metadata": {"name": "l", "labels": {"k": value}}}
    code, body, _ = await raw.request("POST", LEASES, lease, dryRun="All")
    if not messages:
        assert code == 201, body
        return
    assert (code, body) == (422, _invalid("Lease", "coordination.k8s.io", "l", _label_causes(
        "metadata.labels", value, messages)))


async def test_annotation_keys_and_names_as_the_real_server_judges_them(raw: Raw) -> None:
    await _namespace(raw)
    lease = {"metadata": {"name": "l", "annotations": {"A/B/C": "v"}}}
    code, body, _ = await raw.request("POST", LEASES, lease, dryRun="All")
    # the key is judged lower-cased but shown as sent
    assert (code, body) == (422, _invalid("Lease", "coordination.k8s.io", "l", _label_causes(
        "metadata.annotations", "A/B/C", [QUALIFIED])))
    code, body, _ = await raw.request("POST", LEASES, {"metadata": {"name": "l\n"}},
                                      dryRun="All")
    assert (code, body) == (422, _invalid("Lease", "coordination.k8s.io", "l\n", _label_causes(
        "metadata.name", "l\n", [SUBDOMAIN])))


# -- 2. strict decoding errors ----------------------------------------------------------------

async def test_strict_decoding_error_of_a_custom_resource_names_kind_and_version(
        raw: Raw) -> None:
    await install_chart_crd(raw, NS)
    obj = _es("t1", {"selector": SEL, "ports": [{"targetPort": 80}], "foo": 1, "bar": 2},
              zzz=1)
    code, body, _ = await raw.request("POST", ESELS, obj, dryRun="All",
                                      fieldValidation="Strict")
    assert (code, body) == (400, _bad_request(
        'EndpointSelector in version "v1alpha1" cannot be handled as a EndpointSelector: '
        'strict decoding error: unknown field "metadata.zzz", unknown field "spec.bar", '
        'unknown field "spec.foo"'))


async def test_strict_decoding_error_of_a_builtin_keeps_body_order(raw: Raw) -> None:
    await _namespace(raw)
    lease = {"metadata": {"name": "l", "zz": 1}, "foo": 1,
             "spec": {"holderIdentity": "h", "bar": 1},
             "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "aaa": 2}
    code, body, _ = await raw.request("POST", LEASES, lease, dryRun="All",
                                      fieldValidation="Strict")
    assert (code, body) == (400, _bad_request(
        'Lease in version "v1" cannot be handled as a Lease: strict decoding error: '
        'unknown field "metadata.zz", unknown field "foo", unknown field "spec.bar", '
        'unknown field "aaa"'))
    code, body, _ = await raw.request("PUT", f"{LEASES}/l2", {
        "metadata": {"name": "l2"}, "spec": {"zz": 1}}, fieldValidation="Strict")
    assert (code, body) == (400, _bad_request(
        'Lease in version "v1" cannot be handled as a Lease: strict decoding error: '
        'unknown field "spec.zz"'))


# -- 3. the unknown-field Warning survives a failed write ------------------------------------

def _warnings(headers: Any) -> list[str]:
    """Warning values, one per warning: the real server sends one header line each; the
    embedded server may fold them into one line, which HTTP treats the same."""
    return re.findall(r'299 - "(?:[^"\\]|\\.)*"', ", ".join(headers.getall("Warning", [])))


async def test_unknown_field_warning_comes_with_a_422(raw: Raw) -> None:
    await install_chart_crd(raw, NS)
    obj = _es("t2", {"selector": SEL, "ports": [{"targetPort": 0}], "foo": 1, "bar": 2},
              zzz=1)
    code, body, headers = await raw.request("POST", ESELS, obj, dryRun="All")
    assert (code, body) == (422, _invalid("EndpointSelector", "slicectl.io", "t2", [{
        "reason": "FieldValueInvalid", "field": "spec.ports[0].targetPort",
        "message": "Invalid value: 0: spec.ports[0].targetPort in body should be greater than "
                   "or equal to 1"}]))
    assert _warnings(headers) == [
        '299 - "unknown field \\"metadata.zzz\\""', '299 - "unknown field \\"spec.bar\\""',
        '299 - "unknown field \\"spec.foo\\""']

    lease = {"metadata": {"name": "l", "labels": {"a/b/c": "x"}, "zz": 1}, "foo": 1}
    code, body, headers = await raw.request("POST", LEASES, lease, dryRun="All")
    assert (code, body) == (422, _invalid("Lease", "coordination.k8s.io", "l", _label_causes(
        "metadata.labels", "a/b/c", [QUALIFIED])))
    assert _warnings(headers) == [
        '299 - "unknown field \\"metadata.zz\\""', '299 - "unknown field \\"foo\\""']


async def test_unknown_field_warning_comes_with_404_and_409(raw: Raw) -> None:
    await _namespace(raw)
    code, body, headers = await raw.request(
        "POST", "/apis/coordination.k8s.io/v1/namespaces/simleft-missing/leases",
        {"metadata": {"name": "l"}, "foo": 1}, dryRun="All")
    assert (code, body["message"]) == (404, 'namespaces "simleft-missing" not found')
    assert _warnings(headers) == ['299 - "unknown field \\"foo\\""']
    code, body, _ = await raw.request("POST", LEASES, {"metadata": {"name": "l1"}})
    assert code == 201, body
    code, body, headers = await raw.request("POST", LEASES, {"metadata": {"name": "l1"},
                                                             "foo": 1}, dryRun="All")
    assert (code, body["message"]) == (409, 'leases.coordination.k8s.io "l1" already exists')
    assert _warnings(headers) == ['299 - "unknown field \\"foo\\""']
    # a later request carries no leftover warning
    code, _, headers = await raw.request("POST", LEASES, {"metadata": {"name": "l2"}})
    assert code == 201
    assert "Warning" not in headers


async def test_unknown_fields_are_found_when_the_body_is_decoded(raw: Raw) -> None:
    """Decoding comes first: its Warning goes with the later 400/409, its Strict 400 wins."""
    await _namespace(raw)
    code, body, _ = await raw.request("POST", LEASES, {"metadata": {"name": "l2"}})
    assert code == 201, body
    stale = {"metadata": {"name": "l2", "resourceVersion": "1"}, "foo": 1}
    code, body, headers = await raw.request("PUT", f"{LEASES}/l2", stale, dryRun="All")
    assert (code, body["message"]) == (409, (
        'Operation cannot be fulfilled on leases.coordination.k8s.io "l2": the object has '
        "been modified; please apply your changes to the latest version and try again"))
    assert _warnings(headers) == ['299 - "unknown field \\"foo\\""']
    code, body, _ = await raw.request("PUT", f"{LEASES}/l2", stale, dryRun="All",
                                      fieldValidation="Strict")
    assert (code, body) == (400, _bad_request(
        'Lease in version "v1" cannot be handled as a Lease: strict decoding error: '
        'unknown field "foo"'))
    code, body, headers = await raw.request(
        "PUT", f"{LEASES}/l2", {"metadata": {"name": "other"}, "foo": 1}, dryRun="All")
    assert (code, body) == (400, _bad_request(
        "the name of the object (other) does not match the name on the URL (l2)"))
    assert _warnings(headers) == ['299 - "unknown field \\"foo\\""']
    moved = {"metadata": {"name": "x", "namespace": "other"}, "foo": 1}
    code, body, headers = await raw.request("POST", LEASES, moved, dryRun="All")
    assert (code, body) == (400, _bad_request(
        "the namespace of the provided object does not match the namespace sent on the "
        "request"))
    assert _warnings(headers) == ['299 - "unknown field \\"foo\\""']
    code, body, _ = await raw.request("POST", LEASES, moved, dryRun="All",
                                      fieldValidation="Strict")
    assert (code, body) == (400, _bad_request(
        'Lease in version "v1" cannot be handled as a Lease: strict decoding error: '
        'unknown field "foo"'))


async def test_a_status_put_decodes_the_whole_body(raw: Raw) -> None:
    await _stored_selector(raw)
    code, body, _ = await raw.request("GET", f"{ESELS}/st")
    body["spec"]["foo"] = 1
    body["status"] = {"foo": 2}
    code, body, _ = await raw.request("PUT", f"{ESELS}/st/status", body, dryRun="All",
                                      fieldValidation="Strict")
    assert (code, body) == (400, _bad_request(
        'EndpointSelector in version "v1alpha1" cannot be handled as a EndpointSelector: '
        'strict decoding error: unknown field "spec.foo", unknown field "status.foo"'))


# -- 4. status subresource writes validate .status on its own --------------------------------

STATUS_ANSWERS = [
    pytest.param({"endpoints": -1}, [{
        "reason": "FieldValueInvalid", "field": "status.endpoints",
        "message": "Invalid value: -1: endpoints in body should be greater than or equal to 0"}],
        id="minimum"),
    pytest.param("x", [{
        "reason": "FieldValueTypeInvalid", "field": "status",
        "message": 'Invalid value: "string":  in body must be of type object: "string"'},
        NOT_CHECKED_CAUSE], id="root-type"),
    pytest.param({"conditions": [{
        "type": "Ready", "status": "True", "reason": "-", "message": "m",
        "lastTransitionTime": "2020-01-01T00:00:00Z"}]}, [{
            "reason": "FieldValueInvalid", "field": "status.conditions[0].reason",
            "message": "Invalid value: \"-\": conditions[0].reason in body should match "
                       "'^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"}], id="pattern"),
    pytest.param({"conditions": "x"}, [{
        "reason": "FieldValueTypeInvalid", "field": "status.conditions",
        "message": 'Invalid value: "string": conditions in body must be of type array: '
                   '"string"'}, NOT_CHECKED_CAUSE], id="type"),
]


@pytest.mark.parametrize(("status", "causes"), STATUS_ANSWERS)
async def test_status_writes_are_validated_from_status(
        raw: Raw, status: Any, causes: list[dict[str, str]]) -> None:
    await _stored_selector(raw)
    code, body, _ = await raw.request("PATCH", f"{ESELS}/st/status", {"status": status},
                                      content_type=MERGE, dryRun="All")
    assert (code, body) == (422, _invalid("EndpointSelector", "slicectl.io", "st", causes))


async def test_main_resource_writes_still_name_paths_from_the_root(raw: Raw) -> None:
    await install_chart_crd(raw, NS)
    code, body, _ = await raw.request("POST", ESELS, _es("t3", {
        "selector": SEL, "ports": [{"targetPort": 0}]}), dryRun="All")
    assert (code, body) == (422, _invalid("EndpointSelector", "slicectl.io", "t3", [{
        "reason": "FieldValueInvalid", "field": "spec.ports[0].targetPort",
        "message": "Invalid value: 0: spec.ports[0].targetPort in body should be greater than "
                   "or equal to 1"}]))


# -- 5. integral floats are served as integers ------------------------------------------------

async def test_integral_floats_come_back_as_integers(raw: Raw) -> None:
    await _stored_selector(raw)
    code, body, _ = await raw.request(
        "PATCH", f"{ESELS}/st/status",
        b'{"status":{"endpoints":80.0,"readyEndpoints":1e2,"endpointSlices":2.50e1,'
        b'"observedGeneration":-0.0}}', content_type=MERGE)
    assert code == 200, body
    want = {"endpointSlices": 25, "endpoints": 80, "observedGeneration": 0,
            "readyEndpoints": 100}
    assert body["status"] == want
    assert all(type(v) is int for v in body["status"].values()), body["status"]
    code, body, _ = await raw.request("GET", f"{ESELS}/st")
    assert body["status"] == want
    assert all(type(v) is int for v in body["status"].values()), body["status"]

    code, body, _ = await raw.request(
        "POST", ESELS, b'{"apiVersion":"slicectl.io/v1alpha1","kind":"EndpointSelector",'
        b'"metadata":{"name":"fl"},"spec":{"selector":{"matchLabels":{"app":"x"}},'
        b'"ports":[{"targetPort":80.0}]}}', dryRun="All")
    assert code == 201, body
    assert body["spec"] == {"ports": [{"name": "", "protocol": "TCP", "targetPort": 80}],
                            "selector": {"matchLabels": {"app": "x"}}}
    assert type(body["spec"]["ports"][0]["targetPort"]) is int


async def test_strict_unknown_fields_of_a_patch_are_its_422_whatever_part_is_kept(
        raw: Raw) -> None:
    """patch.go decodes the whole patched object strictly before the status strategy throws
    spec and metadata away: an unknown field anywhere is a 422 on the field ``patch``, and with
    Warn a Warning, on /status too."""
    await install_chart_crd(raw, NS)
    code, obj, _ = await raw.request("POST", ESELS, _es("t9", {"selector": SEL}))
    assert code == 201, obj
    for path, patch in ((f"{ESELS}/t9/status", {"spec": {"bogus": 1}}),
                        (f"{ESELS}/t9", {"status": {"bogus": 1}})):
        code, body, _ = await raw.request("PATCH", path, patch, content_type=MERGE,
                                          fieldValidation="Strict")
        assert (code, body["reason"]) == (422, "Invalid"), body
        assert body["message"].endswith("strict decoding error: unknown field "
                                        f'"{next(iter(patch))}.bogus"')
    code, _, headers = await raw.request("PATCH", f"{ESELS}/t9/status",
                                         {"metadata": {"bogusMeta": 1}}, content_type=MERGE)
    assert code == 200
    assert _warnings(headers) == ['299 - "unknown field \\"metadata.bogusMeta\\""']
