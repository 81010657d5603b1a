"""Tests of the analysis data layer: reading experiment folders and the frames behind the figures.

Every experiment folder is written by the tests themselves (``tests/experiment_fixtures.py``, through tune/'s writer), in the
on-disk format of ``tune/``: a 5x5 grid search, a TPE search with values exactly on powers of
ten and early-stopped / diverged / errored trials, a truncated ``trials.csv``, a running search and
unreadable files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.data.bins import axis_bins, heatmap_info
from analysis.data.experiments import (
    NoExperimentsError,
    ParamSpec,
    Problem,
    load_experiment,
    load_experiments,
)
from analysis.plotly.heatmap import heatmap_figure
from analysis.data.frames import (
    MODE_LABELS,
    cross_task_table,
    final_results,
    format_value,
    learning_curves,
    param_pairs,
    trial_table,
)
from ssot.results.paper import read_paper_accuracy
from analysis.data.importance import MIN_TRIALS, importance_info
from ssot.results.experiment import find_experiments as find_experiment_dirs
from ssot.results.experiment import parse_trials
from experiment_fixtures import (
    EDGE_TRIALS,
    PAPER_GRID,
    TPE_SPACE,
    grid_accuracy,
    trial_rows,
    write_edge_tpe,
    write_experiment,
    write_paper_grid,
)

EPOCHS = 4

@pytest.fixture()
def results(tmp_path: Path) -> Path:
    """A results folder with a grid, a TPE, a truncated, a running and a corrupt experiment."""
    write_paper_grid(tmp_path / "grid-exp" / "P2I")
    write_edge_tpe(tmp_path / "tpe-exp" / "A2D")
    truncated = write_edge_tpe(tmp_path / "tpe-exp" / "P2I", task="P2I")
    text = (truncated / "trials.csv").read_text()
    (truncated / "trials.csv").write_text(text[: len(text) - 40])  # cut inside the last row
    running = write_edge_tpe(tmp_path / "run-exp" / "I2P", task="I2P")
    meta = json.loads((running / "experiment.json").read_text())
    meta.update(status="running", finished=None)
    (running / "experiment.json").write_text(json.dumps(meta))
    (running / "best_config.json").unlink()
    broken = tmp_path / "broken" / "C2I"
    broken.mkdir(parents=True)
    (broken / "experiment.json").write_text('{"task": "C2I", "search": ')
    return tmp_path


def _by_task(experiments: list, task: str):
    return next(e for e in experiments if e.task == task)


# ------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------


def test_load_experiments_reads_the_good_and_reports_the_bad(results: Path) -> None:
    experiments, problems = load_experiments(results)
    assert sorted(e.task for e in experiments) == ["A2D", "I2P", "P2I", "P2I"]
    text = "\n".join(str(p) for p in problems)
    assert str(results / "broken" / "C2I" / "experiment.json") in text
    assert str(results / "tpe-exp" / "P2I" / "trials.csv") in text
    assert "malformed row" in text
    assert str(results / "run-exp" / "I2P" / "experiment.json") in text
    assert "still running" in text
    # a running search has no best_config.json yet: that is not a problem
    assert "best_config.json" not in text
    assert all(isinstance(p, Problem) for p in problems)


def test_truncated_trials_keep_the_complete_rows(results: Path) -> None:
    problems: list[Problem] = []
    path = results / "tpe-exp" / "P2I" / "trials.csv"
    frame = parse_trials(path.read_text(), path, problems)
    assert frame is not None
    n_rows = sum(len(t[5]) for t in EDGE_TRIALS)
    assert len(frame) == n_rows - 1  # only the cut row is gone
    assert len(problems) == 1 and problems[0].path == path
    assert "t6" in problems[0].message  # names the trial of the cut row


def test_corrupt_and_missing_files_are_problems_not_crashes(tmp_path: Path) -> None:
    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    (folder / "trials.csv").write_bytes(b"\x00\xff\xfe garbage\n\x01")
    experiment, problems = load_experiment(folder)
    assert experiment is None
    assert problems and problems[0].path == folder / "trials.csv"
    (folder / "trials.csv").write_text("a,b\n1,2\n")
    experiment, problems = load_experiment(folder)
    assert experiment is None and "lacks the column" in problems[0].message
    (folder / "trials.csv").unlink()
    experiment, problems = load_experiment(folder)
    assert experiment is None and "missing" in problems[0].message
    (folder / "trials.csv").write_text("")
    experiment, problems = load_experiment(folder)
    assert experiment is None and "empty" in problems[0].message


def test_missing_best_config_of_a_finished_search_is_reported(tmp_path: Path) -> None:
    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    (folder / "best_config.json").unlink()
    experiment, problems = load_experiment(folder)
    assert experiment is not None and experiment.best_config is None
    assert [p.path for p in problems] == [folder / "best_config.json"]


def test_repeated_rows_of_a_resumed_trial_keep_the_last(tmp_path: Path) -> None:
    folder = write_edge_tpe(tmp_path / "x" / "A2D")
    frame = pd.read_csv(folder / "trials.csv")
    again = frame[frame["trial_id"] == "t0"].tail(1).assign(target_acc=0.63)
    pd.concat([frame, again]).to_csv(folder / "trials.csv", index=False)
    experiment, problems = load_experiment(folder)
    assert experiment is not None
    t0 = experiment.trials[experiment.trials["trial_id"] == "t0"]
    assert t0["epoch"].tolist() == [1, 2, 3, 4] and t0["target_acc"].iloc[-1] == 0.63
    assert any("repeated" in p.message for p in problems)


def test_no_experiment_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoExperimentsError, match="No experiment found under"):
        load_experiments(tmp_path)
    with pytest.raises(NoExperimentsError, match="does not exist"):
        load_experiments(tmp_path / "nope")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "experiment.json").write_text("not json")
    with pytest.raises(NoExperimentsError, match="could be read"):
        load_experiments(tmp_path)


def test_discovery_does_not_descend_into_experiments(tmp_path: Path) -> None:
    outer = write_edge_tpe(tmp_path / "a" / "A2D")
    write_edge_tpe(outer / "trial_0001" / "inner")  # e.g. a Ray trial folder
    write_edge_tpe(tmp_path / ".hidden" / "X")
    assert find_experiment_dirs(tmp_path) == [outer]


def test_param_spec_from_json_and_errors() -> None:
    spec = ParamSpec.from_json("lambda_ot", {"type": "loguniform", "low": 0.001, "high": 10})
    assert (spec.kind, spec.low, spec.high) == ("log", 0.001, 10.0)
    grid = ParamSpec.from_json("lambda_ot", {"type": "grid", "values": [10, 0.1, 1]})
    assert grid.kind == "grid" and grid.values == (0.1, 1, 10)
    assert not ParamSpec.from_json("eps", {"type": "fixed", "value": 1.0}).searched
    with pytest.raises(ValueError, match="unknown type"):
        ParamSpec.from_json("eps", {"type": "normal"})
    with pytest.raises(ValueError, match="not > 0"):
        ParamSpec.from_json("eps", {"type": "loguniform", "low": 0, "high": 1})
    inferred = ParamSpec.infer("eps", pd.Series(np.logspace(-2, 1, 30)))
    assert inferred.kind == "log" and inferred.inferred


# ------------------------------------------------------------------------------------------
# Trials and modes
# ------------------------------------------------------------------------------------------


def test_trial_table_and_modes_never_mix_statuses(results: Path) -> None:
    experiments, _ = load_experiments(results)
    table = trial_table(_by_task(experiments, "A2D")).set_index("trial_id")
    assert table.loc["t3", "reached_final"] and table.loc["t3", "final_acc"] == 0.90
    assert not table.loc["t4", "reached_final"] and math.isnan(table.loc["t4", "final_acc"])
    assert table.loc["t4", "best_acc"] == 0.95
    # the diverged trial's placeholder (0.99) is not an accuracy it reached
    assert table.loc["t5", "best_acc"] == 0.70
    assert table.loc["t5", "reason"] == "non-finite loss_ot at epoch 2"

    final = final_results(table.reset_index(), "final")
    assert final["trial_id"].tolist() == ["t3", "t2", "t1", "t0"]
    assert final["acc"].tolist() == [0.90, 0.80, 0.71, 0.62]
    best = final_results(table.reset_index(), "best")
    assert best["trial_id"].tolist() == ["t4", "t3", "t2", "t1", "t0"]
    assert "early-stopped" in MODE_LABELS["best"] and "last epoch" in MODE_LABELS["final"]
    with pytest.raises(ValueError, match="'mode' parameter"):
        final_results(table.reset_index(), "mean")  # type: ignore[arg-type]


def test_running_trials_are_only_in_the_best_view(tmp_path: Path) -> None:
    rows = trial_rows("P2I", "tpe", "r0", {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0,
                                           "potential_width": 64}, [0.5, 0.6], "running")
    rows += trial_rows("P2I", "tpe", "r1", {"lambda_ot": 0.1, "lambda_ent": 1.0, "eps": 1.0,
                                            "potential_width": 64}, [0.5] * EPOCHS, "completed")
    folder = write_experiment(tmp_path / "r" / "P2I", rows, task="P2I", search="tpe",
                              space=TPE_SPACE, max_epochs=EPOCHS, status="running")
    experiment, _ = load_experiment(folder)
    table = trial_table(experiment)
    assert final_results(table, "final")["trial_id"].tolist() == ["r1"]
    assert sorted(final_results(table, "best")["trial_id"]) == ["r0", "r1"]


def test_trials_that_recorded_no_epoch_are_counted_not_drawn(tmp_path: Path) -> None:
    config = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 64}
    rows = trial_rows("P2I", "tpe", "a", config, [0.5, 0.6, 0.7, 0.8], "completed")
    # tune/ writes one row with empty epoch and metrics for a trial that never reported
    rows.append({**rows[0], "trial_id": "b", "lambda_ot": 0.1, "epoch": math.nan,
                 "target_acc": math.nan, "status": "errored", "reason": "CUDA out of memory"})
    folder = write_experiment(tmp_path / "x" / "P2I", rows, task="P2I", search="tpe",
                              space=TPE_SPACE, max_epochs=EPOCHS)
    experiment, problems = load_experiment(folder)
    assert problems == [] and experiment is not None
    assert experiment.trials["trial_id"].unique().tolist() == ["a"]
    assert experiment.trials["epoch"].tolist() == [1, 2, 3, 4]
    table = trial_table(experiment).set_index("trial_id")
    assert table.loc["b", "status"] == "errored" and table.loc["b", "n_epochs"] == 0
    assert table.loc["b", "reason"] == "CUDA out of memory"
    assert math.isnan(table.loc["b", "best_acc"]) and not table.loc["b", "reached_final"]
    assert final_results(table.reset_index(), "best")["trial_id"].tolist() == ["a"]
    assert learning_curves(experiment)["trial_id"].unique().tolist() == ["a"]


def test_learning_curves_mark_the_last_real_epoch(results: Path) -> None:
    experiments, _ = load_experiments(results)
    curves = learning_curves(_by_task(experiments, "A2D"))
    stopped = curves[curves["trial_id"] == "t4"]
    assert stopped["epoch"].tolist() == [1, 2] and stopped["is_last"].tolist() == [False, True]
    diverged = curves[curves["trial_id"] == "t5"]
    assert diverged["epoch"].tolist() == [1]  # the placeholder row is dropped
    assert diverged["is_last"].all()
    assert "lambda_ot=1" in diverged["config"].iloc[0]


# ------------------------------------------------------------------------------------------
# Binning and heatmaps
# ------------------------------------------------------------------------------------------


def test_decade_cells_are_centred_on_the_papers_grid() -> None:
    spec = ParamSpec("lambda_ot", "log", low=0.001, high=10.0)
    axis = axis_bins(spec)
    # 5 cells, one per value of the paper's grid, like a grid search over it
    assert len(axis) == len(PAPER_GRID) == 5 and axis.kind == "log"
    assert axis.labels == ("0.001", "0.01", "0.1", "1", "10")
    assert axis.centers == tuple(PAPER_GRID)
    assert axis.intervals == ("[3.2e-4, 3.2e-3)", "[3.2e-3, 0.032)", "[0.032, 0.32)",
                              "[0.32, 3.2)", "[3.2, 32)")
    assert axis.hover_labels[0] == "0.001: [3.2e-4, 3.2e-3)"
    assert axis.edges == pytest.approx([10 ** (k + 0.5) for k in range(-4, 2)], rel=1e-12)
    # the paper's grid values themselves are the centres
    assert axis.assign(PAPER_GRID).tolist() == [0, 1, 2, 3, 4]
    # eps searched over [1e-2, 10]: 4 cells
    eps = axis_bins(ParamSpec("eps", "log", low=0.01, high=10.0))
    assert eps.labels == ("0.01", "0.1", "1", "10") and len(eps.edges) == 5


def test_decade_cells_half_decade_edges_go_to_the_cell_above() -> None:
    axis = axis_bins(ParamSpec("lambda_ot", "log", low=0.001, high=10.0))
    edge = 10 ** -2.5  # 0.00316..., between the cells of 0.001 and 0.01
    values = [0.0031, 0.0032, edge, edge * (1 + 1e-12), edge * (1 - 1e-12), edge * (1 - 1e-6),
              10 ** -1.5, 10 ** -0.5, 10 ** 0.5, 0.0099, 0.03, 0.04, 3.1, 3.2]
    assert axis.assign(values).tolist() == [0, 1, 1, 1, 1, 0, 2, 3, 4, 1, 1, 2, 3, 4]
    # the space's bounds are in the first and last cells; the outer edges are half-open
    assert axis.assign([0.001, 10.0]).tolist() == [0, 4]
    assert axis.assign([10 ** -3.5, 10 ** -3.5 * 0.999, 10 ** 1.5, 40.0]).tolist() == [0, -1, -1,
                                                                                      -1]
    assert axis.assign([0.0, -1.0, math.nan]).tolist() == [-1, -1, -1]


def test_decade_cells_always_hold_the_bounds_and_observed_values() -> None:
    # bounds on half-decade edges: the low one opens the first cell, the high one opens a cell
    on_edges = axis_bins(ParamSpec("x", "log", low=10 ** -3.5, high=10 ** 0.5))
    assert on_edges.labels == ("0.001", "0.01", "0.1", "1", "10")
    off_centre = axis_bins(ParamSpec("x", "log", low=0.0004, high=2.5))
    assert off_centre.labels == ("0.001", "0.01", "0.1", "1")
    # observed values outside the space widen the axis by whole cells, never narrow it
    wide = axis_bins(ParamSpec("lambda_ot", "log", low=0.001, high=10.0), [0.0003, 40.0, 0.0])
    assert wide.labels == ("0.0001", "0.001", "0.01", "0.1", "1", "10", "100")
    same = axis_bins(ParamSpec("lambda_ot", "log", low=0.001, high=10.0), [0.0005, 20.0])
    assert len(same) == 5
    one = axis_bins(ParamSpec("x", "log", low=0.02, high=0.02))
    assert one.labels == ("0.01",) and one.assign([0.02]).tolist() == [0]
    rng = np.random.default_rng(0)
    for _ in range(200):
        low, high = sorted(10 ** rng.uniform(-6, 4, size=2))
        if rng.random() < 0.3:  # exactly on a half-decade edge
            low = 10 ** (round(math.log10(low)) + 0.5)
            high = max(high, low)
        observed = 10 ** rng.uniform(-7, 5, size=5)
        axis = axis_bins(ParamSpec("x", "log", low=low, high=high), observed)
        assert (axis.assign([low, high, *observed]) >= 0).all(), (low, high, observed)
        # no empty cell at either end: the first and last cells hold a bound or a value
        cells = axis.assign([low, high, *observed])
        assert cells.min() == 0 and cells.max() == len(axis) - 1


def test_decade_edges_stay_available_as_explicit_edges() -> None:
    spec = ParamSpec("lambda_ot", "log", low=0.001, high=10.0)
    axis = axis_bins(spec, bins=[0.001, 0.01, 0.1, 1.0, 10.0])
    assert axis.labels == ("[0.001, 0.01)", "[0.01, 0.1)", "[0.1, 1)", "[1, 10]")
    assert axis.centers == () and axis.hover_labels == axis.labels
    values = [0.001, 0.0099999, 0.01, 0.1, 0.5, 1.0, 9.99, 10.0, 1e-3 * (1 + 1e-12)]
    assert axis.assign(values).tolist() == [0, 0, 1, 2, 2, 3, 3, 3, 0]


def test_other_binnings() -> None:
    spec = ParamSpec("eps", "log", low=0.01, high=10.0)
    assert len(axis_bins(spec, bins=6)) == 6
    custom = axis_bins(spec, bins=[0.01, 1.0, 10.0])
    assert custom.assign([0.5, 1.0, 10.0]).tolist() == [0, 1, 1]
    linear = axis_bins(ParamSpec("x", "linear", low=0.0, high=1.0))
    assert len(linear) == 5 and linear.assign([0.0, 0.2, 1.0]).tolist() == [0, 1, 4]
    width = axis_bins(ParamSpec("potential_width", "categorical", values=(64, 128, 256)))
    assert width.labels == ("64", "128", "256")
    assert width.assign([128.0, 64, 100]).tolist() == [1, 0, -1]
    with pytest.raises(ValueError, match="fixed"):
        axis_bins(ParamSpec("eps", "fixed", values=(1.0,)))
    with pytest.raises(ValueError, match="'bins' parameter"):
        axis_bins(spec, bins="octaves")  # type: ignore[arg-type]


def test_grid_search_maps_to_its_cells_exactly(results: Path) -> None:
    experiments, _ = load_experiments(results)
    grid = next(e for e in experiments if e.search == "grid")
    assert param_pairs(grid.space) == [("lambda_ot", "lambda_ent")]  # eps, width are fixed
    res = final_results(trial_table(grid), "final")
    info = heatmap_info(res, "lambda_ot", "lambda_ent", grid.space)
    assert info.x.kind == "grid" and info.x.labels == ("0.001", "0.01", "0.1", "1", "10")
    assert (info.count == 1).all()
    assert info.n_trials == 25 and info.n_unplaced == 1  # the off-grid trial is not drawn
    for i, ot in enumerate(PAPER_GRID):
        for j, ent in enumerate(PAPER_GRID):
            assert info.best[j, i] == grid_accuracy(ot, ent)
            assert info.best_trial[j, i] == f"g{i}{j}"
    assert info.best_cell == (4, 4) and info.best_trial_id == "g44"


def test_tpe_heatmap_bins_hover_data_and_empty_cells(results: Path) -> None:
    experiments, _ = load_experiments(results)
    tpe = _by_task(experiments, "A2D")
    res = final_results(trial_table(tpe), "final")
    info = heatmap_info(res, "lambda_ot", "lambda_ent", tpe.space)
    # the same 5x5 cells as the grid search over the paper's grid
    assert info.x.labels == info.y.labels == ("0.001", "0.01", "0.1", "1", "10")
    # t0 (0.001, 0.001) -> cell (0, 0); t1 (0.01, 0.1) and t2 (0.0099, 0.1) share cell (2, 1)
    assert info.count[0, 0] == 1 and info.best_trial[0, 0] == "t0"
    assert info.count[2, 1] == 2 and info.best_trial[2, 1] == "t2"
    assert info.best[2, 1] == 0.80 and info.mean[2, 1] == pytest.approx((0.71 + 0.80) / 2)
    assert info.count[4, 4] == 1 and info.best_trial[4, 4] == "t3"  # the top of the space, 10
    assert info.best_cell == (4, 4) and info.n_unplaced == 0
    empty = info.count == 0
    assert empty.sum() == 25 - 3 and np.isnan(info.best[empty]).all()
    assert np.isnan(info.mean[empty]).all() and (info.best_trial[empty] == "").all()
    assert "lambda_ot=10" in info.best_config[4, 4]

    best = heatmap_info(final_results(trial_table(tpe), "best"), "lambda_ot", "lambda_ent",
                        tpe.space, mode="best")
    assert best.best_trial_id == "t4" and best.best_cell == (3, 3) and best.mode == "best"
    assert best.count[3, 3] == 1 and best.count[4, 4] == 1

    # --bins N and explicit edges still work through heatmap_info
    edged = heatmap_info(res, "lambda_ot", "lambda_ent", tpe.space,
                         bins={"lambda_ot": [0.001, 0.01, 0.1, 1.0, 10.0], "lambda_ent": 2})
    assert edged.x.labels == ("[0.001, 0.01)", "[0.01, 0.1)", "[0.1, 1)", "[1, 10]")
    # t0 (0.001, 0.001); t2 (0.0099, 0.1) and t1 (0.01, 0.1) on either side of the edge 0.01
    assert len(edged.y) == 2 and edged.count[0, 0] == 1
    assert edged.best_trial[1, 0] == "t2" and edged.best_trial[1, 1] == "t1"


def test_heatmap_of_values_on_half_decade_edges(tmp_path: Path) -> None:
    edge = 10 ** -2.5  # between the cells of 0.001 and 0.01
    trials = [("a", edge, 1.0, 0.60), ("b", 0.0031, 1.0, 0.70), ("c", 0.0032, 1.0, 0.65),
              ("d", 10 ** 0.5, 10 ** -0.5, 0.50)]
    rows = []
    for trial_id, ot, ent, acc in trials:
        config = {"lambda_ot": ot, "lambda_ent": ent, "eps": 1.0, "potential_width": 64}
        rows += trial_rows("P2I", "tpe", trial_id, config, [acc] * EPOCHS, "completed")
    folder = write_experiment(tmp_path / "h" / "P2I", rows, task="P2I", search="tpe",
                              space=TPE_SPACE, max_epochs=EPOCHS)
    experiment, _ = load_experiment(folder)
    info = heatmap_info(final_results(trial_table(experiment)), "lambda_ot", "lambda_ent",
                        experiment.space)
    assert info.x.labels == ("0.001", "0.01", "0.1", "1", "10")
    assert info.n_trials == 4 and info.n_unplaced == 0
    # a (on the edge, after a CSV round trip) and c go to 0.01; b stays in 0.001
    assert info.best_trial[3, 1] == "c" and info.count[3, 1] == 2
    assert info.best_trial[3, 0] == "b" and info.count[3, 0] == 1
    assert info.best_trial[3, 4] == "d"  # 10^0.5 opens the cell of 10, 10^-0.5 that of 1
    figure = heatmap_figure(info, "edges")
    trace = figure.data[0]
    assert list(trace.x) == ["0.001", "0.01", "0.1", "1", "10"]
    assert trace.customdata[3][1].startswith("lambda_ot 0.01: [3.2e-3, 0.032)<br>"
                                             "lambda_ent 1: [0.32, 3.2)")
    assert "half-decade edge" in figure.layout.annotations[0].text


def test_heatmap_rejects_unknown_or_fixed_axes(results: Path) -> None:
    experiments, _ = load_experiments(results)
    grid = next(e for e in experiments if e.search == "grid")
    res = final_results(trial_table(grid), "final")
    with pytest.raises(ValueError, match="'x' parameter"):
        heatmap_info(res, "eps", "lambda_ent", grid.space)


def test_every_pair_of_searched_params(results: Path) -> None:
    experiments, _ = load_experiments(results)
    pairs = param_pairs(_by_task(experiments, "A2D").space)
    assert pairs[0] == ("lambda_ot", "lambda_ent") and len(pairs) == 6


# ------------------------------------------------------------------------------------------
# Importance and the cross-task table
# ------------------------------------------------------------------------------------------


def test_importance_uses_optuna_and_explains_when_it_cannot(results: Path) -> None:
    experiments, _ = load_experiments(results)
    grid = next(e for e in experiments if e.search == "grid")
    res = final_results(trial_table(grid), "final")
    info = importance_info(res, grid.space)
    assert set(info.importances) == {"lambda_ot", "lambda_ent"}
    assert sum(info.importances.values()) == pytest.approx(1.0)
    assert info.importances["lambda_ot"] > info.importances["lambda_ent"]
    assert info.evaluator == "FanovaImportanceEvaluator" and info.note == ""
    few = importance_info(res.head(1), grid.space)
    assert few.importances == {} and f"at least {MIN_TRIALS} trials" in few.note


def test_cross_task_table_beside_the_paper(results: Path, tmp_path: Path) -> None:
    experiments, _ = load_experiments(results)
    paper = read_paper_accuracy()
    assert paper.loc["P2I", "ssot_acc"] == 96.7 and len(paper) == 26
    table = cross_task_table(experiments, paper).set_index("experiment")
    row = table.loc["A2D/tpe-exp"]
    assert row["best_final"] == pytest.approx(90.0) and row["best_reached"] == pytest.approx(95.0)
    assert row["paper_ssot"] == 98.7 and row["delta"] == pytest.approx(90.0 - 98.7)
    assert row["source_only"] == pytest.approx(55.0)  # the optional source_only_target_acc
    assert (row["n_completed"], row["n_early-stopped"], row["n_diverged"], row["n_errored"]) == (
        4, 1, 1, 1)
    problems: list[Problem] = []
    missing = read_paper_accuracy(tmp_path / "none.csv", problems)
    assert missing.empty and problems[0].path == tmp_path / "none.csv"


def test_format_value() -> None:
    assert [format_value(v) for v in (0.001, 1.0, 10.0, 256, 0.31622776, "x")] == [
        "0.001", "1", "10", "256", "0.316", "x"]
