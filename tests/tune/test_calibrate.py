"""`tune/calibrate.py`: this machine's rates measured by a short run of every stage's own code."""
from __future__ import annotations

import math
from dataclasses import fields

import pytest

from tune.calibrate import calibrate
from tune.costs import plan_study, sizes_for
from tune.rates import Rates, read_rates, write_rates
from tune.stages import StudyOptions


@pytest.mark.slow
def test_a_calibration_measures_every_rate_the_plan_needs(ray_local, tmp_path):
    """In the module's Ray (joined, as a study joins its own): runs of P2H's config, its screen's
    populations, a real search of two configs and the report's pages; every rate a finite number
    >= 0, those of real work > 0; the plan of the study is made from them, and the rates survive
    their file."""
    options = StudyOptions(tasks=["P2H"], out=str(tmp_path / "unused"), num_samples=4, population=4, top=2, seeds=(1, 2),
                           final_seeds=(0,), base={"epochs": 2, "pretrain_epochs": 1, "source_eval_samples": 200},
                           bootstrap=0, images=False, num_cpus=2)
    lines: list[str] = []
    sizes = sizes_for(options)
    rates = calibrate(options, sizes, log=lines.append)
    model, screen = rates.model("digits_cnn"), rates.screen("embedded")
    assert rates.device == "cpu" and rates.cpus == 2 and rates.ray_start_s == 0.0  # Ray was running: not started here
    for value in (model.ce_iter_s, model.ssot_iter_s, model.eval_img_s, model.encode_img_s, model.worker_s,
                  screen.iteration(4), screen.evaluation(4, 649), rates.report.dashboard_s, rates.report.index_s):
        assert math.isfinite(value) and value > 0, lines  # times of real work
    # differences of two timings (a search beyond its work, a dashboard beyond its process's start): >= 0, maybe 0 on a busy machine
    assert model.shared >= 1.0 and screen.search_s >= 0.0 and screen.pretrain_iter_s >= 0.0 and rates.report.dashboard_row_s >= 0.0
    assert rates.report.atlas_s == rates.report.atlas_task_s == 0.0  # one task: no atlas, none timed
    assert any("populations of 4" in s for s in rates.sources.values()) and any(line.startswith("calibration:") for line in lines)
    plan = plan_study(options, rates, sizes)
    assert [(s.task, s.step) for s in plan.steps] == [("P2H", "features"), ("P2H", "screen"), ("P2H", "confirm"), ("P2H", "final"),
                                                      ("*", "table"), ("P2H", "dashboard"), ("*", "index")]
    assert all(s.seconds >= 0 for s in plan.steps) and plan.total_s > 0
    back = read_rates(str(write_rates(rates, tmp_path / "rates.json")))
    assert isinstance(back, Rates) and all(getattr(back.model("digits_cnn"), f.name) == pytest.approx(getattr(model, f.name))
                                           for f in fields(model))
