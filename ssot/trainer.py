"""The SSOT training loop: source pretraining, then alternating g-ascent / feature-descent.

One adaptation iteration (Algorithm 1 of the paper, with the decisions of :mod:`ssot.config`):

1. forward a source batch and a target batch through ``f`` and ``eta`` (one pass, gradients on);
2. cost ``C``, soft mask ``S``, masked cost ``S * C``; weights ``w_i = m_{y_i} / sum m``;
3. **g step**: with features and predictions detached, ``g`` ascends ``H`` (``g_steps`` times);
4. **feature step**: with ``g`` frozen, ``f`` and ``eta`` descend
   ``L = L_CE + lambda_OT * H + lambda_Ent * L_Ent``.

``p_t`` (mean target prediction) and the class weights ``m`` come from the evaluation pass at the
end of each epoch (``pt_refresh = 0``) or from a dedicated pass every ``pt_refresh`` iterations.

The reported accuracy of a run is the target accuracy at its *last* epoch: picking the best
epoch would use target labels, which an unsupervised method cannot see.

No host sync per step
---------------------
On a GPU, reading a value on the host (``.item()``, ``float()``, ``if tensor``) waits for every
queued kernel. The step therefore returns its losses as device tensors; an epoch adds them to
float64 sums on the device (the same additions, in the same order, as the Python floats of
before: the epoch means are unchanged) and reads the sums once per epoch. Divergence is still
caught within the epoch: a sum is finite exactly when every value added to it was, and the sums
are read every :data:`CHECK_EVERY` iterations and at the end of the epoch; the
:class:`DivergedError` names the window of iterations (``within iterations 26-50``). The feature
step no longer skips the optimiser step of a non-finite loss (that test was a sync): a diverged
run is stopped at the next check, at most ``CHECK_EVERY - 1`` iterations later, and its models
are not used again. Pretraining likewise. The ``sinkhorn`` solver still reads its convergence
test on the host every 10 of its iterations.

Batches come from :class:`ssot.batches.Batches` (persistent DataLoader workers, or a decoded-image
cache with the augmentation on the device). On CUDA, ResNet-50 runs channels_last, and
``torch.compile`` when the config's ``compile`` asks for it.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Subset

from ssot import evaluation, ot
from ssot.batches import Batches
from ssot.config import PRETRAINING_FIELDS, SSOTConfig
from ssot.data import TaskData, build_task
from ssot.errors import ConfigError, DivergedError
from ssot.models import build_models
from ssot.solvers import SampleIds, build_solver

EpochCallback = Callable[[dict[str, Any]], None]
#: Iterations between two reads of an epoch's loss sums (the divergence check; one host sync each).
CHECK_EVERY = 25
#: The losses of an iteration (:meth:`Trainer.step`), in order; an epoch records their means.
LOSSES = ("loss_total", "loss_ce", "loss_ot", "loss_ent", "ot_value")


@dataclass
class Batch:
    """The forward pass of one source batch and one target batch (shared by both steps)."""

    fs: torch.Tensor  # (b_s, d) source features
    ft: torch.Tensor  # (b_t, d) target features
    logits_s: torch.Tensor  # (b_s, K)
    ps: torch.Tensor  # (b_s, K) source probabilities
    pt: torch.Tensor  # (b_t, K) target probabilities
    ys: torch.Tensor  # (b_s,) source labels
    cost: torch.Tensor  # (b_s, b_t) squared-Euclidean cost (with gradients)
    w: torch.Tensor  # (b_s,) source weights m_y / sum m_y
    ids: torch.Tensor | None = None  # (b_t,) target sample ids (the vector solver indexes by them)


def resolve_device(name: str) -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without a GPU is a clear error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("The 'device' parameter is 'cuda' but no CUDA GPU is visible. Use --device cpu or auto.")
    return torch.device(name)


def dataset_labels(ds: Dataset) -> torch.Tensor:
    """All labels of a dataset without loading its inputs when the dataset allows it."""
    if isinstance(ds, Subset):
        return dataset_labels(ds.dataset)[torch.as_tensor(ds.indices)]
    if hasattr(ds, "tensors"):
        return ds.tensors[1].long()
    if hasattr(ds, "targets"):
        return torch.as_tensor(list(ds.targets), dtype=torch.long)
    return torch.tensor([int(ds[i][1]) for i in range(len(ds))], dtype=torch.long)


def check_finite(sums: torch.Tensor, names: tuple[str, ...], where: str) -> list[float]:
    """The values of ``sums`` (one host read); :class:`DivergedError` naming the first non-finite one."""
    values = sums.tolist()
    for name, value in zip(names, values):
        if not math.isfinite(value):
            raise DivergedError(f"non-finite {name} ({value}) {where}")
    return values


class Trainer:
    """Owns the three networks, their optimisers and the run record of one SSOT run.

    Parameters
    ----------
    config : the validated run configuration.
    task : the data; built from ``config`` when omitted.
    progress : show a progress bar per epoch (tqdm).
    """

    def __init__(self, config: SSOTConfig, task: TaskData | None = None, *, progress: bool = False):
        self.config = config
        self.progress = progress
        self.device = resolve_device(config.device)
        if config.num_threads:
            torch.set_num_threads(config.num_threads)
        seed_everything(config.seed)
        self.task = task if task is not None else build_task(config)
        K = self.task.num_classes
        input_dim = self.task.input_shape[0] if config.backbone == "features" else None
        f, eta, g = build_models(config, K, input_dim)
        self.batches = Batches(config, self.device)
        self.f = f.to(self.device, memory_format=self.batches.format)
        self.eta, self.g = eta.to(self.device), g.to(self.device)
        # torch.compile on CUDA only (on a CPU it would compile C++ for minutes and change nothing measured)
        self._f = torch.compile(self.f) if config.compile and self.device.type == "cuda" else self.f

        self.source_train, held_out = evaluation.split_source(self.task, config.source_holdout, config.seed)
        self.target_ids = SampleIds(self.task.target)  # target batches carry sample ids, never labels
        self.source_labels = dataset_labels(self.source_train)
        self.p_s = ot.label_frequencies(self.source_labels, K).to(self.device)
        self.outliers = torch.tensor(self.task.outlier_classes, dtype=torch.long, device=self.device)
        self.m = torch.ones(K, device=self.device)
        self.p_t = torch.full((K,), 1.0 / K, device=self.device)

        gen = torch.Generator().manual_seed(config.seed)
        n_src = len(held_out)
        k = n_src if config.source_eval_samples == 0 else min(n_src, config.source_eval_samples)
        self.source_eval_subset = Subset(held_out, torch.randperm(n_src, generator=gen)[:k].tolist())

        self.opt_fe = self._adam(config.lr)
        self.opt_g = torch.optim.Adam(self.g.parameters(), lr=config.lr_g)
        self.solver = build_solver(config, self.g, self.opt_g, len(self.task.target), self.device)
        self.epoch = 0
        self.record: dict[str, Any] = {
            "config": config.to_dict(),
            "task": {"name": self.task.name, "num_classes": K, "class_names": self.task.class_names,
                     "target_classes": self.task.target_classes, "n_source": len(self.task.source), "n_source_holdout": n_src if config.source_holdout else 0, "n_target": len(self.task.target)},
            "source_outlier_share": float(self.p_s[self.outliers].sum()) if len(self.outliers) else 0.0,
            "source_class_freq": self.p_s.tolist(),  # with class_weights: estimated p_t = p_s * m (analysis only)
            "target_class_freq": ot.label_frequencies(dataset_labels(self.task.target_eval), K).tolist() if self.task.labeled_target else None,
            "source_only_target_acc": None,
            "source_only": None,
            "epochs": [],
            "status": "running",
            "reason": None,
        }

    # ------------------------------------------------------------------ helpers
    def _adam(self, lr: float) -> torch.optim.Adam:
        mult = self.config.backbone_lr_mult if (self.config.backbone == "resnet50" and self.config.pretrained) else 1.0
        groups = [
            {"params": list(self.f.backbone.parameters()), "lr": lr * mult},
            {"params": list(self.f.bottleneck.parameters()) + list(self.eta.parameters()), "lr": lr},
        ]
        groups = [g for g in groups if g["params"]]
        return torch.optim.Adam(groups, lr=lr, weight_decay=self.config.weight_decay)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.config.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def eval_batches(self, ds: Dataset) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``ds`` in order, by evaluation batches, on the device (:meth:`ssot.batches.Batches.eval`)."""
        return self.batches.eval(ds)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Features and logits of ``x`` (float32; computed under the config's autocast)."""
        with self._autocast():
            feats = self._f(x)
            logits = self.eta(feats)
        return feats.float(), logits.float()

    @torch.no_grad()
    def predict(self, ds: Dataset) -> tuple[torch.Tensor, torch.Tensor]:
        """Class probabilities and labels of every sample of ``ds`` (batched, no gradients)."""
        was_training = self.f.training
        self.f.eval(); self.eta.eval()
        probs, labels = [], []
        for x, y in self.eval_batches(ds):
            _, logits = self.forward(x)
            probs.append(torch.softmax(logits, dim=1))
            labels.append(y)
        self.f.train(was_training); self.eta.train(was_training)
        return torch.cat(probs), torch.cat(labels)

    def _set_class_weights(self, p_t: torch.Tensor) -> None:
        self.p_t = p_t
        self.m = ot.class_weights(p_t, self.p_s) if self.config.use_class_weights else torch.ones_like(p_t)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, Any]:
        """Target accuracy (overall, per class), ``p_t`` statistics and every label-free validator
        (:mod:`ssot.evaluation`); the target's argmax predictions go to ``record["target_pred"]``.

        Also refreshes ``p_t`` and ``m`` from this target pass (the once-per-epoch estimate).
        """
        target = evaluation.collect(self, self.task.target_eval, mix=True)
        probs = target.probs
        pred = probs.argmax(1)
        p_t = probs.mean(0)
        self._set_class_weights(p_t)
        source = evaluation.collect(self, self.source_eval_subset)
        self.record["target_pred"] = evaluation.compact_predictions(probs)
        return {
            **evaluation.target_metrics(self, target),
            **evaluation.validator_scores(target, source),
            "outlier_mass": float(p_t[self.outliers].sum()) if len(self.outliers) else 0.0,
            "n_pred_classes": int(pred.unique().numel()),
            "class_weights": [float(v) for v in self.m],
        }

    # ------------------------------------------------------------------ pretraining
    def pretrain(self) -> dict[str, Any]:
        """Source-only cross-entropy training, then the source-only evaluation."""
        cfg = self.config
        opt = self._adam(cfg.lr_pretrain)
        self.f.train(); self.eta.train()
        for ep in range(cfg.pretrain_epochs):
            n = self.batches.per_pass(self.source_train)
            batches = itertools.islice(self.batches.train(self.source_train, cfg.seed * 100_003 + 7919 + ep), n)
            total = torch.zeros(1, dtype=torch.float64, device=self.device)  # checked like the adaptation losses
            checked = 0
            for it, (x, y) in enumerate(self._bar(batches, n, f"pretrain {ep + 1}/{cfg.pretrain_epochs}")):
                _, logits = self.forward(x)
                loss = F.cross_entropy(logits, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += loss.detach()
                if (it + 1) % CHECK_EVERY == 0 or it + 1 == n:
                    check_finite(total, ("pretraining loss",), f"in pretraining epoch {ep + 1}, within iterations {checked + 1}-{it + 1}")
                    checked = it + 1
        metrics = self.evaluate()
        self.record["source_only"] = metrics
        self.record["source_only_target_acc"] = metrics["target_acc"]
        return metrics

    # ------------------------------------------------------------------ adaptation
    def iterations_per_epoch(self) -> int:
        cfg = self.config
        return cfg.iters_per_epoch or max(1, len(self.source_train) // cfg.batch_size)

    def epoch_batches(self, epoch: int) -> tuple[Iterator[tuple[torch.Tensor, torch.Tensor]], Iterator[tuple[torch.Tensor, torch.Tensor]]]:
        """The source batches ``(x, y)`` and target batches ``(x, sample ids)`` of adaptation epoch
        ``epoch``: endless, and the same for every run of this seed (whatever its searched fields)."""
        seed = self.config.seed * 100_003 + epoch
        return self.batches.train(self.source_train, seed), self.batches.train(self.target_ids, seed + 50_000)

    def adapt_epoch(self) -> dict[str, Any]:
        """One adaptation epoch followed by its evaluation; returns the epoch's metrics."""
        cfg = self.config
        self.epoch += 1
        start = time.perf_counter()
        src, tgt = self.epoch_batches(self.epoch)
        sums = torch.zeros(len(LOSSES), dtype=torch.float64, device=self.device)  # read every CHECK_EVERY iterations
        n_iter = self.iterations_per_epoch()
        checked = 0
        self.f.train(); self.eta.train(); self.g.train()
        for it in self._bar(range(n_iter), n_iter, f"epoch {self.epoch}/{cfg.epochs}"):
            if cfg.pt_refresh and it > 0 and it % cfg.pt_refresh == 0:
                self._set_class_weights(self.predict(self.task.target_eval)[0].mean(0))
            (xs, ys), (xt, ids) = next(src), next(tgt)  # target batches carry sample ids, never labels
            losses = self.step(xs, ys, xt, ids)
            sums += torch.stack([losses[k] for k in LOSSES])
            if (it + 1) % CHECK_EVERY == 0 or it + 1 == n_iter:
                values = check_finite(sums, LOSSES, f"at epoch {self.epoch}, within iterations {checked + 1}-{it + 1}")
                checked = it + 1
        metrics = {"epoch": self.epoch, **{k: v / n_iter for k, v in zip(LOSSES, values)}, **self.evaluate()}
        metrics["time_s"] = time.perf_counter() - start
        self.record["epochs"].append(metrics)
        return metrics

    def step(self, xs: torch.Tensor, ys: torch.Tensor, xt: torch.Tensor, ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """One alternating iteration on a source batch ``(xs, ys)`` and a target batch ``xt`` (sample ids ``ids``).

        Returns the losses of :data:`LOSSES` as 0-dim tensors on the device (not read: no host sync).
        """
        batch = self.forward_batch(xs, ys, xt, ids)
        h = self.g_step(batch)
        losses = self.feature_step(batch)
        return {**losses, "ot_value": h if self.config.g_steps else losses["loss_ot"]}

    def forward_batch(self, xs: torch.Tensor, ys: torch.Tensor, xt: torch.Tensor, ids: torch.Tensor | None = None) -> Batch:
        """One forward pass of both batches through ``f`` and ``eta`` (gradients on)."""
        bs = xs.shape[0]
        feats, logits = self.forward(torch.cat([xs, xt]))
        probs = torch.softmax(logits, dim=1)
        return Batch(fs=feats[:bs], ft=feats[bs:], logits_s=logits[:bs], ps=probs[:bs], pt=probs[bs:], ys=ys,
                     cost=ot.cost_matrix(feats[:bs], feats[bs:]), w=ot.source_weights(self.m, ys), ids=ids)

    def _masked(self, cost: torch.Tensor, ps: torch.Tensor, pt: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        return cost * (cfg.mask_scale * ot.soft_mask(ps, pt)) if cfg.use_mask else cost

    def g_step(self, b: Batch) -> torch.Tensor:
        """(a) the OT solver (``g`` by default) ascends with ``f`` and ``eta`` fixed (inputs detached).

        Returns the OT value before the first ascent step, a 0-dim tensor (the epoch's ``ot_value`` is its mean).
        """
        return self.solver.ascend(self._masked(b.cost.detach(), b.ps.detach(), b.pt.detach()), b.ft.detach(), b.ids, b.w)

    def feature_step(self, b: Batch) -> dict[str, torch.Tensor]:
        """(b) ``f`` and ``eta`` descend ``L_CE + lambda_OT H + lambda_Ent L_Ent`` with ``g`` frozen.

        Steps whatever the loss (testing it would sync the host): a non-finite loss is caught by
        the epoch's next check (:data:`CHECK_EVERY`), which raises :class:`DivergedError`.
        """
        cfg = self.config
        self.g.requires_grad_(False)
        try:
            ps, pt = (b.ps, b.pt) if cfg.mask_grad else (b.ps.detach(), b.pt.detach())
            loss_ot = self.solver.loss(self._masked(b.cost, ps, pt), b.ft, b.ids, b.w)
            loss_ce = (self.m[b.ys] * F.cross_entropy(b.logits_s, b.ys, reduction="none")).mean()
            loss_ent = ot.entropy(b.pt)
            loss = loss_ce + cfg.lambda_ot * loss_ot + cfg.lambda_ent * loss_ent
            self.opt_fe.zero_grad(set_to_none=True)
            loss.backward()
            self.opt_fe.step()
        finally:
            self.g.requires_grad_(True)
        return {"loss_total": loss.detach(), "loss_ce": loss_ce.detach(), "loss_ot": loss_ot.detach(), "loss_ent": loss_ent.detach()}

    # ------------------------------------------------------------------ the whole run
    def fit(self, on_epoch: EpochCallback | None = None) -> dict[str, Any]:
        """Pretrain (unless restored past it), adapt to ``config.epochs``, return the run record.

        ``on_epoch`` is called with each epoch's metrics. A diverged run ends with status
        ``diverged`` and its reason in the record instead of raising.
        """
        try:
            if self.record["source_only"] is None:
                self.pretrain()
            while self.epoch < self.config.epochs:
                metrics = self.adapt_epoch()
                if on_epoch is not None:
                    on_epoch(metrics)
            self.record["status"] = "completed"
        except DivergedError as exc:
            self.record["status"], self.record["reason"] = "diverged", exc.reason
        return self.record

    def _bar(self, iterable: Any, total: int, desc: str) -> Iterator[Any]:
        """Iterate ``iterable`` with a progress bar when asked.

        The bar is updated by hand rather than wrapping the iterable: ``tqdm(loader)`` changed
        the DataLoader's shuffling (seen with torch 2.15), so runs with and without a bar differed.
        """
        if not self.progress:
            yield from iterable
            return
        from tqdm.auto import tqdm

        with tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True) as bar:
            for item in iterable:
                yield item
                bar.update(1)

    # ------------------------------------------------------------------ checkpoints
    PRETRAIN_FIELDS = PRETRAINING_FIELDS  # the config's "pretraining" group

    # Both states hold only tensors and plain types (the run record and the source-only evaluation
    # as JSON text, the RNG state as a tensor), so they load with torch.load(weights_only=True):
    # loading a state never runs code from the file (tune/trial.py, docs/reliability.md).
    def pretrained_state(self) -> dict[str, Any]:
        """The source-only model and its evaluation, shareable by every run whose config agrees
        on :attr:`PRETRAIN_FIELDS` (a search pretrains once per seed, not once per trial)."""
        if self.record["source_only"] is None:
            raise RuntimeError("pretrained_state() before pretrain()")
        return {"f": self.f.state_dict(), "eta": self.eta.state_dict(), "p_t": self.p_t.cpu(),
                "source_only": json.dumps(self.record["source_only"]),
                "key": {k: getattr(self.config, k) for k in self.PRETRAIN_FIELDS}}

    def load_pretrained(self, state: dict[str, Any]) -> None:
        """Start adaptation from a :meth:`pretrained_state` instead of pretraining."""
        mine = {k: getattr(self.config, k) for k in self.PRETRAIN_FIELDS}
        if {k: state["key"].get(k) for k in mine} != mine:
            raise ValueError("pretrained state was made with a different pretraining config")
        self.f.load_state_dict(state["f"]); self.eta.load_state_dict(state["eta"])
        self._set_class_weights(state["p_t"].to(self.device))
        source_only = state["source_only"]
        self.record["source_only"] = json.loads(source_only) if isinstance(source_only, str) else source_only
        self.record["source_only_target_acc"] = self.record["source_only"]["target_acc"]

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue the run exactly at an epoch boundary."""
        return {
            "f": self.f.state_dict(), "eta": self.eta.state_dict(), "g": self.g.state_dict(),
            "opt_fe": self.opt_fe.state_dict(), "opt_g": self.opt_g.state_dict(),
            "p_t": self.p_t.cpu(), "epoch": self.epoch, "record": json.dumps(self.record),
            "torch_rng": torch.get_rng_state(), "solver": self.solver.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.f.load_state_dict(state["f"]); self.eta.load_state_dict(state["eta"]); self.g.load_state_dict(state["g"])
        self.opt_fe.load_state_dict(state["opt_fe"]); self.opt_g.load_state_dict(state["opt_g"])
        self._set_class_weights(state["p_t"].to(self.device))
        self.epoch = int(state["epoch"])
        self.record = json.loads(state["record"]) if isinstance(state["record"], str) else state["record"]
        torch.set_rng_state(state["torch_rng"])
        self.solver.load_state_dict(state.get("solver", {}))


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global RNGs (a run does it first, then builds its models)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def run(config: SSOTConfig, *, task: TaskData | None = None, on_epoch: EpochCallback | None = None,
        progress: bool = False) -> dict[str, Any]:
    """Train one SSOT run and return its run record (the manual: docs/results-format.md, "The run record")."""
    return Trainer(config, task, progress=progress).fit(on_epoch)
