"""Study-level numbers: W1, W2, VEPD (eq. 4), Table I (pooled), Table II (per scenario, ranked),
bootstrap confidence intervals and permutation p-values.

A1 = {E_real}, B1 = {E_sim}, A2 = {D_real}, B2 = {D_sim};  W1 = W(A1, B1), W2 = W(A2, B2) with
W the 1-Wasserstein distance between the two empirical distributions (equal weights, sizes may
differ; scipy.stats.wasserstein_distance's formula, batched in ``wasserstein_rows``);
VEPD = (W1 + W2) / 2.  W1 is in m/s, W2 is unitless, so VEPD mixes units and is NOT bounded by 1
(the paper's claim VEPD in [0, 1] does not hold in general); it is never clipped.
"""
from __future__ import annotations

import contextlib
import zlib
from collections import Counter
from dataclasses import dataclass, field
from math import comb, prod

import numpy as np

from ..errors import UserError
from ..workers import WorkerPool
from .options import ScoreOptions
from .per_run import RunScore

REAL = "real"


def _row_dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # np.vecdot (numpy >= 2) sums like scipy.stats.wasserstein_distance, so W matches it bit for bit;
    # einsum on older numpy (within an ulp).
    return np.vecdot(x, y) if hasattr(np, "vecdot") else np.einsum("ij,ij->i", x, y)


def wasserstein(a, b) -> float:
    """1-Wasserstein distance between the empirical distributions of samples a and b (same units)."""
    a, b = np.asarray(a, dtype=float).reshape(1, -1), np.asarray(b, dtype=float).reshape(1, -1)
    return float(wasserstein_rows(a, b)[0])


def wasserstein_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise W1 between equal-weight samples: a (R, m), b (R, n) -> (R,), in the units of a and b.

    W1 = ∫ |F_a(x) − F_b(x)| dx = Σ_i |F_a(z_i) − F_b(z_i)|·(z_{i+1} − z_i) over the merged sorted
    values z of a row, with F_a(z_i) = #{a ≤ z_i}/m (scipy.stats.wasserstein_distance's formula).  The
    counts are running sums over the merged order; inside a run of tied values they are partial, but
    there z_{i+1} − z_i = 0, so every term equals scipy's.
    """
    m, n = a.shape[1], b.shape[1]
    if m == 0 or n == 0:
        raise ValueError("wasserstein: a sample is empty")
    values = np.concatenate([a, b], axis=1)
    order = np.argsort(values, axis=1, kind="stable")
    merged = np.take_along_axis(values, order, axis=1)
    from_a = order < m
    a_cdf = np.cumsum(from_a, axis=1)[:, :-1] / m
    b_cdf = np.cumsum(~from_a, axis=1)[:, :-1] / n
    return _row_dot(np.abs(a_cdf - b_cdf), np.diff(merged, axis=1))


def vepd(w1: float, w2: float) -> float:
    """VEPD = (W1 + W2) / 2 (eq. 4); unbounded, never clipped."""
    return (w1 + w2) / 2.0


def average_ranks(values) -> np.ndarray:
    """Ranks 1 = smallest; ties get the mean of the ranks they span (pandas ``rank()`` default;
    scipy.stats.rankdata's "average", NaN anywhere giving NaN everywhere like its default).  Numpy
    only: importing scipy.stats costs the demo's score stage ~1 s CPU."""
    values = np.asarray(values, dtype=float).ravel()
    if len(values) == 0 or np.isnan(values).any():
        return np.full(len(values), np.nan)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))  # each tie group
    ends = np.append(starts[1:], len(values))
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + 1 + ends) / 2, ends - starts)  # mean of ranks starts+1 … ends
    return ranks


@dataclass(frozen=True)
class RunRecord:
    """One scored run; ``source`` is the file/directory it came from; ``health``: the judge health of a
    real run (``replay.health.assess``), None when not assessed."""

    side: str
    variant: str
    scenario: str
    k: int
    source: str
    score: RunScore
    health: dict | None = field(default=None, compare=False, hash=False)

    @property
    def key(self):
        return (self.side, self.variant, self.scenario, self.k)


