"""`python analysis/selection.py`: the tables, never overwritten, without torch."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.data import selection as S
from tests.fixtures import REPO
from tests.fixtures.experiments import SELECTION_DIRECTIONS, selection_frame


def test_summary_and_cli(tmp_path):
    for seed in (0, 1):
        folder = tmp_path / f"s{seed}" / "digits"
        folder.mkdir(parents=True)
        (folder / "experiment.json").write_text(json.dumps({"task": "digits", "name": f"s{seed}", "validator_directions": SELECTION_DIRECTIONS}))
        selection_frame().to_csv(folder / "trials.csv", index=False)
    table = S.selection_table(S.read_experiments(tmp_path))
    summ = S.summary(table).set_index(["selection", "validator"])
    assert summ.loc[("hyperparameter", "snd"), "regret_mean"] == pytest.approx(10.0)
    assert summ.loc[("hyperparameter", "snd"), "experiments"] == 2 and summ.loc[("hyperparameter", "snd"), "regret_std"] == 0
    script = REPO / "analysis" / "selection.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "selection.csv").is_file() and "| digits | epoch | last_epoch | 2 | 10.0" in (tmp_path / "selection.md").read_text()
    again = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1


def test_analysis_selection_does_not_import_torch():
    code = "import sys; import analysis.selection; assert not {'torch', 'ray', 'tune'} & set(sys.modules), sorted(sys.modules)"
    root = REPO
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env={"PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr[-500:]


def _selection_experiment(folder, frame=None):
    folder.mkdir(parents=True)
    (folder / "experiment.json").write_text(json.dumps({"task": "digits", "name": folder.parent.name, "status": "running",
                                                        "validator_directions": SELECTION_DIRECTIONS}))
    (selection_frame() if frame is None else frame).to_csv(folder / "trials.csv", index=False)
    return folder


@pytest.mark.parametrize("case, file, content, cause", [
    ("bad JSON", "experiment.json", '{"task": ', "cannot be read as JSON"),
    ("a list", "experiment.json", "[1, 2]", "must hold a JSON object"),
    ("a missing column", "trials.csv", "trial_id,epoch,status\na,1,completed\n", "lacks the column(s) target_acc"),
    ("an empty CSV", "trials.csv", "", "file is empty"),
    ("a binary CSV", "trials.csv", b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "cannot be read"),
])
def test_selection_names_the_cause_of_corrupt_input(tmp_path, capsys, case, file, content, cause):
    from analysis import selection

    folder = _selection_experiment(tmp_path / "res" / "s0" / "digits")
    (folder / file).write_bytes(content if isinstance(content, bytes) else content.encode())
    assert selection.main([str(tmp_path / "res"), "--out", str(tmp_path / "out")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: None of the 1 experiment(s)") and cause in last and str(folder / file) in last, (case, last)
    assert "run tune/search.py" not in last and not (tmp_path / "out").exists()


def test_infinite_accuracies_are_missing_values_without_numpy_warnings(tmp_path):
    frame = selection_frame()
    frame.loc[(frame["trial_id"] == "b") & (frame["epoch"] == 1), "target_acc"] = float("inf")
    frame.loc[(frame["trial_id"] == "c") & (frame["epoch"] == 2), "target_acc"] = float("-inf")
    _selection_experiment(tmp_path / "s0" / "digits", frame)
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", str(REPO / "analysis" / "selection.py"), str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "infinite value(s) in target_acc read as missing" in done.stderr and "RuntimeWarning" not in done.stderr
    assert "inf" not in (tmp_path / "selection.csv").read_text() + (tmp_path / "selection.md").read_text()
