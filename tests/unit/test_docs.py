"""README.md against the code: the ``slicectl run`` flag table, the metric list, the test
command, the sizing rule with the chart's resources and the figures the batching policy is
described with.

Readers copy these (a flag's default into a manifest, a metric's name and labels into a
dashboard, the test command into a shell), so each test reads the document and checks it against
what the code and CI do: a change to one without the other fails here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import re
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.metrics import MetricWrapperBase

from slicectl.cli.flags import parse_duration
from slicectl.cli.main import build_parser
from slicectl.cli.run import configure
from slicectl.controller import batching
from slicectl.model.apis import DEFAULT_SELECTOR_API
from slicectl.obs.metrics import SUBSYSTEM, Metrics

README = Path(__file__).resolve().parents[2] / "README.md"
CI = README.parent / ".ci" / "run"
VALUES = README.parent / "charts" / "slicectl" / "values.yaml"

# Rows whose default is said in words (where the value comes from), not as a value.
PROSE_DEFAULTS = {"--kubeconfig", "--context", "--leader-elect-resource-namespace"}
# Defaults the parser leaves empty and the code fills in.
CODE_DEFAULTS: dict[str, Any] = {"--selector-api": DEFAULT_SELECTOR_API}
_DURATION = re.compile(r"(\d+(\.\d+)?(ns|us|ms|s|m|h))+")
_WORDS: dict[str, Any] = {"true": True, "false": False, "off": False, "all": []}


def section(title: str) -> str:
    """The README section under the ``## title`` heading, up to the next one."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def run_flags() -> dict[str, argparse.Action]:
    parser = argparse.ArgumentParser()
    configure(parser)
    return {opt: action for action in parser._actions for opt in action.option_strings
            if opt.startswith("--") and opt != "--help"}


def table_rows() -> list[tuple[list[str], str]]:
    """(flags, default cell) of each row of the flag table; ``-renew-deadline`` after
    ``--leader-elect-lease-duration`` stands for ``--leader-elect-renew-deadline``."""
    rows = []
    for line in section("`slicectl run` flags").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 3 or not cells[0].startswith("`-"):
            continue
        names = [span.split()[0] for span in re.findall(r"`([^`]+)`", cells[0])]
        first = names[0]
        flags = [first]
        for short in names[1:]:
            if short.startswith("--"):
                flags.append(short)
            else:
                cut = short.count("-")
                flags.append("-".join(first.split("-")[:-cut]) + short)
        rows.append((flags, cells[1]))
    return rows


def documented_value(text: str) -> tuple[bool, Any]:
    """(True, value) for a default cell part that states a value; (False, None) for words."""
    text = re.sub(r"\s*\(.*\)$", "", text).strip().strip("`")
    if text in _WORDS:
        return True, _WORDS[text]
    if _DURATION.fullmatch(text):
        return True, parse_duration(text)
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return True, float(text)
    if re.fullmatch(r"[\w.:/-]+", text) and " " not in text:
        return True, text
    return False, None


def test_the_flag_table_lists_every_flag_of_slicectl_run() -> None:
    documented = [flag for flags, _ in table_rows() for flag in flags]
    assert len(documented) == len(set(documented))
    assert set(documented) == set(run_flags())


def test_the_flag_table_states_each_default() -> None:
    actions = run_flags()
    prose = set()
    for flags, cell in table_rows():
        parts = [p.strip() for p in cell.split(",")]
        if len(parts) != len(flags):
            prose.update(flags)
            continue
        for flag, part in zip(flags, parts, strict=True):
            stated, value = documented_value(part)
            if not stated:
                prose.add(flag)
                continue
            default = CODE_DEFAULTS.get(flag, actions[flag].default)
            assert value == default, f"README says {flag} defaults to {part}, code: {default!r}"
    assert prose == PROSE_DEFAULTS