@dataclass
class StudyResult:
    options: ScoreOptions
    variants: list            # sim variants, sorted
    scenarios: list           # scored scenarios, sorted
    combined: dict            # Table I: {variant: {W1, W2, VEPD, VEPD_ci95, n_real, n_sim}}
    per_scenario: dict        # Table II: {variant: {scenario: {W1, W2, VEPD, rank}}}
    statistics: dict          # CIs, p-values: {"combined": {variant: ...}, "per_scenario": {...},
    #                           "resampling": {"combined": {variant: "pairs"|"runs"}, "per_scenario": ...}}
    runs: list                # RunRecord, sorted by key
    skipped: list = field(default_factory=list)   # (run name, reason)
    judge_noise_floor: dict | None = None         # noise_floor.compute.judge_noise_floor


def distances(real_e, real_d, sim_e, sim_d) -> tuple[float, float, float]:
    """(W1, W2, VEPD) of real vs sim RMSEs (E) and entropy differences (D)."""
    w1 = wasserstein(real_e, sim_e)
    w2 = wasserstein(real_d, sim_d)
    return w1, w2, vepd(w1, w2)


def _cell_seed(seed: int, *names: str) -> np.random.SeedSequence:
    # Keyed by names, not positions: adding a variant does not change another variant's intervals.
    return np.random.SeedSequence([seed, *(zlib.crc32(name.encode()) for name in names)])


def _stack(groups):
    return np.concatenate([g[:, 0] for g in groups]), np.concatenate([g[:, 1] for g in groups])


BLOCK = 500  # resamples per vectorised block: memory stays bounded for big studies or many resamples


def _blocks(total: int) -> list:
    """Sizes of consecutive blocks of at most BLOCK resamples that add up to ``total``."""
    return [min(BLOCK, total - first) for first in range(0, total, BLOCK)]


def _distance_rows(values: np.ndarray, real_index: np.ndarray, sim_index: np.ndarray) -> np.ndarray:
    """(R, 3) rows [W1, W2, VEPD] for R resamples; ``values`` (N, 2) [E, D], indices (R, ·) into it."""
    real, sim = values[real_index], values[sim_index]
    w1 = wasserstein_rows(real[..., 0], sim[..., 0])
    w2 = wasserstein_rows(real[..., 1], sim[..., 1])
    return np.stack([w1, w2, vepd(w1, w2)], axis=1)


def _pair_check(real_groups, sim_groups) -> None:
    for r, g in zip(real_groups, sim_groups):
        if len(r) != len(g):
            raise ValueError("paired resampling needs as many sim runs as real runs in every stratum")


def bootstrap_intervals(real_groups, sim_groups, n_resamples: int, seed_sequence, level: float = 0.95,
                        paired: bool = False):
    """Percentile bootstrap intervals of W1, W2, VEPD.

    ``*_groups``: one (n, 2) array [E, D] per stratum (scenario).  Each resample draws runs with
    replacement within each side and each stratum (the scenario mix is fixed by design), keeping a
    run's E and D together.  ``paired``: row i of a real stratum and row i of its sim stratum are one
    unit (sim run k replays real bag k): a resample draws the units, so both sides take the same rows.
    Returns {"W1": [lo, hi], "W2": ..., "VEPD": ...}.

    The draws are made one group at a time in a fixed order (real strata, then sim strata, per
    resample; paired: one draw per stratum) so a seed always gives the same intervals; the distances
    of a block of resamples are then computed at once on an index matrix.
    """
    rng = np.random.default_rng(seed_sequence)
    if paired:
        _pair_check(real_groups, sim_groups)
    groups = list(real_groups) + list(sim_groups)
    values = np.concatenate(groups)
    starts = np.cumsum([0] + [len(g) for g in groups])[:-1].tolist()
    sizes = [len(g) for g in groups]
    n_real = sum(len(g) for g in real_groups)
    strata = len(real_groups)
    parts = []
    offsets = np.repeat(starts, sizes)  # each group's first row, per column of the index matrix
    drawn = sizes[:strata] if paired else sizes  # the groups drawn, in the order of a row
    for count in _blocks(n_resamples):
        # The draws are made in the seeded order (a row at a time, a stratum at a time); the index
        # matrix is then built at once: row positions within each group + the group's first row.
        if len(set(drawn)) == 1:
            # One bound for every group: one call draws the same numbers, in the same order, as the
            # row-by-row calls (Generator.integers draws element by element; tested), ~60x faster.
            draws = rng.integers(0, drawn[0], (count, sum(drawn)))
        else:
            draws = np.empty((count, sum(drawn)), dtype=np.int64)
            for row in draws:
                at = 0
                for size in drawn:
                    row[at:at + size] = rng.integers(0, size, size)
                    at += size
        if paired:  # the sim rows take the real rows' draws
            draws = np.concatenate([draws, draws], axis=1)
        index = draws + offsets
        parts.append(_distance_rows(values, index[:, :n_real], index[:, n_real:]))
    samples = np.concatenate(parts) if parts else np.empty((0, 3))
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(samples, [tail, 100 - tail], axis=0)
    return {name: [float(lo[i]), float(hi[i])] for i, name in enumerate(("W1", "W2", "VEPD"))}


