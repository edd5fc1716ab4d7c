"""What one slice update costs the API server, by the kind of request that carries it.

Why: slicectl's latency floor is the slice write; its watch event, which every reader of the
slice waits for, comes only after the server has applied the request. This times the same
update of one slice (every endpoint's Ready flipping in turn) sent as slicectl sends it (the JSON
patch of :func:`slicectl.reconcile.slice_patch`) and as a JSON merge patch of the same fields (what
slicectl sent before), interleaved so both see the same machine. Run it against a real cluster:
the embedded server's costs are Python's, not kube-apiserver's.

    .venv/bin/python -m benchmarks.update_cost --kubeconfig FILE [--n 1000] [--endpoints 100]

Without ``--kubeconfig`` it runs against the embedded server (a smoke run). It creates a namespace
``slicectl-update-cost-<random>`` and deletes it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import time
from dataclasses import replace
from typing import Any

from benchmarks.apiserver import EmbeddedServer
from benchmarks.runner import summary
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_selector, parse_slice
from slicectl.model.records import ANNOTATION_TRIGGER_TIME, Endpoint, OwnerRef, TargetRef
from slicectl.reconcile import new_slice_body, slice_patch
from slicectl.reconcile.types import SliceSpec, SliceUpdate


def _endpoints(n: int, namespace: str, not_ready: int) -> tuple[Endpoint, ...]:
    return tuple(
        Endpoint(addresses=(f"10.9.{i // 250}.{i % 250 + 1}",), ready=i != not_ready,
                 serving=True, terminating=False, node_name=f"node-{i % 3}",
                 target=TargetRef(namespace, f"pod-{i}", f"uid-{i:06d}"))
        for i in range(n))


def _merge_patch(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The merge patch setting the same members as ``ops`` (each an ``add`` of a whole member)."""
    patch: dict[str, Any] = {}
    for op in ops:
        *parents, member = op["path"].split("/")[1:]
        node = patch
        for token in parents:
            node = node.setdefault(token, {})
        node[member] = op["value"]
    return patch


def _summary(label: str, seconds: list[float]) -> str:
    """One line: the mean and the percentiles every benchmark table uses (runner.summary)."""
    ms = summary([1000 * s for s in seconds])
    return (f"{label:<12} n={ms['n']}  mean {1000 * statistics.fmean(seconds):6.2f}  "
            f"p50 {ms['p50']:6.2f}  p90 {ms['p90']:6.2f}  p99 {ms['p99']:6.2f} ms")


async def run(kubeconfig: str, n: int, endpoints: int) -> None:
    client = await KubeClient.connect(kubeconfig, settings=ClientSettings(qps=1e6, burst=1000))
    namespace = f"slicectl-update-cost-{secrets.token_hex(3)}"
    try:
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        selector = parse_selector({
            "apiVersion": SLICECTL.api_version, "kind": SLICECTL.kind,
            "metadata": {"name": "bench", "namespace": namespace, "uid": "bench-uid",
                         "resourceVersion": "1", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "bench"}}}}, SLICECTL)
        spec = SliceSpec(address_type="IPv4", ports=(), labels={"app.kubernetes.io/name": "b"},
                         endpoints=_endpoints(endpoints, namespace, -1))
        body = new_slice_body(selector, spec, None)
        del body["metadata"]["ownerReferences"]  # its owner does not exist: no GC for this one
        owner = OwnerRef(SLICECTL.api_version, SLICECTL.kind, selector.name, selector.uid)
        current = replace(parse_slice(await client.create(ENDPOINTSLICES, body, namespace)),
                          owner=owner)
        timings: dict[str, list[float]] = {"json patch": [], "merge patch": []}
        for i in range(n):
            kinds = ("json patch", "merge patch") if i % 2 else ("merge patch", "json patch")
            for j, kind in enumerate(kinds):
                flipped = replace(spec, endpoints=_endpoints(endpoints, namespace,
                                                             (2 * i + j) % endpoints))
                ops = slice_patch(selector, SliceUpdate(existing=current, spec=flipped),
                                  f"2026-01-01T00:00:{(2 * i + j) % 60:02d}Z")
                started = time.perf_counter()
                if kind == "json patch":
                    raw = await client.patch(ENDPOINTSLICES, current.name, ops, namespace,
                                             patch_type="json")
                else:
                    raw = await client.patch(ENDPOINTSLICES, current.name, _merge_patch(ops),
                                             namespace, patch_type="merge")
                timings[kind].append(time.perf_counter() - started)
                current = replace(parse_slice(raw), owner=owner)
                await asyncio.sleep(0.01)
        assert current.annotations.get(ANNOTATION_TRIGGER_TIME), "the updates did not land"
        print(f"{n} updates of each kind, one {endpoints}-endpoint slice, interleaved")
        for kind, seconds in timings.items():
            print(_summary(kind, seconds))
    finally:
        await client.delete(NAMESPACES, namespace)
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.update_cost",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", help="a real cluster; default: the embedded API server")
    parser.add_argument("--n", type=int, default=1000, help="updates of each kind")
    parser.add_argument("--endpoints", type=int, default=100, help="endpoints in the slice")
    args = parser.parse_args()
    server = None if args.kubeconfig else EmbeddedServer()
    try:
        asyncio.run(run(server.kubeconfig if server else args.kubeconfig, args.n,
                        args.endpoints))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
