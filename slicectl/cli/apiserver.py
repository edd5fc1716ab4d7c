"""``slicectl apiserver``: run the embedded Kubernetes API server in the foreground.

Serves HTTPS on ``--host``/``--port`` (0 picks a free port), writes a kubeconfig for kubectl to
``--kubeconfig-out``, prints the URL and kubeconfig path on stdout, and applies the fault
injection flags until SIGINT/SIGTERM. Fault flags strike before the server acts (latency, 500s,
429s), after it acted on a write (``--inject-lost-response-rate``: applied, then the connection is
reset; ``--inject-error-after-rate``: applied, then answered 500), or on streams (dropped, stalled
or reset watches, LIST bodies cut short).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from slicectl.cli.gctune import freeze_survivors
from slicectl.sim.lifecycle import GC_DELAY
from slicectl.sim.server import EmbeddedApiServer


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _resource_latency(text: str) -> tuple[str, float]:
    resource, sep, ms = text.partition("=")
    if not sep or not resource:
        raise argparse.ArgumentTypeError(f"want RESOURCE=MILLISECONDS, got {text}")
    try:
        return resource, _non_negative(ms) / 1000.0
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"want RESOURCE=MILLISECONDS, got {text}") from exc


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="listen port (0 = any free)")
    parser.add_argument("--host", default="127.0.0.1", help="listen address")
    parser.add_argument("--kubeconfig-out", help="write a kubeconfig for this server here")
    parser.add_argument("--token", help="bearer token clients must send (random if unset)")
    parser.add_argument("--watch-cache-size", type=int, default=100 * 1024,
                        help="at most this many events kept per resource for watch resume")
    parser.add_argument("--watch-history-seconds", type=_non_negative, default=75.0,
                        help="events older than this are forgotten: resuming a watch or a "
                             "list from before them gets 410 Expired (the watch cache's 75 s)")
    parser.add_argument("--compaction-seconds", type=_non_negative, default=300.0,
                        help="Exact-resourceVersion lists and continue tokens older than this "
                             "get 410 Expired (the apiserver's 5-minute etcd compaction)")
    parser.add_argument("--bookmark-interval", type=_non_negative, default=60.0,
                        help="seconds between watch bookmarks (the cacher's one minute)")
    parser.add_argument("--watcher-buffer", type=int, default=None, metavar="EVENTS",
                        help="events a watcher may fall behind before it is closed "
                             "(default: sized as the real cacher sizes it; 0 = unbounded)")
    parser.add_argument("--no-kubelet", dest="kubelet", action="store_false",
                        help="do not finish graceful pod deletions; a client plays the kubelet")
    parser.add_argument("--no-garbage-collector", dest="gc", action="store_false",
                        help="never collect dependents of deleted owners, as a cluster without "
                             "kube-controller-manager (envtest)")
    parser.add_argument("--pod-grace-scale", type=_non_negative, default=1.0,
                        help="multiply pod termination grace periods by this (the built-in "
                             "kubelet removes a deleted pod after its scaled grace period)")
    parser.add_argument("--inject-latency-ms", type=_non_negative, default=0.0, metavar="MS",
                        help="latency added to every resource request before the server "
                             "acts on it")
    parser.add_argument("--inject-error-rate", type=_rate, default=0.0,
                        help="fraction of requests answered 500")
    parser.add_argument("--inject-throttle-rate", type=_rate, default=0.0,
                        help="fraction of requests answered 429 with Retry-After")
    parser.add_argument("--inject-resource-latency-ms", type=_resource_latency, action="append",
                        default=[], metavar="RESOURCE=MS",
                        help="extra latency for one resource only, e.g. leases=4000 (repeatable)")
    parser.add_argument("--inject-lost-response-rate", type=_rate, default=0.0, metavar="RATE",
                        help="fraction of writes applied and then answered by a connection reset")
    parser.add_argument("--inject-error-after-rate", type=_rate, default=0.0, metavar="RATE",
                        help="fraction of writes applied and then answered 500")
    parser.add_argument("--inject-list-reset-rate", type=_rate, default=0.0, metavar="RATE",
                        help="fraction of LIST answers cut in the middle of the body")
    parser.add_argument("--reset-watches-every", type=_non_negative, default=0.0,
                        metavar="SECONDS", help="cut the connection of every open watch this often")
    parser.add_argument("--drop-watches-every", type=_non_negative, default=0.0,
                        metavar="SECONDS", help="end every open watch this often")
    parser.add_argument("--stall-watches-every", type=_non_negative, default=0.0,
                        metavar="SECONDS",
                        help="this often, send nothing on open watches for half the period")


async def _serve(args: argparse.Namespace) -> None:
    server = EmbeddedApiServer(host=args.host, port=args.port, token=args.token,
                               watch_cache_size=args.watch_cache_size,
                               bookmark_interval=args.bookmark_interval,
                               kubeconfig_path=args.kubeconfig_out,
                               watch_history_seconds=args.watch_history_seconds,
                               compaction_seconds=args.compaction_seconds,
                               watcher_buffer=args.watcher_buffer, kubelet=args.kubelet,
                               pod_grace_scale=args.pod_grace_scale,
                               gc_delay=GC_DELAY if args.gc else None)
    faults = server.faults
    faults.latency_ms = args.inject_latency_ms
    faults.error_rate = args.inject_error_rate
    faults.throttle_rate = args.inject_throttle_rate
    faults.resource_latency = dict(args.inject_resource_latency_ms)
    faults.lost_response_rate = args.inject_lost_response_rate
    faults.error_after_rate = args.inject_error_after_rate
    faults.list_reset_rate = args.inject_list_reset_rate
    faults.reset_watches_every = args.reset_watches_every
    faults.drop_watches_every = args.drop_watches_every
    faults.stall_watches_every = args.stall_watches_every
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        print(f"serving {server.url}", flush=True)
        print(f"kubeconfig {server.kubeconfig_path}", flush=True)
        await stop.wait()


def main(args: argparse.Namespace) -> int:
    if args.watch_cache_size < 1:
        print("slicectl apiserver: --watch-cache-size must be >= 1", file=sys.stderr)
        return 2
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    freeze_survivors()  # no collector pauses a Go API server would not have
    asyncio.run(_serve(args))
    return 0
