"""`analysis/dashboard/sections.py`: each experiment's figures under each view."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from analysis.dashboard import build_dashboard
from tests.fixtures import first_group
from tests.fixtures.experiments import N_TRIALS
from tests.fixtures.figures import values


@pytest.fixture(scope="module")
def built(views_results: Path):
    """The dashboard of the three experiments (HTML only)."""
    result = build_dashboard(views_results, images=False, n_boot=5)
    page = result.path.read_text(encoding="utf-8")
    start = page.index("var FIGURES = ") + len("var FIGURES = ")
    figures = json.loads(page[start: page.index(";\nvar MODE_LABELS")].replace("<\\/", "</"))
    start = page.index("var VIEWS = ") + len("var VIEWS = ")
    views = json.loads(page[start: page.index(";\n", start)].replace("<\\/", "</"))
    return result, page, figures, views


def _keys(page: str) -> dict[str, str]:
    """Section key (e0, ...) of each experiment name."""
    sections = page.split('<section class="experiment" data-key="')[1:]
    return {s.split("&mdash; ", 1)[1].split(" ", 1)[0]: s.split('"', 1)[0] for s in sections}


def _subtitle(figure: dict) -> str:
    return figure["layout"]["title"]["text"]


def test_every_search_opens_on_the_final_epoch_and_each_view_says_its_trials(built) -> None:
    result, page, figures, views = built
    keys = _keys(page)
    asha, grid = keys["asha"], keys["grid-exp"]
    assert views[asha]["default"] == "final" and views[grid]["default"] == "final"
    assert [v["short"] for v in views[asha]["views"]] == [
        "epoch 5 (20 trials)", "final epoch 15 (3 trials)", "best reached (20 trials)"]
    heatmaps = {k: f for k, f in figures.items() if k.startswith(f"{asha}-heat")}
    assert len(heatmaps) == 6 * 3
    for div_id, figure in heatmaps.items():
        n = {"epoch5": 20, "final": 3, "best": 20}[div_id.rsplit("-", 1)[1]]
        assert f"; {n} trials" in _subtitle(figure), div_id
        if div_id.endswith("epoch5"):
            assert "accuracy at epoch 5" in _subtitle(figure)
            hovers = [h for row in figure["data"][0]["customdata"] for h in row]
            assert sum(int(first_group(r"<br>trials (\d+)", h)) for h in hovers
                       if "no trial" not in h) == N_TRIALS  # every trial is in a cell
    importance = figures[f"{asha}-importance-epoch5"]
    assert "; 20 trials; bars: 95 % bootstrap intervals (5 resamples of the 20 trials)" in _subtitle(importance)
    assert {t["name"].split(" (")[0] for t in importance["data"]} == {"fANOVA", "PED-ANOVA"}
    for trace in importance["data"]:  # each bar's interval holds it
        low = [x - m for x, m in zip(trace["x"], trace["error_x"]["arrayminus"], strict=True)]
        high = [x + p for x, p in zip(trace["x"], trace["error_x"]["array"], strict=True)]
        assert all(0 <= lo <= x <= hi <= 1 + 1e-9 for lo, x, hi in zip(low, trace["x"], high, strict=True)), trace["name"]
    assert "importance not computed" in json.dumps(figures[f"{asha}-importance-final"])
    marginal = json.dumps(figures[f"{asha}-marginal-epoch5"])
    assert "model estimate" in marginal and "; 20 trials" in marginal
    for kind in ("parallel", "importance", "marginal"):
        assert "; 3 trials" in _subtitle(figures[f"{asha}-{kind}-final"]), kind
    assert "every trial (20)" in _subtitle(figures[f"{asha}-curves"])
    assert "Every search opens on the final-epoch view" in " ".join(page.split())


def test_a_running_search_is_drawn_and_flagged_partial(built) -> None:
    result, page, figures, views = built
    live = _keys(page)["live"]
    section = page.split(f'<section class="experiment" data-key="{live}"')[1].split("</section>")[0]
    assert "Partial results: this search is still running" in section
    assert "4 of them still running" in section
    others = page.split("</section>")
    assert sum("Partial results" in s for s in others) == 1  # only on the running one
    assert any("still running" in str(p) for p in result.problems)
    # what exists is drawn: 16 trials reached epoch 5; the running ones count where they got to
    assert [v["short"] for v in views[live]["views"]][0] == "epoch 5 (16 trials)"
    assert views[live]["default"] == "final"  # 2 of its trials reached the last epoch
    assert "; 16 trials" in _subtitle(figures[f"{live}-heat0-epoch5"])
    assert "; 20 trials" in _subtitle(figures[f"{live}-parallel-best"])
    assert "no best_config.json yet" in section


def _heatmaps(figures: dict, key: str) -> dict[str, dict]:
    return {k: f for k, f in figures.items() if k.startswith(f"{key}-heat") and f["data"]}


def test_one_colour_scale_per_task(built) -> None:
    from analysis.dashboard.sections import prepare
    from analysis.data.bins import color_range
    from analysis.data.experiments import load_experiments

    result, page, figures, views = built
    keys = _keys(page)
    ranges = {}
    for name in keys:  # every heatmap of an experiment, in every view, has the range of its task
        found = {(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in _heatmaps(figures, keys[name]).values()}
        assert len(found) == 1, (name, found)
        ranges[name] = found.pop()
    assert ranges["asha"] == ranges["live"] != ranges["grid-exp"]  # two digits searches; P2I its own
    experiments, _ = load_experiments(result.path.parent)
    cells = [p.info for e in experiments if e.task == "digits" for p in prepare(e, "x", "decades").panels]
    shared = color_range(cells)
    assert shared is not None
    low, high = shared
    assert ranges["asha"] == pytest.approx((100 * low, 100 * high))  # the lowest and the highest cell of the task
    digits = [f for name in ("asha", "live") for f in _heatmaps(figures, keys[name]).values()]
    shown = np.concatenate([values(f["data"][0]["z"]).ravel() for f in digits])
    assert np.nanmin(shown) == pytest.approx(ranges["asha"][0]) and np.nanmax(shown) == pytest.approx(ranges["asha"][1])
    assert "One colour scale for every heatmap of digits" in page


def test_search_history_rungs_and_trial_table(built) -> None:
    result, page, figures, views = built
    keys = _keys(page)
    asha = keys["asha"]
    history = figures[f"{asha}-history"]
    best = [t for t in history["data"] if t["name"] == "best target_acc so far"][0]
    completed = [t for t in history["data"] if t["name"].startswith("completed")][0]
    assert values(best["y"])[-1] == pytest.approx(values(completed["y"]).max())
    assert history["data"][-1]["name"] == "selected trial" and len(history["layout"]["meta"]["marks"]) == N_TRIALS
    section = page.split(f'<section class="experiment" data-key="{asha}"')[1].split("</section>")[0]
    # three trials reached both epoch 5 and the last: too few for a rank correlation (analysis.data.rungs.MIN_RUNG_TRIALS)
    assert "Can early stopping be trusted?" in section and "<tr><td>5</td><td>3</td><td></td>" in section
    assert "not computed: 3 trial(s) reached epoch 5 and the last epoch" in section
    grid = page.split(f'<section class="experiment" data-key="{keys["grid-exp"]}"')[1].split("</section>")[0]
    assert "this search stopped no trial early" in grid  # every epoch against the last instead (analysis.data.rungs)
    table = section.split('<table class="trials sortable"')[1].split("</table>")[0]
    assert table.count('<tr class="trial-row"') == N_TRIALS and 'data-type="num"' in table
    # percent everywhere: the table's accuracies, the best line
    assert "<th data-type=\"num\" title=\"click to sort\">final acc (%)</th>" in table
    line = first_group(r'<p class="mode-final best-line">(.*?)</p>', section)
    assert re.search(r"target_acc \d+\.\d\d %", line) and not re.search(r"target_acc 0\.\d", line)
