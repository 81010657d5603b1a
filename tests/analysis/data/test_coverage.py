"""`analysis/data/coverage.py`: where a sampler searched, counted per heatmap cell."""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.data.coverage import coverage_infos
from analysis.data.experiments import ParamSpec


def test_proposals_per_cell_and_the_share_covered() -> None:
    space = {"lambda_ot": ParamSpec("lambda_ot", "log", 1e-3, 10.0),
             "potential_width": ParamSpec("potential_width", "categorical", values=(64, 256, 1024)),
             "eps": ParamSpec("eps", "fixed", values=(1.0,))}
    table = pd.DataFrame({"trial_id": ["a", "b", "c", "d"], "lambda_ot": [0.001, 0.0011, 0.1, 9.0],
                          "potential_width": [64, 64, 64, 256], "eps": 1.0, "status": "completed"})
    results = pd.DataFrame({"trial_id": ["b", "d"], "acc": [0.7, 0.9]})  # a and c are not in the view
    infos = {i.param: i for i in coverage_infos(table, results, space)}
    assert list(infos) == ["lambda_ot", "potential_width"]
    ot = infos["lambda_ot"]
    # one cell per decade centred on 1e-3 ... 10: 2 proposals near 1e-3, one at 0.1, one at 9 (cell of 10)
    assert ot.bins.labels == ("0.001", "0.01", "0.1", "1", "10") and ot.counts.tolist() == [2, 0, 1, 0, 1]
    assert ot.n_covered == 3 and len(ot.counts) == 5 and ot.n == 4
    np.testing.assert_array_equal(ot.acc, [np.nan, 0.7, np.nan, 0.9])
    width = infos["potential_width"]
    assert width.counts.tolist() == [3, 1, 0] and width.n_covered == 2
