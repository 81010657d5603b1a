"""`analysis/study.py` and `analysis/data/study.py`: a study's index page, the screens' agreement with confirmation, its cost."""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from analysis.data.study import AGREE, DISAGREE, NOISE, ONE, agreement_row, agreement_table, cost_table
from ssot.results.study import ALL_TASKS, StudyPaths, StudyRecord, read_study, write_study
from tests.fixtures import REPO


def _candidates(means, stds, pick, seeds="3 4 5"):
    return [{"trial_id": f"t{i}", "search_rank": i + 1, "search_value": 0.9 - 0.01 * i, "mean": m, "std": s, "seeds": seeds,
             "confirmed": i == pick} for i, (m, s) in enumerate(zip(means, stds))]


def test_agreement_when_confirmation_keeps_the_screens_best():
    row = agreement_row("P2H", _candidates([0.80, 0.75, 0.70], [0.01, 0.01, 0.01], pick=0))
    assert row["verdict"] == AGREE and row["regret"] == 0 and row["screen_best_position"] == 1
    assert row["spearman"] == pytest.approx(1.0) and row["kendall"] == pytest.approx(1.0)


def test_disagreement_when_another_config_wins_beyond_the_seeds_noise():
    means, stds = [0.60, 0.80, 0.70], [0.03, 0.01, 0.02]
    row = agreement_row("P2H", _candidates(means, stds, pick=1))
    assert row["verdict"] == DISAGREE and row["pick"] == "t1" and row["pick_screen_rank"] == 2
    assert row["regret"] == pytest.approx(20.0) and row["noise"] == pytest.approx(100 * 0.03 / math.sqrt(3))
    assert row["screen_best_position"] == 3  # the screen's best is last once confirmed
    # the rank correlations are scipy's, of the screen's order (best first) against the confirmed means
    assert row["kendall"] == pytest.approx(stats.kendalltau([3, 2, 1], means).statistic)
    assert row["spearman"] == pytest.approx(stats.spearmanr([3, 2, 1], means).statistic)


def test_a_metric_to_minimise_counts_lower_means_as_better():
    means = [0.40, 0.20, 0.30]  # e.g. an entropy: the second config is the best
    row = agreement_row("P2H", _candidates(means, [0.01] * 3, pick=1), scale=1.0, mode="min")
    assert row["verdict"] == DISAGREE and row["regret"] == pytest.approx(0.20) and row["screen_best_position"] == 3
    assert row["kendall"] == pytest.approx(stats.kendalltau([3, 2, 1], [-m for m in means]).statistic)


def test_a_pick_within_the_seeds_noise_is_not_called_a_disagreement():
    row = agreement_row("P2H", _candidates([0.795, 0.80, 0.70], [0.05, 0.01, 0.02], pick=1))
    assert row["verdict"] == NOISE and row["regret"] == pytest.approx(0.5)
    assert agreement_row("P2H", _candidates([0.8], [0.0], pick=0))["verdict"] == ONE


def _study(root: Path) -> StudyPaths:
    """A study folder as tune/study.py leaves it (the outputs as placeholder files): two tasks, one disagreement."""
    paths = StudyPaths(root)
    record = StudyRecord(settings={"tasks": ["P2H", "H2P"], "num_samples": 4, "population": 4, "top": 3, "seeds": [3, 4, 5],
                                   "final_seeds": [0], "search": "tpe", "metric": "target_acc", "base": {"epochs": 2}},
                         plan={"machine": "2 CPU cores", "rates": "calibrated", "steps": [
                             {"task": t, "step": s, "seconds": 10.0} for t in ("P2H", "H2P") for s in ("features", "screen", "confirm", "final")]
                             + [{"task": ALL_TASKS, "step": "atlas", "seconds": 5.0}]})
    for task in ("P2H", "H2P"):
        for stage in ("features", "screen", "confirm", "final"):
            record.finish(task, stage, 12.0)
        paths.dashboard(task).parent.mkdir(parents=True, exist_ok=True)
        paths.dashboard(task).write_text("<html></html>")
        paths.confirm(task).mkdir(parents=True)
        (paths.confirm(task) / "confirmation.md").write_text("|x|")
    record.finish(ALL_TASKS, "atlas", 4.0)
    record.confirmations["P2H"] = _candidates([0.8, 0.7, 0.6], [0.01] * 3, pick=0)
    record.confirmations["H2P"] = _candidates([0.5, 0.7, 0.6], [0.01] * 3, pick=1)
    (paths.atlas).mkdir()
    (paths.atlas / "atlas.html").write_text("<html></html>")
    paths.final.mkdir()
    pd.DataFrame([{"task": t, "dataset": "embedded", "seeds": "0", "ssot_acc_mean": 71.0, "ssot_acc_std": 0.0,
                   "source_only_acc_mean": 60.0, "source_only_acc_std": 0.0, "paper_ssot_acc": math.nan,
                   "paper_source_only_acc": math.nan, "delta_vs_paper": math.nan, "statuses": "completed"}
                  for t in ("P2H", "H2P")]).to_csv(paths.final / "results.csv", index=False)
    (paths.final / "results.md").write_text("| task |")
    write_study(root, record)
    return paths


def test_the_index_page_links_every_output_and_flags_the_disagreement(tmp_path):
    paths = _study(tmp_path / "study")
    done = subprocess.run([sys.executable, str(REPO / "analysis" / "study.py"), str(paths.root)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "disagree on H2P" in done.stdout
    page = paths.index.read_text()
    links = set(re.findall(r'href="([^"]+)"', page))
    assert {"dashboards/P2H.html", "dashboards/H2P.html", "atlas/atlas.html", "final/results.md", "final/results.csv",
            "agreement.md", "agreement.csv", "confirm/P2H/confirmation.md", "study.json"} <= links
    assert all((paths.root / link).exists() for link in links)  # every link leads somewhere
    assert re.search(r'<tr class="disagree"><td class="l">H2P', page) and not re.search(r'class="disagree"><td class="l">P2H', page)
    table = pd.read_csv(paths.agreement[0])
    assert list(table["verdict"]) == [AGREE, DISAGREE] and "| H2P |" in paths.agreement[1].read_text()
    # an existing page is refused in one line (exit status 2), replaced with --overwrite
    again = subprocess.run([sys.executable, "-m", "analysis.study", str(paths.root)], capture_output=True, text=True)
    assert again.returncode == 2 and "--overwrite" in again.stderr and again.stderr.count("\n") == 1
    assert subprocess.run([sys.executable, "-m", "analysis.study", str(paths.root), "--overwrite"]).returncode == 0


def test_the_cost_table_puts_predicted_beside_measured_per_stage(tmp_path):
    record = read_study(_study(tmp_path / "study").root)
    table = cost_table(record).set_index("stage")
    assert table.loc["screen", "predicted_s"] == 20.0 and table.loc["screen", "measured_s"] == 24.0
    assert table.loc["screen", "ratio"] == pytest.approx(1.2)
    assert table.loc["report", "predicted_s"] == 5.0 and table.loc["report", "measured_s"] == 4.0
    assert table.loc["total", "measured_s"] == 4 * 24.0 + 4.0
    assert list(agreement_table(record)["task"]) == ["P2H", "H2P"]


def test_the_index_page_escapes_what_it_shows(tmp_path):
    from analysis.dashboard.study import study_page

    paths = _study(tmp_path / "a<b>&c")
    record = read_study(paths.root)
    record.plan["machine"] = "<script>alert(1)</script>"
    page = study_page(paths, record)
    assert "<script>" not in page and "&lt;script&gt;" in page and "Study a&lt;b&gt;&amp;c" in page
