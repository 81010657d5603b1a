"""`ssot/cli.py`: one exit-status table, one error and Ctrl-C wrapper, shared flags, every command's
entry point and file form."""
from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from ssot import cli
from ssot.config import CONFIG_FIELDS, DEVICES, SSOTConfig
from ssot.errors import ConfigError, DataError, ExternalError, ResultsError
from tests.fixtures import REPO


def test_the_exit_status_table():
    assert (cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_NO_RESULT, cli.EXIT_EXTERNAL, cli.EXIT_INTERRUPTED) == (
        0, 1, 2, 3, 4, 130)
    assert cli.exit_status(ConfigError("x")) == cli.exit_status(DataError("x")) == cli.exit_status(ResultsError("x")) == 2
    assert cli.exit_status(ExternalError("x")) == 4 and cli.exit_status(KeyboardInterrupt()) == 130
    from ssot.data.fetch import FetchError
    from ssot.results.storage import StorageError

    assert cli.exit_status(FetchError("x")) == 4 and cli.exit_status(StorageError("x")) == 4
    for line in ("0 ", "1 ", "2 ", "3 ", "4 ", "130 "):  # documented once, in the module docstring
        assert f"\n {line}" in cli.__doc__


def test_run_prints_one_line_and_returns_the_status(capsys):
    assert cli.run(lambda: 1) == 1 and capsys.readouterr().err == ""

    def user_error() -> int:
        raise ConfigError("The 'eps' parameter\n   must be a float in [0, inf). Got -1.0 instead.")

    assert cli.run(user_error) == 2
    assert capsys.readouterr().err == "error: The 'eps' parameter must be a float in [0, inf). Got -1.0 instead.\n"

    def download() -> int:
        raise ExternalError("download of http://x failed: HTTP 404")

    assert cli.run(download) == 4 and capsys.readouterr().err.startswith("error: download of http://x")

    def ctrl_c() -> int:
        raise KeyboardInterrupt

    assert cli.run(ctrl_c, interrupted="runs are kept") == 130
    assert capsys.readouterr().err == "interrupted; runs are kept\n"

    def bug() -> int:
        raise ZeroDivisionError  # not a user error: the traceback stays

    with pytest.raises(ZeroDivisionError):
        cli.run(bug)


def test_a_flag_for_every_config_field_typed_by_its_constraint():
    parser = cli.add_config_flags(argparse.ArgumentParser())
    names = {a.dest for a in parser._actions if a.dest in CONFIG_FIELDS}
    assert names == set(CONFIG_FIELDS)
    args = parser.parse_args(["--task", "P2H", "--lambda-ot", "0.5", "--no-use-mask", "--bottleneck-dims", "8", "4",
                              "--source", "S", "--potential-width", "64", "--device", "cpu"])
    config = cli.config_from_args(args)
    assert (config.task, config.lambda_ot, config.use_mask, config.bottleneck_dims) == ("P2H", 0.5, False, (8, 4))
    assert (config.source_dir, config.potential_width, config.device) == ("S", 64, "cpu")
    assert config.iters_per_epoch == SSOTConfig.for_task("P2H").iters_per_epoch == 28  # the task's defaults under the flags
    with pytest.raises(SystemExit):
        parser.parse_args(["--potential-width", "wide"])  # typed: an int
    usage = parser.format_help()
    assert "weight of the OT loss L_OT (config default: 1.0)" in " ".join(usage.split())


def test_shared_flags_are_the_same_everywhere():
    parser = argparse.ArgumentParser()
    cli.add_device(parser)
    cli.add_ray_flags(parser)
    cli.add_trial_resources(parser)
    cli.add_seeds(parser)
    args = parser.parse_args([])
    assert (args.num_cpus, args.address, args.cpus_per_trial, args.gpus_per_trial, args.seeds) == (None, None, 1.0, None, [0, 1, 2])
    assert next(a for a in parser._actions if a.dest == "device").choices == DEVICES
    with pytest.raises(ResultsError, match="repeated seeds"):
        cli.check_seeds([0, 0])
    with pytest.raises(ResultsError, match="The '--num-cpus' argument must be an int in \\[1, inf\\). Got 0 instead."):
        cli.check_resources_args(parser.parse_args(["--num-cpus", "0"]))
    for command in ("tune.search", "tune.confirm", "tune.final", "tune.ablation", "tune.solvers"):
        help_text = importlib.import_module(command).build_parser().format_help()
        if "--num-cpus" in help_text:
            assert "CPUs of the local Ray instance (default: all)" in " ".join(help_text.split()), command


def _scripts() -> dict[str, str]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_command_has_an_entry_point_to_its_main():
    scripts = _scripts()
    assert set(scripts) == {"ssot-train", "ssot-features", "ssot-feature-maps", "ssot-data", "ssot-search", "ssot-export",
                            "ssot-confirm", "ssot-final", "ssot-ablation", "ssot-solvers", "ssot-dashboard",
                            "ssot-selection", "ssot-proxy", "ssot-paper-figures", "ssot-transfer", "ssot-atlas"}
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name


@pytest.mark.parametrize("command", [
    ["-m", "ssot.train"], ["-m", "ssot.features"], ["-m", "ssot.feature_maps"], ["-m", "ssot.data"],
    ["tune/search.py"], ["tune/export.py"], ["tune/confirm.py"], ["tune/final.py"], ["tune/ablation.py"], ["tune/solvers.py"],
    ["tune/transfer.py"], ["analysis/sensitivity.py"], ["analysis/selection.py"], ["analysis/proxy.py"],
    ["analysis/paper_figures.py"], ["analysis/atlas.py"],
])
def test_every_command_runs_as_a_module_or_a_file(command, tmp_path):
    """From another folder, without PYTHONPATH: the file forms find the project through the one
    script idiom (a project shadowing nothing: analysis/charts is not plotly)."""
    if command[0] == "-m":
        env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
        argv = [sys.executable, *command, "--help"]
    else:
        env = {"PATH": "/usr/bin:/bin"}
        argv = [sys.executable, str(REPO / command[0]), "--help"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: ")
