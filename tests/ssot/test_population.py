"""`ssot/population.py`: a population reproduces the independent runs of its configs."""
from __future__ import annotations

import io
import math

import pytest
import torch

from ssot.config import SSOTConfig
from ssot.data.features import load_feature_task, read_feature_cache, save_feature_cache
from ssot.errors import ConfigError
from ssot.features import build_feature_cache
from ssot.population import Population, check_members, member_states
from ssot.trainer import Trainer

#: Members that differ in every member field (width, lambdas, eps, learning rates).
MEMBERS = [
    {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256},
    {"lambda_ot": 0.05, "lambda_ent": 0.3, "eps": 0.1, "potential_width": 64, "lr": 3e-4},
    {"lambda_ot": 4.0, "lambda_ent": 0.01, "eps": 5.0, "potential_width": 1024, "lr_g": 3e-3},
    {"lambda_ot": 0.3, "lambda_ent": 2.0, "eps": 0.5, "potential_width": 128, "lr": 1e-3, "lr_g": 1e-4},
]


@pytest.fixture(scope="module")
def digits_cache(tmp_path_factory):
    """A digits cache of the source-pretrained CNN (seed 0) with two augmented views per sample.

    The digits task has no training augmentation (its views would equal the eval features), so
    the views are the eval features plus Gaussian noise: runs then depend on which view each
    sample draws, as on an image task."""
    folder = tmp_path_factory.mktemp("population")
    build_feature_cache(SSOTConfig.for_task("digits", pretrain_epochs=1, device="cpu", num_threads=1), folder / "plain.pt",
                        progress=False)
    blob = read_feature_cache(folder / "plain.pt")
    gen = torch.Generator().manual_seed(0)
    views = {side: blob[side]["features"] + 0.5 * torch.randn(2, *blob[side]["features"].shape, generator=gen)
             for side in ("source", "target")}
    meta = {k: blob[k] for k in ("backbone", "encoder", "seed", "pretrain_key", "weights_sha256")}
    out = folder / "digits.pt"
    save_feature_cache(out, "digits", blob["class_names"], blob["target_classes"],
                       (blob["source"]["features"], blob["source"]["labels"]), (blob["target"]["features"], blob["target"]["labels"]),
                       source_views=views["source"], target_views=views["target"], meta=meta)
    return out


@pytest.fixture(scope="module")
def task(digits_cache):
    return load_feature_task(digits_cache, "digits")


def configs(cache, members=MEMBERS, **changes):
    base = {"backbone": "features", "features_path": str(cache), "epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 5,
            "bottleneck_dims": (64,), "device": "cpu", "num_threads": 1, "source_eval_samples": 200, **changes}
    return [SSOTConfig.for_task("digits", **base, **m) for m in members]


def independent(cfg, task):
    return Trainer(cfg, task).fit()


def assert_same_epochs(member_epochs, run_epochs):
    """Every field of every epoch equal, bit for bit (NaN where the run has NaN), but the wall time.

    On a CPU a member computes each of its products as its own run does (ssot/stacked.py,
    ssot/ot.py "Stacks"): the one step gives it the run's bits."""
    assert len(member_epochs) == len(run_epochs)
    for mine, theirs in zip(member_epochs, run_epochs):
        assert set(mine) == set(theirs)
        for key in set(mine) - {"time_s"}:
            same = mine[key] == theirs[key] or (isinstance(mine[key], float) and math.isnan(mine[key]) and math.isnan(theirs[key]))
            assert same, (key, mine[key], theirs[key])


