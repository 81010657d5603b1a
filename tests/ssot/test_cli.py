"""`ssot/cli.py`: one exit-status table, one error and Ctrl-C wrapper, shared flags, every command's
entry point and file form."""
from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ssot import cli
from ssot.config import CONFIG_FIELDS, SSOTConfig
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
    parser = cli.add_config_flags(cli.Parser())
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
    usage = " ".join(parser.format_help().split())
    assert "weight of the OT loss L_OT (default: 1)" in usage
    assert "adaptation epochs after source pretraining (default: 15; 20 for image tasks)" in usage  # the tasks' own


def test_a_flag_error_names_the_flag_a_config_file_error_the_field(tmp_path, capsys):
    from ssot import train

    assert train.main(["--eps", "-1"]) == 2
    assert capsys.readouterr().err == "error: --eps must be a float in [0, inf). Got -1.0 instead.\n"
    config = tmp_path / "c.json"
    SSOTConfig.for_task("digits").to_json(config)
    config.write_text(config.read_text().replace('"eps": 1.0', '"eps": -1.0'))
    assert train.main(["--config", str(config)]) == 2
    assert "The 'eps' parameter must be a float in [0, inf). Got -1.0 instead." in capsys.readouterr().err


def test_shared_flags_are_the_same_everywhere():
    parser = cli.Parser()
    cli.add_seeds(parser)
    assert parser.parse_args([]).seeds == [0, 1, 2]
    with pytest.raises(ResultsError, match="repeated seeds"):
        cli.check_seeds([0, 0])
    shared: dict[str, set[str]] = {}  # the flags of the shared helpers: one help everywhere
    for parser in _parsers().values():
        for action in parser._actions:
            for flag in set(action.option_strings) & {"--quiet", "--num-cpus", "--address", "--format", "--no-images"}:
                shared.setdefault(flag, set()).add(action.help)
    assert set(shared) == {"--quiet", "--num-cpus", "--address", "--format", "--no-images"}
    assert all(len(helps) == 1 for helps in shared.values()), shared


# ------------------------------------------------------------------------------------ one vocabulary
def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every entry point's parser, and its sub-commands' as ``ssot-data check``."""
    found = {}
    for name, target in _scripts().items():
        parser = importlib.import_module(target.partition(":")[0]).build_parser()
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found.update({f"{name} {sub}": p for sub, p in action.choices.items()})
    return found


def _help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return " ".join(parser._get_formatter()._expand_help(action).split())


def test_every_help_shows_each_default_once():
    """One help style: every flag explained, a default shown once as '(default: X)' whenever there
    is one, never '(default: None)' (the issue counted 41 in the help texts)."""
    for name, parser in _parsers().items():
        assert parser.allow_abbrev is False and isinstance(parser, cli.Parser), name
        page = " ".join(parser.format_help().split())
        assert "(default: None)" not in page and "default: None" not in page, name
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            text = _help_of(parser, action)
            assert text, f"{name} {action.option_strings or action.dest}: no help"
            assert text.count("(default") <= 1, (name, text)
            rest = re.sub(r"\(default: [^)]*\)$", "", text)  # no second default in another style ('default 20')
            assert not re.search(r"\bdefault(:|\s+\d)", rest), (name, text)
            has_value = not (action.default is None or action.default is False or action.default == []
                             or action.default == {} or action.required or not action.option_strings)
            if has_value:
                assert f"(default: {cli.shown(action.default)})" in text, (name, text)


def _config_flags() -> dict[str, dict]:
    """Each config field's flag as its metadata declares it: option strings, typing, help."""
    from ssot.config import SSOTConfig

    out = {}
    for field in CONFIG_FIELDS:
        meta = SSOTConfig.__dataclass_fields__[field].metadata
        flag = cli.config_flag(field)
        kwargs = meta["constraint"].flag()
        strings = [flag, "--no-" + flag[2:]] if kwargs.get("action") is argparse.BooleanOptionalAction else [flag]
        out[field] = {"strings": strings, "type": kwargs.get("type"), "choices": kwargs.get("choices"), "help": meta["help"]}
    return out


def test_the_same_config_field_has_the_same_flag_in_every_command():
    """Derived from the parsers and the config metadata: wherever a command has a flag for a
    config field (its destination is the field, or its name is the field's flag), it is the field's
    flag, typed and explained by the field (a command may add what it does with it)."""
    declared = _config_flags()
    by_flag = {s: field for field, d in declared.items() for s in d["strings"]}
    seen: dict[str, set[str]] = {}
    for name, parser in _parsers().items():
        for action in parser._actions:
            fields = {action.dest} & set(CONFIG_FIELDS) | {by_flag[s] for s in action.option_strings if s in by_flag}
            if not fields:
                continue
            assert len(fields) == 1, (name, action.option_strings, fields)
            field = fields.pop()
            want = declared[field]
            assert action.option_strings == want["strings"] and action.dest == field, (name, action.option_strings, field)
            assert (action.type, action.choices) == (want["type"], want["choices"]), (name, field)
            assert action.help.replace("%%", "%").startswith(want["help"]), (name, field, action.help)
            seen.setdefault(field, set()).add(name)
    assert set(seen) == set(CONFIG_FIELDS)  # ssot-train has them all
    shared = {field for field, names in seen.items() if len(names) > 1}
    assert {"task", "epochs", "seed", "data_root", "features_path", "device", "num_workers"} <= shared, shared


