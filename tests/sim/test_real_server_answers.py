"""Answers a real kube-apiserver v1.32.6 gave where the embedded one was kinder.

Each request below was sent to that server (built from source, on loopback, 2026-11-24) and
to the embedded one; the expected answers are the real server's:

- a custom resource's body needs its own ``apiVersion`` (a built-in's defaults to the URL's);
  a null one is Unstructured's accessor error;
- ``metadata.generation`` may not be negative; a type that keeps no generation of its own
  (a Lease) stores the client's, one that does (a custom resource) sets 1 on create;
- a DELETE precondition given as an empty string is still a precondition.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, install_chart_crd

NS = "realanswers"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
ESELS = f"/apis/slicectl.io/v1alpha1/namespaces/{NS}/endpointselectors"
SPEC = {"selector": {"matchLabels": {"app": "web"}}}


@pytest.fixture
async def ns(raw: Raw) -> Raw:
    await install_chart_crd(raw, NS)
    return raw


@pytest.mark.parametrize(("api_version", "message"), [
    ({}, "the API version in the data () does not match the expected API version "
         "(slicectl.io/v1alpha1)"),
    ({"apiVersion": ""}, "the API version in the data () does not match the expected API "
                         "version (slicectl.io/v1alpha1)"),
    ({"apiVersion": None}, 'EndpointSelector in version "" cannot be handled as a '
                           "EndpointSelector: .apiVersion accessor error: <nil> is of the "
                           "type <nil>, expected string"),
])
async def test_a_custom_resource_needs_its_api_version(ns: Raw, api_version: dict[str, Any],
                                                       message: str) -> None:
    body = {**api_version, "kind": "EndpointSelector", "metadata": {"name": "a"}, "spec": SPEC}
    code, answer, _ = await ns.request("POST", ESELS, body, dryRun="All")
    assert (code, answer["reason"], answer["message"]) == (400, "BadRequest", message)


async def test_generation_is_never_negative_and_kept_where_the_type_keeps_none(
        ns: Raw) -> None:
    code, answer, _ = await ns.request("POST", LEASES, {"metadata": {
        "name": "g", "generation": -1, "labels": {"a/b/c": "x"}}}, dryRun="All")
    assert code == 422
    assert [c["field"] for c in answer["details"]["causes"]] == ["metadata.generation",
                                                                 "metadata.labels"]
    assert answer["details"]["causes"][0]["message"] == (
        "Invalid value: -1: must be greater than or equal to 0")
    code, answer, _ = await ns.request("POST", LEASES, {"metadata": {"name": "g5",
                                                                     "generation": 5}})
    assert (code, answer["metadata"]["generation"]) == (201, 5)
    body = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "g", "generation": -1}, "spec": SPEC}
    code, answer, _ = await ns.request("POST", ESELS, body, dryRun="All")
    assert (code, answer["metadata"]["generation"]) == (201, 1)


@pytest.mark.parametrize("field", ["uid", "resourceVersion"])
async def test_an_empty_delete_precondition_is_still_one(ns: Raw, field: str) -> None:
    code, _, _ = await ns.request("POST", LEASES, {"metadata": {"name": "d"}})
    assert code == 201
    code, answer, _ = await ns.request("DELETE", f"{LEASES}/d",
                                       {"preconditions": {field: ""}, "dryRun": ["All"]})
    name = "UID" if field == "uid" else "ResourceVersion"
    assert code == 409 and answer["message"].startswith(
        f'Operation cannot be fulfilled on Lease.coordination.k8s.io "d": the {name} in the '
        f"precondition () does not match the {name} in record (")
