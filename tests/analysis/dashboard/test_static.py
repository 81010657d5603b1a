"""`analysis/dashboard/static.py` and `images.py`: figures for papers (matplotlib, or kaleido)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from analysis.dashboard import build_dashboard, export_images
from tests.fixtures.experiments import asha_experiment


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
def test_static_heatmap_images(dashboard_results: Path, tmp_path: Path) -> None:
    from analysis.charts.heatmap import heatmap_figure
    from analysis.data.bins import heatmap_info
    from analysis.data.experiments import load_experiments
    from analysis.data.frames import final_results, trial_table

    experiments, _ = load_experiments(dashboard_results)
    grid = next(e for e in experiments if e.search == "grid")
    info = heatmap_info(final_results(trial_table(grid)), "lambda_ot", "lambda_ent", grid.space)
    figure = heatmap_figure(info, "grid")
    written, problems = export_images({tmp_path / "a": figure, tmp_path / "b": figure}, "svg")
    assert problems == [] and [p.name for p in written] == ["a.svg", "b.svg"]
    assert "<svg" in written[0].read_text()[:500]


def test_static_pdfs_without_a_browser(views_results: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def no_browser(*args, **kwargs):
        raise RuntimeError("kaleido must not be used for the default static figures")

    # patched before kaleido is hidden: plotly.io caches whether kaleido imports when it first
    # loads its kaleido module, and later tests need the real answer
    monkeypatch.setattr("plotly.io.write_images", no_browser)
    monkeypatch.setattr("plotly.io.write_image", no_browser)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no chromium on it
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setitem(sys.modules, "kaleido", None)  # "import kaleido" fails
    result = build_dashboard(views_results / "asha", out=tmp_path / "d.html", figures_dir=tmp_path / "fig", n_boot=0)
    folder = tmp_path / "fig"
    pdfs = sorted(p.name for p in folder.glob("*.pdf"))
    # one per heatmap of the default view (6 pairs) + the learning curves
    expected = {f"digits__asha__{x}__{y}.pdf"
                for x, y in [("lambda_ot", "lambda_ent"), ("lambda_ot", "eps"),
                             ("lambda_ot", "potential_width"), ("lambda_ent", "eps"),
                             ("lambda_ent", "potential_width"), ("eps", "potential_width")]}
    assert set(pdfs) == expected | {"digits__asha__curves.pdf"}
    expected.add("digits__asha__curves.pdf")
    for name in pdfs:
        data = (folder / name).read_bytes()
        assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:] and len(data) > 5_000, name
        png = (folder / name).with_suffix(".png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000, name
    assert len(result.images) == 2 * len(expected)
    assert not [p for p in result.problems if "static" in p.message]
    # the files draw the default view (the final epoch), from the same info as the dashboard's
    # Plotly figure, on the same colour range
    from analysis.dashboard.sections import prepare, view_figures

    experiment, _ = asha_experiment(views_results)
    made = view_figures(prepare(experiment, "e0", "decades"), (0.5, 0.9), n_boot=0)
    static = made.static["digits__asha__lambda_ot__lambda_ent"]
    drawn = static.draw()
    texts = [t.get_text() for t in drawn.texts]
    assert "final-epoch accuracy (trials that reached the last epoch); 3 trials" in texts
    assert texts[1] in _subtitle(static.plotly.to_plotly_json())
    assert drawn.axes[0].images[0].get_clim() == (50.0, 90.0)
    assert (static.plotly.data[0].zmin, static.plotly.data[0].zmax) == (50.0, 90.0)


def test_plotly_backend_without_kaleido_is_one_warning(views_results: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kaleido", None)
    with pytest.raises(ValueError, match="'formats' parameter"):
        build_dashboard(views_results, out=tmp_path / "x.html", image_format=["jpg"])
    assert not (tmp_path / "x.html").exists()
    result = build_dashboard(views_results / "grid-exp", out=tmp_path / "d.html",  # 1 heatmap
                             figures_dir=tmp_path / "f", image_backend="plotly", image_format="png", n_boot=0)
    assert result.images == [] and not (tmp_path / "f").exists()
    assert ["kaleido is not installed" in p.message for p in result.problems] == [True]


def _subtitle(figure: dict) -> str:
    return figure["layout"]["title"]["text"]
