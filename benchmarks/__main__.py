"""``python -m benchmarks run --scenario NAME [--kubeconfig FILE] [--quick] --out DIR``.

Scenarios: initial, flap, rollout, scale, big-cluster, or ``all``. Every scenario but
big-cluster (its own measurements: :mod:`benchmarks.big_cluster`) runs slicectl with its
defaults, slicectl with ``--batch-period 0`` and the naive baseline (``--controllers`` picks
others), one after the other, each in its own process; ``initial``, ``flap`` and ``rollout``
add the ``--batch-period`` sweep (0, 0.1, 0.25, 0.5, 1 s). The API server is the embedded one in a
subprocess unless ``--kubeconfig`` is given. ``DIR`` receives ``results.json``,
``results.md``, PNG plots and each controller's log. The exit code is 1 when a run did not
converge, its slices ended incorrect, or (but for kube-controller-manager) above its ideal count.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.apiserver import EmbeddedServer, LocalServer
from benchmarks.baselines.upstream import UpstreamPlan
from benchmarks.contenders import (
    BATCH_ZERO,
    DEFAULTS,
    NAIVE,
    SWEEP,
    UPSTREAM,
    Contender,
    batch_contender,
)
from benchmarks.driver import MAX_PER_SLICE, ensure_nodes, heartbeat
from benchmarks.report import other_results, plots, table
from benchmarks.runner import Context, run_one
from benchmarks.scenarios import FULL, QUICK, SCENARIOS, Sizes
from slicectl.cli.workload import apply_crd, crd_manifest
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import NODES

CHOICES = [*SCENARIOS, "big-cluster", "all"]


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f
                      if line.startswith("model name")), "")
    return {"cpu": model, "cores": os.cpu_count(), "load_avg_at_start": os.getloadavg(),
            "python": platform.python_version(), "platform": platform.platform(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


CONTENDERS = ("defaults", "batch0", "naive", "sweep", "upstream")
DEFAULT_CONTENDERS = frozenset(CONTENDERS) - {"upstream"}  # upstream only when asked for


def contenders(sweep: bool, chosen: set[str], slicectl_args: tuple[str, ...] = ()
               ) -> list[Contender]:
    """The controllers to run: ``chosen`` among CONTENDERS (the sweep only where it applies),
    every slicectl among them with ``slicectl_args`` appended (and named in its label)."""
    out = [c for name, c in (("defaults", DEFAULTS), ("batch0", BATCH_ZERO), ("naive", NAIVE),
                             ("upstream", UPSTREAM))
           if name in chosen]
    if sweep and "sweep" in chosen:
        out += [batch_contender(w) for w in SWEEP if w != 0.0]
    if not slicectl_args:
        return out
    return [replace(c, label=f"{c.label} {shlex.join(slicectl_args)}",
                    extra=c.extra + slicectl_args) if c.kind == "slicectl" else c for c in out]


def independent_rates(sizes: Sizes) -> dict[str, float]:
    """Changes per second per slice of the scenarios whose changes are independent (flap's
    random flips): the sweep plot draws the curve of writes per change for them. The other
    sweeps' changes are correlated (a creation stream, a rollout's steps) and the curve does
    not bound them."""
    return {"flap": sizes.flap_rate / (sizes.selectors * -(-sizes.pods // MAX_PER_SLICE))}


def controller_names(text: str) -> set[str]:
    names = {part.strip() for part in text.split(",") if part.strip()}
    unknown = names - set(CONTENDERS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown controllers {sorted(unknown)}; "
                                         f"choose among {', '.join(CONTENDERS)}")
    return names


async def big_cluster(args: argparse.Namespace, upstream: bool, out: Path) -> dict[str, Any]:
    """The large-cluster scenario (benchmarks/big_cluster.py), imported only when it runs: it
    loads its own workload and measures ingest, memory and relists rather than writes. With
    ``upstream`` (a real cluster), upstream's controller is timed after slicectl, from a cold
    start of its own kube-controller-manager. It runs in a process of its own, as it measures
    its process's RSS and CPU (:func:`benchmarks.big_cluster_probes.in_fresh_process`)."""
    from benchmarks.big_cluster import run_big_cluster
    from benchmarks.big_cluster_probes import in_fresh_process

    return dict(await in_fresh_process(run_big_cluster, kubeconfig=args.kubeconfig,
                                       quick=args.quick, out=out, upstream=upstream,
                                       kcm_binary=args.kcm_binary,
                                       kcm_kubeconfig=args.kcm_kubeconfig))


