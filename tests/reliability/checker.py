"""The independent end-state check: what the slices must say, derived here from raw API objects.

Nothing of the controller is used: pods, nodes, selectors and slices are read over HTTP as
JSON, the expected endpoints are computed from the spec's rules (SPEC sections 2 and 3:
namespace, matchLabels and matchExpressions, phase, IPs per family, spec.ipFamilies, Ready,
deletionTimestamp, nodeName and the Node's zone, hostname, named targetPorts resolved per pod)
and compared with every slice slicectl manages:

* every desired endpoint exactly once per address family (pod name, addresses,
  ready/serving/terminating, node, zone, hostname), in a slice whose ports are the pod's own;
* no endpoint for a pod that is not desired; no slice of a deleted (or absent) selector;
* no slice above ``max_per_slice`` endpoints; no empty slice, except the one placeholder of a
  selector that publishes nothing (no ports, the first of spec.ipFamilies or IPv4);
* every managed slice owned (controller ownerReference) by its live selector and labelled
  with the selector's own labels (reserved ones left out) plus the two slicectl labels;
* foreign slices (another manager) byte-for-byte unchanged (same resourceVersion);
* the selector's status: counts equal to the slices, observedGeneration current, Ready=True.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, NODES, PODS, Resource

ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", kind="EndpointSelector")
MANAGED_BY = "endpointselector-controller.slicectl.io"
L_SELECTOR = "kubernetes.io/endpoint-selector-name"
L_MANAGED = "endpointslice.kubernetes.io/managed-by"
L_ZONE = "topology.kubernetes.io/zone"
# Selector labels never copied onto slices (SPEC section 2: "every non-reserved label").
RESERVED = frozenset({L_SELECTOR, L_MANAGED, "kubernetes.io/service-name",
                      "service.kubernetes.io/headless",
                      "service.kubernetes.io/endpoint-controller-name"})
RESERVED_PREFIX = "endpointslice.kubernetes.io/"
# A selector this small never came near 100 endpoints (the churn keeps the pod count within
# 20% of its target), so one slice per family and port set must hold it: a second is a
# duplicate. A larger one may keep a second slice from a moment above 100 (upstream does not
# merge slices either). With a small --max-endpoints-per-slice the rule does not apply.
ONE_SLICE = 50
SUITE_LABEL = "suite"  # selectors the suite made carry suite=reliability; only they are judged

Port = tuple[str, int, str, str]  # name, number, protocol, appProtocol ("" when absent)


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    desired: int = 0  # desired endpoints across live selectors
    lost: int = 0  # desired endpoints not listed
    duplicated: int = 0  # extra copies of listed endpoints

    @property
    def ok(self) -> bool:
        return not self.problems


def _valid_ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except (ValueError, TypeError):
        return None


def _family(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return "IPv4" if ip.version == 4 else "IPv6"


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics: every matchLabels pair and every expression holds."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or ()
        holds = {"In": key in labels and labels[key] in values,
                 "NotIn": key not in labels or labels[key] not in values,
                 "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not holds:
            return False
    return True


def _named_port(pod: dict[str, Any], name: str, protocol: str) -> int | None:
    """A container port by name and protocol: containers first, then restartable init
    containers (sidecars)."""
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or ()), *sidecars]:
        for p in container.get("ports") or ():
            if p.get("name") == name and (p.get("protocol") or "TCP") == protocol:
                return int(p["containerPort"])
    return None


def pod_ports(pod: dict[str, Any], ports: list[dict[str, Any]]) -> tuple[Port, ...]:
    """The selector's ports as this pod resolves them (a name it lacks drops that port)."""
    out: list[Port] = []
    for p in ports:
        protocol = p.get("protocol") or "TCP"
        target = p.get("targetPort", p.get("port"))
        number = target if isinstance(target, int) else _named_port(pod, str(target), protocol)
        if number is not None:
            out.append((p.get("name") or "", number, protocol, p.get("appProtocol") or ""))
    return tuple(sorted(out))


def _slice_ports(s: dict[str, Any]) -> tuple[Port, ...]:
    return tuple(sorted((p.get("name") or "", p.get("port") or 0, p.get("protocol") or "TCP",
                         p.get("appProtocol") or "") for p in s.get("ports") or ()))


