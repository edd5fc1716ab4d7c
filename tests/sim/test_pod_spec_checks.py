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


PORT_NAME = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
PORT_RANGE = "must be between 1 and 65535, inclusive"


def _ports(*ports: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "nginx", "ports": list(ports)}]}


# Answers of the real kube-apiserver v1.32.6 (2026-11-28, dryRun=All creates): container
# ports are checked (validateContainerPorts), here too since slicectl resolves named
# targetPorts from them
@pytest.mark.parametrize(("spec", "causes"), [
    (_ports({"name": "web", "containerPort": 1}, {"name": "web", "containerPort": 2,
                                                  "protocol": "UDP"}),
     [("spec.containers[0].ports[1].name", "FieldValueDuplicate", 'Duplicate value: "web"')]),
    (_ports({"name": "Web", "containerPort": 1}),
     [("spec.containers[0].ports[0].name", "FieldValueInvalid",
       f'Invalid value: "Web": {PORT_NAME}')]),
    (_ports({"name": "abcdefghijklmnop", "containerPort": 1}),
     [("spec.containers[0].ports[0].name", "FieldValueInvalid",
       'Invalid value: "abcdefghijklmnop": must be no more than 15 characters')]),
    (_ports({"name": "123", "containerPort": 1}),
     [("spec.containers[0].ports[0].name", "FieldValueInvalid",
       'Invalid value: "123": must contain at least one letter (a-z)')]),
    (_ports({"name": "-a--b", "containerPort": 1}),
     [("spec.containers[0].ports[0].name", "FieldValueInvalid",
       'Invalid value: "-a--b": must not contain consecutive hyphens'),
      ("spec.containers[0].ports[0].name", "FieldValueInvalid",
       'Invalid value: "-a--b": must not begin or end with a hyphen')]),
    (_ports({"containerPort": 0}),
     [("spec.containers[0].ports[0].containerPort", "FieldValueRequired", "Required value")]),
    (_ports({"name": "x"}),
     [("spec.containers[0].ports[0].containerPort", "FieldValueRequired", "Required value")]),
    (_ports({"containerPort": 70000}),
     [("spec.containers[0].ports[0].containerPort", "FieldValueInvalid",
       f"Invalid value: 70000: {PORT_RANGE}")]),
    (_ports({"containerPort": -1, "hostPort": 65536}),
     [("spec.containers[0].ports[0].containerPort", "FieldValueInvalid",
       f"Invalid value: -1: {PORT_RANGE}"),
      ("spec.containers[0].ports[0].hostPort", "FieldValueInvalid",
       f"Invalid value: 65536: {PORT_RANGE}")]),
    (_ports({"containerPort": 80, "protocol": "tcp"}),
     [("spec.containers[0].ports[0].protocol", "FieldValueNotSupported",
       'Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"')]),
    ({"containers": [{"name": "c", "image": "nginx"}],
      "initContainers": [{"name": "i", "image": "nginx", "restartPolicy": "Always",
                          "ports": [{"name": "Web", "containerPort": 5}]}]},
     [("spec.initContainers[0].ports[0].name", "FieldValueInvalid",
       f'Invalid value: "Web": {PORT_NAME}')]),
    ({"containers": [  # per container: its name, image, ports, then a repeated name
        {"name": "c", "image": "nginx", "ports": [{"name": "Web", "containerPort": 0,
                                                  "protocol": "x"}]},
        {"name": "c", "image": "", "ports": [{"name": "w", "containerPort": 1}]}]},
     [("spec.containers[0].ports[0].name", "FieldValueInvalid",
       f'Invalid value: "Web": {PORT_NAME}'),
      ("spec.containers[0].ports[0].containerPort", "FieldValueRequired", "Required value"),
      ("spec.containers[0].ports[0].protocol", "FieldValueNotSupported",
       'Unsupported value: "x": supported values: "SCTP", "TCP", "UDP"'),
      ("spec.containers[1].image", "FieldValueRequired", "Required value"),
      ("spec.containers[1].name", "FieldValueDuplicate", 'Duplicate value: "c"')]),
])
async def test_container_ports_are_checked(ns: Raw, spec: dict[str, Any],
                                           causes: list[tuple[str, str, str]]) -> None:
    code, body, _ = await ns.request("POST", PODS, _pod(**spec), dryRun="All")
    assert code == 422, body
    assert [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]] == causes


async def test_a_port_name_may_repeat_across_containers(ns: Raw) -> None:
    """Only within one container's ports is a name unique (the real server accepts this)."""
    spec = {"containers": [
        {"name": "a", "image": "nginx", "ports": [{"name": "web", "containerPort": 1,
                                                  "protocol": "UDP"}]},
        {"name": "b", "image": "nginx", "ports": [{"name": "web", "containerPort": 2},
                                                  {"containerPort": 2}]}]}
    code, body, _ = await ns.request("POST", PODS, _pod(**spec), dryRun="All")
    assert code == 201, body
