"""`tune/racing.py`: the racing stop rule on synthetic value tables where the answer is known."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tune import racing


def _table(means, n_seeds=20, seed_sd=0.06, noise_sd=0.01, rng=0):
    """values[c][s] = mean_c + a seed effect shared by every candidate + a small own noise: the
    paired structure of real runs (the same seed is a good or bad draw for every config)."""
    g = np.random.default_rng(rng)
    shared = g.normal(0, seed_sd, n_seeds)
    return {f"c{i}": list(m + shared + g.normal(0, noise_sd, n_seeds)) for i, m in enumerate(means)}


def _lookup(table, calls):
    def evaluate(batch):
        calls.append(list(batch))
        return {(c, s): table[c][s] for c, s in batch}
    return evaluate


def test_paired_p_value_is_scipys_one_sided_paired_t_test():
    g = np.random.default_rng(0)
    a, b = g.normal(0.6, 0.05, 7), g.normal(0.55, 0.05, 7)
    p, gap = racing.paired_p_value(a, b)
    assert p == pytest.approx(stats.ttest_rel(a, b, alternative="greater").pvalue, rel=1e-12)
    assert gap == pytest.approx(float(np.mean(a - b)))
    # a "min" metric: lower is better, so the leader's advantage is b - a
    p_min, gap_min = racing.paired_p_value(b, a, "min")
    assert p_min == pytest.approx(p, rel=1e-12) and gap_min == pytest.approx(gap)
    # only the common prefix is paired; a constant positive difference is certain, a tie never is
    assert racing.paired_p_value([1.0, 0.75, 0.5], [0.75, 0.5]) == (0.0, 0.25)
    assert racing.paired_p_value([0.5, 0.6], [0.5, 0.6])[0] == 1.0
    assert racing.paired_p_value([0.9], [0.1])[0] == 1.0  # one seed: no test


def test_a_separated_winner_is_picked_early_with_few_runs():
    table = _table([0.70, 0.62, 0.60, 0.55, 0.50])
    calls = []
    result = racing.race(_lookup(table, calls), list(table), range(20), rule=racing.RaceRule(budget=60))
    assert result.pick == "c0" and result.survivors == ["c0"] and result.stop == "separated"
    assert result.runs == sum(map(len, calls)) < 5 * 20
    assert calls[0] == [(c, s) for c in table for s in (0, 1)]  # every candidate on the first two seeds
    assert all(len(call) < 5 for call in calls[1:])  # later rounds: survivors only, one new seed each
    assert {e.candidate for e in result.eliminated} == {"c1", "c2", "c3", "c4"}
    assert all(e.leader == "c0" and e.p_value < 0.05 and e.gap > 0 for e in result.eliminated)
    assert result.p_best > 0.95 ** 4  # each of the 4 eliminations at p < 0.05
    # a "min" metric: the same race on negated values picks the same candidate
    neg = {c: [-v for v in vals] for c, vals in table.items()}
    assert racing.race(_lookup(neg, []), list(neg), range(20), "min").pick == "c0"


def test_a_tie_runs_to_the_budget_and_reports_low_confidence():
    seeds = range(12)
    shared = np.random.default_rng(1).normal(0.6, 0.05, 12)
    wiggle = np.array([0.01, -0.01] * 6)
    table = {"a": list(shared + wiggle), "b": list(shared - wiggle), "c": list(shared - 0.3)}
    calls = []
    result = racing.race(_lookup(table, calls), ["a", "b", "c"], seeds, rule=racing.RaceRule(budget=20))
    assert result.stop == "budget" and set(result.survivors) == {"a", "b"}
    # 3 x 2 first, then c is out and a, b take one seed per round until 20 runs are spent: 6 + 7 x 2
    assert result.runs == 20 and len(result.values["a"]) == len(result.values["b"]) == 9
    assert result.p_best < 0.8  # a coin flip between a and b, not a certainty
    exact = {"a": [0.5] * 4, "b": [0.5] * 4}
    done = racing.race(_lookup(exact, []), ["a", "b"], range(4))
    assert done.stop == "seeds" and done.runs == 8 and done.pick == "a"  # ties to the search rank
    assert done.p_best == 0.0  # an exact tie is never "better"


def test_eliminations_never_drop_the_true_best_when_the_gap_is_large():
    """200 random tables: the best is 0.05 above the next (5 times the paired noise, below the seed
    spread of 0.06, so one seed cannot tell them apart); the race must never eliminate it."""
    for rng in range(200):
        g = np.random.default_rng(10_000 + rng)
        means = [0.7, 0.65, *g.uniform(0.3, 0.65, 4)]
        order = list(g.permutation(6))  # the true best anywhere in the search's ranking
        table = _table([means[i] for i in order], n_seeds=15, rng=rng)
        best = f"c{order.index(0)}"
        result = racing.race(_lookup(table, []), list(table), range(15), rule=racing.RaceRule(budget=30))
        assert best not in {e.candidate for e in result.eliminated}
        assert result.pick == best


def test_probability_best_is_the_product_of_the_paired_test_complements():
    values = {"p": [0.70, 0.60, 0.66], "q": [0.65, 0.64, 0.60], "r": [0.50, 0.69]}  # r: eliminated after 2
    expected = 1.0
    for c, m in (("q", 3), ("r", 2)):
        expected *= 1 - stats.ttest_rel(values["p"][:m], values[c], alternative="greater").pvalue
    assert racing.probability_best(values, "p") == pytest.approx(expected, rel=1e-12)
    assert racing.probability_best({"p": [1.0, 0.75], "q": [0.5, 0.25]}, "p") == 1.0  # a constant advantage
    assert racing.probability_best({"p": [0.9, 0.8]}, "p") == 1.0
    assert np.isnan(racing.probability_best({"p": [0.9], "q": [0.1]}, "p"))  # one seed: no spread to judge by


def test_probability_best_is_not_overconfident_with_three_seeds():
    """400 fixed 3-seed confirmations of 5 candidates 2 points apart (seed spread 5 points, shared;
    own noise 5 points): the mean reported probability stays below the share of correct picks."""
    g = np.random.default_rng(0)
    means = [0.70, 0.68, 0.66, 0.60, 0.55]
    reported, correct = [], []
    for _ in range(400):
        shared = g.normal(0, 0.05, 3)
        values = {f"c{i}": list(m + shared + g.normal(0, 0.05, 3)) for i, m in enumerate(means)}
        pick = racing.fixed_pick(values)
        reported.append(racing.probability_best(values, pick)); correct.append(pick == "c0")
    assert np.mean(reported) <= np.mean(correct)  # measured 0.58 against 0.62 (the bootstrap: 0.76)


def test_fixed_pick_and_user_errors():
    assert racing.fixed_pick({"a": [0.6, 0.7], "b": [0.7, 0.6], "c": [0.1, 0.2]}) == "a"  # tie -> search rank
    assert racing.fixed_pick({"a": [0.6], "b": [0.2]}, "min") == "b"
    with pytest.raises(ValueError, match="does not cover the first round"):
        racing.race(_lookup({}, []), ["a", "b", "c"], range(5), rule=racing.RaceRule(budget=5))
    with pytest.raises(ValueError, match="the first test needs 2"):
        racing.race(_lookup({}, []), ["a"], [0])
    with pytest.raises(ValueError, match="'confidence' parameter"):
        racing.RaceRule(confidence=1.0)
    one = racing.race(_lookup({"a": [0.5, 0.6, 0.7]}, []), ["a"], [0, 1, 2])
    assert one.pick == "a" and one.runs == 2 and one.stop == "separated" and one.p_best == 1.0


def test_replay_scores_both_procedures_against_the_truth():
    means = [0.70, 0.60, 0.58, 0.55, 0.50]
    pool = _table(means, n_seeds=12, noise_sd=0.005)
    truth = {f"c{i}": m for i, m in enumerate(means)}
    fixed, raced = racing.replay(pool, truth, replays=50)
    assert (fixed.procedure, raced.procedure) == ("fixed", "race")
    assert fixed.correct == raced.correct == 1.0 and fixed.regret == raced.regret == 0.0
    assert fixed.runs == 15 and raced.runs <= 15 and 0 < raced.p_best <= 1
    # the truth decides what "best" means, not the pool: a truth that prefers c1 makes every pick wrong by 10 points
    wrong = racing.replay(pool, {**truth, "c1": 0.80}, replays=10)[0]
    assert wrong.correct == 0.0 and wrong.regret == pytest.approx(0.10)
    with pytest.raises(ValueError, match="same number of pool values"):
        racing.replay({"a": [0.1, 0.2, 0.3], "b": [0.1, 0.2]}, {"a": 0.1, "b": 0.2})
