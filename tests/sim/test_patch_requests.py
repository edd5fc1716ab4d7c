"""PATCH requests answered as a real kube-apiserver v1.32.6 answers them.

Each expected answer below was captured from that server (on loopback, 2026-11-28) with the
same raw request; the embedded server accepted them before:

- the patch type is the Content-Type before its first ``;``, compared exactly (patch.go): no
  case folding, no space before the ``;``; a built-in's route (go-restful) refuses first, in its
  own words, a media type it does not consume. The 415 comes before anything else: before the
  options are validated and before the object is looked up;
- a server-side apply patch must name the type it is applied to: its ``apiVersion`` and
  ``kind`` exactly the resource's (the subresource's too), or a 400 ``invalid object type``
  (``versionCheckManager``); a YAML document that is no map is a decode error.
"""

from __future__ import annotations

import pytest

from tests.sim.conftest import Raw, install_chart_crd

NS = "patchreq"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
ESELS = f"/apis/slicectl.io/v1alpha1/namespaces/{NS}/endpointselectors"
LABEL = {"metadata": {"labels": {"x": "y"}}}
RESTFUL_415 = "415: Unsupported Media Type"
BUILTIN_415 = ("the body of the request was in an unknown format - accepted media types "
               "include: application/json-patch+json, application/merge-patch+json, "
               "application/strategic-merge-patch+json, application/apply-patch+yaml")
CUSTOM_415 = ("the body of the request was in an unknown format - accepted media types "
              "include: application/json-patch+json, application/merge-patch+json, "
              "application/apply-patch+yaml")


@pytest.fixture
async def ns(raw: Raw) -> Raw:
    await install_chart_crd(raw, NS)
    code, _, _ = await raw.request("POST", LEASES, {"metadata": {"name": "l1"}})
    assert code == 201
    body = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "es1"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}}
    code, _, _ = await raw.request("POST", ESELS, body)
    assert code == 201
    return raw


@pytest.mark.parametrize(("content_type", "lease", "selector"), [
    ("APPLICATION/merge-patch+json", RESTFUL_415, CUSTOM_415),
    ("Application/Merge-Patch+JSON", RESTFUL_415, CUSTOM_415),
    (";application/merge-patch+json", RESTFUL_415, CUSTOM_415),
    ("application/merge-patch+json ;charset=utf-8", BUILTIN_415, CUSTOM_415),
    ("application/merge-patch+json,text/plain", BUILTIN_415, CUSTOM_415),
    ("text/plain", RESTFUL_415, CUSTOM_415),
    ("application/strategic-merge-patch+json", None, CUSTOM_415),
])
async def test_the_patch_type_is_matched_exactly(ns: Raw, content_type: str, lease: str | None,
                                                 selector: str) -> None:
    for path, message in ((f"{LEASES}/l1", lease), (f"{ESELS}/es1", selector)):
        code, body, _ = await ns.request("PATCH", path, LABEL, content_type, dryRun="All")
        if message is None:
            assert code == 200, body
        else:
            assert (code, body["reason"], body["message"]) == (415, "UnsupportedMediaType",
                                                               message)


@pytest.mark.parametrize("content_type", ["application/merge-patch+json;",
                                          "application/merge-patch+json; charset=utf-8"])
async def test_parameters_after_the_patch_type_are_ignored(ns: Raw, content_type: str) -> None:
    code, body, _ = await ns.request("PATCH", f"{LEASES}/l1", LABEL, content_type, dryRun="All")
    assert (code, body["metadata"]["labels"]) == (200, {"x": "y"})


async def test_the_415_comes_first(ns: Raw) -> None:
    code, body, _ = await ns.request("PATCH", f"{LEASES}/nope", LABEL, "text/plain", dryRun="x")
    assert (code, body["message"]) == (415, RESTFUL_415)
    code, body, _ = await ns.request("PATCH", f"{ESELS}/nope", LABEL, "text/plain", dryRun="x")
    assert (code, body["message"]) == (415, CUSTOM_415)


APPLY = "application/apply-patch+yaml"
LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1"}}
SELECTOR = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "es1"}, "status": {"endpoints": 1}}


@pytest.mark.parametrize(("path", "body", "gvk"), [
    ("leases/l1", {**LEASE, "apiVersion": None}, "/, Kind=Lease"),
    ("leases/l1", {k: v for k, v in LEASE.items() if k != "apiVersion"}, "/, Kind=Lease"),
    ("leases/l1", {k: v for k, v in LEASE.items() if k != "kind"},
     "coordination.k8s.io/v1, Kind="),
    ("leases/l1", {**LEASE, "apiVersion": "v1"}, "/v1, Kind=Lease"),
    ("leases/l1", {**LEASE, "apiVersion": "coordination.k8s.io/v1beta1"},
     "coordination.k8s.io/v1beta1, Kind=Lease"),
    ("leases/l1", {**LEASE, "kind": "Pod"}, "coordination.k8s.io/v1, Kind=Pod"),
    ("leases/l1", {**LEASE, "apiVersion": "a/b/c"}, "/, Kind="),
    ("leases/new", {**LEASE, "kind": "lease", "metadata": {"name": "new"}},
     "coordination.k8s.io/v1, Kind=lease"),
    ("endpointselectors/es1", {**SELECTOR, "apiVersion": "slicectl.io/v1"},
     "slicectl.io/v1, Kind=EndpointSelector"),
    ("endpointselectors/es1", {k: v for k, v in SELECTOR.items() if k != "kind"},
     "slicectl.io/v1alpha1, Kind="),
    ("endpointselectors/es1/status", {"metadata": {"name": "es1"}, "status": {"endpoints": 1}},
     "/, Kind="),
    ("leases/l1", b"", "/, Kind="),
    ("leases/l1", b"null", "/, Kind="),
])
async def test_an_apply_names_its_type(ns: Raw, path: str, body: object, gvk: str) -> None:
    base = LEASES if path.startswith("leases") else ESELS
    code, answer, _ = await ns.request("PATCH", f"{base}/{path.split('/', 1)[1]}", body, APPLY,
                                       dryRun="All", fieldManager="m")
    assert (code, answer["reason"], answer["message"]) == (400, "BadRequest",
                                                           f"invalid object type: {gvk}")


async def test_an_apply_of_a_list_is_a_decode_error(ns: Raw) -> None:
    code, answer, _ = await ns.request("PATCH", f"{LEASES}/l1", b"- a\n", APPLY, dryRun="All",
                                       fieldManager="m")
    assert (code, answer["message"]) == (400, "error decoding YAML: error unmarshaling JSON: "
                                         "while decoding JSON: json: cannot unmarshal array "
                                         "into Go value of type map[string]interface {}")
