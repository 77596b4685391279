"""Does the judge change the verdict?  Two judges' scores of the same study compared (issue 33).

The same runs — the real bags and every simulated variant — are judged by several state estimators (the
EKF and the UKF port, other robot_localization configurations); each judge gives its own Table I.  This
module compares two of them:

- **Rank agreement**: Kendall's τ-b (``scipy.stats.kendalltau``; ties in VEPD count as ties) between the
  two judges' pooled VEPD over the variants both scored.  1: the same ordering; −1: reversed.
- **Its interval**: a paired, stratified percentile bootstrap.  A resample draws (scenario, k) units
  with replacement within each scenario; unit k brings real run k and every variant's run k, as judged
  by *both* judges (sim run k replays real bag k, and both judges judged the same run), so the two
  orderings of one resample are of the same data.  Seeded: same seed, same interval.
- **Verdicts**: for every pair of variants, what the package's one separability rule
  (``separation.separated``: interval, permutation p and judge-noise floor, each judge with its own floor)
  says under each judge: "a closer", "b closer" or not separable.  A **flip** is a pair separable under
  both judges in opposite directions.  A pair separable under one judge only is not a flip: it is
  listed as a change of separability (the other judge cannot tell the two apart), kept apart so that
  a precision difference is not read as a reversal.
"""
from __future__ import annotations

import math
import zlib
from itertools import combinations

import numpy as np

from .separation import separated
from .study import REAL, StudyResult, wasserstein_rows

AGREE, FLIP = "agree", "flip"
ONLY_FIRST, ONLY_SECOND = "separable under the first only", "separable under the second only"
NOT_SEPARABLE = "not separable"


def kendall_tau(first: dict, second: dict) -> float:
    """Kendall's τ-b between two {variant: VEPD} over the variants both have (NaN with fewer than two, or
    when one side has a single value for all: no ordering to compare)."""
    from scipy.stats import kendalltau

    names = sorted(set(first) & set(second))
    if len(names) < 2:
        return math.nan
    x = np.array([first[n] for n in names], dtype=float)
    y = np.array([second[n] for n in names], dtype=float)
    if np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(kendalltau(x, y)[0])


def discordant_pairs(first: dict, second: dict) -> list:
    """[[a, b]] (a < b by name) of the variants both have whose VEPD order the two judges reverse: the
    pairs that make τ below 1 (a tie under one judge is not a reversal)."""
    names = sorted(set(first) & set(second))
    return [[a, b] for a, b in combinations(names, 2)
            if (first[a] - first[b]) * (second[a] - second[b]) < 0]


def closer(result: StudyResult, a: str, b: str) -> str | None:
    """The variant of the pair the package's rule calls separably closer to real (pooled), or None (not
    separable, or never compared)."""
    apart = separated(result, a, b)
    return None if apart is None else (a if apart else b)


def verdicts(result: StudyResult, variants) -> dict:
    """{(a, b): closer variant or None} for every pair of ``variants`` (a < b by name)."""
    return {(a, b): closer(result, a, b) for a, b in combinations(sorted(variants), 2)}


def change(first: str | None, second: str | None) -> str:
    """What happened to one pair's verdict from the first judge to the second: ``AGREE`` (same verdict,
    separable or not), ``FLIP`` (separable under both, opposite directions), ``ONLY_FIRST`` /
    ``ONLY_SECOND`` (separable under one judge only)."""
    if first == second:
        return AGREE
    if first is not None and second is not None:
        return FLIP
    return ONLY_FIRST if second is None else ONLY_SECOND


def verdict_changes(first: dict, second: dict) -> list:
    """[{pair, first, second, change}] for every pair both verdict maps ({(a, b): closer or None}) hold,
    in pair order; ``first``/``second`` read the closer variant's name or ``NOT_SEPARABLE``."""
    rows = []
    for pair in sorted(set(first) & set(second)):
        rows.append({"pair": list(pair), "first": first[pair] or NOT_SEPARABLE,
                     "second": second[pair] or NOT_SEPARABLE, "change": change(first[pair], second[pair])})
    return rows


def flips(rows: list) -> list:
    """The pairs of ``verdict_changes`` rows whose verdict flipped."""
    return [row["pair"] for row in rows if row["change"] == FLIP]


