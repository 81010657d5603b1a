"""`analysis/data/bins.py` (and its Plotly heatmap): cells of a pair of hyperparameters."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from analysis.charts.heatmap import heatmap_figure
from analysis.data.bins import axis_bins, heatmap_info
from analysis.data.experiments import ParamSpec, load_experiments
from analysis.data.frames import final_results, param_pairs, trial_table
from tests.fixtures.experiments import PAPER_GRID, TPE_SPACE, by_task, grid_accuracy, loaded, trial_rows, write_experiment

EPOCHS = 4


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


def test_grid_search_maps_to_its_cells_exactly(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
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


def test_tpe_heatmap_bins_hover_data_and_empty_cells(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    tpe = by_task(experiments, "A2D")
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
    experiment = loaded(folder)
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


def test_heatmap_rejects_unknown_or_fixed_axes(edge_results: Path) -> None:
    experiments, _ = load_experiments(edge_results)
    grid = next(e for e in experiments if e.search == "grid")
    res = final_results(trial_table(grid), "final")
    with pytest.raises(ValueError, match="'x' parameter"):
        heatmap_info(res, "eps", "lambda_ent", grid.space)


def test_one_colour_range_spans_every_cell_of_several_heatmaps(edge_results: Path) -> None:
    from analysis.data.bins import color_range

    experiments, _ = load_experiments(edge_results)
    grid = next(e for e in experiments if e.search == "grid")
    results = final_results(trial_table(grid))
    whole = heatmap_info(results, "lambda_ot", "lambda_ent", grid.space)
    top = heatmap_info(results[results["acc"] >= 0.6], "lambda_ot", "lambda_ent", grid.space)
    assert color_range([top]) == (np.nanmin(top.best), np.nanmax(top.best))
    assert color_range([top, whole]) == (np.nanmin(whole.best), np.nanmax(whole.best))  # the widest of the two
    one = heatmap_info(results.head(1), "lambda_ot", "lambda_ent", grid.space)
    shared = color_range([one])
    assert shared is not None
    low, high = shared
    assert high - low == pytest.approx(0.01) and low < np.nanmax(one.best) < high  # one cell: still a range
    assert color_range([]) is None
    assert whole.cells["g44"] == (4, 4) and len(whole.cells) == whole.n_trials  # each placed trial's cell
