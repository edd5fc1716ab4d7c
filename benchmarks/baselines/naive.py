"""The naive EndpointSlice controller: the baseline a careful controller has to beat.

On every pod event it recomputes the slices of each selector the pod belongs to (before or
after the event) and writes every slice that differs from what it last wrote, one request after
another, before it reads the next event. No batching, no coalescing, no packing: the selected
pods with an IP, sorted by name, cut into slices of ``--max-endpoints-per-slice``; slice *i* of
selector *s* is named ``<s>-naive-<i>``. A selector with no pod gets one empty slice, as
slicectl publishes, so the benchmark can tell both are up. Selectors are read once at start
(the benchmark creates them first). It uses slicectl's kube client, without a client-side rate
limit: at 20 QPS it could not keep up with the benchmark's bursts at all.

    python -m benchmarks.baselines.naive --kubeconfig FILE [--context C] --namespace NS
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from typing import Any

from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.errors import Gone, NotFound
from slicectl.kube.resources import ENDPOINTSLICES, PODS, Resource
from slicectl.model.records import LABEL_MANAGED_BY, LABEL_SELECTOR_NAME

ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", True, "EndpointSelector")
Slice = tuple[str, str]  # what one slice says (its ports and endpoints, repr'd), comparable


class Naive:
    def __init__(self, client: KubeClient, namespace: str, managed_by: str, per_slice: int):
        self.client, self.ns, self.managed_by, self.per_slice = (
            client, namespace, managed_by, per_slice)
        self.selectors: dict[str, dict[str, Any]] = {}  # name -> spec
        self.pods: dict[str, dict[str, Any]] = {}
        self.written: dict[str, list[Slice]] = {}  # selector -> slices as last written

    def _selects(self, spec: dict[str, Any], pod: dict[str, Any]) -> bool:
        want = (spec.get("selector") or {}).get("matchLabels") or {}
        labels = pod.get("metadata", {}).get("labels") or {}
        return bool(want) and all(labels.get(k) == v for k, v in want.items())

    def _endpoint(self, pod: dict[str, Any]) -> dict[str, Any]:
        meta, status = pod["metadata"], pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or ())
        return {"addresses": [status["podIP"]],
                "conditions": {"ready": ready, "serving": ready, "terminating": False},
                "targetRef": {"kind": "Pod", "namespace": self.ns, "name": meta["name"],
                              "uid": meta["uid"]},
                "nodeName": pod.get("spec", {}).get("nodeName")}

    def _ports(self, spec: dict[str, Any], pod: dict[str, Any] | None) -> list[dict[str, Any]]:
        named = {p.get("name"): p["containerPort"]
                 for c in (pod or {}).get("spec", {}).get("containers", ())
                 for p in c.get("ports") or ()}
        out = []
        for p in spec.get("ports") or ():
            target = p.get("targetPort")
            port = target if isinstance(target, int) else named.get(target)
            out.append({"name": p.get("name", ""), "protocol": p.get("protocol", "TCP"),
                        "port": port})
        return out

    def _desired(self, name: str) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        spec = self.selectors[name]
        pods = sorted((p for p in self.pods.values() if self._selects(spec, p)
                       and (p.get("status") or {}).get("podIP")
                       and not p["metadata"].get("deletionTimestamp")),
                      key=lambda p: p["metadata"]["name"])
        ports = self._ports(spec, pods[0] if pods else None) if pods else []
        chunks = [pods[i:i + self.per_slice] for i in range(0, len(pods), self.per_slice)]
        return [(ports, [self._endpoint(p) for p in chunk]) for chunk in chunks or [[]]]

    async def sync(self, name: str) -> None:
        desired = self._desired(name)
        written = self.written.setdefault(name, [])
        for i, (ports, endpoints) in enumerate(desired):
            seen: Slice = (repr(ports), repr(endpoints))
            if i < len(written) and written[i] == seen:
                continue
            slice_name = f"{name}-naive-{i}"
            if i < len(written):
                await self.client.patch(ENDPOINTSLICES, slice_name,
                                        {"ports": ports, "endpoints": endpoints}, self.ns)
                written[i] = seen
            else:
                await self.client.create(ENDPOINTSLICES, {
                    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"name": slice_name, "labels": {
                        LABEL_MANAGED_BY: self.managed_by, LABEL_SELECTOR_NAME: name}},
                    "addressType": "IPv4", "ports": ports, "endpoints": endpoints}, self.ns)
                written.append(seen)
        while len(written) > len(desired):
            written.pop()
            with contextlib.suppress(NotFound):
                await self.client.delete(ENDPOINTSLICES, f"{name}-naive-{len(written)}",
                                         self.ns)

    async def run(self) -> None:
        for sel in (await self.client.list(ESEL, self.ns))[0]:
            self.selectors[sel["metadata"]["name"]] = sel.get("spec") or {}
        while True:
            items, rv = await self.client.list(PODS, self.ns)
            self.pods = {p["metadata"]["name"]: p for p in items}
            for name in self.selectors:
                await self.sync(name)
            with contextlib.suppress(Gone):
                while True:
                    async for ev in self.client.watch(PODS, self.ns, resource_version=rv,
                                                      timeout_seconds=600):
                        obj = ev.object
                        rv = obj.get("metadata", {}).get("resourceVersion") or rv
                        if ev.type == "BOOKMARK":
                            continue
                        name = obj["metadata"]["name"]
                        old = self.pods.get(name)
                        if ev.type == "DELETED":
                            self.pods.pop(name, None)
                        else:
                            self.pods[name] = obj
                        for sel_name, spec in self.selectors.items():
                            if any(p is not None and self._selects(spec, p) for p in (old, obj)):
                                await self.sync(sel_name)


async def main_async(args: argparse.Namespace) -> None:
    client = await KubeClient.connect(args.kubeconfig, args.context,
                                      ClientSettings(qps=1_000_000.0, burst=1_000_000))
    async with client:
        task = asyncio.create_task(
            Naive(client, args.namespace, args.managed_by, args.max_endpoints_per_slice).run())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await asyncio.wait([task, asyncio.create_task(stop.wait())],
                           return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # a crash shows in the log, with its traceback
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--context")
    p.add_argument("--namespace", required=True)
    p.add_argument("--managed-by", default="slicectl-benchmark")
    p.add_argument("--max-endpoints-per-slice", type=int, default=100)
    args = p.parse_args()
    import uvloop
    uvloop.run(main_async(args))


if __name__ == "__main__":
    main()
