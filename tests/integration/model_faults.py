"""Faults as operations of the model-based test (tests/integration/test_model_based.py).

Why: the fault tests (test_faults.py, tests/reliability/test_api_faults.py) switch one fault
on under a fixed churn; the model-based test draws every kind of cluster change but on a
healthy server. The bugs that hide where both meet (a selector spec change while the watches
are down and the write after it loses its answer, a namespace deleted during a 410 storm, a
slice deleted by someone while the controller's writes fail) need faults drawn as operations
in the same sequences: each switched on by a ``("fault", kind, steps, retry_after)`` operation
for that many of the following steps (one-shot kinds act once), and all switched off before a
``check`` and at the end, after which the controller must converge and stay quiet.

The embedded server's request faults spare the test's own client (:data:`DRIVER_AGENT`): the
world's changes and the checker's reads always go through, only the controller is faulted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from slicectl.sim.faults import Faults

DWELL = 0.5  # seconds each step lasts at least while a fault is on
DRIVER_AGENT = "model-driver/"  # the User-Agent prefix of the test's own client
SLICE_WRITES = (("POST", "endpointslices"), ("PUT", "endpointslices"),
                ("PATCH", "endpointslices"), ("DELETE", "endpointslices"))
STATUS_WRITES = (("PUT", "endpointselectors"), ("PATCH", "endpointselectors"))


def _rate(name: str, value: float) -> Callable[[Faults, bool], None]:
    def switch(f: Faults, on: bool) -> None:
        setattr(f, name, value if on else type(getattr(f, name))())
    return switch


def _answer_latency(f: Faults, on: bool) -> None:
    f.answer_latency = {"endpointslices": 0.3} if on else {}


def _gone(f: Faults, on: bool) -> None:
    """History compacted and every watch ended: each resume is answered 410 (a storm when on
    for several steps: it strikes again at each)."""
    if on:
        f.compact()
        f.drop_watches()


# Faults that stay on for some steps: what switches them on and off.
LASTING: dict[str, Callable[[Faults, bool], None]] = {
    "errors": _rate("error_rate", 0.3),
    "throttle": _rate("throttle_rate", 0.3),
    "lost": _rate("lost_response_rate", 0.5),
    "error_after": _rate("error_after_rate", 0.5),
    "list_cut": _rate("list_reset_rate", 0.5),
    "drops": _rate("drop_watches_every", 0.3),
    "resets": _rate("reset_watches_every", 0.4),
    "stalls": _rate("stall_watches_every", 1.0),
    "slow_answers": _answer_latency,
    "gone_storm": _gone,  # struck again at every step it stays on
    "latency": _rate("latency_ms", 150.0),
    "discovery": _rate("discovery_error_rate", 0.5),  # felt by a controller (re)starting
}
# Faults that strike once.
ONE_SHOT: dict[str, Callable[[Faults], Any]] = {
    "drop": lambda f: f.drop_watches(),
    "reset": lambda f: f.reset_watches(),
    "stall": lambda f: f.stall_watches(2.0),
    "gone": lambda f: _gone(f, True),
    "restart": lambda f: f.restart(down_for=1.0),
    "down": lambda f: f.down(1.5),  # new connections refused, open ones kept
    "cut_line": lambda f: f.inject_watch_line(
        "endpointslices", b'{"type":"MODIFIED","object":{"kind":"EndpointSl', truncate=True),
}
FAULT = st.tuples(st.just("fault"), st.sampled_from(sorted(LASTING) + sorted(ONE_SHOT)),
                  st.integers(1, 4), st.sampled_from([0, 0, 1]))


@dataclass
class FaultSwitch:
    """Which faults are on, for how many more steps."""

    faults: Faults
    left: dict[str, int] = field(default_factory=dict)

    def on(self, op: tuple[Any, ...]) -> None:
        _, kind, steps, retry_after = op
        self.faults.error_retry_after = retry_after  # a 500 becomes a ServerTimeout to resend
        if kind in ONE_SHOT:
            ONE_SHOT[kind](self.faults)
            return
        LASTING[kind](self.faults, True)
        self.left[kind] = steps

    async def step(self, n: int = 1) -> None:
        """``n`` operations went by: strike the storms again, switch off what has run out.
        While a fault is on, each step lasts ``DWELL`` at least, so the controller acts under it
        (its batching would otherwise send nothing before the fault is off again)."""
        if self.left:
            await asyncio.sleep(DWELL)
        for kind in list(self.left):
            self.left[kind] -= n
            if self.left[kind] <= 0:
                self.off(kind)
            elif kind == "gone_storm":
                LASTING[kind](self.faults, True)

    async def settle(self) -> None:
        """Before a check: every fault off, after a last ``DWELL`` under those still on."""
        if self.left:
            await asyncio.sleep(DWELL)
        self.off()

    def off(self, kind: str | None = None) -> None:
        """Switch ``kind`` (None: every fault) off."""
        for k in [kind] if kind else list(self.left):
            LASTING[k](self.faults, False)
            self.left.pop(k, None)
        if not self.left:
            self.faults.error_retry_after = 0
