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
