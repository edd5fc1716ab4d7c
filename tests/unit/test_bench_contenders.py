"""The benchmark's contenders: which controllers a run starts, with which command lines."""

from __future__ import annotations

from benchmarks.__main__ import contenders
from slicectl.cli.main import build_parser
from slicectl.cli.run import RunOptions, options_from_args


def _run_options(command: list[str]) -> RunOptions:
    return options_from_args(build_parser().parse_args(command[command.index("run"):]))


def test_slicectl_args_reach_every_slicectl_run_and_name_it() -> None:
    extra = ("--max-batch-period=500ms",)
    runs = contenders(True, {"defaults", "batch0", "naive", "sweep"}, extra)
    slicectl = [c for c in runs if c.kind == "slicectl"]
    assert len(slicectl) == 6 and [c.kind for c in runs].count("naive") == 1
    for c in slicectl:
        options = _run_options(c.command("kc", None, "ns"))
        assert options.controller.max_batch_period == 0.5, c.label
        assert c.label.endswith(" --max-batch-period=500ms")
    sweep = {_run_options(c.command("kc", None, "ns")).controller.batch_period for c in slicectl}
    assert sweep == {0.0, 0.1, 0.25, 0.5, 1.0}, "the sweep's own --batch-period is kept"
    naive = next(c for c in runs if c.kind == "naive")
    assert "--max-batch-period=500ms" not in naive.command("kc", None, "ns")
    assert naive.label == "naive"


def test_without_slicectl_args_the_contenders_run_as_named() -> None:
    runs = contenders(False, {"defaults", "batch0"})
    assert [c.label for c in runs] == ["slicectl (defaults)", "slicectl --batch-period 0s"]
    assert _run_options(runs[0].command("kc", None, "ns")).controller.max_batch_period == 1.0
