"""`tune/costs.py` and `tune/rates.py`: a study's predicted cost from a machine's rates, and the budget."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys
from typing import Any

import pytest

from ssot.config import SSOTConfig
from ssot.data.registry import DATASETS
from ssot.errors import ConfigError, ResultsError
from tests.fixtures import REPO
from tune.costs import TaskSize, alive_per_epoch, fit_budget, plan_study, task_size, trial_epochs
from tune.rates import SHIPPED, ModelRates, Rates, ReportRates, ScreenRates, read_rates, write_rates
from tune.stages import Confirmation, StudyOptions, image_config


def _rates(device: str = "cpu", gpus: int = 0, packing: dict | None = None) -> Rates:
    model = ModelRates(ce_iter_s=0.01, ssot_iter_s=0.02, eval_img_s=0.001, encode_img_s=0.0005, run_s=1.0, worker_s=5.0, shared=1.5)
    screen = ScreenRates(iter_s=(0.01, 0.001), eval_img_s=(0.0001, 0.00001), pretrain_iter_s=0.002, search_s=20.0)
    report = ReportRates(dashboard_s=4.0, dashboard_row_s=0.01, dashboard_boot_s=0.001, atlas_s=5.0, atlas_task_s=2.0, index_s=3.0)
    return Rates(machine="test machine", device=device, cpus=2, gpus=gpus, measured="made up", models={"digits_cnn": model, "resnet50": model},
                 screens={name: screen for name in DATASETS}, report=report, ray_start_s=6.0, packing=packing)


SIZE = TaskSize("P2H", "embedded", "digits_cnn", n_source=1800, n_target=449, n_source_eval=1800, classes=10, feature_dim=512)


def _options(**changes: Any) -> StudyOptions:
    values: dict[str, Any] = dict(tasks=["P2H"], out="unused", num_samples=16, population=16, top=3, seeds=(3, 4), final_seeds=(0,),
                                  base={"epochs": 5, "pretrain_epochs": 3}, bootstrap=0)
    values.update(changes)
    return StudyOptions(**values)


def test_asha_inside_a_population_keeps_the_top_third_at_each_rung():
    # ssot.population.Population._rung keeps ceil(n / rf); rungs 5 and 15 of 20 epochs
    assert alive_per_epoch(16, 20, (5, 15), 3) == [16] * 5 + [6] * 10 + [2] * 5
    assert alive_per_epoch(16, 5, (5,), 3) == [16] * 5  # a rung at the last epoch stops nothing
    assert sorted(trial_epochs(_options(num_samples=16, base={"epochs": 20}), 20), reverse=True) == [20] * 2 + [15] * 4 + [5] * 10
    assert trial_epochs(_options(early_stop=False, num_samples=5, population=2), 7) == [7] * 5


def test_each_step_counts_its_work_with_the_rates():
    options, rates = _options(), _rates()
    plan = plan_study(options, rates, {"P2H": SIZE})
    by = {(s.task, s.step): s.seconds for s in plan.steps}
    config = image_config(options, "P2H")
    i_s, i = 1800 // 32, config.iters_per_epoch or 1800 // 32  # P2H's own iterations per epoch: 28
    assert i == 28
    evaluated = 449 + 1800
    run = 1.0 + 3 * i_s * 0.01 + 5 * i * 0.02 + 6 * evaluated * 0.001
    assert by["P2H", "confirm"] == pytest.approx(5.0 + math.ceil(6 / 2) * run * 1.5)  # 6 runs, 2 at once (2 CPUs), shared 1.5x
    assert by["P2H", "final"] == pytest.approx(run)  # one run alone, in warm workers
    features = 1.0 + 3 * i_s * 0.01 + evaluated * 0.001 + (1800 + 449) * 0.0005
    assert by["P2H", "features"] == pytest.approx(6.0 + features)  # Ray's start counted in the first step
    work = 5 * (i * (0.01 + 0.001 * 16) + evaluated * (0.0001 + 0.00001 * 16))  # 16 members, 5 epochs, no rung before the last
    assert by["P2H", "screen"] == pytest.approx(20.0 + 3 * i_s * 0.002 + evaluated * 0.00011 + work)
    assert by["P2H", "dashboard"] == pytest.approx(4.0 + 16 * 5 * 0.01)
    assert ("*", "atlas") not in by and by["*", "index"] == 3.0  # one task: no atlas
    assert plan.total_s == pytest.approx(sum(by.values()))


def test_the_levers_change_what_they_should():
    rates, sizes = _rates(), {"P2H": SIZE}
    base = plan_study(_options(), rates, sizes)
    raced = plan_study(_options(shrunk={"embedded": {"race_budget": 4}}), rates, sizes)  # 4 runs instead of 6: 2 waves instead of 3
    short = plan_study(_options(shrunk={"embedded": {"epochs": 2}}), rates, sizes)

    def seconds(plan, step):
        return next(s.seconds for s in plan.steps if s.step == step)

    assert (seconds(raced, "confirm") - 5.0) == pytest.approx((seconds(base, "confirm") - 5.0) * 2 / 3)
    assert seconds(short, "confirm") < seconds(base, "confirm") and seconds(short, "final") == seconds(base, "final")
    gpu = _rates("cuda", 1, packing={"runs_per_gpu": 4, "speedup": 2.0})
    one, packed = plan_study(_options(), gpu, sizes), plan_study(_options(gpus_per_run=0.25), gpu, sizes)
    assert seconds(packed, "confirm") - 5.0 == pytest.approx((seconds(one, "confirm") - 5.0) / 2.0)  # 6 runs one by one vs packed


def test_the_budget_shrinks_confirmation_lever_by_lever_and_says_what_it_gave_up():
    rates, sizes = _rates("cuda", 1, packing={"runs_per_gpu": 4, "speedup": 2.0}), {"P2H": SIZE}
    options = _options(top=5, seeds=(3, 4, 5))
    full = plan_study(options, rates, sizes).total_s
    same, plan = fit_budget(options, rates, sizes, hours=2 * full / 3600)
    assert same == options and plan.fits and plan.gave_up == []  # it fits: nothing given up
    shrunk, plan = fit_budget(options, rates, sizes, hours=0.75 * full / 3600)
    assert plan.fits and plan.total_s <= 0.75 * full and shrunk.gpus_per_run == 0.25 and "packed 4 per GPU" in plan.gave_up[0]
    tight, plan = fit_budget(options, rates, sizes, hours=10 / 3600)
    assert not plan.fits and tight.confirmation("P2H") == Confirmation(top=2, seeds=(3, 4), race_budget=None, epochs=3)
    assert plan.gave_up[1:4] == [
        "embedded: confirmation runs each candidate on 2 seeds (3 4) instead of 3: the pick's mean rests on 2 seeds",
        "embedded: confirmation runs stop at epoch 3 of 5: candidates are compared before the end of training (the final runs keep "
        "every epoch)",
        "embedded: confirms the screen's top 2 instead of 5: a config the screen ranked lower is never tried on images"]
    assert "does not fit" in plan.gave_up[-1] and "dominates" in plan.gave_up[-1]
    with pytest.raises(ConfigError, match="--budget"):
        fit_budget(options, rates, sizes, hours=0)


def test_the_budget_shrinks_the_dearest_datasets_confirmation_first_and_leaves_the_others_whole():
    big = dataclasses.replace(SIZE, task="A2W", dataset="office31", n_source=30_000, n_target=5_000, n_source_eval=2000, classes=31)
    rates, sizes = _rates(), {"P2H": SIZE, "A2W": big}
    options = _options(tasks=["P2H", "A2W"], top=5, seeds=(3, 4, 5), base={"epochs": 5, "pretrain_epochs": 3, "backbone": "digits_cnn"})
    full = plan_study(options, rates, sizes)
    confirm = {s.task: s.seconds for s in full.steps if s.step == "confirm"}
    assert confirm["A2W"] > 5 * confirm["P2H"]
    shrunk, plan = fit_budget(options, rates, sizes, hours=(full.total_s - 0.2 * confirm["A2W"]) / 3600)
    assert plan.fits and set(shrunk.shrunk) == {"office31"} and shrunk.confirmation("P2H") == options.confirmation("P2H")
    assert "race_budget" in shrunk.shrunk["office31"] and all(line.startswith("office31: ") for line in plan.gave_up)


def test_sizes_come_from_the_published_counts_or_the_embedded_task_itself():
    a2w = task_size(image_config(_options(tasks=["A2W"]), "A2W"))
    assert (a2w.n_source, a2w.n_target, a2w.n_source_eval, a2w.classes, a2w.estimated) == (2817, round(795 * 10 / 31), 2000, 31, True)
    p2i = task_size(image_config(_options(tasks=["P2I"]), "P2I"))
    assert (p2i.n_target, p2i.estimated) == (50 * 6, False)  # ImageCLEF publishes 50 images per class
    from ssot.data import build_task

    config = image_config(_options(), "P2H")
    built = build_task(config)
    p2h = task_size(config)
    assert (p2h.n_source, p2h.n_target, p2h.feature_dim) == (len(built.source), len(built.target_eval), 512)
    digits = task_size(SSOTConfig.for_task("digits"))  # a dataset without domains that is not the user's own
    assert (digits.classes, digits.estimated) == (10, False)
    with pytest.raises(ConfigError, match="Task 'custom' has no known sizes to plan with"):  # the user's own images
        task_size(SSOTConfig(task="custom"))


def test_the_h200_rates_file_reads_and_says_where_every_number_comes_from():
    rates = read_rates("nvidia-h200")
    assert "nvidia-h200" in SHIPPED and rates.device == "cuda" and rates.gpus == 1
    model = rates.model("resnet50")
    assert model.ssot_iter_s == pytest.approx(64 / 2154, rel=1e-4)  # the measured SSOT step: 2,154 images/s, 64 per iteration
    assert rates.packing == {"runs_per_gpu": 4, "speedup": 2.14}
    for field in ("ssot_iter_s", "ce_iter_s", "eval_img_s", "encode_img_s", "prepare_img_s", "run_s", "worker_s"):
        assert f"models.resnet50.{field}" in rates.sources
    assert {"screens.iter_s", "screens.eval_img_s", "report", "packing"} <= set(rates.sources)
    with pytest.raises(ConfigError, match="no screen rates for embedded3"):
        rates.screen("embedded3")


def test_rates_files_are_checked_and_never_overwritten(tmp_path):
    path = write_rates(_rates(), tmp_path / "rates.json")
    assert read_rates(str(path)).to_dict() == _rates().to_dict()
    with pytest.raises(Exception, match="already exists"):
        write_rates(_rates(), path)
    data = json.loads(path.read_text())
    data["models"]["digits_cnn"]["ssot_iter_s"] = -1
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="models.digits_cnn.ssot_iter_s must be a finite number"):
        read_rates(str(tmp_path / "bad.json"))
    with pytest.raises(ConfigError, match="neither a file nor a shipped"):
        read_rates(str(tmp_path / "missing.json"))


def test_plan_all_prints_hours_per_dataset_and_in_all_without_data_or_any_work(tmp_path):
    out = tmp_path / "never"
    done = subprocess.run([sys.executable, str(REPO / "tune" / "study.py"), "--all", "--plan", "--rates", "nvidia-h200",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for dataset in ("office31", "imageclef", "officehome", "visda2017"):
        assert re.search(rf"^  {dataset}: features [\d.]+, screen [\d.]+, confirm [\d.]+, final [\d.]+; total [\d.]+$", text, re.M), dataset
    assert re.search(r"in all: [\d.]+ h", text) and "goal:" in text
    assert len(re.findall(r"^  (A2W|S2R|Ar2Cl|P2I) ", text, re.M)) == 4
    assert not out.exists()  # --plan does no work, writes nothing


def test_a_budget_on_a_resumed_study_is_refused_in_one_line(tmp_path):
    from ssot.results.study import StudyRecord, write_study

    write_study(tmp_path, StudyRecord(settings=_options().settings()))
    done = subprocess.run([sys.executable, str(REPO / "tune" / "study.py"), "--out", str(tmp_path), "--resume", "--budget", "3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--budget" in done.stderr

