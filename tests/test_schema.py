"""The results format has one owner (tune/py): one reader, one per-trial table, one
best-trial rule, which every consumer (best_config.json, tune/export.py, the printed summary, the
dashboard) applies, and light imports for the commands that only read results."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ssot.config import SSOTConfig
from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, new_meta, read_experiment
from ssot.results import trials as trial_model
from ssot.results.trials import PARAMS, trial_columns
from ssot.results.metrics import METRIC_COLUMNS, REPORTED_METRICS, metric

REPO = Path(__file__).resolve().parents[1]
EPOCHS = 3


def _rows(trial_id: str, accuracies: list[float], status: str, lambda_ot: float, width: int) -> list[dict]:
    return [{"task": "digits", "trial_id": trial_id, "search": "tpe", "lambda_ot": lambda_ot, "lambda_ent": 0.5,
             "eps": 1.0, "potential_width": width, "epoch": epoch, "target_acc": acc, "source_acc": 0.9,
             "source_only_target_acc": 0.6, "status": status, "reason": ""}
            for epoch, acc in enumerate(accuracies, start=1)]


def _write_tie(folder: Path) -> dict:
    """A finished digits search where two completed trials tie at 0.9777 (the issue's case), written
    by tune/'s own writer; t_b is first in the file, t_a has the lower id and must win."""
    from tune.outputs import write_outputs

    rows = (_rows("t_b", [0.9, 0.9777, 0.9777], "completed", 1.0, 256)
            + _rows("t_a", [0.8, 0.95, 0.9777], "completed", 0.198, 128)
            + _rows("t_c", [0.5, 0.99], "early-stopped", 3.0, 64)  # higher, but truncated
            + _rows("t_0", [0.97, 0.99, 0.9], "completed", 0.01, 512))
    space = {"lambda_ot": {"type": "loguniform", "low": 1e-3, "high": 10.0},
             "potential_width": {"type": "choice", "values": [64, 128, 256, 512]}}
    base = SSOTConfig.for_task("digits", epochs=EPOCHS)
    info = new_meta(task="digits", dataset="digits", name="tie", search="tpe", space=space, max_epochs=EPOCHS,
                           num_samples=4, base_config=base.to_dict())
    frame = pd.DataFrame(rows).reindex(columns=trial_columns(list(PARAMS)))
    write_outputs(str(folder), info, frame, finished=True)
    return info


def test_the_tie_names_the_same_trial_in_every_consumer(tmp_path, capsys):
    from analysis.data.bins import heatmap_info
    from analysis.dashboard import build_dashboard
    from analysis.data.experiments import load_experiments
    from analysis.data.frames import best_trial, cross_task_table, final_results, trial_table
    from tune import export
    from tune.outputs import collect, summary_lines

    folder = tmp_path / "tie" / "digits"
    info = _write_tie(folder)
    # the rule: highest final-epoch target_acc among trials that reached the last epoch, ties to the lowest id
    files = read_experiment(folder)
    assert files.problems == []
    ranked = trial_model.ranked_trials(trial_model.trial_table(files.trials, files.max_epochs))
    assert list(ranked["trial_id"]) == ["t_a", "t_b", "t_0"]
    expected = "t_a"
    # best_config.json and experiment.json (written by tune/)
    best = json.loads((folder / BEST_CONFIG_FILE).read_text())
    assert (best["lambda_ot"], best["potential_width"]) == (0.198, 128)
    assert json.loads((folder / EXPERIMENT_FILE).read_text())["best_trial"] == expected
    # tune/export.py
    assert export.load_experiment(folder).best_trial == expected
    # the printed summary: its first ranked trial
    lines = summary_lines(collect(str(folder)).trials, info)
    assert lines[2].split()[0] == expected and "ties to the lowest trial id" in lines[1]
    # analysis: the per-trial table, the final-epoch view, the heatmap, the cross-task table, the dashboard
    experiments, problems = load_experiments(tmp_path)
    assert problems == []
    table = trial_table(experiments[0])
    assert best_trial(experiments[0], table)["trial_id"] == expected
    results = final_results(table, "final")
    assert results["trial_id"].iloc[0] == expected
    info_map = heatmap_info(results, "lambda_ot", "potential_width", experiments[0].space)
    assert info_map.best_trial_id == expected
    assert cross_task_table(experiments)["best_trial"].iloc[0] == expected
    page = build_dashboard(tmp_path, images=False).path.read_text()
    assert _dashboard_best(page) == expected


def _dashboard_best(page: str) -> str:
    """The trial named by the dashboard's final-epoch "Best trial" line."""
    match = re.search(r'<p class="mode-final best-line">[^<]*<b data-trial="([^"]+)">', page)
    assert match, "no best-trial line in the final-epoch view"
    return match.group(1)


def _dashboard_config(page: str) -> dict:
    match = re.search(r'<pre id="cfg-e0">(.*?)</pre>', page, re.S)
    assert match
    import html

    return json.loads(html.unescape(match.group(1)))


def test_an_old_experiment_folder_still_loads(tmp_path):
    """Folders written before the schema (no metric_label / best_trial, trials.csv without
    source_only_target_acc and time_s) load with no problem and the same rule."""
    from analysis.data.experiments import load_experiments

    folder = tmp_path / "old" / "A2D"
    folder.mkdir(parents=True)
    (folder / "experiment.json").write_text(json.dumps({
        "task": "A2D", "dataset": "office31", "name": "old", "search": "tpe", "metric": "target_acc", "mode": "max",
        "max_epochs": 2, "num_samples": 2, "space": {"lambda_ot": {"type": "loguniform", "low": 0.001, "high": 10.0}},
        "status": "finished", "started": "2024-01-01T00:00:00", "finished": "2024-01-01T01:00:00"}))
    old_columns = ["task", "trial_id", "search", "lambda_ot", "lambda_ent", "eps", "potential_width", "epoch",
                   "target_acc", "source_acc", "loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value",
                   "outlier_mass", "n_pred_classes", "status", "reason"]
    rows = [["A2D", "x1", "tpe", 0.1, 1, 1, 256, e, acc, 0.9, 1, 1, 1, 1, 1, 0.1, 31, "completed", ""]
            for e, acc in ((1, 0.5), (2, 0.7))]
    rows += [["A2D", "x0", "tpe", 1.0, 1, 1, 256, e, acc, 0.9, 1, 1, 1, 1, 1, 0.1, 31, "completed", ""]
             for e, acc in ((1, 0.6), (2, 0.7))]
    pd.DataFrame(rows, columns=old_columns).to_csv(folder / "trials.csv", index=False)
    (folder / "best_config.json").write_text(json.dumps({"task": "A2D", "lambda_ot": 1.0}))
    experiments, problems = load_experiments(tmp_path)
    assert problems == [] and len(experiments) == 1
    files = read_experiment(folder)
    assert files.metric == "target_acc"
    assert trial_model.best_trial(trial_model.trial_table(files.trials, files.max_epochs))["trial_id"] == "x0"


def test_metrics_are_data_with_a_direction_and_the_trainable_reports_them():
    assert metric("target_acc").direction == "max" and metric("target_acc").label == "oracle"
    assert metric("loss_total").direction == "min"
    assert "source_only_target_acc" in METRIC_COLUMNS and "source_only_target_acc" not in REPORTED_METRICS
    with pytest.raises(ValueError, match="The 'metric' parameter must be one of"):
        metric("accuracy")
    table = pd.DataFrame({"trial_id": ["b", "a", "c"], "loss_total": [0.5, 0.5, 0.7], "reached_final": [True] * 3})
    assert list(trial_model.ranked_trials(table, "loss_total")["trial_id"]) == ["a", "b", "c"]  # lower is better; ties by id


@pytest.mark.parametrize("command", [["tune/export.py", "--help"], ["analysis/sensitivity.py", "--help"],
                                     ["analysis/selection.py", "--help"], ["analysis/paper_figures.py", "--help"],
                                     ["-c", "import ssot, ssot.results.experiment, ssot.results.storage, ssot.results.record, "
                                            "ssot.results.final_table, ssot.results.paper, ssot.results.metrics, analysis"]])
def test_reading_commands_load_neither_torch_nor_ray(command):
    proc = subprocess.run([sys.executable, "-X", "importtime", *command], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    heavy = [m for m in modules if m.split(".")[0] in ("torch", "ray")]
    assert heavy == [], heavy[:5]


def test_an_all_diverged_search_is_finished_without_a_best_config_and_without_errors(tmp_path):
    from analysis.dashboard import build_dashboard
    from experiment_fixtures import trial_rows, write_experiment

    rows = trial_rows("A2D", "tpe", "d0", {"lambda_ot": 10.0, "lambda_ent": 1.0, "eps": 0.01, "potential_width": 64},
                      [0.5, 0.0], "diverged", "non-finite loss_ot at epoch 2")
    folder = write_experiment(tmp_path / "div" / "A2D", rows, task="A2D", search="tpe", space={},
                              max_epochs=3, dataset="office31")
    assert not (folder / BEST_CONFIG_FILE).exists()
    result = build_dashboard(tmp_path, images=False)
    assert [p for p in result.problems if p.severity == "error"] == []
    assert "still running" not in " ".join(str(p) for p in result.problems)
