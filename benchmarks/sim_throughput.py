"""Throughput of the embedded API server, measured from outside it.

The server runs in its own process (``python -m slicectl apiserver``, uvloop, one core); this
process drives it over HTTPS keep-alive connections with raw aiohttp + orjson and ``--concurrency``
requests in flight. For each phase it prints the wall-clock rate and the server's own CPU time
(from /proc), so ``per server CPU-second`` is what one core of server can do regardless of how
fast this client is:

- create and JSON merge-patch of ``--n`` pods, then of ``--n`` EndpointSlices;
- watch events delivered to ``--watchers`` pod watchers while ``--n`` pod patches are made.
  Those watchers share this process with the patches and fall behind; the server runs with
  ``--watcher-buffer 0`` so that it delivers to them, where by default it closes a watcher
  lagging more than the real cacher's buffer (and the phase would count only that buffer).

    .venv/bin/python benchmarks/sim_throughput.py [--n 4000] [--concurrency 32] [--watchers 8]
        [--profile FILE]   # run the server under cProfile and write its stats to FILE
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

PODS = "/api/v1/namespaces/default/pods"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON = {"Content-Type": "application/json"}
TICKS = os.sysconf("SC_CLK_TCK")


class Server:
    """The API server subprocess: start, connection settings, CPU seconds used so far."""

    def __init__(self, profile: str | None) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="sim-bench-")
        self.kubeconfig = Path(self.tmp.name) / "kubeconfig"
        prefix = ["-m", "cProfile", "-o", profile] if profile else []
        self.proc = subprocess.Popen(
            [sys.executable, *prefix, "-m", "slicectl", "apiserver", "--port", "0",
             "--kubeconfig-out", str(self.kubeconfig), "--bookmark-interval", "0",
             "--watcher-buffer", "0"],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("kubeconfig "):
                break
        config = yaml.safe_load(self.kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url: str = cluster["server"]
        self.token: str = config["users"][0]["user"]["token"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.ssl = ssl.create_default_context(cadata=ca)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime

    def stop(self) -> None:
        self.proc.terminate()  # SIGTERM: the server shuts down cleanly (cProfile writes stats)
        self.proc.wait(30)
        self.tmp.cleanup()


def pod(i: int) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"p{i}", "labels": {"app": "bench"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}})


def endpoint_slice(i: int) -> bytes:
    return orjson.dumps({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": f"s{i}", "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"],
                       "conditions": {"ready": True}, "nodeName": "n1"}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]})


def relabel(round_: int) -> Callable[[int], bytes]:
    return lambda i: orjson.dumps({"metadata": {"labels": {"round": str(round_), "i": str(i)}}})


async def drive(session: aiohttp.ClientSession, method: str, url: Callable[[int], str],
                body: Callable[[int], bytes], headers: dict[str, str], n: int,
                concurrency: int) -> None:
    """``n`` requests with ``concurrency`` in flight; every answer must be a success."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            async with session.request(method, url(i), data=body(i), headers=headers) as resp:
                await resp.read()
                if resp.status >= 300:
                    raise RuntimeError(f"{method} {url(i)}: {resp.status}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def report(label: str, ops: int, wall: float, cpu: float) -> None:
    per_cpu = ops / cpu if cpu > 0 else float("inf")
    print(f"{label:<46} {ops / wall:>9,.0f}/s wall   {per_cpu:>9,.0f}/s per server "
          f"CPU-second   (server CPU {100 * cpu / wall:.0f}%)", flush=True)


async def phase(server: Server, label: str, ops: int, work: Any) -> None:
    cpu0, t0 = server.cpu_seconds(), time.perf_counter()
    await work
    report(label, ops, time.perf_counter() - t0, server.cpu_seconds() - cpu0)


async def watch_count(session: aiohttp.ClientSession, url: str, rv: str, want: int,
                      counts: list[int], idx: int, ready: asyncio.Event) -> None:
    params = {"watch": "true", "resourceVersion": rv}
    async with session.get(url, params=params) as resp:
        ready.set()
        while counts[idx] < want:
            chunk = await resp.content.readany()
            if not chunk:
                return
            counts[idx] += chunk.count(b"\n")


async def run(args: argparse.Namespace) -> None:
    server = Server(args.profile)
    try:
        connector = aiohttp.TCPConnector(ssl=server.ssl, limit=0)
        auth = {"Authorization": f"Bearer {server.token}"}
        async with aiohttp.ClientSession(connector=connector, headers=auth) as session:
            n, c, base = args.n, args.concurrency, server.url
            print(f"n={n} concurrency={c} watchers={args.watchers}")
            await phase(server, "pod create", n, drive(
                session, "POST", lambda i: base + PODS, pod, JSON, n, c))
            await phase(server, "pod merge-patch", n, drive(
                session, "PATCH", lambda i: f"{base}{PODS}/p{i}", relabel(1), MERGE, n, c))
            await phase(server, "endpointslice create", n, drive(
                session, "POST", lambda i: base + SLICES, endpoint_slice, JSON, n, c))
            await phase(server, "endpointslice merge-patch", n, drive(
                session, "PATCH", lambda i: f"{base}{SLICES}/s{i}", relabel(1), MERGE, n, c))

            async with session.get(base + PODS, params={"limit": "1"}) as resp:
                rv = orjson.loads(await resp.read())["metadata"]["resourceVersion"]
            w = args.watchers
            counts = [0] * w
            readies = [asyncio.Event() for _ in range(w)]
            watchers = [asyncio.create_task(
                watch_count(session, base + PODS, rv, n, counts, i, readies[i]))
                for i in range(w)]
            await asyncio.gather(*(r.wait() for r in readies))

            async def patches_then_drain() -> None:
                await drive(session, "PATCH", lambda i: f"{base}{PODS}/p{i}", relabel(2),
                            MERGE, n, c)
                await asyncio.wait_for(asyncio.gather(*watchers), 120)

            await phase(server, f"watch events delivered ({w} watchers)", w * n,
                        patches_then_drain())
            assert all(count >= n for count in counts), counts
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=4000, help="objects per phase")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    parser.add_argument("--watchers", type=int, default=8)
    parser.add_argument("--profile", help="write the server's cProfile stats here")
    args = parser.parse_args()
    import uvloop
    uvloop.run(run(args))


if __name__ == "__main__":
    main()
