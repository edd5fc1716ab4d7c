"""The pure pieces of ``benchmarks/differential.py``, which runs only on a real cluster: which
cases need a dual-stack one, the pods they write, and that each documented difference names a
case and pod that exist (a typo there would silently leave a real difference undocumented)."""

from __future__ import annotations

import re
from typing import Any

from benchmarks import differential
from benchmarks.differential import CASES, DOCUMENTED, World, pod_status, service_for


def _case(name: str) -> differential.Case:
    return next(c for c in CASES if c.name == name)


def test_dual_stack_cases_are_those_whose_service_needs_ipv6() -> None:
    dual = {c.name for c in CASES if c.dual_stack}
    assert {"ds-default", "ds-empty", "pds-v4", "v6", "v6-default", "ds-big"} <= dual
    assert not dual & {"basic", "dual", "empty", "big", "ds-grow"}  # ds-grow: IPv4 at first
    for name in dual:
        spec = service_for(_case(name))["spec"]
        assert (spec.get("ipFamilyPolicy") in ("RequireDualStack", "PreferDualStack")
                or "IPv6" in spec.get("ipFamilies", ())), name


def test_a_single_stack_cluster_gets_the_ipv4_cases_only() -> None:
    world: Any = World(client=None, namespace="ns", nodes={}, services=True,  # type: ignore[arg-type]
                       single_stack="single-stack cluster")
    assert world.cases == tuple(c for c in CASES if not c.dual_stack)
    world.single_stack = ""
    assert world.cases == CASES


def test_pod_names_are_unique_across_cases() -> None:
    """Every case's pods share one namespace."""
    names = [p.name for c in CASES for p in c.pods]
    assert len(names) == len(set(names))


def test_a_disagreeing_pod_ip_is_sent_as_given() -> None:
    pod = _case("ds-default").pods[7]
    assert pod.name == "dd-disagree"
    status = pod_status(pod, list(pod.ips), "2026-01-01T00:00:00Z")["status"]
    assert status["podIP"] == "10.200.0.3"
    assert [ip["ip"] for ip in status["podIPs"]] == ["fd00:200::2", "10.200.0.2"]


def test_auto_ips_are_of_their_family() -> None:
    assert differential._auto_ip("auto", 3, 260) == "10.80.1.11"
    assert differential._auto_ip("auto6", 26, 260) == "fd00:77:1a::104"
    assert differential._auto_ip("fd00::1", 3, 1) == "fd00::1"


def test_documented_rows_name_existing_cases_and_pods() -> None:
    by_name = {c.name: c for c in CASES}
    for cases, prefix, why in DOCUMENTED:
        assert why
        for name in cases or ():
            assert name in by_name, name
            pod = re.match(r"endpoint (\S+) ", prefix)
            if pod:
                assert pod[1] in {p.name for p in by_name[name].pods}, (name, prefix)


def test_only_the_strict_ip_refusals_of_such_addresses_are_left_out() -> None:
    mapped = 'Invalid value: "::ffff:10.0.0.1": must not be an IPv4-mapped IPv6 address'
    zeros = 'Invalid value: "10.0.0.010": must not have leading 0s'
    assert differential._strictly_refused(["::ffff:10.0.0.1"], mapped) is not None
    assert differential._strictly_refused(["10.0.0.010", "fd00::1"], zeros) is not None
    # the same refusal for a pod with no such address is a finding, not left out
    assert differential._strictly_refused(["10.0.0.1"], mapped) is None
    assert differential._strictly_refused(["10.0.0.10"], zeros) is None
    assert differential._strictly_refused(["::ffff:10.0.0.1"], "spec.x: Required value") is None
