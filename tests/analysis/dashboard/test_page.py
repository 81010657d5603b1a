"""`analysis/dashboard/page.py`: the self-contained dashboard of a results folder."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from analysis.dashboard import build_dashboard
from analysis.data.experiments import NoExperimentsError
from tests.fixtures import first_group
from tests.fixtures.browser import PlotScanner, chromium, console_lines, open_in_chromium
from tests.fixtures.experiments import digest, with_meta, write_edge_tpe
from tests.fixtures.figures import page_figures, values


@pytest.fixture(scope="module")
def dashboard(dashboard_results: Path) -> Path:
    return build_dashboard(dashboard_results, images=False, n_boot=0).path


def test_dashboard_is_self_contained(dashboard: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    assert dashboard.name == "dashboard.html"
    assert not re.search(r"<script[^>]+src=", page)
    assert "Plotly" in page and len(page) > 3_000_000  # plotly.js itself is inlined
    assert not re.search(r"<(link|img|iframe)[^>]+(href|src)=\"https?:", page)


def test_dashboard_has_every_part(dashboard: Path, dashboard_results: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    # the task selector: one option per experiment
    assert page.count("<option value=") == 3
    for text in ("A2D &mdash; tpe-exp (tpe)", "P2I &mdash; grid-exp (grid)",
                 "final-epoch accuracy (trials that reached the last epoch)",
                 "best accuracy reached (includes early-stopped trials)",
                 "learning curves", "hyperparameters to accuracy", "hyperparameter importance",
                 "paper SSOT", "98.7", "96.7", "button type=\"button\" class=\"copy\""):
        assert text in page, text
    # a plot div per figure, each with its data
    ids = re.findall(r'<div class="plot[^"]*" id="([^"]+)"', page)
    figures = re.search(r"var FIGURES = (\{.*?\});\nvar MODE_LABELS", page, re.S)
    assert figures is not None
    data = json.loads(figures.group(1).replace("<\\/", "</"))
    assert sorted(ids) == sorted(data)
    # TPE: 6 pairs x 3 views (an ASHA rung at epoch 2, where t4 stopped; final; best); grid:
    # 1 pair x 2 views; + curves and the optimisation history, and per view parallel coordinates,
    # importances, marginal effects
    assert len(ids) == 2 * (6 * 3 + 2 + 3 * 3) + (1 * 2 + 2 + 2 * 3)


def test_decade_cells_are_explained_and_hovered(dashboard: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", page)
    assert "one cell per decade, centred on it like the paper's grid" in text
    assert "A value exactly on a half-decade edge is in the cell above it" in text
    assert "Grid searches have one cell per grid value" in text
    figures = re.search(r"var FIGURES = (\{.*?\});\nvar MODE_LABELS", page, re.S)
    assert figures is not None
    data = json.loads(figures.group(1).replace("<\\/", "</"))
    heatmaps = [f for f in data.values() if f["data"] and f["data"][0].get("type") == "heatmap"]
    labels = {tuple(f["data"][0]["x"]) for f in heatmaps}
    # TPE (lambda_* on [1e-3, 10] -> 5 centred cells) and the grid search line up cell for cell
    assert ("0.001", "0.01", "0.1", "1", "10") in labels
    assert ("0.001", "0.01", "0.1", "1", "10") in labels
    assert ("0.01", "0.1", "1", "10") in labels  # eps on [1e-2, 10]
    assert "lambda_ot 0.001: [3.2e-4, 3.2e-3)" in page


def test_problems_are_in_the_warnings_box(dashboard: Path, dashboard_results: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    box = re.search(r'<div id="warnings" class="warnings">(.*?)</div>', page, re.S)
    assert box is not None
    assert str(dashboard_results / "tpe-exp" / "P2I" / "trials.csv") in box.group(1)


def test_best_config_ready_to_copy(dashboard: Path, dashboard_results: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    config = json.loads((dashboard_results / "grid-exp" / "P2I" / "best_config.json").read_text())
    block = re.search(r'<pre id="cfg-e1">(.*?)</pre>', page, re.S)
    assert block is not None
    assert json.loads(html.unescape(block.group(1))) == config


def test_experiment_files_are_never_touched(dashboard_results: Path, dashboard: Path) -> None:
    before = json.loads((dashboard_results / ".digest.json").read_text())
    rebuilt = build_dashboard(dashboard_results, images=False, n_boot=0)  # regenerating replaces its own output
    assert rebuilt.path == dashboard and dashboard.is_file()
    after = digest(dashboard_results)
    del after[".digest.json"], after["dashboard.html"]
    assert after == before


def test_running_and_unreadable_experiments_are_flagged(tmp_path: Path) -> None:
    running = write_edge_tpe(tmp_path / "run-exp" / "I2P", task="I2P")
    meta = json.loads((running / "experiment.json").read_text())
    (running / "experiment.json").write_text(json.dumps({**meta, "status": "running"}))
    (running / "best_config.json").unlink()
    (tmp_path / "bad" / "C2I").mkdir(parents=True)
    (tmp_path / "bad" / "C2I" / "experiment.json").write_text('{"task": ')
    result = build_dashboard(tmp_path, images=False, n_boot=0)
    assert result.n_experiments == 1
    page = result.path.read_text(encoding="utf-8")
    box = re.search(r'<div id="warnings" class="warnings">(.*?)</div>', page, re.S)
    assert box is not None and "Warnings (2)" in box.group(1)
    assert str(running / "experiment.json") in box.group(1) and "still running" in box.group(1)
    assert str(tmp_path / "bad" / "C2I" / "experiment.json") in box.group(1)
    assert "tpe-exp (running)" in page and "no best_config.json yet" in page


def test_no_experiment_raises(tmp_path: Path) -> None:
    with pytest.raises(NoExperimentsError):
        build_dashboard(tmp_path, images=False)
    assert not (tmp_path / "dashboard.html").exists()


@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_dashboard_renders_in_headless_chromium(dashboard: Path, tmp_path: Path) -> None:
    # every experiment, both views
    dom, log = open_in_chromium(dashboard, "#view=all", tmp_path / "profile")
    assert console_lines(log) == []
    scanner = PlotScanner()
    scanner.feed(dom)
    assert scanner.errors_box_hidden, "the page reported a script error"
    assert len(scanner.plots) == 68
    not_drawn = [pid for pid, p in scanner.plots.items() if not (p["rendered"] and p["svg"])]
    assert not_drawn == []

    # one experiment in the best-reached view: only its plots of that view are shown and drawn
    dom, log = open_in_chromium(dashboard, "#task=e0&mode=best", tmp_path / "profile")
    assert console_lines(log) == []
    scanner = PlotScanner()
    scanner.feed(dom)
    shown = {pid for pid, p in scanner.plots.items() if not p["hidden"]}
    assert shown and all(pid.startswith("e0-") and not pid.endswith("-final") for pid in shown)
    assert len(shown) == 6 * 1 + 5  # 6 heatmaps, history, curves, parallel, importances, marginal effects
    assert all(scanner.plots[pid]["rendered"] and scanner.plots[pid]["svg"] for pid in shown)
    assert "best accuracy reached (includes early-stopped trials)" in dom


def _section(dom: str, key: str) -> str:
    return dom.split(f'<section class="experiment" data-key="{key}"')[1].split("</section>")[0]


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_opens_on_the_final_epoch_with_one_colour_range_per_task_in_chromium(dashboard: Path, tmp_path: Path) -> None:
    dom, log = open_in_chromium(dashboard, "", tmp_path / "profile")  # as a user opens it: no fragment
    assert console_lines(log) == []
    scanner = PlotScanner()
    scanner.feed(dom)
    assert scanner.errors_box_hidden
    shown = [pid for pid, p in scanner.plots.items() if not p["hidden"]]
    views = {pid.rsplit("-", 1)[1] for pid in shown if "-heat" in pid or "-importance-" in pid or "-parallel-" in pid}
    assert shown and views == {"final"}  # the first experiment, in its final-epoch view only
    assert all(scanner.plots[pid]["rendered"] and scanner.plots[pid]["svg"] for pid in shown)
    label = first_group(r'<span class="mode-label" id="mode-label">(.*?)</span>', dom)
    assert label == "final-epoch accuracy (trials that reached the last epoch)"
    # the best trial shown is the cross-task table's, in percent: grid-exp on P2I, 70.0 % there
    line = first_group(r'<p class="mode-final best-line">(.*?)</p>', _section(dom, "e1"))
    row = first_group(r'<tr data-key="e1" class="pick[^"]*">(.*?)</tr>', dom)
    assert "target_acc 70.00 %" in line and "<td>70.0</td>" in row and "g44" in line
    # one colour range for every heatmap of a task: P2I's grid and TPE searches share it
    figures = page_figures(dom)
    tasks = {"e0": "A2D", "e1": "P2I", "e2": "P2I"}
    ranges: dict[str, set] = {}
    for pid, figure in figures.items():
        if "-heat" in pid and figure["data"] and figure["data"][0]["type"] == "heatmap":
            trace = figure["data"][0]
            ranges.setdefault(tasks[pid.split("-")[0]], set()).add((trace["zmin"], trace["zmax"]))
    assert {task: len(found) for task, found in ranges.items()} == {"A2D": 1, "P2I": 1}
    low, high = ranges["P2I"].pop()
    cells = np.concatenate([values(f["data"][0]["z"]).ravel() for pid, f in figures.items()
                            if "-heat" in pid and pid.split("-")[0] in ("e1", "e2") and f["data"]])
    assert (np.nanmin(cells), np.nanmax(cells)) == pytest.approx((low, high))


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_trial_table_sorts_and_marks_the_clicked_trial_in_chromium(dashboard: Path, tmp_path: Path) -> None:
    """Clicks in the page's own script: the "final acc (%)" header twice (descending), then a row."""
    clicks = """<script>setTimeout(function () {
      var table = document.querySelector('table.trials[data-key="e0"]');
      var header = Array.prototype.filter.call(table.querySelectorAll("th"),
                                               function (th) { return th.textContent === "final acc (%)"; })[0];
      header.click(); header.click();
      table.querySelector('tr[data-trial="t1"]').click();
      document.body.setAttribute("data-hash", window.location.hash);
    }, 3000);</script></body>"""
    page = tmp_path / "clicked.html"
    page.write_text(dashboard.read_text(encoding="utf-8").replace("</body>", clicks), encoding="utf-8")
    dom, log = open_in_chromium(page, "", tmp_path / "profile")
    assert console_lines(log) == []
    table = _section(dom, "e0").split('<table class="trials sortable"')[1].split("</table>")[0]
    assert re.search(r'<th data-type="num" title="click to sort" aria-sort="descending">final acc \(%\)</th>', table)
    order = re.findall(r'<tr class="trial-row[^"]*" data-trial="([^"]+)"', table)
    # t3 90 %, t2 80, t1 71, t0 62; then the trials without a final accuracy, in their previous order
    assert order == ["t3", "t2", "t1", "t0", "t4", "t5", "t6"]
    assert re.findall(r'<tr class="trial-row selected" data-trial="([^"]+)"', table) == ["t1"]
    marked = dict(re.findall(r'<div class="plot[^"]*" id="(e0-[^"]+)"[^>]*data-marked="([^"]*)"', dom))
    assert marked["e0-history"] == "t1" and marked["e0-curves"] == "t1" and marked["e0-heat0-final"] == "t1"
    assert re.search(r'data-hash="#task=e0&amp;mode=final&amp;trial=t1"', dom)


