"""Rewrite constraints.txt: the image's runtime dependencies, resolved afresh and pinned.

Why: the Dockerfile installs the wheel with ``-c constraints.txt`` and .ci/run tests with the
same pins, so an image built later ships what CI tested. Run it with the image's Python (3.11)
when the pins should move; pip resolves pyproject.toml's ``[project]`` dependencies (no dev
extras) without installing anything, and the whole closure is written, sorted.

    python3.11 scripts/pin_image_deps.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEADER = """\
# The image's runtime dependencies, pinned: the Dockerfile installs the wheel with
# `pip install -c constraints.txt` and .ci/run tests with the same pins, so an image built later
# ships what CI tested, not whatever is newest on build day. The whole closure of pyproject.toml's
# [project] dependencies for Python 3.11 on Linux, written by scripts/pin_image_deps.py (run it
# to move the pins); scripts/chart_check.py fails if the image would install anything unpinned.
"""


def resolve() -> list[str]:
    """``name==version`` for every distribution pip would install with the project."""
    report = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--disable-pip-version-check", "--report", "-", str(REPO)],
        check=True, capture_output=True, text=True,
    ).stdout
    pins = {
        item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"]
        for item in json.loads(report)["install"]
    }
    pins.pop("slicectl", None)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def main() -> int:
    (REPO / "constraints.txt").write_text(HEADER + "".join(f"{p}\n" for p in resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
