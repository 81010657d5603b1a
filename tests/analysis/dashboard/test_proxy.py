"""`analysis/dashboard/proxy.py`: the screen-against-end-to-end block, shown when a screen records its reference."""
from __future__ import annotations

from analysis.dashboard import build_dashboard
from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment


def config(i: int) -> dict:
    return {"lambda_ot": 10.0 ** (i - 2), "lambda_ent": 0.5, "eps": 1.0, "potential_width": 64 * 2**i}


def test_the_block_is_shown_for_a_screen_only_and_names_an_unreadable_reference(tmp_path):
    reference = tmp_path / "refs" / "P2H"
    write_experiment(reference, [r for i in range(3) for r in trial_rows("P2H", "random", f"r{i}", config(i), [0.5 + i / 10], "completed")],
                     task="P2H", search="random", space=TPE_SPACE, max_epochs=1)
    results = tmp_path / "results"
    write_experiment(results / "screen" / "P2H", [r for i in range(3) for r in trial_rows("P2H", "tpe", f"p00-m{i:02d}-x", config(i),
                                                                                          [0.3 - i / 10], "completed")],
                     task="P2H", search="tpe", space=TPE_SPACE, max_epochs=1, name="screen",
                     extra={"configs_from": {"path": str(reference)}})
    write_experiment(results / "lost" / "P2H", trial_rows("P2H", "tpe", "t0", config(0), [0.3], "completed"), task="P2H",
                     search="tpe", space=TPE_SPACE, max_epochs=1, name="lost",
                     extra={"configs_from": {"path": str(tmp_path / "gone")}})
    write_experiment(results / "plain" / "P2H", trial_rows("P2H", "tpe", "t0", config(0), [0.3], "completed"), task="P2H",
                     search="tpe", space=TPE_SPACE, max_epochs=1, name="plain")
    page = build_dashboard(results, out=tmp_path / "d.html", images=False).path.read_text()
    sections = {s.split('data-key="')[1][:2]: s for s in page.split('<section class="experiment"')[1:]}
    assert len(sections) == 3
    shown = [s for s in sections.values() if "The screen against end-to-end training" in s]
    assert len(shown) == 2  # the screen, and the one whose reference is gone (with a note); not the plain search
    full = next(s for s in shown if "cannot be read" not in s)
    assert "-proxy" in full and "Replayed the configs of" in full and "<td>top-1</td><td>20.0</td>" in full
    assert any("cannot be read" in s and "gone" in s for s in shown)
    assert '"e0-proxy"' in page or '"e1-proxy"' in page or '"e2-proxy"' in page  # its figure is in the page's data
