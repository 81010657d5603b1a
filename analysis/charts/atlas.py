"""Plotly figures of the atlas: each draws one info object or frame of the atlas's data modules.

Importance across tasks (:func:`analysis.data.importance.importance_frame`), signed effects
(:func:`analysis.data.effects.effects_frame`), tunability and its profiles
(:class:`analysis.data.tunability.TunabilityInfo`), the transfer matrix
(:class:`analysis.data.transfer.TransferInfo`), trust in early stopping
(:func:`analysis.data.rungs.rungs_frame`) and coverage (:class:`analysis.data.coverage.CoverageInfo`).
Every subtitle says how many trials or seeds the numbers rest on; :mod:`analysis.mpl.atlas`
draws the same objects with matplotlib.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.charts.style import TEMPLATE, empty_figure, figure_title, param_label
from analysis.data.coverage import CoverageInfo
from analysis.data.importance import EVALUATORS
from analysis.data.rungs import VERY_STRONG
from analysis.data.transfer import TransferInfo
from analysis.data.tunability import ALL, TunabilityInfo
from analysis.style import task_color

__all__ = ["importance_atlas_figure", "effects_figure", "tunability_figure",
           "profiles_figure", "transfer_figure", "rungs_figure", "coverage_figure"]

def _label(param: str) -> str:
    return "whole config" if param == ALL else param_label(param)


def _esc(text: object) -> str:
    """Text of the data (task names) inside Plotly's HTML-like labels (which decode ``&lt;``,
    ``&gt;`` and ``&amp;``, not ``&quot;``)."""
    return html.escape(str(text), quote=False)


def importance_atlas_figure(frame: pd.DataFrame, title: str = "") -> go.Figure:
    """Each hyperparameter's importance on each task, fANOVA and PED-ANOVA side by side: a box of
    the distribution over tasks with every task as a point (hover: its name and trials)."""
    fitted = frame.dropna(subset=["importance"])
    fitted = fitted[fitted["param"] != ""]
    tasks = list(dict.fromkeys(frame["task"]))
    counts = ", ".join(f"{_esc(t)} {int(frame.loc[frame['task'] == t, 'n_trials'].max())}" for t in tasks)
    subtitle = f"distribution over {len(tasks)} tasks; trials per task: {counts}"
    if fitted.empty:
        return empty_figure(title, subtitle, "no importance computed (too few trials on every task)")
    params = list(dict.fromkeys(fitted["param"]))
    labels = {e: frame.loc[frame["evaluator"] == e, "label"].iloc[0] for e in EVALUATORS if (frame["evaluator"] == e).any()}
    figure = make_subplots(rows=1, cols=len(labels), shared_yaxes=True,
                           subplot_titles=[_esc(label) for label in labels.values()])
    for column, evaluator in enumerate(labels, start=1):
        rows = fitted[fitted["evaluator"] == evaluator]
        figure.add_trace(go.Box(x=[_label(p) for p in rows["param"]], y=rows["importance"], name="spread over tasks",
                                marker={"color": "#999"}, boxpoints=False, showlegend=column == 1,
                                legendgroup="spread"), row=1, col=column)
        for index, task in enumerate(tasks):
            mine = rows[rows["task"] == task]
            if mine.empty:
                continue
            figure.add_trace(go.Scatter(
                x=[_label(p) for p in mine["param"]], y=mine["importance"], mode="markers", name=_esc(task),
                marker={"color": task_color(index), "size": 9}, legendgroup=_esc(task), showlegend=column == 1,
                customdata=np.column_stack([mine["n_trials"], mine["param"]]),
                hovertemplate=f"{_esc(task)}: %{{customdata[1]}} %{{y:.2f}}<br>%{{customdata[0]}} trials<extra></extra>",
            ), row=1, col=column)
    figure.update_xaxes(categoryorder="array", categoryarray=[_label(p) for p in params])
    figure.update_yaxes(range=[0, 1.05], title_text="importance (sums to 1 per task)", row=1, col=1)
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE, height=480, margin={"t": 90},
                         legend={"orientation": "h", "y": -0.18})
    return figure


def effects_figure(frame: pd.DataFrame, title: str = "") -> go.Figure:
    """Spearman's rank correlation of each hyperparameter with accuracy on each task (a
    diverging heatmap in [-1, 1]); each cell says rho, its direction and n (``?``: the interval
    holds 0)."""
    tasks = list(dict.fromkeys(frame["task"]))
    params = list(dict.fromkeys(frame["param"]))
    subtitle = ("Spearman's rho between the value and the accuracy over a task's trials; + larger is better, "
                "- smaller is better, ? unclear (95 % interval holds 0)")
    if frame.empty:
        return empty_figure(title, subtitle, "no searched hyperparameter")
    pivot = frame.set_index(["task", "param"])
    z = np.array([[pivot.loc[(t, p), "rho"] if (t, p) in pivot.index else np.nan for p in params] for t in tasks], dtype=float)
    text, hover = [], []
    for t in tasks:
        row_text, row_hover = [], []
        for p in params:
            if (t, p) not in pivot.index:
                row_text.append("")
                row_hover.append("")
                continue
            r = pivot.loc[(t, p)]
            if math.isnan(r["rho"]):
                row_text.append(f"n={r['n']}")
                row_hover.append(f"{_esc(t)}, {p}: {_esc(r['note'])}")
                continue
            row_text.append(f"{r['rho']:+.2f} {r['direction']}<br>n={r['n']}")
            interval = "" if math.isnan(r["low"]) else f"95 % interval [{r['low']:+.2f}, {r['high']:+.2f}]"
            row_hover.append(f"{_esc(t)}, {p}: rho {r['rho']:+.3f} on {r['n']} trials<br>{interval}")
        text.append(row_text)
        hover.append(row_hover)
    figure = go.Figure(go.Heatmap(z=z, x=[_label(p) for p in params], y=[_esc(t) for t in tasks], zmin=-1, zmax=1,
                                  colorscale="RdBu", text=text, texttemplate="%{text}", customdata=hover,
                                  hovertemplate="%{customdata}<extra></extra>", colorbar={"title": {"text": "rho"}}))
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE, height=max(320, 90 + 60 * len(tasks)),
                         margin={"t": 90}, yaxis={"autorange": "reversed"})
    return figure


def tunability_figure(info: TunabilityInfo, reference: str = "shared", title: str = "") -> go.Figure:
    """The loss of each task (points, with its bootstrap interval) when each hyperparameter, or the
    whole config, takes the shared value (``reference="shared"``) or the paper's default."""
    counts = ", ".join(f"{_esc(t)} {info.n_trials[t]}" for t in info.tasks)
    subtitle = (f"surrogate per task, bootstrap {info.n_bootstrap}x over trials (95 % intervals); trials per task: {counts}; "
                "1 seed per trial")
    rows = info.table[info.table["reference"] == reference] if not info.table.empty else info.table
    if rows.empty:
        return empty_figure(title, subtitle, "not computed: " + "; ".join(info.notes))
    figure = go.Figure()
    for index, task in enumerate(info.tasks):
        mine = rows[rows["task"] == task]
        figure.add_trace(go.Scatter(
            x=[_label(p) for p in mine["param"]], y=mine["loss"], mode="markers", name=_esc(task),
            marker={"color": task_color(index), "size": 10},
            error_y={"type": "data", "symmetric": False, "array": (mine["high"] - mine["loss"]).clip(lower=0),
                     "arrayminus": (mine["loss"] - mine["low"]).clip(lower=0)},
            customdata=np.column_stack([mine["value"].map(_esc), mine["low"], mine["high"], mine["own_best"], mine["n_trials"]]),
            hovertemplate=(f"{_esc(task)}: loses %{{y:.2f}} points [%{{customdata[1]:.2f}}, %{{customdata[2]:.2f}}]<br>"
                           "at %{customdata[0]}<br>own best %{customdata[3]:.1f} %, %{customdata[4]} trials<extra></extra>"),
        ))
    what = "the shared value (best across tasks)" if reference == "shared" else "the paper's default"
    figure.update_layout(title=figure_title(title or f"Tunability against {what}", subtitle), template=TEMPLATE, height=460,
                         scattermode="group", yaxis={"title": {"text": "accuracy lost (points)"}, "rangemode": "tozero"},
                         margin={"t": 90}, legend={"orientation": "h", "y": -0.18})
    return figure