def test_same_idea_same_flag():
    """The spellings the issue found for one idea are gone: --quiet (no --no-progress, no
    --verbose 0/1/2), --num-workers (no --workers), --features (no --features-path or
    --features PATH... beside it)."""
    for name, parser in _parsers().items():
        flags = {s for a in parser._actions for s in a.option_strings}
        assert not flags & {"--no-progress", "--workers", "--features-path", "--source-dir", "--target-dir"}, name
        verbose = [a for a in parser._actions if "--verbose" in a.option_strings]
        assert all(a.nargs == 0 for a in verbose), name  # a switch beside --quiet, not a level
        if "--seeds" in flags and name != "ssot-train":  # ssot-train: one run with the config's seed unless asked
            assert parser.parse_args(_required(parser)).seeds == [0, 1, 2], name


def _required(parser: argparse.ArgumentParser) -> list[str]:
    """Arguments that satisfy ``parser``'s required ones."""
    argv = []
    for action in parser._actions:
        if action.required and action.option_strings:
            argv += [action.option_strings[0], "digits"]
        elif not action.option_strings and action.nargs not in ("?", "*") and not isinstance(action, argparse._SubParsersAction):
            argv.append("solvers" if action.choices else "x")
    for group in parser._mutually_exclusive_groups:
        if group.required:
            argv += [group._group_actions[0].option_strings[0], "digits"]
    return argv


def test_a_mistyped_task_or_choice_gets_a_suggestion(capsys):
    from ssot import train
    from tune import search

    assert train.main(["--task", "digit"]) == 2
    assert "Unknown task 'digit'. Did you mean 'digits'? Valid tasks: digits, A2W" in capsys.readouterr().err
    assert search.main(["--task", "ofice31"]) == 2
    assert "Unknown task or dataset 'ofice31'. Did you mean 'office31'?" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        search.main(["--task", "digits", "--search", "tpee"])
    assert exited.value.code == 2
    assert "invalid choice: 'tpee' (choose from 'tpe', 'grid', 'random'); did you mean 'tpe'?" in capsys.readouterr().err


def test_abbreviated_flags_are_refused_naming_the_full_flag(capsys):
    from ssot import train
    from ssot.data.__main__ import main as data_main

    for main, argv, full in ((train.main, ["--epoch", "3"], "--epochs"), (train.main, ["--lambda", "1"], "--lambda-ot"),
                             (data_main, ["prepare", "--task", "A2W", "--num-work", "2"], "--num-workers")):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        err = capsys.readouterr().err
        assert exited.value.code == 2 and f"unrecognized arguments: {argv[-2]} {argv[-1]} (did you mean {full}" in err, err
    with pytest.raises(SystemExit):
        train.main(["--lamda-ot", "1"])  # a typo, not a prefix
    assert "(did you mean --lambda-ot?)" in capsys.readouterr().err


