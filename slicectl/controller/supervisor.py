"""Supervision of the long-lived background tasks: never a Ready-but-dead replica.

Every long-lived task of ``slicectl run`` (caches, workers, the leader elector, readiness) runs
under a :class:`Supervisor`. A task that raises is logged with its traceback and then either

* **restarted** with backoff (1 s doubling to 30 s, reset after it ran for a minute) when it is
  safe to run again from where it stood (workers: the queue keeps their keys; the elector: it
  campaigns afresh), or
* **fatal** when it is not (the caches: their informers cannot be restarted halfway): the
  supervisor's :attr:`Supervisor.failed` event is set and ``slicectl run`` exits non-zero, so
  the kubelet restarts the process.

A restartable task that keeps crashing (``crash_loop`` times in a row without a quiet minute)
fails the ``tasks`` liveness check: the process is broken, and a restart is the repair. It passes
again once the task has run for a quiet minute since its latest restart (or is spawned anew, as
the workers are each term): a replica that has recovered is not restarted for its past.
A task returning normally or being cancelled is not a failure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog

log = structlog.get_logger("slicectl.supervisor")

TaskFactory = Callable[[], Coroutine[Any, Any, None]]


@dataclass
class _State:
    crashes: int = 0  # consecutive crashes without a quiet period in between
    last_error: str = ""
    started: float = 0.0  # monotonic time of the latest (re)start


class Supervisor:
    def __init__(
        self, *, backoff_initial: float = 1.0, backoff_max: float = 30.0,
        quiet_period: float = 60.0, crash_loop: int = 5,
    ) -> None:
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._quiet = quiet_period
        self._crash_loop = crash_loop
        self._states: dict[str, _State] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.failed = asyncio.Event()  # a fatal task died: the process must exit non-zero
        self.fatal_error = ""

    def spawn(self, name: str, factory: TaskFactory, *, restart: bool) -> asyncio.Task[None]:
        """Run ``factory()`` as the task ``name`` (replacing a previous one of that name)."""
        state = self._states[name] = _State()  # a new task: no crashes of its own yet
        task = asyncio.create_task(self._run(name, factory, restart, state), name=name)
        self._tasks[name] = task
        return task

    async def _run(self, name: str, factory: TaskFactory, restart: bool, state: _State) -> None:
        while True:
            state.started = time.monotonic()
            try:
                await factory()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                state.last_error = repr(exc)
                if not self._recent(state):
                    state.crashes = 0
                state.crashes += 1
                if not restart:
                    log.error("background task failed; exiting", task=name, exc_info=exc)
                    self.fatal_error = f"{name}: {exc!r}"
                    self.failed.set()
                    return
                delay = min(self._backoff_max,
                            self._backoff_initial * 2.0 ** min(state.crashes - 1, 10))
                log.error("background task failed; restarting", task=name, retry_in=delay,
                          crashes=state.crashes, exc_info=exc)
                await asyncio.sleep(delay)

    def _recent(self, state: _State) -> bool:
        """Whether the task's crashes are recent: its latest run has not lasted a quiet period."""
        return time.monotonic() - state.started < self._quiet

    def task(self, name: str) -> asyncio.Task[None] | None:
        return self._tasks.get(name)

    def alive(self) -> tuple[bool, str]:
        """Liveness check: no fatal failure, no task crash-looping."""
        if self.failed.is_set():
            return False, f"task failed: {self.fatal_error}"
        looping = [f"{n} ({s.last_error})" for n, s in self._states.items()
                   if s.crashes >= self._crash_loop and self._recent(s)]
        if looping:
            return False, f"tasks crash-looping: {', '.join(looping)}"
        return True, ""

    async def stop(self, name: str) -> None:
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def stop_all(self) -> None:
        for name in list(self._tasks):
            await self.stop(name)


async def cancel_quietly(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` and wait for it, however it ends; the caller's own cancellation still
    propagates (an ``await task`` under ``suppress(CancelledError)`` swallowed it)."""
    if task is None:
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
