"""The per-epoch evaluation: every member's accuracies and label-free validators at once, read once.

One pass over the target set and one over the evaluation source per epoch, each batch through every
member at once (:func:`collect_stack`), with one extra forward per batch on MixVal's mixed inputs
``lam x_i + (1 - lam) x_{partner(i)}``, the partners a seeded random cycle over the whole target
set (:func:`ssot.validators.mixval_partners`: the same pairs for every batch size and every run).
No gradients. Then every metric and validator of every member is computed as tensors ``[P, ...]``
on the model's device (:func:`member_scores`: target accuracy overall and per class, the number of
predicted classes, the outlier mass of ``p_t``, every validator of
:data:`ssot.validators.EPOCH_VALIDATORS`, DEV's domain classifiers included, and the kept
predictions), and the host reads the whole epoch's table once (:meth:`Evaluation.read`): nothing is
read per member or per metric (``tests/ssot/test_evaluation.py`` refuses every other host read).
DEV's domain classifiers start from each member's classifiers of its previous evaluation
(:class:`ssot.validators.DevStart`, :attr:`Evaluation.dev_start`: the caller that owns the
members' training state passes them in and keeps the new ones).

A run is a stack of one member (:class:`ssot.trainer.Trainer`), a population a stack of P
(:class:`ssot.population.Stack`): the same functions. On a CPU the scores are computed member by
member on ``[1, ...]`` slices, so that a member's values are those of its independent run bit for
bit whatever P (the rule of :mod:`ssot.stacked`; a CPU gains nothing from wider products here); on
a GPU for the whole stack at once.

Target labels ``< 0`` mean "unlabeled" (a custom task with a flat target folder): the target
accuracy is then ``None`` and only the validators are reported.
"""
from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor
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
    """What one no-gradient pass over a dataset collected: every member's features ``[P, N, d]``
    and probabilities ``[P, N, K]``, the labels ``[N]``, and with MixVal's mixed pairs their
    counts ``[P, 4]`` (:func:`ssot.validators.mixval_counts`); :meth:`member`, :meth:`rows`."""

    feats: Tensor
    probs: Tensor
    labels: Tensor  # (N,), -1 where unlabeled
    mix: Tensor | None = None

    def member(self, p: int) -> Pass:
        """Member ``p``'s pass (``feats`` ``[N, d]``, ``probs`` ``[N, K]``, ``mix`` ``[4]``)."""
        return Pass(self.feats[p], self.probs[p], self.labels, None if self.mix is None else self.mix[p])

    def rows(self, p: int) -> Pass:
        """Member ``p``'s pass as a stack of one (``[1, ...]``)."""
        return Pass(self.feats[p:p + 1], self.probs[p:p + 1], self.labels, None if self.mix is None else self.mix[p:p + 1])


@torch.no_grad()
def collect_stack(model: Model, ds: Dataset, *, mix: bool = False, mix_seed: int = MIX_SEED) -> Pass:
    """Every member's features, probabilities and the labels of ``ds`` (a stacked :class:`Pass`);
    with ``mix``, every member's MixVal counts as well.

    Each batch goes once through every member (:meth:`Model.forward_stack`). MixVal's partner
    inputs are a second stream of evaluation batches over the same samples in partner order
    (:func:`partner_view`), zipped with the first: every pair is formed across batch boundaries,
    so the score does not depend on ``eval_batch_size``. The pseudo-labels of both members of a
    pair come from this same pass. Nothing is read on the host.
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
    if partner is not None:
        counts = out.probs.new_zeros(out.probs.shape[0], 4, dtype=torch.float64)  # one sample: no pair
        out.mix = V.mixval_counts(torch.cat(mixed, dim=1), out.probs.argmax(-1), partner.to(out.probs.device)) if num_samples(ds) > 1 else counts
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


#: The fields of an epoch's evaluation in a run record, in their order (then ``class_weights``).
FIELDS = ("target_acc", "per_class_acc", "source_acc", "entropy", "snd", "im", "im_pda", "bnm", "dev",
          "mixval_inter", "mixval_intra", "mixval", "outlier_mass", "n_pred_classes")
_SCALARS = tuple(f for f in FIELDS if f != "per_class_acc") + ("labeled",)


@dataclass
class Evaluation:
    """Every member's evaluation of an epoch (:func:`evaluate`), tensors ``[P, ...]`` on the
    model's device, by name (:func:`member_scores`); :meth:`read` reads them on the host."""

    task: TaskData
    columns: dict[str, Tensor]
    #: Whether DEV was computed (else its field is ``None`` in every member's record).
    with_dev: bool = True
    #: Every member's DEV domain classifiers, the warm start of its next evaluation: set by :meth:`read`.
    dev_start: V.DevStart | None = None

    @property
    def p_t(self) -> Tensor:
        """Every member's mean target prediction ``[P, K]`` (the class weights of the next epoch)."""
        return self.columns["p_t"]

    def read(self, class_weights: Tensor) -> list[tuple[dict[str, Any], list[int]]]:
        """Every member's record fields (:data:`FIELDS`, then ``class_weights``, ``[P, K]``: the
        weights set from :attr:`p_t`) and target predictions (small ints, for the post-hoc EnsV
        selector), from one host read of the whole table; with it whether each member's DEV
        classifiers are usable as the warm start of its next evaluation (:attr:`dev_start`)."""
        cols = self.columns
        classifiers = cols["dev_classifiers"]
        parts = [torch.stack([cols[name].double() for name in _SCALARS], -1), cols["per_class_acc"].double(),
                 class_weights.double(), cols["target_pred"].double(),
                 torch.isfinite(classifiers.flatten(1)).all(-1).double()[:, None]]
        widths = [p.shape[-1] for p in parts]
        names, classes = self.task.class_names, self.task.target_classes
        out, usable = [], []
        for row in torch.cat(parts, -1).tolist():  # the one host read of the epoch
            scalars, per_class, weights, predictions, (finite,) = _split(row, widths)
            usable.append(finite == 1.0)
            values = dict(zip(_SCALARS, scalars))
            labeled = bool(values.pop("labeled"))
            metrics: dict[str, Any] = {name: values.get(name) for name in FIELDS}
            metrics["target_acc"] = values["target_acc"] if labeled else None
            metrics["dev"] = values["dev"] if self.with_dev else None
            metrics["per_class_acc"] = {names[k]: v for k, v in zip(classes, per_class) if labeled and v == v}  # NaN: no sample
            metrics["n_pred_classes"] = int(values["n_pred_classes"])
            metrics["class_weights"] = weights
            out.append((metrics, [int(v) for v in predictions]))
        self.dev_start = V.DevStart(classifiers, usable)
        return out


