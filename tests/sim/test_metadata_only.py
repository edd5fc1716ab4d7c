"""Metadata-only list, get and watch (PartialObjectMetadata), raw and with slicectl's client."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import NODES
from slicectl.sim.negotiation import representation
from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import Raw

META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
NODES_PATH = "/api/v1/nodes"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"podCIDR": "10.0.0.0/24"}}


async def get(raw: Raw, path: str, accept: str, **params: str) -> tuple[int, Any]:
    async with raw.session.get(raw.srv.url + path, params=params,
                               headers={"Accept": accept}) as resp:
        return resp.status, orjson.loads(await resp.read())


def test_accept_negotiation() -> None:
    assert representation(META_LIST) == "PartialObjectMetadataList"
    assert representation(META_ONE) == "PartialObjectMetadata"
    assert representation("application/json") == "object"
    assert representation("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;"
                          "g=meta.k8s.io;v=v1," + META_LIST) == "PartialObjectMetadataList"
    assert representation("application/json;as=Table;v=v1;g=meta.k8s.io,"
                          "application/json") == "Table"
    assert representation("application/json;as=Unknown;g=x;v=v1,application/json") == "object"


async def test_list_and_get_metadata_only(raw: Raw) -> None:
    for name in ("n1", "n2"):
        code, _, _ = await raw.request("POST", NODES_PATH, node(name, zone="a"))
        assert code == 201
    code, body = await get(raw, NODES_PATH, META_LIST, labelSelector="zone=a")
    assert code == 200
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["apiVersion"] == "meta.k8s.io/v1"
    assert body["metadata"]["resourceVersion"] == str(raw.srv.store.rv)
    assert [i["metadata"]["name"] for i in body["items"]] == ["n1", "n2"]
    assert all(set(i) == {"kind", "apiVersion", "metadata"} for i in body["items"])
    assert body["items"][0]["kind"] == "PartialObjectMetadata"
    assert body["items"][0]["metadata"]["labels"] == {"zone": "a"}
    code, body = await get(raw, NODES_PATH, META_LIST, limit="1")
    assert code == 200 and len(body["items"]) == 1 and body["metadata"]["continue"]
    code, body = await get(raw, NODES_PATH + "/n1", META_ONE)
    assert code == 200
    assert body == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": body["metadata"]}
    assert body["metadata"]["name"] == "n1" and body["metadata"]["uid"]


async def test_wrong_shape_is_not_acceptable(raw: Raw) -> None:
    await raw.request("POST", NODES_PATH, node("n1"))
    code, body = await get(raw, NODES_PATH, META_ONE)
    assert code == 406 and body["reason"] == "NotAcceptable"
    code, body = await get(raw, NODES_PATH + "/n1", META_LIST)
    assert code == 406 and body["reason"] == "NotAcceptable"


async def test_watch_metadata_only_with_bookmarks(raw: Raw) -> None:
    await raw.request("POST", NODES_PATH, node("n0"))
    rv = str(raw.srv.store.rv)
    events: list[dict[str, Any]] = []

    async def collect() -> None:
        params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
        async with raw.session.get(raw.srv.url + NODES_PATH, params=params,
                                   headers={"Accept": META_ONE}) as resp:
            assert resp.status == 200
            async for line in resp.content:
                events.append(orjson.loads(line))
                if events[-1]["type"] == "BOOKMARK":
                    return

    task = asyncio.create_task(collect())
    await asyncio.sleep(0.05)
    await raw.request("POST", NODES_PATH, node("n1"))
    await raw.request("PATCH", NODES_PATH + "/n1", {"metadata": {"labels": {"x": "y"}}},
                      content_type="application/merge-patch+json")
    await raw.request("DELETE", NODES_PATH + "/n1")
    await asyncio.wait_for(task, 10)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    for event in events:
        assert event["object"]["kind"] == "PartialObjectMetadata"
        assert set(event["object"]) == {"kind", "apiVersion", "metadata"}
    assert events[1]["object"]["metadata"]["labels"] == {"x": "y"}
    assert events[3]["object"]["metadata"]["resourceVersion"] == str(raw.srv.store.rv)


async def test_full_and_metadata_watchers_share_one_event(raw: Raw) -> None:
    """Both representations of one event go out, each serialized once for all watchers."""
    await raw.request("POST", NODES_PATH, node("n1"))
    rv = str(raw.srv.store.rv)
    params = {"watch": "true", "resourceVersion": rv}
    url = raw.srv.url + NODES_PATH

    async def first(accept: str) -> dict[str, Any]:
        async with raw.session.get(url, params=params, headers={"Accept": accept}) as resp:
            async for line in resp.content:
                return dict(orjson.loads(line))
        raise AssertionError("stream ended")

    tasks = [asyncio.create_task(first(a)) for a in (META_ONE, META_ONE, "application/json")]
    await asyncio.sleep(0.05)
    await raw.request("PUT", NODES_PATH + "/n1", {**node("n1"), "metadata": {
        "name": "n1", "labels": {"a": "b"}}})
    meta1, meta2, full = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert meta1 == meta2 and meta1["object"]["kind"] == "PartialObjectMetadata"
    assert full["object"]["kind"] == "Node" and full["object"]["spec"]["podCIDR"]
    assert full["object"]["metadata"] == meta1["object"]["metadata"]
    event = raw.srv.store.bucket(raw.srv.registry.by_gvr[("", "v1", "nodes")]).history[-1]
    assert event.line("MODIFIED", True) is event.line("MODIFIED", True)


async def test_slicectl_client_metadata_only(srv: EmbeddedApiServer, raw: Raw) -> None:
    await raw.request("POST", NODES_PATH, node("n1", zone="a"))
    client = await KubeClient.connect(kubeconfig=srv.kubeconfig_path)
    try:
        items, rv = await client.list(NODES, metadata_only=True)
        assert [i["metadata"]["name"] for i in items] == ["n1"]
        assert items[0]["kind"] == "PartialObjectMetadata" and "spec" not in items[0]
        seen: list[tuple[str, str]] = []

        async def consume() -> None:
            async for event in client.watch(NODES, resource_version=rv, metadata_only=True,
                                            timeout_seconds=10):
                seen.append((event.type, event.object["kind"]))
                if event.type == "ADDED":
                    return

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.05)
        await raw.request("POST", NODES_PATH, node("n2"))
        await asyncio.wait_for(task, 10)
        assert ("ADDED", "PartialObjectMetadata") in seen
    finally:
        await client.close()