def profiles_figure(info: TunabilityInfo, title: str = "") -> go.Figure:
    """Per hyperparameter, each task's profile (the best accuracy reachable with it held at each
    value, with its bootstrap band); the shared value dashed, the paper's default dotted."""
    if not info.profiles:
        return empty_figure(title, "", "not computed: " + "; ".join(info.notes))
    params = list(dict.fromkeys(p.param for p in info.profiles))
    figure = make_subplots(rows=1, cols=len(params), shared_yaxes=True, subplot_titles=[_label(p) for p in params])
    for profile in info.profiles:
        column = params.index(profile.param) + 1
        index = info.tasks.index(profile.task)
        color = task_color(index)
        x = [str(v) for v in profile.values] if profile.kind == "categorical" else profile.values
        if np.isfinite(profile.low).all():
            figure.add_trace(go.Scatter(x=[*x, *x[::-1]], y=[*(100 * profile.high), *(100 * profile.low[::-1])], fill="toself",
                                        fillcolor=color, opacity=0.15, line={"width": 0}, hoverinfo="skip", showlegend=False,
                                        legendgroup=_esc(profile.task)), row=1, col=column)
        figure.add_trace(go.Scatter(x=x, y=100 * profile.estimate, mode="lines+markers" if profile.kind == "categorical" else "lines",
                                    name=_esc(profile.task), line={"color": color}, legendgroup=_esc(profile.task),
                                    showlegend=column == 1,
                                    hovertemplate=f"{_esc(profile.task)}: %{{y:.1f}} % at {profile.param} = %{{x}}<extra></extra>"),
                         row=1, col=column)
        if index == 0:
            for position, dash in ((profile.shared, "dash"), (profile.default, "dot")):
                figure.add_vline(x=x[position], line={"dash": dash, "color": "#444", "width": 1}, row=1, col=column)
        figure.update_xaxes(type="log" if profile.kind == "log" else ("category" if profile.kind == "categorical" else "linear"),
                            row=1, col=column)
    subtitle = "surrogate estimate: best accuracy with the hyperparameter held at each value, the others tuned; dashed: shared value, dotted: paper's default"
    figure.update_yaxes(title_text="best reachable acc (%)", row=1, col=1)
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE, height=440, margin={"t": 90},
                         legend={"orientation": "h", "y": -0.2})
    return figure


