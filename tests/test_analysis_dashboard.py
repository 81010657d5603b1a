"""Tests of the dashboard: the HTML file, the command line, static images, and a real browser.

The browser test opens the generated dashboard in Debian's headless ``chromium`` (installed by
``.ci/run``) and checks that the page logs nothing to the console, reports no script error, and
that every plot container holds a rendered Plotly SVG. It is skipped when chromium is absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import plotly.graph_objects as go
import pytest

from analysis.dashboard import build_dashboard, export_images
from analysis.data.experiments import NoExperimentsError
from experiment_fixtures import write_edge_tpe, write_paper_grid

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tasks (a grid and a TPE search on P2I, a TPE search on A2D), one truncated file."""
    root = tmp_path_factory.mktemp("results")
    write_paper_grid(root / "grid-exp" / "P2I")
    write_edge_tpe(root / "tpe-exp" / "A2D")
    truncated = write_edge_tpe(root / "tpe-exp" / "P2I", task="P2I")
    text = (truncated / "trials.csv").read_text()
    (truncated / "trials.csv").write_text(text[: len(text) - 40])
    (root / ".digest.json").write_text(json.dumps(_digest(root)))
    return root


@pytest.fixture(scope="module")
def dashboard(results: Path) -> Path:
    return build_dashboard(results, images=False).path


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*")) if p.is_file()
    }


# ------------------------------------------------------------------------------------------
# The HTML file
# ------------------------------------------------------------------------------------------