def desired_endpoints(pods: list[dict[str, Any]], sel: dict[str, Any],
                      zones: dict[str, str | None]) -> dict[tuple[str, str], Any]:
    """(pod name, address family) -> what its endpoint must say, for one selector object."""
    spec = sel["spec"]
    name = sel["metadata"]["name"]
    chosen: list[tuple[dict[str, Any], list[Any]]] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if not selects(spec["selector"], meta.get("labels") or {}):
            continue
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        ips = [ip for ip in (_valid_ip(p.get("ip")) for p in status.get("podIPs") or ()) if ip]
        if ips:
            chosen.append((pod, ips))
    families = spec.get("ipFamilies") or {_family(ip) for _, ips in chosen for ip in ips}
    want: dict[tuple[str, str], Any] = {}
    for pod, ips in chosen:
        meta, pspec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        serving = any(c.get("type") == "Ready" and c.get("status") == "True"
                      for c in status.get("conditions") or ())
        terminating = bool(meta.get("deletionTimestamp"))
        node = pspec.get("nodeName") or None
        hostname = pspec.get("hostname") if pspec.get("subdomain") == name else None
        ports = pod_ports(pod, spec.get("ports") or [])
        for family in families:
            addrs = tuple(sorted(str(ip) for ip in ips if _family(ip) == family))
            if addrs:
                want[(meta["name"], family)] = (
                    addrs, serving and not terminating, serving, terminating, node,
                    zones.get(node) if node else None, hostname or None, ports)
    return want


def _got(s: dict[str, Any], ep: dict[str, Any]) -> Any:
    cond = ep.get("conditions") or {}
    return (tuple(sorted(ep.get("addresses") or ())), bool(cond.get("ready")),
            bool(cond.get("serving")), bool(cond.get("terminating")), ep.get("nodeName"),
            ep.get("zone"), ep.get("hostname"), _slice_ports(s))


def slice_labels(sel: dict[str, Any]) -> dict[str, str]:
    labels = {k: v for k, v in (sel["metadata"].get("labels") or {}).items()
              if k not in RESERVED and not k.startswith(RESERVED_PREFIX)}
    return {**labels, L_SELECTOR: sel["metadata"]["name"], L_MANAGED: MANAGED_BY}


async def check(client: KubeClient, ns: str, *, deleted: set[str] = frozenset(),  # type: ignore[assignment]
                foreign: dict[str, str] | None = None, status: bool = True,
                resource: Resource = ESEL, max_per_slice: int = 100) -> Verdict:
    """Compare the server's slices in ``ns`` with what its pods and selectors demand."""
    pods, _ = await client.list(PODS, ns)
    selectors, _ = await client.list(resource, ns)
    slices, _ = await client.list(ENDPOINTSLICES, ns)
    nodes, _ = await client.list(NODES)
    zones = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(L_ZONE)
             for n in nodes}
    verdict = Verdict()
    problems = verdict.problems
    live = [s for s in slices if not s["metadata"].get("deletionTimestamp")]
    managed = [s for s in live
               if (s["metadata"].get("labels") or {}).get(L_MANAGED) == MANAGED_BY]
    by_name = {s["metadata"]["name"]: s for s in selectors}
    for name in deleted:
        if name in by_name:
            problems.append(f"{name}: deleted selector still exists")
    orphans = sorted({s["metadata"]["labels"].get(L_SELECTOR) or "" for s in managed}
                     - set(by_name))
    for name in orphans:
        problems.append(f"{name}: slices of a deleted selector remain")
    for name, sel in sorted(by_name.items()):
        if (sel["metadata"].get("labels") or {}).get(SUITE_LABEL) != "reliability":
            continue  # not a selector the churn made (a fuzzed one): judged by its own test
        mine = [s for s in managed if s["metadata"]["labels"].get(L_SELECTOR) == name]
        want = desired_endpoints(pods, sel, zones)
        verdict.desired += len(want)
        before = len(problems)
        problems.extend(_slice_problems(name, sel, mine, want, max_per_slice))
        seen: Counter[tuple[str, str]] = Counter()
        got: dict[tuple[str, str], Any] = {}
        for s in mine:
            for ep in s.get("endpoints") or ():
                key = ((ep.get("targetRef") or {}).get("name", "?"), s.get("addressType", "?"))
                seen[key] += 1
                got[key] = _got(s, ep)
        missing = sorted(set(want) - set(seen))
        extra = sorted(set(seen) - set(want))
        twice = sorted(p for p, n in seen.items() if n > 1)
        wrong = sorted(p for p in set(want) & set(got) if got[p] != want[p])
        verdict.lost += len(missing)
        verdict.duplicated += sum(seen[p] - 1 for p in twice)
        for what, keys in (("missing", missing), ("listed but not desired", extra),
                           ("listed more than once", twice),
                           ("wrong address/conditions/node/ports", wrong)):
            if keys:
                detail = [(k, want.get(k), got.get(k)) for k in keys[:3]] if keys is wrong \
                    else keys[:5]
                problems.append(f"{name}: {len(keys)} endpoint(s) {what}: {detail}")
        if (len(want) <= ONE_SLICE < max_per_slice
                and len({_shape(s) for s in mine}) < len(mine)):
            problems.append(f"{name}: {len(mine)} slices where one per family and port set "
                            "holds all")
        if status and len(problems) == before:
            problems.extend(_status_problems(name, sel, mine))
    for sname, rv in (foreign or {}).items():
        now = next((s for s in slices if s["metadata"]["name"] == sname), None)
        if now is None or now["metadata"]["resourceVersion"] != rv:
            problems.append(f"foreign slice {sname} was modified or deleted")
    return verdict