def test_usage_names_the_command_that_was_run(tmp_path):
    """``ssot-search --help`` says ssot-search, ``python tune/search.py --help`` says so, a module
    run says ``python -m``, sub-commands included."""
    script = Path(sys.executable).parent / "ssot-search"
    if not script.exists():
        pytest.skip("the entry points are not installed beside this Python")
    runs = {("ssot-search",): [str(script), "--help"],
            ("python tune/search.py",): [sys.executable, "tune/search.py", "--help"],
            ("python -m ssot.data check",): [sys.executable, "-m", "ssot.data", "check", "--help"],
            ("ssot-data prepare",): [str(script.parent / "ssot-data"), "prepare", "--help"]}
    for (usage,), argv in runs.items():
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {usage} ["), (usage, proc.stdout[:200], proc.stderr[-500:])
    proc = subprocess.run([str(script), "--task", "digits", "--epoch", "3"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "ssot-search: error: unrecognized arguments: --epoch 3" in proc.stderr


def test_a_missing_dataset_is_refused_before_torch_or_ray_load(tmp_path):
    """The refusal of a task whose data is not there comes from the torch-free checks
    (:func:`ssot.data.check_task`): in a fresh interpreter, neither torch nor Ray nor Optuna has
    been imported when each command has refused (the issue measured 12-14 s for the search).
    The data, feature-cache and feature-map commands refuse their other bad input before torch
    too: an unknown task (with the closest one), a missing data root, an output that exists or is
    an input, a missing model file."""
    from tests.fixtures.images import make_office31

    make_office31(tmp_path / "data", per_class=1)
    (tmp_path / "old.ssotimg").write_text("x")
    (tmp_path / "old.npz").write_text("x")
    (tmp_path / "cfg.json").write_text("{}")
    code = (
        "import sys\n"
        "from ssot import feature_maps, features, train\n"
        "from ssot.data import __main__ as data\n"
        "from tune import ablation, search, solvers\n"
        f"out = {str(tmp_path)!r}\n"
        "for main, argv in ((search.main, ['--task', 'P2I', '--storage-path', out + '/rr']),\n"
        "                   (search.main, ['--task', 'imageclef', '--storage-path', out + '/rr']),\n"
        "                   (train.main, ['--task', 'A2W']),\n"
        "                   (train.main, ['--task', 'custom', '--source', out + '/none', '--target', out]),\n"
        "                   (ablation.main, ['--task', 'S2R', '--out', out + '/abl']),\n"
        "                   (solvers.main, ['--task', 'P2I', '--out', out + '/sol']),\n"
        "                   (data.main, ['prepare', '--task', 'A2W']),\n"
        "                   (data.main, ['prepare', '--task', 'A2X', '--data-root', out + '/data']),\n"
        "                   (data.main, ['prepare', '--task', 'A2W', '--data-root', out + '/data', '--out', out + '/old.ssotimg']),\n"
        "                   (data.main, ['check', '--data-root', out + '/none']),\n"
        "                   (features.main, ['--task', 'P2I', '--out', out + '/c.pt']),\n"
        "                   (features.main, ['--task', 'P2IX', '--out', out + '/c.pt']),\n"
        "                   (features.main, ['--config', out + '/cfg.json', '--out', out + '/cfg.json']),\n"
        "                   (feature_maps.main, [out + '/missing.pt', '--out', out + '/map.npz']),\n"
        "                   (feature_maps.main, [out + '/missing.pt', '--out', out + '/old.npz'])):\n"
        "    print(main(argv), sorted(m for m in ('torch', 'ray', 'optuna') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("SSOT_DATA_ROOT", "SSOT_CACHE_DIR")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert proc.stdout.split("\n")[:-1] == ["2 []"] * 15, proc.stdout + proc.stderr[-2000:]
    errors = proc.stderr.splitlines()
    no_root = "error: no data root: pass --data-root DIR or set SSOT_DATA_ROOT"
    assert errors[0] == errors[1] == errors[2] == errors[6] == errors[10] == no_root, errors
    assert errors[3].startswith(f"error: --source {tmp_path}/none is not a folder"), errors
    assert not (tmp_path / "rr").exists() and not (tmp_path / "abl").exists()
    assert errors[7].startswith("error: Unknown task 'A2X'. Did you mean 'A2W'?") and errors[11].startswith(
        "error: Unknown task 'P2IX'. Did you mean 'P2I'?"), errors
    assert errors[8].startswith(f"error: --out {tmp_path}/old.ssotimg already exists"), errors
    assert errors[9].startswith(f"error: data root {tmp_path}/none does not exist"), errors
    assert errors[12].startswith(f"error: --out {tmp_path}/cfg.json is one of the command's inputs"), errors
    assert errors[13].startswith(f"error: The model file {tmp_path}/missing.pt does not exist."), errors
    assert errors[14].startswith(f"error: --out {tmp_path}/old.npz already exists"), errors
    assert len(errors) == 15 and (tmp_path / "old.ssotimg").read_text() == (tmp_path / "old.npz").read_text() == "x"
    assert not (tmp_path / "c.pt").exists() and not (tmp_path / "map.npz").exists()


def _scripts() -> dict[str, str]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_command_has_an_entry_point_to_its_main():
    scripts = _scripts()
    assert set(scripts) == {"ssot-train", "ssot-features", "ssot-feature-maps", "ssot-data", "ssot-search", "ssot-export",
                            "ssot-confirm", "ssot-final", "ssot-ablation", "ssot-solvers", "ssot-dashboard",
                            "ssot-selection", "ssot-proxy", "ssot-paper-figures", "ssot-transfer", "ssot-atlas", "ssot-study",
                            "ssot-study-page"}
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name


@pytest.mark.parametrize("command", [
    ["-m", "ssot.train"], ["-m", "ssot.features"], ["-m", "ssot.feature_maps"], ["-m", "ssot.data"],
    ["tune/search.py"], ["tune/export.py"], ["tune/confirm.py"], ["tune/final.py"], ["tune/ablation.py"], ["tune/solvers.py"],
    ["tune/transfer.py"], ["analysis/sensitivity.py"], ["analysis/selection.py"], ["analysis/proxy.py"],
    ["analysis/paper_figures.py"], ["analysis/atlas.py"], ["tune/study.py"], ["analysis/study.py"],
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
