"""`ssot/results/numbers.py`: one rule for a missing number and one for a metric's value."""
from __future__ import annotations

import numpy as np
import pytest

from ssot.results import metrics, numbers


@pytest.mark.parametrize("missing", [None, float("nan"), np.float32("nan"), float("inf"), -np.inf, "x", True, [1.0]])
def test_a_missing_value_is_written_as_missing(missing):
    assert numbers.fixed(missing) == "" and numbers.fixed(missing, missing="&mdash;") == "&mdash;"
    assert numbers.significant(missing, missing="—") == "—" and numbers.percent(missing, missing="—", unit=" %") == "—"
    assert numbers.metric_value("target_acc", missing, unit=True) == "" and numbers.finite(missing) is None


def test_numbers_of_every_type_are_written_the_same():
    for value in (97.25, np.float64(97.25), np.float32(97.25)):
        assert numbers.fixed(value) == "97.2" and numbers.fixed(value, 2) == "97.25"
    assert numbers.fixed(np.int64(5), 0) == "5" and numbers.fixed(3.14159, 4) == "3.1416"
    assert numbers.fixed(1.25, sign=True) == "+1.2" and numbers.fixed(-1.25, sign=True) == "-1.2"
    assert numbers.fixed(0.0, sign=True) == "+0.0"
    assert numbers.significant(1.23456) == "1.235" and numbers.significant(123456.0) == "1.235e+05"
    assert numbers.percent(0.9844) == "98.4" and numbers.percent(0.9844, 2, unit=" %") == "98.44 %"


def test_a_metric_is_a_percentage_exactly_when_the_registry_says_it_is_a_fraction():
    fractions = {m.name for m in metrics.METRICS if m.fraction}
    assert {"target_acc", "source_acc", "mixval", "mixval_inter", "mixval_intra", "ensv"} <= fractions
    for m in metrics.METRICS:
        assert metrics.is_fraction(m.name) == m.fraction
        written = numbers.metric_value(m.name, 0.5, 2, unit=True)
        assert written == ("50.00 %" if m.fraction else "0.5"), m.name
        assert numbers.metric_unit(m.name) == (" %" if m.fraction else "")
    assert not metrics.is_fraction("not_a_metric") and numbers.metric_value("not_a_metric", 0.5) == "0.5"
