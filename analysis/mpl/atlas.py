"""Matplotlib renderings of the atlas's figures, for papers (no browser needed).

They draw the same info objects and frames as :mod:`analysis.charts.atlas`: importance across
tasks, signed effects, tunability, the transfer matrix, trust in early stopping and coverage.
Matplotlib is imported lazily, through its object API on an Agg canvas (as :mod:`analysis.mpl.figures`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.data.coverage import CoverageInfo
from analysis.data.importance import EVALUATORS
from analysis.data.rungs import VERY_STRONG
from analysis.data.transfer import TransferInfo
from analysis.data.tunability import ALL, TunabilityInfo
from analysis.mpl.figures import MPL_PARAM_LABELS
from analysis.style import task_color

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["importance_atlas_figure_mpl", "effects_figure_mpl", "tunability_figure_mpl", "transfer_figure_mpl",
           "rungs_figure_mpl", "coverage_figure_mpl"]


def _figure(width: float = 8.0, height: float = 4.6) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    return figure


def _titles(figure: Figure, title: str, subtitle: str) -> None:
    figure.text(0.01, 0.99, title, ha="left", va="top", fontsize=11)
    figure.text(0.01, 0.935, subtitle, ha="left", va="top", fontsize=7.5, color="#444", wrap=True)


def _label(param: str) -> str:
    return "whole config" if param == ALL else MPL_PARAM_LABELS.get(param, param)


def _text(name: object) -> str:
    """A task name as matplotlib text (a ``$`` would start mathtext)."""
    return str(name).replace("$", r"\$")


def _empty(figure: Figure, message: str) -> Figure:
    ax = figure.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#555", fontsize=11, wrap=True)
    return figure


def importance_atlas_figure_mpl(frame: pd.DataFrame, title: str = "") -> Figure:
    """Importance per task (points) and its spread over tasks (boxes), one panel per evaluator."""
    figure = _figure(9.0, 4.6)
    tasks = list(dict.fromkeys(frame["task"]))
    counts = ", ".join(f"{_text(t)} {int(frame.loc[frame['task'] == t, 'n_trials'].max())}" for t in tasks)
    _titles(figure, title, f"distribution over {len(tasks)} tasks; trials per task: {counts}")
    fitted = frame.dropna(subset=["importance"])
    fitted = fitted[fitted["param"] != ""]
    if fitted.empty:
        return _empty(figure, "no importance computed (too few trials on every task)")
    params = list(dict.fromkeys(fitted["param"]))
    evaluators = [e for e in EVALUATORS if (fitted["evaluator"] == e).any()]
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.22, top=0.8, wspace=0.08)
    axes = figure.subplots(1, len(evaluators), sharey=True, squeeze=False)[0]
    for ax, evaluator in zip(axes, evaluators, strict=True):
        rows = fitted[fitted["evaluator"] == evaluator]
        data = [rows.loc[rows["param"] == p, "importance"].to_numpy() for p in params]
        ax.boxplot(data, positions=range(len(params)), widths=0.5, showfliers=False,
                   medianprops={"color": "#555"}, boxprops={"color": "#999"}, whiskerprops={"color": "#999"})
        for index, task in enumerate(tasks):
            mine = rows[rows["task"] == task].set_index("param")
            xs = [i + (index - (len(tasks) - 1) / 2) * 0.08 for i, p in enumerate(params) if p in mine.index]
            ys = [mine.loc[p, "importance"] for p in params if p in mine.index]
            ax.scatter(xs, ys, color=task_color(index), s=22, zorder=3, label=_text(task) if ax is axes[0] else None)
        ax.set_xticks(range(len(params)), [_label(p) for p in params])
        ax.set_title(rows["label"].iloc[0], fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", color="#ebebeb")
    axes[0].set_ylabel("importance (sums to 1 per task)")
    figure.legend(loc="lower center", ncol=min(len(tasks), 6), fontsize=8, frameon=False)
    return figure


def effects_figure_mpl(frame: pd.DataFrame, title: str = "") -> Figure:
    """Spearman's rho of each hyperparameter with accuracy on each task, a diverging heatmap."""
    tasks = list(dict.fromkeys(frame["task"]))
    params = list(dict.fromkeys(frame["param"]))
    figure = _figure(7.0, 1.6 + 0.45 * max(len(tasks), 2))
    _titles(figure, title, "Spearman's rho over a task's trials; + larger is better, - smaller, ? unclear (95 % interval holds 0)")
    if frame.empty:
        return _empty(figure, "no searched hyperparameter")
    figure.subplots_adjust(left=0.16, right=0.95, bottom=0.12, top=0.78)
    ax = figure.add_subplot()
    pivot = frame.set_index(["task", "param"])
    z = np.array([[pivot.loc[(t, p), "rho"] if (t, p) in pivot.index else np.nan for p in params] for t in tasks], dtype=float)
    image = ax.imshow(np.ma.masked_invalid(z), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    for i, t in enumerate(tasks):
        for j, p in enumerate(params):
            if (t, p) not in pivot.index:
                continue
            r = pivot.loc[(t, p)]
            text = f"n={r['n']}" if math.isnan(r["rho"]) else f"{r['rho']:+.2f} {r['direction']}\nn={r['n']}"
            dark = not math.isnan(r["rho"]) and abs(r["rho"]) > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color="white" if dark else "black")
    ax.set_xticks(range(len(params)), [_label(p) for p in params])
    ax.set_yticks(range(len(tasks)), [_text(t) for t in tasks])
    figure.colorbar(image, ax=ax).set_label("rho")
    return figure


