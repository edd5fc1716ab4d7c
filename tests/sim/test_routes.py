"""Methods a resource path has no route for, answered as a real kube-apiserver v1.32.6 answers.

Each expected answer below was captured from that server (on loopback, 2026-11-28) with the
same raw request. A built-in type's routes are go-restful's, which refuses a method its path
has no route for (PUT or PATCH on a collection, POST on one object, DELETE on a status) with
a 405 before anything else, the Accept header and the options too; the custom resource handler
serves every method and refuses a PUT or PATCH on a collection, once the PATCH's Content-Type
passed, with a 400 ``name must be provided``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import PODS, Raw, install_chart_crd, pod

SELECTORS = "/apis/slicectl.io/v1alpha1/namespaces/default/endpointselectors"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
MERGE = "application/merge-patch+json"
NO_ROUTE = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server does not allow this method on the requested resource",
            "reason": "MethodNotAllowed", "details": {}, "code": 405}


@pytest.mark.parametrize(("method", "path", "content_type"), [
    ("PUT", PODS, "application/json"),
    ("PUT", LEASES, "application/json"),
    ("PUT", "/api/v1/pods", "application/json"),
    ("PATCH", PODS, MERGE),
    ("PATCH", LEASES, "application/apply-patch+yaml"),
    ("PATCH", PODS, "text/plain"),
    ("PATCH", "/api/v1/pods", MERGE),
    ("POST", f"{PODS}/a", "application/json"),
    ("DELETE", f"{PODS}/a/status", "application/json"),
])
async def test_a_built_in_path_without_the_method_is_a_405(
        raw: Raw, method: str, path: str, content_type: str) -> None:
    await raw.request("POST", PODS, pod("a"))
    code, body, _ = await raw.request(method, path, {"metadata": {"name": "a"}},
                                      content_type=content_type, dryRun="x")
    assert (code, body) == (405, NO_ROUTE)


@pytest.mark.parametrize(("method", "content_type"), [
    ("PUT", "application/json"), ("PATCH", MERGE), ("PATCH", "application/apply-patch+yaml")])
async def test_a_custom_resource_collection_takes_no_put_or_patch(
        raw: Raw, method: str, content_type: str) -> None:
    await install_chart_crd(raw)
    code, body, _ = await raw.request(method, SELECTORS, {"metadata": {"name": "x"}},
                                      content_type=content_type, dryRun="x")
    assert (code, body["reason"], body["message"]) == (400, "BadRequest", "name must be provided")


async def test_a_custom_resource_collection_patch_checks_its_content_type_first(
        raw: Raw) -> None:
    await install_chart_crd(raw)
    code, body, _ = await raw.request("PATCH", SELECTORS, {}, content_type="text/plain")
    expected: dict[str, Any] = {
        "reason": "UnsupportedMediaType",
        "message": "the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml"}
    assert (code, {k: body[k] for k in expected}) == (415, expected)