async def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    sizes: Sizes = QUICK if args.quick else FULL
    names = list(SCENARIOS) if args.scenario == "all" else (
        [args.scenario] if args.scenario in SCENARIOS else [])
    rows: list[dict[str, Any]] = []
    others: dict[str, Any] = {}
    say = print
    host = machine()  # before the run: its load average is the one the run started with
    chosen = set(args.controllers)
    upstream: UpstreamPlan | None = None
    if "upstream" in chosen and names:
        plan = UpstreamPlan.resolve(args.kubeconfig, args.context, args.kcm_binary,
                                    args.kcm_kubeconfig)
        if isinstance(plan, str):
            say(plan)
            chosen.discard("upstream")
        else:
            upstream = plan
            say(f"upstream: {plan.note}")
    server = None if args.kubeconfig or not names else EmbeddedServer()
    try:
        if names:
            kubeconfig = args.kubeconfig or (server.kubeconfig if server else "")
            client = await KubeClient.connect(kubeconfig, args.context,
                                              ClientSettings(qps=100_000.0, burst=1000))
            async with client:
                if chosen - {"upstream"}:  # the Services of upstream's runs need no CRD
                    await apply_crd(client, crd_manifest())
                created = await ensure_nodes(client)
                beat = asyncio.create_task(heartbeat(client)) if server is None else None
                measured = LocalServer(args.server_pid) if args.server_pid else server
                ctx = Context(client, kubeconfig, args.context, measured, out,
                              60.0 if args.quick else 180.0, say, upstream,
                              args.namespace_prefix)
                try:
                    for name in names:
                        scenario = SCENARIOS[name](sizes)
                        say(f"== {name}: {scenario.describe}")
                        for who in contenders(scenario.sweep, chosen,
                                              tuple(args.slicectl_arg)):
                            record = await run_one(ctx, scenario, who)
                            rows.append(record)
                            say(table([record]).splitlines()[-1])
                finally:
                    if beat is not None:
                        beat.cancel()
                    for node in created if server is None else ():
                        with contextlib.suppress(Exception):
                            await client.delete(NODES, node)
    finally:
        if server is not None:
            server.stop()
    if args.scenario in ("big-cluster", "all"):
        say("== big-cluster")
        others["big-cluster"] = await big_cluster(args, "upstream" in args.controllers, out)
        say(json.dumps(others["big-cluster"], default=str)[:2000])
    meta = {"command": shlex.join(sys.orig_argv), "quick": args.quick,
            "upstream": upstream.note if upstream else None,
            "cluster": args.kubeconfig or "embedded API server (subprocess)",
            "machine": host, "sizes": sizes.__dict__,
            "load_avg_at_end": os.getloadavg()}
    (out / "results.json").write_text(json.dumps(
        {"meta": meta, "runs": rows, "other": others}, indent=1, default=str))
    pngs = plots(rows, out, independent_rates(sizes)) if rows else []
    md = [f"$ {meta['command']}", "", f"cluster: {meta['cluster']}; machine: "
          f"{meta['machine']['cpu']} x {meta['machine']['cores']}; load average at start "
          f"{meta['machine']['load_avg_at_start']}, at the end {meta['load_avg_at_end']}", ""]
    if rows:
        md += [table(rows), ""]
    if others:
        md += [other_results(others), ""]
    md += [f"![{p.stem}]({p.name})" for p in pngs]
    (out / "results.md").write_text("\n".join(md) + "\n")
    say("")
    say("\n".join(md))
    return 1 if any(failed(r) for r in rows) else 0


def failed(r: dict[str, Any]) -> bool:
    """Whether a run makes the benchmark fail: an error, no convergence, a final list that is
    wrong, a change never published, or a controller that packs its slices (slicectl, naive;
    not kube-controller-manager, which never compacts) left above their ideal count."""
    return ("error" in r or r.get("converge_s") is None or bool(r.get("problems"))
            or bool(r.get("unpublished"))
            or (r.get("kind") != "upstream" and r["slices"] > r["ideal"]))


def replot(out: Path) -> int:
    """Redraw ``results.md``'s table and the plots from ``results.json``."""
    data = json.loads((out / "results.json").read_text())
    rows = data["runs"]
    sizes = Sizes(**data["meta"]["sizes"])
    for p in plots(rows, out, independent_rates(sizes)):
        print(p)
    print(table(rows))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one scenario, or all")
    r.add_argument("--scenario", required=True, choices=CHOICES)
    r.add_argument("--kubeconfig", help="a real cluster; default: the embedded API server")
    r.add_argument("--context", help="kubeconfig context")
    r.add_argument("--quick", action="store_true", help="small sizes (a CI smoke run)")
    r.add_argument("--out", required=True, type=Path, help="directory for results and plots")
    r.add_argument("--controllers", type=controller_names, default=set(DEFAULT_CONTENDERS),
                   help="comma-separated subset of " + ",".join(CONTENDERS)
                   + " (default: all but upstream)")
    r.add_argument("--slicectl-arg", action="append", default=[], metavar="FLAG",
                   help="a flag for every slicectl run, appended to its command line "
                   "(repeatable), e.g. --slicectl-arg=--max-batch-period=500ms")
    r.add_argument("--kcm-binary", default=os.environ.get("SLICECTL_BENCH_KCM"),
                   help="kube-controller-manager binary for the upstream contender, used when "
                   "no kube-controller-manager serving the cluster runs the endpointslice "
                   "controller already (default: $SLICECTL_BENCH_KCM)")
    r.add_argument("--kcm-kubeconfig", help="kubeconfig for that kube-controller-manager "
                   "(default: --kubeconfig)")
    r.add_argument("--server-pid", type=int, action="append", default=[], metavar="PID",
                   help="with --kubeconfig: a process of that cluster's API server running on "
                        "this machine (kube-apiserver, etcd; repeatable), whose CPU is reported "
                        "as server CPU s")
    r.add_argument("--namespace-prefix", default="bench",
                   help="namespaces are PREFIX-SCENARIO-RANDOM (default: bench)")
    rp = sub.add_parser("plot", help="redraw the table and plots of an earlier run's DIR")
    rp.add_argument("--out", required=True, type=Path, help="a directory with results.json")
    args = p.parse_args()
    if args.command == "plot":
        return replot(args.out)
    if args.server_pid and not args.kubeconfig:
        r.error("--server-pid needs --kubeconfig: the embedded server's CPU is read anyway")
    for pid in args.server_pid:
        if not Path(f"/proc/{pid}/stat").exists():
            r.error(f"--server-pid {pid}: no such process on this machine")
    args.out.mkdir(parents=True, exist_ok=True)
    from slicectl.obs.logging import configure_logging
    configure_logging("warning", "console")
    import uvloop
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