def tunability_figure_mpl(info: TunabilityInfo, reference: str = "shared", title: str = "") -> Figure:
    """Each task's loss (points, bootstrap interval) per hyperparameter and for the whole config."""
    figure = _figure(8.0, 4.6)
    counts = ", ".join(f"{_text(t)} {info.n_trials[t]}" for t in info.tasks)
    _titles(figure, title, f"surrogate per task, bootstrap {info.n_bootstrap}x over trials (95 %); trials per task: {counts}; "
                           "1 seed per trial")
    rows = info.table[info.table["reference"] == reference] if not info.table.empty else info.table
    if rows.empty:
        return _empty(figure, "not computed: " + "; ".join(info.notes))
    figure.subplots_adjust(left=0.09, right=0.98, bottom=0.2, top=0.82)
    ax = figure.add_subplot()
    params = list(dict.fromkeys(rows["param"]))
    for index, task in enumerate(info.tasks):
        mine = rows[rows["task"] == task].set_index("param").loc[params]
        xs = np.arange(len(params)) + (index - (len(info.tasks) - 1) / 2) * 0.12
        ax.errorbar(xs, mine["loss"], yerr=[(mine["loss"] - mine["low"]).clip(lower=0), (mine["high"] - mine["loss"]).clip(lower=0)], fmt="o",
                    color=task_color(index), capsize=3, label=_text(task))
    ax.set_xticks(range(len(params)), [_label(p) for p in params])
    ax.set_ylabel("accuracy lost (points)")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", color="#ebebeb")
    ax.legend(fontsize=8, ncol=min(len(info.tasks), 6), loc="upper left")
    return figure


def transfer_figure_mpl(info: TransferInfo, title: str = "") -> Figure:
    """The loss of each source config on each task against its own best (points), a heatmap."""
    figure = _figure(1.8 + 1.3 * max(len(info.targets), 2), 1.8 + 0.5 * max(len(info.sources), 2))
    _titles(figure, title, f"rows: config replayed; columns: task; seeds {' '.join(map(str, info.seeds))}; loss = own best - replay")
    if not info.sources or not info.targets:
        return _empty(figure, "no replay of the atlas's tasks")
    figure.subplots_adjust(left=0.22, right=0.95, bottom=0.14, top=0.8)
    ax = figure.add_subplot()
    top = float(np.nanmax(np.abs(info.loss))) if np.isfinite(info.loss).any() else 1.0
    image = ax.imshow(np.ma.masked_invalid(info.loss), cmap="RdBu_r", vmin=-max(top, 1e-9), vmax=max(top, 1e-9), aspect="auto")
    for i in range(len(info.sources)):
        for j in range(len(info.targets)):
            if not np.isnan(info.loss[i, j]):
                dark = abs(info.loss[i, j]) > 0.6 * top
                ax.text(j, i, f"{info.loss[i, j]:.1f} ± {info.loss_std[i, j]:.1f}\nn={int(info.n_seeds[i, j])}", ha="center",
                        va="center", fontsize=7.5, color="white" if dark else "black")
    ax.set_xticks(range(len(info.targets)), [_text(t) for t in info.targets])
    ax.set_yticks(range(len(info.sources)), [_text(s) for s in info.sources])
    ax.set_xlabel("run on task")
    ax.set_ylabel("best config of")
    figure.colorbar(image, ax=ax).set_label("loss (points)")
    return figure


