"""Bodies that name a key twice, and the strict decoder's other findings, as a real server has them.

The expected values of the pure tests were printed by the real decoding code: apimachinery
0.36.4's strict JSON serializer (sigs.k8s.io/json underneath) and patch.go's strict reads,
built from Debian's Go packages in a scratch harness outside the repository (2026-11-24).
The HTTP tests send the requests that a real kube-apiserver v1.32.6 (built from source, on
loopback, 2026-11-24) answered with exactly these codes, messages, Warnings and objects: a 400
for a Strict body, a 422 for a Strict patch, one Warning each under Warn, and the value Go
decodes in every mode.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from slicectl.sim import gojson
from slicectl.sim.registry import Registry
from slicectl.sim.types import ResourceType
from slicectl.sim.validation import decode_repeated, prune_unknown, strict_errors
from slicectl.sim.validation.duplicates import patch_operations, untyped
from tests.sim.conftest import Raw

NS = "dupfields"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"


def _lease_type() -> ResourceType:
    rt = Registry().lookup("coordination.k8s.io", "v1", "leases")
    assert rt is not None
    return rt


LEASE = _lease_type()


def _decode(raw: bytes) -> tuple[Any, list[str]]:
    tree = gojson.repeated(raw)
    assert tree is not None
    obj, met, replaced = decode_repeated(LEASE, tree)
    assert replaced is None
    return obj, strict_errors(LEASE, prune_unknown(LEASE, obj, True), met)


# -- finding them -----------------------------------------------------------------------------

def test_a_body_without_repeated_keys_takes_the_fast_path() -> None:
    assert gojson.repeated(b'{"a": {"b": 1}, "c": [{"d": 1}]}') is None
    assert gojson.repeated(b'{"a": 1, "a": ') is None  # no JSON: loads() says why
    assert gojson.repeated(b'{"a": {"b": 1, "b": 2}}') is not None


def test_keys_compare_after_unescaping_with_lone_surrogates_as_u_fffd() -> None:
    assert gojson.plain(gojson.repeated(b'{"na\\u006de": 1, "name": 2}')) == {"name": 2}
    tree = gojson.repeated(b'{"\\ud800": 1, "\\udc00": ["\\udfff"]}')
    assert gojson.plain(tree) == {"\ufffd": ["\ufffd"]}


# -- a built-in: order, merge, opaque fields, the cap ------------------------------------------

def test_unknown_and_duplicate_fields_come_in_document_order() -> None:
    obj, errs = _decode(
        b'{"zzz":1,"apiVersion":"coordination.k8s.io/v1","kind":"Lease",'
        b'"metadata":{"name":"l1","bogus1":1},"spec":{"holderIdentity":"h","nope":2},'
        b'"metadata":{"bogus2":true,"name":"l2"},"aaa":3,"spec":{}}')
    assert errs == ['unknown field "zzz"', 'unknown field "metadata.bogus1"',
                    'unknown field "spec.nope"', 'duplicate field "metadata"',
                    'unknown field "metadata.bogus2"', 'unknown field "aaa"',
                    'duplicate field "spec"']
    # the second metadata and spec are decoded into the first: merged, not replaced
    assert obj["metadata"] == {"name": "l2"} and obj["spec"] == {"holderIdentity": "h"}


def test_a_repeated_list_of_structs_merges_element_by_element_and_is_cut() -> None:
    obj, errs = _decode(
        b'{"metadata":{"name":"l1","ownerReferences":[{"apiVersion":"v1","kind":"Node",'
        b'"name":"n1","uid":"u1","controller":true},{"apiVersion":"v1","kind":"Node",'
        b'"name":"n2","uid":"u2"}],"ownerReferences":[{"name":"n3"}]}}')
    assert errs == ['duplicate field "metadata.ownerReferences"']
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n3", "uid": "u1", "controller": True}]


def test_a_repeated_map_merges_and_a_key_repeated_inside_one_is_replaced() -> None:
    obj, errs = _decode(b'{"metadata":{"name":"l","labels":{"a":"1","b":"1","b":"x"},'
                        b'"labels":{"b":"2","c":"3"}}}')
    assert errs == ['duplicate field "metadata.labels.b"', 'duplicate field "metadata.labels"']
    assert obj["metadata"]["labels"] == {"a": "1", "b": "2", "c": "3"}


def test_paths_are_quoted_as_go_quotes_them() -> None:
    _, errs = _decode(b'{"metadata":{"name":"l1","labels":{"a\\"b":"1","a\\"b":"2",'
                      b'"\\u00fcml\\u00e4ut":"x","\\u00fcml\\u00e4ut":"y","t\\tab":"1",'
                      b'"t\\tab":"2","back\\\\slash":"1","back\\\\slash":"2"}}}')
    assert errs == ['duplicate field "metadata.labels.a\\"b"',
                    'duplicate field "metadata.labels.\u00fcml\u00e4ut"',
                    'duplicate field "metadata.labels.t\\tab"',
                    'duplicate field "metadata.labels.back\\\\slash"']


def test_inside_an_opaque_or_unknown_field_nothing_is_looked_at() -> None:
    obj, errs = _decode(
        b'{"metadata":{"name":"l","managedFields":[{"manager":"m","fieldsType":"FieldsV1",'
        b'"fieldsV1":{"f:spec":{},"f:spec":{"x":1}},"bogus":1}],'
        b'"junk":{"a":1,"a":2}},"junk":{"a":1,"a":2}}')
    assert errs == ['unknown field "metadata.managedFields[0].bogus"',
                    'unknown field "metadata.junk"', 'unknown field "junk"']
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"x": 1}}


def test_at_most_100_errors_each_once() -> None:
    repeated = "".join(f'"u{i:03d}":1,"u{i:03d}":2,' for i in range(150))
    _, errs = _decode(f'{{{repeated}"metadata":{{"name":"l"}}}}'.encode())
    assert errs == [f'unknown field "u{i:03d}"' for i in range(100)]


# -- documents read into maps, and JSON patches --------------------------------------------------

def test_untyped_documents_report_every_depth_innermost_first() -> None:
    tree = gojson.repeated(b'{"x":0,"x":0,"metadata":{"name":"w","name":"w2"},'
                           b'"spec":{"a":{"b":{"c":{"d":1,"d":2},"c":{}},"b":{}},"a":{}}}')
    assert untyped(tree) == ['duplicate field "x"', 'duplicate field "metadata.name"',
                             'duplicate field "spec.a.b.c.d"', 'duplicate field "spec.a.b.c"',
                             'duplicate field "spec.a.b"', 'duplicate field "spec.a"']
    assert gojson.plain(tree)["spec"] == {"a": {}}  # a map's last value wins whole


def test_json_patch_operations_are_read_into_patch_gos_struct() -> None:
    raw = (b'[{"op":"add","path":"/a","value":{"k":1,"k":2,"n":[{"z":1,"z":1}]}},'
           b'{"Op":"add","op":"add","path":"/b","path":"/c","value":1}]')
    assert patch_operations(gojson.repeated(raw)) == [
        'json patch duplicate field "[0].value.k"', 'json patch duplicate field "[0].value.n[0].z"',
        'json patch unknown field "[1].Op"', 'json patch duplicate field "[1].path"']
    assert patch_operations(gojson.loads(b'[{"op":"add","path":"/a","value":1,"extra":2}]')) == [
        'json patch unknown field "[0].extra"']


def test_unknown_fields_of_a_converted_or_pruned_object_are_sorted_and_plainly_quoted() -> None:
    unknown = ["zzz", "metadata.a\"b", "aaa", "metadata.\u00fc"]
    assert strict_errors(LEASE, unknown, [], "strategic") == [
        'unknown field "aaa"', 'unknown field "metadata.a"b"', 'unknown field "metadata.\u00fc"',
        'unknown field "zzz"']
    assert strict_errors(LEASE, unknown, ['json patch unknown field "[0].x"'], "patch") == [
        'json patch unknown field "[0].x"', 'unknown field "zzz"',
        'unknown field "metadata.a\\"b"', 'unknown field "aaa"', 'unknown field "metadata.\u00fc"']


# -- over HTTP ---------------------------------------------------------------------------------

def _warnings(headers: Any) -> list[str]:
    return re.findall(r'299 - "((?:[^"\\]|\\.)*)"', ", ".join(headers.getall("Warning", [])))


@pytest.fixture
async def ns(raw: Raw) -> Raw:
    code, body, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    assert code == 201, body
    return raw


DUPLICATED = (b'{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1",'
              b'"labels":{"a":"1","a":"2"}},"zz":1,"metadata":{"annotations":{"x":"y"}},'
              b'"spec":{"holderIdentity":"h","leaseDurationSeconds":5},'
              b'"spec":{"holderIdentity":"g"}}')


async def test_a_strict_body_with_repeated_keys_is_a_400(ns: Raw) -> None:
    code, body, _ = await ns.request("POST", LEASES, DUPLICATED, fieldValidation="Strict")
    assert (code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: strict decoding error: '
        'duplicate field "metadata.labels.a", unknown field "zz", duplicate field "metadata", '
        'duplicate field "spec"')
    code, _, _ = await ns.request("GET", f"{LEASES}/l1")
    assert code == 404


@pytest.mark.parametrize("mode", ["Warn", "Ignore"])
async def test_otherwise_the_value_go_decodes_is_stored(ns: Raw, mode: str) -> None:
    code, body, headers = await ns.request("POST", LEASES, DUPLICATED, fieldValidation=mode)
    assert code == 201, body
    assert body["metadata"]["labels"] == {"a": "2"}
    assert body["metadata"]["annotations"] == {"x": "y"} and body["metadata"]["name"] == "l1"
    assert body["spec"] == {"holderIdentity": "g", "leaseDurationSeconds": 5}
    assert _warnings(headers) == ([
        'duplicate field \\"metadata.labels.a\\"', 'unknown field \\"zz\\"',
        'duplicate field \\"metadata\\"', 'duplicate field \\"spec\\"'] if mode == "Warn" else [])


async def test_a_patch_documents_repeated_keys_are_reported_before_the_objects(ns: Raw) -> None:
    code, body, _ = await ns.request("POST", LEASES, {"metadata": {"name": "p"}})
    assert code == 201, body
    patch = b'{"spec":{"holderIdentity":"a","holderIdentity":"b"},"zz":1}'
    code, body, headers = await ns.request("PATCH", f"{LEASES}/p", patch, content_type=MERGE)
    assert (code, body["spec"]) == (200, {"holderIdentity": "b"})
    assert _warnings(headers) == ['duplicate field \\"spec.holderIdentity\\"',
                                  'unknown field \\"zz\\"']
    code, body, _ = await ns.request("PATCH", f"{LEASES}/p", patch, content_type=MERGE,
                                     fieldValidation="Strict")
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].endswith('strict decoding error: duplicate field '
                                    '"spec.holderIdentity", unknown field "zz"')

    ops = b'[{"op":"add","path":"/metadata/labels","value":{"k":"1"},"extra":1}]'
    code, body, _ = await ns.request("PATCH", f"{LEASES}/p", ops, content_type=JSON_PATCH,
                                     fieldValidation="Strict")
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].endswith('strict decoding error: json patch unknown field "[0].extra"')
    code, body, headers = await ns.request("PATCH", f"{LEASES}/p", ops, content_type=JSON_PATCH)
    assert (code, body["metadata"]["labels"]) == (200, {"k": "1"})
    assert _warnings(headers) == ['json patch unknown field \\"[0].extra\\"']


async def test_a_patch_of_the_wrong_shape_is_refused_as_patch_go_words_it(ns: Raw) -> None:
    code, body, _ = await ns.request("POST", LEASES, {"metadata": {"name": "s"}})
    assert code == 201, body
    to_map = "json: cannot unmarshal array into Go value of type map[string]interface {}"
    for ctype, patch, mode, message in [
            (MERGE, b"[1]", "Warn", "error decoding patch: " + to_map),

            (SMP, b"[1]", "Warn", to_map),
            (SMP, b"[1]", "Ignore", to_map),
            (JSON_PATCH, b'{"op":"add"}', "Strict", "error decoding patch: json: cannot "
             "unmarshal object into Go value of type []handlers.jsonPatchOp"),
            (JSON_PATCH, b'[{"op":"add","path":5}]', "Warn", "error decoding patch: json: "
             "cannot unmarshal number into Go struct field jsonPatchOp.path of type string")]:
        code, body, _ = await ns.request("PATCH", f"{LEASES}/s", patch, content_type=ctype,
                                         fieldValidation=mode)
        assert (code, body["message"]) == (400, message), (ctype, patch, mode)
    # without the strict read, evanphx's merge takes an array as the patched document
    code, body, _ = await ns.request("PATCH", f"{LEASES}/s", b"[1]", content_type=MERGE,
                                     fieldValidation="Ignore")
    assert (code, body["message"]) == (422, (
        ' "" is invalid: patch: Invalid value: "[1]": couldn\'t get version/kind; json parse '
        'error: json: cannot unmarshal array into Go value of type struct { APIVersion string '
        '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'))
    code, body, _ = await ns.request("PATCH", f"{LEASES}/s", b"null", content_type=SMP)
    assert (code, body["metadata"]["name"]) == (200, "s")  # a nil map: nothing to merge


async def test_a_strategic_merge_patchs_unknown_fields_are_sorted(ns: Raw) -> None:
    code, body, _ = await ns.request("POST", LEASES, {"metadata": {"name": "u"}})
    assert code == 201, body
    patch = b'{"zzz":1,"metadata":{"a\\"b":1},"aaa":2}'
    code, body, headers = await ns.request("PATCH", f"{LEASES}/u", patch, content_type=SMP)
    assert code == 200, body
    assert _warnings(headers) == ['unknown field \\"aaa\\"', 'unknown field \\"metadata.a\\"b\\"',
                                  'unknown field \\"zzz\\"']


async def test_a_replaced_value_of_the_wrong_type_still_refuses_the_body(ns: Raw) -> None:
    """Go decodes every occurrence: the first, of the wrong type, is a decode error even
    though the last would do (a real v1.32.6 server answered this body with a 400)."""
    body = (b'{"metadata":{"name":"w","annotations":{"slicectl.io/x":0,"slicectl.io/x":"y"}},'
            b'"spec":{"holderIdentity":"h"}}')
    code, answer, _ = await ns.request("POST", LEASES, body)
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert "cannot unmarshal number" in answer["message"]
    code, answer, _ = await ns.request("POST", LEASES, body.replace(b":0,", b':"z",'))
    assert code == 201 and answer["metadata"]["annotations"] == {"slicectl.io/x": "y"}
