"""Warm start: a task's search begins from the finished searches of other tasks (``--warm-start``).

    python tune/search.py --task S2H --warm-start RESULTS/ssot-x/P2H RESULTS/ssot-x/H2P   # task folders, or URIs

Two things carry over from the sources (each a finished search of another task, in the same space):

1. **Their best configs are asked first.** Each source's best config (its ``best_config.json``
   trial, by the best-trial rule of :mod:`ssot.results.trials`), in the order the sources are
   given, a config equal to one before it (in every sampled field) asked once; then the paper's
   default config (the first config of a cold TPE search), unless a source's best equals it.
   Then the sampler proposes (:func:`first_points`).
2. **The sampler is informed by their trials**: :class:`WarmStartSampler`, built from Optuna's
   public parts only. For each proposal it fills a scratch in-memory study with the sources'
   trials and the target's own, each valued by its *rank within its own search* (1 for the best,
   down to 1/n), never by values compared across tasks (an accuracy of 0.4 is a good result on
   H2P and a collapse on digits), and asks Optuna's multivariate ``TPESampler`` on that study.
   A search is ranked as TPE ranks a study's trials: its full-budget trials (those that reached
   the last epoch) by its metric, then the trials ASHA stopped (a later rung first), then the
   diverged ones; so TPE's good density ``l`` holds the top ``gamma(n)`` of every search at
   once (Optuna's ``gamma``: the top 10 %, at most 25). The target's running trials go in as
   running (TPE's ``constant_liar``, for the members of a population asked together).

   Each source counts with ``w_s / S`` of its trials (``S`` sources; every k-th of its ranked
   trials, so its ranking keeps its shape): the sources together weigh as one search of their
   average size, and less and less against the target's own trials as those accumulate. The
   weight ``w_s`` is the source's similarity to the target, measured on the target's own
   trials: Spearman's rank correlation between the source's rank at each target trial's config
   (the mean rank of its 3 nearest source configs, each field scaled to [0, 1], log fields in
   log) and that trial's value at the last epoch all the target's ended trials reached (under
   ASHA, the first rung: every trial counts from the first results on), floored at 0 (a source
   whose good region does not rank the target's results drops out); 1 for every source until
   :data:`MIN_SIMILARITY_TRIALS` target trials have ended. This is the idea of Watanabe et al.'s
   meta-learning TPE (IJCAI 2023; OptunaHub's ``MetaLearnTPESampler``), simplified: that
   sampler weighs tasks by the overlap of their good regions inside Optuna's private TPE code
   (``_split_trials``, with an argument Optuna 5 removed: it does not run on Optuna 5), and
   ignores the sources until the target has its own startup trials; ours uses the sources from
   the first proposal. An earlier version of this sampler also reached into Optuna's private TPE
   (weighted ``_ParzenEstimator``); this one needs no private name, so it runs on every Optuna
   the project allows.

The sources are read from their task folders, local or at a URI (:func:`read_sources`,
:mod:`ssot.results.storage`); a source that is missing, not finished, of the target's own task,
searched in another space, or given twice is refused in one line before anything runs.
``experiment.json`` records them (``warm_start``, :meth:`Source.meta`), and ``--resume`` refuses
other sources (:func:`tune.resume.check_same_settings`) and reads them again.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.trial import TrialState

from ssot.errors import ConfigError, ResultsError
from ssot.results import storage
from ssot.results.trials import DIVERGED, EARLY_STOPPED, ranked_trials
from tune.replay import read_finished, sampled_values

__all__ = ["FLAG", "MIN_SIMILARITY_TRIALS", "Source", "read_sources", "source_paths", "first_points", "gamma",
           "describe", "WarmStartSampler"]

FLAG = "--warm-start"
#: Ended target trials (completed, or stopped at a rung) before the sources are weighed by their similarity (before: weight 1).
MIN_SIMILARITY_TRIALS = 5
#: Source configs whose ranks predict a target config's (its nearest ones).
NEIGHBOURS = 3


def gamma(n: int) -> int:
    """How many of ``n`` ranked trials TPE counts as good: Optuna's default (10 %, at most 25), at least 1."""
    return max(1, min(math.ceil(0.1 * n), 25)) if n else 0


@dataclass
class Source:
    """One finished search a warm start reads: its best config and its trials split into good and bad."""

    path: str
    name: str
    task: str
    search: str
    metric: str
    best_trial: str
    best_value: float
    best: dict[str, Any]
    good: list[dict[str, Any]] = field(default_factory=list)
    bad: list[dict[str, Any]] = field(default_factory=list)
    n_trials: int = 0

    def meta(self) -> dict[str, Any]:
        """What ``experiment.json`` records of it (under ``warm_start``)."""
        return {"path": self.path, "name": self.name, "task": self.task, "search": self.search, "metric": self.metric,
                "n_trials": self.n_trials, "n_good": len(self.good), "n_bad": len(self.bad),
                "best_trial": self.best_trial, "best_value": self.best_value, "best_config": dict(self.best)}