def test_searches_of_different_budgets_are_labelled_where_they_are_compared(tmp_path: Path) -> None:
    same = tmp_path / "same"
    write_edge_tpe(same / "a" / "A2D", task="A2D")
    write_edge_tpe(same / "b" / "P2I", task="P2I")
    page = build_dashboard(same, images=False, n_boot=0).path.read_text(encoding="utf-8")
    assert "All 2 searches had one budget: 7 trials × 4 epochs" in page and "Different budgets" not in page
    # a second search of P2I, twice as long: the table says it had another budget, and which
    longer = with_meta(write_edge_tpe(same / "c" / "P2I", task="P2I"), name="longer", max_epochs=8)
    page = build_dashboard(same, images=False, n_boot=0).path.read_text(encoding="utf-8")
    note = first_group(r'<p class="budget-note differs">(.*?)</p>', page)
    assert "Different budgets: these searches are not compared as equals." in note
    assert "epochs per trial (max_epochs): 4 (A2D/tpe-exp, P2I/tpe-exp), 8 (P2I/longer)" in note
    assert "trials planned" not in note and "searched space" not in note  # only what differs
    assert page.count('<span class="budget-max_epochs differs">') == 3
    assert '<span class="budget-max_epochs differs">8 epochs</span>' in page and longer.is_dir()


