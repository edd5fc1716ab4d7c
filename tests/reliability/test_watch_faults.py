"""Watch faults under churn: watches dropped every 2 s, stalled watches, compaction and 410 storms.

One slicectl process against the embedded API server; the fault is on while pods churn, then
the end state must be exact and, once right, no slice is written again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.reliability.conftest import Sizes
from tests.reliability.stack import Row, load, record, stack, under_fault

pytestmark = pytest.mark.embedded_only(
    reason="fault injection: watches ended and history compacted by the embedded server")
RELIST = "slicectl_relists_total"
INFORMERS = 4  # nodes, pods, endpointslices, endpointselectors (one namespace)


async def test_watches_dropped_every_2s(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path) as s:
        assert s.server is not None
        faults = s.server.faults
        churn, _ = await s.churning_solo(sizes.pods, seed=1)
        seconds = max(sizes.fault_seconds, 6.0)
        took, verdict = await under_fault(
            s, churn, seconds, on=lambda: setattr(faults, "drop_watches_every", 2.0),
            off=lambda: setattr(faults, "drop_watches_every", 0.0), quiet=1.5)
        record(Row("watches dropped", "every open watch ended every 2 s", load(churn, seconds),
                   f"{int(seconds // 2)} drops x {INFORMERS} watches", lost=verdict.lost,
                   duplicated=verdict.duplicated, converge=took))


async def test_compaction_and_410_storm(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path) as s:
        assert s.server is not None
        faults = s.server.faults
        churn, solo = await s.churning_solo(sizes.pods, seed=2)
        await asyncio.sleep(1.5)  # the relist counter is exported every second
        relists_before = solo.metric(RELIST)
        compactions = 0

        async def storm() -> None:
            nonlocal compactions
            while True:
                await asyncio.sleep(0.7)
                faults.compact()
                faults.drop_watches()  # every watch resumes from a compacted version: 410
                compactions += 1

        seconds = sizes.fault_seconds
        took, verdict = await under_fault(s, churn, seconds, during=storm, quiet=1.5)
        await asyncio.sleep(1.5)
        relists = solo.metric(RELIST) - relists_before
        assert relists >= 1, "a 410 was answered but nothing relisted"
        assert relists <= compactions * INFORMERS, (
            f"{relists:g} relists for {compactions} compactions x {INFORMERS} watches: more "
            "than one relist per 410")
        record(Row("compaction + 410 storm", "history compacted and watches ended every 0.7 s",
                   load(churn, seconds), f"{compactions} compactions, {relists:g} relists "
                   f"(bound {compactions * INFORMERS})", lost=verdict.lost,
                   duplicated=verdict.duplicated, converge=took))
