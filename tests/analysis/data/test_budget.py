"""`analysis/data/budget.py`: a search's budget, and where two searches' budgets differ."""
from __future__ import annotations

from pathlib import Path

from analysis.data.budget import budget_differences, search_budget, space_text
from tests.fixtures.experiments import TPE_SPACE, grid_space, loaded, trial_rows, with_meta, write_experiment


def _search(root: Path, name: str, task: str, n: int, epochs: int, space: dict, **meta) -> Path:
    rows = [row for i in range(n) for row in trial_rows(task, "tpe", f"t{i}", {"lambda_ot": 1.0, "lambda_ent": 1.0,
            "eps": 1.0, "potential_width": 64}, [0.5] * epochs, "completed")]
    folder = write_experiment(root / name / task, rows, task=task, search="tpe", space=space, max_epochs=epochs, name=name)
    return with_meta(folder, **meta)


def test_budgets_name_what_differs(tmp_path: Path) -> None:
    short = loaded(_search(tmp_path, "short", "P2H", 4, 2, TPE_SPACE, early_stop=False))
    long = loaded(_search(tmp_path, "long", "P2H", 6, 3, TPE_SPACE, early_stop=True, grace_period=1,
                                   reduction_factor=2))
    same = loaded(_search(tmp_path, "same", "H2P", 4, 2, TPE_SPACE, early_stop=False))
    assert search_budget(short).text() == "4 trials × 2 epochs, early stopping off"
    assert search_budget(long).text() == "6 trials × 3 epochs, early stopping ASHA (grace period 1, reduction factor 2)"
    assert budget_differences([short, same]) == {}  # two tasks, one budget
    differences = budget_differences([short, long, same])
    assert differences["trials"] == {"4": ["P2H/short", "H2P/same"], "6": ["P2H/long"]}
    assert differences["max_epochs"] == {"2": ["P2H/short", "H2P/same"], "3": ["P2H/long"]}
    assert set(differences) == {"trials", "max_epochs", "early_stop"}


def test_a_grid_plans_num_samples_times_its_cells_and_its_space_differs(tmp_path: Path) -> None:
    grid = loaded(_search(tmp_path, "grid", "P2H", 2, 2, grid_space(), num_samples=1, early_stop=False))
    tpe = loaded(_search(tmp_path, "tpe", "P2H", 25, 2, TPE_SPACE, early_stop=False))
    assert search_budget(grid).trials == 25 and search_budget(tpe).trials == 25  # 1 x the 5 x 5 grid
    assert set(budget_differences([grid, tpe])) == {"space"}
    assert space_text(TPE_SPACE) == ("lambda_ot log [0.001, 10]; lambda_ent log [0.001, 10]; eps log [0.01, 10]; "
                                     "potential_width one of {64, 128, 256, 512, 1024}")
    assert space_text(grid_space()).startswith("lambda_ot grid {0.001, 0.01, 0.1, 1, 10}") and "eps = 1" in space_text(grid_space())
    assert space_text(None) == "not recorded"