# ------------------------------------------------------------------------------------ the bootstrap
def unit_values(result: StudyResult, variants) -> tuple:
    """({scenario: [k]}, {side: (N, 2) [E, D] rows in (scenario, k) order}) of the real side and each of
    ``variants``; raises ValueError when a side lacks a (scenario, k) unit of the real side's."""
    units = {s: sorted(r.k for r in result.runs if r.side == REAL and r.scenario == s)
             for s in result.scenarios}
    rows: dict = {}
    for side in (REAL, *variants):
        found = {(r.scenario, r.k): (r.score.rmse, r.score.D) for r in result.runs
                 if (r.variant if r.side != REAL else REAL) == side}
        try:
            rows[side] = np.array([found[(s, k)] for s in result.scenarios for k in units[s]], dtype=float)
        except KeyError as missing:
            raise ValueError(f"{side}: no run {missing.args[0]} (runs are not paired with the real side)") \
                from None
    return units, rows


def _unit_draws(units_list: list, n_resamples: int, rng) -> np.ndarray:
    """(R, N) indices into the (scenario, k) rows: each scenario's units drawn with replacement within it."""
    sizes = [len(ks) for ks in units_list]
    offsets = np.cumsum([0] + sizes)[:-1]
    return np.concatenate([offset + rng.integers(0, size, (n_resamples, size))
                           for size, offset in zip(sizes, offsets)], axis=1)


def _vepd_resamples(rows: dict, variant: str, index: np.ndarray) -> np.ndarray:
    """(R,) VEPD of ``variant`` against the real side on the resampled rows ``index`` (R, N)."""
    real, sim = rows[REAL][index], rows[variant][index]
    return (wasserstein_rows(real[..., 0], sim[..., 0]) + wasserstein_rows(real[..., 1], sim[..., 1])) / 2


def tau_interval(first: StudyResult, second: StudyResult, n_resamples: int, seed_sequence,
                 level: float = 0.95) -> dict:
    """Kendall's τ of the two judges' pooled VEPD orderings and its paired percentile bootstrap interval
    ({tau, tau_ci95 [lo, hi] or None, resamples (those with a defined τ), variants, units}).  Both results
    must hold the same (scenario, k) units (the same runs, judged twice); otherwise ValueError.  No
    interval for fewer than three variants: with two, τ is ±1 and a resample can only keep or swap them."""
    from scipy.stats import kendalltau

    variants = sorted(set(first.variants) & set(second.variants))
    tau = kendall_tau({v: first.combined[v]["VEPD"] for v in variants},
                      {v: second.combined[v]["VEPD"] for v in variants})
    units, first_rows = unit_values(first, variants)
    second_units, second_rows = unit_values(second, variants)
    if units != second_units:
        raise ValueError("the two judges scored different runs: the bootstrap needs the same (scenario, k)")
    out = {"tau": tau, "tau_ci95": None, "resamples": 0, "variants": variants,
           "units": sum(len(ks) for ks in units.values())}
    if n_resamples < 1 or len(variants) < 3:
        return out
    rng = np.random.default_rng(seed_sequence)
    index = _unit_draws([units[s] for s in first.scenarios], n_resamples, rng)
    a = np.stack([_vepd_resamples(first_rows, v, index) for v in variants], axis=1)
    b = np.stack([_vepd_resamples(second_rows, v, index) for v in variants], axis=1)
    taus = np.array([kendalltau(x, y)[0] if np.ptp(x) > 0 and np.ptp(y) > 0 else np.nan
                     for x, y in zip(a, b)], dtype=float)
    taus = taus[np.isfinite(taus)]
    if len(taus):
        tail = 100 * (1 - level) / 2
        lo, hi = np.percentile(taus, [tail, 100 - tail])
        out["tau_ci95"] = [float(lo), float(hi)]
    out["resamples"] = int(len(taus))
    return out


def tau_seed(seed: int, study: str, first: str, second: str) -> np.random.SeedSequence:
    """The bootstrap seed of one (study, judge pair): keyed by names, so adding a judge or a study does not
    change another pair's interval."""
    return np.random.SeedSequence([seed, *(zlib.crc32(name.encode()) for name in
                                           ("judge-tau", study, first, second))])


__all__ = ["AGREE", "FLIP", "NOT_SEPARABLE", "ONLY_FIRST", "ONLY_SECOND", "change", "closer",
           "discordant_pairs", "flips", "kendall_tau", "tau_interval", "tau_seed", "unit_values",
           "verdict_changes", "verdicts"]