def transfer_figure(info: TransferInfo, title: str = "") -> go.Figure:
    """The loss (points) of each source config on each task against the task's own best, paired
    over seeds; each cell says loss +- std and n seeds."""
    subtitle = f"rows: config replayed; columns: task it ran on; seeds {' '.join(map(str, info.seeds))}; loss = own best - replay"
    if not info.sources or not info.targets:
        return empty_figure(title, subtitle, "no replay of the atlas's tasks")
    text = [[("" if np.isnan(info.loss[i, j]) else f"{info.loss[i, j]:.1f} ± {info.loss_std[i, j]:.1f}<br>n={int(info.n_seeds[i, j])}")
             for j in range(len(info.targets))] for i in range(len(info.sources))]
    hover = [[(f"{_esc(s)} on {_esc(t)}: {info.acc[i, j]:.1f} % vs own {info.own[j]:.1f} %" if not np.isnan(info.acc[i, j]) else "")
              for j, t in enumerate(info.targets)] for i, s in enumerate(info.sources)]
    top = float(np.nanmax(np.abs(info.loss))) if np.isfinite(info.loss).any() else 1.0
    figure = go.Figure(go.Heatmap(z=info.loss, x=[_esc(t) for t in info.targets], y=[_esc(s) for s in info.sources],
                                  zmin=-max(top, 1e-9), zmax=max(top, 1e-9), colorscale="RdBu_r", text=text,
                                  texttemplate="%{text}", customdata=hover, hovertemplate="%{customdata}<extra></extra>",
                                  colorbar={"title": {"text": "loss (points)"}}))
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE,
                         height=max(340, 110 + 60 * len(info.sources)), margin={"t": 90},
                         xaxis={"title": {"text": "run on task"}, "side": "bottom"},
                         yaxis={"title": {"text": "best config of"}, "autorange": "reversed"})
    return figure


