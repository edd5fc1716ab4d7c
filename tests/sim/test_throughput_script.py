"""``benchmarks/sim_throughput.py``, the command README.md quotes for the embedded server's
throughput, runs to its end.

Its watch phase counts the events its own watchers read while the same process sends 32
patches at a time; those watchers fall behind, and the server closes a watcher that lags more
than its buffer, as the real cacher does. The script must measure delivery, not that policy.
"""

from __future__ import annotations

import subprocess
import sys

from tests.integration.support import ROOT


def test_the_throughput_script_counts_every_watch_event() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sim_throughput.py"), "--n", "300"],
        capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "watch events delivered (8 watchers)" in proc.stdout
