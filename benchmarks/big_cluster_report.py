"""big-cluster's report: each measurement against issue 9's target, as JSON and markdown."""

from __future__ import annotations

import json
import pathlib
from typing import Any


def write_results(out: pathlib.Path, result: dict[str, Any]) -> None:
    (out / "big_cluster.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "big_cluster.md").write_text(markdown(result))


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []

    def add(name: str, value: Any, target: str, ok: bool | None) -> None:
        rows.append({"metric": name, "value": value, "target": target,
                     "met": "n/a" if ok is None else ("yes" if ok else "NO")})

    ingest = r.get("ingest_events_per_cpu_second")
    add("ingest, pod watch events per CPU second", ingest, ">= 20,000",
        None if ingest is None else ingest >= 20_000)
    per_pod = r.get("rss_bytes_per_pod")
    at_size = (r.get("pods_cached") or 0) >= 150_000  # the fixed cost dominates below that
    add(f"RSS per pod held ({r.get('pods_cached')} pods)", per_pod, "<= 1,024 B at 150k",
        None if per_pod is None or not at_size else per_pod <= 1024)
    ratio = r.get("relist_peak_ratio")
    add("relist peak RSS / steady RSS", ratio, "<= 1.5", None if ratio is None else ratio <= 1.5)
    p99, mx = r.get("lag_p99_ms"), r.get("lag_max_ms")
    add("event-loop lag p99 during relist (ms)", p99, "<= 50", None if p99 is None else p99 <= 50)
    add("event-loop lag max during relist (ms)", mx, "<= 250", None if mx is None else mx <= 250)
    sr = r.get("sync_ratio_50k_vs_1k")
    add("sync CPU, 50k-pod vs 1k-pod namespace", sr, "<= 1.5", None if sr is None else sr <= 1.5)
    return rows


def markdown(r: dict[str, Any]) -> str:
    lines = [f"## big-cluster ({'quick' if r['quick'] else 'full'}, {r['server']} server)", "",
             f"{r.get('pods')} pods in {r['size']['namespaces']} namespaces (largest "
             f"{r['size']['big_namespace']}), {r.get('selectors_cached')} selectors; pod JSON "
             f"~{r.get('pod_json_bytes', '?')} B with managedFields.", "",
             "| measurement | value |", "|---|---|"]
    for key, label in (
        ("list_seconds", "initial LIST of all caches (s)"),
        ("pod_lists_streamed", "pod lists streamed as a watch (WatchList), of all pod lists"),
        ("index_build_seconds", "selector -> pods index build (s)"),
        ("initial_sync_seconds", "first sync of every selector, writes included (s)"),
        ("list_and_sync_seconds", "initial LIST + sync (s)"),
        ("ingest_events_per_cpu_second", "ingest: pod watch events per CPU second"),
        ("rss_bytes_per_pod", "RSS per pod held (bytes)"),
        ("rss_mib_baseline", "RSS before the first LIST, connected (MiB)"),
        ("rss_mib_cached", "RSS with caches full (MiB)"),
        ("rss_mib_synced", "RSS after the first sync (MiB)"),
        ("peak_rss_mib_synced", "peak RSS by the end of the first sync (MiB)"),
        ("relist_seconds", "forced relist of pods (s)"),
        ("relist_cpu_seconds", "controller CPU during the relist (s)"),
        ("relist_steady_rss_mib", "RSS before the relist (MiB)"),
        ("relist_peak_rss_mib", "peak RSS during the relist (MiB)"),
        ("lag_p99_ms", "event-loop lag p99 during the relist (ms)"),
        ("lag_max_ms", "event-loop lag max during the relist (ms)"),
        ("idle_lag_p99_ms", "the same sampling, idle controller: lag p99 (ms)"),
        ("idle_lag_max_ms", "the same sampling, idle controller: lag max (ms)"),
    ):
        if r.get(key) is not None:
            lines.append(f"| {label} | {r[key]:,} |" if isinstance(r[key], int)
                         else f"| {label} | {r[key]} |")
    lines += ["", "Sync CPU of one fixed 100-pod selector as its namespace grows:", "",
              "| namespace pods | CPU per sync (us) |", "|---|---|"]
    lines += [f"| {s['namespace_pods']:,} | {s['cpu_us']} |" for s in r["sync_scaling"]]
    lines += _upstream(r)
    lines += ["", "| target | measured | goal | met |", "|---|---|---|---|"]
    lines += [f"| {t['metric']} | {t['value']} | {t['target']} | {t['met']} |"
              for t in r["targets"]]
    return "\n".join(lines) + "\n"


def _upstream(r: dict[str, Any]) -> list[str]:
    """slicectl and upstream side by side, if upstream ran (real clusters, ``--kcm-binary``)."""
    if "upstream_seconds_to_all_published" not in r:
        return []
    cpu = round((r.get("list_cpu_seconds") or 0) + (r.get("initial_sync_cpu_seconds") or 0), 2)
    rows = (
        ("start to every endpoint published (s)", r.get("list_and_sync_seconds"),
         f"{r['upstream_seconds_to_all_published']} (polled every second)"),
        ("controller CPU meanwhile (s)", cpu, r.get("upstream_cpu_seconds")),
        ("peak RSS by then (MiB)", r.get("peak_rss_mib_synced"), r.get("upstream_peak_rss_mib")),
        ("slices / endpoints published", f"{r.get('slicectl_slices')} / "
         f"{r.get('slicectl_endpoints')}", f"{r.get('upstream_slices')} / "
         f"{r.get('upstream_endpoints')}"
         + ("" if r.get("upstream_converged") else " (did not converge)")),
    )
    given = r.get("upstream_command_extra")
    return ["", "Side by side with upstream's EndpointSlice controller (a Service per selector; "
            f"upstream given the same client budget and workers: {given}):",
            "", "| | slicectl | kube-controller-manager |", "|---|---|---|",
            *(f"| {name} | {ours} | {theirs} |" for name, ours, theirs in rows)]
