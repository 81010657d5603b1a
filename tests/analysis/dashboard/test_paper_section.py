"""`analysis/dashboard/paper_section.py`: the paper's other analyses in the dashboard."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from analysis.dashboard import build_dashboard
from analysis.dashboard.paper_section import PaperSection, paper_section
from analysis.data.experiments import NoExperimentsError
from tests.fixtures import first_group
from tests.fixtures.browser import chromium, open_in_chromium
from tests.fixtures.figures import values
from tests.fixtures.paper import feature_map_data, synthetic_record, write_record


@pytest.fixture(scope="module")
def page(paper_results: Path) -> tuple[str, dict]:
    result = build_dashboard(paper_results, images=False)
    text = result.path.read_text()
    data = first_group(r'<script type="application/json" id="paper-figures">(.*?)</script>', text, re.S)
    return text, json.loads(data.replace("<\\/", "</"))


def test_a_folder_of_run_records_alone_gets_a_dashboard(paper_results: Path, page: tuple[str, dict]) -> None:
    text, figures = page
    for heading in ("Class weights vs truth", "OT solvers", "Feature maps"):
        assert f">{heading}</h3>" in text
    # class weights of 4 records (full and the 3 solvers; no_m has none), 1 solver comparison, 1 map
    assert sorted(figures) == [f"paper-cw{i}" for i in range(4)] + ["paper-solvers0", "paper-tsne0"]
    assert "1 run record(s) without class weights to draw" in text
    assert re.search(r"abl[/\\]broken[/\\]runs[/\\]toy_seed1.json: The run record .* cannot be read", text)
    assert "other.npz" not in text and "best_config.json" not in text
    with pytest.raises(NoExperimentsError):  # nothing of either kind: still the one-line error
        build_dashboard(paper_results / "maps" / "missing", images=False)


def test_class_weights_against_the_truth(page: tuple[str, dict]) -> None:
    text, figures = page
    # the table's last-epoch outlier mass is the record's last value; source-only 0.5
    masses = re.findall(r'<td class="outlier-mass">([^<]*)</td>', text)
    assert masses[0] == "0.1000" and masses[1:] == ["0.0000"] * 3
    fig = figures["paper-cw0"]
    assert "mass on outlier classes at the last epoch: 0.1000" in fig["layout"]["title"]["text"]
    lines = {t["name"]: t for t in fig["data"] if t["type"] == "scatter" and t.get("name")}
    assert set(lines) == {"a", "b", "c (outlier)", "d (outlier)"}
    assert lines["c (outlier)"]["line"]["dash"] == "dash" and lines["a"]["line"]["dash"] == "solid"
    # the estimate p_s * m per epoch, epoch 0 = source-only
    np.testing.assert_allclose(values(lines["a"]["x"]), [0, 1, 2, 3, 4])
    np.testing.assert_allclose(values(lines["a"]["y"]), [0.25, 0.3125, 0.375, 0.4375, 0.45])
    np.testing.assert_allclose(values(lines["c (outlier)"]["y"])[-1], 0.05)
    truth = [t for t in fig["data"] if t["type"] == "bar" and t["name"] == "true (oracle)"][0]
    np.testing.assert_allclose(values(truth["y"]), [0.5, 0.5, 0, 0])


def test_solver_comparison_in_the_papers_order(page: tuple[str, dict]) -> None:
    text, figures = page
    assert re.findall(r"<td>solv</td><td>toy</td><td>(\w+)</td>", text) == ["net", "vector", "sinkhorn"]
    assert re.findall(r'<td class="time-per-epoch">([^<]*)</td>', text) == ["2.00", "3.00", "3.00"]
    fig = figures["paper-solvers0"]
    curves = [t for t in fig["data"] if t["type"] == "scatter"]
    assert [c["name"] for c in curves] == ["Net. Param. (ours)", "vector potential (SGD)", "Sinkhorn"]
    np.testing.assert_allclose(values(curves[0]["y"]), [1.0, 0.5, 1 / 3, 0.25])


def test_feature_map_marks_domains_and_outliers(page: tuple[str, dict]) -> None:
    _, figures = page
    data = feature_map_data()
    traces = figures["paper-tsne0"]["data"]
    # every point once: 2 models x 40 points
    assert sum(len(values(t["x"])) for t in traces) == len(data["xy"])
    target = [t for t in traces if t["name"].startswith("target")]
    assert {t["marker"]["symbol"] for t in target} == {"cross-thin-open"}
    assert sum(len(values(t["x"])) for t in target) == int((data["domain"] == 1).sum())
    outliers = [t for t in traces if "(outlier)" in t["name"]]
    assert {t["marker"]["color"] for t in outliers} == {"#bbbbbb"} and {t["name"].split()[1] for t in outliers} == {"2", "3"}
    first = [t for t in traces if t["name"] == "source 0" and t["xaxis"] == "x"][0]
    sel = (data["model"] == 0) & (data["domain"] == 0) & (data["label"] == 0)
    np.testing.assert_allclose(values(first["x"]), data["xy"][sel, 0])


def test_the_page_puts_the_section_in_its_main_part_and_an_empty_one_nowhere(tmp_path: Path) -> None:
    assert not paper_section(tmp_path) and not PaperSection()
    write_record(tmp_path / "run.json", synthetic_record())  # a --out record directly in the folder
    assert paper_section(tmp_path)
    page = build_dashboard(tmp_path, images=False, n_boot=0).path.read_text(encoding="utf-8")
    assert page.count("The paper's other analyses") == 1 and page.count('id="paper-figures"') == 1
    assert page.index("The paper's other analyses") < page.index('id="paper-figures"') < page.index("</main>")
    assert "<script type=\"text/javascript\">\nvar FIGURES" in page[page.index("</main>"):]  # the page's own script after it


@pytest.mark.slow  # a headless browser
@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_paper_section_renders_in_headless_chromium(page: tuple[str, dict], paper_results: Path, tmp_path: Path) -> None:
    dom, _ = open_in_chromium(paper_results / "dashboard.html", "", tmp_path / "profile")
    drawn = re.findall(r'<div [^>]*id="(paper-[^"]+)"[^>]*data-rendered="true"', dom)
    assert sorted(drawn) == sorted(page[1])
    assert re.search(r'<div id="js-errors" class="warnings" hidden', dom)
