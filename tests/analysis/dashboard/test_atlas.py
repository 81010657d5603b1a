"""`analysis/dashboard/atlas.py`: the atlas page and the dashboard's atlas section, drawn in headless
Chromium, with task names full of HTML characters shown as text."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from analysis.dashboard import atlas as atlas_module
from analysis.dashboard import build_dashboard
from analysis.dashboard.atlas import build_atlas_page
from analysis.data.experiments import load_experiments
from analysis.data.transfer import find_atlas_transfer
from ssot.results.searches import task_searches
from ssot.results.transfer import DEFAULT_SOURCE
from tests.fixtures import first_group
from tests.fixtures.browser import PlotScanner, chromium, console_lines, open_in_chromium, page_text
from tests.fixtures.experiments import write_atlas_results, write_transfer_results

#: Task names a page must show as text: an element that would run a script, a tag, quotes and an ampersand.
NAMES = ("<img src=x onerror=window.__pwned=1>", "<b>bold", 'A&B "q"')
SECTIONS = ("atlas-importance", "atlas-effects", "atlas-tunability", "atlas-transfer", "atlas-rungs", "atlas-coverage")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("html-names")
    folders = write_atlas_results(root, NAMES, n_trials=12)
    accuracy = {(s, t, 0): 0.5 + 0.1 * (s == t) for s in [*NAMES, DEFAULT_SOURCE] for t in NAMES}
    write_transfer_results(root / "transfer", folders, accuracy, seeds=(0,))
    return root


def _scan(page: Path, profile: Path, fragment: str = "") -> tuple[str, PlotScanner]:
    dom, log = open_in_chromium(page, fragment, profile)
    assert console_lines(log) == []
    scanner = PlotScanner("atlas-plot")
    scanner.feed(dom)
    assert scanner.errors_box_hidden, "the page reported a script error"
    return dom, scanner


def _escaped(dom: str) -> None:
    """Every name is shown as text, in the tables and in the figures' SVG, and none became markup."""
    body = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    assert "<img" not in body and "<b>bold" not in body
    text = page_text(dom)
    svg = {html.unescape(t) for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", body)}
    for name in NAMES:
        assert name in text, name
        assert name in svg, name  # e.g. a heatmap's axis label, as Plotly draws it


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_atlas_page_draws_every_section_and_escapes_names(results: Path, tmp_path: Path) -> None:
    experiments, _ = load_experiments(results)
    searches = task_searches(experiments)
    transfer, notes = find_atlas_transfer([results], [s.task for s in searches])
    page = build_atlas_page(searches, tmp_path / "out", root=str(results), transfer=transfer, notes=notes, n_bootstrap=3,
                            images=False).path
    dom, scanner = _scan(page, tmp_path / "profile")
    for section in SECTIONS:
        assert f'id="{section}"' in dom, section
    assert len(scanner.plots) == 8
    not_drawn = [pid for pid, p in scanner.plots.items() if not (p["rendered"] and p["svg"])]
    assert not_drawn == []
    _escaped(dom)


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_dashboard_shows_the_atlas_when_several_tasks_are_finished(results: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(atlas_module, "DASHBOARD_BOOTSTRAP", 3)  # the section's numbers are the atlas's, tested there
    dashboard = build_dashboard(results, out=tmp_path / "d.html", images=False)
    text = dashboard.path.read_text(encoding="utf-8")
    assert text.count('id="atlas"') == 1 and 'id="atlas-figures"' in text
    figures = json.loads(first_group(r'<script type="application/json" id="atlas-figures">(.*?)</script>', text, re.S).replace("<\\/", "</"))
    assert len(figures) == 8
    dom, scanner = _scan(dashboard.path, tmp_path / "profile", "#view=all")
    assert len(scanner.plots) == 8 and all(p["rendered"] and p["svg"] for p in scanner.plots.values())
    _escaped(dom)


def test_one_task_gets_no_atlas(tmp_path: Path) -> None:
    write_atlas_results(tmp_path, ("digits",), n_trials=4)
    text = build_dashboard(tmp_path, images=False).path.read_text(encoding="utf-8")
    assert 'id="atlas"' not in text