def rungs_figure_mpl(frame: pd.DataFrame, title: str = "") -> Figure:
    """Spearman's rho between each rung and the last epoch per task; 0.7 dashed (very strong)."""
    figure = _figure(7.0, 4.4)
    _titles(figure, title, f"trials that reached both the rung and the last epoch; dashed: {VERY_STRONG} (DeepCAVE: very strong)")
    drawn = frame.dropna(subset=["rho"])
    if drawn.empty:
        return _empty(figure, "not computed: too few trials reached the last epoch")
    figure.subplots_adjust(left=0.1, right=0.98, bottom=0.12, top=0.82)
    ax = figure.add_subplot()
    for index, task in enumerate(dict.fromkeys(frame["task"])):
        mine = drawn[drawn["task"] == task]
        if mine.empty:
            continue
        ax.errorbar(mine["rung"], mine["rho"], yerr=[(mine["rho"] - mine["low"]).clip(lower=0), (mine["high"] - mine["rho"]).clip(lower=0)],
                    fmt="-o",
                    color=task_color(index), capsize=3, label=f"{_text(task)} (n={int(mine['n'].min())}-{int(mine['n'].max())})")
    ax.axhline(VERY_STRONG, ls="--", color="#555", lw=1)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("rung (epoch)")
    ax.set_ylabel("Spearman's rho with the last epoch")
    ax.grid(color="#ebebeb")
    ax.legend(fontsize=8, loc="lower right")
    return figure


def coverage_figure_mpl(infos: Mapping[str, Sequence[CoverageInfo]], title: str = "") -> Figure:
    """Every proposal of every task per hyperparameter, coloured by its accuracy (x: outside the view)."""
    tasks = list(infos)
    params = list(dict.fromkeys(c.param for items in infos.values() for c in items))
    figure = _figure(2.2 + 2.4 * max(len(params), 1), 1.8 + 0.45 * max(len(tasks), 2))
    counts = ", ".join(f"{_text(t)} {items[0].n if items else 0}" for t, items in infos.items())
    _titles(figure, title, f"every trial proposed (any status); trials per task: {counts}")
    if not params:
        return _empty(figure, "no searched hyperparameter")
    figure.subplots_adjust(left=0.1, right=0.92, bottom=0.15, top=0.78, wspace=0.08)
    axes = figure.subplots(1, len(params), sharey=True, squeeze=False)[0]
    every = np.concatenate([100 * c.acc for items in infos.values() for c in items])
    low, high = (float(np.nanmin(every)), float(np.nanmax(every))) if np.isfinite(every).any() else (0.0, 100.0)
    rng = np.random.default_rng(0)
    drawn = None
    for task_index, task in enumerate(tasks):
        for info in infos[task]:
            ax = axes[params.index(info.param)]
            jitter = task_index + rng.uniform(-0.25, 0.25, len(info.values))
            categorical = info.bins.kind in ("categorical", "grid")
            xs = np.array([list(info.bins.values).index(v) if v in info.bins.values else -1 for v in info.values], dtype=float) \
                if categorical else np.asarray(info.values, dtype=float)
            acc = 100 * info.acc
            inside = ~np.isnan(acc)
            drawn = ax.scatter(xs[inside], jitter[inside], c=acc[inside], cmap="viridis", vmin=low, vmax=high, s=12)
            ax.scatter(xs[~inside], jitter[~inside], color="#bbb", marker="x", s=10)
            if categorical:
                ax.set_xticks(range(len(info.bins.values)), [str(v) for v in info.bins.values], fontsize=7)
            elif info.bins.kind == "log":
                ax.set_xscale("log")
            ax.set_title(_label(info.param), fontsize=9)
    axes[0].set_yticks(range(len(tasks)), [_text(t) for t in tasks])
    axes[0].invert_yaxis()
    if drawn is not None:
        figure.colorbar(drawn, ax=list(axes), fraction=0.02, pad=0.01).set_label("acc (%)")
    return figure