def source_paths(paths: list[str]) -> list[str]:
    """The sources as ``experiment.json`` records them: local paths absolute, URIs as given;
    refuses an empty list and a source given twice."""
    if not paths:
        raise ConfigError(f"{FLAG} needs at least one finished search (its task folder, e.g. RESULTS/NAME/P2H).")
    out = [str(p) if storage.is_uri(p) else str(Path(p).expanduser().resolve()) for p in paths]
    twice = sorted({p for p in out if out.count(p) > 1})
    if twice:
        raise ConfigError(f"{FLAG} names {twice[0]} twice. Give each source search once.")
    return out


def _sampled(space: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in space.items() if v.get("type") in ("loguniform", "choice")}


def read_sources(paths: list[str], task: str, space: dict[str, Any]) -> list[Source]:
    """Read the source searches of a warm start of ``task`` in ``space`` (the target's space specs).

    Raises
    ------
    ResultsError
        One line naming the source and the fix: no experiment there, not finished, of ``task``
        itself, another space, or no trial that reached its last epoch.
    """
    wanted = json.loads(json.dumps(space))
    sources = []
    for path in paths:
        experiment = read_finished(path, FLAG)
        meta = experiment.meta or {}
        if experiment.task.lower() == task.lower():
            raise ResultsError(f"{FLAG} {path} is a search of task {experiment.task}, the task this search is for. Warm-start "
                               "from the searches of other tasks.")
        theirs = json.loads(json.dumps(meta.get("space") or {}))
        if theirs != wanted:
            differ = sorted(k for k in set(theirs) | set(wanted) if theirs.get(k) != wanted.get(k))
            raise ResultsError(f"{FLAG} {path} searched another space (it differs in {', '.join(differ)}: "
                               f"{json.dumps({k: theirs.get(k) for k in differ})}). Warm-start from searches of the same "
                               "space, or search this task with the source's space flags (its experiment.json).")
        sources.append(_split(experiment, path))
    return sources


def _split(experiment: Any, path: str) -> Source:
    """A source's best config, its good and bad trials (module docstring)."""
    space = _sampled((experiment.meta or {}).get("space") or {})
    table = experiment.trial_table()
    ranked = ranked_trials(table, experiment.metric)
    best = experiment.best_trial(table)
    if best is None or ranked.empty:
        raise ResultsError(f"{FLAG} {path}: no trial of the search reached its last epoch, so it has no best config to start "
                           "from. Warm-start from searches with a best config.")
    n_good = gamma(len(ranked))
    others = table[table["status"].isin((EARLY_STOPPED, DIVERGED))]
    good = [sampled_values(row, space) for _, row in ranked.iloc[:n_good].iterrows()]
    bad = [sampled_values(row, space) for _, row in ranked.iloc[n_good:].iterrows()]
    bad += [sampled_values(row, space) for _, row in others.iterrows()]
    return Source(path=path, name=experiment.name, task=experiment.task, search=experiment.search, metric=experiment.metric,
                  best_trial=str(best["trial_id"]), best_value=float(best[experiment.metric]), best=sampled_values(best, space),
                  good=good, bad=bad, n_trials=len(table))


def first_points(sources: list[Source], default: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The configs asked first: each source's best in the sources' order, then ``default`` (the
    paper's), each config once."""
    points: list[dict[str, Any]] = []
    for point in [*(s.best for s in sources), *([default] if default is not None else [])]:
        if point not in points:
            points.append(dict(point))
    return points


def describe(sources: list[Source]) -> str:
    """The search's line about its warm start."""
    points = len(first_points(sources, None))
    return (f"warm start from {len(sources)} searches ({', '.join(s.task for s in sources)}): their {points} distinct best "
            f"configs first, then TPE informed by their {sum(len(s.good) + len(s.bad) for s in sources)} trials")


def _coords(configs: list[dict[str, Any]], space: dict[str, Any]) -> np.ndarray:
    """The configs as points of [0, 1]^d: each field scaled by its range, log fields in log, a
    choice by its index."""
    columns = []
    for name, dist in space.items():
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            values = [dist.choices.index(c[name]) / max(1, len(dist.choices) - 1) for c in configs]
        else:
            scale = np.log if dist.log else np.asarray
            low, high = scale(float(dist.low)), scale(float(dist.high))
            values = [(scale(float(c[name])) - low) / (high - low) for c in configs]
        columns.append(np.asarray(values, dtype=float))
    return np.stack(columns, axis=1) if columns else np.zeros((len(configs), 0))


def _ranks(count: int) -> np.ndarray:
    """The rank values of ``count`` trials ordered best first: 1, ..., 1/count."""
    return 1.0 - np.arange(count) / max(count, 1)


def _target_ranked(study: Any, exclude: int | None) -> list[Any]:
    """The target's ended trials best first, as TPE ranks them: completed by value, then stopped
    (a later step first, then the value there), then diverged."""
    sign = -1.0 if study.direction == optuna.study.StudyDirection.MINIMIZE else 1.0

    def key(t: Any) -> tuple[int, float, float]:
        if t.state == TrialState.COMPLETE and t.user_attrs.get("status") != DIVERGED:
            return (0, 0.0, -sign * float(t.value))
        if t.state == TrialState.PRUNED and t.intermediate_values:
            step = max(t.intermediate_values)
            return (1, -step, -sign * t.intermediate_values[step])
        return (2, 0.0, 0.0)

    ended = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)) if t.number != exclude]
    return sorted(ended, key=key)


