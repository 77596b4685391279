"""Bootstrap intervals of W: coverage and "contains its estimate", runs vs pairs resampled.

Not a speed benchmark: a Monte Carlo check of the statistics the scorer reports (docs/scoring.md,
"Statistics beyond the paper").  Two designs with a known true distance W = delta:

- unpaired: real ~ N(0, 1), sim ~ N(delta, 1), independent runs;
- paired (a replay design, like the demo's studies): bag effect u_k ~ N(0, 1) shared by real run k and
  sim run k, plus small own noise N(0, 0.1) each side, sim shifted by delta.

For each, REPS data sets of n runs per side; 95 % percentile intervals from metrics.bootstrap_intervals
with runs resampled independently per side and with pairs resampled together.  Prints per row:
coverage of the true W, how often the interval contains the estimate, mean width.

Usage: python benchmarks/interval_coverage.py [--n 10] [--reps 400] [--resamples 1000] [--seed 1]
"""
from __future__ import annotations

import argparse

import numpy as np

from sim2real_eval.metrics import bootstrap_intervals, wasserstein


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"n = {args.n} runs per side, {args.resamples} resamples, {args.reps} data sets per row; "
          "true W = delta")
    print(f"{'design':9} {'delta':>6} | {'runs: cover':>11} {'contains':>8} {'width':>6} | "
          f"{'pairs: cover':>12} {'contains':>8} {'width':>6}")
    for design in ("unpaired", "paired"):
        for delta in (0.0, 0.05, 0.25, 0.5, 1.0):
            tally = {False: np.zeros(3), True: np.zeros(3)}
            for rep in range(args.reps):
                if design == "unpaired":
                    real, sim = rng.normal(0.0, 1.0, args.n), rng.normal(delta, 1.0, args.n)
                else:
                    bag = rng.normal(0.0, 1.0, args.n)
                    real = bag + rng.normal(0.0, 0.1, args.n)
                    sim = bag + delta + rng.normal(0.0, 0.1, args.n)
                estimate = wasserstein(real, sim)
                # Column 2 (D) is unused here: W1 of column 0 is what is checked.
                real_g, sim_g = [np.column_stack([real, real])], [np.column_stack([sim, sim])]
                for paired in (False, True):
                    seed = np.random.SeedSequence([args.seed, rep])
                    lo, hi = bootstrap_intervals(real_g, sim_g, args.resamples, seed, paired=paired)["W1"]
                    tally[paired] += [lo <= delta <= hi, lo <= estimate <= hi, hi - lo]
            runs, pairs = tally[False] / args.reps, tally[True] / args.reps
            print(f"{design:9} {delta:6.2f} | {runs[0]:11.3f} {runs[1]:8.3f} {runs[2]:6.3f} | "
                  f"{pairs[0]:12.3f} {pairs[1]:8.3f} {pairs[2]:6.3f}", flush=True)


if __name__ == "__main__":
    main()