def permutation_pvalues(real_groups, sim_groups, n_permutations: int, seed_sequence, paired: bool = False):
    """p-values of H0 "real and sim runs come from one distribution" for W1, W2 and VEPD.

    Side labels are shuffled within each stratum (``paired``: swapped within each real/sim pair, the
    exchangeable unit of a replay design); p = (1 + #{stat_perm >= stat_obs}) / (1 + n).
    One shuffle per stratum and permutation, in a fixed order (seeded); the statistics of a block of
    permutations are computed at once.
    """
    rng = np.random.default_rng(seed_sequence)
    if paired:
        _pair_check(real_groups, sim_groups)
    observed = np.array(distances(*_stack(real_groups), *_stack(sim_groups)))
    # Permuted statistics equal to the observed one up to rounding count as reaching it.
    threshold = observed - 1e-12 * np.maximum(1.0, np.abs(observed))
    pooled = [np.concatenate([r, s]) for r, s in zip(real_groups, sim_groups)]
    values = np.concatenate(pooled)
    starts = np.cumsum([0] + [len(p) for p in pooled])[:-1].tolist()
    n_real = [len(r) for r in real_groups]
    exceed = np.zeros(3, dtype=np.int64)
    # paired: pool = [real rows; sim rows] per stratum, row j pairs with row n + j
    own = np.concatenate([start + np.arange(n) for start, n in zip(starts, n_real)]).astype(np.int64)
    partner = own + np.repeat(n_real, n_real)
    for count in _blocks(n_permutations):
        real_index = np.empty((count, sum(n_real)), dtype=np.int64)
        sim_index = np.empty((count, len(values) - sum(n_real)), dtype=np.int64)
        if paired:
            # The swaps in the seeded order (a permutation at a time, a stratum at a time), all of
            # them in one call: the same numbers as one call per stratum and permutation (one bound,
            # 2; Generator.integers draws element by element; tested); the indices at once.
            swap = rng.integers(0, 2, (count, len(own))).astype(bool)
            np.copyto(real_index, np.where(swap, partner, own))
            np.copyto(sim_index, np.where(swap, own, partner))
        else:
            for i in range(count):
                real_at = sim_at = 0
                for start, pool, n in zip(starts, pooled, n_real):
                    shuffled = start + rng.permutation(len(pool))
                    real_index[i, real_at:real_at + n] = shuffled[:n]
                    sim_index[i, sim_at:sim_at + len(pool) - n] = shuffled[n:]
                    real_at += n
                    sim_at += len(pool) - n
        exceed += (_distance_rows(values, real_index, sim_index) >= threshold).sum(axis=0)
    p = (1 + exceed) / (1 + n_permutations)
    return {"p_W1": float(p[0]), "p_W2": float(p[1]), "p_VEPD": float(p[2])}


def is_paired(real_ks, sim_ks) -> bool:
    """Real and sim runs are pairs when both sides have the same run numbers k, once each, in every
    stratum: sim run k replays real bag k (the demo, ``replay``).  Resampling such pairs together is
    what the design calls for; for unrelated runs that happen to share their k it changes nothing
    measurable (docs/scoring.md)."""
    return all(len(set(r)) == len(r) and sorted(r) == sorted(s) for r, s in zip(real_ks, sim_ks))


def _resample_rows(rng, count: int, sizes: list, offsets: list) -> np.ndarray:
    """(count, sum(sizes)) row indices: each stratum's rows drawn with replacement within it."""
    return np.concatenate([offset + rng.integers(0, size, (count, size))
                           for size, offset in zip(sizes, offsets)],
                          axis=1)


