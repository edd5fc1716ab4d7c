"""Fuzzed bad input (hypothesis) while the well-formed selectors keep being served.

* Selector specs that bypass the schema: the EndpointSelector CRD is installed WITHOUT its
  validation (a cluster where someone applied a permissive CRD), so the controller sees specs
  the schema would refuse. Each must get ``Ready=False`` with a reason, at most one log line,
  and the others must stay exact.
* Pods the API server accepts but that are odd: no status, no IPs, no ports, unknown nodes,
  huge label sets. The independent checker knows what each must give.
* Malformed watch lines and truncated streams, injected into slicectl's pod watch through the
  fault hook: pods with invalid IPs, junk in any field, lines that are not JSON or not events,
  a stream cut in the middle of a line. Each is logged at most once and skipped.

Hypothesis draws the inputs (derandomized, so a run is reproducible); the controller sees them
all in one run, as a burst an operator could meet.
"""

from __future__ import annotations

import asyncio
import copy
import json
import string
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slicectl.cli import workload
from slicectl.cli.workload import pod_manifest, running_status
from slicectl.kube.resources import ENDPOINTSLICES, PODS
from tests.integration.support import CRD_PATH, load_yaml
from tests.reliability.checker import ESEL, L_SELECTOR
from tests.reliability.churn import SELECTORS, create, prepare, retrying
from tests.reliability.conftest import Sizes
from tests.reliability.stack import Row, record, stack

pytestmark = pytest.mark.embedded_only(
    reason="fault injection: malformed watch lines and objects no real server would "
    "admit, from the embedded server")

INT = st.integers(-2**63, 2**63 - 1)  # what JSON on the wire can carry (orjson: 64 bits)
JSON = st.recursive(
    st.none() | st.booleans() | INT | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6)
LABEL = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=20)
BAD_IPS = st.sampled_from(["999.1.1.1", "10.0.0", "::g", "", "10.0.0.1/24", "localhost",
                           "1.2.3.4.5", "ab:cd",
                           # valid IPs that no EndpointSlice may list (ValidateEndpointIP)
                           "127.0.0.1", "169.254.3.3", "0.0.0.0", "224.0.0.9", "::1",
                           "fe80::1", "ff02::fb"]) | st.text(max_size=8)


