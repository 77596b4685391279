"""Study-level numbers: W1, W2, VEPD (eq. 4), Table I (pooled), Table II (per scenario, ranked),
bootstrap confidence intervals and permutation p-values.

A1 = {E_real}, B1 = {E_sim}, A2 = {D_real}, B2 = {D_sim};  W1 = W(A1, B1), W2 = W(A2, B2) with
W the 1-Wasserstein distance between the two empirical distributions (equal weights, sizes may
differ; scipy.stats.wasserstein_distance's formula, batched in ``wasserstein_rows``);
VEPD = (W1 + W2) / 2.  W1 is in m/s, W2 is unitless, so VEPD mixes units and is NOT bounded by 1
(the paper's claim VEPD in [0, 1] does not hold in general); it is never clipped.
"""
from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

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
    """Ranks 1 = smallest; ties get the mean of the ranks they span (pandas ``rank()`` default)."""
    return stats.rankdata(np.asarray(values, dtype=float), method="average")


@dataclass(frozen=True)
class RunRecord:
    """One scored run; ``source`` is the file/directory it came from."""

    side: str
    variant: str
    scenario: str
    k: int
    source: str
    score: RunScore

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
    judge_noise_floor: dict | None = None         # metrics.noise_floor.judge_noise_floor (the demo's)


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
    for count in _blocks(n_resamples):
        index = np.empty((count, len(values)), dtype=np.int64)
        for row in index:
            if paired:
                for real_start, sim_start, size in zip(starts[:strata], starts[strata:], sizes[:strata]):
                    draw = rng.integers(0, size, size)
                    row[real_start:real_start + size] = real_start + draw
                    row[sim_start:sim_start + size] = sim_start + draw
            else:
                for start, size in zip(starts, sizes):
                    row[start:start + size] = start + rng.integers(0, size, size)
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
    for count in _blocks(n_permutations):
        real_index = np.empty((count, sum(n_real)), dtype=np.int64)
        sim_index = np.empty((count, len(values) - sum(n_real)), dtype=np.int64)
        for i in range(count):
            real_at = sim_at = 0
            for start, pool, n in zip(starts, pooled, n_real):
                if paired:  # pool = [real rows; sim rows], row j pairs with row n + j
                    swap = rng.integers(0, 2, n).astype(bool)
                    own = start + np.arange(n)
                    real_index[i, real_at:real_at + n] = np.where(swap, own + n, own)
                    sim_index[i, sim_at:sim_at + n] = np.where(swap, own, own + n)
                else:
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
    if not real:
        raise UserError("no real runs to compare with (expected side 'real')")
    if not sim:
        raise UserError("no sim runs to score (expected side 'sim')")
    bad_real = sorted({r.variant for r in real if r.variant != REAL})
    if bad_real:
        raise UserError(f"real runs must have variant 'real', got {', '.join(bad_real)}")
    if any(r.variant == REAL for r in sim):
        raise UserError("a sim variant may not be named 'real'")
    scenarios = sorted({r.scenario for r in real})
    variants = sorted({r.variant for r in sim})
    for variant in variants:
        have = {r.scenario for r in sim if r.variant == variant}
        if have != set(scenarios):
            missing = sorted(set(scenarios) - have)
            extra = sorted(have - set(scenarios))
            parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"no real runs for {', '.join(extra)}"] if extra else [])
            raise UserError(f"scenario sets differ between real and sim variant {variant!r}: "
                            f"{'; '.join(parts)}")
    counts = Counter((r.side, r.variant, r.scenario) for r in records)
    cells = [(REAL, REAL, s) for s in scenarios] + [("sim", v, s) for v in variants for s in scenarios]
    for side, variant, scenario in cells:
        n = counts[(side, variant, scenario)]
        if n < 2:
            raise UserError(f"{side}/{variant}/{scenario}: only {n} run(s); need at least 2 per side")
    return variants, scenarios


