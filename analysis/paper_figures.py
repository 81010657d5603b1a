"""The paper's analysis figures, drawn from run-record JSON files only (matplotlib, PNG/PDF).

- :func:`solver_figure`: OT value per epoch and time per epoch of runs that differ in
  ``ot_solver`` (the paper's "Optimization comparison");
- :func:`class_weight_figure`: estimated target class proportions per epoch against the true
  ones, outlier classes marked, and the mass left on outlier classes (the paper's "Class weight
  visualization");
- :func:`feature_map_figure`: a t-SNE embedding file (``tune/feature_maps.py``) drawn per model,
  coloured by class, marked by domain, outlier classes grey.

A run record is the JSON that ``python -m ssot.train --out`` and ``tune/final.py`` write. This
module never imports torch or ssot.

    python analysis/paper_figures.py solvers RUN.json [RUN.json ...] --out solvers.png
    python analysis/paper_figures.py class-weights RUN.json --out class_weights.png
    python analysis/paper_figures.py feature-map tsne.npz --out tsne.png
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["read_record", "estimated_proportions", "class_weight_figure", "solver_figure", "feature_map_figure", "main"]

Record = Mapping[str, Any]


class FigureError(ValueError):
    """A record or file cannot be drawn (message: the problem and the fix, one line)."""


def read_record(path: str | Path) -> dict[str, Any]:
    """A run record from ``path``, or :class:`FigureError` naming the problem."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise FigureError(f"The run record {path} cannot be read ({exc}). Pass a JSON file written by --out.") from None
    if not isinstance(record, dict) or "epochs" not in record or "config" not in record:
        raise FigureError(f"{path} is not a run record (no config and epochs). Pass a file written by python -m ssot.train --out.")
    return record


