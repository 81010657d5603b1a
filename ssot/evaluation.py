"""The per-epoch evaluation pass: accuracies and label-free validators in one batched pass.

The target set is read once (features, probabilities, labels) plus one extra forward per batch on
MixVal's mixed inputs ``lam x_i + (1 - lam) x_{partner(i)}``, with the partners a seeded random
cycle over the whole target set (:func:`ssot.validators.mixval_partners`: the same pairs for every
batch size and every run); the held-out source subset is read once (features, probabilities,
per-sample cross-entropy for DEV). No gradients. Every validator of
:data:`ssot.validators.EPOCH_VALIDATORS` is then a cheap function of these tensors.

Target labels ``< 0`` mean "unlabeled" (a custom task with a flat target folder): the target
accuracy is then ``None`` and only the validators are reported.
"""
from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Subset

from ssot import validators as V
from ssot.data.base import TaskData, num_samples


class Model(Protocol):
    """What the evaluation pass uses of P >= 1 members (a run, :class:`ssot.trainer.Trainer`, P = 1;
    a population, :class:`ssot.population.Population`)."""

    task: TaskData

    def eval_batches(self, ds: Dataset) -> Iterator[tuple[torch.Tensor, torch.Tensor]]: ...

    def forward_stack(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def evaluating(self) -> contextlib.AbstractContextManager: ...


MIX_LAMBDA = 0.55  # MixVal's fixed mixing ratio (Hu et al. 2023)
MIX_SEED = 0  # MixVal's pairs: the same for every run, so candidates are probed with the same pairs


@dataclass
class Pass:
    """What one no-gradient pass over a dataset collected: one member's (``feats`` ``(N, d)``,
    ``probs`` ``(N, K)``), or every member's (``(P, N, d)``, ``(P, N, K)``, ``mix`` one tuple per
    member; :meth:`member`)."""

    feats: torch.Tensor
    probs: torch.Tensor
    labels: torch.Tensor  # (N,), -1 where unlabeled
    mix: Any = (0.0, 0, 0.0, 0)  # MixVal counts (inter hits, n, intra hits, n)

    def member(self, p: int) -> Pass:
        """Member ``p``'s pass of a stacked pass."""
        return Pass(self.feats[p], self.probs[p], self.labels, self.mix[p] if isinstance(self.mix, list) else self.mix)


@torch.no_grad()
def collect_stack(model: Model, ds: Dataset, *, mix: bool = False, mix_seed: int = MIX_SEED) -> Pass:
    """Every member's features, probabilities and the labels of ``ds`` (a stacked :class:`Pass`);
    with ``mix``, every member's MixVal counts as well.

    Each batch goes once through every member (:meth:`Model.forward_stack`). MixVal's partner
    inputs are a second stream of evaluation batches over the same samples in partner order
    (:func:`partner_view`), zipped with the first: every pair is formed across batch boundaries,
    so the score does not depend on ``eval_batch_size``. The pseudo-labels of both members of a
    pair come from this same pass.
    """
    feats, probs, labels, mixed = [], [], [], []
    partner, view = partner_view(ds, mix_seed) if mix else (None, None)
    with model.evaluating():
        for x, y, *rest in _zip_batches(model.eval_batches(ds), model.eval_batches(view) if view is not None else None):
            f, logits = model.forward_stack(x)
            feats.append(f); probs.append(torch.softmax(logits, dim=-1)); labels.append(y)
            if rest:
                _, logits_mixed = model.forward_stack(MIX_LAMBDA * x + (1 - MIX_LAMBDA) * rest[0])
                mixed.append(torch.softmax(logits_mixed, dim=-1))
    out = Pass(torch.cat(feats, dim=1), torch.cat(probs, dim=1), torch.cat(labels).long())
    out.mix = [(0.0, 0, 0.0, 0)] * out.probs.shape[0]
    if partner is not None and num_samples(ds) > 1:
        pseudo = out.probs.argmax(-1)
        out.mix = [V.mixval_scores(m, q, q[partner.to(q.device)]) for m, q in zip(torch.cat(mixed, dim=1), pseudo)]
    return out


def collect(model: Model, ds: Dataset, *, mix: bool = False, mix_seed: int = MIX_SEED) -> Pass:
    """:func:`collect_stack` of a model of one member (a run): its :class:`Pass`."""
    return collect_stack(model, ds, mix=mix, mix_seed=mix_seed).member(0)


class _PartnerView(Subset):
    """``Subset(base, indices)`` holding ``base`` weakly, so that :func:`partner_view`'s cache
    never keeps a run's data alive; pickled (to loader workers) as a plain ``Subset``."""

    def __init__(self, base: Dataset, indices: list[int]):  # no super().__init__: ``dataset`` is a property
        self._base = weakref.ref(base)
        self.indices = indices

    @property
    def dataset(self) -> Dataset:  # type: ignore[override]
        return self._base()  # type: ignore[return-value]

    def __reduce__(self) -> tuple[Any, ...]:
        return Subset, (self.dataset, self.indices)


_PARTNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def partner_view(ds: Dataset, seed: int = MIX_SEED) -> tuple[torch.Tensor, Dataset]:
    """``(partner, view)``: MixVal's partners of ``ds`` (:func:`ssot.validators.mixval_partners`)
    and a dataset of the partner samples in order (``view[i] = ds[partner[i]]``).

    The view is the same object for the same ``ds`` and ``seed``, so a run's persistent loader of
    it (:class:`ssot.batches.Batches`) is made once, not once per epoch; it indexes the dataset
    under a :class:`~torch.utils.data.Subset` directly, which keeps a decoded-image cache's fast
    path (:func:`ssot.batches.decoded_view` looks through one ``Subset``).
    """
    try:
        cached = _PARTNERS.get(ds)
    except TypeError:  # not weak-referenceable: no cache
        cached = None
    if cached is not None and cached[0] == seed:
        return cached[1], cached[2]
    partner = V.mixval_partners(num_samples(ds), seed)
    order = partner.tolist()
    base, indices = (ds.dataset, [ds.indices[i] for i in order]) if isinstance(ds, Subset) else (ds, order)
    view = _PartnerView(base, indices)
    try:
        _PARTNERS[ds] = (seed, partner, view)
    except TypeError:
        pass
    return partner, view


def _zip_batches(loader: Iterable, partners: Iterable | None) -> Iterator[tuple]:
    """``(x, y)`` batches of ``loader``, each followed by the partner batch's inputs when given."""
    if partners is None:
        yield from loader
        return
    for (x, y), (x_b, _) in zip(loader, partners, strict=True):
        yield x, y, x_b


def split_source(task: TaskData, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """(training source, evaluation source) of a task.

    ``fraction = 0`` (the paper's protocol): both are the whole source set (the evaluation one
    with the evaluation transform), so ``source_acc`` and DEV are measured on training samples.
    ``fraction > 0``: a random ``fraction`` of the source (seeded by ``seed``) is held out from
    source pretraining and adaptation (``p_s``, the class weights and every batch then come from
    the rest), and the evaluation source is exactly the held-out samples.
    """
    n = num_samples(task.source)
    if fraction == 0:
        return task.source, task.source_eval
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + 7)).tolist()
    k = min(n - 1, max(1, round(fraction * n)))
    return Subset(task.source, perm[k:]), Subset(task.source_eval, perm[:k])