def test_a_population_of_four_reproduces_four_independent_runs(digits_cache, task):
    cfgs = configs(digits_cache)
    population = Population(cfgs, task)
    records = population.fit()
    for cfg, record in zip(cfgs, records):
        run = independent(cfg, task)
        assert record["status"] == run["status"] == "completed" and record["config"] == run["config"]
        assert record["source_only_target_acc"] == run["source_only_target_acc"]
        assert_same_epochs(record["epochs"], run["epochs"])
        assert record["target_pred"] == run["target_pred"]
    # the members did differ: not one run four times
    assert len({r["epochs"][-1]["loss_ot"] for r in records}) == 4
    # the host trainer (data, batches, pretraining) never made a run's adaptation optimisers: the
    # stacks have their own, and a worker's host so never imports torch._dynamo (torch.optim's first optimiser does)
    assert not {"opt_fe", "opt_g", "solver"} & set(vars(population.host))


def test_rung_stops_the_worst_members_and_the_others_go_on_exactly(digits_cache, task):
    cfgs = configs(digits_cache, epochs=3)
    population = Population(cfgs, task, rungs=(1, 2), reduction_factor=2, metric="entropy")
    seen = []
    records = population.fit(on_epoch=lambda members: seen.append([(m.index, m.status) for m in members]))
    first = [r["epochs"][0]["entropy"] for r in records]  # entropy is a 'min' metric
    best_two = sorted(range(4), key=lambda i: first[i])[:2]
    assert [len(r["epochs"]) for r in records] == [3 if i == best_two[0] or i == best_two[1] else 1 for i in range(4)] or \
        sorted(len(r["epochs"]) for r in records) == [1, 1, 2, 3]
    stopped_at_1 = [i for i in range(4) if i not in best_two]
    assert all(records[i]["status"] == "early-stopped" and len(records[i]["epochs"]) == 1 for i in stopped_at_1)
    second = {i: records[i]["epochs"][1]["entropy"] for i in best_two}
    winner = min(best_two, key=lambda i: (second[i], i))
    loser = (set(best_two) - {winner}).pop()
    assert records[winner]["status"] == "completed" and len(records[winner]["epochs"]) == 3
    assert records[loser]["status"] == "early-stopped" and len(records[loser]["epochs"]) == 2
    assert seen[0] == [(i, "early-stopped" if i in stopped_at_1 else "running") for i in range(4)]
    # compacting the stack (weights and optimiser states) changed nothing for the members that went on
    assert_same_epochs(records[winner]["epochs"], independent(cfgs[winner], task)["epochs"])


def test_a_diverging_member_is_recorded_as_diverged_and_the_others_go_on(digits_cache, task):
    members = [MEMBERS[0], {**MEMBERS[1], "lambda_ent": 3e38}, MEMBERS[3]]  # lambda_ent * L_Ent overflows float32
    cfgs = configs(digits_cache, members=members)
    records = Population(cfgs, task).fit()
    run = independent(cfgs[1], task)
    assert run["status"] == records[1]["status"] == "diverged"
    assert records[1]["reason"] == run["reason"] and "at epoch 1, within iterations 1-" in run["reason"]
    assert records[1]["epochs"] == run["epochs"] == []
    assert [records[i]["status"] for i in (0, 2)] == ["completed", "completed"]
    assert_same_epochs(records[2]["epochs"], independent(cfgs[2], task)["epochs"])


def test_a_population_resumes_exactly_from_its_checkpoint(digits_cache, task):
    cfgs = configs(digits_cache, members=MEMBERS[:3])
    whole = Population(cfgs, task, rungs=(1,), reduction_factor=2).fit()
    first = Population(cfgs, task, rungs=(1,), reduction_factor=2)
    first.pretrain()
    first.adapt_epoch()
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    buffer.seek(0)
    resumed = Population(cfgs, task, rungs=(1,), reduction_factor=2)
    resumed.load_state_dict(torch.load(buffer, weights_only=False))
    assert all(s["dev"].shape == (3, 5, 65) for stack in first.state_dict()["stacks"] for s in member_states(stack).values())
    records = resumed.fit()
    for mine, theirs in zip(records, whole):
        assert mine["status"] == theirs["status"]
        assert [e["target_acc"] for e in mine["epochs"]] == [e["target_acc"] for e in theirs["epochs"]]
        assert [e["loss_total"] for e in mine["epochs"]] == [e["loss_total"] for e in theirs["epochs"]]
        assert [e["dev"] for e in mine["epochs"]] == [e["dev"] for e in theirs["epochs"]]  # DEV warm from the checkpoint's classifiers