def _split(row: list[float], widths: list[int]) -> list[list[float]]:
    out, start = [], 0
    for width in widths:
        out.append(row[start:start + width])
        start += width
    return out


def evaluate(model: Model, source: Dataset, dev_start: V.DevStart | None = None, *, dev: bool = True) -> Evaluation:
    """Every member's evaluation of an epoch: one pass over the target set (with MixVal's mixed
    pairs) and one over the evaluation source ``source``, each batch through every member at once
    (:func:`collect_stack`), then every member's scores at once (:func:`member_scores`; on a CPU
    member by member, module docstring). ``dev_start``: the members' DEV classifiers of their
    previous evaluation (:attr:`Evaluation.dev_start`), DEV's warm start. ``dev`` false: DEV is not
    computed this epoch (the config's ``dev_every``); its record field is ``None`` and the members'
    classifiers carry over to the next evaluation. Nothing is read on the host:
    :meth:`Evaluation.read` reads the table once."""
    target = collect_stack(model, model.task.target_eval, mix=True)
    sources = collect_stack(model, source)
    if target.probs.device.type != "cpu":
        return Evaluation(model.task, member_scores(model.task, target, sources, dev_start, dev=dev), with_dev=dev)
    parts = [member_scores(model.task, target.rows(p), sources.rows(p), None if dev_start is None else dev_start.rows([p]), dev=dev)
             for p in range(target.probs.shape[0])]
    return Evaluation(model.task, {name: torch.cat([part[name] for part in parts]) for name in parts[0]}, with_dev=dev)


def member_scores(task: TaskData, target: Pass, source: Pass, dev_start: V.DevStart | None = None, *,
                  dev: bool = True) -> dict[str, Tensor]:
    """Every score of every member of a stack, ``[P, ...]`` on its device: the record's fields
    (:data:`FIELDS`; ``per_class_acc`` ``[P, C]`` over the task's target classes, NaN for a class
    without samples), ``p_t`` ``[P, K]``, ``target_pred`` ``[P, N]``, ``labeled`` (whether every
    target label is known) and ``dev_classifiers`` (DEV's domain classifiers, warm-started from
    ``dev_start``: :func:`ssot.validators.domain_fit`). Each member's scores are a function of its
    own slices (and start) only. ``dev`` false: no DEV (NaN) and the classifiers of ``dev_start``
    carried over (NaN, that is unusable, without one)."""
    pt, labels, device = target.probs, target.labels, target.probs.device
    pred = pt.argmax(-1)
    p_t = pt.mean(-2)
    members = pt.shape[0]
    classes = torch.tensor(task.target_classes, dtype=torch.long, device=device)
    of_class = labels[:, None] == classes  # [N, C]
    hits = ((pred[..., None] == classes) & of_class).sum(-2).double()
    outliers = torch.tensor(task.outlier_classes, dtype=torch.long, device=device)
    src_loss = -torch.log(source.probs.clamp_min(1e-12)).gather(-1, source.labels.expand(members, -1)[..., None])[..., 0]
    if dev:
        fit = V.domain_fit(source.feats, target.feats, start=dev_start)
        dev_value, classifiers = V.dev_risk(fit.weights, src_loss), fit.classifiers
    else:
        shape = (members, *V.classifier_shape(source.feats.shape[-2], target.feats.shape[-2], source.feats.shape[-1]))
        kept = dev_start.classifiers if dev_start is not None else None
        classifiers = kept if kept is not None and tuple(kept.shape) == shape else pt.new_full(shape, math.nan, dtype=torch.float64)
        dev_value = pt.new_full((members,), math.nan, dtype=torch.float64)
    scores = {
        "target_acc": (pred == labels).double().mean(-1),
        "per_class_acc": hits / of_class.sum(0).double(),
        "source_acc": (source.probs.argmax(-1) == source.labels).double().mean(-1),
        "entropy": V.entropy(pt), "snd": V.snd(pt), "im": V.im(pt), "im_pda": V.im_pda(pt),
        "dev": dev_value, "dev_classifiers": classifiers,
        **V.mixval(target.mix if target.mix is not None else pt.new_zeros(members, 4)),
        "outlier_mass": p_t[:, outliers].sum(-1).double(),
        "n_pred_classes": pt.new_zeros(pt.shape[0], pt.shape[-1]).scatter_(-1, pred, 1.0).sum(-1),
        "labeled": ((labels >= 0).all() & (labels.numel() > 0)).double().expand(members),
        "p_t": p_t, "target_pred": pred,
    }
    scores["bnm"] = V.bnm(pt)  # last: on a GPU its eigensolver checks its status on the host (one wait, at the end)
    return scores
