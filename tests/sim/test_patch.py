"""Unit tests of slicectl.sim.patch: merge, JSON and strategic merge patches."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slicectl.sim.patch import PatchError, apply_patch, merge_patch
from slicectl.sim.types import ResourceType

POD = ResourceType("", "v1", "pods", "Pod", True, definition="io.k8s.api.core.v1.Pod")
CR = ResourceType("slicectl.io", "v1alpha1", "endpointselectors", "EndpointSelector", True,
                  schema={"type": "object"})
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"


def pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
        "spec": {"containers": [
            {"name": "c", "image": "i1", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
            {"name": "d", "image": "i2"},
        ]},
    }


def patch(obj: dict[str, Any], body: Any, ctype: str, rt: ResourceType = POD) -> dict[str, Any]:
    return apply_patch(obj, json.dumps(body).encode(), ctype, rt)[0]


def test_merge_patch_sets_and_deletes_and_never_mutates() -> None:
    original = pod()
    before = copy.deepcopy(original)
    out = patch(original, {"metadata": {"labels": {"a": None, "c": "3"}}}, MERGE)
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert original == before


def test_merge_patch_replaces_lists() -> None:
    out = patch(pod(), {"spec": {"containers": [{"name": "z", "image": "q"}]}}, MERGE)
    assert out["spec"]["containers"] == [{"name": "z", "image": "q"}]


def test_json_patch_ops() -> None:
    ops = [
        {"op": "add", "path": "/metadata/labels/c", "value": "3"},
        {"op": "remove", "path": "/metadata/labels/a"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "new"},
        {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/d"},
        {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/e~1f"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "y"},
        {"op": "test", "path": "/metadata/labels/b", "value": "2"},
    ]
    out = patch(pod(), ops, JSONP)
    assert out["metadata"]["labels"] == {"b": "2", "d": "2", "e/f": "3"}
    assert out["spec"]["containers"][0]["image"] == "new"
    assert out["metadata"]["finalizers"] == ["x", "y"]


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/metadata/labels/a", "value": "nope"}],
    [{"op": "remove", "path": "/metadata/labels/missing"}],
    [{"op": "replace", "path": "/spec/containers/9/image", "value": "x"}],
    [{"op": "frobnicate", "path": "/x"}],
    # As evanphx/json-patch (the real server's): a test under a missing parent fails even
    # for null, and nothing is added or copied at, or copied from, the root.
    [{"op": "test", "path": "/spec/nothing/here", "value": None}],
    [{"op": "add", "path": "", "value": {"metadata": {"name": "p"}}}],
    [{"op": "copy", "from": "", "path": "/spec/copy"}],
])
def test_json_patch_failures_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(PatchError) as err:
        patch(pod(), ops, JSONP)
    assert err.value.code == 422
    assert err.value.reason == "Invalid"


def test_json_patch_test_of_a_missing_key_reads_null_and_root_replace_takes_an_object() -> None:
    out = patch(pod(), [{"op": "test", "path": "/metadata/labels/missing", "value": None},
                        {"op": "replace", "path": "", "value": {"metadata": {"name": "q"}}}],
                JSONP)
    assert out == {"metadata": {"name": "q"}}


def test_json_patch_test_distinguishes_bool_from_int() -> None:
    obj = {"metadata": {"name": "p"}, "spec": {"x": True}}
    with pytest.raises(PatchError):
        patch(obj, [{"op": "test", "path": "/spec/x", "value": 1}], JSONP)


def test_malformed_body_is_400() -> None:
    with pytest.raises(PatchError) as err:
        apply_patch(pod(), b"{not json", MERGE, POD)
    assert err.value.code == 400


def test_strategic_merge_merges_containers_by_name() -> None:
    body = {"spec": {"containers": [
        {"name": "c", "image": "new"},
        {"name": "d", "$patch": "delete"},
        {"name": "e", "image": "i3"},
    ]}}
    out = patch(pod(), body, SMP)
    containers = out["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "e"]
    assert containers[0]["image"] == "new"
    assert containers[0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_strategic_merge_primitive_list_merge_and_delete_from_primitive_list() -> None:
    out = patch(pod(), {"metadata": {"finalizers": ["y"]}}, SMP)
    assert out["metadata"]["finalizers"] == ["x", "y"]
    out = patch(out, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}, SMP)
    assert out["metadata"]["finalizers"] == ["y"]


def test_strategic_merge_replace_directive_and_set_element_order() -> None:
    out = patch(pod(), {"metadata": {"labels": {"$patch": "replace", "z": "9"}}}, SMP)
    assert out["metadata"]["labels"] == {"z": "9"}
    body = {"spec": {"$setElementOrder/containers": [{"name": "d"}, {"name": "c"}],
                     "containers": [{"name": "c", "image": "x"}]}}
    out = patch(pod(), body, SMP)
    assert [c["name"] for c in out["spec"]["containers"]] == ["d", "c"]


def test_strategic_merge_atomic_list_is_replaced() -> None:
    es = ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True,
                      definition="io.k8s.api.discovery.v1.EndpointSlice")
    obj = {"metadata": {"name": "s"}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]}
    out = patch(obj, {"endpoints": [{"addresses": ["10.0.0.3"]}]}, SMP, es)
    assert out["endpoints"] == [{"addresses": ["10.0.0.3"]}]


def test_strategic_merge_on_custom_resource_is_415() -> None:
    with pytest.raises(PatchError) as err:
        patch({"metadata": {"name": "x"}}, {"spec": {}}, SMP, CR)
    assert (err.value.code, err.value.reason) == (415, "UnsupportedMediaType")


def test_unknown_content_type_is_415() -> None:
    with pytest.raises(PatchError) as err:
        patch(pod(), {}, "text/plain", POD)
    assert err.value.code == 415


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=2), kids,
                                                              max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=2), json_values, max_size=4),
       st.dictionaries(st.text(max_size=2), json_values, max_size=4))
def test_merge_patch_is_idempotent_and_pure(target: dict[str, Any], body: dict[str, Any]) -> None:
    before = copy.deepcopy(target)
    once = merge_patch(target, body)
    assert merge_patch(once, body) == once
    assert target == before
