"""``slicectl run`` flags: bad values exit 2 with a one-line reason; good ones map to options."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from slicectl.cli.flags import parse_duration
from slicectl.cli.helptext import format_duration
from slicectl.cli.main import build_parser
from slicectl.cli.run import options_from_args
from slicectl.controller.batching import STREAM_MAX_WINDOW
from slicectl.model.apis import CORE, SLICECTL


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-endpoints-per-slice", "0"], "out of range: must be 1..1000"),
        (["--max-endpoints-per-slice", "2000"], "out of range: must be 1..1000"),
        (["--concurrent-syncs", "51"], "out of range: must be 1..50"),
        (["--batch-period", "fast"], "invalid duration"),
        (["--max-batch-period=-1s"], "invalid duration"),
        (["--kube-api-qps", "-1"], "must be a finite number greater than 0"),
        (["--kube-api-qps", "nan"], "must be a finite number greater than 0"),
        (["--kube-api-qps", "inf"], "must be a finite number greater than 0"),
        (["--leader-elect", "maybe"], "is not a boolean"),
        (["--selector-api", "example.com/v1"], "invalid choice"),
        (["--log-format", "xml"], "invalid choice"),
        (["--metrics-bind-address=localhost"], "invalid bind address 'localhost'"),
        (["--health-probe-bind-address=:99999"], "invalid bind address ':99999'"),
        # A list in no valid namespace is an empty list to the API server, and "" watched all
        # of them: an unset $NS or a typo served nothing, or everything, without a word.
        (["--namespace="], "invalid namespace ''"),
        (["--namespace=team-a", "--namespace", "Team_B"], "invalid namespace 'Team_B'"),
        (["--leader-elect-resource-namespace=kube system"], "invalid namespace 'kube system'"),
    ],
)
def test_bad_flag_exits_2_with_a_clear_message(flags: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "slicectl", "run", *flags],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["a,b", "not valid!", "x" * 64])
def test_a_managed_by_that_is_no_label_value_exits_2(value: str) -> None:
    """Every slice create would be refused (422), and a comma would even change the slice
    informer's label selector: refused at start, not found out selector by selector."""
    proc = subprocess.run([sys.executable, "-m", "slicectl", "run", f"--managed-by={value}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--managed-by" in proc.stderr and "is not a label value" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "value", ["endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io"])
def test_a_managed_by_of_kube_controller_manager_exits_2(value: str) -> None:
    """slicectl treats every slice labelled with its --managed-by value and a selector name as
    its own. With kube-controller-manager's value it would patch and delete the slices kcm
    writes for core EndpointSelectors (KEP-6116: same two labels), which SPEC section 2
    forbids."""
    proc = subprocess.run([sys.executable, "-m", "slicectl", "run", f"--managed-by={value}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--managed-by" in proc.stderr and "kube-controller-manager" in proc.stderr
    assert "Traceback" not in proc.stderr


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def _run(*flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slicectl", "run", "--metrics-bind-address=0",
                           *flags], capture_output=True, text=True, timeout=60, env=env)


def _no_cluster_env(home: Path) -> dict[str, str]:
    """The environment of a shell outside any cluster, with ``home`` as its home."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
    return {**env, "HOME": str(home)}


def test_a_kubeconfig_that_does_not_exist_is_named_as_missing(tmp_path: Path) -> None:
    """Before, a missing file was read as an empty kubeconfig: "Invalid kube-config file.
    Expected key current-context", which sends the operator looking inside a file that is not
    there (kubectl says: no such file or directory)."""
    missing = tmp_path / "no-such-kubeconfig"
    for proc in (_run(f"--kubeconfig={missing}", env=_no_cluster_env(tmp_path)),
                 _run(env={**_no_cluster_env(tmp_path), "KUBECONFIG": str(missing)})):
        assert proc.returncode == 1
        assert f"{missing}: no such file" in proc.stderr, proc.stderr
        assert "current-context" not in proc.stderr and "Traceback" not in proc.stderr


def test_no_configuration_at_all_says_where_it_looked(tmp_path: Path) -> None:
    """Outside a cluster with no --kubeconfig, no $KUBECONFIG and no ~/.kube/config."""
    proc = _run(env=_no_cluster_env(tmp_path))
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(lines) == 1, proc.stderr
    for where in ("KUBERNETES_SERVICE_HOST", "--kubeconfig", "$KUBECONFIG",
                  str(tmp_path / ".kube" / "config")):
        assert where in lines[0], lines[0]
    assert "current-context" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("text", ["not: [valid\n", "clusters: 5\n"], ids=["yaml", "shape"])
def test_a_malformed_kubeconfig_is_one_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    proc = _run(f"--kubeconfig={path}")
    assert proc.returncode == 1
    assert "cannot load the cluster configuration" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_probe_port_in_use_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _run(f"--kubeconfig={path}", f"--health-probe-bind-address=:{port}")
    assert proc.returncode == 1
    assert f"cannot listen on *:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_inconsistent_leader_election_timings_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "slicectl", "run", "--leader-elect=true",
         "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=10s"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--leader-elect-lease-duration must be greater than" in proc.stderr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("100ms", 0.1), ("10s", 10.0), ("1m30s", 90.0), ("1.5h", 5400.0),
     ("250us", 0.00025)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.0, "0s"), (0.1, "100ms"), (0.00025, "0.25ms"), (1.0, "1s"), (1.5, "1.5s"),
     (10.0, "10s"), (120.0, "2m"), (90.0, "1m30s"), (3600.0, "1h"), (3605.0, "1h5s")],
)
def test_help_writes_a_default_as_the_duration_it_reads(seconds: float, shown: str) -> None:
    """``--help``'s ``(default 2m)``: the shortest form, which the flag reads back."""
    assert format_duration(seconds) == shown
    assert parse_duration(shown) == pytest.approx(seconds)


def test_flags_map_to_controller_options() -> None:
    args = build_parser().parse_args([
        "run", "--namespace=a", "--namespace=b", "--namespace=a",
        "--selector-api=slicectl.io/v1alpha1", "--selector-api=discovery.k8s.io/v1alpha1",
        "--max-endpoints-per-slice=250", "--batch-period=1s", "--concurrent-syncs=7",
        "--max-batch-period=2500ms",
        "--kube-api-qps=50", "--kube-api-burst=80", "--managed-by=me.example.com",
        "--status-update-period=30s", "--leader-elect", "--leader-elect-resource-namespace=ops",
        "--watch-list=false",
    ])
    opts = options_from_args(args)
    c = opts.controller
    assert c.namespaces == ("a", "b")
    assert c.selector_apis == (SLICECTL, CORE)
    assert c.settings.max_endpoints_per_slice == 250
    assert c.settings.managed_by == "me.example.com"
    assert (c.batch_period, c.concurrent_syncs, c.status_update_period) == (1.0, 7, 30.0)
    assert c.max_batch_period == 2.5
    assert (opts.client.qps, opts.client.burst) == (50.0, 80)
    assert opts.leader_elect is True and opts.lease_namespace == "ops"
    assert c.watch_list is False
    default = options_from_args(build_parser().parse_args(["run"])).controller
    assert default.watch_list is True
    assert default.max_batch_period == STREAM_MAX_WINDOW == 1.0


def test_the_controller_never_loads_the_embedded_api_server() -> None:
    """``slicectl run`` configures and imports its own subcommand only: the embedded server's
    modules (``apiserver``, ``demo``) would add their weight to every controller process."""
    proc = subprocess.run(  # -X importtime lists every module imported, on stderr
        [sys.executable, "-X", "importtime", "-m", "slicectl", "run",
         "--max-endpoints-per-slice", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "out of range" in proc.stderr, "stopped after parsing"
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    # (modules loaded by importlib.import_module are not listed, what they import is)
    assert "slicectl.controller.controller" in imported, "the controller's modules are listed"
    assert not {m for m in imported if m.startswith("slicectl.sim")}


def test_the_command_lists_every_subcommand_without_loading_them() -> None:
    proc = subprocess.run([sys.executable, "-m", "slicectl", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    for name in ("run", "apiserver", "demo"):
        assert f"    {name}" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "slicectl", "apiserver", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--inject-lost-response-rate" in proc.stdout, (
        "the chosen subcommand has its flags")
