"""Entry point of the ``slicectl`` command: one subcommand per module of this package.

Each subcommand module (``run``, ``apiserver``, ``demo``) exposes ``configure(parser)`` to add its
flags and ``main(args) -> int`` to run. Bad flags exit with code 2 and a one-line reason, as
argparse does; ``main`` returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("slicectl.cli.run", "run the controller"),
    "apiserver": ("slicectl.cli.apiserver", "run the embedded Kubernetes API server"),
    "demo": ("slicectl.cli.demo", "run the controller on the embedded API server with sample pods"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slicectl",
        description="EndpointSlices for any pod label selector, without a Service.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.configure(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    code: int = module.main(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
