"""Multi-fidelity views, importances and marginal effects fitted on every trial of a view, partial
(still running) experiments, and static PDF/PNG figures written without a browser.

The experiments are written by :mod:`experiment_fixtures` (no Ray, no training). The ASHA one has
a known structure: the accuracy at every epoch depends on lambda_OT only (plus a per-epoch
offset), 17 of its 20 trials stop at the rung of epoch 5, as in issue 9's digits search.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.dashboard import build_dashboard
from analysis.data.experiments import load_experiment
from analysis.data.frames import trial_table
from analysis.data.importance import MIN_TRIALS, importance_infos
from analysis.data.marginal import marginal_infos
from analysis.data.views import (
    View,
    asha_rungs,
    default_view,
    epoch_results,
    experiment_views,
    view_results,
)
from experiment_fixtures import (
    PAPER_GRID,
    TPE_SPACE,
    grid_accuracy,
    grid_space,
    trial_rows,
    EDGE_EPOCHS,
    EDGE_TRIALS,
    write_experiment,
)
from ssot.results.experiment import EXPERIMENT_FILE
from ssot.results.trials import COMPLETED, EARLY_STOPPED, RUNNING

REPO = Path(__file__).resolve().parent.parent
ASHA = {"early_stop": True, "grace_period": 5, "reduction_factor": 3}
N_TRIALS, MAX_EPOCHS, N_COMPLETED = 20, 15, 3


def truth(lambda_ot: float) -> float:
    """The known accuracy at epoch 5: a function of lambda_OT alone, increasing in it."""
    return 0.6 + 0.06 * math.log10(lambda_ot)


def _asha_rows(status_of_running: bool = False) -> list[dict]:
    rng = np.random.default_rng(0)
    lambda_ot = 10 ** rng.uniform(-3, 1, N_TRIALS)
    keep = set(np.argsort(-lambda_ot)[:N_COMPLETED])  # ASHA keeps the best ones
    rows = []
    for i in range(N_TRIALS):
        config = {"lambda_ot": float(lambda_ot[i]), "lambda_ent": float(10 ** rng.uniform(-3, 1)),
                  "eps": float(10 ** rng.uniform(-2, 1)), "potential_width": int(rng.choice([64, 256, 1024]))}
        epochs = MAX_EPOCHS if i in keep else 5
        curve = [truth(config["lambda_ot"]) + 0.01 * (e - 5) for e in range(1, epochs + 1)]
        status = COMPLETED if i in keep else EARLY_STOPPED
        if status_of_running and i >= N_TRIALS - 4:  # the last four are still at epochs 1..4
            curve, status = curve[: i - (N_TRIALS - 5)], RUNNING
        rows += trial_rows("digits", "tpe", f"t{i:02d}", config, curve, status)
    return rows


def _with_meta(folder: Path, **extra) -> Path:
    path = folder / EXPERIMENT_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **extra}))
    return folder


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("views")
    _with_meta(write_experiment(root / "asha" / "digits", _asha_rows(), task="digits", search="tpe",
                                space=TPE_SPACE, max_epochs=MAX_EPOCHS, name="asha", dataset="digits"), **ASHA)
    grid = [row for i, ot in enumerate(PAPER_GRID) for j, ent in enumerate(PAPER_GRID)
            for row in trial_rows("P2I", "grid", f"g{i}{j}", {"lambda_ot": ot, "lambda_ent": ent, "eps": 1.0,
                                  "potential_width": 256}, [0.4, grid_accuracy(ot, ent)], "completed")]
    write_experiment(root / "grid-exp" / "P2I", grid, task="P2I", search="grid", space=grid_space(),
                     max_epochs=2, name="grid-exp", dataset="imageclef")  # no scheduler: final view
    running = write_experiment(root / "live" / "digits", _asha_rows(True), task="digits",
                               search="tpe", space=TPE_SPACE, max_epochs=MAX_EPOCHS, name="live",
                               status=RUNNING, dataset="digits")
    _with_meta(running, **ASHA)
    return root


def _asha(results: Path):
    experiment, _ = load_experiment(results / "asha" / "digits")
    return experiment, trial_table(experiment)


# ------------------------------------------------------------------------------------------
# Rungs and views
# ------------------------------------------------------------------------------------------


def test_rungs_are_rays() -> None:
    async_hyperband = pytest.importorskip("ray.tune.schedulers.async_hyperband")
    for grace, factor, max_t in [(5, 3, 15), (1, 2, 8), (1, 10, 1000), (2, 3, 50), (1, 3, 27), (4, 4, 5)]:
        bracket = async_hyperband._Bracket(min_t=grace, max_t=max_t, reduction_factor=factor, s=0)
        expected = tuple(sorted(int(r) for r, _ in bracket._rungs))
        meta = {"early_stop": True, "grace_period": grace, "reduction_factor": factor, "max_epochs": max_t}
        assert asha_rungs(meta) == expected, (grace, factor, max_t)
    assert asha_rungs({"early_stop": False, "max_epochs": 15}) == ()
    assert asha_rungs({**ASHA, "max_epochs": 5}) == ()  # tune/ uses no scheduler then
    assert asha_rungs({"max_epochs": 15}) is None  # not recorded: the reader falls back


def test_a_view_per_rung_compares_every_trial_at_that_epoch(results: Path) -> None:
    experiment, table = _asha(results)
    views, chosen = experiment_views(experiment, table)
    assert [(v.key, v.n_trials, v.epoch) for v in views] == [
        ("epoch5", N_TRIALS, 5), ("final", N_COMPLETED, MAX_EPOCHS), ("best", N_TRIALS, None)]
    at5 = chosen["epoch5"].set_index("trial_id")
    expected = {row["trial_id"]: truth(row["lambda_ot"]) for row in table.to_dict("records")}
    assert at5["acc"].to_dict() == pytest.approx(expected, abs=6e-5)  # csv rounds to 4 digits
    # the value at epoch 5, not the completed trials' final (+0.10) or best accuracy
    assert chosen["best"].set_index("trial_id")["acc"].max() == pytest.approx(at5["acc"].max() + 0.10, abs=1e-4)
    assert default_view(views, len(table)) == "epoch5"
    with pytest.raises(ValueError, match="'view' parameter"):
        view_results(experiment, table, "epoch")


def test_default_view_rule() -> None:
    def views(*counts: tuple[str, int]) -> list[View]:
        return [View(key, key, n) for key, n in counts] + [View("best", "best", 99)]

    assert default_view(views(("epoch1", 20), ("epoch3", 10), ("final", 3)), 20) == "epoch3"
    assert default_view(views(("epoch1", 20), ("epoch3", 12), ("final", 10)), 20) == "final"
    assert default_view(views(("epoch1", 8), ("epoch3", 2), ("final", 1)), 20) == "epoch1"
    assert default_view(views(("final", 1)), 20) == "final"  # no rung: not an ASHA search


def test_old_folders_take_the_rungs_where_trials_stopped(tmp_path: Path) -> None:
    rows = [row for trial_id, ot, ent, eps, width, accuracies, status in EDGE_TRIALS
            for row in trial_rows("A2D", "tpe", trial_id, {"lambda_ot": ot, "lambda_ent": ent, "eps": eps,
                                  "potential_width": width}, accuracies, status)]
    folder = write_experiment(tmp_path / "tpe" / "A2D", rows, task="A2D", search="tpe", space=TPE_SPACE,
                              max_epochs=EDGE_EPOCHS, dataset="office31")  # no scheduler recorded
    experiment, _ = load_experiment(folder)
    table = trial_table(experiment)
    views, chosen = experiment_views(experiment, table)
    assert [v.key for v in views] == ["epoch2", "final", "best"]  # t4 was stopped after epoch 2
    # every trial that recorded epoch 2, whatever happened later; t5's placeholder epoch 2 is no
    # accuracy, and t6 errored after epoch 1
    assert sorted(chosen["epoch2"]["trial_id"]) == ["t0", "t1", "t2", "t3", "t4"]
    assert epoch_results(experiment, table, 1)["trial_id"].nunique() == 7


# ------------------------------------------------------------------------------------------
# Importances and marginal effects
# ------------------------------------------------------------------------------------------


def test_both_evaluators_find_the_one_hyperparameter_that_matters(results: Path) -> None:
    experiment, table = _asha(results)
    views, chosen = experiment_views(experiment, table)
    fanova, ped = importance_infos(chosen["epoch5"], experiment.space)
    for info in (fanova, ped):
        assert info.n_trials == N_TRIALS and info.note == ""
        assert max(info.importances, key=info.importances.get) == "lambda_ot", info
        assert sum(info.importances.values()) == pytest.approx(1.0)
    assert fanova.importances["lambda_ot"] > 0.8
    assert fanova.label.startswith("fANOVA") and ped.label.startswith("PED-ANOVA")
    # the final-epoch view has 3 trials: nothing is fitted, and the reason is given
    for info in importance_infos(chosen["final"], experiment.space):
        assert info.importances == {} and f"at least {MIN_TRIALS} trials" in info.note


def test_marginal_effect_follows_the_truth(results: Path) -> None:
    experiment, table = _asha(results)
    _, chosen = experiment_views(experiment, table)
    infos = {i.param: i for i in marginal_infos(chosen["epoch5"], experiment.space)}
    assert set(infos) == {"lambda_ot", "lambda_ent", "eps", "potential_width"}
    effect = infos["lambda_ot"]
    assert effect.kind == "log" and effect.n_trials == N_TRIALS and effect.note == ""
    grid = np.asarray(effect.grid)
    truths = np.array([truth(x) for x in grid])
    inside = (grid >= effect.trial_values.min()) & (grid <= effect.trial_values.max())
    assert np.corrcoef(effect.estimate[inside], truths[inside])[0, 1] > 0.95
    assert np.abs(effect.estimate[inside] - truths[inside]).max() < 0.05
    assert np.all(np.diff(effect.estimate) >= -0.01)  # monotone up to forest noise
    spread = np.ptp(effect.estimate)
    for other in ("lambda_ent", "eps", "potential_width"):
        assert np.ptp(infos[other].estimate) < spread / 3, other
    few = marginal_infos(chosen["final"], experiment.space)
    assert all(len(i.estimate) == 0 and f"at least {MIN_TRIALS}" in i.note for i in few)


# ------------------------------------------------------------------------------------------
# The dashboard: views, counts on every figure, partial experiments, static figures
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(results: Path):
    """The dashboard of the three experiments (HTML only)."""
    result = build_dashboard(results, images=False)
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


def test_static_pdfs_without_a_browser(results: Path, tmp_path: Path,
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
    result = build_dashboard(results / "asha", out=tmp_path / "d.html", figures_dir=tmp_path / "fig")
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
    # the files draw the default view, from the same info as the dashboard's Plotly figure
    from analysis.dashboard.sections import view_figures

    experiment, table = _asha(results)
    static = view_figures(experiment, table, "e0", "decades").static["digits__asha__lambda_ot__lambda_ent"]
    texts = [t.get_text() for t in static.draw().texts]
    assert "accuracy at epoch 5 (every trial that reached it, an ASHA rung); 20 trials" in texts
    assert texts[1] in _subtitle(static.plotly.to_plotly_json())


def test_plotly_backend_without_kaleido_is_one_warning(results: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kaleido", None)
    with pytest.raises(ValueError, match="'formats' parameter"):
        build_dashboard(results, out=tmp_path / "x.html", image_format=["jpg"])
    assert not (tmp_path / "x.html").exists()
    result = build_dashboard(results / "grid-exp", out=tmp_path / "d.html",  # 1 heatmap
                             figures_dir=tmp_path / "f", image_backend="plotly", image_format="png")
    assert result.images == [] and not (tmp_path / "f").exists()
    assert ["kaleido is not installed" in p.message for p in result.problems] == [True]


def test_help_needs_no_matplotlib() -> None:
    code = ("import sys, analysis, analysis.sensitivity;"
            "loaded = [m for m in ('matplotlib', 'torch', 'ray', 'tune') if m in sys.modules];"
            "assert not loaded, loaded;"  # matplotlib is imported only when figures are drawn
            "sys.modules['matplotlib'] = None; sys.argv = ['sensitivity.py', '--help'];"
            "import runpy; runpy.run_path('analysis/sensitivity.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "--image-backend" in proc.stdout and "pdf" in proc.stdout
