"""The contract: a finished search names the same best trial in every consumer (best_config.json,
experiment.json, export, the printed summary, the analysis's tables and heatmap, the dashboard)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ssot.config import SSOTConfig
from ssot.results import trials as trial_model
from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, new_meta, read_experiment
from ssot.results.trials import PARAMS, trial_columns

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
    from analysis.dashboard import build_dashboard
    from analysis.data.bins import heatmap_info
    from analysis.data.experiments import load_experiments
    from analysis.data.frames import (
        best_trial,
        cross_task_table,
        final_results,
        trial_table,
    )
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
