"""The variant-difference intervals (issue 31): the expanded percentile level and BCa against
hand-computed values, the measured coverage on a small seeded simulation (benchmarks/interval_coverage.py's
own design and code), and docs/scoring.md's coverage table against the method the package adopts."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from fixtures.benchmarks import load_benchmark

from sim2real_eval.metrics.study import (
    DIFFERENCE_INTERVAL,
    INTERVAL_METHODS,
    bca_interval,
    difference_statistics,
    expanded_level,
)

REPO = Path(__file__).resolve().parents[1]


def load_coverage_script():
    return load_benchmark("interval_coverage")


def test_expanded_level_by_hand():
    # n = 6: t_5(0.975) = 2.570582, × √(6/5) = 2.815891, Φ(−2.815891) = 0.0024318 -> 1 − 2 × that
    assert expanded_level(0.95, 6) == pytest.approx(0.9951364, abs=1e-6)
    # n = 10: t_9(0.975) = 2.262157, × √(10/9) = 2.384539, Φ(−2.384539) = 0.0085506
    assert expanded_level(0.95, 10) == pytest.approx(0.9828988, abs=1e-6)
    assert expanded_level(0.95, 1) == 0.95
    assert 0.95 < expanded_level(0.95, 1000) < 0.9505       # large n: near the plain percentile level


def test_bca_by_hand():
    samples = (np.arange(1000) + 0.5) / 1000                 # 0.0005 … 0.9995

    def at(*levels):
        return pytest.approx(list(np.percentile(samples, [100 * q for q in levels])), abs=1e-4)

    symmetric = [np.array([-1.0, 0.0, 1.0])]                 # a = 0
    # half the resamples below the estimate (z0 = 0), a = 0: the percentile interval
    assert bca_interval(samples, 0.5, symmetric) == at(0.025, 0.975)
    # 841 of 1000 below: z0 = Φ⁻¹(0.841) = 0.99858; levels Φ(2 z0 ∓ 1.95996) = Φ(0.03720), Φ(3.95712)
    assert bca_interval(samples, 0.8413, symmetric) == at(0.51484, 0.999962)
    # jackknife 0, 0, 3: deviations 1, 1, −2 -> a = (1 + 1 − 8) / (6 × 6^1.5) = −0.06804; z0 = 0:
    # levels Φ(−1.96 / (1 − 0.06804 × 1.96)) = Φ(−2.2616) = 0.011861,
    #        Φ(1.96 / 1.133358) = Φ(1.72939) = 0.95813
    assert bca_interval(samples, 0.5, [np.array([0.0, 0.0, 3.0])]) == at(0.011861, 0.95813)
    # every resample on one side: z0 infinite, the percentile interval
    assert bca_interval(samples + 2, 0.5, symmetric) == pytest.approx(
        list(np.percentile(samples + 2, [2.5, 97.5])))


def test_the_methods_share_the_resamples_and_an_unknown_one_is_refused():
    rng = np.random.default_rng(3)
    real, a, b = ([rng.normal(shift, 1.0, (6, 2))] for shift in (0.0, 0.5, 1.5))
    got = {m: difference_statistics(real, a, b, 400, 0, 7, None, paired=True, method=m)
           for m in INTERVAL_METHODS}
    assert len({g["difference"] for g in got.values()}) == 1
    plain, wide = got["percentile"]["difference_ci95"], got["expanded"]["difference_ci95"]
    assert wide[0] <= plain[0] and plain[1] <= wide[1]      # the same resamples at a higher level
    assert got[DIFFERENCE_INTERVAL]["interval"] == DIFFERENCE_INTERVAL
    assert difference_statistics(real, a, b, 400, 0, 7, None, paired=True)["interval"] == DIFFERENCE_INTERVAL
    with pytest.raises(ValueError, match="unknown interval method"):
        difference_statistics(real, a, b, 10, 0, 7, None, method="basic")


def test_adopted_method_covers_at_k6_on_a_seeded_simulation():
    """The benchmark's design at K = 6, true VEPDs 1 and 2 (d = 1), 120 seeded data sets (seeded: the
    same data and resamples every run, so it cannot flake).  The docs' 400-data-set row measures 0.943
    for the adopted interval; 120 data sets have a Monte Carlo standard error of 0.021, so the bound is
    0.88 (≈ 3 SE below; this seed gives 0.892, the percentile interval 0.842), and the adopted interval
    must cover more often than the plain percentile one on the same data."""
    bench = load_coverage_script()
    (_k, _a, _b, result), = bench.difference_coverage([6], [(1.0, 2.0)], reps=120, resamples=300, seed=5)
    assert result[DIFFERENCE_INTERVAL][0] >= 0.88, result
    assert result[DIFFERENCE_INTERVAL][0] > result["percentile"][0], result


def test_scoring_doc_table_is_the_benchmarks_and_backs_the_adopted_method():
    """docs/scoring.md's region is the benchmark's table (its columns and rows as `coverage_table` writes
    them) and the method the package adopts has the highest mean coverage there at K = 4, 6 and 10."""
    bench = load_coverage_script()
    text = (REPO / "docs" / "scoring.md").read_text(encoding="utf-8")
    body = bench.REGION.search(text).group(2)
    header = "| K | VEPD a, VEPD b (true d) | " + " | ".join(INTERVAL_METHODS) + " |"
    assert header in body
    rows = [line for line in body.splitlines() if re.match(r"\| \d+ \| \d", line)]
    assert len(rows) == 3 * len(bench.SHIFTS)
    for k in (4, 6, 10):
        mean = next(line for line in body.splitlines() if line.startswith(f"| {k} | mean over rows |"))
        values = dict(zip(INTERVAL_METHODS, (float(v) for v in mean.strip("| ").split(" | ")[2:])))
        assert max(values, key=values.get) == DIFFERENCE_INTERVAL, (k, values)
    # the table as the script renders it from its own rows
    parsed = []
    for line in rows:
        cells = line.strip("| ").split(" | ")
        a, b = (float(x) for x in cells[1].split(" (")[0].split(", "))
        result = {m: tuple(float(x) for x in cell.split(" / "))
                  for m, cell in zip(INTERVAL_METHODS, cells[2:])}
        parsed.append((int(cells[0]), a, b, result))
    reps, resamples, seed = (int(re.search(rf"--{name} (\d+)", body).group(1))
                             for name in ("reps", "resamples", "seed"))
    rendered = bench.coverage_table(parsed, reps, resamples, seed).splitlines()
    written = body.rstrip("\n").splitlines()
    assert len(rendered) == len(written)
    for mine, theirs in zip(rendered, written):
        if "mean over rows" in mine:  # re-averaged from 3-decimal cells: within rounding
            assert np.allclose([float(v) for v in mine.strip("| ").split(" | ")[2:]],
                               [float(v) for v in theirs.strip("| ").split(" | ")[2:]], atol=1.1e-3)
        else:
            assert mine == theirs