def collect(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples of ``strategy``, drawn reproducibly by hypothesis."""
    found: list[Any] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value: Any) -> None:
        found.append(value)

    draw()
    return found[:count]


def bad_specs() -> st.SearchStrategy[dict[str, Any]]:
    """Specs the CRD schema would refuse, one defect each."""
    match = st.dictionaries(LABEL, LABEL, min_size=1, max_size=3)
    good = match.map(lambda m: {"selector": {"matchLabels": m}})
    return st.one_of(
        st.just({}),
        st.just({"selector": {}}),
        JSON.filter(lambda v: not isinstance(v, dict)).map(lambda v: {"selector": v}),
        st.dictionaries(LABEL, INT | st.lists(INT, max_size=2),
                        min_size=1, max_size=3).map(lambda m: {"selector": {"matchLabels": m}}),
        st.tuples(LABEL, st.text(max_size=10).filter(
            lambda o: o not in ("In", "NotIn", "Exists", "DoesNotExist"))).map(
            lambda t: {"selector": {"matchExpressions": [{"key": t[0], "operator": t[1],
                                                          "values": ["x"]}]}}),
        LABEL.map(lambda k: {"selector": {"matchExpressions": [
            {"key": k, "operator": "In", "values": []}]}}),
        st.text("!@# $%", min_size=1, max_size=5).map(
            lambda k: {"selector": {"matchLabels": {k: "v"}}}),
        st.tuples(good, st.sampled_from([0, -1, 70000, "", "has space", "x" * 16, 1.5])).map(
            lambda t: {**t[0], "ports": [{"name": "p", "targetPort": t[1]}]}),
        # "" is defaulted to TCP, as Kubernetes defaults an empty protocol: not bad
        st.tuples(good, st.sampled_from(["HTTP", "tcp", 7])).map(
            lambda t: {**t[0], "ports": [{"targetPort": 80, "protocol": t[1]}]}),
        st.tuples(good, st.sampled_from([["IPv5"], "IPv4", [1], ["IPv4", "IPv4", "IPv6"]])).map(
            lambda t: {**t[0], "ipFamilies": t[1]}),
        # falsy values (null, false, 0, "", {}) are read as "ports omitted": left out here
        st.tuples(good, JSON.filter(bool)).map(lambda t: {**t[0], "ports": t[1]}),
    )


def odd_pods() -> st.SearchStrategy[dict[str, Any]]:
    """Pods the API accepts but that stress the rules: (labels, status or None, ports, node)."""
    labels = st.fixed_dictionaries({"app": st.sampled_from(["a", "b"])},
                                   optional={"tier": st.sampled_from(["x", "y"])})
    huge = st.dictionaries(st.text(string.ascii_lowercase, min_size=3, max_size=40),
                           st.text(string.ascii_lowercase, max_size=40),
                           min_size=50, max_size=300)
    return st.fixed_dictionaries({
        "labels": st.tuples(labels, huge | st.just({})).map(lambda t: {**t[1], **t[0]}),
        "status": st.sampled_from(["none", "no-ips", "running", "succeeded", "unready"]),
        "ports": st.sampled_from([[("http", 8080)], [], [("other", 9090)]]),
        "node": st.sampled_from(["node-0", "node-1", "no-such-node", ""]),
    })


def junk_pods() -> st.SearchStrategy[dict[str, Any]]:
    """Pod objects as a broken server or proxy could send them: matching labels only when
    every IP is invalid (so that none of them may ever become an endpoint)."""
    base = pod_manifest("ghost", {"app": "a"}, "node-0", [("http", 8080)])
    base["metadata"].update(namespace="", uid="ghost-uid", resourceVersion="1")
    base["status"] = running_status("10.99.0.1", True)["status"]
    paths = st.sampled_from([("metadata", "labels"), ("metadata", "name"), ("spec",),
                             ("status", "podIPs"), ("status", "conditions"), ("metadata",),
                             ("status",), ("spec", "containers"), ("metadata", "namespace")])

    def build(t: tuple[tuple[str, ...], Any, list[str]]) -> dict[str, Any]:
        path, junk, ips = t
        pod = copy.deepcopy(base)
        pod["status"]["podIPs"] = [{"ip": ip} for ip in ips]
        pod["status"]["podIP"] = ips[0] if ips else ""
        target = pod
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = junk
        return pod

    return st.tuples(paths, JSON, st.lists(BAD_IPS, min_size=1, max_size=2)).map(build)


def unchecked_crd() -> dict[str, Any]:
    crd = load_yaml(CRD_PATH)
    for version in crd["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return crd


async def test_fuzzed_bad_input(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path, world=False) as s:
        assert s.server is not None
        faults = s.server.faults
        await workload.apply_crd(s.client, unchecked_crd())
        await prepare(s.client, s.ns, SELECTORS, crd=False)
        churn, solo = await s.churning_solo(sizes.pods, seed=31)
        n = sizes.fuzz_examples
        specs, pods, junk = collect(bad_specs(), n), collect(odd_pods(), n), collect(
            junk_pods(), n)
        raw_lines = [b"{not json\n", b"[]\n", b'"text"\n', b'{"type":"ADDED"}\n',
                     b'{"type":"BOGUS","object":{}}\n', b'{"type":"MODIFIED","object":null}\n',
                     b'{"type":"ADDED","object":{"kind":"Pod"}}\n']
        churn.start()
        for i, spec in enumerate(specs):
            await create(s.client, ESEL, {"apiVersion": "slicectl.io/v1alpha1",
                                          "kind": "EndpointSelector",
                                          "metadata": {"name": f"bad-{i}"}, "spec": spec}, s.ns)
        for i, odd in enumerate(pods):
            await create_odd_pod(s, f"odd-{i}", odd, i)
        for i, ghost in enumerate(junk):
            meta = ghost.get("metadata")
            if isinstance(meta, dict) and meta.get("name") == "ghost":
                meta["name"], meta["uid"] = f"ghost-{i}", f"ghost-uid-{i}"
            if isinstance(meta, dict) and meta.get("namespace") == "":
                meta["namespace"] = s.ns
            line = orjson.dumps({"type": "ADDED", "object": ghost}) + b"\n"
            await inject(s, line)
        for line in raw_lines:
            await inject(s, line)
        await inject(s, b'{"type":"ADDED","object":{"kind":"Pod","metadata":{"na', truncate=True)
        await asyncio.sleep(2.0)
        await churn.stop()
        faults.compact()
        faults.drop_watches()  # a relist forgets every injected ghost
        took, verdict = await s.converge()
        not_ready = await bad_selectors_not_ready(s, len(specs))
        assert not not_ready, f"bad selectors without Ready=False: {not_ready[:5]}"
        lines = solo.log_lines()
        per_bad = {f"bad-{i}": sum(1 for ln in lines if f"/bad-{i}\"" in json.dumps(ln)
                                   and ln.get("level") in ("warning", "error"))
                   for i in range(len(specs))}
        noisy = {k: v for k, v in per_bad.items() if v > 1}
        assert not noisy, f"bad selectors logged more than once: {noisy}"
        skipped = sum(1 for ln in lines if ln.get("event") in (
            "watch_line_skipped", "informer_object_skipped"))
        injected = len(junk) + len(raw_lines)
        assert skipped <= injected, f"{skipped} log lines for {injected} malformed inputs"
        record(Row("fuzzed bad input", "schema-less selector specs, odd pods, malformed watch "
                   "lines, a truncated stream", f"{churn.stats.ops} pod changes meanwhile",
                   f"{skipped} skip log lines for {injected} malformed inputs, no crash",
                   inputs=(
                       f"{len(specs)} specs, {len(pods)} pods, {injected + 1} watch lines"),
                   lost=verdict.lost, duplicated=verdict.duplicated, converge=took))


async def inject(s: Any, line: bytes, truncate: bool = False) -> None:
    for _ in range(100):
        if s.server.faults.inject_watch_line("pods", line, truncate=truncate):
            return
        await asyncio.sleep(0.1)  # the pod watch is reconnecting
    raise AssertionError("no pod watch open to inject into")


async def create_odd_pod(s: Any, name: str, odd: dict[str, Any], i: int) -> None:
    body = pod_manifest(name, odd["labels"], odd["node"], odd["ports"])
    if not odd["node"]:
        del body["spec"]["nodeName"]
    await create(s.client, PODS, body, s.ns)
    ip = f"10.200.{i // 250}.{i % 250 + 1}"
    status: dict[str, Any] | None = {
        "none": None, "no-ips": {"status": {"phase": "Pending"}},
        "running": running_status(ip, True), "unready": running_status(ip, False),
        "succeeded": {"status": {**running_status(ip, True)["status"], "phase": "Succeeded"}},
    }[odd["status"]]
    if status is not None:
        await retrying(lambda: s.client.patch(PODS, name, status, s.ns, subresource="status"))


async def bad_selectors_not_ready(s: Any, count: int, limit: float = 30.0) -> list[str]:
    """Bad selectors whose status lacks Ready=False with a reason (after waiting)."""
    missing: list[str] = []
    for _ in range(int(limit / 0.5)):
        items, _ = await s.client.list(ESEL, s.ns)
        by_name = {i["metadata"]["name"]: i for i in items}
        missing = []
        for n in range(count):
            sel = by_name.get(f"bad-{n}", {})
            cond: dict[str, Any] = next(
                (c for c in (sel.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "Ready"), {})
            if cond.get("status") != "False" or not cond.get("reason"):
                missing.append(f"bad-{n}: {json.dumps(sel.get('spec'))[:80]} -> {cond}")
        if not missing:
            return []
        await asyncio.sleep(0.5)
    return missing


async def test_selector_turning_invalid_never_lists_gone_pods(tmp_path: Path,
                                                              sizes: Sizes) -> None:
    async with stack(tmp_path, world=False) as s:
        await workload.apply_crd(s.client, unchecked_crd())
        await prepare(s.client, s.ns, SELECTORS, crd=False)
        churn, _ = await s.churning_solo(sizes.pods, seed=32)
        await retrying(lambda: s.client.patch(ESEL, "app-a", {"spec": {"selector": {
            "matchLabels": None, "matchExpressions": [
                {"key": "app", "operator": "Is", "values": ["a"]}]}}}, s.ns))
        churn.start()
        await asyncio.sleep(sizes.fault_seconds)
        await churn.stop()
        took = 0.0
        for _ in range(40):
            pods, _ = await s.client.list(PODS, s.ns)
            alive = {p["metadata"]["name"] for p in pods}
            slices, _ = await s.client.list(ENDPOINTSLICES, s.ns,
                                            label_selector=f"{L_SELECTOR}=app-a")
            listed: set[Any] = {(ep.get("targetRef") or {}).get("name") for sl in slices
                                for ep in sl.get("endpoints") or ()}
            gone = sorted(listed - alive)
            if not gone:
                break
            await asyncio.sleep(0.5)
            took += 0.5
        assert not gone, f"slices of the invalid selector still list deleted pods: {gone[:5]}"
        record(Row("selector turns invalid", "a served selector's spec made invalid, then its "
                   "pods churn", f"{churn.stats.ops} pod changes", "no deleted pod listed",
                   converge=took))
