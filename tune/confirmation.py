"""Confirmation of a search's top configs over new seeds: its files, table and pick (one owner).

One seed per trial is noisy: among near-ties the search's best trial is partly the luckiest
(the winner's curse). Confirmation re-runs the top ``K`` trials of an experiment, ranked by the
best-trial rule of :mod:`ssot.results.trials` (the same eligible trials: reached the last epoch, not
diverged or errored; same metric, direction and tie rule), over several seeds and picks by the
mean. ``tune/confirm.py`` runs it; this module owns what it writes.

Files of a confirmation folder ``OUT`` (``tune/confirm.py``'s ``--out``, default
``RESULTS/confirmed``)
    ``OUT/<task>.json``
        the confirmed config of the task's experiment, a full :class:`ssot.config.SSOTConfig`
        exactly as ``tune/export.py`` writes one, so ``python tune/final.py OUT`` and
        ``tune/ablation.py --config OUT/<task>.json`` take it as they take exported configs;
    ``OUT/confirmation.csv`` and ``OUT/confirmation.md`` (:data:`CSV_NAME`, :data:`MARKDOWN_NAME`)
        one row per (experiment, candidate), columns :data:`COLUMNS` (plus the hyperparameters);
    ``OUT/runs/<task>/<trial_id>_seed<s>.json`` (:func:`run_path`)
        one run record per (candidate, seed), reused when the command is run again.

The rule
--------
A run's value is its score under the experiment's metric (:meth:`ssot.results.record.RunRecord.score`:
the metric at its last epoch; a run that did not complete (diverged) counts as the metric's worst
value, as a diverged trial does in the search). Per candidate, over seeds :math:`s_1..s_n` with values :math:`v_i`,

.. math:: \\bar v = \\frac1n \\sum_i v_i, \\qquad
          \\mathrm{std} = \\sqrt{\\frac{1}{n-1} \\sum_i (v_i - \\bar v)^2} \\quad (0 \\text{ for } n = 1).

The confirmed config of an experiment is its candidate with the best mean (highest for a ``max``
metric, lowest for a ``min`` one); ties go to the better rank in the search. With ``--race``
(:mod:`tune.racing`) the candidates run different numbers of seeds and the confirmed config is
the race's pick (the last leader), which the column ``race`` explains per candidate. ``p_best``
(every row of an experiment) is :func:`tune.racing.probability_best` of the confirmed pick: how
often it stays the best when the seeds are resampled.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ssot.config import SSOTConfig
from ssot.errors import ResultsError
from ssot.results.experiment import EXPERIMENT_FILE, Experiment, check_finished, read_experiment
from ssot.results.markdown import bold, markdown_table
from ssot.results.metrics import metric
from ssot.results.numbers import metric_unit, metric_value
from ssot.results.outputs import check_output
from ssot.results.record import RunRecord, mean_std
from tune import racing
from tune.export import read_candidates
from tune.outputs import trial_config

__all__ = ["CSV_NAME", "MARKDOWN_NAME", "RUNS_DIR", "COLUMNS", "Candidate", "top_candidates", "on_images", "run_path",
           "run_value", "confirm_candidates", "race_outcome", "confirmation_table", "to_markdown", "output_paths",
           "write_confirmation"]

CSV_NAME, MARKDOWN_NAME, RUNS_DIR = "confirmation.csv", "confirmation.md", "runs"

#: Columns of ``confirmation.csv`` (the candidate's hyperparameters follow ``trial_id``).
COLUMNS: tuple[str, ...] = ("task", "experiment", "metric", "mode", "search_rank", "trial_id", "search_value", "search_seed",
                            "seeds", "values", "mean", "std", "n_completed", "statuses", "confirmed", "race", "p_best")


@dataclass(frozen=True)
class Candidate:
    """One of the top trials of an experiment: where it ranked and the config it ran."""

    task: str
    experiment: Path | str  # the experiment's folder, or its URI in object storage
    metric: str
    mode: str
    search_rank: int  # 1 = the search's best trial
    trial_id: str
    params: dict[str, Any]
    search_value: float  # the metric at the last epoch, with the search's seed
    config: SSOTConfig

    @property
    def label(self) -> str:
        """How the run log names the candidate."""
        return f"{self.task} #{self.search_rank} trial {self.trial_id}"


def top_candidates(experiment: Experiment | str | Path, top: int) -> list[Candidate]:
    """The ``top`` best trials of a finished experiment (a folder, or one read already) under the
    best-trial rule, best first (fewer when fewer trials are eligible).

    Raises
    ------
    ResultsError
        If the experiment is not finished or its files are unreadable
        (:func:`ssot.results.experiment.check_finished`), or no trial is eligible.
    """
    experiment = check_finished(experiment if isinstance(experiment, Experiment) else read_experiment(experiment))
    meta = experiment.meta or {}
    if "base_config" not in meta:
        raise ResultsError(f"{Path(str(experiment.path)) / EXPERIMENT_FILE} has no 'base_config'; it was not written by tune/search.py")
    ranked = experiment.ranked_trials().head(top)
    if ranked.empty:
        raise ResultsError("no trial reached the last epoch (all early-stopped, diverged or errored)")
    name = experiment.metric
    mode = metric(name).direction or "max"
    return [Candidate(task=experiment.task, experiment=experiment.path, metric=name, mode=mode, search_rank=i + 1,
                      trial_id=str(row["trial_id"]), params={p: row[p] for p in experiment.params},
                      search_value=float(row[name]), config=trial_config(row, meta))
            for i, (_, row) in enumerate(ranked.iterrows())]


def on_images(candidates: Sequence[Candidate], base: SSOTConfig) -> list[Candidate]:
    """The candidates of a screen (a search on a feature cache) as runs on images: each one's
    searched values (its ``params``) and seed on ``base``, the config of the task's runs on images
    (its backbone, schedule, pretraining). Confirmation then fine-tunes what the screen ranked on
    frozen features; its table and ``<task>.json`` hold the image configs."""
    out = []
    for c in candidates:
        if c.task != base.task:
            raise ResultsError(f"A candidate of task {c.task!r} cannot run on the images of task {base.task!r}.")
        out.append(dataclasses.replace(c, config=base.replace(**{k: getattr(c.config, k) for k in c.params}, seed=c.config.seed)))
    return out


def gather_candidates(results_dir: str | Path, top: int, warn: Callable[[str], None]) -> list[Candidate]:
    """:func:`top_candidates` of every finished experiment under ``results_dir`` (a folder or a
    URI such as ``s3://bucket/prefix``, read as the export reads it, :func:`tune.export.read_candidates`).

    Experiments that are not finished or have no eligible trial are skipped with one line to
    ``warn``; so is a shortfall of eligible trials, and each problem the reader worked around in
    an experiment used (e.g. malformed rows of ``trials.csv`` dropped).

    Raises
    ------
    ResultsError
        If there is no experiment, no candidate at all, two experiments are for the same task,
        or the storage cannot be read.
    """
    candidates: list[Candidate] = []
    seen: dict[str, Path | str] = {}
    found = read_candidates(results_dir)
    for experiment in found:
        try:
            best = top_candidates(experiment, top)
        except ResultsError as exc:
            warn(f"skipped {experiment.path}: {exc}")
            continue
        for problem in experiment.problems:  # what the reader worked around, as export and the dashboard print it
            warn(f"{problem.path}: {problem.message}")
        task = best[0].task
        if task in seen:
            raise ResultsError(f"The experiments {seen[task]} and {experiment.path} are both for task {task!r}; "
                               "pass one experiment folder as RESULTS.")
        seen[task] = experiment.path
        if len(best) < top:
            warn(f"{task}: only {len(best)} trial(s) reached the last epoch; confirming those")
        candidates += best
    if not candidates:
        raise ResultsError(f"No finished experiment with a trial that reached the last epoch among the "
                           f"{len(found)} under {results_dir}.")
    return candidates


def run_path(out_dir: str | Path, task: str, trial_id: str, seed: int) -> Path:
    """``out_dir/runs/<task>/<trial_id>_seed<seed>.json``: the run record of one (candidate, seed)."""
    return Path(out_dir) / RUNS_DIR / task / f"{trial_id}_seed{seed}.json"


def run_value(record: Mapping[str, Any] | RunRecord, metric_name: str) -> float:
    """A run's value under ``metric_name``: :meth:`ssot.results.record.RunRecord.score`."""
    return RunRecord.from_dict(record).score(metric_name)


#: ``[(candidate, seed), ...] -> {(candidate.label, seed): run record}``: trains (or reuses) a batch of runs.
Runs = Callable[[Sequence[tuple[Candidate, int]]], Mapping[tuple[str, int], Any]]


def confirm_candidates(candidates: Sequence[Candidate], seeds: Sequence[int], runs: Runs,
                       rule: racing.RaceRule | None = None,
                       log: Callable[[str], None] = print) -> tuple[dict[tuple[str, int], Any], dict[str, racing.RaceResult] | None]:
    """Run the confirmation of ``candidates``: every candidate on every seed in one batch of
    ``runs``, or with ``rule`` a race per experiment (:func:`tune.racing.race`, one batch per round).

    Returns every run record by ``(candidate.label, seed)`` and, for a race, the
    :class:`tune.racing.RaceResult` of each experiment (``str(candidate.experiment)``), as
    :func:`confirmation_table` takes them.
    """
    if rule is None:
        return dict(runs([(c, s) for c in candidates for s in seeds])), None
    records: dict[tuple[str, int], Any] = {}
    races: dict[str, racing.RaceResult] = {}
    by_experiment: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_experiment.setdefault(str(c.experiment), []).append(c)
    for experiment, group in by_experiment.items():
        by_label = {c.label: c for c in group}

        def evaluate(batch: Sequence[tuple[str, int]], by_label: dict = by_label, metric: str = group[0].metric) -> dict:
            got = runs([(by_label[label], s) for label, s in batch])
            records.update(got)
            return {key: run_value(record, metric) for key, record in got.items()}

        races[experiment] = result = racing.race(evaluate, list(by_label), seeds, group[0].mode, rule)
        log(f"{group[0].task}: race {result.stop} after {result.runs} runs; pick {by_label[result.pick].trial_id} "
            f"(P(best) = {result.p_best:.2f})")
    return records, races


def race_outcome(result: racing.RaceResult, label: str) -> str:
    """How candidate ``label`` left the race ``result``: picked, eliminated (after how many seeds,
    by whom, at what p-value) or among the survivors when the budget or the seeds ran out.

    Raises
    ------
    ValueError
        If ``label`` did not run in the race."""
    by_label = {e.candidate: e for e in result.eliminated}
    if label == result.pick:
        how = {"separated": "the others eliminated", "budget": "budget spent", "seeds": "seeds used up"}[result.stop]
        return f"picked ({how}, {len(result.values[label])} seeds)"
    if label in by_label:
        e = by_label[label]
        return f"eliminated after {e.after_seeds} seeds (p = {e.p_value:.3g} vs {e.leader.rsplit(' ', 1)[-1]})"
    if label in result.survivors:
        return f"in contention at the end ({len(result.values[label])} seeds)"
    raise ValueError(f"The 'label' parameter must name a candidate of the race. Got {label!r} instead.")


def confirmation_table(candidates: Sequence[Candidate], records: Mapping[tuple[str, int], Mapping[str, Any]],
                       seeds: Sequence[int], races: Mapping[str, racing.RaceResult] | None = None) -> pd.DataFrame:
    """One row per candidate (:data:`COLUMNS` and its hyperparameters), ``confirmed`` True on the
    pick of each experiment (module docstring: best mean, ties to the search's rank; with
    ``races``, the race's pick).

    ``records`` maps ``(candidate.label, seed)`` to the run record. ``races`` maps an experiment
    (``str(candidate.experiment)``) to its :class:`tune.racing.RaceResult`, whose ``values`` say
    which of ``seeds`` (a prefix, in order) each candidate ran.
    """
    races = races or {}
    rows = []
    for c in candidates:
        race = races.get(str(c.experiment))
        mine = list(seeds) if race is None else race.seeds[:len(race.values[c.label])]
        runs = [RunRecord.from_dict(records[c.label, s]) for s in mine]
        values = [r.score(c.metric) for r in runs]
        mean, std = mean_std(values) if values else (float("nan"), float("nan"))
        rows.append({"task": c.task, "experiment": str(c.experiment), "metric": c.metric, "mode": c.mode,
                     "search_rank": c.search_rank, "trial_id": c.trial_id, **c.params, "search_value": c.search_value,
                     "search_seed": c.config.seed, "seeds": " ".join(map(str, mine)),
                     "values": " ".join(f"{v:.6g}" for v in values), "mean": mean, "std": std,
                     "n_completed": sum(r.completed for r in runs),
                     "statuses": " ".join(r.status for r in runs), "confirmed": False,
                     "race": "" if race is None else race_outcome(race, c.label), "p_best": float("nan"),
                     "_values": values})
    params = list(dict.fromkeys(p for c in candidates for p in c.params))
    table = pd.DataFrame(rows, columns=[*COLUMNS[:6], *params, *COLUMNS[6:], "_values"])
    labels = {(str(c.experiment), c.trial_id): c.label for c in candidates}
    for experiment, group in table.groupby("experiment", sort=False):
        mode = group["mode"].iloc[0]
        by_label = {labels[experiment, t]: v for t, v in zip(group["trial_id"], group["_values"])}
        race = races.get(experiment)
        if race is not None:
            pick = next(i for i in group.index if labels[experiment, table.at[i, "trial_id"]] == race.pick)
        else:
            sign = 1.0 if mode == "max" else -1.0
            pick = sorted(group.index, key=lambda i: (-sign * table.at[i, "mean"], table.at[i, "search_rank"]))[0]
        table.loc[pick, "confirmed"] = True
        table.loc[group.index, "p_best"] = racing.probability_best(by_label, labels[experiment, table.at[pick, "trial_id"]], mode)
    return table.drop(columns="_values")


def to_markdown(table: pd.DataFrame) -> str:
    """The table as GitHub Markdown: fraction metrics (:func:`ssot.results.metrics.is_fraction`) in percent, the confirmed pick in bold with the
    probability that it is the best (bootstrap over seeds); a race's outcome per candidate."""
    params = [c for c in table.columns if c not in COLUMNS]
    raced = bool(table["race"].fillna("").astype(str).str.len().gt(0).any()) if "race" in table else False
    header = ["task", "rank in search", "trial", *params, "search (1 seed)", "confirmed: mean ± std", "seeds",
              *(["race"] if raced else []), "pick"]
    rows = []
    for row in table.to_dict("records"):
        name, unit = row["metric"], metric_unit(row["metric"])
        mean_std = f"{metric_value(name, row['mean'], 2)} ± {metric_value(name, row['std'], 2)}{unit}"
        pick = f"confirmed (P(best) = {row['p_best']:.2f})" if row["confirmed"] else ""
        cells = [row["task"], str(row["search_rank"]), row["trial_id"], *(f"{row[p]:.4g}" for p in params),
                 f"{metric_value(name, row['search_value'], 2)}{unit} (seed {row['search_seed']})",
                 bold(mean_std) if row["confirmed"] else mean_std, row["seeds"],
                 *([row["race"]] if raced else []), pick]
        rows.append(cells)
    return markdown_table(header, rows, "lll" + "r" * (len(params) + 2) + "l" * (int(raced) + 1))


def output_paths(out_dir: str | Path, tasks: Sequence[str]) -> list[Path]:
    """The files a confirmation writes (never overwritten): the table, then ``<task>.json`` per task."""
    out_dir = Path(out_dir)
    return [out_dir / CSV_NAME, out_dir / MARKDOWN_NAME, *(out_dir / f"{t}.json" for t in tasks)]


def write_confirmation(table: pd.DataFrame, candidates: Sequence[Candidate], out_dir: str | Path) -> list[Path]:
    """Write the table and each experiment's confirmed config into ``out_dir``; never overwrites
    (every file is checked before the first is written). Returns the paths written."""
    tasks = list(dict.fromkeys(c.task for c in candidates))
    paths = output_paths(out_dir, tasks)
    check_output(out_dir, "--out", folder=True, new=[p.name for p in paths])
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    with open(paths[0], "x", newline="") as fh:
        table.to_csv(fh, index=False)
    with open(paths[1], "x") as fh:
        fh.write(to_markdown(table))
    picked = table[table["confirmed"]]
    by_key = {(str(c.experiment), c.trial_id): c for c in candidates}
    for task, path in zip(tasks, paths[2:]):
        row = picked[picked["task"] == task].iloc[0]
        with open(path, "x") as fh:
            fh.write(json.dumps(by_key[row["experiment"], row["trial_id"]].config.to_dict(), indent=2) + "\n")
    return paths