def _vepd_rows(values: np.ndarray, real_index: np.ndarray, sim_index: np.ndarray) -> np.ndarray:
    return _distance_rows(values, real_index, sim_index)[:, 2]


INTERVAL_METHODS = ("percentile", "bca", "expanded")
# The variant-comparison interval: measured against the others by benchmarks/interval_coverage.py
# (docs/scoring.md, "Interval coverage at small K"); the widest-covering of the three at K = 4, 6, 10.
DIFFERENCE_INTERVAL = "expanded"


def expanded_level(level: float, n: int) -> float:
    """The percentile level of Hesterberg's expanded percentile interval (Hesterberg 2015, "What teachers
    should know about the bootstrap", The American Statistician 69(4)): the tail α/2 becomes
    Φ(−√(n/(n−1)) · t_{n−1}(1 − α/2)), which corrects the percentile interval's narrowness at small n
    (n = 6: 95 % → 99.51 %).  ``n``: the units the bootstrap resamples (below 2: ``level`` unchanged)."""
    from scipy.special import ndtr, stdtrit

    if n < 2:
        return level
    return float(1 - 2 * ndtr(-((n / (n - 1)) ** 0.5) * stdtrit(n - 1, 1 - (1 - level) / 2)))


def bca_interval(samples, observed: float, jackknife, level: float = 0.95) -> list:
    """Bias-corrected and accelerated bootstrap interval (Efron 1987; Efron & Tibshirani 1993, 14.3).

    ``samples``: the bootstrap statistics; ``jackknife``: one array per independently resampled group of
    the statistic with one unit of that group left out (the units the bootstrap draws).  z0 = Φ⁻¹ of the
    share of resamples below the estimate (ties count half); acceleration a = Σ(m − θ_i)³ /
    (6 (Σ(m − θ_i)²)^1.5) over every group's leave-one-out values θ_i around their group mean m; the
    interval takes the percentiles Φ(z0 + (z0 + z)/(1 − a(z0 + z))) at z = Φ⁻¹((1 ∓ level)/2).  Falls back
    to the percentile interval when the resamples are all on one side of the estimate (z0 infinite)."""
    from scipy.special import ndtr, ndtri

    samples = np.asarray(samples, dtype=float)
    tail = (1 - level) / 2
    share = (np.sum(samples < observed) + 0.5 * np.sum(samples == observed)) / len(samples)
    deviations = [np.mean(j) - np.asarray(j, dtype=float) for j in jackknife]
    squares = sum(float(np.sum(d ** 2)) for d in deviations)
    levels = np.array([tail, 1 - tail])
    if 0 < share < 1:
        z0 = ndtri(share)
        a = sum(float(np.sum(d ** 3)) for d in deviations) / (6 * squares ** 1.5) if squares > 0 else 0.0
        z = ndtri(levels)
        levels = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    lo, hi = np.percentile(samples, 100 * np.asarray(levels))
    return [float(lo), float(hi)]


def _difference_jackknife(values, parts, paired: bool) -> list:
    """Leave-one-out differences for ``bca_interval``: paired, one group (the (scenario, k) units, each
    taking real, a's and b's run k out together); otherwise one group per side (each run left out once)."""
    def difference(real, a, b):
        real, a, b = (np.concatenate(x)[None] for x in (real, a, b))
        return float(_vepd_rows(values, real, b)[0] - _vepd_rows(values, real, a)[0])

    full = {side: [offset + np.arange(size) for size, offset in zip(*parts[side])]
            for side in ("real", "a", "b")}
    groups = []
    if paired:
        out = []
        for s in range(len(full["real"])):
            for i in range(len(full["real"][s])):
                cut = {side: [np.delete(g, i) if t == s else g for t, g in enumerate(full[side])]
                       for side in full}
                out.append(difference(cut["real"], cut["a"], cut["b"]))
        return [np.array(out)]
    for side in full:
        out = []
        for s, group in enumerate(full[side]):
            if len(group) < 2:
                continue
            for i in range(len(group)):
                cut = dict(full)
                cut[side] = [np.delete(g, i) if t == s else g for t, g in enumerate(full[side])]
                out.append(difference(cut["real"], cut["a"], cut["b"]))
        groups.append(np.array(out))
    return groups


