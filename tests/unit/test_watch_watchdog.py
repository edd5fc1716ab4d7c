"""Issue 8, item 6: the informer inactivity watchdog, with bookmarks requested.

A real API server sends a bookmark about once a minute, but only on watches of a resource that
changed since they began: a watch of one nobody writes hears nothing until its deadline. So each
watch asks for a deadline within the watchdog (tests/integration/test_informer.py -k quiet), and
a watch silent that long is half-open. The default watchdog is 2 minutes (not the watch timeout
+ 30 s, 5-6 minutes), and ``--watch-inactivity-timeout`` sets it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from slicectl.cli.main import build_parser
from slicectl.cli.run import options_from_args
from slicectl.controller.controller import Controller
from slicectl.kube.answers import Answers
from slicectl.kube.client import KubeClient

BOOKMARK_INTERVAL = 60.0  # kube-apiserver's cacher sends watch bookmarks once a minute


def _informer_timeouts(controller: Controller) -> set[float | None]:
    return {inf._inactivity_timeout for inf in controller._informers}


def test_default_watchdog_is_two_bookmark_intervals() -> None:
    opts = options_from_args(build_parser().parse_args(["run"]))
    assert opts.controller.watch_inactivity_timeout == 2 * BOOKMARK_INTERVAL


def test_flag_sets_the_watchdog() -> None:
    opts = options_from_args(build_parser().parse_args(
        ["run", "--watch-inactivity-timeout=15s"]))
    assert opts.controller.watch_inactivity_timeout == 15.0


async def test_every_informer_uses_the_configured_watchdog() -> None:
    opts = options_from_args(build_parser().parse_args(
        ["run", "--watch-inactivity-timeout=45s"]))
    client = cast(KubeClient, SimpleNamespace(qps=20.0, answers=Answers()))
    controller = Controller(client, opts.controller)
    assert _informer_timeouts(controller) == {45.0}
