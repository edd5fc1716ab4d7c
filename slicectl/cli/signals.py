"""SIGTERM and SIGINT before the event loop can take them, and the second signal's exit.

``slicectl run`` spends its first few hundred milliseconds importing its modules and building
its options before asyncio's signal handlers exist. With Python's defaults a SIGTERM then killed
the process (exit 143, nothing flushed) or, as PID 1 of a container, was dropped by the kernel
(a signal with no handler never reaches PID 1), so the kubelet waited out the grace period and
sent SIGKILL; a Ctrl-C printed a KeyboardInterrupt traceback. :func:`hold` installs handlers at
the start of ``main()`` that note the first signal (a second one exits at once with code 1, as
later); the run's event loop replaces them and acts on a noted signal at once (:func:`take`).
Only the window before ``main()`` runs (the interpreter starting) is left to the defaults.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_noted: list[signal.Signals] = []  # the signal held before the event loop took over


def exit_now(sig: signal.Signals) -> None:
    """A second SIGTERM/SIGINT: exit at once with code 1, as kube-controller-manager's
    (k8s.io/apiserver SetupSignalContext) and controller-runtime's handlers do."""
    import structlog  # here: this module is imported first thing, before anything heavy

    structlog.get_logger("slicectl.run").warning("second signal: exiting now", signal=sig.name)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def _note(signum: int, _frame: FrameType | None) -> None:
    sig = signal.Signals(signum)
    if _noted:
        exit_now(sig)
    _noted.append(sig)


def hold() -> None:
    """Note SIGTERM and SIGINT from now on, until the event loop's handlers replace these."""
    for sig in SIGNALS:
        signal.signal(sig, _note)


def take() -> signal.Signals | None:
    """The signal noted before the event loop's handlers were installed, if any (once)."""
    return _noted.pop() if _noted else None
