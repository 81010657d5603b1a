"""`analysis/mpl/paper.py`: the paper's figures with matplotlib."""
from __future__ import annotations

import numpy as np
import pytest

from analysis.data import paper_runs as info
from analysis.mpl import paper as pf
from tests.fixtures.paper import feature_map_data, synthetic_record


def test_class_weight_figure_marks_outliers_and_reports_the_outlier_mass():
    record = synthetic_record()
    record["epochs"][-1]["class_weights"] = [1.8, 1.8, 0.2, 0.2]  # 0.1 mass left on the outliers
    record["epochs"][-1]["outlier_mass"] = 0.1  # as the trainer records it: the same p_t
    fig = pf.class_weight_figure(record)
    line_ax, bar_ax = fig.axes
    dashed = [ln for ln in line_ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 2 and all("(outlier)" in ln.get_label() for ln in dashed)
    assert "outlier classes 0.100" in bar_ax.get_title()
    with pytest.raises(info.FigureError, match="use_class_weights=false"):
        pf.class_weight_figure({**record, "config": {**record["config"], "use_class_weights": False}})
    with pytest.raises(info.FigureError, match="source_class_freq"):
        info.estimated_proportions({k: v for k, v in record.items() if k != "source_class_freq"})


def test_solver_figure_draws_one_curve_per_solver_and_mean_times():
    fig = pf.solver_figure([synthetic_record("net"), synthetic_record("vector"), synthetic_record("sinkhorn")])
    curve_ax, bar_ax = fig.axes
    assert len(curve_ax.get_lines()) == 3
    np.testing.assert_allclose(curve_ax.get_lines()[0].get_ydata(), [1.0, 0.5, 1 / 3, 0.25])
    assert [round(p.get_height(), 6) for p in bar_ax.patches] == [2.0, 3.0, 3.0]


def test_feature_map_figure_one_panel_per_model():
    fig = pf.feature_map_figure(feature_map_data())
    assert len(fig.axes) == 2 and sum(len(ax.collections) for ax in fig.axes) == 4
