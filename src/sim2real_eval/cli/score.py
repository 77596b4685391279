"""``sim2real-eval score``: RMSE, Wiener entropy, W1, W2, VEPD, tables, figures and an HTML report.

The work is ``service.score_request`` (the runs found, selected, scored, the judge-noise floor, the
report); this module parses the options, shows the progress and prints the summary.

    sim2real-eval score RUNS_DIR --out REPORT          # OUT/<side>/<variant>/<scenario>/<k>/ run bags
    sim2real-eval score --manifest runs.yaml --out REPORT
    sim2real-eval score --csv-dir data2 --out REPORT   # the authors' CSV layout (Real/, Sim/<variant>/)
"""
from __future__ import annotations

import argparse
import contextlib
import sys

from . import REPLACED
from .validators import non_negative_int, positive_int

OUTPUTS = REPLACED.format(what="--out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("input (exactly one)")
    source.add_argument("runs_dir", nargs="?", metavar="RUNS_DIR",
                        help="pipeline output: RUNS_DIR/<side>/<variant>/<scenario>/<k>/ (bag + run.yaml)")
    source.add_argument("--manifest", metavar="M.yaml", help="YAML listing bags with side/variant/scenario")
    source.add_argument("--csv-dir", metavar="DIR",
                        help="reference CSV layout: DIR/Real/<scenario>_<k>.csv, "
                             "DIR/Sim/<variant>/<scenario>_<k>.csv")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="report folder, new or empty (written atomically)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out folder, once the new report is complete")
    parser.add_argument("--exclude-scenario", action="append", metavar="NAME",
                        help="scenario to leave out (repeatable; default: rest). Use --exclude-scenario '' "
                             "to keep every scenario")
    parser.add_argument("--variant", action="append", metavar="GLOB",
                        help="score only the sim variants matching GLOB (fnmatch, e.g. 'sim_imu-*'; "
                             "repeatable); the real runs kept are those of the scenarios these variants "
                             "were run on")
    parser.add_argument("--exclude-variant", action="append", metavar="GLOB",
                        help="leave out the sim variants matching GLOB (repeatable); e.g. the demo's run "
                             "tree: --exclude-variant 'sim_imu-*' scores the GPS study, --variant "
                             "'sim_imu-*' the simulated-IMU study")
    parser.add_argument("--bootstrap", type=non_negative_int, default=1000, metavar="N",
                        help="bootstrap resamples for the 95%% CIs (default 1000, 0 = none)")
    parser.add_argument("--permutations", type=non_negative_int, default=1000, metavar="N",
                        help="label permutations for the p-values (default 1000, 0 = none)")
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="seed of the bootstrap and permutations (default 0)")
    parser.add_argument("--no-noise-floor", action="store_true",
                        help="do not measure the judge-noise floor (by default the real bag of every real "
                             "run that names one in its run.yaml is judged again with random judge timing, "
                             "--noise-floor-draws times: results not above that floor are marked)")
    parser.add_argument("--noise-floor-draws", type=int, default=4, metavar="N",
                        help="timing draws of the judge-noise floor (default 4: 6 pairs; at least 2)")
    parser.add_argument("--skip-bad-runs", action="store_true",
                        help="skip runs with defects (missing topic, too short, NaN, ...) and list them "
                             "in the report")
    parser.add_argument("--trace-runs", nargs="+", metavar="SCENARIO:K",
                        help="runs whose velocity traces are plotted (default: first run of each scenario)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="processes reading runs (default: CPU count)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--warmup", type=float, default=None, metavar="SECONDS",
                        help="seconds at the start of every run left out of the scores (the judge's "
                             "start-up; the noise floor skips them too); default: the warmup_s the runs' "
                             "run.yaml record (replay/demo --warmup, a study's judge.warmup_s), else 0")
    parser.add_argument("--window", metavar="START:END",
                        help="time window (header stamps, integer ns) of the bag runs that record none "
                             "(default: each run's ground-truth span; replayed runs keep their run.yaml "
                             "window_ns)")
    pre = parser.add_argument_group("preprocessing (defaults = the reference computeEPD.py)")
    pre.add_argument("--rate", type=float, default=15.0, metavar="HZ",
                     help="common timeline rate (default 15)")
    pre.add_argument("--smoothing-window", type=int, default=2, metavar="N",
                     help="moving average on the estimate's speeds and times (default 2; 1 = off)")
    pre.add_argument("--spectrum", choices=("full", "one_sided", "welch"), default="full",
                     help="spectrum of the Wiener entropy (default full two-sided |FFT|)")
    pre.add_argument("--log-floor", type=float, default=1e-10, help="floor inside the log (default 1e-10)")
    pre.add_argument("--speed", choices=("horizontal", "paper", "paper-real", "paper-sim"),
                     default="horizontal",
                     help="speed definition for bag inputs (default horizontal norm sqrt(vx^2+vy^2)); "
                          "'paper' = the authors' single-axis definitions per side")


