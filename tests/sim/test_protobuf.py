"""Protobuf request bodies (what kubectl's typed clients send) decode into the stored JSON."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slicectl.sim.protobuf import MAGIC, MEDIA_TYPE, ProtobufError, decode
from tests.sim.conftest import Raw

# The bytes kubectl v1.32 sends for `kubectl create namespace a` (captured).
KUBECTL_NAMESPACE = (b'k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x19\n\x11\n\x01a\x12\x00\x1a\x00"'
                     b'\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00"\x00')


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return MAGIC + _field(1, type_meta) + _field(2, raw)


def test_kubectl_namespace_bytes_decode() -> None:
    assert decode(KUBECTL_NAMESPACE) == {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "a"}}


def test_object_meta_fields() -> None:
    owner = (_field(1, b"Service") + _field(3, b"svc") + _field(4, b"u-1")
             + _field(5, b"v1") + _field(6, 1))
    meta = (_field(2, b"gen-") + _field(7, 3) + _field(8, _field(1, 1_700_000_000))
            + _field(11, _field(1, b"app") + _field(2, b"x"))
            + _field(11, _field(1, b"tier") + _field(2, b""))
            + _field(12, _field(1, b"note") + _field(2, b"hi"))
            + _field(13, owner) + _field(14, b"f1") + _field(14, b"f2") + _field(99, b"?"))
    spec = _field(1, b"kubernetes")
    obj = decode(_envelope("v1", "Namespace", _field(1, meta) + _field(2, spec)))
    assert obj["metadata"] == {
        "generateName": "gen-", "generation": 3, "creationTimestamp": "2023-11-14T22:13:20Z",
        "labels": {"app": "x", "tier": ""}, "annotations": {"note": "hi"},
        "ownerReferences": [{"kind": "Service", "name": "svc", "uid": "u-1",
                             "apiVersion": "v1", "controller": True}],
        "finalizers": ["f1", "f2"]}
    assert obj["spec"] == {"finalizers": ["kubernetes"]}


def test_rejects_unknown_kind_and_garbage() -> None:
    for body in (_envelope("v1", "ConfigMap", b""), b"not protobuf", MAGIC + b"\n\xff"):
        try:
            decode(body)
        except ProtobufError:
            continue
        raise AssertionError(f"decoded {body!r}")


@given(name=st.text(alphabet="abcdefghij-", min_size=1, max_size=20),
       labels=st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=10),
                              max_size=5))
def test_names_and_labels_round_trip(name: str, labels: dict[str, str]) -> None:
    meta = _field(1, name.encode()) + b"".join(
        _field(11, _field(1, k.encode()) + _field(2, v.encode())) for k, v in labels.items())
    obj = decode(_envelope("v1", "Namespace", _field(1, meta)))
    expected: dict[str, object] = {"name": name}
    if labels:
        expected["labels"] = labels
    assert obj["metadata"] == expected


async def test_create_namespace_over_http(raw: Raw) -> None:
    code, body, headers = await raw.request("POST", "/api/v1/namespaces", KUBECTL_NAMESPACE,
                                            content_type=MEDIA_TYPE)
    assert code == 201, body
    assert headers["Content-Type"].startswith("application/json")
    assert body["metadata"]["name"] == "a"
    assert body["status"]["phase"] == "Active"
    code, body, _ = await raw.request("GET", "/api/v1/namespaces/a")
    assert code == 200 and body["spec"]["finalizers"] == ["kubernetes"]


async def test_unknown_protobuf_kind_is_415(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", "/api/v1/namespaces/default/pods",
                                      _envelope("v1", "Pod", b""), content_type=MEDIA_TYPE)
    assert code == 415
    assert body["reason"] == "UnsupportedMediaType"


async def test_protobuf_delete_options(raw: Raw) -> None:
    await raw.request("POST", "/api/v1/namespaces/default/pods", {
        "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    options = _envelope("v1", "DeleteOptions", _field(1, 0) + _field(5, b"All"))
    assert decode(options) == {"apiVersion": "v1", "kind": "DeleteOptions",
                               "gracePeriodSeconds": 0, "dryRun": ["All"]}
    code, body, _ = await raw.request("DELETE", "/api/v1/namespaces/default/pods/p", options,
                                      content_type=MEDIA_TYPE)
    assert code == 200, body
    code, _, _ = await raw.request("GET", "/api/v1/namespaces/default/pods/p")
    assert code == 200  # dryRun=All from the protobuf body: still there