def rungs_figure(frame: pd.DataFrame, title: str = "") -> go.Figure:
    """Spearman's rho between each rung and the last epoch, per task (points with 95 %
    intervals; hover: n trials); DeepCAVE's 0.7 (very strong) dashed."""
    subtitle = f"trials that reached both the rung and the last epoch; dashed: {VERY_STRONG} (DeepCAVE: very strong)"
    drawn = frame.dropna(subset=["rho"])
    if drawn.empty:
        notes = "; ".join(sorted(set(frame["note"]))) if len(frame) else "no rung below the last epoch"
        return empty_figure(title, subtitle, f"not computed: {notes}"[:200])
    figure = go.Figure()
    for index, task in enumerate(dict.fromkeys(frame["task"])):
        mine = drawn[drawn["task"] == task]
        if mine.empty:
            continue
        figure.add_trace(go.Scatter(
            x=mine["rung"], y=mine["rho"], mode="lines+markers", name=_esc(task), line={"color": task_color(index)},
            error_y={"type": "data", "symmetric": False, "array": (mine["high"] - mine["rho"]).clip(lower=0),
                     "arrayminus": (mine["rho"] - mine["low"]).clip(lower=0)},
            customdata=np.column_stack([mine["n"], mine["strength"], mine["final_epoch"]]),
            hovertemplate=(f"{_esc(task)}: epoch %{{x}} vs %{{customdata[2]}}: rho %{{y:.2f}} (%{{customdata[1]}}), "
                           "%{customdata[0]} trials<extra></extra>"),
        ))
    figure.add_hline(y=VERY_STRONG, line={"dash": "dash", "color": "#555"})
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE, height=420, margin={"t": 90},
                         xaxis={"title": {"text": "rung (epoch)"}, "dtick": 1},
                         yaxis={"title": {"text": "Spearman's rho with the last epoch"}, "range": [-1.05, 1.05]})
    return figure


def coverage_figure(infos: Mapping[str, Sequence[CoverageInfo]], title: str = "") -> go.Figure:
    """Where the sampler searched: per hyperparameter, every proposal of every task (one row per
    task), coloured by its accuracy in the view (grey: outside it)."""
    tasks = list(infos)
    params = list(dict.fromkeys(c.param for items in infos.values() for c in items))
    counts = ", ".join(f"{_esc(t)} {items[0].n if items else 0}" for t, items in infos.items())
    subtitle = f"every trial proposed (any status); trials per task: {counts}"
    if not params:
        return empty_figure(title, subtitle, "no searched hyperparameter")
    figure = make_subplots(rows=1, cols=len(params), shared_yaxes=True, subplot_titles=[_label(p) for p in params])
    rng = np.random.default_rng(0)
    every = np.concatenate([100 * c.acc for items in infos.values() for c in items])
    low, high = (float(np.nanmin(every)), float(np.nanmax(every))) if np.isfinite(every).any() else (0.0, 100.0)
    for task_index, task in enumerate(tasks):
        for info in infos[task]:
            column = params.index(info.param) + 1
            jitter = task_index + rng.uniform(-0.25, 0.25, len(info.values))
            acc = 100 * info.acc
            outside = np.isnan(acc)
            x = [str(v) for v in info.values] if info.bins.kind in ("categorical", "grid") else info.values
            figure.add_trace(go.Scatter(
                x=np.asarray(x)[~outside], y=jitter[~outside], mode="markers", showlegend=False,
                marker={"color": acc[~outside], "colorscale": "Viridis", "cmin": low, "cmax": high, "size": 7,
                        "showscale": column == 1 and task_index == 0, "colorbar": {"title": {"text": "acc (%)"}}},
                hovertemplate=f"{_esc(task)}: {info.param} %{{x}}, acc %{{marker.color:.1f}} %<extra></extra>",
            ), row=1, col=column)
            if outside.any():
                figure.add_trace(go.Scatter(x=np.asarray(x)[outside], y=jitter[outside], mode="markers", showlegend=False,
                                            marker={"color": "#bbb", "size": 6, "symbol": "x"},
                                            hovertemplate=f"{_esc(task)}: {info.param} %{{x}} (not in the view)<extra></extra>"),
                                 row=1, col=column)
            if info.bins.kind in ("categorical", "grid"):
                figure.update_xaxes(type="category", categoryorder="array", categoryarray=[str(v) for v in info.bins.values],
                                    row=1, col=column)
            else:
                figure.update_xaxes(type="log" if info.bins.kind == "log" else "linear", row=1, col=column)
    figure.update_yaxes(tickvals=list(range(len(tasks))), ticktext=[_esc(t) for t in tasks], autorange="reversed", row=1, col=1)
    figure.update_layout(title=figure_title(title, subtitle), template=TEMPLATE, height=max(340, 120 + 55 * len(tasks)),
                         margin={"t": 90})
    return figure
