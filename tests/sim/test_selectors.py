"""Label and field selectors: the sim's own parser and evaluation, with the real server's errors."""

from __future__ import annotations

import pytest

from slicectl.sim.selectors import LabelSelectorError, parse_label_selector
from tests.sim.conftest import PODS, Raw, pod
from tests.sim.test_crd import CRDS, WIDGETS, crd

STATUS = "application/merge-patch+json"


async def _names(raw: Raw, **params: str) -> list[str]:
    code, body, _ = await raw.request("GET", PODS, **params)
    assert code == 200, body
    return [p["metadata"]["name"] for p in body["items"]]


async def test_set_based_and_integer_requirements(raw: Raw) -> None:
    for name, labels in (("a", {"tier": "web", "n": "3"}), ("b", {"tier": "db", "n": "10"}),
                         ("c", {"n": "x"}), ("d", {})):
        await raw.request("POST", PODS, pod(name, labels))
    assert await _names(raw, labelSelector="tier in (web,db)") == ["a", "b"]
    assert await _names(raw, labelSelector="tier notin (web)") == ["b", "c", "d"]
    assert await _names(raw, labelSelector="!tier") == ["c", "d"]
    assert await _names(raw, labelSelector="tier,n") == ["a", "b"]
    assert await _names(raw, labelSelector="n>5") == ["b"]  # "x" is not an integer: no match
    assert await _names(raw, labelSelector="n<5,tier!=db") == ["a"]
    assert await _names(raw, labelSelector="tier in (web,,db)") == ["a", "b"]
    assert await _names(raw, labelSelector=" tier == web ") == ["a"]


@pytest.mark.parametrize(("selector", "message"), [
    ("a$=b", 'unable to parse requirement: <nil>: Invalid value: "a$": name part must consist '
             "of alphanumeric characters"),
    ("a=b$", 'unable to parse requirement: values[0][a]: Invalid value: "b$": a valid label '
             "must be an empty string"),
    ("a,", "found '', expected: identifier after ','"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
            "operators, the value must be an integer"),
    ("x/y/z", 'unable to parse requirement: <nil>: Invalid value: "x/y/z": a qualified name '
              "must consist of"),
])
async def test_bad_label_selector_is_400_with_the_real_message(
        raw: Raw, selector: str, message: str) -> None:
    for verb_params in ({}, {"watch": "true"}):
        code, body, _ = await raw.request("GET", PODS, labelSelector=selector, **verb_params)
        assert code == 400 and body["reason"] == "BadRequest"
        assert body["message"].startswith(message), body["message"]


def test_parser_keeps_in_as_a_value_and_sorts_by_key() -> None:
    parsed = parse_label_selector("z=1,in in (in),a notin ()")
    assert [(r.key, r.operator, r.values) for r in parsed.requirements] == [
        ("a", "notin", ("",)), ("in", "in", ("in",)), ("z", "=", ("1",))]
    with pytest.raises(LabelSelectorError):
        parse_label_selector("a=b\n=c")


async def test_pod_field_selectors(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("on-a", node="node-a"))
    await raw.request("POST", PODS, pod("on-b", node="node-b"))
    await raw.request("PATCH", PODS + "/on-b/status", {"status": {
        "phase": "Running", "podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::2"}]}},
        content_type=STATUS)
    assert await _names(raw, fieldSelector="spec.nodeName=node-a") == ["on-a"]
    assert await _names(raw, fieldSelector="spec.host==node-a") == ["on-a"]  # old name
    assert await _names(raw, fieldSelector="spec.nodeName!=node-a,status.phase=Running") == [
        "on-b"]
    # status.podIP is the first of status.podIPs, as the registry's selectable fields say
    assert await _names(raw, fieldSelector="status.podIP=10.0.0.2") == ["on-b"]
    assert await _names(raw, fieldSelector="status.podIP=fd00::2") == []
    assert await _names(raw, fieldSelector="spec.hostNetwork=false") == ["on-a", "on-b"]
    assert await _names(raw, fieldSelector="status.nominatedNodeName=") == ["on-a", "on-b"]


@pytest.mark.parametrize(("path", "selector", "message"), [
    (PODS, "spec.containers=x", "field label not supported: spec.containers"),
    (PODS, "spec.nodeName = a", "field label not supported: spec.nodeName "),  # no trimming
    (PODS, "spec.nodeName", "invalid selector: 'spec.nodeName'; can't understand "
                            "'spec.nodeName'"),
    (PODS, "metadata.name=a\\b", "invalid field selector: invalid escape sequence: \\b"),
    (PODS, "metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", "addressType=IPv4",
     '"addressType" is not a known field selector: only "metadata.name", '
     '"metadata.namespace"'),
    ("/api/v1/nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
])
async def test_bad_field_selector_is_400(raw: Raw, path: str, selector: str,
                                         message: str) -> None:
    code, body, _ = await raw.request("GET", path, fieldSelector=selector)
    assert code == 400 and body["message"] == message


async def test_escaped_field_values(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("plain"))
    assert await _names(raw, fieldSelector="metadata.name=plain,metadata.namespace=default") == [
        "plain"]
    assert await _names(raw, fieldSelector="metadata.name=pl\\,ain") == []


async def test_custom_resource_field_selectors(raw: Raw) -> None:
    body = crd()
    version = body["spec"]["versions"][0]
    version["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
        "type": "object", "properties": {"color": {"type": "string"}}}
    version["selectableFields"] = [{"jsonPath": ".spec.color"}]
    code, created, _ = await raw.request("POST", CRDS, body)
    assert code == 201, created
    for name, color in (("r", "red"), ("b", "blue")):
        await raw.request("POST", WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                            "metadata": {"name": name},
                                            "spec": {"color": color}})
    code, listed, _ = await raw.request("GET", WIDGETS, fieldSelector="spec.color=red")
    assert code == 200 and [w["metadata"]["name"] for w in listed["items"]] == ["r"]
    code, body, _ = await raw.request("GET", WIDGETS, fieldSelector="spec.size=1")
    assert code == 400 and body["message"] == "field label not supported: spec.size"
