"""Searches of several configs per trial (populations): the members asked and told through the record
(`tune/record.py`). A real population search killed and resumed: the reduced soak
(`tests/benchmarks/test_soak.py`)."""
from __future__ import annotations

import pytest

pytest.importorskip("optuna")
pytest.importorskip("ray")

import optuna  # noqa: E402

from ssot.config import SSOTConfig  # noqa: E402
from ssot.results.space import default_space, optuna_space  # noqa: E402
from tune import members  # noqa: E402
from tune.record import Record  # noqa: E402

FINISHED = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
DEFAULT = {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}


class CountingSampler(optuna.samplers.RandomSampler):
    """A random sampler that records how many trials had ended when each trial was asked."""

    def __init__(self, seen: list[int], seed: int) -> None:
        super().__init__(seed=seed)
        self.seen = seen

    def before_trial(self, study, trial) -> None:
        self.seen.append(len(study.get_trials(deepcopy=False, states=FINISHED)))


def entry(epoch: int, acc: float, **extra) -> dict:
    return {"epoch": epoch, "target_acc": acc, "diverged": 0, "reason": "", "early_stopped": 0, **extra}


def reported(entries: dict) -> dict:
    """A trial's report as Ray hands it to a scheduler: flattened (``members/<id>/<name>``)."""
    report = members.report(entries, "target_acc", "max")
    flat = {k: v for k, v in report.items() if k != members.MEMBERS_KEY}
    for member, values in report[members.MEMBERS_KEY].items():
        flat.update({f"members/{member}/{k}": v for k, v in values.items()})
    return flat


def test_each_trial_is_asked_after_every_result_so_far_and_every_member_is_told(tmp_path):
    seen: list[int] = []
    info = {"metric": "target_acc", "mode": "max", "max_epochs": 2, "population": 3, "num_samples": 7, "space": default_space(),
            "rungs": [1], "reduction_factor": 3, "optuna_study": "exp/digits", "base_config": SSOTConfig().to_dict(),
            "task": "digits", "search": "random"}
    record = Record(str(tmp_path), info, optuna_space(default_space()), lambda k: CountingSampler(seen, k), [DEFAULT])
    first = record.next()
    ids = list(first.members)
    assert first.id == "p0000" and ids == ["p0000-m00", "p0000-m01", "p0000-m02"] and first.members[ids[0]] == DEFAULT
    assert not record.observe(first.id, reported({ids[0]: entry(1, 0.6), ids[1]: entry(1, 0.4, early_stopped=1), ids[2]: entry(1, 0.5)}))
    record.observe(first.id, reported({ids[0]: entry(2, 0.8, target_pred="0 1"), ids[2]: entry(2, 0.0, diverged=1, reason="non-finite")}))
    trials = record.study.trials
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
                                         optuna.trial.TrialState.COMPLETE]
    assert trials[0].value == 0.8 and trials[0].intermediate_values == {1: 0.6, 2: 0.8}
    assert trials[1].intermediate_values == {1: 0.4} and trials[1].value == 0.4  # PRUNED at its rung, with the values it reached
    assert trials[2].value == 0.0  # diverged: the metric's worst value
    assert [t.user_attrs["member_id"] for t in trials] == ids and {t.user_attrs["unit"] for t in trials} == {"p0000"}
    assert [t.user_attrs["status"] for t in trials] == ["completed", "early-stopped", "diverged"]
    assert trials[0].user_attrs["final"]["target_acc"] == 0.8 and record.study.metric_names == ["target_acc"]
    second = record.next()
    assert len(second.members) == 3 and seen == [0, 0, 3, 3, 3]  # each sampled from every result told so far
    third = record.next()
    assert list(third.members) == ["p0002-m00"] and record.next() is None  # 7 = 3 + 3 + 1
    record.ended(second.id, "RuntimeError: boom")  # a trial that errored: its members FAIL
    assert [t.state for t in record.study.trials[3:6]] == [optuna.trial.TrialState.FAIL] * 3