def difference_statistics(real_groups, a_groups, b_groups, n_resamples: int, n_permutations: int,
                          ci_seed, perm_seed, paired: bool = False, level: float = 0.95,
                          method: str = DIFFERENCE_INTERVAL) -> dict:
    """Variant b against variant a, both against the same real runs: d = VEPD(real, b) − VEPD(real, a).

    ``*_groups``: one (n, 2) array [E, D] per stratum (scenario), rows in k order.  ``paired`` (every
    side has the same run numbers k, once each: sim run k of both variants replays real bag k): a
    bootstrap resample draws (scenario, k) units and takes real run k, a's run k and b's run k
    together, and the permutation test swaps a's and b's run k within each unit; otherwise each side's
    runs are resampled on their own and a's and b's runs are shuffled within each stratum (the real runs
    fixed).  Returns {"difference", "difference_ci95" [lo, hi] (bootstrap; ``method``: "expanded"
    percentile by default, "percentile" or "bca"; named in "interval"), "p" (two-sided:
    (1 + #{|d_perm| ≥ |d|}) / (1 + N)), "p_min" (``smallest_p``), "resampling" "pairs"|"runs"}.
    Draws are made a block of resamples at a time (vectorised; seeded by ``ci_seed``/``perm_seed``).
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"difference_statistics: unknown interval method {method!r}")
    if paired:
        _pair_check(real_groups, a_groups)
        _pair_check(real_groups, b_groups)
    groups = list(real_groups) + list(a_groups) + list(b_groups)
    values = np.concatenate(groups)
    sizes = [len(g) for g in groups]
    offsets = np.cumsum([0] + sizes)[:-1].tolist()
    strata = len(real_groups)
    parts = {side: (sizes[i * strata:(i + 1) * strata], offsets[i * strata:(i + 1) * strata])
             for i, side in enumerate(("real", "a", "b"))}
    index = {side: np.concatenate([offset + np.arange(size) for size, offset in zip(*parts[side])])
             for side in parts}
    observed = float(_vepd_rows(values, index["real"][None], index["b"][None])[0]
                     - _vepd_rows(values, index["real"][None], index["a"][None])[0])
    out = {"difference": observed, "resampling": "pairs" if paired else "runs"}
    if n_resamples:
        rng = np.random.default_rng(ci_seed)
        samples = []
        for count in _blocks(n_resamples):
            if paired:  # one draw of units per stratum, used by all three sides
                unit = _resample_rows(rng, count, parts["real"][0], [0] * strata)
                real = unit + np.repeat(parts["real"][1], parts["real"][0])
                a = unit + np.repeat(parts["a"][1], parts["a"][0])
                b = unit + np.repeat(parts["b"][1], parts["b"][0])
            else:
                real, a, b = (_resample_rows(rng, count, *parts[side]) for side in ("real", "a", "b"))
            samples.append(_vepd_rows(values, real, b) - _vepd_rows(values, real, a))
        samples = np.concatenate(samples)
        if method == "bca":
            jackknife = _difference_jackknife(values, parts, paired)
            out["difference_ci95"] = bca_interval(samples, observed, jackknife, level)
        else:
            if method == "expanded":  # n: the units drawn (pairs, or the smallest side's runs)
                level = expanded_level(level, sum(parts["real"][0]) if paired else
                                       min(sum(parts[side][0]) for side in parts))
            tail = 100 * (1 - level) / 2
            lo, hi = np.percentile(samples, [tail, 100 - tail])
            out["difference_ci95"] = [float(lo), float(hi)]
        out["interval"] = method
    if n_permutations:
        rng = np.random.default_rng(perm_seed)
        threshold = abs(observed) - 1e-12 * max(1.0, abs(observed))
        exceed = 0
        for count in _blocks(n_permutations):
            real = np.broadcast_to(index["real"], (count, len(index["real"])))
            if paired:  # swap a's and b's run k within each unit
                swap = rng.integers(0, 2, (count, len(index["a"]))).astype(bool)
                a = np.where(swap, index["b"], index["a"])
                b = np.where(swap, index["a"], index["b"])
            else:  # shuffle a's and b's runs within each stratum
                a_cols, b_cols = [], []
                for (na, oa), (nb, ob) in zip(zip(*parts["a"]), zip(*parts["b"])):
                    pool = np.concatenate([oa + np.arange(na), ob + np.arange(nb)])
                    order = np.argsort(rng.random((count, na + nb)), axis=1)
                    shuffled = pool[order]
                    a_cols.append(shuffled[:, :na])
                    b_cols.append(shuffled[:, na:])
                a, b = np.concatenate(a_cols, axis=1), np.concatenate(b_cols, axis=1)
            permuted = np.abs(_vepd_rows(values, real, b) - _vepd_rows(values, real, a))
            exceed += int((permuted >= threshold).sum())
        out["p"] = (1 + exceed) / (1 + n_permutations)
        out["p_min"] = smallest_p(n_permutations, parts["a"][0], parts["b"][0], paired)
    return out


def _groups(records, scenarios):
    """{scenario: (n, 2) array of [E, D]} and {scenario: [k]} for the given records, in k order."""
    out, ks = {}, {}
    for scenario in scenarios:
        members = sorted((r for r in records if r.scenario == scenario), key=lambda r: r.k)
        out[scenario] = np.array([(r.score.rmse, r.score.D) for r in members], dtype=float).reshape(-1, 2)
        ks[scenario] = [r.k for r in members]
    return out, ks


def check_study(records) -> tuple[list, list]:
    """(sim variants, scenarios) after checking the study's shape; raises one-line UserErrors."""
    real = [r for r in records if r.side == REAL]
    sim = [r for r in records if r.side != REAL]
    _check_sides(real, sim)
    scenarios = sorted({r.scenario for r in real})
    variants = sorted({r.variant for r in sim})
    for variant in variants:
        _check_scenario_set(variant, {r.scenario for r in sim if r.variant == variant}, scenarios)
    counts = Counter((r.side, r.variant, r.scenario) for r in records)
    cells = [(REAL, REAL, s) for s in scenarios] + [("sim", v, s) for v in variants for s in scenarios]
    for side, variant, scenario in cells:
        n = counts[(side, variant, scenario)]
        if n < 2:
            raise UserError(f"{side}/{variant}/{scenario}: only {n} run(s); need at least 2 per side")
    return variants, scenarios


