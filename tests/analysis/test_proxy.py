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


def test_names_are_escaped_in_the_markdown(tmp_path, capsys):
    """Defect 6 of the second audit: experiment names went into proxy.md as they were, so a name
    holding HTML was raw HTML in the page a Markdown viewer shows."""
    name = "<img src=x onerror=alert(1)>|*a*_b_"
    reference = tmp_path / "e2e" / "P2H"
    write_experiment(reference, [r for i, a in enumerate(TRUE) for r in trial_rows("P2H", "random", f"r{i}", config(i), [a], "completed")],
                     task="P2H", search="random", space=TPE_SPACE, max_epochs=1, name=name)
    write_experiment(tmp_path / "screens" / "P2H",
                     [r for i, a in enumerate([0.2, 0.4, 0.3]) for r in trial_rows("P2H", "tpe", f"p00-m{i:02d}-x", config(i), [a], "completed")],
                     task="P2H", search="tpe", space=TPE_SPACE, max_epochs=1, name="[link](http://x)",
                     extra={"configs_from": {"path": str(reference)}})
    assert main([str(tmp_path / "screens"), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "proxy.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| P2H |"))
    assert "<" not in text and "](" not in text.replace("\\](", "")
    assert row.startswith("| P2H | \\[link\\](http://x) | &lt;img src=x onerror=alert(1)&gt;\\|\\*a\\*\\_b\\_ | 3 |")
    assert row.count(" | ") == len(text.splitlines()[0].split(" | ")) - 1  # no extra column
    assert pd.read_csv(tmp_path / "out" / "proxy.csv")["reference"][0] == name  # the data keep the name as it is
    capsys.readouterr()


def test_the_plausible_mistakes_are_refused_in_one_line(tmp_path, capsys):
    """A missing or wrong SCREENS or --reference, a screen whose recorded search moved, --k 0,
    an --out in the way: one line each, exit status 2, nothing written."""
    import json

    write_pair(tmp_path, 0, [0.2, 0.4, 0.3])
    (tmp_path / "afile").write_text("x")
    screens = str(tmp_path / "screens")
    cases = {
        (str(tmp_path / "nope"),): f"The results folder {tmp_path / 'nope'} does not exist or is not a folder",
        (screens, "--reference", str(tmp_path / "nope")): f"--reference {tmp_path / 'nope'} is not a folder. Pass the task folder",
        (screens, "--reference", str(tmp_path)): "must be one readable experiment (the task folder of a search); found 2",
        (screens, "--k", "0"): "The '--k' argument must hold ints >= 1. Got 0 instead.",
        (screens, "--out", str(tmp_path / "afile")): "is a file, not a folder",
        (str(tmp_path / "e2e"),): "records the search it replayed; run tune/search.py with --configs-from, or pass --reference",
    }
    meta = tmp_path / "screens" / "seed0" / "P2H" / "experiment.json"
    for argv, message in cases.items():
        assert main(list(argv)) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    recorded = json.loads(meta.read_text())
    recorded["configs_from"]["path"] = str(tmp_path / "moved")
    meta.write_text(json.dumps(recorded))
    assert main([screens]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: The search {tmp_path / 'moved'} that the screen {meta.parent} replayed") and "--reference" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "e2e", "screens"]
