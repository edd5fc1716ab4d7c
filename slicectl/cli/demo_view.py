"""What ``slicectl demo`` shows: its own picture of pods and slices, the table, the final check.

The demo watches pods and EndpointSlices with its own informers, independent of the controller's
caches, so what it shows and checks is what any other client of the API server sees. Selector
matching uses the shared label-selector model; the expected endpoints are derived here from the
spec's rules (phase, IPs, Ready, deletionTimestamp), not from the controller's reconcile code, so
the final check is a real cross-check.

On a terminal the table is redrawn in place with two ANSI sequences (cursor up N lines, clear to
the end of the screen), and progress notes scroll above it; elsewhere each changed row is printed
as a plain line. Redraws happen only when a row changed.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from slicectl.cache.informer import Informer
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, PODS
from slicectl.model.parse import parse_pod, parse_slice
from slicectl.model.records import PodRecord, SliceRecord
from slicectl.model.selector import Selector

_GONE_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Row:
    name: str
    selected: int  # pods the selector matches, in any state
    ready: int  # ready endpoints across its slices
    total: int  # endpoints across its slices
    slice_sizes: tuple[int, ...]
    writes: int  # slice creates, updates and deletes seen on the watch

    def plain(self) -> str:
        sizes = "+".join(map(str, self.slice_sizes)) or "-"
        return (f"{self.name}: pods {self.selected}, endpoints {self.ready}/{self.total} ready, "
                f"slices {len(self.slice_sizes)} [{sizes}], writes {self.writes}")


class _WriteCounter:
    """Informer handler counting slice writes per selector (one watch event = one write)."""

    def __init__(self) -> None:
        self.by_selector: Counter[str] = Counter()

    def _count(self, s: SliceRecord) -> None:
        self.by_selector[s.selector_name or ""] += 1

    def on_add(self, new: SliceRecord) -> None:
        self._count(new)

    def on_update(self, old: SliceRecord, new: SliceRecord) -> None:
        self._count(new)

    def on_delete(self, old: SliceRecord) -> None:
        self._count(old)


class ClusterView:
    def __init__(self, client: KubeClient, namespace: str,
                 selectors: Sequence[tuple[str, Selector]]) -> None:
        self.selectors = tuple(selectors)
        self._writes = _WriteCounter()
        self.pods: Informer[PodRecord] = Informer(
            client, PODS, parse_pod, key=lambda p: p.key, namespace=namespace)
        self.slices: Informer[SliceRecord] = Informer(
            client, ENDPOINTSLICES, parse_slice, key=lambda s: s.key, namespace=namespace,
            handler=self._writes)

    def informers(self) -> tuple[Informer[PodRecord], Informer[SliceRecord]]:
        return self.pods, self.slices

    def rows(self) -> list[Row]:
        by_selector: dict[str, list[SliceRecord]] = {}
        for s in self.slices.store.values():
            if not s.terminating:
                by_selector.setdefault(s.selector_name or "", []).append(s)
        rows = []
        for name, sel in self.selectors:
            slices = by_selector.get(name, [])
            endpoints = [e for s in slices for e in s.endpoints]
            rows.append(Row(
                name=name,
                selected=sum(1 for p in self.pods.store.values() if sel.matches(p.labels)),
                ready=sum(1 for e in endpoints if e.ready),
                total=len(endpoints),
                slice_sizes=tuple(sorted((len(s.endpoints) for s in slices), reverse=True)),
                writes=self._writes.by_selector[name],
            ))
        return rows


def check_final_state(selectors: Iterable[tuple[str, Selector]], pods: Iterable[PodRecord],
                      slices: Iterable[SliceRecord]) -> list[str]:
    """Problems with the slices of each selector; empty when every pod that should be listed is
    listed exactly once, with the right readiness, and nothing else is."""
    pods = list(pods)
    live = [s for s in slices if not s.terminating]
    problems: list[str] = []
    for name, sel in selectors:
        want = {p.name: p.ready and not p.terminating for p in pods
                if sel.matches(p.labels) and p.phase not in _GONE_PHASES and p.pod_ips}
        seen: Counter[str] = Counter()
        ready: dict[str, bool] = {}
        for s in live:
            if s.selector_name != name:
                continue
            for e in s.endpoints:
                pod = e.target.name if e.target is not None else "?"
                seen[pod] += 1
                ready[pod] = e.ready
        missing = sorted(set(want) - set(seen))
        extra = sorted(set(seen) - set(want))
        twice = sorted(p for p, n in seen.items() if n > 1)
        wrong = sorted(p for p in set(want) & set(seen) if ready[p] != want[p])
        for what, names in (("missing", missing), ("not selected but listed", extra),
                            ("listed more than once", twice), ("wrong readiness", wrong)):
            if names:
                shown = ", ".join(names[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5
                                               else "")
                problems.append(f"{name}: {len(names)} pod(s) {what}: {shown}")
    return problems


class Display:
    """Progress notes plus the per-selector table: redrawn in place (live) or as plain lines."""

    HEADER = ("SELECTOR", "PODS", "READY/TOTAL", "SLICES", "WRITES")

    def __init__(self, out: TextIO, live: bool) -> None:
        self._out = out
        self._live = live
        self._drawn = 0  # table lines currently on screen (live mode)
        self._table: list[str] = []
        self._last_rows: dict[str, Row] = {}
        self._started = time.monotonic()

    def _stamp(self) -> str:
        return f"[{time.monotonic() - self._started:6.2f}s]"

    def note(self, text: str) -> None:
        self._erase()
        self._out.write(f"{self._stamp()} {text}\n")
        self._draw()
        self._out.flush()

    def update(self, rows: list[Row], footer: str) -> None:
        if self._live:
            table = [*self._render(rows), footer]
            if table != self._table:
                self._erase()
                self._table = table
                self._draw()
        else:
            for row in rows:
                if self._last_rows.get(row.name) != row:
                    self._last_rows[row.name] = row
                    self._out.write(f"{self._stamp()} {row.plain()}\n")
        self._out.flush()

    def close(self) -> None:
        """Leave the last table on screen and stop redrawing it."""
        self._drawn = 0
        self._table = []

    def _render(self, rows: list[Row]) -> list[str]:
        cells = [self.HEADER] + [
            (r.name, str(r.selected), f"{r.ready}/{r.total}",
             f"{len(r.slice_sizes)} [{' '.join(map(str, r.slice_sizes)) or '-'}]", str(r.writes))
            for r in rows
        ]
        widths = [max(len(c[i]) for c in cells) for i in range(len(self.HEADER))]
        return ["  ".join(c.ljust(w) for c, w in zip(cells_row, widths, strict=True)).rstrip()
                for cells_row in cells]

    def _erase(self) -> None:
        if self._live and self._drawn:
            self._out.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _draw(self) -> None:
        if self._live and self._table:
            self._out.write("\n".join(self._table) + "\n")
            self._drawn = len(self._table)