def _check_sides(real: list, sim: list) -> None:
    """Both sides present; the real side's variant, and only it, is 'real'."""
    if not real:
        raise UserError("no real runs to compare with (expected side 'real')")
    if not sim:
        raise UserError("no sim runs to score (expected side 'sim')")
    bad_real = sorted({r.variant for r in real if r.variant != REAL})
    if bad_real:
        raise UserError(f"real runs must have variant 'real', got {', '.join(bad_real)}")
    if any(r.variant == REAL for r in sim):
        raise UserError("a sim variant may not be named 'real'")


def _check_scenario_set(variant: str, have: set, scenarios: list) -> None:
    """A sim variant has runs in exactly the real side's scenarios."""
    if have != set(scenarios):
        missing = sorted(set(scenarios) - have)
        extra = sorted(have - set(scenarios))
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"no real runs for {', '.join(extra)}"] if extra else [])
        raise UserError(f"scenario sets differ between real and sim variant {variant!r}: "
                        f"{'; '.join(parts)}")


def _run_job(job):
    """``function(*args)`` of a picklable (function, args) job."""
    function, args = job
    return function(*args)


def ranked(values: dict) -> list:
    """The keys of {name: VEPD} best (lowest) first; equal values in name order."""
    return sorted(values, key=lambda name: (values[name], name))


def _comparison_pairs(variants, scenarios, combined, per_scenario, extra) -> list:
    """[(scenario or None, better, worse, adjacent)]: every pair of variants, pooled and per scenario
    (the letter groups of ``separation.group_letters`` need them all), adjacent ranks flagged.  ``extra``
    (pairs asked for) is kept for callers; every pair is compared anyway."""
    del extra
    out = []
    for scenario in [None] + list(scenarios):
        cells = {v: combined[v] if scenario is None else per_scenario[v][scenario] for v in variants}
        order = ranked({v: cell["VEPD"] for v, cell in cells.items()})
        out += [(scenario, a, b, j == i + 1) for i, a in enumerate(order) for j, b in enumerate(order)
                if j > i]
    return out


