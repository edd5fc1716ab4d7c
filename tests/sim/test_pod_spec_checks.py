"""Pod spec checks a real kube-apiserver v1.32.6 makes that the embedded one had skipped.

Found by sending the same random pods to both (2026-11-24): a node name or hostname that is no
DNS name, and an image with surrounding whitespace, were stored here and refused there. Each
expected answer below is that server's, for the same ``dryRun=All`` create.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw

NS = "podspec"
PODS = f"/api/v1/namespaces/{NS}/pods"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
             "characters, '-' or '.', and must start and end with an alphanumeric character "
             "(e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
         "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
         "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
WHITESPACE = "must not have leading or trailing whitespace"


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


@pytest.fixture
async def ns(raw: Raw) -> Raw:
    code, body, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    assert code == 201, body
    return raw


@pytest.mark.parametrize(("spec", "causes"), [
    ({"nodeName": "node-1 "}, [("spec.nodeName", "node-1 ", SUBDOMAIN)]),
    ({"hostname": "-"}, [("spec.hostname", "-", LABEL)]),
    ({"containers": [{"name": "c", "image": " nginx"}]},
     [("spec.containers[0].image", " nginx", WHITESPACE)]),
    ({"containers": [{"name": "c", "image": "nginx\t"}], "hostname": "Web", "nodeName": "N"},
     [("spec.nodeName", "N", SUBDOMAIN), ("spec.hostname", "Web", LABEL),
      ("spec.containers[0].image", "nginx\t", WHITESPACE)]),
])
async def test_refused_as_a_real_server_refuses(ns: Raw, spec: dict[str, Any],
                                                causes: list[tuple[str, str, str]]) -> None:
    code, body, _ = await ns.request("POST", PODS, _pod(**spec), dryRun="All")
    assert code == 422, body
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        (field, f"Invalid value: {_go_quoted(value)}: {why}") for field, value, why in causes]


def _go_quoted(text: str) -> str:
    """Go's %q of the plain strings used here (a tab is its only escape)."""
    return "\"" + text.replace("\t", "\\t") + "\""


async def test_dns_names_and_a_clean_image_are_accepted(ns: Raw) -> None:
    code, body, _ = await ns.request("POST", PODS, _pod(nodeName="node-1.zone-a",
                                                        hostname="web-0"), dryRun="All")
    assert code == 201, body
