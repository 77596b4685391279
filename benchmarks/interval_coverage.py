"""Bootstrap intervals: coverage of W1 (runs vs pairs resampled) and of the VEPD difference of two
variants at small K (percentile, BCa, expanded percentile).

Not a speed benchmark: a Monte Carlo check of the statistics the scorer reports (docs/scoring.md,
"Statistics beyond the paper" and "Interval coverage at small K").

``--design w1`` (the pairs-vs-runs table): two designs with a known true distance W = delta —
unpaired: real ~ N(0, 1), sim ~ N(delta, 1), independent runs; paired (a replay design, like the demo's
studies): bag effect u_k ~ N(0, 1) shared by real run k and sim run k, plus small own noise N(0, 0.1)
each side, sim shifted by delta.  Prints per row: coverage of the true W, how often the interval
contains the estimate, mean width.

``--design difference`` (default; the table docs/scoring.md shows): the statistic variant comparisons
report, d = VEPD(real, b) − VEPD(real, a), with ``metrics.study.difference_statistics`` as the
package calls it (paired: the demo's replay design).  K units per data set; unit k has a bag effect
(u_k, v_k) ~ N(0, 1)² on (E, D) that real run k and both variants' run k share, plus own noise
N(0, 0.3²) per run; variant a is shifted by delta_a on E and D, b by delta_b.  Every marginal is
N(shift, 1.09), so the true VEPD of a variant is its shift and the true d = delta_b − delta_a.  Per
(K, delta_a, delta_b) and interval method: coverage of the true d and mean width.
``--write`` rewrites the region ``interval-coverage`` of docs/scoring.md with that table.

Usage: python benchmarks/interval_coverage.py [--design difference|w1] [--ks 4 6 10] [--reps 400]
       [--resamples 1000] [--seed 1] [--write]
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from sim2real_eval.metrics import bootstrap_intervals, wasserstein
from sim2real_eval.metrics.study import INTERVAL_METHODS, difference_statistics

DOC = Path(__file__).resolve().parents[1] / "docs" / "scoring.md"
REGION = re.compile(r"(<!-- generated: interval-coverage -->\n)(.*?)(<!-- end: interval-coverage -->)", re.S)
SHIFTS = ((0.0, 0.0), (0.0, 0.5), (0.25, 0.5), (0.5, 1.0), (1.0, 2.0))
BAG_SD, OWN_SD = 1.0, 0.3


def difference_data(rng, k: int, delta_a: float, delta_b: float) -> tuple:
    """(real, a, b): (k, 2) [E, D] rows of one paired data set (see the module docstring)."""
    bag = rng.normal(0.0, BAG_SD, (k, 2))
    return tuple(bag + shift + rng.normal(0.0, OWN_SD, (k, 2)) for shift in (0.0, delta_a, delta_b))


def difference_coverage(ks, shifts, reps: int, resamples: int, seed: int) -> list:
    """[(k, delta_a, delta_b, {method: (coverage, mean width)})], every method on the same data and the
    same resamples."""
    rows = []
    for k in ks:
        for delta_a, delta_b in shifts:
            rng = np.random.default_rng([seed, k, int(1000 * delta_a), int(1000 * delta_b)])
            truth = delta_b - delta_a
            tally = {method: np.zeros(2) for method in INTERVAL_METHODS}
            for rep in range(reps):
                real, a, b = difference_data(rng, k, delta_a, delta_b)
                for method in INTERVAL_METHODS:
                    lo, hi = difference_statistics([real], [a], [b], resamples, 0,
                                                   np.random.SeedSequence([seed, k, rep]), None,
                                                   paired=True, method=method)["difference_ci95"]
                    tally[method] += [lo <= truth <= hi, hi - lo]
            rows.append((k, delta_a, delta_b, {m: tuple(t / reps) for m, t in tally.items()}))
    return rows


def coverage_table(rows, reps: int, resamples: int, seed: int) -> str:
    """The markdown table (and its one-line provenance) of ``difference_coverage`` rows."""
    lines = [f"Coverage of the true d at nominal 95 % (share of {reps} seeded data sets per row whose "
             f"interval contains it; {resamples} resamples; mean width after the slash).  Written by "
             f"`python benchmarks/interval_coverage.py --reps {reps} --resamples {resamples} --seed {seed} "
             "--write`.", "",
             "| K | VEPD a, VEPD b (true d) | " + " | ".join(INTERVAL_METHODS) + " |",
             "|---|---|" + "---|" * len(INTERVAL_METHODS)]
    for k, delta_a, delta_b, result in rows:
        cells = [f"{result[m][0]:.3f} / {result[m][1]:.3f}" for m in INTERVAL_METHODS]
        truth = f"{delta_a:g}, {delta_b:g} ({delta_b - delta_a:g})"
        lines.append(f"| {k} | {truth} | " + " | ".join(cells) + " |")
    for k in sorted({row[0] for row in rows}):
        mean = {m: np.mean([row[3][m][0] for row in rows if row[0] == k]) for m in INTERVAL_METHODS}
        lines.append(f"| {k} | mean over rows | " + " | ".join(f"{mean[m]:.3f}" for m in INTERVAL_METHODS)
                     + " |")
    return "\n".join(lines)


def write_region(text: str, table: str) -> str:
    """``text`` with the ``interval-coverage`` region's body replaced by ``table``."""
    if not REGION.search(text):
        raise SystemExit(f"{DOC}: no region <!-- generated: interval-coverage --> … "
                         "<!-- end: interval-coverage -->")
    return REGION.sub(lambda m: m.group(1) + table + "\n" + m.group(3), text)