def test_with_dev_every_each_member_is_still_its_run_and_dev_ranks_no_rung(digits_cache, task):
    cfgs = configs(digits_cache, members=MEMBERS[:2], epochs=3, dev_every=2)
    records = Population(cfgs, task, workers=1).fit()
    for cfg, record in zip(cfgs, records):
        run = independent(cfg, task)
        assert_same_epochs(record["epochs"], run["epochs"])  # bit for bit, DEV's None included
        assert [e["dev"] is not None for e in record["epochs"]] == [False, True, True]  # epoch 2 and the last
    with pytest.raises(ConfigError, match="ranked by DEV at their rungs, but dev_every=2"):
        Population(cfgs, task, workers=1, rungs=(1,), metric="dev")


def test_configs_that_cannot_share_a_stack_are_refused_in_one_line(digits_cache):
    cfgs = configs(digits_cache, members=MEMBERS[:2])
    with pytest.raises(ConfigError, match="may differ only in lambda_ot, .*member 1 also differs in seed"):
        check_members([cfgs[0], cfgs[1].replace(seed=1)])
    with pytest.raises(ConfigError, match="feature cache \\(backbone 'features'\\).*python -m ssot.features --task digits"):
        check_members([SSOTConfig.for_task("digits")] * 2)
    with pytest.raises(ConfigError, match="'eps' parameter of a population member must be a float in \\(0, inf\\)"):
        check_members([cfgs[0], cfgs[1].replace(eps=0.0)])
    with pytest.raises(ConfigError, match="ot_solver 'net'"):
        check_members([cfgs[0].replace(ot_solver="vector")] * 2)
    check_members([SSOTConfig.for_task("digits", ot_solver="vector", eps=0.0)])  # a population of one: any config


SMALL_IMAGES = {"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 4, "device": "cpu", "num_threads": 1,
                "source_eval_samples": 100}


@pytest.mark.parametrize("changes", [{}, {"ot_solver": "vector"}, {"ot_solver": "sinkhorn", "eps": 0.5}],
                         ids=["net", "vector", "sinkhorn"])
def test_a_population_of_one_is_its_trainer_run_for_any_config(changes):
    """Every search trial is a population: one image config (any backbone and solver) is the
    Trainer's own run, record for record."""
    cfg = SSOTConfig.for_task("digits", **SMALL_IMAGES, **changes)
    seen = []
    (record,) = Population([cfg]).fit(on_epoch=lambda members: seen.append([(m.index, m.status, len(m.epochs)) for m in members]))
    run = Trainer(cfg).fit()
    assert seen == [[(0, "running", 1)], [(0, "completed", 2)]]
    assert record["status"] == run["status"] == "completed" and record["config"] == run["config"]
    assert record["source_only_target_acc"] == run["source_only_target_acc"] and record["target_pred"] == run["target_pred"]
    assert [{k: v for k, v in e.items() if k != "time_s"} for e in record["epochs"]] == \
        [{k: v for k, v in e.items() if k != "time_s"} for e in run["epochs"]]


