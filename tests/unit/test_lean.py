"""Byte-level list splitting and managedFields stripping give exactly what a full decode gives
(minus managedFields), including on shapes that defeat the shortcuts."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.kube.lean import loads_lean, split_list, without_managed_fields

MANAGED = [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {
                'k:{"name":"c"}': {".": {}}}}, "f:metadata": {"f:labels": {}}}}]


def pod(name: str, managed_last: bool = True, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"u-{name}",
                            "resourceVersion": "7", "labels": {"app": "x"}}
    if managed_last:
        meta["managedFields"] = MANAGED
    else:
        meta = {"managedFields": MANAGED, **meta}
    return {"metadata": meta, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}, **extra}


def stripped(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def test_managed_fields_cut_when_last_and_kept_otherwise() -> None:
    raw = orjson.dumps(pod("a"))
    assert orjson.loads(without_managed_fields(raw)) == stripped(pod("a"))
    first = orjson.dumps(pod("b", managed_last=False))  # labels after it: no cut
    assert without_managed_fields(first) is first
    middle = pod("m")
    meta = middle["metadata"]
    del meta["labels"]  # managedFields, then keys slicectl reads, then an array: no cut
    middle["metadata"] = {**meta, "labels": {"app": "x"}, "finalizers": ["f"]}
    raw_middle = orjson.dumps(middle)
    assert raw_middle.find(b'"finalizers":["f"]},"spec":{') > 0
    assert without_managed_fields(raw_middle) is raw_middle
    event = orjson.dumps({"type": "MODIFIED", "object": pod("c")})
    assert orjson.loads(without_managed_fields(event))["object"] == stripped(pod("c"))
    assert loads_lean(raw) == stripped(pod("a"))


# Strings that look like the cut's landmarks: a ``]`` (where the cut looks for the array's
# end), ``},"spec":{`` (what must follow it), quotes and backslashes (escaped by the encoder).
tricky = st.sampled_from(["]", '},"spec":{', ']},"spec":{', '"', "\\", "[", "kubelet", ""])
texts = st.lists(tricky, max_size=4).map("".join)
entries = st.lists(st.fixed_dictionaries({
    "manager": texts, "operation": st.sampled_from(["Update", "Apply"]),
    "fieldsV1": st.dictionaries(texts.map(lambda t: "f:" + t), st.just({}), max_size=3),
}), min_size=1, max_size=3)
other_keys = st.dictionaries(st.sampled_from(["labels", "annotations", "finalizers", "uid"]),
                             st.one_of(texts, st.lists(texts, max_size=2),
                                       st.dictionaries(texts, texts, max_size=2)), max_size=3)


@settings(max_examples=500, deadline=None)
@given(entries, other_keys, other_keys, st.booleans())
def test_a_cut_is_right_or_not_made(managed: list[dict[str, Any]], before: dict[str, Any],
                                    after: dict[str, Any], envelope: bool) -> None:
    """Whatever the strings hold and wherever managedFields sits, the lean bytes decode to the
    object minus managedFields, or are the input itself; and the usual shape (last key, no
    ``]`` in an entry) is always cut."""
    obj = {"metadata": {"name": "p", **before, "managedFields": managed, **after},
           "spec": {"nodeName": "n", "x": [{"spec": {}}]}, "status": {}}
    raw = orjson.dumps({"type": "MODIFIED", "object": obj} if envelope else obj)
    lean = without_managed_fields(raw)
    usual = not after and all(b"]" not in orjson.dumps(e) for e in managed)
    if lean is raw:
        assert not usual, "the usual shape is cut"
        return
    try:
        got = orjson.loads(lean)
    except orjson.JSONDecodeError:
        assert not usual, "the usual shape's cut decodes"
        return  # a misplaced cut never decodes: the caller decodes in full
    assert (got["object"] if envelope else got) == stripped(obj)


names = st.text(alphabet='ab{}[]",:\\ ', min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(names, st.booleans(), st.booleans()), max_size=6),
       st.sampled_from(["metadata", "apiVersion"]))
def test_split_list_equals_a_full_decode(
    specs: list[tuple[str, bool, bool]], first_key: str
) -> None:
    items = []
    for name, last, owners in specs:
        item = pod(name, managed_last=last)
        if owners:  # nested objects that start like an item does
            item["spec"]["x"] = [{first_key: "v1", "n": 1}, {first_key: "v1", "n": 2}]
        if first_key == "apiVersion":
            item = {"apiVersion": "v1", "kind": "Pod", **item}
        items.append(item)
    body = orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "9"}, "items": items})
    split = split_list(body)
    assert split is not None
    envelope, decoded = split
    assert envelope["metadata"] == {"resourceVersion": "9"}
    got = list(decoded)
    assert len(got) == len(items)
    for have, want in zip(got, items, strict=True):
        assert have in (want, stripped(want))


def test_split_list_refuses_other_shapes() -> None:
    assert split_list(orjson.dumps({"items": [], "metadata": {}})) is None
    assert split_list(b'{"kind":"PodList","items":[]}') is not None