def w1_coverage(n: int, reps: int, resamples: int, seed: int) -> None:
    """The pairs-vs-runs table of W1 (printed)."""
    rng = np.random.default_rng(seed)
    print(f"n = {n} runs per side, {resamples} resamples, {reps} data sets per row; true W = delta")
    print(f"{'design':9} {'delta':>6} | {'runs: cover':>11} {'contains':>8} {'width':>6} | "
          f"{'pairs: cover':>12} {'contains':>8} {'width':>6}")
    for design in ("unpaired", "paired"):
        for delta in (0.0, 0.05, 0.25, 0.5, 1.0):
            tally = {False: np.zeros(3), True: np.zeros(3)}
            for rep in range(reps):
                if design == "unpaired":
                    real, sim = rng.normal(0.0, 1.0, n), rng.normal(delta, 1.0, n)
                else:
                    bag = rng.normal(0.0, 1.0, n)
                    real = bag + rng.normal(0.0, 0.1, n)
                    sim = bag + delta + rng.normal(0.0, 0.1, n)
                estimate = wasserstein(real, sim)
                # Column 2 (D) is unused here: W1 of column 0 is what is checked.
                real_g, sim_g = [np.column_stack([real, real])], [np.column_stack([sim, sim])]
                for paired in (False, True):
                    seeds = np.random.SeedSequence([seed, rep])
                    lo, hi = bootstrap_intervals(real_g, sim_g, resamples, seeds, paired=paired)["W1"]
                    tally[paired] += [lo <= delta <= hi, lo <= estimate <= hi, hi - lo]
            runs, pairs = tally[False] / reps, tally[True] / reps
            print(f"{design:9} {delta:6.2f} | {runs[0]:11.3f} {runs[1]:8.3f} {runs[2]:6.3f} | "
                  f"{pairs[0]:12.3f} {pairs[1]:8.3f} {pairs[2]:6.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", choices=("difference", "w1"), default="difference")
    parser.add_argument("--n", type=int, default=10, help="w1: runs per side")
    parser.add_argument("--ks", type=int, nargs="+", default=[4, 6, 10],
                        help="difference: units per data set")
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", action="store_true", help=f"difference: rewrite the table in {DOC.name}")
    args = parser.parse_args()
    if args.design == "w1":
        w1_coverage(args.n, args.reps, args.resamples, args.seed)
        return
    table = coverage_table(difference_coverage(args.ks, SHIFTS, args.reps, args.resamples, args.seed),
                           args.reps, args.resamples, args.seed)
    print(table)
    if args.write:
        DOC.write_text(write_region(DOC.read_text(encoding="utf-8"), table), encoding="utf-8")


if __name__ == "__main__":
    main()