def _cell_statistics(job):
    """Intervals and p-values of one (variant, pooled or scenario) cell; ``job`` is picklable."""
    real_g, sim_g, bootstrap, permutations, seed, seed_names, paired = job
    stat = {}
    if bootstrap:
        ci = bootstrap_intervals(real_g, sim_g, bootstrap, _cell_seed(seed, "ci", *seed_names), paired=paired)
        stat.update({f"{k}_ci95": val for k, val in ci.items()})
    if permutations:
        stat.update(permutation_pvalues(real_g, sim_g, permutations, _cell_seed(seed, "perm", *seed_names),
                                        paired=paired))
    return stat


def score_study(records, options: ScoreOptions, skipped=(), progress=None, workers: int = 1) -> StudyResult:
    """Tables I and II plus intervals and p-values from scored runs (excluded scenarios removed first).

    ``progress``: optional callable(advance) for the resampling work (one call per cell);
    ``workers`` > 1 spreads the cells' resampling over processes (same numbers: seeds are per cell).
    """
    records = sorted((r for r in records if r.scenario not in options.exclude_scenarios), key=lambda r: r.key)
    variants, scenarios = check_study(records)
    real_groups, real_ks = _groups([r for r in records if r.side == REAL], scenarios)
    combined, per_scenario = {}, {}
    statistics = {"combined": {}, "per_scenario": {}, "resampling": {"combined": {}, "per_scenario": {}}}
    cells, jobs = [], []
    for variant in variants:
        sim_records = [r for r in records if r.side != REAL and r.variant == variant]
        sim_groups, sim_ks = _groups(sim_records, scenarios)
        for scenario, members in [(None, scenarios)] + [(s, [s]) for s in scenarios]:
            real_g = [real_groups[s] for s in members]
            sim_g = [sim_groups[s] for s in members]
            paired = is_paired([real_ks[s] for s in members], [sim_ks[s] for s in members])
            unit = "pairs" if paired else "runs"
            if scenario is None:
                statistics["resampling"]["combined"][variant] = unit
            else:
                statistics["resampling"]["per_scenario"].setdefault(variant, {})[scenario] = unit
            seed_names = (variant,) if scenario is None else (variant, scenario)
            cells.append((variant, scenario, real_g, sim_g))
            jobs.append((real_g, sim_g, options.bootstrap, options.permutations, options.seed, seed_names,
                         paired))
    resampling = bool(options.bootstrap or options.permutations)
    if workers > 1 and resampling and len(jobs) > 1:
        with WorkerPool(min(workers, len(jobs))) as pool:
            stats_list = []
            for stat in pool.map(_cell_statistics, jobs):
                stats_list.append(stat)
                if progress is not None:
                    progress(1)
    else:
        stats_list = []
        for job in jobs:
            stats_list.append(_cell_statistics(job))
            if progress is not None:
                progress(1)
    for (variant, scenario, real_g, sim_g), stat in zip(cells, stats_list):
        w1, w2, v = distances(*_stack(real_g), *_stack(sim_g))
        if scenario is None:
            combined[variant] = {
                "W1": w1, "W2": w2, "VEPD": v, "VEPD_ci95": stat.get("VEPD_ci95"),
                "n_real": int(sum(len(g) for g in real_g)), "n_sim": int(sum(len(g) for g in sim_g)),
            }
            statistics["combined"][variant] = stat
        else:
            per_scenario.setdefault(variant, {})[scenario] = {"W1": w1, "W2": w2, "VEPD": v}
            statistics["per_scenario"].setdefault(variant, {})[scenario] = stat
    for scenario in scenarios:
        ranks = average_ranks([per_scenario[v][scenario]["VEPD"] for v in variants])
        for variant, rank in zip(variants, ranks):
            per_scenario[variant][scenario]["rank"] = float(rank)
    return StudyResult(options=options, variants=variants, scenarios=scenarios, combined=combined,
                       per_scenario=per_scenario, statistics=statistics, runs=records, skipped=list(skipped))
