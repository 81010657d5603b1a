"""`python tune/export.py`: the best config of each task's finished search."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ssot.config import SSOTConfig
from tests.fixtures import REPO
from tests.fixtures.experiments import write_export_searches, write_finished_experiment
from tune import export, final


def test_export_picks_the_best_experiment_skips_running_and_refuses_overwrite(quick_config, searches, tmp_path, capsys):
    out = tmp_path / "configs"
    assert export.main([str(searches["root"]), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert [p.name for p in out.iterdir()] == ["digits.json"]
    exported = SSOTConfig.from_json(out / "digits.json")
    assert exported == quick_config(lambda_ot=0.5)  # exp_a, not the worse exp_b nor the running exp_c
    assert json.loads((out / "digits.json").read_text()) == exported.to_dict()
    printed = captured.out.strip().splitlines()
    assert len(printed) == 1 and "digits" in printed[0] and "0.8000" in printed[0]
    assert str(searches["best"]) in printed[0] and "best of 2" in printed[0]
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 1 and str(searches["running"]) in warnings[0] and "running" in warnings[0]

    before = (out / "digits.json").read_text()
    assert export.main([str(searches["root"]), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and "already exists" in err[-1] and "--overwrite" in err[-1]
    assert "Traceback" not in "\n".join(err) and (out / "digits.json").read_text() == before
    (out / "digits.json").write_text("{}")
    assert export.main([str(searches["root"]), "--out", str(out), "--overwrite"]) == 0
    assert SSOTConfig.from_json(out / "digits.json") == exported


def test_export_without_finished_experiments_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert export.main([str(tmp_path / "empty"), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No experiment" in err[0]
    write_finished_experiment(tmp_path / "only_running" / "digits", status="running")
    assert export.main([str(tmp_path / "only_running"), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("warning:") and err[1].startswith("error:") and len(err) == 2
    assert not (tmp_path / "c").exists()


def test_export_runs_as_a_script_from_the_repo_root(searches, tmp_path):
    out = tmp_path / "script_configs"
    proc = subprocess.run([sys.executable, "tune/export.py", str(searches["root"]), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert SSOTConfig.from_json(out / "digits.json").lambda_ot == 0.5


def test_export_and_final_refuse_an_out_that_is_or_lies_under_a_file(quick_config, a_file, tmp_path, capsys):
    assert export.main([str(tmp_path), "--out", str(a_file / "configs")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    config = tmp_path / "digits.json"
    quick_config(iters_per_epoch=2).to_json(config)
    assert final.main([str(config), "--seeds", "0", "--out", str(a_file)]) == 2  # refused before the seed is trained
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a file, not a folder" in err[0]


@pytest.fixture
def searches(tmp_path) -> dict[str, Path]:
    """The best, a worse and a running experiment of one task (:func:`write_export_searches`)."""
    return write_export_searches(tmp_path / "searches")


def test_export_names_the_problems_of_a_truncated_trials_csv(tmp_path, capsys):
    """A trials.csv cut inside the best trial's last row no longer gives the best trial that
    experiment.json recorded: that experiment is skipped, never exported under another trial's
    accuracy; a cut in another trial is exported with the reader's warning, as the dashboard prints it."""
    from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment

    def experiment(name: str, best: float, cut_best: bool) -> Path:
        config = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}
        best_rows = trial_rows("digits", "tpe", "b", {**config, "lambda_ot": 2.0}, [0.5, best], "completed")
        other = trial_rows("digits", "tpe", "c", {**config, "lambda_ot": 3.0}, [0.5, 0.6], "completed")
        rows = trial_rows("digits", "tpe", "a", config, [0.5, 0.9], "completed") + (other + best_rows if cut_best else best_rows + other)
        folder = write_experiment(tmp_path / "res" / name / "digits", rows, task="digits", search="tpe", space=TPE_SPACE, max_epochs=2)
        text = (folder / "trials.csv").read_text()
        (folder / "trials.csv").write_text(text[: len(text) - 40])  # cut inside the last row
        return folder

    cut_in_best = experiment("x1", 0.95, cut_best=True)  # the best trial b is last in the file: its last epoch is cut
    cut_elsewhere = experiment("x2", 0.93, cut_best=False)
    assert export.main([str(tmp_path / "res"), "--out", str(tmp_path / "configs")]) == 0
    out, err = capsys.readouterr()
    assert f"target_acc 0.9300 from {cut_elsewhere}" in out
    lines = err.strip().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"warning: skipped {cut_in_best}") and "gives the best trial as trial a" in lines[0]
    # the skip names what the reader found, and export prints it (the second audit: "see its warnings", none printed)
    assert "(1 problem(s) reading it, the first: 1 malformed row(s) dropped (trial b)" in lines[0]
    assert lines[1] == (f"warning: {cut_in_best / 'trials.csv'}: 1 malformed row(s) dropped (trial b): the file is truncated, "
                        "corrupt or still being written - the other rows are used")
    assert lines[2] == (f"warning: {cut_elsewhere / 'trials.csv'}: 1 malformed row(s) dropped (trial c): the file is truncated, "
                        "corrupt or still being written - the other rows are used")


def test_export_never_writes_over_an_input_even_with_overwrite(searches, tmp_path, capsys):
    """A config file of --out that is a symlink to an experiment's best_config.json would be
    replaced through the link by --overwrite: refused before anything is written."""
    best = Path(searches["best"]) / "best_config.json"
    before = best.read_bytes()
    out = tmp_path / "configs"
    out.mkdir()
    (out / "digits.json").symlink_to(best)
    assert export.main([str(searches["root"]), "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {out / 'digits.json'} (written into --out {out}) is one of the command's inputs ({best})")
    assert best.read_bytes() == before
