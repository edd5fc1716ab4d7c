"""The write gate: may this replica write now, and when may it again?

Every write the controller sends (slices, status) passes the gate *right before it goes on the
wire*: after the client's rate-limiter wait and before each resend, so a request that waited
never lands after leadership lapsed. Workers that find the gate closed do not retry in a loop:
they park in :meth:`WriteGate.wait_writable` until the gate opens again, and their keys stay
queued for then. The status publisher's senders do the same with a refused status write, which
:class:`NotLeading` makes possible by naming the gate that refused.

Implementations: :class:`~slicectl.election.lease.LeaderElector` (open while the last lease
renewal is younger than the renew deadline), :data:`ALWAYS` (no leader election) and
:class:`PolledGate` (any ``() -> bool``, e.g. in tests, checked every ``poll`` seconds while
parked).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class WriteGate(Protocol):
    def may_write(self) -> bool:
        """True while a write sent now cannot land after another replica took over."""
        ...

    async def wait_writable(self) -> None:
        """Return once :meth:`may_write` is true (at once if it already is)."""
        ...


class _Always:
    def may_write(self) -> bool:
        return True

    async def wait_writable(self) -> None:
        return None


ALWAYS: WriteGate = _Always()


class PolledGate:
    """A gate over a plain predicate; parked waiters look again every ``poll`` seconds."""

    def __init__(self, predicate: Callable[[], bool], poll: float = 0.25) -> None:
        self._predicate = predicate
        self._poll = poll

    def may_write(self) -> bool:
        return self._predicate()

    async def wait_writable(self) -> None:
        # A bare predicate has no change notification to wait on: polling is the point here.
        while not self._predicate():  # noqa: ASYNC110
            await asyncio.sleep(self._poll)


class NotLeading(Exception):
    """This replica may not write: leadership was lost or is uncertain.

    ``gate`` is the gate that refused: its :meth:`~WriteGate.wait_writable` says when a write
    held back may go after all (the gate may reopen in the same term, with no new start)."""

    def __init__(self, gate: WriteGate,
                 message: str = "not the leader (or leadership uncertain): write not sent") -> None:
        super().__init__(message)
        self.gate = gate


def as_gate(gate: WriteGate | Callable[[], bool] | None) -> WriteGate:
    if gate is None:
        return ALWAYS
    if isinstance(gate, WriteGate):
        return gate
    return PolledGate(gate)


def guard_for(gate: WriteGate) -> Callable[[], None]:
    """The client's pre-send hook for a write: raises :class:`NotLeading` when closed."""

    def guard() -> None:
        if not gate.may_write():
            raise NotLeading(gate)

    return guard
