"""`analysis/data/paper_runs.py`: what the paper's figures show, from run records."""
from __future__ import annotations

import numpy as np

from analysis.data import paper_runs as info
from tests.fixtures.paper import synthetic_record


def test_estimated_proportions_are_p_s_times_m():
    est, true, p_s = info.estimated_proportions(synthetic_record())
    assert est.shape == (5, 4)
    np.testing.assert_allclose(est[0], p_s)
    np.testing.assert_allclose(est[-1], true, atol=1e-12)
    np.testing.assert_allclose(est.sum(1), 1.0)