def _cell_statistics(real_g, sim_g, bootstrap, permutations, seed, seed_names, paired):
    """Intervals and p-values of one (variant, pooled or scenario) cell."""
    stat = {}
    if bootstrap:
        ci = bootstrap_intervals(real_g, sim_g, bootstrap, _cell_seed(seed, "ci", *seed_names), paired=paired)
        stat.update({f"{k}_ci95": val for k, val in ci.items()})
    if permutations:
        stat.update(permutation_pvalues(real_g, sim_g, permutations, _cell_seed(seed, "perm", *seed_names),
                                        paired=paired))
        stat["p_min"] = smallest_p(permutations, [len(g) for g in real_g], [len(g) for g in sim_g], paired)
    return stat


def smallest_p(permutations: int, first_sizes, second_sizes, paired: bool) -> float:
    """The smallest p a permutation test of two samples (strata of ``first_sizes`` and ``second_sizes``
    runs) can give with ``permutations`` random relabellings: p = (1 + #{stat >= observed}) / (1 + N)
    is at least 1 / (1 + N), and at least (label patterns giving the observed statistic) / (all
    patterns) — the observed pattern and, when the two sides have the same sizes, its mirror (the
    statistics here are symmetric in the two sides).  Paired (swaps within n pairs): 2 / 2^n; otherwise
    the splits within each stratum, prod C(a + b, a).  Above 0.05, no data can make p < 0.05."""
    first, second = list(first_sizes), list(second_sizes)
    mirror = 2 if first == second else 1
    patterns = 2 ** sum(first) if paired else prod(comb(a + b, a) for a, b in zip(first, second))
    return max(1.0 / (1 + permutations), mirror / patterns)


def score_study(records, options: ScoreOptions, skipped=(), progress=None, workers: int = 1, pairs=(),
                pool=None) -> StudyResult:
    """Tables I and II plus intervals and p-values from scored runs (excluded scenarios removed first),
    and the variants compared with each other (``statistics["comparisons"]``: every pair of adjacent
    ranks, pooled and per scenario, plus the pooled ``pairs`` [(a, b)] asked for;
    ``difference_statistics``).

    ``progress``: optional callable(advance) for the resampling work (one call per cell or pair);
    ``workers`` > 1 spreads the cells' resampling over processes (same numbers: seeds are per cell);
    ``pool``: an executor to use instead (e.g. one that is drawing figures at the same time).
    """
    records = sorted((r for r in records if r.scenario not in options.exclude_scenarios), key=lambda r: r.key)
    variants, scenarios = check_study(records)
    samples = _Samples.of(records, variants, scenarios)
    statistics = {"combined": {}, "per_scenario": {}, "resampling": {"combined": {}, "per_scenario": {}},
                  "comparisons": {"combined": [], "per_scenario": {s: [] for s in scenarios}}}
    cells, jobs = _cell_jobs(samples, variants, scenarios, options, statistics["resampling"])
    combined, per_scenario = _distance_tables(cells)
    comparisons = _comparison_pairs(variants, scenarios, combined, per_scenario, pairs)
    jobs += _comparison_jobs(samples, comparisons, scenarios, options)
    resampling = bool(options.bootstrap or options.permutations)
    stats_list = _run_jobs(jobs, workers if resampling else 1, pool, progress)
    _file_statistics(cells, comparisons, stats_list, combined, statistics)
    for scenario in scenarios:
        ranks = average_ranks([per_scenario[v][scenario]["VEPD"] for v in variants])
        for variant, rank in zip(variants, ranks):
            per_scenario[variant][scenario]["rank"] = float(rank)
    return StudyResult(options=options, variants=variants, scenarios=scenarios, combined=combined,
                       per_scenario=per_scenario, statistics=statistics, runs=records, skipped=list(skipped))


@dataclass
class _Samples:
    """A study's runs as arrays: per scenario the (n, 2) [E, D] rows and the run numbers k, of the real
    side and of each sim variant (``_groups``)."""

    real: dict
    real_ks: dict
    sim: dict
    sim_ks: dict

    @classmethod
    def of(cls, records, variants, scenarios) -> _Samples:
        real, real_ks = _groups([r for r in records if r.side == REAL], scenarios)
        sim, sim_ks = {}, {}
        for variant in variants:
            members = [r for r in records if r.side != REAL and r.variant == variant]
            sim[variant], sim_ks[variant] = _groups(members, scenarios)
        return cls(real, real_ks, sim, sim_ks)

    def paired(self, variant: str, members) -> bool:
        """Whether ``variant``'s runs and the real ones are pairs in every scenario of ``members``."""
        return is_paired([self.real_ks[s] for s in members], [self.sim_ks[variant][s] for s in members])


