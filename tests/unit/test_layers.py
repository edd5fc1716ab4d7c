"""The packages of :mod:`slicectl` import each other in one direction only.

The folder list is the architecture: ``kube`` talks HTTP, ``model`` and ``reconcile`` are pure,
``cache`` holds informers and indexes, ``obs`` and ``election`` sit beside it, ``controller``
wires them, ``cli`` runs them, and ``sim`` (the embedded API server, the tests' oracle)
shares no logic with the controller, its label and name rules included. An import against
that order (a pure module reaching for the client, the server borrowing a controller helper)
fails here, with the file and the import that break it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "slicectl"

# Which packages each package may import (besides itself). ``""`` is the top level
# (``slicectl/__init__.py``, ``__main__.py``).
ALLOWED: dict[str, frozenset[str]] = {
    "model": frozenset(),
    "kube": frozenset(),
    "sim": frozenset(),
    "reconcile": frozenset({"model"}),
    "cache": frozenset({"kube", "model"}),
    "obs": frozenset({"kube", "model"}),
    "election": frozenset({"kube", "model"}),
    "controller": frozenset({"cache", "election", "kube", "model", "obs", "reconcile"}),
    "cli": frozenset({"cache", "controller", "election", "kube", "model", "obs", "reconcile",
                      "sim"}),
    "": frozenset({"cli"}),
}
# Pure layers decide, they do no I/O: no event loop, no HTTP, no clock-driven tasks.
PURE = frozenset({"model", "reconcile"})
IO_MODULES = frozenset({"asyncio", "aiohttp", "kubernetes_asyncio", "uvloop", "ssl"})


def module_parts(path: Path) -> list[str]:
    """``slicectl/kube/client.py`` -> ``["slicectl", "kube", "client"]`` (a package's
    ``__init__`` is the package itself)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported(path: Path) -> Iterator[str]:
    """Every absolute name the file imports, relative imports resolved (``from a import b``
    gives ``a.b``, so importing a package by name counts as importing it)."""
    parts = module_parts(path)
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield from (f"{module}.{alias.name}" for alias in node.names)


def layer(parts: list[str]) -> str:
    """The top package under ``slicectl`` (``""`` for the top-level modules)."""
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def test_every_package_has_a_place_in_the_layers() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ALLOWED) - {""}


def test_imports_follow_the_layers() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = layer(module_parts(path))
        for name in imported(path):
            target = name.split(".")
            if target[0] != "slicectl":
                continue
            other = layer(target)
            if other != own and other not in ALLOWED[own]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}: imports {name}")
    assert wrong == []


def test_pure_layers_do_no_io() -> None:
    wrong = [f"{path.relative_to(PACKAGE.parent)}: imports {name}"
             for own in sorted(PURE) for path in sorted((PACKAGE / own).rglob("*.py"))
             for name in imported(path) if name.split(".")[0] in IO_MODULES]
    assert wrong == []
