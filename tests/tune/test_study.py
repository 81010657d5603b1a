"""`tune/study.py`: a whole study killed (SIGKILL) in the middle of a stage, resumed to the same result,
nothing finished redone; its refusals before any work."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from ssot.config import SSOTConfig
from ssot.results.record import read_record
from ssot.results.study import StudyPaths, read_study, step_key
from tests.fixtures import REPO
from tune.rates import ModelRates, Rates, ReportRates, ScreenRates, write_rates

#: The tiny study: one task, 4 configs screened as one population, the top 2 confirmed on 2 seeds, one final seed.
FLAGS = ["--task", "P2H", "--num-samples", "4", "--population", "4", "--top", "2", "--confirm-seeds", "1", "2", "--final-seeds", "0",
         "--epochs", "2", "--pretrain-epochs", "1", "--set", "iters_per_epoch=3", "--set", "source_eval_samples=200",
         "--bootstrap", "0", "--no-images", "--num-cpus", "2"]


def _rates(path: Path) -> Path:
    """A rates file (made-up rates: this test checks the study, not the prediction)."""
    model = ModelRates(ce_iter_s=0.01, ssot_iter_s=0.02, eval_img_s=0.0002, encode_img_s=0.0001, run_s=0.1, worker_s=5.0)
    screen = ScreenRates(iter_s=(0.02, 0.005), eval_img_s=(0.0002, 0.0001), pretrain_iter_s=0.003, search_s=20.0)
    report = ReportRates(dashboard_s=5.0, dashboard_row_s=0.03, dashboard_boot_s=0.0, atlas_s=6.0, atlas_task_s=6.0, index_s=5.0)
    rates = Rates(machine="this test's machine", device="cpu", cpus=2, gpus=0, measured="made up for the test",
                  models={"digits_cnn": model}, screens={"embedded": screen}, report=report, ray_start_s=7.0)
    return write_rates(rates, path)


def _command(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "tune" / "study.py"), *args]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of the study with its inode and modification time (what a redo would change)."""
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_a_study_killed_in_the_middle_of_a_stage_resumes_to_the_same_result_redoing_nothing(tmp_path):
    out = tmp_path / "study"
    paths = StudyPaths(out)
    rates = _rates(tmp_path / "rates.json")
    runs = paths.confirm("P2H") / "runs" / "P2H"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = open(tmp_path / "killed.log", "w")
    started = time.monotonic()
    proc = subprocess.Popen(_command(*FLAGS, "--out", str(out), "--rates", str(rates)), stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and proc.poll() is None and not list(runs.glob("*.json")):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # the driver, in the middle of confirmation: its first run recorded, the others not
    proc.wait(timeout=60)
    log.close()
    killed_text = (tmp_path / "killed.log").read_text()
    assert proc.returncode == -signal.SIGKILL, killed_text[-3000:]
    before = read_study(out)
    assert before.done("P2H", "screen") and not before.done("P2H", "confirm"), killed_text[-3000:]
    kept = _files(out)
    written = sorted(runs.glob("*.json"))
    assert 1 <= len(written) < 4  # a stage cut in the middle
    assert "[study] P2H features done" in killed_text and "plan on this test's machine" in killed_text

    resumed = subprocess.run(_command("--out", str(out), "--resume"), capture_output=True, text=True, env=env, timeout=600)
    elapsed = time.monotonic() - started
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    text = resumed.stdout

    # nothing finished was done again: the record's steps, the files of the finished stages and the
    # confirmation runs recorded before the kill are the same files, untouched
    after = read_study(out)
    for step in ("features", "screen"):
        assert after.steps[step_key("P2H", step)] == before.steps[step_key("P2H", step)]
        assert f"[study] P2H {step} ..." not in text
    now = _files(out)
    unchanged = [f for f in kept if f.startswith(("features/", "screen/P2H/trials.csv", "screen/P2H/experiment.json",
                                                   "screen/P2H/best_config.json")) or f in {str(p.relative_to(out)) for p in written}]
    assert unchanged and all(now[f] == kept[f] for f in unchanged), [f for f in unchanged if now[f] != kept[f]]
    assert text.count("[reused") == len(written)
    assert after.status == "finished" and all(after.done(t, s) for t, s in
                                              [("P2H", "confirm"), ("P2H", "final"), ("*", "table"), ("P2H", "dashboard"), ("*", "index")])

    # the same result as a study never killed: every run recorded after the kill, and the final run,
    # equal the same config trained here in one go; the confirmation's means are its records' means
    recorded_after = [p for p in sorted(runs.glob("*.json")) if p not in written]
    confirmed = SSOTConfig.from_json(paths.confirm("P2H") / "P2H.json")
    from ssot.trainer import run

    for path in [*recorded_after, paths.final / "runs" / "P2H_seed0.json"]:
        record = read_record(path)
        again = run(SSOTConfig.from_dict(record.config))
        assert [e["target_acc"] for e in record.epochs] == [e["target_acc"] for e in again["epochs"]], path
    table = pd.read_csv(paths.confirm("P2H") / "confirmation.csv", dtype={"trial_id": str})
    assert len(table) == 2 and table["confirmed"].sum() == 1
    for row in table.itertuples():
        values = [read_record(runs / f"{row.trial_id}_seed{s}.json").score("target_acc") for s in (1, 2)]
        assert row.mean == pytest.approx(sum(values) / 2)
    pick = table.loc[table["confirmed"]].iloc[0]
    assert pick["mean"] == table["mean"].max()
    assert confirmed.backbone == "digits_cnn" and confirmed.features_path is None  # confirmed on images, not on the cache
    assert confirmed.lambda_ot == pytest.approx(float(pick["lambda_ot"]))
    results = pd.read_csv(paths.final / "results.csv")
    assert results.loc[0, "ssot_acc_mean"] == pytest.approx(100 * read_record(paths.final / "runs" / "P2H_seed0.json").final_acc)

    # the index page links the table, the dashboard and the screen's agreement; the cost printed, predicted beside measured
    page = paths.index.read_text()
    assert {"final/results.md", "dashboards/P2H.html", "agreement.md"} <= set(re.findall(r'href="([^"]+)"', page))
    assert paths.dashboard("P2H").exists() and not paths.partial.exists()
    assert re.search(r"^  confirm +\d+s +\d+s", text, re.M) and re.search(r"^  total +\d+s +\d+s +[\d.]+$", text, re.M)
    assert json.loads(paths.record.read_text())["confirmations"]["P2H"][0]["search_rank"] == 1
    print(f"killed and resumed study: {elapsed:.0f} s")


def test_a_study_is_refused_before_any_work(tmp_path):
    """An existing study folder without --resume, --resume without a study, final seeds that chose
    the config, a missing dataset: one line each, exit status 2, nothing written."""
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "something").write_text("x")
    cases = [
        (["--task", "P2H", "--out", str(existing)], "already exists; pass --resume"),
        (["--out", str(tmp_path / "none"), "--resume"], "No study in"),
        (["--task", "P2H", "--out", str(tmp_path / "a"), "--confirm-seeds", "0", "1", "--final-seeds", "1", "2"], "share seed(s) 1"),
        (["--task", "A2W", "--data-root", str(tmp_path / "nodata"), "--out", str(tmp_path / "b")], "does not exist"),
        (["--task", "P2H", "--out", str(tmp_path / "c"), "--top", "5", "--num-samples", "3"], "--top 5 exceeds"),
        (["--task", "P2X", "--out", str(tmp_path / "d")], "Unknown task or dataset 'P2X'"),
    ]
    for args, says in cases:
        done = subprocess.run(_command(*args), capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1, (args, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]  # nothing written
