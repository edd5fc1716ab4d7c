"""Throughput of the embedded API server: writes/s from one client, watch events/s delivered.

Runs server and clients in one process on one event loop (so on one core): N creates, then N
merge patches, sequentially from one HTTPS client; then W watchers on pods while N more patches
are made, counting the events the watchers receive. Prints one line per figure.

    .venv/bin/python benchmarks/sim_throughput.py [--n 2000] [--watchers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ssl
import time

import aiohttp
import orjson
import yaml

from slicectl.sim.server import EmbeddedApiServer

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}


def ssl_context(kubeconfig_path: str) -> ssl.SSLContext:
    with open(kubeconfig_path) as fh:
        cluster = yaml.safe_load(fh)["clusters"][0]["cluster"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return ssl.create_default_context(cadata=ca)


def _pod(i: int) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"p{i}", "labels": {"app": "bench"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}})


async def _watch(session: aiohttp.ClientSession, url: str, rv: str, want: int,
                 counts: list[int], idx: int) -> None:
    params = {"watch": "true", "resourceVersion": rv}
    async with session.get(url + PODS, params=params) as resp:
        async for _line in resp.content:
            counts[idx] += 1
            if counts[idx] >= want:
                return


async def run(n: int, watchers: int) -> None:
    async with EmbeddedApiServer() as srv:
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path), limit=0)
        headers = {"Authorization": f"Bearer {srv.token}", "Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
            start = time.perf_counter()
            for i in range(n):
                async with session.post(srv.url + PODS, data=_pod(i)) as resp:
                    assert resp.status == 201, await resp.text()
            elapsed = time.perf_counter() - start
            print(f"creates/s (1 client, sequential): {n / elapsed:,.0f}")
            start = time.perf_counter()
            for i in range(n):
                body = orjson.dumps({"metadata": {"labels": {"round": "1", "i": str(i)}}})
                async with session.patch(srv.url + PODS + f"/p{i}", data=body,
                                         headers=MERGE) as resp:
                    assert resp.status == 200
            elapsed = time.perf_counter() - start
            print(f"patches/s (1 client, sequential): {n / elapsed:,.0f}")

            rv = str(srv.store.rv)
            counts = [0] * watchers
            tasks = [asyncio.create_task(_watch(session, srv.url, rv, n, counts, i))
                     for i in range(watchers)]
            await asyncio.sleep(0.2)
            start = time.perf_counter()
            pods = srv.registry.lookup("", "v1", "pods")
            assert pods is not None
            for i in range(n):  # in-process writes: measures fan-out alone, no client cost
                obj = srv.store.get(pods, "default", f"p{i}")
                assert obj is not None
                srv.store.put(pods, {**obj, "metadata": {**obj["metadata"], "labels": {"r": "2"}}})
            await asyncio.wait_for(asyncio.gather(*tasks), 120)
            elapsed = time.perf_counter() - start
            print(f"watch events/s delivered ({watchers} watchers, {n} in-process writes): "
                  f"{watchers * n / elapsed:,.0f}")

            counts = [0] * watchers
            rv = str(srv.store.rv)
            tasks = [asyncio.create_task(_watch(session, srv.url, rv, n, counts, i))
                     for i in range(watchers)]
            await asyncio.sleep(0.2)
            start = time.perf_counter()
            for i in range(n):
                body = orjson.dumps({"metadata": {"labels": {"round": "3"}}})
                async with session.patch(srv.url + PODS + f"/p{i}", data=body,
                                         headers=MERGE) as resp:
                    assert resp.status == 200
            await asyncio.wait_for(asyncio.gather(*tasks), 120)
            elapsed = time.perf_counter() - start
            print(f"patches/s with {watchers} watchers attached: {n / elapsed:,.0f} "
                  f"({watchers * n / elapsed:,.0f} watch events/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--watchers", type=int, default=4)
    args = parser.parse_args()
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(run(args.n, args.watchers))


if __name__ == "__main__":
    main()
