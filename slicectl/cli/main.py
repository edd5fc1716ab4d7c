"""Entry point of the ``slicectl`` command: one subcommand per module of this package.

Each subcommand module (``run``, ``apiserver``, ``demo``) exposes ``configure(parser)`` to add its
flags and ``main(args) -> int`` to run. Bad flags exit with code 2 and a one-line reason, as
argparse does; ``main`` returns the process exit code.

Only the chosen subcommand's module is imported: ``slicectl run`` never loads the embedded API
server (the ``apiserver`` and ``demo`` modules pull in all of :mod:`slicectl.sim`), which cost
the controller 12 MiB of RSS and about 0.2 s at every start when every subcommand was
configured up front.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection, Sequence

from slicectl.cli import signals
from slicectl.cli.helptext import DefaultsFormatter

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("slicectl.cli.run", "run the controller"),
    "apiserver": ("slicectl.cli.apiserver", "run the embedded Kubernetes API server"),
    "demo": ("slicectl.cli.demo", "run the controller on the embedded API server with sample pods"),
}


def build_parser(configure: Collection[str] = SUBCOMMANDS.keys()) -> argparse.ArgumentParser:
    """The command's parser: every subcommand listed, the flags of those in ``configure``
    (all, unless told) added."""
    parser = argparse.ArgumentParser(
        prog="slicectl",
        description="EndpointSlices for any pod label selector, without a Service.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text,
                               formatter_class=DefaultsFormatter)
        if name in configure:
            importlib.import_module(module_name).configure(child)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The process's command (``argv`` None: its command line), or one run in-process."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    # The subcommand is the first word that is not a flag (the command has no flags of its own
    # but -h); anything else (a typo, none at all) configures nothing and argparse says why.
    command = next((a for a in args_in if not a.startswith("-")), "")
    if argv is None and command == "run":
        signals.hold()  # a SIGTERM while the controller's modules load is acted on, not lost
    args = build_parser(SUBCOMMANDS.keys() & {command}).parse_args(args_in)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    code: int = module.main(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
