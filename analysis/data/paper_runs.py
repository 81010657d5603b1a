r"""What the paper's analysis figures show, read from run records and t-SNE files: its one owner.

The figures (class weights against the truth, OT solvers compared, feature maps) are drawn twice
from the same information: with matplotlib by :mod:`analysis.mpl.paper` (PNG/PDF for papers)
and with Plotly in the dashboard by :mod:`analysis.charts.paper`. Both call the functions here;
neither reads files or computes a number of its own.

A *run record* (:mod:`ssot.results.record`) is the JSON that ``python -m ssot.train --out``
writes, and that ``tune/final.py``, ``tune/ablation.py`` and ``tune/solvers.py`` write to
``OUT/<variant>/runs/<task>_seed<s>.json``. A *t-SNE file* is the ``.npz`` of
``python -m ssot.feature_maps``. This module never imports torch.

Class weights
-------------
The trainer stores the class weights :math:`m_k = \hat p^t_k / p^s_k` of every epoch (row 0 the
source-only model), normalised so that :math:`\sum_k p^s_k m_k = 1`; hence the estimated target
class proportions are :math:`\hat p^t = p^s \odot m`, drawn against the true proportions
:math:`p^t` of the labelled target. The *outlier mass* is :math:`\sum_{k \notin C_t} \hat p^t_k`,
the share of target predictions on classes absent from the target (the record's ``outlier_mass``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ssot.errors import ResultsError, SSOTError
from ssot.results.experiment import Problem
from ssot.results.record import RUNS_DIR, is_run_record
from ssot.results.record import read_record as read_run_record

__all__ = ["FigureError", "read_record", "has_class_weights", "estimated_proportions", "ClassWeightInfo",
           "class_weight_info", "SolverCurve", "SOLVER_LABELS", "solver_info", "FEATURE_MAP_KEYS",
           "read_feature_map", "FeaturePanel", "feature_map_panels", "PaperInputs", "find_paper_inputs", "paper_input_paths"]

Record = Mapping[str, Any]

#: Legend names of the ``ot_solver`` values, in the paper's wording.
SOLVER_LABELS = {"net": "Net. Param. (ours)", "vector": "vector potential (SGD)", "sinkhorn": "Sinkhorn"}
#: The arrays of a t-SNE file (``python -m ssot.feature_maps``).
FEATURE_MAP_KEYS = ("xy", "label", "domain", "model", "models", "outlier_classes")


class FigureError(SSOTError, ValueError):
    """A record or file cannot be drawn (message: the problem and the fix, one line)."""


def read_record(path: str | Path) -> dict[str, Any]:
    """A run record from ``path`` (:func:`ssot.results.record.read_record`), or
    :class:`FigureError` naming the problem."""
    try:
        return read_run_record(path, hint="pass a JSON file written by python -m ssot.train --out").to_dict()
    except ResultsError as exc:
        raise FigureError(str(exc)) from None


# ------------------------------------------------------------------------------ class weights
def has_class_weights(record: Record) -> bool:
    """Whether ``record`` can be drawn against the truth: class weights were estimated (not
    ``use_class_weights=false``), the target is labelled, and per-epoch weights were recorded."""
    return (bool(record.get("source_class_freq")) and bool(record.get("target_class_freq"))
            and bool(record["config"].get("use_class_weights", True))
            and bool(record.get("epochs")) and all("class_weights" in e for e in record["epochs"]))


def estimated_proportions(record: Record) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Estimated target class proportions per epoch, the true ones, and the source ones.

    :math:`\hat p^t = p^s \odot m` for each recorded epoch (see the module docstring).

    Returns
    -------
    (E, K) estimated proportions (row 0 = source-only when recorded), (K,) true target
    proportions, (K,) source proportions.
    """
    if not record.get("source_class_freq") or not record.get("target_class_freq"):
        raise FigureError("The run record has no source_class_freq/target_class_freq (an unlabelled target, or a record "
                          "written before they were recorded); draw a run of this version of ssot on a labelled target.")
    if not record["config"].get("use_class_weights", True):
        raise FigureError("The run used use_class_weights=false, so its class weights are all 1; draw a run with class weights.")
    p_s = np.asarray(record["source_class_freq"], dtype=float)
    true = np.asarray(record["target_class_freq"], dtype=float)
    rows = ([record["source_only"]] if record.get("source_only") else []) + list(record["epochs"])
    m = np.array([r["class_weights"] for r in rows], dtype=float)
    return m * p_s[None, :], true, p_s


