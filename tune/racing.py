"""Racing confirmation: new seeds go only to the candidates still in contention (one owner of the rule).

Fixed confirmation (:mod:`tune.confirmation`) runs every candidate on every seed. When the seed
spread is several times the gaps between candidates, three seeds cannot separate them, and most of
the runs go to candidates that are clearly beaten after two. Racing (F-race, Birattari et al.
2002; irace, Lopez-Ibanez et al. 2016) spends the same budget adaptively: every candidate runs the
first seeds, then rounds add one seed to every survivor and drop the candidates that are
significantly worse than the leader. This module is the rule, pure logic over a value table; the
command ``python tune/confirm.py --race`` runs it with real runs (:mod:`tune.confirm`).

The rule
--------
Candidates are ordered by their rank in the search; values are signed so that higher is better
(a ``min`` metric is negated). All candidates take the seeds in the same order, so any two share
their first seeds and differences are *paired* (same seed, same data order and initial weights).

1. Every candidate runs the first ``first_test`` seeds (default 2), even a lone one.
2. Test: the *leader* is the survivor with the best mean (ties to the search rank). For every other
   survivor ``c``, with :math:`d_i = v_{leader,i} - v_{c,i}` over their common seeds
   (:math:`n \\ge 2`), the one-sided paired t-test of :math:`H_0: \\mathrm E[d] \\le 0`,

   .. math:: t = \\frac{\\bar d}{s_d / \\sqrt n}, \\qquad p = P(T_{n-1} \\ge t),

   eliminates ``c`` when :math:`p < 1 - \\text{confidence}` (default confidence 0.95). A zero
   spread of the differences gives :math:`p = 0` when :math:`\\bar d > 0` and :math:`p = 1`
   otherwise (a tie is never eliminated).
3. Stop when one survivor remains (the leader is separated from every other candidate at the
   stated confidence, each test on its own: no correction for multiple or sequential tests, as in
   F-race's post-hoc tests), or when the next round (one more seed for every survivor) would
   exceed the run ``budget`` or the seed list. Otherwise run the round and go to 2.

The pick is the final leader. :func:`probability_best` says how sure it is: the product over
the other candidates of one minus the p-value of the same test with the pick as the leader
(conservative on paired Gaussian noise; a bootstrap over two or three seeds is overconfident).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

__all__ = ["RaceRule", "Elimination", "RaceResult", "paired_p_value", "leader", "eliminations", "race",
           "probability_best", "fixed_pick", "Replay", "replay"]

#: ``(candidate, seed) -> value`` for a batch of runs (a race round).
Evaluate = Callable[[Sequence[tuple[str, int]]], Mapping[tuple[str, int], float]]


@dataclass(frozen=True)
class RaceRule:
    """The stop rule's settings.

    Attributes
    ----------
    confidence : the one-sided paired t-test eliminates at p < 1 - confidence.
    first_test : seeds every candidate runs before the first test (>= 2: a paired t-test needs two).
    budget : most runs in all (candidates x seeds); ``None`` is every candidate on every seed.
    """

    confidence: float = 0.95
    first_test: int = 2
    budget: int | None = None

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"The 'confidence' parameter must be a float in [0.5, 1). Got {self.confidence!r} instead.")
        if self.first_test < 2:
            raise ValueError(f"The 'first_test' parameter must be an int in [2, inf). Got {self.first_test!r} instead.")


@dataclass(frozen=True)
class Elimination:
    """A candidate dropped from the race: after how many seeds, against which leader, how surely."""

    candidate: str
    after_seeds: int
    leader: str
    p_value: float
    gap: float  # mean paired difference leader - candidate (signed: > 0 is the leader better)


@dataclass
class RaceResult:
    """What a race ran and picked.

    ``values[c]`` are candidate ``c``'s values (as measured, not signed) on ``seeds[:len(values[c])]``.
    ``stop`` is ``"separated"`` (one survivor), ``"budget"`` or ``"seeds"``.
    """

    values: dict[str, list[float]]
    seeds: list[int]
    mode: str
    pick: str
    survivors: list[str]
    eliminated: list[Elimination] = field(default_factory=list)
    stop: str = "separated"
    runs: int = 0
    p_best: float = math.nan


def _signed(values: Sequence[float], mode: str) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return v if mode == "max" else -v


def paired_p_value(leader_values: Sequence[float], other_values: Sequence[float], mode: str = "max") -> tuple[float, float]:
    """``(p, gap)``: the one-sided paired t-test that the leader is better (module docstring) over
    the seeds both ran (their common prefix), and the mean signed difference."""
    n = min(len(leader_values), len(other_values))
    d = _signed(leader_values[:n], mode) - _signed(other_values[:n], mode)
    if n == 0:
        return 1.0, math.nan
    gap = float(d.mean())
    if n < 2:
        return 1.0, gap
    sd = float(d.std(ddof=1))
    if sd == 0.0 or not math.isfinite(sd):
        return (0.0 if gap > 0 else 1.0), gap
    t = gap / (sd / math.sqrt(n))
    return float(stats.t.sf(t, df=n - 1)), gap


def leader(values: Mapping[str, Sequence[float]], alive: Sequence[str], mode: str = "max") -> str:
    """The survivor with the best mean; ties to the first in ``alive`` (the search's rank)."""
    means = [float(_signed(values[c], mode).mean()) for c in alive]
    return alive[int(np.argmax(means))]  # argmax: the first of equal maxima


def eliminations(values: Mapping[str, Sequence[float]], alive: Sequence[str], mode: str = "max",
                 confidence: float = 0.95) -> list[Elimination]:
    """The survivors the leader beats at ``confidence`` (module docstring, step 2)."""
    best = leader(values, alive, mode)
    out = []
    for c in alive:
        if c == best:
            continue
        p, gap = paired_p_value(values[best], values[c], mode)
        if p < 1 - confidence:
            out.append(Elimination(c, min(len(values[best]), len(values[c])), best, p, gap))
    return out


def race(evaluate: Evaluate, candidates: Sequence[str], seeds: Sequence[int], mode: str = "max",
         rule: RaceRule = RaceRule()) -> RaceResult:
    """Run the race (module docstring) with ``evaluate`` measuring each round's runs.

    Parameters
    ----------
    evaluate : callable
        Called once per round with the ``(candidate, seed)`` pairs to run; returns their values.
    candidates : names, best search rank first.
    seeds : the seeds, in the order every candidate takes them.
    mode : ``"max"`` or ``"min"``: the metric's direction.
    rule : :class:`RaceRule`.

    Raises
    ------
    ValueError
        If there is no candidate, fewer seeds than ``rule.first_test``, or a budget smaller than
        the first round (every candidate on the first ``first_test`` seeds).
    """
    alive, seeds = list(candidates), list(seeds)
    if not alive:
        raise ValueError("race: no candidate")
    if len(seeds) < rule.first_test:
        raise ValueError(f"race: {len(seeds)} seed(s) given, the first test needs {rule.first_test}")
    budget = len(alive) * len(seeds) if rule.budget is None else rule.budget
    if budget < len(alive) * rule.first_test:
        raise ValueError(f"race: a budget of {budget} runs does not cover the first round "
                         f"({len(alive)} candidates x {rule.first_test} seeds = {len(alive) * rule.first_test})")
    values: dict[str, list[float]] = {c: [] for c in alive}
    result = RaceResult(values=values, seeds=seeds, mode=mode, pick=alive[0], survivors=alive)
    n = 0
    while True:
        step = rule.first_test if n == 0 else 1
        if n and len(alive) == 1:
            result.stop = "separated"
            break
        if n + step > len(seeds):
            result.stop = "seeds"
            break
        if result.runs + step * len(alive) > budget:
            result.stop = "budget"
            break
        batch = [(c, s) for c in alive for s in seeds[n:n + step]]
        got = evaluate(batch)
        for c, s in batch:
            values[c].append(float(got[c, s]))
        result.runs += len(batch)
        n += step
        dropped = eliminations(values, alive, mode, rule.confidence)
        result.eliminated += dropped
        gone = {e.candidate for e in dropped}
        alive = [c for c in alive if c not in gone]
    result.survivors = alive
    result.pick = leader(values, alive, mode)
    result.p_best = probability_best(values, result.pick, mode)
    return result


def _replayed(values: Mapping[str, Sequence[float]], batch: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]:
    """A replay's runs: the value of candidate ``c`` at seed ``s`` is ``values[c][s]``."""
    return {(c, s): values[c][s] for c, s in batch}


def fixed_pick(values: Mapping[str, Sequence[float]], mode: str = "max") -> str:
    """Fixed confirmation's pick: the best mean over each candidate's seeds, ties to the first
    candidate (the search's rank): :mod:`tune.confirmation`'s rule on a value table."""
    return leader(values, list(values), mode)


def probability_best(values: Mapping[str, Sequence[float]], pick: str, mode: str = "max") -> float:
    r"""How likely ``pick`` is the best candidate: the product over the other candidates ``c`` of
    :math:`1 - p_c`, with :math:`p_c` the one-sided paired t-test p-value of "the pick is better
    than ``c``" over their common seeds (:func:`paired_p_value`, the race's own test).

    :math:`1 - p_c = F_{T_{n-1}}(\bar d / (s_d/\sqrt n))` is the probability that the pick's true
    advantage over ``c`` is positive under the t model (flat prior), so the product treats the
    comparisons as independent. They share the pick's values and are positively correlated, which
    makes the product conservative on paired Gaussian noise, where a bootstrap over 2-3 seeds is
    the opposite (measured in ``tests/tune/test_racing.py``: with 3 seeds the bootstrap reported
    0.76 where the pick was right 0.62 of the time, this product 0.58). Heavy-tailed values (runs
    that collapse on some seeds) break the t model; see the manual's measured racing results. NaN when a comparison has fewer than two seeds;
    1.0 for a lone candidate; an exact tie gives 0.
    """
    p_best = 1.0
    for c in values:
        if c == pick:
            continue
        if min(len(values[pick]), len(values[c])) < 2:
            return math.nan
        p_best *= 1.0 - paired_p_value(values[pick], values[c], mode)[0]
    return p_best


@dataclass(frozen=True)
class Replay:
    """Racing against fixed confirmation replayed on a pool of measured values (:func:`replay`).

    ``correct`` is the share of replays whose pick is the truly best candidate, ``regret`` the
    mean of ``truth[best] - truth[pick]`` (signed: >= 0, in the metric's units), ``runs`` the mean
    runs spent, ``p_best`` the mean reported probability that the pick is the best.
    """

    procedure: str
    replays: int
    correct: float
    regret: float
    runs: float
    p_best: float


def replay(pool: Mapping[str, Sequence[float]], truth: Mapping[str, float], mode: str = "max", *, fixed_seeds: int = 3,
           rule: RaceRule | None = None, replays: int = 1000, seed: int = 0) -> tuple[Replay, Replay]:
    """Fixed ``fixed_seeds``-seed confirmation and a race at the same number of runs, each replayed
    on ``replays`` random orders of the pool's seeds (the same order for every candidate, so
    values stay paired), scored against ``truth`` (each candidate's value measured apart, e.g. its
    mean over other seeds).

    ``pool[c]`` holds candidate ``c``'s values on the same seeds (equal lengths); the race's budget
    is ``len(pool) * fixed_seeds`` unless ``rule`` sets one. Returns ``(fixed, race)``.
    """
    names = list(pool)
    n = len(pool[names[0]])
    if any(len(pool[c]) != n for c in names) or n < fixed_seeds:
        raise ValueError("replay: every candidate needs the same number of pool values, at least fixed_seeds")
    rule = rule or RaceRule(budget=len(names) * fixed_seeds)
    sign = 1.0 if mode == "max" else -1.0
    best = max(names, key=lambda c: sign * truth[c])
    rng = np.random.default_rng(seed)
    tallies: dict[str, list[tuple[bool, float, int, float]]] = {"fixed": [], "race": []}
    for _ in range(replays):
        order = rng.permutation(n)
        values = {c: [pool[c][i] for i in order] for c in names}
        fixed = {c: v[:fixed_seeds] for c, v in values.items()}
        pick = fixed_pick(fixed, mode)
        tallies["fixed"].append((pick == best, sign * (truth[best] - truth[pick]), len(names) * fixed_seeds,
                                 probability_best(fixed, pick, mode)))
        raced = race(functools.partial(_replayed, values), names, range(n), mode, rule)
        tallies["race"].append((raced.pick == best, sign * (truth[best] - truth[raced.pick]), raced.runs, raced.p_best))
    return tuple(Replay(name, replays, *(float(np.mean(col)) for col in zip(*rows)))  # type: ignore[return-value]
                 for name, rows in tallies.items())