def _cell_jobs(samples: _Samples, variants, scenarios, options: ScoreOptions, resampling: dict) -> tuple:
    """The cells (variant, scenario or None for pooled, real groups, sim groups) and one
    ``_cell_statistics`` job per cell; ``resampling`` gets what each cell resamples (pairs or runs)."""
    cells, jobs = [], []
    for variant in variants:
        for scenario, members in [(None, scenarios)] + [(s, [s]) for s in scenarios]:
            real_g = [samples.real[s] for s in members]
            sim_g = [samples.sim[variant][s] for s in members]
            paired = samples.paired(variant, members)
            unit = "pairs" if paired else "runs"
            if scenario is None:
                resampling["combined"][variant] = unit
            else:
                resampling["per_scenario"].setdefault(variant, {})[scenario] = unit
            seed_names = (variant,) if scenario is None else (variant, scenario)
            cells.append((variant, scenario, real_g, sim_g))
            jobs.append((_cell_statistics, (real_g, sim_g, options.bootstrap, options.permutations,
                                            options.seed, seed_names, paired)))
    return cells, jobs


def _distance_tables(cells) -> tuple:
    """(combined, per_scenario): W1, W2 and VEPD of every cell (pooled cells also their run counts)."""
    combined, per_scenario = {}, {}
    for variant, scenario, real_g, sim_g in cells:
        w1, w2, v = distances(*_stack(real_g), *_stack(sim_g))
        if scenario is None:
            combined[variant] = {
                "W1": w1, "W2": w2, "VEPD": v, "VEPD_ci95": None,
                "n_real": int(sum(len(g) for g in real_g)), "n_sim": int(sum(len(g) for g in sim_g)),
            }
        else:
            per_scenario.setdefault(variant, {})[scenario] = {"W1": w1, "W2": w2, "VEPD": v}
    return combined, per_scenario


def _comparison_jobs(samples: _Samples, comparisons, scenarios, options: ScoreOptions) -> list:
    """One ``difference_statistics`` job per compared pair of variants (``_comparison_pairs``)."""
    jobs = []
    for scenario, a, b, _adjacent in comparisons:
        members = scenarios if scenario is None else [scenario]
        paired = all(samples.paired(v, members) for v in (a, b))
        names = (a, b) if scenario is None else (a, b, scenario)
        jobs.append((difference_statistics, (
            [samples.real[s] for s in members], [samples.sim[a][s] for s in members],
            [samples.sim[b][s] for s in members], options.bootstrap, options.permutations,
            _cell_seed(options.seed, "difference-ci", *names),
            _cell_seed(options.seed, "difference-perm", *names), paired)))
    return jobs


def _run_jobs(jobs: list, workers: int, pool, progress) -> list:
    """The jobs' results in order: in ``pool``, else in worker processes when ``workers`` > 1 and there
    are several, else here; ``progress(1)`` after each."""
    results = []
    if pool is not None or (workers > 1 and len(jobs) > 1):
        with contextlib.ExitStack() as stack:
            executor = pool or stack.enter_context(WorkerPool(min(workers, len(jobs))))
            for result in executor.map(_run_job, jobs):
                results.append(result)
                if progress is not None:
                    progress(1)
        return results
    for job in jobs:
        results.append(_run_job(job))
        if progress is not None:
            progress(1)
    return results


def _file_statistics(cells, comparisons, stats_list, combined, statistics) -> None:
    """The jobs' results into ``statistics`` (and each pooled cell's VEPD interval into ``combined``):
    the cells' first, then the comparisons'."""
    for (variant, scenario, _real_g, _sim_g), stat in zip(cells, stats_list):
        if scenario is None:
            combined[variant]["VEPD_ci95"] = stat.get("VEPD_ci95")
            statistics["combined"][variant] = stat
        else:
            statistics["per_scenario"].setdefault(variant, {})[scenario] = stat
    for (scenario, a, b, adjacent), stat in zip(comparisons, stats_list[len(cells):]):
        entry = {"better": a, "worse": b, "adjacent": adjacent, **stat}
        if scenario is None:
            statistics["comparisons"]["combined"].append(entry)
        else:
            statistics["comparisons"]["per_scenario"][scenario].append(entry)
