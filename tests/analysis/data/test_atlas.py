"""`analysis/data/atlas.py`: tasks that differ in space or budget are never compared as equals."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.data.atlas import budget_of, build_atlas, seed_label
from analysis.data.experiments import AnalysisError, load_experiments
from ssot.config import SSOTConfig
from tests.fixtures.experiments import ATLAS_EPOCHS, ATLAS_TRIALS, TPE_SPACE, trial_rows, write_atlas_results, write_experiment


def test_groups_share_space_and_budget_and_say_how_they_differ(tmp_path: Path) -> None:
    write_atlas_results(tmp_path, ("digits", "P2H"), name="a")
    narrow = {**TPE_SPACE, "lambda_ot": {"type": "loguniform", "low": 0.01, "high": 1.0}}
    write_atlas_results(tmp_path, ("H2P",), name="b", space=narrow)
    write_atlas_results(tmp_path, ("H2H",), name="c", max_epochs=ATLAS_EPOCHS + 2)
    experiments, _ = load_experiments(tmp_path)
    atlas = build_atlas(experiments)
    assert [(g.label, g.tasks) for g in atlas.groups] == [("A", ("P2H", "digits")), ("B", ("H2H",)), ("C", ("H2P",))]
    assert [g.label for g in atlas.compared] == ["A"]
    a, b, c = atlas.groups
    assert a.differs == "" and b.differs == f"budget: max_epochs: {ATLAS_EPOCHS + 2} instead of {ATLAS_EPOCHS}"
    assert c.differs == ('space of lambda_ot: {"type": "loguniform", "low": 0.01, "high": 1.0} instead of '
                         '{"type": "loguniform", "low": 0.001, "high": 10.0}')
    assert [t.group for t in atlas.of_group("A")] == ["A", "A"] and {t.task for t in atlas.of_group("A")} == {"P2H", "digits"}
    task = atlas.of_group("A")[0]
    assert task.view == "final" and task.n_trials == ATLAS_TRIALS and len(task.table) == ATLAS_TRIALS
    assert budget_of(task.experiment) == {"max_epochs": ATLAS_EPOCHS, "asha": "off", "backbone": "digits_cnn"}
    assert seed_label(task.experiment) == "1 seed per trial (seed 0)"


def test_one_view_per_group_the_earliest_default(tmp_path: Path) -> None:
    asha = {"early_stop": True, "grace_period": 1, "reduction_factor": 2}  # rungs 1 and 2 of 3 epochs
    write_atlas_results(tmp_path, ("digits",), extra=asha, n_trials=12)  # every trial completed: default "final"
    rows = []
    for i in range(12):  # 3 completed, 9 stopped at epoch 2: its default is the rung of epoch 2
        config = {"lambda_ot": 0.01 * (i + 1), "lambda_ent": 0.1, "eps": 1.0, "potential_width": 256}
        rows += trial_rows("P2H", "tpe", f"t{i:02d}", config, [0.5, 0.6, 0.7][: 3 if i < 3 else 2],
                           "completed" if i < 3 else "early-stopped")
    base = SSOTConfig.for_task("P2H", epochs=ATLAS_EPOCHS).to_dict()
    write_experiment(tmp_path / "atlas" / "P2H", rows, task="P2H", search="tpe", space=TPE_SPACE, max_epochs=ATLAS_EPOCHS,
                     name="atlas", extra={"base_config": base, **asha})
    experiments, _ = load_experiments(tmp_path)
    atlas = build_atlas(experiments)
    assert [(g.tasks, g.view) for g in atlas.groups] == [(("P2H", "digits"), "epoch2")]
    assert {t.task: t.n_trials for t in atlas.tasks} == {"P2H": 12, "digits": 12}  # both at epoch 2
    assert build_atlas(experiments, "final").groups[0].view == "final"
    assert {t.task: t.n_trials for t in build_atlas(experiments, "final").tasks} == {"P2H": 3, "digits": 12}
    with pytest.raises(AnalysisError, match=r"The view 'epoch3' is not a view of the search .*Choose another --view"):
        build_atlas(experiments, "epoch3")
    with pytest.raises(AnalysisError, match="must be 'default', 'final', 'best' or 'epoch<R>'"):
        build_atlas(experiments, "fastest")