def help_of_run() -> dict[str, str]:
    """``slicectl run --help`` as the command prints it: each flag's help text, one line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser({"run"}).parse_args(["run", "--help"])
    text = out.getvalue()
    helps: dict[str, str] = {}
    for block in re.split(r"\n(?=  -)", text.split("options:", 1)[1]):
        words = block.split()
        if words and words[0].startswith("--"):
            helps[words[0].rstrip(",")] = " ".join(words[1:])
    return helps


def test_run_help_states_the_default_the_table_states() -> None:
    """A reader of ``slicectl run --help`` sees the defaults the README's table gives."""
    actions, helps = run_flags(), help_of_run()
    for flags, cell in table_rows():
        parts = [p.strip() for p in cell.split(",")]
        if len(parts) != len(flags):
            continue  # said in words (test_the_flag_table_states_each_default)
        for flag, part in zip(flags, parts, strict=True):
            stated, value = documented_value(part)
            if not stated or actions[flag].nargs == 0:  # a switch: off unless given
                continue
            said = re.search(r"default:? ([^\s);,]+)", helps[flag])
            assert said is not None, f"slicectl run --help states no default for {flag}"
            assert documented_value(said[1]) == (True, value), (flag, said[1], part)


def documented_metrics() -> dict[str, set[str] | None]:
    """The metric names of the README's ``/metrics`` item: name -> labels (None: not said).
    Names starting with ``_`` continue the upstream ``endpoint_slice_controller`` family."""
    item = section("Observability").split("\n- `/healthz`")[0]
    found: dict[str, set[str] | None] = {}
    for name, labels in re.findall(r"`(_?[a-z_]+)(?:\{([a-z_,]+)\})?`", item):
        if name.startswith("_"):
            name = SUBSYSTEM + name
        elif not name.startswith(("slicectl_", SUBSYSTEM)):
            continue
        found[name] = set(labels.split(",")) if labels else None
    return found


def exposed_metrics() -> dict[str, set[str]]:
    """Every metric ``Metrics`` exposes, as it is named on /metrics, with its label names."""
    metrics = Metrics()
    out = {}
    for collector in vars(metrics).values():
        if isinstance(collector, MetricWrapperBase):
            suffix = "_total" if collector._type == "counter" else ""
            out[collector._name + suffix] = set(collector._labelnames)
    return out


def test_the_metric_list_names_every_metric_with_its_labels() -> None:
    documented = documented_metrics()
    exposed = exposed_metrics()
    assert set(documented) == set(exposed)
    for name, labels in documented.items():
        if labels is not None:
            assert labels == exposed[name], name


def test_the_readme_names_the_python_pyproject_requires() -> None:
    """The first command a reader runs needs that Python: on an older one pip stops with
    "requires a different Python"."""
    pyproject = (README.parent / "pyproject.toml").read_text()
    floor = re.search(r'^requires-python = ">=(3\.\d+)"$', pyproject, re.M)
    assert floor is not None
    assert f"Python {floor[1]} or later" in section("Try it (no cluster needed)")


def sh_block(title: str) -> str:
    """The first ``sh`` code block of the README section ``title``."""
    found = re.search(r"```sh\n(.*?)\n```", section(title), re.S)
    assert found is not None, title
    return found[1]


