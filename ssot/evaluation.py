"""The per-epoch evaluation pass: accuracies and label-free validators in one batched pass.

The target set is read once (features, probabilities, labels) plus one extra forward per batch on
MixVal's mixed inputs ``lam x_i + (1 - lam) x_{flip(i)}`` (the batch paired with its reverse, as
in the authors' code); the held-out source subset is read once (features, probabilities,
per-sample cross-entropy for DEV). No gradients. Every validator of
:data:`ssot.validators.EPOCH_VALIDATORS` is then a cheap function of these tensors.

Target labels ``< 0`` mean "unlabeled" (a custom task with a flat target folder): the target
accuracy is then ``None`` and only the validators are reported.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Subset

from ssot import validators as V
from ssot.data.base import TaskData


class Trainer(Protocol):
    """What the evaluation pass uses of a run (:class:`ssot.trainer.Trainer`)."""

    f: torch.nn.Module
    eta: torch.nn.Module
    task: TaskData

    def eval_batches(self, ds: Dataset) -> Iterator[tuple[torch.Tensor, torch.Tensor]]: ...

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...


MIX_LAMBDA = 0.55  # MixVal's fixed mixing ratio (Hu et al. 2023)


@dataclass
class Pass:
    """What one no-gradient pass over a dataset collected."""

    feats: torch.Tensor  # (N, d)
    probs: torch.Tensor  # (N, K)
    labels: torch.Tensor  # (N,), -1 where unlabeled
    mix: tuple[float, int, float, int] = (0.0, 0, 0.0, 0)  # MixVal counts (inter hits, n, intra hits, n)


@torch.no_grad()
def collect(trainer: Trainer, ds: Dataset, *, mix: bool = False) -> Pass:
    """Features, probabilities and labels of ``ds``; with ``mix``, MixVal's counts as well."""
    was_training = trainer.f.training
    trainer.f.eval(); trainer.eta.eval()
    feats, probs, labels = [], [], []
    counts = [0.0, 0, 0.0, 0]
    for x, y in trainer.eval_batches(ds):
        f, logits = trainer.forward(x)
        p = torch.softmax(logits, dim=1)
        feats.append(f); probs.append(p); labels.append(y)
        if mix and x.shape[0] > 1:
            flip = torch.arange(x.shape[0] - 1, -1, -1, device=x.device)
            _, mixed = trainer.forward(MIX_LAMBDA * x + (1 - MIX_LAMBDA) * x[flip])
            pseudo = p.argmax(1)
            for i, v in enumerate(V.mixval_scores(torch.softmax(mixed, 1), pseudo, pseudo[flip])):
                counts[i] += v
    trainer.f.train(was_training); trainer.eta.train(was_training)
    return Pass(torch.cat(feats), torch.cat(probs), torch.cat(labels).long(), tuple(counts))  # type: ignore[arg-type]


def split_source(task: TaskData, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """(training source, evaluation source) of a task.

    ``fraction = 0`` (the paper's protocol): both are the whole source set (the evaluation one
    with the evaluation transform), so ``source_acc`` and DEV are measured on training samples.
    ``fraction > 0``: a random ``fraction`` of the source (seeded by ``seed``) is held out from
    source pretraining and adaptation (``p_s``, the class weights and every batch then come from
    the rest), and the evaluation source is exactly the held-out samples.
    """
    n = len(task.source)
    if fraction == 0:
        return task.source, task.source_eval
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + 7)).tolist()
    k = min(n - 1, max(1, round(fraction * n)))
    return Subset(task.source, perm[k:]), Subset(task.source_eval, perm[:k])


def validator_scores(target: Pass, source: Pass) -> dict[str, float]:
    """Every per-epoch validator from a target pass (with MixVal counts) and a source pass."""
    pt = target.probs
    src_loss = F.nll_loss(torch.log(source.probs.clamp_min(1e-12)), source.labels, reduction="none")
    scores = {
        "source_acc": float((source.probs.argmax(1) == source.labels).float().mean()),
        "entropy": V.entropy(pt),
        "snd": V.snd(pt),
        "im": V.im(pt),
        "im_pda": V.im_pda(pt),
        "bnm": V.bnm(pt),
        "dev": V.dev(source.feats.cpu(), src_loss.cpu(), target.feats.cpu()),
        **V.mixval(*target.mix),
    }
    return scores


def target_metrics(trainer: Trainer, target: Pass) -> dict[str, Any]:
    """Target accuracy (``None`` when unlabeled), per-class accuracy and the compact predictions."""
    pred, labels = target.probs.argmax(1), target.labels
    labeled = bool(len(labels)) and bool((labels >= 0).all())
    names = trainer.task.class_names
    per_class = {names[k]: float((pred[labels == k] == k).float().mean())
                 for k in trainer.task.target_classes if labeled and (labels == k).any()}
    return {"target_acc": float((pred == labels).float().mean()) if labeled else None, "per_class_acc": per_class}


def compact_predictions(probs: torch.Tensor) -> list[int]:
    """The target argmax predictions as a list of small ints (for the post-hoc EnsV selector)."""
    return probs.argmax(1).to(torch.int16).cpu().tolist()