def evaluate(model: Model, source: Dataset) -> tuple[list[dict[str, Any]], torch.Tensor, list[list[int]]]:
    """Every member's evaluation of an epoch: one pass over the target set (with MixVal's mixed
    pairs) and one over the evaluation source ``source``, each batch through every member at once
    (:func:`collect_stack`); then per member its target accuracy (overall, per class), every
    label-free validator (:func:`validator_scores`), the outlier mass of ``p_t`` and the number
    of predicted classes.

    Returns the members' metrics, their ``p_t`` ``[P, K]`` (mean target prediction: the class
    weights of the next epoch) and their target predictions (:func:`compact_predictions`)."""
    task = model.task
    target = collect_stack(model, task.target_eval, mix=True)
    sources = collect_stack(model, source)
    p_t = target.probs.mean(1)
    outliers = torch.tensor(task.outlier_classes, dtype=torch.long, device=p_t.device)
    metrics, predictions = [], []
    for p in range(p_t.shape[0]):
        mine = target.member(p)
        metrics.append({**target_metrics(task, mine), **validator_scores(mine, sources.member(p)),
                        "outlier_mass": float(p_t[p, outliers].sum()) if len(outliers) else 0.0,
                        "n_pred_classes": int(mine.probs.argmax(1).unique().numel())})
        predictions.append(compact_predictions(mine.probs))
    return metrics, p_t, predictions


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


def target_metrics(task: TaskData, target: Pass) -> dict[str, Any]:
    """Target accuracy (``None`` when unlabeled) and per-class accuracy of one member's pass."""
    pred, labels = target.probs.argmax(1), target.labels
    labeled = bool(len(labels)) and bool((labels >= 0).all())
    names = task.class_names
    per_class = {names[k]: float((pred[labels == k] == k).float().mean())
                 for k in task.target_classes if labeled and (labels == k).any()}
    return {"target_acc": float((pred == labels).float().mean()) if labeled else None, "per_class_acc": per_class}


def compact_predictions(probs: torch.Tensor) -> list[int]:
    """The target argmax predictions as a list of small ints (for the post-hoc EnsV selector)."""
    return probs.argmax(1).to(torch.int16).cpu().tolist()