def run(args) -> int:
    from ..metrics import ScoreOptions
    from ..service.score import ScoreRequest, score_request

    excluded = ("rest",) if args.exclude_scenario is None else tuple(s for s in args.exclude_scenario if s)
    options = ScoreOptions(
        rate_hz=args.rate, smoothing_window=args.smoothing_window, spectrum=args.spectrum,
        log_floor=args.log_floor, speed=args.speed, exclude_scenarios=excluded, bootstrap=args.bootstrap,
        permutations=args.permutations, seed=args.seed,
    ).validate()
    request = ScoreRequest(
        out=args.out, options=options, runs_dir=args.runs_dir, manifest=args.manifest, csv_dir=args.csv_dir,
        window=args.window, variants=args.variant or (), exclude_variants=args.exclude_variant or (),
        warmup=args.warmup, noise_floor_draws=None if args.no_noise_floor else args.noise_floor_draws,
        trace_runs=args.trace_runs, skip_bad_runs=args.skip_bad_runs, workers=args.workers,
        overwrite=args.overwrite)
    with _progress_bars(args.no_progress) as advance:
        done = score_request(request, progress=advance)
    print(score_summary(done.result, len(done.scored.skipped), args.out), file=sys.stdout)
    return 0


@contextlib.contextmanager
def _progress_bars(disabled: bool):
    """Rich bars on stderr, one per stage of ``service.score_request``; yields its ``progress`` callback.
    A stage that starts completes the ones before it (cells without resampling do not advance)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # auto_refresh=False: no refresh thread while worker processes are forked.
    with Progress(*columns, console=console, auto_refresh=False, disable=disabled or not console.is_terminal,
                  transient=not console.is_terminal) as progress:
        tasks: dict = {}

        def advance(stage, n, total=None):
            if stage not in tasks:
                for task in tasks.values():
                    progress.update(task, total=progress.tasks[task].completed)
                tasks[stage] = progress.add_task(stage, total=total)
            progress.advance(tasks[stage], n)
            progress.refresh()

        yield advance


def score_summary(result, skipped: int, out) -> str:
    """What ``score`` prints: the closest variant (or the tied ones), the floor, permutation limits."""
    from ..metrics import separation
    from ..noise_floor.render import unavailable
    from ..report.tables import closest_to_real

    best = separation.order(result)[0]
    lines = [f"scored {len(result.runs)} runs ({skipped} skipped); closest to real: "
             f"{closest_to_real(result)} "
             f"(VEPD {result.combined[best]['VEPD']:.4f}"
             + (", not above the judge-noise floor" if separation.below_floor(result, best) else "")
             + f"); report in {out}"]
    floor = result.judge_noise_floor
    if floor and unavailable(result) is None:
        cell = floor["combined"][best]
        lines.append(f"judge-noise floor {cell['VEPD']:.4f} [{cell['VEPD_interval'][0]:.4f}, "
                     f"{cell['VEPD_interval'][1]:.4f}] ({floor['pairs']} pairs of {floor['draws']} timing "
                     "draws)")
    elif floor:
        lines.append(f"judge-noise floor: not measured ({unavailable(result)})")
    lines += [f"warning: {line}" for line in separation.permutation_warnings(result)]
    from ..report.health import console_lines

    lines += console_lines(result)
    return "\n".join(lines)
