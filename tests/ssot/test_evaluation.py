"""The per-epoch evaluation pass: every validator in every epoch, the held-out source."""
from __future__ import annotations

import json
import math

import pytest
import torch

from ssot import Trainer
from ssot.evaluation import split_source
from ssot.train import main
from ssot.validators import EPOCH_VALIDATORS


def test_every_epoch_carries_every_validator(tmp_path):
    out = tmp_path / "run.json"
    assert main(["--task", "digits", "--epochs", "2", "--pretrain-epochs", "1", "--iters-per-epoch", "3", "--quiet",
                 "--source-holdout", "0.1", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    for epoch in record["epochs"]:
        assert set(EPOCH_VALIDATORS) <= set(epoch)
        assert all(math.isfinite(epoch[k]) for k in EPOCH_VALIDATORS)
        assert 0 <= epoch["mixval"] <= 1 and epoch["entropy"] >= 0
    assert len(record["target_pred"]) == record["task"]["n_target"]
    assert set(record["target_pred"]) <= set(range(10))
    assert record["task"]["n_source_holdout"] == round(0.1 * record["task"]["n_source"])


def test_validators_match_the_validator_functions_on_the_same_pass(quick_config, digits_task):
    from ssot import evaluation
    from ssot import validators as V

    trainer = Trainer(quick_config(epochs=2), digits_task)
    metrics = trainer.evaluate()
    target = evaluation.collect(trainer, digits_task.target_eval)
    assert metrics["snd"] == pytest.approx(V.snd(target.probs))
    assert metrics["im"] == pytest.approx(V.im(target.probs))
    assert metrics["target_acc"] == pytest.approx(float((target.probs.argmax(1) == target.labels).float().mean()))
    assert trainer.record["target_pred"] == target.probs.argmax(1).tolist()


def test_held_out_source_is_disjoint_and_never_trained_on(quick_config, digits_task):
    train, held = split_source(digits_task, 0.2, seed=3)
    assert len(held) == round(0.2 * len(digits_task.source)) and len(train) + len(held) == len(digits_task.source)
    assert not set(train.indices) & set(held.indices)
    trainer = Trainer(quick_config(epochs=2, source_holdout=0.2, seed=3), digits_task)
    assert trainer.source_train.indices == train.indices
    assert set(trainer.source_eval_subset.dataset.indices) == set(held.indices)
    full, same = split_source(digits_task, 0.0, seed=3)
    assert full is digits_task.source and same is digits_task.source_eval


def test_mixval_does_not_depend_on_the_evaluation_batch_size(quick_config, digits_task):
    """MixVal's pairs are a seeded cycle over the whole target set: the same counts for batch sizes
    7 and 1000 (the previous batch-reversal pairing changed with the batch size)."""
    from ssot import evaluation
    from ssot import validators as V

    trainer = Trainer(quick_config(epochs=1), digits_task)
    trainer.pretrain()
    counts = []
    for size in (7, 1000):
        trainer.batches.eval_batch_size = size
        counts.append(evaluation.collect(trainer, digits_task.target_eval, mix=True).mix)
    assert counts[0] == counts[1]
    ci, ni, ca, na = counts[0]
    assert ni + na == len(digits_task.target_eval)  # one pair per target sample
    # the counts are MixVal's on the pairs of mixval_partners, recomputed here sample by sample
    n = len(digits_task.target_eval)
    partner = V.mixval_partners(n, evaluation.MIX_SEED)
    x = torch.stack([digits_task.target_eval[i][0] for i in range(n)])
    with torch.no_grad():
        trainer.f.eval(); trainer.eta.eval()
        pseudo = trainer.forward(x)[1].argmax(1)
        mixed = trainer.forward(evaluation.MIX_LAMBDA * x + (1 - evaluation.MIX_LAMBDA) * x[partner])[1]
    assert V.mixval_scores(torch.softmax(mixed, 1), pseudo, pseudo[partner]) == counts[0]
    other = evaluation.collect(trainer, digits_task.target_eval, mix=True, mix_seed=1).mix
    assert other[1] + other[3] == n and other != counts[0]  # other pairs, other counts


def test_partner_view_is_one_object_per_dataset_and_indexes_through_a_subset():
    """The partner dataset is made once per (dataset, seed), so a run's persistent loader of it is
    made once; a Subset is looked through (the decoded-image fast path sees one Subset)."""
    import pickle

    from torch.utils.data import Subset, TensorDataset

    from ssot import evaluation
    from ssot import validators as V

    base = TensorDataset(torch.arange(20.0).unsqueeze(1), torch.arange(20))
    ds = Subset(base, list(range(3, 15)))
    partner, view = evaluation.partner_view(ds, 4)
    assert torch.equal(partner, V.mixval_partners(12, 4))
    assert view.dataset is base and [view[i][1].item() for i in range(12)] == [ds[int(j)][1].item() for j in partner]
    assert evaluation.partner_view(ds, 4)[1] is view and evaluation.partner_view(ds, 5)[1] is not view
    again = pickle.loads(pickle.dumps(view))  # to loader workers: a plain Subset of the same samples
    assert type(again) is Subset and again.indices == view.indices
