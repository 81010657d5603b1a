"""`python analysis/proxy.py`: each screen against the search it replayed, as a table."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis.proxy import main
from tests.fixtures.experiments import TPE_SPACE, trial_rows, write_experiment

TRUE = [0.5, 0.9, 0.7]


def config(i: int) -> dict:
    return {"lambda_ot": 10.0 ** (i - 2), "lambda_ent": 0.5, "eps": 1.0, "potential_width": 64}


def write_pair(root, seed: int, screen_finals) -> None:
    reference = root / "e2e" / f"seed{seed}" / "P2H"
    write_experiment(reference, [r for i, a in enumerate(TRUE) for r in trial_rows("P2H", "random", f"r{i}", config(i), [a], "completed")],
                     task="P2H", search="random", space=TPE_SPACE, max_epochs=1, name=f"e2e-seed{seed}")
    write_experiment(root / "screens" / f"seed{seed}" / "P2H",
                     [r for i, a in enumerate(screen_finals) for r in trial_rows("P2H", "tpe", f"p00-m{i:02d}-x", config(i), [a], "completed")],
                     task="P2H", search="tpe", space=TPE_SPACE, max_epochs=1, name=f"screen-seed{seed}",
                     extra={"configs_from": {"path": str(reference)}})


def test_proxy_table_per_screen_and_mean_over_seeds(tmp_path, capsys):
    write_pair(tmp_path, 0, [0.2, 0.4, 0.3])  # ranks the configs exactly as end-to-end
    write_pair(tmp_path, 1, [0.4, 0.2, 0.3])  # the reverse
    assert main([str(tmp_path / "screens"), "--k", "1", "2", "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "proxy.csv")
    assert list(table["screen"]) == ["screen-seed0", "screen-seed1", "mean"]
    assert list(table["reference"]) == ["e2e-seed0", "e2e-seed1", "2 screens"]
    assert list(table["spearman"]) == pytest.approx([1.0, -1.0, 0.0]) and list(table["kendall"]) == pytest.approx([1.0, -1.0, 0.0])
    assert list(table["regret_top1"]) == pytest.approx([0.0, 40.0, 20.0])
    assert list(table["regret_top2"]) == pytest.approx([0.0, 20.0, 10.0])
    out = capsys.readouterr().out
    assert "| P2H |" in out and "regret top-2" in out and (tmp_path / "out" / "proxy.md").read_text() in out
    assert main([str(tmp_path / "screens"), "--out", str(tmp_path / "out")]) == 2  # never overwrites


def test_screens_without_a_reference_are_refused_in_one_line(tmp_path, capsys):
    write_experiment(tmp_path / "plain" / "P2H", trial_rows("P2H", "tpe", "t0", config(0), [0.5], "completed"), task="P2H",
                     search="tpe", space=TPE_SPACE, max_epochs=1)
    assert main([str(tmp_path / "plain")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--configs-from, or pass --reference" in err[0]
    write_pair(tmp_path / "other", 0, [0.2, 0.4, 0.3])
    assert main([str(tmp_path / "plain"), "--reference", str(tmp_path / "other" / "e2e" / "seed0" / "P2H")]) == 0
