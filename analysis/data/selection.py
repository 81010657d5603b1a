"""Regret of label-free model selection against the oracle (target accuracy): pure data.

Two selection problems, kept apart as in BenchmarkPDA (Salvador et al., TMLR 2023):

*hyperparameter selection*
    over the completed trials of one search, each validator picks the trial whose *final-epoch*
    score is best (in the validator's direction, ties to the lowest trial id: the ranking of the
    best-trial rule, :func:`ssot.results.trials.rank`); the oracle picks the highest final-epoch
    target accuracy. ``regret = 100 (acc_oracle - acc_picked)`` points. Rank correlations
    (Spearman, Kendall) between the direction-signed validator and the accuracy over the trials.
    ``ensv`` (agreement with the majority vote of all completed trials' final predictions) is
    added when ``trials.csv`` carries the final predictions (column ``target_pred``).
*epoch selection*
    within each completed trial, each validator picks an epoch; the oracle the epoch with the best
    accuracy; the regret is averaged over trials. ``last_epoch`` (the paper's protocol: report the
    last epoch) is a selector too.

*combined selectors* (post hoc, :data:`COMBINED`)
    scores of a set of candidates (the trials of a search, or the epochs of one trial) built from
    the recorded validators, added as further selectors wherever their inputs were recorded:
    ``mixval_rank`` (MixVal as published: the mean of each candidate's ranks under
    ``mixval_inter`` and ``mixval_intra``), ``rank_mean`` (the mean rank under ``im_pda``,
    ``bnm``, ``dev`` and ``mixval``: four families, prediction structure, source risk, probes)
    and ``<validator>_guarded`` (the validator among the candidates that are not *collapsed*:
    those predicting at least :data:`GUARD_SHARE` of the most classes any candidate predicts,
    column ``n_pred_classes``; every epoch records it, and it needs no label).

Validator directions come from ``experiment.json`` (``validator_directions``, written by the
search). Everything but :func:`read_experiments` is a pure function of a per-(trial, epoch)
DataFrame with columns ``trial_id``, ``epoch``, ``status``, ``target_acc`` and the validator
columns. ``python analysis/selection.py`` writes the tables; the dashboard shows them per
experiment (:mod:`analysis.dashboard.regret`).
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ssot.results import discovery
from ssot.results.markdown import bold, markdown_table
from ssot.results.trials import COMPLETED, PREDICTIONS_COLUMN, rank

ORACLE = "target_acc"
SELECTION_COLUMNS = ["task", "experiment", "selection", "validator", "direction", "n", "picked_acc", "oracle_acc",
                     "regret", "spearman", "kendall", "picked_trial", "oracle_trial"]
CSV_NAME, MARKDOWN_NAME = "selection.csv", "selection.md"


def _completed(frame: pd.DataFrame) -> pd.DataFrame:
    done = frame[frame["status"] == COMPLETED].copy()
    done["epoch"] = pd.to_numeric(done["epoch"], errors="coerce")
    return done.dropna(subset=["epoch"]).sort_values(["trial_id", "epoch"], kind="stable")


def _signed(values: pd.Series, direction: str) -> pd.Series:
    """Scores turned so that higher is better."""
    values = pd.to_numeric(values, errors="coerce")
    return values if direction == "max" else -values


#: The collapse guard keeps the candidates predicting at least this share of the most classes any
#: candidate predicts (``n_pred_classes``; 0.5: a model on 3 of the 6 classes the best-spread one
#: uses stays, one on 2 does not).
GUARD_SHARE = 0.5
GUARD_COLUMN = "n_pred_classes"
#: The validators :func:`guarded` wraps (every per-epoch validator but MixVal's two halves).
GUARDED = ("source_acc", "entropy", "snd", "im", "im_pda", "bnm", "dev", "mixval")
#: The families ``rank_mean`` averages: prediction structure (IM-PDA, BNM), source risk (DEV), probes (MixVal).
RANK_MEAN = ("im_pda", "bnm", "dev", "mixval")


def ranks(candidates: pd.DataFrame, names: Sequence[str], directions: Mapping[str, str]) -> pd.Series:
    """Mean over ``names`` of each candidate's rank (1 = worst, ties averaged; a missing score
    ranks last), higher is better."""
    parts = [_signed(candidates[n], directions[n]).rank(method="average", na_option="top") for n in names]
    return sum(parts) / len(parts)


def guarded(candidates: pd.DataFrame, name: str, directions: Mapping[str, str]) -> pd.Series:
    """Validator ``name`` (signed: higher is better) on the non-collapsed candidates, NaN (never
    picked) on the others (:data:`GUARD_SHARE` of the most predicted classes)."""
    n_pred = pd.to_numeric(candidates[GUARD_COLUMN], errors="coerce")
    return _signed(candidates[name], directions[name]).where(n_pred >= GUARD_SHARE * n_pred.max())


@dataclass(frozen=True)
class Combined:
    """A post-hoc selector: a score (higher is better) of a set of candidates from recorded columns."""

    name: str
    needs: tuple[str, ...]
    score: Callable[[pd.DataFrame, Mapping[str, str]], pd.Series]


def _guard(name: str) -> Combined:
    return Combined(f"{name}_guarded", (name, GUARD_COLUMN), lambda c, d: guarded(c, name, d))


#: Every combined selector, in the order of the tables.
COMBINED: tuple[Combined, ...] = (
    Combined("mixval_rank", ("mixval_inter", "mixval_intra"), lambda c, d: ranks(c, ("mixval_inter", "mixval_intra"), d)),
    Combined("rank_mean", RANK_MEAN, lambda c, d: ranks(c, RANK_MEAN, d)),
    *(_guard(n) for n in GUARDED),
)


def with_combined(candidates: pd.DataFrame, directions: Mapping[str, str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """``candidates`` with a column per :data:`COMBINED` selector whose inputs (columns and, for
    validators, directions) are there, and the directions extended with them (``"max"``)."""
    out, dirs = candidates.copy(), dict(directions)
    for comb in COMBINED:
        if all(n in out and (n == GUARD_COLUMN or n in directions) for n in comb.needs) and len(out):
            out[comb.name] = comb.score(out, directions)
            dirs[comb.name] = "max"
    return out, dirs


def ensv_scores(final: pd.DataFrame) -> pd.Series:
    r"""EnsV (Hu, Luo, Liang, Foo, "Towards Reliable Model Selection for Unsupervised Domain
    Adaptation: An Empirical Study and A Certified Baseline", NeurIPS 2024) of each trial: its
    agreement with the ensemble of all trials (higher is better).

    Each row's ``target_pred`` holds the trial's final target predictions as space-separated class
    indices (hard votes, :data:`ssot.results.trials.PREDICTIONS_COLUMN`). The ensemble label of
    sample :math:`i` is the class most trials predict (ties: the lowest class), and

    .. math:: \mathrm{EnsV}_c = \frac1N \sum_i \mathbb 1[\hat y^{(c)}_i = \hat y^{ens}_i].

    All NaN when the trials' predictions differ in length or are empty (no common target set)."""
    preds = final[PREDICTIONS_COLUMN].map(lambda s: np.array([int(v) for v in str(s).split()]))
    lengths = preds.map(len)
    if preds.empty or lengths.nunique() != 1 or lengths.iloc[0] == 0:
        return pd.Series(np.nan, index=final.index)
    labels = np.stack(preds.to_list())
    k = int(labels.max()) + 1
    votes = np.zeros((labels.shape[1], k), dtype=np.int64)
    for row in labels:
        votes[np.arange(labels.shape[1]), row] += 1
    ens = votes.argmax(1)
    return pd.Series((labels == ens).mean(1), index=final.index)


def _rank_corr(score: pd.Series, acc: pd.Series) -> tuple[float, float]:
    ok = score.notna() & acc.notna()
    if ok.sum() < 3 or score[ok].nunique() < 2 or acc[ok].nunique() < 2:
        return math.nan, math.nan
    pair = pd.DataFrame({"s": score[ok], "a": acc[ok]})
    return float(pair["s"].corr(pair["a"], method="spearman")), float(pair["s"].corr(pair["a"], method="kendall"))


def hyperparameter_selection(frame: pd.DataFrame, directions: Mapping[str, str]) -> pd.DataFrame:
    """One row per validator: the accuracy of the trial it picks at the final epoch vs the oracle.

    Parameters
    ----------
    frame : per-(trial, epoch) rows with ``trial_id``, ``epoch``, ``status``, ``target_acc``
        and validator columns (``target_pred``, optional, for EnsV).
    directions : validator -> ``"max"`` / ``"min"``.

    Returns
    -------
    DataFrame with columns ``validator, direction, n, picked_acc, oracle_acc, regret`` (points),
    ``spearman, kendall, picked_trial, oracle_trial`` (the ``trial_id`` each picks). Ties between
    trials go to the first trial in ``trial_id`` order.
    """
    final = _completed(frame).groupby("trial_id", sort=True).tail(1).reset_index(drop=True)
    acc = pd.to_numeric(final[ORACLE], errors="coerce") if ORACLE in final else pd.Series(dtype=float)
    final, dirs = with_combined(final, directions)
    if PREDICTIONS_COLUMN in final and final[PREDICTIONS_COLUMN].notna().all() and len(final):
        final["ensv"] = ensv_scores(final)
        dirs.setdefault("ensv", "max")
    rows = []
    best = rank(final, ORACLE) if ORACLE in final else final.iloc[:0]
    oracle = float(best[ORACLE].iloc[0]) if len(best) else math.nan
    oracle_trial = str(best["trial_id"].iloc[0]) if len(best) else ""
    for name, direction in dirs.items():
        if name == ORACLE or name not in final:
            continue
        score = _signed(final[name], direction)
        picks = rank(final, name, direction)  # the best-trial rule's ranking: best first, ties to the lowest id
        if picks.empty:
            continue
        picked = float(pd.to_numeric(picks[ORACLE], errors="coerce").iloc[0]) if ORACLE in picks else math.nan
        rho, tau = _rank_corr(score, acc)
        rows.append({"validator": name, "direction": direction, "n": int(score.notna().sum()), "picked_acc": picked,
                     "oracle_acc": oracle, "regret": 100 * (oracle - picked), "spearman": rho, "kendall": tau,
                     "picked_trial": str(picks["trial_id"].iloc[0]), "oracle_trial": oracle_trial})
    return pd.DataFrame(rows, columns=SELECTION_COLUMNS[3:])


def epoch_selection(frame: pd.DataFrame, directions: Mapping[str, str]) -> pd.DataFrame:
    """One row per validator (and ``last_epoch``): mean over completed trials of the accuracy at
    the epoch it picks, of the best epoch's accuracy, and the mean regret in points.

    ``spearman``/``kendall`` are the mean within-trial rank correlations over epochs; the picked
    and oracle trials are empty (every trial is a candidate's own problem).
    """
    done = _completed(frame)
    trials = [with_combined(trial, directions) for _, trial in done.groupby("trial_id", sort=True)]
    dirs = trials[0][1] if trials else dict(directions)
    selectors = {"last_epoch": "max", **{k: v for k, v in dirs.items() if k != ORACLE and k in trials[0][0]}} if trials else {}
    rows = []
    for name, direction in selectors.items():
        picked, best, rhos, taus = [], [], [], []
        for trial, _ in trials:
            acc = pd.to_numeric(trial[ORACLE], errors="coerce")
            score = trial["epoch"].astype(float) if name == "last_epoch" else _signed(trial[name], direction)
            if not score.notna().any() or not acc.notna().any():
                continue
            picked.append(float(acc.loc[score.idxmax()]))
            best.append(float(acc.max()))
            if name != "last_epoch":
                rho, tau = _rank_corr(score, acc)
                rhos.append(rho); taus.append(tau)
        if not picked:
            continue
        rows.append({"validator": name, "direction": direction, "n": len(picked), "picked_acc": float(np.mean(picked)),
                     "oracle_acc": float(np.mean(best)), "regret": 100 * float(np.mean(np.subtract(best, picked))),
                     "spearman": float(np.nanmean(rhos)) if any(r == r for r in rhos) else math.nan,
                     "kendall": float(np.nanmean(taus)) if any(t == t for t in taus) else math.nan,
                     "picked_trial": "", "oracle_trial": ""})
    return pd.DataFrame(rows, columns=SELECTION_COLUMNS[3:])


def selection_table(experiments: Sequence[tuple[Mapping, pd.DataFrame]]) -> pd.DataFrame:
    """Both selections for every ``(experiment.json dict, trials frame)``, in :data:`SELECTION_COLUMNS`."""
    parts = []
    for info, frame in experiments:
        dirs = info.get("validator_directions") or {}
        for kind, fn in (("hyperparameter", hyperparameter_selection), ("epoch", epoch_selection)):
            part = fn(frame, dirs)
            part.insert(0, "selection", kind)
            part.insert(0, "experiment", info.get("name", ""))
            part.insert(0, "task", info.get("task", ""))
            parts.append(part)
    if not parts:
        return pd.DataFrame(columns=SELECTION_COLUMNS)
    return pd.concat(parts, ignore_index=True)[SELECTION_COLUMNS]


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Cross-experiment summary: per (task, selection, validator) the median, worst (highest),
    mean and std of the regret and the mean rank correlations, over experiments (e.g. search
    seeds); sorted by median regret, then worst."""
    grouped = table.groupby(["task", "selection", "validator"], sort=False)
    out = grouped.agg(experiments=("regret", "size"), regret_median=("regret", "median"), regret_worst=("regret", "max"),
                      regret_mean=("regret", "mean"), regret_std=("regret", "std"),
                      spearman=("spearman", "mean"), kendall=("kendall", "mean")).reset_index()
    return out.sort_values(["task", "selection", "regret_median", "regret_worst"], kind="stable").reset_index(drop=True)


def to_markdown(summ: pd.DataFrame) -> str:
    """The summary as a Markdown table (regret in points: median and worst over experiments, the
    mean rank correlations)."""
    rows = []
    for r in summ.itertuples():
        corr = [("" if v != v else f"{v:.2f}") for v in (r.spearman, r.kendall)]
        rows.append([r.task, r.selection, r.validator, r.experiments, f"{r.regret_median:.1f}", f"{r.regret_worst:.1f}", *corr])
    return markdown_table(["task", "selection", "validator", "experiments", "median regret (points)", "worst regret",
                           "Spearman", "Kendall"], rows, "llllrrrr")


def task_tables(summ: pd.DataFrame) -> str:
    """One Markdown table per task, one row per selector: hyperparameter selection (median and
    worst regret over the experiments, mean Spearman and Kendall) beside epoch selection (median
    and worst regret), sorted by the hyperparameter median, then its worst."""
    parts = []
    for task, rows in summ.groupby("task", sort=False):
        hp = rows[rows["selection"] == "hyperparameter"].set_index("validator")
        ep = rows[rows["selection"] == "epoch"].set_index("validator")
        order = list(hp.sort_values(["regret_median", "regret_worst"], kind="stable").index)
        order += [v for v in ep.index if v not in order]
        n = int(rows["experiments"].max())

        def cell(frame: pd.DataFrame, v: str, col: str, fmt: str = "{:.1f}") -> str:
            value = frame.at[v, col] if v in frame.index else math.nan
            return "" if value != value else fmt.format(value)

        body = [[v, cell(hp, v, "regret_median"), cell(hp, v, "regret_worst"), cell(hp, v, "spearman", "{:.2f}"),
                 cell(hp, v, "kendall", "{:.2f}"), cell(ep, v, "regret_median"), cell(ep, v, "regret_worst")] for v in order]
        parts.append(f"{bold(task)} ({n} experiments; regret in points of target accuracy, median / worst over them)\n\n"
                     + markdown_table(["selector", "HP median", "HP worst", "HP Spearman", "HP Kendall", "epoch median",
                                       "epoch worst"], body, "lrrrrrr"))
    return "\n".join(parts)


@dataclass(frozen=True)
class Recipe:
    """The recommended label-free recipe for a new task (docs/selection.md states it and its
    measured regret; the dashboard's selection block repeats it).

    ``selector`` is the validator whose pick at the last epoch is the answer (an epoch validator,
    so that ``tune/search.py --metric`` and ``tune/confirm.py`` use it directly); ``lines`` the
    recipe in short form.
    """

    selector: str
    lines: tuple[str, ...]


RECIPE = Recipe(
    selector="im_pda",
    lines=(
        "Search: random search, at least 32 configs, every trial to its last epoch, one seed each: "
        "python tune/search.py --task TASK --search random --num-samples 32 --no-early-stop --metric im_pda.",
        "Pick: the trial with the highest im_pda at its last epoch (IM whose diversity term counts only the classes "
        "the model predicts): that search's best_config.json.",
        "Seeds: confirm the top 3 by im_pda on 3 new seeds and keep the best mean: python tune/confirm.py RESULTS "
        "--top 3 --seeds 1 2 3 (9 runs; single runs move by 10-20 points between seeds on P2H and H2P).",
        "Measured regret against the oracle's pick (median / worst over 3 searches): one seed per trial P2H 3.6 / 6.5 "
        "points, H2P 2.3 / 5.9, digits 6.2 / 6.5; expected accuracy on 6 new seeds P2H -2.6 / 2.9, H2P -10.8 / 3.3 "
        "(docs/selection.md).",
        "Where it fails: when adaptation barely helps (H2P: the pick can end below the source-only model, and no "
        "validator here says so) and on easy tasks where MixVal does better (digits: 1.6).",
    ),
)


def recipe_regret(table: pd.DataFrame, recipe: Recipe = RECIPE) -> pd.DataFrame:
    """The recipe's hyperparameter-selection rows of a :func:`selection_table`: per task and
    experiment, the accuracy of its pick, the oracle's and the regret (points)."""
    rows = table[(table["selection"] == "hyperparameter") & (table["validator"] == recipe.selector)]
    return rows[["task", "experiment", "picked_acc", "oracle_acc", "regret"]].reset_index(drop=True)


def recipe_markdown(table: pd.DataFrame, recipe: Recipe = RECIPE) -> str:
    """The recipe's regret per task: the median and worst over experiments, then each experiment's
    ("" when no experiment recorded the recipe's selector)."""
    regret = recipe_regret(table, recipe)
    if regret.empty:
        return ""
    rows = []
    for task, group in regret.groupby("task", sort=False):
        each = ", ".join(f"{r.experiment} {r.regret:.1f} ({100 * r.picked_acc:.1f} vs {100 * r.oracle_acc:.1f} %)"
                         for r in group.itertuples())
        rows.append([task, f"{group['regret'].median():.1f}", f"{group['regret'].max():.1f}", each])
    return (f"Recommended recipe: pick by {recipe.selector} at the last epoch\n\n"
            + markdown_table(["task", "median regret (points)", "worst", "per experiment: regret (picked vs oracle)"], rows, "lrrl"))


def read_experiments(results_dir: str | os.PathLike[str]) -> list[tuple[dict, pd.DataFrame]]:
    """Every experiment under ``results_dir`` (a folder or a URI such as ``s3://bucket/prefix``,
    :func:`ssot.results.discovery.read_experiments`) with its usable ``trials.csv`` rows;
    experiments without rows are skipped."""
    return [(e.meta, e.trials) for e in discovery.read_experiments(results_dir) if e.meta is not None and e.trials is not None]