def test_dashboard_is_self_contained(dashboard: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    assert dashboard.name == "dashboard.html"
    assert not re.search(r"<script[^>]+src=", page)
    assert "Plotly" in page and len(page) > 3_000_000  # plotly.js itself is inlined
    assert not re.search(r"<(link|img|iframe)[^>]+(href|src)=\"https?:", page)


def test_dashboard_has_every_part(dashboard: Path, results: Path) -> None:
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
    # 1 pair x 2 views; + curves, and per view parallel coordinates, importances, marginal effects
    assert len(ids) == 2 * (6 * 3 + 1 + 3 * 3) + (1 * 2 + 1 + 2 * 3)


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


def test_problems_are_in_the_warnings_box(dashboard: Path, results: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    box = re.search(r'<div id="warnings" class="warnings">(.*?)</div>', page, re.S)
    assert box is not None
    assert str(results / "tpe-exp" / "P2I" / "trials.csv") in box.group(1)


def test_best_config_ready_to_copy(dashboard: Path, results: Path) -> None:
    page = dashboard.read_text(encoding="utf-8")
    config = json.loads((results / "grid-exp" / "P2I" / "best_config.json").read_text())
    block = re.search(r'<pre id="cfg-e1">(.*?)</pre>', page, re.S)
    assert block is not None
    assert json.loads(block.group(1).replace("&quot;", '"')) == config


def test_experiment_files_are_never_touched(results: Path, dashboard: Path) -> None:
    before = json.loads((results / ".digest.json").read_text())
    rebuilt = build_dashboard(results, images=False)  # regenerating replaces its own output
    assert rebuilt.path == dashboard and dashboard.is_file()
    after = _digest(results)
    del after[".digest.json"], after["dashboard.html"]
    assert after == before


def test_running_and_unreadable_experiments_are_flagged(tmp_path: Path) -> None:
    running = write_edge_tpe(tmp_path / "run-exp" / "I2P", task="I2P")
    meta = json.loads((running / "experiment.json").read_text())
    (running / "experiment.json").write_text(json.dumps({**meta, "status": "running"}))
    (running / "best_config.json").unlink()
    (tmp_path / "bad" / "C2I").mkdir(parents=True)
    (tmp_path / "bad" / "C2I" / "experiment.json").write_text('{"task": ')
    result = build_dashboard(tmp_path, images=False)
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


# ------------------------------------------------------------------------------------------
# Static images
# ------------------------------------------------------------------------------------------


def test_missing_kaleido_is_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kaleido", None)  # makes "import kaleido" fail
    written, problems = export_images({tmp_path / "fig" / "a": go.Figure()}, "png")
    assert written == [] and len(problems) == 1
    assert problems[0].path == tmp_path / "fig"
    assert "kaleido is not installed" in problems[0].message
    assert "HTML dashboard is complete" in problems[0].message


def _can_export() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return bool(os.environ.get("BROWSER_PATH") or shutil.which("chromium")
                or shutil.which("google-chrome") or shutil.which("chrome"))


@pytest.mark.skipif(not _can_export(), reason="static export needs kaleido and Chromium")
def test_static_heatmap_images(results: Path, tmp_path: Path) -> None:
    from analysis.data.experiments import load_experiments
    from analysis.plotly.heatmap import heatmap_figure
    from analysis.data.bins import heatmap_info
    from analysis.data.frames import final_results, trial_table

    experiments, _ = load_experiments(results)
    grid = next(e for e in experiments if e.search == "grid")
    info = heatmap_info(final_results(trial_table(grid)), "lambda_ot", "lambda_ent", grid.space)
    figure = heatmap_figure(info, "grid")
    written, problems = export_images({tmp_path / "a": figure, tmp_path / "b": figure}, "svg")
    assert problems == [] and [p.name for p in written] == ["a.svg", "b.svg"]
    assert "<svg" in written[0].read_text()[:500]


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ""}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_cli_script_writes_the_dashboard_and_names_bad_files(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.html"
    proc = _run([str(REPO / "analysis" / "sensitivity.py"), str(results), "--out", str(out),
                 "--no-images"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and "wrote" in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(results / "tpe-exp" / "P2I" / "trials.csv") in lines[0]


def test_cli_without_experiments_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run(["-m", "analysis.sensitivity", str(tmp_path)], cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr and str(tmp_path) in proc.stderr


# ------------------------------------------------------------------------------------------
# A real browser
# ------------------------------------------------------------------------------------------


class _PlotScanner(HTMLParser):
    """Collect each ``div.plot``: is it hidden, rendered, and does it hold a Plotly SVG?"""

    def __init__(self) -> None:
        super().__init__()
        self.plots: dict[str, dict[str, bool]] = {}
        self._stack: list[tuple[str, str | None]] = []  # (tag, plot id it opens)
        self._hidden_depth: list[bool] = []
        self.errors_box_hidden = True

    _VOID = {"br", "img", "input", "meta", "link", "hr", "path", "rect", "line", "circle",
             "stop", "use", "image"}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if attributes.get("id") == "js-errors":
            self.errors_box_hidden = "hidden" in attributes
        hidden = "hidden" in attributes or bool(self._hidden_depth and self._hidden_depth[-1])
        opened = None
        if tag == "div" and "plot" in classes and attributes.get("id"):
            opened = attributes["id"]
            self.plots[opened] = {"hidden": hidden, "rendered": attributes.get("data-rendered")
                                  == "true", "svg": False}
        if tag == "svg" and "main-svg" in classes:
            for _, plot in reversed(self._stack):
                if plot:
                    self.plots[plot]["svg"] = True
                    break
        if tag not in self._VOID:
            self._stack.append((tag, opened))
            self._hidden_depth.append(hidden)

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            open_tag, _ = self._stack.pop()
            self._hidden_depth.pop()
            if open_tag == tag:
                break


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _open_in_chromium(page: Path, fragment: str, profile: Path) -> tuple[str, str]:
    """Load the page headless, let its scripts run, return (rendered DOM, browser log)."""
    command = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
        "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000",
        "--window-size=1400,2000", "--dump-dom", page.as_uri() + fragment,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _console_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_dashboard_renders_in_headless_chromium(dashboard: Path, tmp_path: Path) -> None:
    # every experiment, both views
    dom, log = _open_in_chromium(dashboard, "#view=all", tmp_path / "profile")
    assert _console_lines(log) == []
    scanner = _PlotScanner()
    scanner.feed(dom)
    assert scanner.errors_box_hidden, "the page reported a script error"
    assert len(scanner.plots) == 65
    not_drawn = [pid for pid, p in scanner.plots.items() if not (p["rendered"] and p["svg"])]
    assert not_drawn == []

    # one experiment in the best-reached view: only its plots of that view are shown and drawn
    dom, log = _open_in_chromium(dashboard, "#task=e0&mode=best", tmp_path / "profile")
    assert _console_lines(log) == []
    scanner = _PlotScanner()
    scanner.feed(dom)
    shown = {pid for pid, p in scanner.plots.items() if not p["hidden"]}
    assert shown and all(pid.startswith("e0-") and not pid.endswith("-final") for pid in shown)
    assert len(shown) == 6 * 1 + 4  # 6 heatmaps, curves, parallel, importances, marginal effects
    assert all(scanner.plots[pid]["rendered"] and scanner.plots[pid]["svg"] for pid in shown)
    assert "best accuracy reached (includes early-stopped trials)" in dom
