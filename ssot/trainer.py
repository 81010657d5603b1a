"""One SSOT run: source pretraining, then alternating g-ascent / feature-descent.

A :class:`Trainer` owns one run: its data, its three networks (``f``, ``eta``, ``g``, any backbone),
their optimisers, its OT solver (``net``, ``vector`` or ``sinkhorn``), its precision (``fp32``,
``bf16``), its run record and checkpoints. Its adaptation is the one SSOT iteration of
:mod:`ssot.method`, with the run as a stack of one member (P = 1): :meth:`Trainer.step` is
:func:`ssot.method.step`, :meth:`Trainer.adapt_epoch` runs :func:`ssot.method.train_epoch` (the
divergence check every :data:`CHECK_EVERY` iterations) and evaluates (:func:`ssot.evaluation.evaluate`).
A population of P configs (:mod:`ssot.population`) runs the same step and epoch loop on its stack.

``p_t`` (mean target prediction) and the class weights ``m`` come from the evaluation pass at the
end of each epoch (``pt_refresh = 0``) or from a dedicated pass every ``pt_refresh`` iterations.

The reported accuracy of a run is the target accuracy at its *last* epoch: picking the best
epoch would use target labels, which an unsupervised method cannot see.

Non-finite losses (the rule of :mod:`ssot.method`, a population's too): a step never tests its
losses (that would be a host read, a device sync); the epoch's loss sums are read every
:data:`CHECK_EVERY` iterations, and a non-finite sum stops the run at that check: it ends as
``diverged`` (:meth:`Trainer.fit`), the reason naming the loss and the window of iterations
(``non-finite loss_total (nan) at epoch 1, within iterations 26-50``). Pretraining likewise.

Batches come from :class:`ssot.batches.Batches` (persistent DataLoader workers, or a decoded-image
cache with the augmentation on the device). On CUDA, ResNet-50 runs channels_last, and
``torch.compile`` when the config's ``compile`` asks for it.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import json
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Subset

from ssot import evaluation, method, ot
from ssot import validators as V
from ssot.batches import Batches
from ssot.config import PRETRAINING_FIELDS, SSOTConfig
from ssot.data import TaskData, build_task
from ssot.data.base import num_samples
from ssot.errors import ConfigError, DivergedError
from ssot.method import CHECK_EVERY, LOSSES, Batch
from ssot.models import build_models
from ssot.solvers import SampleIds, Solver, build_solver

__all__ = ["CHECK_EVERY", "LOSSES", "Trainer", "run", "seed_everything", "resolve_device", "dataset_labels", "dev_due"]

EpochCallback = Callable[[dict[str, Any]], None]


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
    return torch.tensor([int(ds[i][1]) for i in range(num_samples(ds))], dtype=torch.long)


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
        self.f = f.to(self.device).to(memory_format=self.batches.format)
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
        n_src = num_samples(held_out)
        k = n_src if config.source_eval_samples == 0 else min(n_src, config.source_eval_samples)
        self.source_eval_subset = Subset(held_out, torch.randperm(n_src, generator=gen)[:k].tolist())

        self.epoch = 0
        self.dev_start: V.DevStart | None = None  # DEV's classifiers of the last adaptation epoch: the next one's warm start
        self.record: dict[str, Any] = {
            "config": config.to_dict(),
            "task": {"name": self.task.name, "num_classes": K, "class_names": self.task.class_names,
                     "target_classes": self.task.target_classes, "n_source": num_samples(self.task.source),
                     "n_source_holdout": n_src if config.source_holdout else 0, "n_target": num_samples(self.task.target)},
            "source_outlier_share": float(self.p_s[self.outliers].sum()) if len(self.outliers) else 0.0,
            "source_class_freq": self.p_s.tolist(),  # with class_weights: estimated p_t = p_s * m (analysis only)
            "target_class_freq": ot.label_frequencies(dataset_labels(self.task.target_eval), K).tolist() if self.task.labeled_target else None,
            "source_only_target_acc": None,
            "source_only": None,
            "epochs": [],
            "status": "running",
            "reason": None,
        }

    # ------------------------------------------------------------------ the adaptation's optimisers, made when first used
    # (a population's worker process holds a Trainer for its data and batches only, and never makes
    # them: torch.optim's first optimiser imports torch._dynamo, 1.5 s of a worker's start on a CPU)
    @functools.cached_property
    def opt_fe(self) -> torch.optim.Adam:
        return self._adam(self.config.lr)

    @functools.cached_property
    def opt_g(self) -> torch.optim.Adam:
        return torch.optim.Adam(self.g.parameters(), lr=self.config.lr_g)

    @functools.cached_property
    def solver(self) -> Solver:
        return build_solver(self.config, self.g, self.opt_g, num_samples(self.task.target), self.device)

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

    def forward_stack(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` as a stack of one member: ``[1, n, d]`` and ``[1, n, K]`` (:mod:`ssot.method`)."""
        feats, logits = self.forward(x)
        return feats[None], logits[None]

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        """``f`` and ``eta`` in evaluation mode for the duration (batch norm of ResNet-50)."""
        was_training = self.f.training
        self.f.eval(); self.eta.eval()
        try:
            yield
        finally:
            self.f.train(was_training); self.eta.train(was_training)

    def predict(self, ds: Dataset) -> tuple[torch.Tensor, torch.Tensor]:
        """Class probabilities and labels of every sample of ``ds`` (batched, no gradients)."""
        found = evaluation.collect(self, ds)
        return found.probs, found.labels

    def _set_class_weights(self, p_t: torch.Tensor) -> None:
        self.p_t = p_t
        self.m = method.class_weights(self.config, p_t, self.p_s)

    # ------------------------------------------------------------------ the run as a stack of one member (ssot.method.Members)
    @property
    def lambda_ot(self) -> float:
        return self.config.lambda_ot

    @property
    def lambda_ent(self) -> float:
        return self.config.lambda_ent

    @property
    def class_weights(self) -> torch.Tensor:
        return self.m[None]

    def diverged(self, reasons: dict[int, str]) -> None:
        """The run's loss turned non-finite (:func:`ssot.method.train_epoch`'s check): it stops."""
        raise DivergedError(reasons[0])

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, Any]:
        """Target accuracy (overall, per class), ``p_t`` statistics and every label-free validator
        (:func:`ssot.evaluation.evaluate`); the target's argmax predictions go to ``record["target_pred"]``.

        Also refreshes ``p_t`` and ``m`` from this target pass (the once-per-epoch estimate), and
        keeps DEV's domain classifiers as the warm start of the next evaluation (:attr:`dev_start`).
        """
        found = evaluation.evaluate(self, self.source_eval_subset, self.dev_start, dev=dev_due(self.epoch, self.config.dev_every, self.config.epochs))
        self._set_class_weights(found.p_t[0])
        ((metrics, pred),) = found.read(self.m[None])  # the one host read of the evaluation
        self.record["target_pred"] = pred
        self.dev_start = found.dev_start
        return metrics

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
                    where = f"in pretraining epoch {ep + 1}, within iterations {checked + 1}-{it + 1}"
                    if (reason := method.nonfinite(total.tolist(), where, ("pretraining loss",))) is not None:
                        raise DivergedError(reason)
                    checked = it + 1
        metrics = self.evaluate()
        self.dev_start = None  # adaptation's first DEV starts cold, as after a shared pretrained model (load_pretrained)
        self.record["source_only"] = metrics
        self.record["source_only_target_acc"] = metrics["target_acc"]
        return metrics

    # ------------------------------------------------------------------ adaptation
    def iterations_per_epoch(self) -> int:
        cfg = self.config
        return cfg.iters_per_epoch or max(1, num_samples(self.source_train) // cfg.batch_size)

    def epoch_batches(self, epoch: int) -> tuple[Iterator[tuple[torch.Tensor, torch.Tensor]], Iterator[tuple[torch.Tensor, torch.Tensor]]]:
        """The source batches ``(x, y)`` and target batches ``(x, sample ids)`` of adaptation epoch
        ``epoch``: endless, and the same for every run of this seed (whatever its searched fields)."""
        seed = self.config.seed * 100_003 + epoch
        return self.batches.train(self.source_train, seed), self.batches.train(self.target_ids, seed + 50_000)

    def adapt_epoch(self) -> dict[str, Any]:
        """One adaptation epoch (:func:`ssot.method.train_epoch`) followed by its evaluation;
        returns the epoch's metrics. Raises :class:`DivergedError` at the check that finds a
        non-finite loss."""
        cfg = self.config
        self.epoch += 1
        start = time.perf_counter()
        src, tgt = self.epoch_batches(self.epoch)
        n_iter = self.iterations_per_epoch()
        self.f.train(); self.eta.train(); self.g.train()
        iterations = self._bar(range(n_iter), n_iter, f"epoch {self.epoch}/{cfg.epochs}")
        (losses,) = method.train_epoch(self, zip(src, tgt), iterations, n_iter, self.epoch,
                                       refresh=lambda: self._set_class_weights(self.predict(self.task.target_eval)[0].mean(0)))
        metrics = {"epoch": self.epoch, **losses, **self.evaluate()}
        metrics["time_s"] = time.perf_counter() - start
        self.record["epochs"].append(metrics)
        return metrics

    def step(self, xs: torch.Tensor, ys: torch.Tensor, xt: torch.Tensor, ids: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """One alternating iteration (:func:`ssot.method.step`) on a source batch ``(xs, ys)`` and a
        target batch ``xt`` (sample ids ``ids``).

        Returns the losses of :data:`LOSSES` as 0-dim tensors on the device (not read: no host sync).
        """
        return dict(zip(LOSSES, method.step(self, xs, ys, xt, ids)[0]))

    def forward_batch(self, xs: torch.Tensor, ys: torch.Tensor, xt: torch.Tensor, ids: torch.Tensor | None = None) -> Batch:
        """:func:`ssot.method.forward_batch` of the run (tensors ``[1, ...]``)."""
        return method.forward_batch(self, xs, ys, xt, ids)

    def g_step(self, b: Batch) -> torch.Tensor:
        """:func:`ssot.method.g_step`: the OT value before the ascent, ``[1]``."""
        return method.g_step(self, b)

    def feature_step(self, b: Batch) -> torch.Tensor:
        """:func:`ssot.method.feature_step`: the total, CE, OT and entropy losses, ``[1, 4]``."""
        return method.feature_step(self, b)

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
            **V.DevStart.entries(self.dev_start),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.f.load_state_dict(state["f"]); self.eta.load_state_dict(state["eta"]); self.g.load_state_dict(state["g"])
        self.opt_fe.load_state_dict(state["opt_fe"]); self.opt_g.load_state_dict(state["opt_g"])
        self._set_class_weights(state["p_t"].to(self.device))
        self.epoch = int(state["epoch"])
        self.record = json.loads(state["record"]) if isinstance(state["record"], str) else state["record"]
        torch.set_rng_state(state["torch_rng"])
        self.solver.load_state_dict(state.get("solver", {}))
        self.dev_start = V.DevStart.from_entries(state, self.device)


def dev_due(epoch: int, every: int, epochs: int) -> bool:
    """Whether the evaluation after adaptation epoch ``epoch`` of ``epochs`` computes DEV (``0``: the
    source-only evaluation, which does): every ``every`` epochs (the config's ``dev_every``) and at the last."""
    return epoch % every == 0 or epoch >= epochs


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global RNGs (a run does it first, then builds its models)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def run(config: SSOTConfig, *, task: TaskData | None = None, on_epoch: EpochCallback | None = None,
        progress: bool = False) -> dict[str, Any]:
    """Train one SSOT run and return its run record (the manual: docs/results-format.md, "The run record")."""
    return Trainer(config, task, progress=progress).fit(on_epoch)