def estimated_proportions(record: Record) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Estimated target class proportions per epoch, the true ones, and the source ones.

    The record stores the class weights :math:`m_k = \hat p^t_k / p^s_k` per epoch (epoch 0: the
    source-only model), so :math:`\hat p^t = p^s \odot m`.

    Returns
    -------
    (E, K) estimated proportions (row 0 = source-only), (K,) true target proportions, (K,) source.
    """
    if "source_class_freq" not in record or "target_class_freq" not in record:
        raise FigureError("The run record has no source_class_freq/target_class_freq; rerun it with this version of ssot.")
    if not record["config"].get("use_class_weights", True):
        raise FigureError("The run used use_class_weights=false, so its class weights are all 1; draw a run with class weights.")
    p_s = np.asarray(record["source_class_freq"], dtype=float)
    true = np.asarray(record["target_class_freq"], dtype=float)
    rows = ([record["source_only"]] if record.get("source_only") else []) + list(record["epochs"])
    m = np.array([r["class_weights"] for r in rows], dtype=float)
    return m * p_s[None, :], true, p_s


def class_weight_figure(record: Record) -> plt.Figure:
    """(a) estimated vs true proportion per class over epochs (outliers dashed red); (b) the
    final estimate beside the truth as bars, with the final outlier mass in the title."""
    est, true, _ = estimated_proportions(record)
    task = record.get("task", {})
    K = len(true)
    names = task.get("class_names") or [str(k) for k in range(K)]
    targets = set(task.get("target_classes") or np.flatnonzero(true > 0).tolist())
    epochs = np.arange(est.shape[0])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 3]  # red is for outliers
    colour = {k: palette[i % len(palette)] for i, k in enumerate(sorted(targets))}
    for k in range(K):
        outlier = k not in targets
        ax.plot(epochs, est[:, k], ls="--" if outlier else "-", color="tab:red" if outlier else colour[k],
                lw=1.2, label=f"{names[k]}{' (outlier)' if outlier else ''}")
        if not outlier:
            ax.axhline(true[k], color=colour[k], lw=0.6, ls=":")
    ax.set(xlabel="epoch (0 = source-only)", ylabel="estimated target proportion", title="estimate per class (dotted: truth)")
    ax.legend(fontsize=7, ncol=2)
    x = np.arange(K)
    outlier_mass = float(est[-1, [k for k in range(K) if k not in targets]].sum())
    bx.bar(x - 0.2, true, 0.4, label="true (oracle)", color="0.6")
    bx.bar(x + 0.2, est[-1], 0.4, label="SSOT estimate", color=["tab:red" if k not in targets else "tab:blue" for k in range(K)])
    bx.set_xticks(x, names, rotation=45 if K > 12 else 0, fontsize=7)
    bx.set(ylabel="target proportion", title=f"final epoch; mass on outlier classes {outlier_mass:.3f}")
    bx.legend(fontsize=8)
    fig.suptitle(f"Class weights vs truth, task {task.get('name', record['config'].get('task'))}")
    fig.tight_layout()
    return fig


def solver_figure(records: Sequence[Record]) -> plt.Figure:
    """(a) OT value per epoch and (b) mean time per epoch (s) of runs with different ``ot_solver``.

    The value drawn is each run's ``ot_value`` (net/vector: the semi-dual :math:`H` before the
    ascent step; sinkhorn: the plan's cost :math:`\\langle P, \\tilde C\\rangle`), averaged over
    the epoch's iterations; several seeds of one solver are averaged.
    """
    by_solver: dict[str, list[Record]] = {}
    for r in records:
        by_solver.setdefault(r["config"].get("ot_solver", "net"), []).append(r)
    if not by_solver:
        raise FigureError("No run record to draw. Pass run records of runs with different --ot-solver.")
    labels = {"net": "Net. Param. (ours)", "vector": "vector potential (SGD)", "sinkhorn": "Sinkhorn"}
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    times = []
    for name, runs in by_solver.items():
        n = min(len(r["epochs"]) for r in runs)
        values = np.mean([[e["ot_value"] for e in r["epochs"][:n]] for r in runs], axis=0)
        ax.plot(np.arange(1, n + 1), values, marker="o", ms=3, label=labels.get(name, name))
        times.append((labels.get(name, name), float(np.mean([e["time_s"] for r in runs for e in r["epochs"]]))))
    ax.set(xlabel="epoch", ylabel="OT value (epoch mean)", title="OT value")
    ax.legend(fontsize=8)
    bx.bar([t[0] for t in times], [t[1] for t in times], color="tab:blue")
    for i, (_, t) in enumerate(times):
        bx.text(i, t, f"{t:.1f}", ha="center", va="bottom", fontsize=8)
    bx.set(ylabel="time per epoch (s)", title="time per adaptation epoch")
    bx.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    return fig


def feature_map_figure(data: Mapping[str, Any]) -> plt.Figure:
    """One panel per model of a t-SNE file: ``o`` source, ``+`` target, colour = class, outlier
    classes grey. ``data`` has arrays ``xy`` (n, 2), ``label``, ``domain`` (0 source, 1 target),
    ``model`` (index into ``models``), and ``models``, ``outlier_classes``."""
    models = [str(m) for m in np.asarray(data["models"]).tolist()]
    xy, label = np.asarray(data["xy"]), np.asarray(data["label"])
    domain, model = np.asarray(data["domain"]), np.asarray(data["model"])
    outliers = set(np.asarray(data["outlier_classes"]).tolist())
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.6), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for i, (ax, name) in enumerate(zip(axes[0], models)):
        for dom in (0, 1):
            sel = (model == i) & (domain == dom)
            colours = ["0.75" if c in outliers else cmap(int(c) % 10) for c in label[sel]]
            if dom == 0:
                ax.scatter(xy[sel, 0], xy[sel, 1], marker="o", s=12, lw=0.7, facecolors="none", edgecolors=colours)
            else:
                ax.scatter(xy[sel, 0], xy[sel, 1], marker="+", s=20, lw=0.8, c=colours)
        ax.set(title=f"{name}  (o source, + target, grey: outlier classes)", xticks=[], yticks=[])
    fig.tight_layout()
    return fig


def _save(fig: plt.Figure, out: Path) -> Path:
    if out.exists():
        raise FigureError(f"{out} already exists; choose another --out (figures are never overwritten).")
    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise FigureError(f"The '--out' argument must end in .png, .pdf or .svg. Got {out.name!r} instead.")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``solvers`` / ``class-weights`` / ``feature-map`` sub-commands; 0, or 2 on a user error."""
    parser = argparse.ArgumentParser(prog="python analysis/paper_figures.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("figure", choices=("solvers", "class-weights", "feature-map"))
    parser.add_argument("inputs", nargs="+", type=Path, help="run records (JSON), or one t-SNE file (.npz)")
    parser.add_argument("--out", type=Path, required=True, help="the figure (.png, .pdf or .svg); never overwritten")
    args = parser.parse_args(argv)
    try:
        if args.out.exists():
            raise FigureError(f"{args.out} already exists; choose another --out (figures are never overwritten).")
        if args.figure == "feature-map":
            if not args.inputs[0].is_file():
                raise FigureError(f"The t-SNE file {args.inputs[0]} does not exist. Write it with tune/feature_maps.py.")
            fig = feature_map_figure(dict(np.load(args.inputs[0], allow_pickle=False)))
        elif args.figure == "solvers":
            fig = solver_figure([read_record(p) for p in args.inputs])
        else:
            record = read_record(args.inputs[0])
            fig = class_weight_figure(record)
            est, true, _ = estimated_proportions(record)
            outl = [k for k in range(len(true)) if true[k] == 0]
            print(f"final mass on outlier classes: {est[-1, outl].sum():.4f} (source-only {est[0, outl].sum():.4f})")
        print(f"wrote {_save(fig, args.out)}")
    except (FigureError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
