"""The per-epoch evaluation pass: every validator in every epoch, the held-out source."""
from __future__ import annotations

import json
import math

import pytest
import torch

from ssot import SSOTConfig, Trainer, evaluation
from ssot.data.features import load_feature_task
from ssot.evaluation import split_source
from ssot.population import Population
from ssot.train import main
from ssot.validators import EPOCH_VALIDATORS, DevStart
from tests.fixtures.features import vector_cache
from tests.fixtures.host_reads import HostRead, no_host_reads


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
    assert metrics["snd"] == pytest.approx(float(V.snd(target.probs)))
    assert metrics["im"] == pytest.approx(float(V.im(target.probs)))
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
    assert torch.equal(counts[0], counts[1])
    ci, ni, ca, na = counts[0].tolist()
    assert ni + na == len(digits_task.target_eval)  # one pair per target sample
    # the counts are MixVal's on the pairs of mixval_partners, recomputed here sample by sample
    n = len(digits_task.target_eval)
    partner = V.mixval_partners(n, evaluation.MIX_SEED)
    x = torch.stack([digits_task.target_eval[i][0] for i in range(n)])
    with torch.no_grad():
        trainer.f.eval(); trainer.eta.eval()
        pseudo = trainer.forward(x)[1].argmax(1)
        mixed = trainer.forward(evaluation.MIX_LAMBDA * x + (1 - evaluation.MIX_LAMBDA) * x[partner])[1]
    hit, inter = torch.softmax(mixed, 1).argmax(1) == pseudo, pseudo != pseudo[partner]
    assert [int((hit & inter).sum()), int(inter.sum()), int((hit & ~inter).sum()), int((~inter).sum())] == counts[0].tolist()
    other = evaluation.collect(trainer, digits_task.target_eval, mix=True, mix_seed=1).mix
    assert other[1] + other[3] == n and not torch.equal(other, counts[0])  # other pairs, other counts


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


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    """A tiny feature cache: 10 classes of 24-d vectors, 5 of them in the target."""
    return vector_cache(tmp_path_factory.mktemp("evaluation") / "vectors.pt")


def _replayed(model, monkeypatch):
    """``model.eval_batches`` replaying the batches its first call of each dataset loaded: the
    DataLoader draws its base seed with ``.item()`` on a host tensor of its own (no device data),
    which the guard cannot tell from a read of the model's tensors."""
    loaded: dict[int, list] = {}
    load = model.eval_batches

    def replay(ds):
        if id(ds) not in loaded:
            loaded[id(ds)] = list(load(ds))
        return iter(loaded[id(ds)])

    monkeypatch.setattr(model, "eval_batches", replay)


def _stepped_stack(vectors, changes: list[dict], steps: int):
    """A population of the ``changes`` of a small features config, pretrained and stepped ``steps``
    times (its members part ways): its task, its base config and its one stack."""
    base = SSOTConfig.for_task("digits", epochs=1, pretrain_epochs=0, iters_per_epoch=2, device="cpu", num_threads=1,
                               source_eval_samples=64, backbone="features", features_path=str(vectors), bottleneck_dims=(16,))
    task = load_feature_task(vectors, "digits")
    population = Population([base.replace(**change) for change in changes], task)
    population.pretrain(lambda host: None)
    src, tgt = population.host.epoch_batches(1)
    for _ in range(steps):
        population.step(*next(src), *next(tgt))
    return task, base, population.stacks[0]


def test_an_epochs_evaluation_reads_the_host_once(vectors, monkeypatch):
    """Every metric and validator of every member (DEV's domain classifiers included) is computed
    with every host read refused but one: the epoch's whole table, for a stack of 3 members and for
    a run (a stack of one). The guard is the one of the step's test (tests/ssot/test_method.py)."""
    task, base, stack = _stepped_stack(vectors, [{"lambda_ot": v, "potential_width": w} for v, w in ((1.0, 64), (0.1, 128), (3.0, 64))], 2)
    _replayed(stack, monkeypatch)
    first = evaluation.evaluate(stack, stack.host.source_eval_subset)  # loads the batches; MixVal's partner list is made once per dataset
    first.read(stack.m)
    assert first.dev_start is not None and first.dev_start.usable == [True] * 3
    with no_host_reads(tolist=1) as reads:  # DEV warm-started from the members' classifiers of the first evaluation
        found = evaluation.evaluate(stack, stack.host.source_eval_subset, first.dev_start)
        stack._set_class_weights(found.p_t)
        rows = found.read(stack.m)
    # 13 scalars and `labeled`, 5 classes, 10 weights, 100 predictions, whether DEV's classifiers are usable
    assert reads == [(3, len(evaluation.FIELDS) + 5 + 10 + 100 + 1)]
    assert [set(metrics) for metrics, _ in rows] == [{*evaluation.FIELDS, "class_weights"}] * 3
    assert len({metrics["dev"] for metrics, _ in rows}) == 3 and all(len(pred) == 100 for _, pred in rows)
    run = Trainer(base, task)
    _replayed(run, monkeypatch)
    run.evaluate()
    assert run.dev_start is not None  # the next evaluation's DEV starts warm
    with no_host_reads(tolist=1) as reads:
        metrics = run.evaluate()
    assert len(reads) == 1 and set(EPOCH_VALIDATORS) <= set(metrics)
    with pytest.raises(HostRead), no_host_reads(tolist=1):  # the guard counts: a second read fails
        run.evaluate(); run.evaluate()


def test_the_scores_of_a_whole_stack_are_each_members_own(vectors):
    """A GPU computes every member's scores at once (``member_scores`` on the whole stack), a CPU
    member by member: the same values (to rounding), on the same pass."""
    task, _, stack = _stepped_stack(vectors, [{"lambda_ot": v, "lambda_ent": e} for v, e in ((1.0, 1.0), (0.1, 3.0), (3.0, 0.1))], 3)
    target = evaluation.collect_stack(stack, task.target_eval, mix=True)
    source = evaluation.collect_stack(stack, stack.host.source_eval_subset)
    whole = evaluation.member_scores(task, target, source)
    for p in range(3):
        mine = evaluation.member_scores(task, target.rows(p), source.rows(p))
        assert set(mine) == set(whole)
        for name, value in mine.items():
            assert torch.allclose(whole[name][p:p + 1].double(), value.double(), rtol=1e-12, atol=1e-15, equal_nan=True), name
    assert len(set(whole["dev"].tolist())) == 3 and len(set(whole["snd"].tolist())) == 3
    start = DevStart(whole["dev_classifiers"], [True, False, True])  # DEV warm from the classifiers above, but member 1's
    warm = evaluation.member_scores(task, target, source, start)
    for p in range(3):
        mine = evaluation.member_scores(task, target.rows(p), source.rows(p), start.rows([p]))
        assert torch.equal(warm["dev_classifiers"][p:p + 1], mine["dev_classifiers"])
        assert torch.allclose(warm["dev"][p:p + 1], mine["dev"], rtol=1e-12, atol=0)
    assert torch.equal(warm["dev_classifiers"][1], whole["dev_classifiers"][1])  # member 1: cold, as before
    assert not torch.equal(warm["dev_classifiers"][0], whole["dev_classifiers"][0])  # the others: warm
