"""Warm start: a task's search begins from the finished searches of other tasks (``--warm-start``).

    python tune/search.py --task S2H --warm-start RESULTS/ssot-x/P2H RESULTS/ssot-x/H2P   # task folders, or URIs

Two things carry over from the sources (each a finished search of another task, in the same space):

1. **Their best configs are asked first.** Each source's best config (its ``best_config.json``
   trial, by the best-trial rule of :mod:`ssot.results.trials`), in the order the sources are
   given, a config equal to one before it (in every sampled field) asked once; then the paper's
   default config (the first config of a cold TPE search), unless a source's best equals it.
   Then the sampler proposes (:func:`first_points`).
2. **The sampler is informed by their trials**: :class:`WarmStartSampler`, a multivariate TPE
   whose two densities (Bergstra et al. 2011: ``l`` of the good configs, ``g`` of the others)
   hold each source's trials beside the target's own, down-weighted. Each source is split by
   its *own* ranking, never by values compared across tasks (an accuracy of 0.4 is a good
   result on H2P and a collapse on digits): its full-budget trials (those that reached the last
   epoch, ranked by the source's metric) give its top ``gamma(n)`` to ``l`` (Optuna's default
   ``gamma``: the top 10 %, at most 25, at least 1) and the rest to ``g``; its trials that ASHA
   stopped early, which it judged below the survivors at a rung, and its diverged trials go to
   ``g`` only, never with their truncated values. Each source trial weighs ``w_s / S`` of a
   target trial (``S`` sources), so the sources together weigh as much as one search of their
   average size while they all count, and less and less against the target's own trials as
   those accumulate (TPE's ``l`` holds 10 % of them).

   The weight ``w_s`` is the source's similarity to the target, measured on the target's own
   trials: Spearman's rank correlation between the source's TPE acquisition
   ``log l_s(x) - log g_s(x)`` at each target trial's config and that trial's value at the last
   epoch all the target's ended trials reached (under ASHA, the first rung: so every trial counts
   from the first results on, not only the few that reach the last epoch), floored at 0 (a
   source whose good region does not rank the target's results drops out); 1 for every source
   until :data:`MIN_SIMILARITY_TRIALS` target trials have ended. This is the idea
   of Watanabe et al.'s meta-learning TPE (IJCAI 2023; OptunaHub's ``MetaLearnTPESampler``),
   simplified: that sampler weighs tasks by the overlap of their good regions and ignores the
   sources until the target has its own startup trials; ours uses the sources from the first
   proposal. ``MetaLearnTPESampler`` itself does not run here: it is fetched at run time from
   GitHub by ``optunahub.load_module``, declares Optuna 4.1, and calls Optuna's private
   ``_split_trials`` with an argument Optuna 5 removed (a TypeError). This sampler also reaches
   into Optuna's TPE (``_build_parzen_estimator``, ``_ParzenEstimator`` with per-observation
   weights): :func:`check_optuna` refuses ``--warm-start`` in one line on an Optuna without them.

The sources are read from their task folders, local or at a URI (:func:`read_sources`,
:mod:`ssot.results.storage`); a source that is missing, not finished, of the target's own task,
searched in another space, or given twice is refused in one line before anything runs.
``experiment.json`` records them (``warm_start``, :meth:`Source.meta`), and ``--resume`` refuses
other sources (:func:`tune.resume.check_same_settings`). The sampler and its sources are saved
with the searcher in Ray's state, so a resumed search does not read the sources again.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from optuna.samplers import TPESampler

from ssot.errors import ConfigError, ResultsError
from ssot.results import storage
from ssot.results.trials import DIVERGED, EARLY_STOPPED, ranked_trials
from tune.replay import read_finished, sampled_values

__all__ = ["FLAG", "MIN_SIMILARITY_TRIALS", "Source", "read_sources", "source_paths", "first_points", "gamma",
           "describe", "WarmStartSampler", "check_optuna"]

FLAG = "--warm-start"
#: Ended target trials (completed, or stopped at a rung) before the sources are weighed by their similarity (before: weight 1).
MIN_SIMILARITY_TRIALS = 5


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


def check_optuna() -> None:
    """Refuse ``--warm-start`` on an Optuna whose TPE lacks what :class:`WarmStartSampler` uses."""
    import optuna

    try:
        from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator  # noqa: F401
    except ImportError:
        ok = False
    else:
        ok = all(hasattr(TPESampler, name) for name in ("_build_parzen_estimator", "_get_internal_repr"))
    if not ok:
        raise ConfigError(f"{FLAG} needs the TPE internals of Optuna 4-5 (weighted Parzen estimators); Optuna "
                          f"{optuna.__version__} lacks them. Install optuna>=4,<6 or search without {FLAG}.")


def _internal(configs: list[dict[str, Any]], space: dict[str, Any]) -> dict[str, np.ndarray]:
    return {name: np.asarray([dist.to_internal_repr(c[name]) for c in configs], dtype=float) for name, dist in space.items()}


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


class WarmStartSampler(TPESampler):
    """Multivariate TPE whose densities also hold the source searches' trials (module docstring).

    Parameters
    ----------
    sources : the source searches (:func:`read_sources`).
    space : the sampled space as Optuna distributions (:func:`ssot.results.space.optuna_space`).
    seed, constant_liar : as :class:`optuna.samplers.TPESampler`'s.
    """

    def __init__(self, sources: list[Source], space: dict[str, Any], *, seed: int | None = None, constant_liar: bool = False):
        super().__init__(seed=seed, multivariate=True, constant_liar=constant_liar, n_startup_trials=0)
        self._space = {k: d for k, d in space.items() if not d.single()}
        self._sources = [(s.task, list(s.good), list(s.bad)) for s in sources]
        #: each source's current weight w_s (its similarity to the target, 1 until measured)
        self.source_weights = np.ones(len(self._sources))
        self._densities: list[tuple[Any, Any]] | None = None  # each source's own (l, g), built on first use

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_densities": None}

    # ------------------------------------------------------------------ Optuna's sampler interface
    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
        return dict(self._space)  # the sources inform every field from the first proposal

    def sample_relative(self, study: Any, trial: Any, search_space: dict[str, Any]) -> dict[str, Any]:
        if search_space:
            self.source_weights = self.similarities(study)
        return super().sample_relative(study, trial, search_space)

    def _build_parzen_estimator(self, study: Any, search_space: dict[str, Any], trials: list[Any], handle_below: bool) -> Any:
        from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator

        observations = [self._get_internal_repr(trials, search_space, study)]
        n = len(next(iter(observations[0].values()))) if search_space else 0
        weights = [_ParzenEstimator._call_weights_func(self._parzen_estimator_parameters.weights, n)]
        for (_, good, bad), w in zip(self._sources, self.source_weights):
            configs = good if handle_below else bad
            if w > 0 and configs:
                observations.append(_internal(configs, search_space))
                weights.append(np.full(len(configs), w / len(self._sources)))
        merged = {name: np.concatenate([o[name] for o in observations]) for name in search_space}
        return _ParzenEstimator(merged, search_space, self._parzen_estimator_parameters, np.concatenate(weights).astype(float))

    # ------------------------------------------------------------------ similarity
    def similarities(self, study: Any) -> np.ndarray:
        """Each source's weight ``w_s`` now (module docstring)."""
        import optuna
        from scipy.stats import spearmanr

        params, observed = _observed(study, set(self._space))
        if len(observed) < MIN_SIMILARITY_TRIALS:
            return np.ones(len(self._sources))
        sign = -1.0 if study.direction == optuna.study.StudyDirection.MINIMIZE else 1.0
        values = sign * np.asarray(observed)
        points = _internal(params, self._space)
        weights = np.zeros(len(self._sources))
        if np.ptp(values) == 0:
            return np.ones(len(self._sources))
        for i, (good_l, bad_g) in enumerate(self._source_densities()):
            score = good_l.log_pdf(points) - bad_g.log_pdf(points)
            if np.ptp(score) > 0:
                rho = float(spearmanr(score, values).statistic)
                weights[i] = max(0.0, rho) if math.isfinite(rho) else 0.0
        return weights

    def _source_densities(self) -> list[tuple[Any, Any]]:
        from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator

        if self._densities is None:
            self._densities = [(_ParzenEstimator(_internal(good, self._space), self._space, self._parzen_estimator_parameters),
                                _ParzenEstimator(_internal(bad, self._space), self._space, self._parzen_estimator_parameters))
                               for _, good, bad in self._sources]
        return self._densities