def test_a_population_of_one_resumes_exactly_and_records_divergence_as_its_run():
    cfg = SSOTConfig.for_task("digits", **SMALL_IMAGES)
    whole = Population([cfg]).fit()
    first = Population([cfg])
    first.pretrain()
    first.adapt_epoch()
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    buffer.seek(0)
    resumed = Population([cfg])
    resumed.load_state_dict(torch.load(buffer, weights_only=True))  # tensors and plain types only
    assert resumed.epoch == 1 and resumed.alive == [0] and resumed.host.dev_start is not None
    (record,) = resumed.fit()
    assert [e["loss_total"] for e in record["epochs"]] == [e["loss_total"] for e in whole[0]["epochs"]]
    assert [e["dev"] for e in record["epochs"]] == [e["dev"] for e in whole[0]["epochs"]]  # DEV warm from the checkpoint's classifiers
    assert record["status"] == "completed"
    bad = cfg.replace(lambda_ent=3e38)  # lambda_ent * L_Ent overflows float32
    population = Population([bad])
    (diverged,) = population.fit()
    run = Trainer(bad).fit()
    assert diverged["status"] == run["status"] == "diverged" and diverged["reason"] == run["reason"]
    assert population.alive == [] and population.members[0].status == "diverged"


def test_the_other_shared_options_are_reproduced_too(digits_cache, task):
    """p_t refreshed within the epoch, two g steps, no gradient through the mask, Adam's weight
    decay, no bottleneck at all: still each member's independent run."""
    cfgs = configs(digits_cache, members=MEMBERS[1:3], epochs=1, pt_refresh=2, g_steps=2, mask_grad=False,
                   weight_decay=1e-3)
    for cfg, record in zip(cfgs, Population(cfgs, task).fit()):
        assert_same_epochs(record["epochs"], independent(cfg, task)["epochs"])
    flat = configs(digits_cache, members=MEMBERS[:2], epochs=1, bottleneck_dims=(), use_class_weights=False, use_mask=False)
    for cfg, record in zip(flat, Population(flat, task).fit()):
        assert_same_epochs(record["epochs"], independent(cfg, task)["epochs"])


def test_two_workers_train_each_member_as_its_independent_run_and_resume_with_one(digits_cache, task):
    """On two CPUs a population trains two stacks at once, the second in a worker process
    (ssot/shards.py); the members are still their independent runs (within float tolerance), the
    rung spreads the survivors again, and a checkpoint resumes with any number of workers."""
    cfgs = configs(digits_cache, members=MEMBERS[:3], epochs=3, iters_per_epoch=4)
    population = Population(cfgs, task, workers=2, rungs=(2,), reduction_factor=2)
    population.pretrain()
    population.adapt_epoch()
    assert population.workers == 2 and [s.__class__.__name__ for s in population.stacks] == ["Stack", "RemoteStack"]
    buffer = io.BytesIO()
    torch.save(population.state_dict(), buffer)
    records = population.fit()
    assert population.remote == []  # the worker ended with the population
    for cfg, record in zip(cfgs, records):
        run = independent(cfg, task)
        assert_same_epochs(record["epochs"], run["epochs"][:len(record["epochs"])])
    assert sorted(r["status"] for r in records) == ["completed", "completed", "early-stopped"]
    buffer.seek(0)
    resumed = Population(cfgs, task, workers=1, rungs=(2,), reduction_factor=2)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    for mine, theirs in zip(resumed.fit(), records):
        assert mine["status"] == theirs["status"]
        assert_same_epochs(mine["epochs"], theirs["epochs"])


def test_a_population_of_one_steps_as_its_run(digits_cache, task):
    """``Population.step`` of a population of one is its trainer's step (it had no stack: IndexError),
    the losses ``[1, len(LOSSES)]`` of an independent run's step on the same batch."""
    from ssot.method import LOSSES

    (cfg,) = configs(digits_cache, members=MEMBERS[:1])
    population = Population([cfg], task)
    population.pretrain(lambda host: None)
    run = Trainer(cfg, task)
    src, tgt = run.epoch_batches(1)
    for _ in range(2):
        (xs, ys), (xt, ids) = next(src), next(tgt)
        mine = population.step(xs, ys, xt, ids)
        assert mine.shape == (1, len(LOSSES))
        assert torch.equal(mine[0], torch.stack(list(run.step(xs, ys, xt, ids).values())))
