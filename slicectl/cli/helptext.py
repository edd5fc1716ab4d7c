"""``--help`` that states each flag's default, as kube-controller-manager's does.

A user with only the command has its help, not the README's flag table: each flag's text ends
with ``(default 100ms)``, ``(default 2m)``, ``(default true)``, in the syntax the flag reads
back. Kept apart from :mod:`slicectl.cli.flags` and free of slicectl's other modules: the
command's entry point imports it before it holds signals, and ``slicectl --help`` loads
nothing else.
"""

from __future__ import annotations

import argparse
import textwrap


def format_duration(seconds: float) -> str:
    """``seconds`` as the shortest Go duration :func:`slicectl.cli.flags.parse_duration` reads
    back: ``100ms``, ``10s``, ``2m``, ``1m30s``."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms" if seconds else "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{value:g}{unit}" for value, unit in parts if value)


def shown_default(action: argparse.Action) -> str | None:
    """The default of ``action`` as a user would type it, or None when there is none to state
    (a switch, a repeatable flag that starts empty, a value the code fills in)."""
    default = action.default
    if action.nargs == 0 or default is None or default == [] or default is argparse.SUPPRESS:
        return None
    if isinstance(default, bool):
        return str(default).lower()
    if action.metavar == "DURATION" and isinstance(default, (int, float)):
        return format_duration(float(default))
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends each flag's text with ``(default X)`` unless the text already says, and
    never wraps a line inside a hyphenated value (``endpointselector-controller.slicectl.io``)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        shown = shown_default(action)
        if shown is None or "default" in text:
            return text
        return f"{text} (default {shown.replace('%', '%%')})"

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)
