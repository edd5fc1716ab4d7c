"""The independent end-state check: what the slices must say, derived here from raw API objects.

Nothing of the controller is used: pods, selectors and slices are read over HTTP as JSON, the
expected endpoints are computed from the spec's rules (SPEC section 3: namespace, phase, IPs,
Ready, deletionTimestamp; matchLabels as plain subset matching, the only selector form the churn
uses) and compared with every slice slicectl manages:

* every desired endpoint exactly once (pod name, addresses, ready/serving/terminating);
* no endpoint for a pod that is not desired; no slice of a deleted selector;
* every managed slice owned (controller ownerReference) by its live selector;
* foreign slices (another manager) byte-for-byte unchanged (same resourceVersion);
* the selector's status: counts equal to the slices, Ready=True.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, PODS, Resource

ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", kind="EndpointSelector")
MANAGED_BY = "endpointselector-controller.slicectl.io"
L_SELECTOR = "kubernetes.io/endpoint-selector-name"
L_MANAGED = "endpointslice.kubernetes.io/managed-by"
# A selector this small never came near 100 endpoints (the churn keeps the pod count within
# 20% of its target), so one slice per family and port set must hold it: a second is a
# duplicate. A larger one may keep a second slice from a moment above 100 (upstream does not
# merge slices either).
ONE_SLICE = 50
SUITE_LABEL = "suite"  # selectors the suite made carry suite=reliability; only they are judged


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    desired: int = 0  # desired endpoints across live selectors
    lost: int = 0  # desired endpoints not listed
    duplicated: int = 0  # extra copies of listed endpoints

    @property
    def ok(self) -> bool:
        return not self.problems


def _valid_ip(text: Any) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except (ValueError, TypeError):
        return None


def desired_endpoints(pods: list[dict[str, Any]], match: dict[str, str]) -> dict[str, Any]:
    """pod name -> (sorted addresses, ready, serving, terminating) for one matchLabels."""
    want: dict[str, Any] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if any(labels.get(k) != v for k, v in match.items()):
            continue
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        ips = [ip for ip in (_valid_ip(p.get("ip")) for p in status.get("podIPs") or ()) if ip]
        if not ips:
            continue
        serving = any(c.get("type") == "Ready" and c.get("status") == "True"
                      for c in status.get("conditions") or ())
        terminating = bool(meta.get("deletionTimestamp"))
        want[meta["name"]] = (tuple(sorted(ips)), serving and not terminating, serving,
                              terminating)
    return want


async def check(client: KubeClient, ns: str, *, deleted: set[str] = frozenset(),  # type: ignore[assignment]
                foreign: dict[str, str] | None = None, status: bool = True,
                resource: Resource = ESEL) -> Verdict:
    """Compare the server's slices in ``ns`` with what its pods and selectors demand."""
    pods, _ = await client.list(PODS, ns)
    selectors, _ = await client.list(resource, ns)
    slices, _ = await client.list(ENDPOINTSLICES, ns)
    verdict = Verdict()
    problems = verdict.problems
    live = [s for s in slices if not s["metadata"].get("deletionTimestamp")]
    managed = [s for s in live
               if (s["metadata"].get("labels") or {}).get(L_MANAGED) == MANAGED_BY]
    by_name = {s["metadata"]["name"]: s for s in selectors}
    for name in deleted:
        if name in by_name:
            problems.append(f"{name}: deleted selector still exists")
        if any(s["metadata"]["labels"].get(L_SELECTOR) == name for s in managed):
            problems.append(f"{name}: slices of a deleted selector remain")
    for name, sel in sorted(by_name.items()):
        if (sel["metadata"].get("labels") or {}).get(SUITE_LABEL) != "reliability":
            continue  # not a selector the churn made (a fuzzed one): judged by its own test
        match = sel["spec"]["selector"]["matchLabels"]
        mine = [s for s in managed if s["metadata"]["labels"].get(L_SELECTOR) == name]
        want = desired_endpoints(pods, match)
        verdict.desired += len(want)
        seen: Counter[str] = Counter()
        got: dict[str, Any] = {}
        for s in mine:
            owners = [r for r in s["metadata"].get("ownerReferences") or () if r.get("controller")]
            if [r.get("uid") for r in owners] != [sel["metadata"]["uid"]]:
                problems.append(f"{name}: slice {s['metadata']['name']} not owned by it")
            for ep in s.get("endpoints") or ():
                pod = (ep.get("targetRef") or {}).get("name", "?")
                cond = ep.get("conditions") or {}
                seen[pod] += 1
                got[pod] = (tuple(sorted(ep.get("addresses") or ())), bool(cond.get("ready")),
                            bool(cond.get("serving")), bool(cond.get("terminating")))
        missing = sorted(set(want) - set(seen))
        extra = sorted(set(seen) - set(want))
        twice = sorted(p for p, n in seen.items() if n > 1)
        wrong = sorted(p for p in set(want) & set(got) if got[p] != want[p])
        verdict.lost += len(missing)
        verdict.duplicated += sum(seen[p] - 1 for p in twice)
        for what, names in (("missing", missing), ("listed but not desired", extra),
                            ("listed more than once", twice), ("wrong address/conditions", wrong)):
            if names:
                problems.append(f"{name}: {len(names)} endpoint(s) {what}: {names[:5]}")
        if len(want) <= ONE_SLICE and len({_shape(s) for s in mine}) < len(mine):
            problems.append(f"{name}: {len(mine)} slices where one per family and port set "
                            "holds all")
        if status and not problems:
            problems.extend(_status_problems(name, sel, mine))
    for sname, rv in (foreign or {}).items():
        now = next((s for s in slices if s["metadata"]["name"] == sname), None)
        if now is None or now["metadata"]["resourceVersion"] != rv:
            problems.append(f"foreign slice {sname} was modified or deleted")
    return verdict


def _shape(s: dict[str, Any]) -> str:
    """Address family and port set: endpoints that differ in them cannot share a slice."""
    ports = sorted((p.get("name") or "", p.get("port") or 0, p.get("protocol") or "")
                   for p in s.get("ports") or ())
    return f"{s.get('addressType')} {ports}"


def _status_problems(name: str, sel: dict[str, Any], mine: list[dict[str, Any]]) -> list[str]:
    st = sel.get("status") or {}
    endpoints = [ep for s in mine for ep in s.get("endpoints") or ()]
    ready = sum(1 for ep in endpoints if (ep.get("conditions") or {}).get("ready"))
    expected = {"endpoints": len(endpoints), "readyEndpoints": ready,
                "endpointSlices": len(mine)}
    actual = {k: st.get(k) for k in expected}
    out = []
    if actual != expected:
        out.append(f"{name}: status {actual} != {expected}")
    cond: dict[str, Any] = next(
        (c for c in st.get("conditions") or () if c.get("type") == "Ready"), {})
    if cond.get("status") != "True":
        out.append(f"{name}: Ready condition {cond}")
    return out