def ci_commands() -> set[str]:
    """The command lines of ``.ci/run``, as a reader would type them: ``"$PY"`` (python3 unless
    overridden) spelled out, pip's ``-q`` dropped."""
    lines = (line.strip() for line in CI.read_text().splitlines())
    return {line.replace('"$PY"', "python3").replace(" -q", "")
            for line in lines if line and not line.startswith("#")}


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run runs "the README's test command": each of its steps, installing at the pins CI
    tests with (constraints.txt, the image's), so a reader tests what ships."""
    steps = sh_block("Run the tests").split(" && ")
    assert [step for step in steps if step not in ci_commands()] == []


def mib(text: str) -> float:
    """``224Mi`` or ``~62 MiB`` (the first number) in MiB."""
    found = re.search(r"[\d.,]+", text)
    assert found is not None, text
    return float(found[0].replace(",", ""))


def sizing_rule() -> tuple[float, float, float]:
    """(base MiB, MiB per 10k pods, MiB per 1,000 selectors) of the README's **Rule:**."""
    rule = re.search(r"memory = (\d+) MiB \+ (\d+) MiB per 10k pods \+ (\d+) MiB per 1,000 "
                     r"EndpointSelectors", section("Sizing"))
    assert rule is not None
    return float(rule[1]), float(rule[2]), float(rule[3])


def test_the_sizing_table_follows_the_rule() -> None:
    """Each row: steady = the rule's sum, request = that rounded up, limit = 1.5x the request
    (what the rule tells a reader to set)."""
    base, per_10k_pods, per_1k_selectors = sizing_rule()
    row = r"^\| ([\d.]+)k pods, ([\d,]+) selectors \| ([^|]+) \| (\d+)Mi \| (\d+)Mi \|$"
    rows = re.findall(row, section("Sizing"), re.M)
    assert len(rows) >= 3
    for pods, selectors, steady, request, limit in rows:
        rule = (base + per_10k_pods * float(pods) / 10
                + per_1k_selectors * float(selectors.replace(",", "")) / 1000)
        assert math.isclose(mib(steady), rule, abs_tol=0.5), (pods, selectors, steady)
        assert rule <= float(request) < rule * 1.5, (pods, selectors, request)
        assert float(limit) == 1.5 * float(request), (pods, selectors, limit)


def test_the_sizing_section_states_the_charts_resources() -> None:
    """The chart's requests and limits as the README quotes them, and the cluster sizes it
    says they fit, by the rule."""
    resources = yaml.safe_load(VALUES.read_text())["resources"]
    text = " ".join(section("Sizing").split())
    quoted = re.search(r"The chart's defaults \((\w+) request, (\w+) limit\) fit up to about "
                       r"(\d+)k pods with ([\d,]+) such selectors, or (\d+)k pods with ([\d,]+)",
                       text)
    assert quoted is not None
    assert (quoted[1], quoted[2]) == (resources["requests"]["memory"],
                                      resources["limits"]["memory"])
    assert f"the chart requests {resources['requests']['cpu']} and sets no CPU limit" in text
    assert "cpu" not in resources["limits"]
    base, per_10k_pods, per_1k_selectors = sizing_rule()
    for pods, selectors in ((quoted[3], quoted[4]), (quoted[5], quoted[6])):
        need = (base + per_10k_pods * float(pods) / 10
                + per_1k_selectors * float(selectors.replace(",", "")) / 1000)
        assert need <= mib(quoted[1]) < need + per_1k_selectors, (pods, selectors)


def test_the_batching_figures_are_the_code_s() -> None:
    """The numbers "Fewer writes than upstream" explains batching with are the constants."""
    text = " ".join(section("Fewer writes than upstream").split())
    words = {2: "two", 3: "three"}
    stated = [
        f"{batching.SETTLE_GAP * 1000:g} ms or more after the selector's previous change",
        f"come more than {words[int(batching.BUSY_SPACING)]} windows apart on average",
        f"changes less than {batching.SETTLE_GAP * 1000:g} ms apart; "
        f"{batching.SETTLE_BURST_GAP * 1000:g} ms apart once it holds "
        f"{words[batching.STREAM_CHANGES]} changes or more",
        f"at most {batching.SETTLE_MAX * 1000:g} ms past its time",
        f"({words[batching.STREAM_SYNCS]} syncs in a row adding pods",
        f"times {batching.STREAM_WRITES:g} writes per sync",
        f"at most `--max-batch-period` ({batching.STREAM_MAX_WINDOW:g} s)",
        f"no change for {batching.STREAM_PAUSE:g} of its average gaps",
    ]
    assert [s for s in stated if s not in text] == []