@dataclass(frozen=True)
class ClassWeightInfo:
    """Everything the class-weight figure shows.

    Attributes
    ----------
    title : str
        ``Class weights vs truth, task <name>``.
    names : list of str
        Class names.
    outliers : list of int
        Classes absent from the target (dashed/red in the figures).
    epochs : ndarray
        Epoch of each estimate row (0 = source-only when recorded).
    estimate : ndarray, shape (E, K)
        Estimated target class proportions per epoch.
    truth : ndarray, shape (K,)
        True target class proportions.
    outlier_mass : float
        Mass left on the outlier classes at the last epoch (the record's ``outlier_mass``).
    outlier_mass_source_only : float or None
        The same for the source-only model.
    target_acc : float or None
        Target accuracy at the last epoch.
    """

    title: str
    names: list[str]
    outliers: list[int]
    epochs: np.ndarray
    estimate: np.ndarray
    truth: np.ndarray
    outlier_mass: float
    outlier_mass_source_only: float | None
    target_acc: float | None


def class_weight_info(record: Record) -> ClassWeightInfo:
    """The class-weight figure's content of one run record (:class:`FigureError` if it has none)."""
    est, true, _ = estimated_proportions(record)
    task = record.get("task") or {}
    K = len(true)
    names = [str(n) for n in (task.get("class_names") or range(K))]
    targets = set(task.get("target_classes") or np.flatnonzero(true > 0).tolist())
    outliers = [k for k in range(K) if k not in targets]
    first = 0 if record.get("source_only") else 1
    last = record["epochs"][-1]
    mass = last.get("outlier_mass", float(est[-1, outliers].sum()))
    so = record.get("source_only") or {}
    return ClassWeightInfo(
        title=f"Class weights vs truth, task {task.get('name', record['config'].get('task'))}", names=names,
        outliers=outliers, epochs=np.arange(first, first + est.shape[0]), estimate=est, truth=true,
        outlier_mass=float(mass), outlier_mass_source_only=so.get("outlier_mass"), target_acc=last.get("target_acc"))


# ------------------------------------------------------------------------------ OT solvers
@dataclass(frozen=True)
class SolverCurve:
    """One ``ot_solver`` of a comparison: the OT value per epoch (mean over its runs), the mean
    time per adaptation epoch (s), its runs' mean final target accuracy, and the number of runs."""

    solver: str
    label: str
    epochs: np.ndarray
    values: np.ndarray
    time_per_epoch: float
    target_acc: float
    n_runs: int


def solver_info(records: Sequence[Record]) -> list[SolverCurve]:
    r"""Per ``ot_solver`` in ``records`` (net, vector, sinkhorn, then others): OT value per epoch and time per epoch.

    The value is each run's ``ot_value`` (net/vector: the semi-dual :math:`H` before the ascent
    step; sinkhorn: the plan's cost :math:`\langle P, \tilde C\rangle`), averaged over the
    epoch's iterations; several seeds of one solver are averaged over their common epochs.
    """
    by_solver: dict[str, list[Record]] = {}
    for r in records:
        if r.get("epochs"):
            by_solver.setdefault(r["config"].get("ot_solver", "net"), []).append(r)
    if not by_solver:
        raise FigureError("No run record with epochs to draw. Pass run records of runs with different --ot-solver.")
    curves = []
    order = list(SOLVER_LABELS)
    for name, runs in sorted(by_solver.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)):
        n = min(len(r["epochs"]) for r in runs)
        curves.append(SolverCurve(
            solver=name, label=SOLVER_LABELS.get(name, name), epochs=np.arange(1, n + 1),
            values=np.mean([[e["ot_value"] for e in r["epochs"][:n]] for r in runs], axis=0),
            time_per_epoch=float(np.mean([e["time_s"] for r in runs for e in r["epochs"]])),
            target_acc=float(np.mean([r["epochs"][-1]["target_acc"] for r in runs])), n_runs=len(runs)))
    return curves


