"""Batched Wasserstein distances and the vectorised bootstrap / permutation statistics.

The resampling functions draw their random indices in the same order as the former one-resample-at-a-
time loops (kept below as the oracle, with scipy.stats.wasserstein_distance), so a seed gives the same
intervals and p-values as before.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sim2real_eval.metrics import bootstrap_intervals, permutation_pvalues, wasserstein, wasserstein_rows


def _w(a, b):
    return stats.wasserstein_distance(a, b)


def _stack(groups):
    return np.concatenate([g[:, 0] for g in groups]), np.concatenate([g[:, 1] for g in groups])


def _distances(real_groups, sim_groups):
    (re, rd), (se, sd) = _stack(real_groups), _stack(sim_groups)
    w1, w2 = _w(re, se), _w(rd, sd)
    return w1, w2, (w1 + w2) / 2


def loop_bootstrap(real_groups, sim_groups, n, seed_sequence, level=0.95):
    rng = np.random.default_rng(seed_sequence)
    samples = np.empty((n, 3))
    for b in range(n):
        real = [g[rng.integers(0, len(g), len(g))] for g in real_groups]
        sim = [g[rng.integers(0, len(g), len(g))] for g in sim_groups]
        samples[b] = _distances(real, sim)
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(samples, [tail, 100 - tail], axis=0)
    return {name: [lo[i], hi[i]] for i, name in enumerate(("W1", "W2", "VEPD"))}


def loop_permutation(real_groups, sim_groups, n, seed_sequence):
    rng = np.random.default_rng(seed_sequence)
    observed = np.array(_distances(real_groups, sim_groups))
    pooled = [np.concatenate([r, s]) for r, s in zip(real_groups, sim_groups)]
    n_real = [len(r) for r in real_groups]
    exceed = np.zeros(3)
    for _ in range(n):
        shuffled = [p[rng.permutation(len(p))] for p in pooled]
        stat = np.array(_distances([s[:k] for s, k in zip(shuffled, n_real)],
                                   [s[k:] for s, k in zip(shuffled, n_real)]))
        exceed += stat >= observed - 1e-12 * np.maximum(1.0, np.abs(observed))
    p = (1 + exceed) / (1 + n)
    return {"p_W1": p[0], "p_W2": p[1], "p_VEPD": p[2]}


def test_wasserstein_rows_hand_values():
    # Row 0: b is a shifted by 1 -> 1.  Row 1: all mass at 0 vs at 3 -> 3.
    # Row 2: {0, 1} vs {0, 0}: half the mass moves by 1 -> 0.5.
    a = np.array([[0.0, 1.0], [0.0, 0.0], [0.0, 1.0]])
    b = np.array([[1.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    np.testing.assert_allclose(wasserstein_rows(a, b), [1.0, 3.0, 0.5], rtol=0, atol=1e-15)
    # Unequal sizes: {0} vs {0, 3}: half the mass moves by 3.
    assert wasserstein_rows(np.array([[0.0]]), np.array([[0.0, 3.0]]))[0] == pytest.approx(1.5, abs=1e-15)
    with pytest.raises(ValueError, match="empty"):
        wasserstein([], [1.0])


values = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 5), m=st.integers(1, 12), n=st.integers(1, 12), ties=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_wasserstein_rows_equal_scipy(rows, m, n, ties, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(rows, m)), rng.normal(0.3, 1.5, size=(rows, n))
    if ties:  # coarse values: many ties inside and across the two samples
        a, b = np.round(a), np.round(b)
    got = wasserstein_rows(a, b)
    expected = [_w(a[i], b[i]) for i in range(rows)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@given(a=st.lists(values, min_size=1, max_size=10), b=st.lists(values, min_size=1, max_size=10))
def test_wasserstein_equals_scipy_on_any_samples(a, b):
    assert wasserstein(a, b) == pytest.approx(_w(a, b), rel=0, abs=1e-12)


def _groups(rng, sizes, shift=0.0):
    return [np.column_stack([rng.normal(0.1 + shift, 0.02, n), rng.random(n)]) for n in sizes]


@pytest.mark.parametrize("real_sizes, sim_sizes, shift, n", [
    ((10, 10, 10), (10, 10, 10), 0.03, 300),    # the demo's shape
    ((3, 7, 4), (5, 2, 9), 0.0, 300),           # unequal strata and sides
    ((6,), (5,), 0.0, 1100),                    # one stratum; several blocks of resamples
])
def test_resampling_equals_the_one_at_a_time_loop(real_sizes, sim_sizes, shift, n):
    rng = np.random.default_rng(11)
    real, sim = _groups(rng, real_sizes), _groups(rng, sim_sizes, shift)
    seed = np.random.SeedSequence([2024, 7])
    got = bootstrap_intervals(real, sim, n, seed)
    expected = loop_bootstrap(real, sim, n, seed)
    for name in ("W1", "W2", "VEPD"):
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-12)
    got_p = permutation_pvalues(real, sim, n, seed)
    expected_p = loop_permutation(real, sim, n, seed)
    assert got_p == pytest.approx(expected_p, abs=0)


def test_permutation_counts_ties_with_the_observed_value():
    # Every value tied: each shuffle gives exactly the observed distances, all counted -> p = 1.
    real = [np.ones((4, 2))]
    sim = [np.ones((5, 2))]
    assert permutation_pvalues(real, sim, 50, np.random.SeedSequence(1)) == {
        "p_W1": 1.0, "p_W2": 1.0, "p_VEPD": 1.0}


# ------------------------------------------------------------------------ paired designs (issue 13)
def loop_bootstrap_paired(real_groups, sim_groups, n, seed_sequence, level=0.95):
    rng = np.random.default_rng(seed_sequence)
    samples = np.empty((n, 3))
    for b in range(n):
        draws = [rng.integers(0, len(g), len(g)) for g in real_groups]
        samples[b] = _distances([g[d] for g, d in zip(real_groups, draws)],
                                [g[d] for g, d in zip(sim_groups, draws)])
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(samples, [tail, 100 - tail], axis=0)
    return {name: [lo[i], hi[i]] for i, name in enumerate(("W1", "W2", "VEPD"))}


def loop_permutation_paired(real_groups, sim_groups, n, seed_sequence):
    rng = np.random.default_rng(seed_sequence)
    observed = np.array(_distances(real_groups, sim_groups))
    exceed = np.zeros(3)
    for _ in range(n):
        real, sim = [], []
        for r, s in zip(real_groups, sim_groups):
            swap = rng.integers(0, 2, len(r)).astype(bool)[:, None]
            real.append(np.where(swap, s, r))
            sim.append(np.where(swap, r, s))
        exceed += np.array(_distances(real, sim)) >= observed - 1e-12 * np.maximum(1.0, np.abs(observed))
    p = (1 + exceed) / (1 + n)
    return {"p_W1": p[0], "p_W2": p[1], "p_VEPD": p[2]}


@pytest.mark.parametrize("sizes, n", [((10, 10, 10), 300), ((4, 7), 600), ((6,), 1100)])
def test_paired_resampling_equals_the_pairwise_loop(sizes, n):
    rng = np.random.default_rng(3)
    real = _groups(rng, sizes)
    sim = [g + rng.normal(0.0, 0.005, g.shape) for g in real]  # sim run k replays real bag k
    seed = np.random.SeedSequence([2024, 9])
    got = bootstrap_intervals(real, sim, n, seed, paired=True)
    expected = loop_bootstrap_paired(real, sim, n, seed)
    for name in ("W1", "W2", "VEPD"):
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-12)
    assert permutation_pvalues(real, sim, n, seed, paired=True) == pytest.approx(
        loop_permutation_paired(real, sim, n, seed), abs=0)


def test_identical_pairs_give_a_zero_interval_and_p_one():
    # Each resample of pairs takes the same rows on both sides: every W is 0 (runs resampled
    # independently would not be).
    real = [np.random.default_rng(1).normal(size=(8, 2))]
    assert bootstrap_intervals(real, real, 200, np.random.SeedSequence(2), paired=True) == {
        "W1": [0.0, 0.0], "W2": [0.0, 0.0], "VEPD": [0.0, 0.0]}
    assert bootstrap_intervals(real, real, 200, np.random.SeedSequence(2))["W1"][0] > 0.0
    assert permutation_pvalues(real, real, 50, np.random.SeedSequence(3), paired=True) == {
        "p_W1": 1.0, "p_W2": 1.0, "p_VEPD": 1.0}


def test_a_replay_design_interval_contains_its_estimate():
    """The demo's IMU study in miniature: sim run k = real run k + a small change.  Resampling runs
    independently puts the whole interval above the estimate (W is biased upwards); pairs do not."""
    rng = np.random.default_rng(4)
    real = [np.column_stack([rng.normal(0.097, 0.004, 10), rng.normal(0.35, 0.012, 10)])]
    sim = [real[0] + rng.normal(0.0, 0.0004, real[0].shape)]
    w1 = wasserstein(real[0][:, 0], sim[0][:, 0])
    seed = np.random.SeedSequence(5)
    independent = bootstrap_intervals(real, sim, 1000, seed)["W1"]
    paired = bootstrap_intervals(real, sim, 1000, seed, paired=True)["W1"]
    assert independent[0] > w1                      # the symptom of issue 13
    assert paired[0] <= w1 <= paired[1]


def test_pairs_need_as_many_runs_on_both_sides():
    with pytest.raises(ValueError, match="as many sim runs"):
        bootstrap_intervals([np.ones((3, 2))], [np.ones((2, 2))], 10, np.random.SeedSequence(0), paired=True)


def test_is_paired():
    from sim2real_eval.metrics.study import is_paired

    assert is_paired([[0, 1, 2]], [[2, 1, 0]])
    assert is_paired([[0, 1], [0, 1, 2]], [[0, 1], [0, 1, 2]])
    assert not is_paired([[0, 1, 2]], [[0, 1]])
    assert not is_paired([[0, 1], [0, 1]], [[0, 1], [0, 2]])
    assert not is_paired([[0, 0]], [[0, 0]])       # a k twice: no unit to pair by