#: Text a user controls, shown as text wherever it appears: an element that would run a script, a tag, quotes, an ampersand.
EVIL = '<script>document.body.dataset.pwned=1</script><img src=x onerror="this.id=\'pwned\'"> "q" \'s\' A&B'


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_names_and_labels_a_user_controls_are_shown_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task, an experiment name and a metric's label with markup in them: the page holds them escaped
    (autoescaping, whatever the call site), and a browser shows them as text and runs nothing."""
    import dataclasses

    from ssot.results import metrics

    folder = write_edge_tpe(tmp_path / "runs" / "exp" / "A2D", task="A2D")
    meta = json.loads((folder / "experiment.json").read_text())
    (folder / "experiment.json").write_text(json.dumps({**meta, "task": EVIL, "name": EVIL}))
    real = metrics.metric
    monkeypatch.setattr(metrics, "metric", lambda name: dataclasses.replace(real(name), label=EVIL))
    page = build_dashboard(tmp_path / "runs", images=False, n_boot=0).path
    text = page.read_text(encoding="utf-8")
    outside_scripts = re.sub(r"<script\b[^>]*>.*?</script>", "", text, flags=re.S)
    assert "<img" not in outside_scripts and "<script>window" not in text  # nothing became markup, no script ended early
    escaped = html.escape(EVIL).replace("&quot;", "&#34;").replace("&#x27;", "&#39;")  # markupsafe's entities
    assert outside_scripts.count(escaped) >= 4  # the selector, the section's title, the cross-task table, the best-trial line
    dom, log = open_in_chromium(page, "#view=all", tmp_path / "profile")
    assert console_lines(log) == []
    assert "data-pwned" not in dom and 'id="pwned"' not in dom
    shown = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)))
    assert shown.count(EVIL) >= 4 and f"best final target_acc (max, {EVIL})" in shown
