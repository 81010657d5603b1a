"""`analysis/dashboard/sections.py`: each experiment's figures under each view."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analysis.dashboard import build_dashboard
from tests.fixtures.experiments import N_TRIALS


@pytest.fixture(scope="module")
def built(views_results: Path):
    """The dashboard of the three experiments (HTML only)."""
    result = build_dashboard(views_results, images=False)
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


def test_default_heatmaps_use_every_trial_and_say_so(built) -> None:
    result, page, figures, views = built
    keys = _keys(page)
    asha, grid = keys["asha"], keys["grid-exp"]
    assert views[asha]["default"] == "epoch5" and views[grid]["default"] == "final"
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
            assert sum(int(re.search(r"<br>trials (\d+)", h).group(1)) for h in hovers
                       if "no trial" not in h) == N_TRIALS  # every trial is in a cell
    importance = figures[f"{asha}-importance-epoch5"]
    assert "; 20 trials" in _subtitle(importance)
    assert {t["name"].split(" (")[0] for t in importance["data"]} == {"fANOVA", "PED-ANOVA"}
    assert "importance not computed" in json.dumps(figures[f"{asha}-importance-final"])
    marginal = json.dumps(figures[f"{asha}-marginal-epoch5"])
    assert "model estimate" in marginal and "; 20 trials" in marginal
    for kind in ("parallel", "importance", "marginal"):
        assert "; 3 trials" in _subtitle(figures[f"{asha}-{kind}-final"]), kind
    assert "every trial (20)" in _subtitle(figures[f"{asha}-curves"])
    assert "highest rung that at least half of its trials reached" in " ".join(page.split())


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
    assert "; 16 trials" in _subtitle(figures[f"{live}-heat0-epoch5"])
    assert "; 20 trials" in _subtitle(figures[f"{live}-parallel-best"])
    assert "no best_config.json yet" in section
