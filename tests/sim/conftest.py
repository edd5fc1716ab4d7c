"""Fixtures: an embedded API server per test, a raw HTTPS client for it, and the chart's CRD."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from multidict import CIMultiDictProxy

from slicectl.sim.server import EmbeddedApiServer

CHART_CRD: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parents[2] / "charts/slicectl/crds/slicectl.io_endpointselectors.yaml")
    .read_text())
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def until(cond: Callable[[], bool]) -> None:
    """Poll ``cond`` until true (a hang guard of 10 s, no SLA)."""
    for _ in range(500):
        if cond():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in 10 s")


class Raw:
    """A thin aiohttp client speaking to the embedded server with its token and CA."""

    def __init__(self, srv: EmbeddedApiServer, session: aiohttp.ClientSession) -> None:
        self.srv = srv
        self.session = session

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = "application/json",
                      **params: Any) -> tuple[int, Any, CIMultiDictProxy[str]]:
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
        async with self.session.request(method, self.srv.url + path, data=data, params=query,
                                        headers={"Content-Type": content_type}) as resp:
            raw = await resp.read()
            try:
                parsed: Any = orjson.loads(raw)
            except orjson.JSONDecodeError:
                parsed = raw.decode()
            return resp.status, parsed, resp.headers

    async def watch_lines(self, path: str, count: int, limit_s: float = 10.0,
                          **params: Any) -> list[dict[str, Any]]:
        """The first ``count`` watch events (fewer if the stream ends)."""
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
        query["watch"] = "true"
        events: list[dict[str, Any]] = []
        async with self.session.get(self.srv.url + path, params=query,
                                    timeout=aiohttp.ClientTimeout(total=limit_s)) as resp:
            assert resp.status == 200
            async for line in resp.content:
                if line.strip():
                    events.append(orjson.loads(line))
                if len(events) >= count:
                    break
        return events


async def install_chart_crd(raw: Raw, namespace: str = "") -> None:
    """Create the chart's CRD (and ``namespace``, if named) and wait until the EndpointSelector
    API is served, as a client of a real server must (a hang guard of 20 s, no SLA)."""
    code, body, _ = await raw.request("POST", CRDS, CHART_CRD)
    assert code == 201, body
    if namespace:
        code, body, _ = await raw.request("POST", "/api/v1/namespaces",
                                          {"metadata": {"name": namespace}})
        assert code == 201, body
    for _ in range(400):
        code, _, _ = await raw.request("GET", "/apis/slicectl.io/v1alpha1")
        if code == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the EndpointSelector API was never served")


def ssl_context(kubeconfig_path: str) -> ssl.SSLContext:
    with open(kubeconfig_path) as fh:
        config = yaml.safe_load(fh)
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    return ssl.create_default_context(cadata=ca.decode())


@pytest.fixture
async def srv() -> AsyncIterator[EmbeddedApiServer]:
    async with EmbeddedApiServer(bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
async def raw(srv: EmbeddedApiServer) -> AsyncIterator[Raw]:
    connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
    async with aiohttp.ClientSession(
        connector=connector, headers={"Authorization": f"Bearer {srv.token}"}
    ) as session:
        yield Raw(srv, session)


def pod(name: str, labels: dict[str, str] | None = None, node: str = "",
        **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}, **meta}, "spec": spec}


PODS = "/api/v1/namespaces/default/pods"