def _slice_problems(name: str, sel: dict[str, Any], mine: list[dict[str, Any]],
                    want: dict[tuple[str, str], Any], max_per_slice: int) -> list[str]:
    """Per slice: owner, labels, size; the placeholder when nothing is published."""
    out: list[str] = []
    labels = slice_labels(sel)
    for s in mine:
        meta, sname = s["metadata"], s["metadata"]["name"]
        owners = [r for r in meta.get("ownerReferences") or () if r.get("controller")]
        if [(r.get("uid"), r.get("blockOwnerDeletion")) for r in owners] != [
                (sel["metadata"]["uid"], True)]:
            out.append(f"{name}: slice {sname} not owned by it")
        if meta.get("labels") != labels:
            out.append(f"{name}: slice {sname} labels {meta.get('labels')} != {labels}")
        if len(s.get("endpoints") or ()) > max_per_slice:
            out.append(f"{name}: slice {sname} holds more than {max_per_slice} endpoints")
    empty = [s for s in mine if not s.get("endpoints")]
    if want and empty:
        out.append(f"{name}: empty slice(s) {[s['metadata']['name'] for s in empty]} while "
                   "endpoints are published")
    if not want:
        family = (sel["spec"].get("ipFamilies") or ["IPv4"])[0]
        shapes = [(s.get("addressType"), _slice_ports(s), len(s.get("endpoints") or ()))
                  for s in mine]
        if shapes != [(family, (), 0)]:
            out.append(f"{name}: no endpoints, so one empty {family} placeholder, not {shapes}")
    return out


def _shape(s: dict[str, Any]) -> str:
    """Address family and port set: endpoints that differ in them cannot share a slice."""
    return f"{s.get('addressType')} {_slice_ports(s)}"


def _status_problems(name: str, sel: dict[str, Any], mine: list[dict[str, Any]]) -> list[str]:
    st = sel.get("status") or {}
    endpoints = [ep for s in mine for ep in s.get("endpoints") or ()]
    ready = sum(1 for ep in endpoints if (ep.get("conditions") or {}).get("ready"))
    expected = {"endpoints": len(endpoints), "readyEndpoints": ready,
                "endpointSlices": len(mine),
                "observedGeneration": sel["metadata"].get("generation")}
    actual = {k: st.get(k) for k in expected}
    out = []
    if actual != expected:
        out.append(f"{name}: status {actual} != {expected}")
    cond: dict[str, Any] = next(
        (c for c in st.get("conditions") or () if c.get("type") == "Ready"), {})
    if cond.get("status") != "True":
        out.append(f"{name}: Ready condition {cond}")
    return out