def _observed(study: Any, fields: set[str]) -> tuple[list[dict[str, Any]], list[float]]:
    """The target's trials that the similarity ranks, with their values at the last epoch they all
    reached (under ASHA the first rung, which every trial reports; a trial told without epochs,
    e.g. diverged at once, with its final value): the configs and the values."""
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    trials = [t for t in study.get_trials(deepcopy=False, states=states) if fields <= set(t.params)]
    steps = [max(t.intermediate_values) for t in trials if t.intermediate_values]
    step = min(steps) if steps else None
    params, values = [], []
    for t in trials:
        value = t.intermediate_values.get(step) if step is not None else None
        if value is None and t.state == optuna.trial.TrialState.COMPLETE:
            value = t.value
        if value is not None and math.isfinite(value):
            params.append(t.params)
            values.append(float(value))
    return params, values


class WarmStartSampler(BaseSampler):
    """Multivariate TPE on the ranks of the target's trials and the sources' (module docstring).

    Parameters
    ----------
    sources : the source searches (:func:`read_sources`).
    space : the sampled space as Optuna distributions (:func:`ssot.results.space.optuna_space`).
    seed, constant_liar : as :class:`optuna.samplers.TPESampler`'s.
    """

    def __init__(self, sources: list[Source], space: dict[str, Any], *, seed: int | None = None, constant_liar: bool = False):
        self._space = {k: d for k, d in space.items() if not d.single()}
        self._sources = [[*s.good, *s.bad] for s in sources]  # each source's trials, best first
        self._rng, self._liar = np.random.RandomState(seed), constant_liar  # a new TPE seed for each proposal
        self._independent = RandomSampler(seed=seed)
        #: each source's current weight w_s (its similarity to the target, 1 until measured)
        self.source_weights = np.ones(len(self._sources))

    # ------------------------------------------------------------------ Optuna's sampler interface
    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
        return dict(self._space)  # the sources inform every field from the first proposal

    def sample_relative(self, study: Any, trial: Any, search_space: dict[str, Any]) -> dict[str, Any]:
        if not search_space:
            return {}
        self.source_weights = self.similarities(study)
        trials = []
        for ranked, weight in zip(self._sources, self.source_weights):
            keep = round(weight / len(self._sources) * len(ranked))
            for i in np.unique(np.linspace(0, len(ranked) - 1, keep).round().astype(int)) if keep else []:
                trials.append(self._ranked(ranked[i], _ranks(len(ranked))[i], search_space))
        target = _target_ranked(study, trial.number)
        trials += [self._ranked(t.params, r, search_space) for t, r in zip(target, _ranks(len(target))) if search_space.keys() <= t.params.keys()]
        if self._liar:
            trials += [optuna.trial.create_trial(state=TrialState.RUNNING, params={k: t.params[k] for k in search_space},
                                                 distributions=search_space)
                       for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                       if t.number != trial.number and search_space.keys() <= t.params.keys()]
        scratch = optuna.create_study(direction="maximize", sampler=TPESampler(
            seed=int(self._rng.randint(2**31 - 1)), multivariate=True, constant_liar=self._liar, n_startup_trials=0))
        scratch.add_trials(trials)
        return dict(scratch.ask(search_space).params)

    def sample_independent(self, study: Any, trial: Any, param_name: str, param_distribution: Any) -> Any:
        return self._independent.sample_independent(study, trial, param_name, param_distribution)

    @staticmethod
    def _ranked(config: dict[str, Any], rank: float, space: dict[str, Any]) -> Any:
        return optuna.trial.create_trial(value=float(rank), params={k: config[k] for k in space}, distributions=space)

    # ------------------------------------------------------------------ similarity
    def similarities(self, study: Any) -> np.ndarray:
        """Each source's weight ``w_s`` now (module docstring)."""
        from scipy.stats import spearmanr

        params, observed = _observed(study, set(self._space))
        if len(observed) < MIN_SIMILARITY_TRIALS:
            return np.ones(len(self._sources))
        sign = -1.0 if study.direction == optuna.study.StudyDirection.MINIMIZE else 1.0
        values = sign * np.asarray(observed)
        if np.ptp(values) == 0:
            return np.ones(len(self._sources))
        points = _coords(params, self._space)
        weights = np.zeros(len(self._sources))
        for i, ranked in enumerate(self._sources):
            if not ranked:
                continue
            distances = np.linalg.norm(points[:, None, :] - _coords(ranked, self._space)[None, :, :], axis=2)
            nearest = np.argsort(distances, axis=1)[:, :NEIGHBOURS]
            score = _ranks(len(ranked))[nearest].mean(axis=1)
            if np.ptp(score) > 0:
                rho = float(spearmanr(score, values).statistic)
                weights[i] = max(0.0, rho) if math.isfinite(rho) else 0.0
        return weights
