"""A pod status's IPs as a real kube-apiserver v1.32.6 checks them (``validatePodIPs`` of
``ValidatePodStatusUpdate``), where the embedded one stored anything.

Each status below was sent to that server (2026-11-28, a merge patch of ``pods/status``) and
to the embedded one; the expected answers are the real server's. They matter to slicectl,
whose endpoints are these IPs: a test that gave a pod two IPv4 addresses, or an invalid one,
tested a pod no cluster can hold.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import PODS, Raw, pod

MERGE = "application/merge-patch+json"
NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
ONE_PER_FAMILY = "may specify no more than one IP for each IP family"


def _go_pod_ips(ips: list[str]) -> str:
    return "[]core.PodIP{" + ", ".join(f'core.PodIP{{IP:"{ip}"}}' for ip in ips) + "}"


def _family(ips: list[str]) -> tuple[str, str, str]:
    return ("status.podIPs", "FieldValueInvalid",
            f"Invalid value: {_go_pod_ips(ips)}: {ONE_PER_FAMILY}")


@pytest.mark.parametrize(("ips", "causes"), [
    (["10.8.0.7", "10.8.0.8"], [_family(["10.8.0.7", "10.8.0.8"])]),
    (["10.8.0.9", "10.8.0.9"],
     [_family(["10.8.0.9", "10.8.0.9"]),
      ("status.podIPs[1]", "FieldValueDuplicate", 'Duplicate value: core.PodIP{IP:"10.8.0.9"}')]),
    (["10.8.0.9", "fd00::1", "10.8.0.9"],
     [_family(["10.8.0.9", "fd00::1", "10.8.0.9"]),
      ("status.podIPs[2]", "FieldValueDuplicate", 'Duplicate value: core.PodIP{IP:"10.8.0.9"}')]),
    (["10.8.0.10", "::ffff:10.8.0.11"], [_family(["10.8.0.10", "::ffff:10.8.0.11"])]),
    (["fd00::12", "FD00::13"], [_family(["fd00::12", "FD00::13"])]),
    (["abc"], [("status.podIPs[0]", "FieldValueInvalid", f'Invalid value: "abc": {NOT_AN_IP}')]),
    ([""], [("status.podIPs[0]", "FieldValueInvalid", f'Invalid value: "": {NOT_AN_IP}')]),
    (["fe80::1%eth0"], [("status.podIPs[0]", "FieldValueInvalid",
                         f'Invalid value: "fe80::1%eth0": {NOT_AN_IP}')]),
    ([" 10.8.0.19"], [("status.podIPs[0]", "FieldValueInvalid",
                       f'Invalid value: " 10.8.0.19": {NOT_AN_IP}')]),
    (["10.8.0.20/24"], [("status.podIPs[0]", "FieldValueInvalid",
                         f'Invalid value: "10.8.0.20/24": {NOT_AN_IP}')]),
    (["abc", "10.8.0.1"],
     [("status.podIPs[0]", "FieldValueInvalid", f'Invalid value: "abc": {NOT_AN_IP}'),
      ("status.podIPs", "InternalError",
       "Internal error: failed to check for dual stack with error:invalid IP[0]: abc"),
      _family(["abc", "10.8.0.1"])]),
])
async def test_refused_as_a_real_server_refuses(raw: Raw, ips: list[str],
                                                causes: list[tuple[str, str, str]]) -> None:
    await raw.request("POST", PODS, pod("p", node="node-a"))
    code, body, _ = await raw.request("PATCH", PODS + "/p/status", {"status": {
        "podIPs": [{"ip": ip} for ip in ips]}}, content_type=MERGE)
    assert code == 422, body
    assert [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]] == causes
    assert body["message"].startswith('Pod "p" is invalid: ')


@pytest.mark.parametrize("status", [
    {"podIPs": [{"ip": "10.8.0.6"}, {"ip": "fd00::6"}]},
    {"podIPs": [{"ip": "fd00::3"}, {"ip": "10.8.0.3"}]},
    {"podIPs": [{"ip": "010.8.0.9"}, {"ip": "fd00::1"}]},  # leading zeros: ParseIPSloppy
    {"podIP": "::ffff:10.9.0.6"},
    {"podIP": "FD00:0:0::5"},
    {"podIP": "10.8.0.5", "podIPs": [{"ip": "fd00::5"}, {"ip": "10.8.0.5"}]},  # podIP wins
])
async def test_accepted_as_a_real_server_accepts(raw: Raw, status: dict[str, Any]) -> None:
    await raw.request("POST", PODS, pod("p", node="node-a"))
    code, body, _ = await raw.request("PATCH", PODS + "/p/status", {"status": status},
                                      content_type=MERGE)
    assert code == 200, body
