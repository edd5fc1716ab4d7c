"""``slicectl run`` plus one probe for the soak: the asyncio task count, written every second.

The soak watches a real ``slicectl run`` process from outside (RSS, sockets from /proc), but a
task leak is only visible inside the process. This wrapper runs the unchanged CLI with
``run_controller`` wrapped so that ``len(asyncio.all_tasks())`` is written to
``$SLICECTL_TASKS_FILE`` once a second.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from slicectl.cli import run as run_module
from slicectl.cli.main import main

_run_controller = run_module.run_controller


def _write(path: str, count: int) -> None:
    with open(path + ".tmp", "w") as fh:
        fh.write(str(count))
    os.replace(path + ".tmp", path)


async def _counting(*args: Any, **kwargs: Any) -> int:
    path = os.environ["SLICECTL_TASKS_FILE"]

    async def report() -> None:
        while True:
            _write(path, len(asyncio.all_tasks()))
            await asyncio.sleep(1.0)

    reporter = asyncio.create_task(report())
    try:
        return await _run_controller(*args, **kwargs)
    finally:
        reporter.cancel()


if __name__ == "__main__":
    run_module.run_controller = _counting
    sys.exit(main())
