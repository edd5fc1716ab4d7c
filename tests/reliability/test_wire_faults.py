"""Faults on the wire between slicectl and its API server, on the embedded server or a real one.

The replicas reach the server through a :class:`~tests.integration.wire.WireProxy` (TLS passes
through it untouched), and the proxy breaks their connections while the churn, which talks to
the server directly, keeps changing pods. Nothing here needs a fault knob of the server, so with
``SLICECTL_TEST_KUBECONFIG`` these scenarios run against that real cluster:

* **connections reset**: every connection of slicectl's reset every 2 s (watches end mid-stream,
  requests in flight lose their answers), as when an API server restarts behind a load balancer;
* **connections half-open**: every open connection stops carrying bytes for good, new ones flow:
  only slicectl's own watch inactivity timeout and request timeout can notice;
* **server cut off, two replicas**: no byte in either direction, on open or new connections, for
  8 s (past the 3 s renew deadline), then everything held flows again, as when a partition heals
  or a frozen server resumes: neither replica spins, both answer /healthz, one leader after,
  exact within 20 s.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.reliability.conftest import Sizes
from tests.reliability.stack import Row, load, record, stack, under_fault
from tests.reliability.test_api_faults import SHORT_INACTIVITY
from tests.reliability.test_leadership import ELECTION, FREEZE, pair_through_an_outage

RESET_EVERY = 2.0
REQUEST_TIMEOUT = 30.0  # ClientSettings' default: a request stalled in flight ends by then
HALF_OPEN_BOUND = REQUEST_TIMEOUT + 15.0


async def test_connections_reset_under_churn(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path, wire=True) as s:
        assert s.wire is not None
        wire = s.wire
        churn, _ = await s.churning_solo(sizes.pods, seed=31)
        resets = 0

        async def reset_often() -> None:
            nonlocal resets
            while True:
                await asyncio.sleep(RESET_EVERY)
                resets += wire.drop()

        seconds = sizes.fault_seconds
        took, verdict = await under_fault(s, churn, seconds, during=reset_often, quiet=1.5)
        assert resets > 0, "no connection was reset: the replica does not go through the wire"
        record(Row("connections reset (wire)", f"every connection of slicectl reset every "
                   f"{RESET_EVERY:g} s{_where(s.real)}", load(churn, seconds),
                   f"{resets} connections reset", lost=verdict.lost,
                   duplicated=verdict.duplicated, converge=took))


async def test_half_open_connections_are_noticed(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path, wire=True) as s:
        assert s.wire is not None
        wire = s.wire
        churn, _ = await s.churning_solo(sizes.pods, seed=32, extra=SHORT_INACTIVITY)
        stalled = 0

        def stall() -> None:
            nonlocal stalled
            stalled = wire.stall()  # these never carry a byte again; new connections flow

        seconds = sizes.fault_seconds
        took, verdict = await under_fault(s, churn, seconds, on=stall, limit=HALF_OPEN_BOUND)
        assert stalled > 0, "no connection was open to stall"
        record(Row("connections half-open (wire)", "every open connection of slicectl silent "
                   f"for good, new ones flowing{_where(s.real)}", load(churn, seconds),
                   f"{stalled} connections stalled", lost=verdict.lost,
                   duplicated=verdict.duplicated, converge=took))


async def test_cut_off_past_the_renew_deadline_then_healed(tmp_path: Path,
                                                          sizes: Sizes) -> None:
    async with stack(tmp_path, wire=True) as s:
        assert s.wire is not None
        wire = s.wire
        held = 0

        def cut() -> None:
            nonlocal held
            held = wire.stall(new_too=True)

        churn, cores, took, verdict = await pair_through_an_outage(s, sizes, 33, cut,
                                                                   wire.resume)
        record(Row("cut off, then healed (wire)", f"no byte to or from the API server for "
                   f"{FREEZE:g} s (renew deadline {ELECTION.renew:g} s), {held} connections "
                   f"held, then flowing again; 2 replicas{_where(s.real)}",
                   load(churn, FREEZE + 4.0), "CPU while cut off: " + ", ".join(
                       f"{n} {c:.2f} core" for n, c in cores.items()),
                   lost=verdict.lost, duplicated=verdict.duplicated, converge=took + 2.0,
                   notes="from the heal"))


def _where(real: bool) -> str:
    return "; real API server" if real else ""