# ------------------------------------------------------------------------------ feature maps
def read_feature_map(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of a t-SNE file, or :class:`FigureError` naming the problem."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise FigureError(f"The t-SNE file {path} cannot be read ({exc}). Write it with python -m ssot.feature_maps.") from None
    missing = [k for k in FEATURE_MAP_KEYS if k not in arrays]
    if missing:
        raise FigureError(f"{path} is not a t-SNE file of python -m ssot.feature_maps (no {', '.join(missing)}). Write it with python -m ssot.feature_maps.")
    return arrays


@dataclass(frozen=True)
class FeaturePanel:
    """The points of one model of a t-SNE file: ``xy`` (n, 2), ``label``, ``domain`` (0 source,
    1 target) and ``outlier`` (the label is an outlier class)."""

    model: str
    xy: np.ndarray
    label: np.ndarray
    domain: np.ndarray
    outlier: np.ndarray


def feature_map_panels(data: Mapping[str, Any]) -> list[FeaturePanel]:
    """One panel per model of a t-SNE file (``data``: the arrays of :data:`FEATURE_MAP_KEYS`)."""
    xy, label = np.asarray(data["xy"]), np.asarray(data["label"])
    domain, model = np.asarray(data["domain"]), np.asarray(data["model"])
    outliers = np.asarray(data["outlier_classes"])
    panels = []
    for i, name in enumerate(np.asarray(data["models"]).tolist()):
        sel = model == i
        panels.append(FeaturePanel(str(name), xy[sel], label[sel], domain[sel], np.isin(label[sel], outliers)))
    return panels


# ------------------------------------------------------------------------------ finding the inputs
@dataclass
class PaperInputs:
    """The paper-analysis inputs found under a results folder.

    Attributes
    ----------
    records : dict of Path to record
        Every readable run record: ``*/runs/*.json`` at any depth, and run records directly in
        the folder.
    feature_maps : dict of Path to arrays
        Every readable t-SNE file (``*.npz`` holding :data:`FEATURE_MAP_KEYS`).
    problems : list of Problem
        Unreadable run records and t-SNE files, one each.
    """

    records: dict[Path, dict[str, Any]]
    feature_maps: dict[Path, dict[str, np.ndarray]]
    problems: list[Problem]

    def solver_comparisons(self) -> dict[tuple[Path, str], list[dict[str, Any]]]:
        """Run records of one task under one output folder (``OUT`` of ``OUT/<variant>/runs/``)
        that differ in ``ot_solver``: the output of ``tune/solvers.py``, keyed by (folder, task)."""
        groups: dict[tuple[Path, str], list[dict[str, Any]]] = {}
        for path, record in self.records.items():
            if path.parent.name == RUNS_DIR:
                groups.setdefault((path.parent.parent.parent, str(record["config"].get("task"))), []).append(record)
        return {key: rs for key, rs in groups.items() if len({r["config"].get("ot_solver", "net") for r in rs}) > 1}

    def __bool__(self) -> bool:
        return bool(self.records or self.feature_maps)


def _candidates(root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """The files :func:`find_paper_inputs` opens under ``root``: JSON files in ``runs`` folders,
    JSON files directly in ``root``, ``.npz`` files (each sorted)."""
    return sorted(root.rglob(f"{RUNS_DIR}/*.json")), sorted(root.glob("*.json")), sorted(root.rglob("*.npz"))


def paper_input_paths(root: str | Path) -> list[Path]:
    """Every file :func:`find_paper_inputs` reads under ``root`` (none when it is not a folder):
    what a command that draws them may never write over."""
    root = Path(root)
    return [p for group in _candidates(root) for p in group] if root.is_dir() else []


def find_paper_inputs(root: str | Path) -> PaperInputs:
    """Run records and t-SNE files under ``root`` (see :class:`PaperInputs`), sorted by path.

    A JSON file directly in ``root`` that is not a run record (e.g. a config), and a readable
    ``.npz`` without the arrays of a t-SNE file, are skipped silently; a run record in a ``runs``
    folder or an ``.npz`` that cannot be read is a problem.
    """
    root = Path(root)
    records: dict[Path, dict[str, Any]] = {}
    problems: list[Problem] = []
    if not root.is_dir():
        return PaperInputs({}, {}, [])
    in_runs, in_root, maps_found = _candidates(root)
    for path in in_runs:
        try:
            records[path] = read_record(path)
        except FigureError as exc:
            problems.append(Problem(path, str(exc)))
    for path in in_root:
        try:
            record = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if is_run_record(record):
            records[path] = record
    maps: dict[Path, dict[str, np.ndarray]] = {}
    for path in maps_found:
        try:
            maps[path] = read_feature_map(path)
        except FigureError as exc:
            if "cannot be read" in str(exc):  # another program's .npz is skipped silently
                problems.append(Problem(path, str(exc)))
    return PaperInputs(records, maps, problems)
