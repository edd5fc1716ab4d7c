"""The Accept header negotiated as a real kube-apiserver v1.32.6 negotiates it, or a 406.

Each expected answer below was captured from that server (on loopback, 2026-11-28) with the
same raw request; the embedded server served JSON to all of them before. A built-in type's
go-restful route wants a clause whose bare media type is exactly ``*/*`` or one it produces;
then every handler, before it reads a body or looks an object up, wants a clause whose
parameters fit (a Table or metadata in ``meta.k8s.io``, a ``watch`` stream on JSON), and a
watch a stream serializer for the first clause that fits.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from slicectl.sim.negotiation import parse_accept
from tests.sim.conftest import PODS, Raw, install_chart_crd, pod

SELECTORS = "/apis/slicectl.io/v1alpha1/namespaces/default/endpointselectors"
PROTOBUF = "application/vnd.kubernetes.protobuf"
OFFERED = f"application/json, application/yaml, {PROTOBUF}"
STREAMS = f"application/json;stream=watch, {PROTOBUF};stream=watch"
ROUTE_406 = "406: Not Acceptable\n\nAvailable representations: " + OFFERED
HANDLER_406 = "only the following media types are accepted: " + OFFERED
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
SELECTOR = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "es"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}}


async def _send(raw: Raw, method: str, path: str, accept: str, body: Any = None,
                **params: str) -> tuple[int, Any]:
    data = None if body is None else orjson.dumps(body)
    async with raw.session.request(method, raw.srv.url + path, data=data, params=params,
                                   headers={"Accept": accept,
                                            "Content-Type": "application/json"}) as resp:
        text = await resp.text()
    lines = text.splitlines()
    return resp.status, orjson.loads(lines[0]) if lines else None


@pytest.fixture
async def objects(raw: Raw) -> None:
    await install_chart_crd(raw)
    assert (await raw.request("POST", PODS, pod("a")))[0] == 201
    assert (await raw.request("POST", SELECTORS, SELECTOR))[0] == 201


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "text/*", "application/*",
                                    "APPLICATION/JSON", "garbage", ",", "text/plain", "*",
                                    "application/*;as=Table;g=meta.k8s.io;v=v1"])
@pytest.mark.parametrize(("path", "extra"), [(f"{PODS}/a", ""), (PODS, ", " + STREAMS)])
async def test_a_built_in_route_refuses_what_it_does_not_produce(
        raw: Raw, objects: None, accept: str, path: str, extra: str) -> None:
    code, body = await _send(raw, "GET", path, accept)
    assert (code, body["message"], body["details"]) == (406, ROUTE_406 + extra, {})


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "text/*", "APPLICATION/JSON",
                                    "garbage", "application", "application/json/x",
                                    "application/json;as=Table", "application/json;as=Bogus",
                                    TABLE.replace("v=v1", "v=v2"), TABLE.replace("meta", "x"),
                                    "application/json;g=meta.k8s.io;v=v1",
                                    f"{PROTOBUF};as=Table;g=meta.k8s.io;v=v1", PROTOBUF,
                                    "application/json;stream=bogus", "application/json;sv=v2"])
@pytest.mark.parametrize("path", [f"{SELECTORS}/es", SELECTORS])
async def test_a_handler_refuses_what_it_cannot_serve(raw: Raw, objects: None, accept: str,
                                                      path: str) -> None:
    code, body = await _send(raw, "GET", path, accept)
    assert (code, body["reason"], body["message"]) == (406, "NotAcceptable", HANDLER_406)


@pytest.mark.parametrize("accept", ["application/json;as=Table", "application/json;as=Bogus",
                                    TABLE.replace("v=v1", "v=v2"),
                                    "application/json;g=meta.k8s.io;v=v1"])
async def test_a_built_in_handler_refuses_bad_parameters(raw: Raw, objects: None,
                                                         accept: str) -> None:
    code, body = await _send(raw, "GET", f"{PODS}/a", accept)
    assert (code, body["message"]) == (406, HANDLER_406)


@pytest.mark.parametrize(("accept", "kind"), [
    ("", "Pod"), ("*/*", "Pod"), ("application/json;q=0", "Pod"), ("text/html, */*", "Pod"),
    ("application/json;stream=watch", "Pod"), ("application/json;charset=utf-8;foo", "Pod"),
    (f"{PROTOBUF}, application/json", "Pod"), ("*/*;as=Table;g=meta.k8s.io;v=v1", "Table"),
    (TABLE.replace("v=v1", "v=v1beta1") + ", application/json", "Table"),
    ("application/json;as=Bogus, application/json", "Pod"),
])
async def test_what_a_built_in_serves(raw: Raw, objects: None, accept: str, kind: str) -> None:
    code, body = await _send(raw, "GET", f"{PODS}/a", accept)
    assert (code, body["kind"]) == (200, kind)


async def test_application_star_is_json_for_a_custom_resource(raw: Raw, objects: None) -> None:
    code, body = await _send(raw, "GET", f"{SELECTORS}/es", "application/*")
    assert (code, body["kind"]) == (200, "EndpointSelector")


@pytest.mark.parametrize("accept", ["application/yaml", "application/yaml, application/json",
                                    "application/json;q=0.5, application/yaml",
                                    "*/*;q=1, application/yaml;q=0.5"])
@pytest.mark.parametrize("path", [PODS, SELECTORS])
async def test_a_watch_needs_a_stream_for_the_first_clause_that_fits(
        raw: Raw, objects: None, accept: str, path: str) -> None:
    """YAML has no stream serializer; the order is goautoneg's (by ``q``, then a specific
    type before ``*/*``, by Go's insertion sort)."""
    code, body = await _send(raw, "GET", path, accept, watch="1", timeoutSeconds="1",
                             resourceVersion="1")
    assert (code, body["message"]) == (406, "only the following media types are accepted: "
                                       + STREAMS)


@pytest.mark.parametrize("accept", ["application/yaml;stream=watch", "application/json;sv=v2"])
async def test_a_watch_refuses_a_clause_that_does_not_fit(raw: Raw, objects: None,
                                                          accept: str) -> None:
    code, body = await _send(raw, "GET", PODS, accept, watch="1", timeoutSeconds="1")
    assert (code, body["message"]) == (406, HANDLER_406)


@pytest.mark.parametrize(("method", "path", "body", "params"), [
    ("GET", f"{SELECTORS}/nope", None, {}),
    ("GET", SELECTORS, None, {"labelSelector": "a$"}),  # ... but the query is decoded first
    ("POST", SELECTORS, {"metadata": {"name": "x"}}, {"dryRun": "x"}),
    ("PUT", f"{SELECTORS}/es", {"metadata": {"name": "es"}}, {"dryRun": "x"}),
    ("DELETE", f"{SELECTORS}/nope", None, {"dryRun": "All"}),
    ("DELETE", SELECTORS, None, {"dryRun": "All", "labelSelector": "a$"}),
])
async def test_a_handler_negotiates_first(raw: Raw, objects: None, method: str, path: str,
                                          body: Any, params: dict[str, str]) -> None:
    code, answer = await _send(raw, method, path, "text/html", body, **params)
    expected = 400 if method == "GET" and params else 406
    assert code == expected, answer


async def test_a_built_in_route_refuses_before_the_handler(raw: Raw, objects: None) -> None:
    code, body = await _send(raw, "DELETE", f"{PODS}/nope", "text/html", dryRun="All")
    assert (code, body["message"]) == (406, ROUTE_406)
    code, body = await _send(raw, "GET", PODS, "text/html", resourceVersionMatch="Bogus")
    assert (code, body["message"]) == (406, f"{ROUTE_406}, {STREAMS}")


def test_accept_clauses_in_goautoneg_order() -> None:
    """Its ``Less`` is no strict order: Go's insertion sort (for n <= 12) decides, and puts a
    specific type with a lower ``q`` before ``*/*``."""
    clauses = parse_accept("*/*;q=1, application/yaml;q=0.5, application/, */, x, a/b/c, "
                           "text/html;as=;g=a=b;v= v1 ")
    assert [(c.type, c.subtype, c.q, c.params) for c in clauses] == [
        ("text", "html", 1.0, {"v": "v1"}), ("application", "yaml", 0.5, {}),
        ("*", "*", 1.0, {}), ("*", "*", 1.0, {})]
