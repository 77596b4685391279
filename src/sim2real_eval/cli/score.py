"""``sim2real-eval score``: RMSE, Wiener entropy, W1, W2, VEPD, tables, figures and an HTML report.

The work is ``service.find_runs_to_score`` + ``service.score_runs``; this module adds progress and
the report.

    sim2real-eval score RUNS_DIR --out REPORT          # OUT/<side>/<variant>/<scenario>/<k>/ run bags
    sim2real-eval score --manifest runs.yaml --out REPORT
    sim2real-eval score --csv-dir data2 --out REPORT   # the authors' CSV layout (Real/, Sim/<variant>/)
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from . import REPLACED

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
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                        help="bootstrap resamples for the 95%% CIs (default 1000, 0 = none)")
    parser.add_argument("--permutations", type=int, default=1000, metavar="N",
                        help="label permutations for the p-values (default 1000, 0 = none)")
    parser.add_argument("--seed", type=int, default=0,
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
    parser.add_argument("--workers", type=int, default=None,
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


def select_variants(specs: list, include, exclude) -> list:
    """The runs of the sim variants matching an ``include`` glob (all when none is given) and no
    ``exclude`` glob, plus the real runs of the scenarios those variants cover.  Without any glob: every
    run, but a tree whose variants cover different scenarios (the demo's GPS and IMU studies) is refused
    with the options that split it."""
    if not include and not exclude:
        _check_one_scenario_set(specs)
        return list(specs)
    chosen = _chosen_variants(sorted({s.variant for s in specs if s.side != "real"}), include, exclude)
    scenarios = {s.scenario for s in specs if s.side != "real" and s.variant in chosen}
    return [s for s in specs if (s.variant in chosen if s.side != "real" else s.scenario in scenarios)]


def _chosen_variants(sim_variants: list, include, exclude) -> set:
    """The variants matching an ``include`` glob (all without one) and no ``exclude`` glob; a glob that
    matches no variant, or nothing left, is a UserError listing the variants."""
    from fnmatch import fnmatchcase

    from ..errors import UserError

    for option, globs in (("--variant", include or []), ("--exclude-variant", exclude or [])):
        for glob in globs:
            if not any(fnmatchcase(variant, glob) for variant in sim_variants):
                raise UserError(f"{option} {glob!r} matches no sim variant "
                                f"(have: {', '.join(sim_variants)})")
    chosen = {variant for variant in sim_variants
              if (not include or any(fnmatchcase(variant, glob) for glob in include))
              and not any(fnmatchcase(variant, glob) for glob in exclude or [])}
    if not chosen:
        raise UserError("no sim variant left after --variant/--exclude-variant "
                        f"(have: {', '.join(sim_variants)})")
    return chosen


def _check_one_scenario_set(specs: list) -> None:
    """Every sim variant covers the same scenarios, or a UserError naming the sets and the options that
    score each alone."""
    from ..errors import UserError

    covered: dict = {}
    for spec in specs:
        if spec.side != "real":
            covered.setdefault(spec.variant, set()).add(spec.scenario)
    groups: dict = {}
    for variant, scenarios in covered.items():
        groups.setdefault(frozenset(scenarios), []).append(variant)
    if len(groups) > 1:
        parts = [f"{', '.join(sorted(variants))} on {', '.join(sorted(scenarios))}"
                 for scenarios, variants in sorted(groups.items(), key=lambda item: sorted(item[1]))]
        raise UserError("scenario sets differ between sim variants (" + "; ".join(parts) + "): score "
                        "each set alone with --variant GLOB or --exclude-variant GLOB, or add the "
                        "missing runs")


def check_real_side(specs, kind: str, args) -> None:
    """Simulated runs alone (``score`` of a ``simulate`` output): the one-line error says how to add the
    real side they are compared with."""
    from ..errors import UserError
    from ..metrics.inputs import REAL

    if not specs or any(spec.side == REAL for spec in specs):
        return
    scenarios = ", ".join(sorted({spec.scenario for spec in specs}))
    if kind == "runs_dir":
        step = (f"replay real bags of those scenarios into the same tree first, e.g. `sim2real-eval replay "
                f"bags/reference/line --replace imu=chrono_paper_demo --out {args.runs_dir}` (the shipped "
                "reference runs of scenario line), or run `sim2real-eval demo`, which makes both sides")
    elif kind == "manifest":
        step = f"list real runs of those scenarios in {args.manifest} (side: real)"
    else:
        step = f"put the real runs in {args.csv_dir}/Real/<scenario>_<k>.csv"
    raise UserError(f"only simulated runs (scenarios {scenarios}), no real runs to compare them with: {step}")


def run(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..errors import UserError
    from ..metrics import ScoreOptions
    from ..outputs import NEW, check_paths, output_folder
    from ..report import parse_trace_run, write_report
    from ..report.provenance import collect as collect_provenance
    from ..service import find_runs_to_score, score_runs

    excluded = ("rest",) if args.exclude_scenario is None else tuple(s for s in args.exclude_scenario if s)
    options = ScoreOptions(
        rate_hz=args.rate, smoothing_window=args.smoothing_window, spectrum=args.spectrum,
        log_floor=args.log_floor, speed=args.speed, exclude_scenarios=excluded, bootstrap=args.bootstrap,
        permutations=args.permutations, seed=args.seed,
    ).validate()
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers: must be >= 1, got {args.workers}")
    if args.noise_floor_draws < 2:
        raise UserError(f"--noise-floor-draws: must be >= 2 (the floor compares pairs of draws), got "
                        f"{args.noise_floor_draws}")
    trace_runs = [parse_trace_run(t) for t in args.trace_runs] if args.trace_runs else None
    replace = output_folder(args.out, "--out", args.overwrite) != NEW or os.path.lexists(args.out)
    kind, source, specs = find_runs_to_score(options, args.runs_dir, args.manifest, args.csv_dir)
    if args.window:
        from ..metrics.inputs import parse_window, with_window

        specs = with_window(specs, parse_window(args.window))
    specs = select_variants(specs, args.variant, args.exclude_variant)
    from ..metrics.inputs import warmup_of_runs

    options = dataclasses.replace(options, warmup_s=warmup_of_runs(specs, args.warmup)).validate()
    label = {"runs_dir": "RUNS_DIR", "manifest": "--manifest", "csv": "--csv-dir"}[kind]
    check_paths({label: source, "(runs)": sorted({spec.source for spec in specs})}, {"--out": args.out})
    check_real_side(specs, kind, args)

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # auto_refresh=False: no refresh thread while worker processes are forked.
    with Progress(*columns, console=console, auto_refresh=False,
                  disable=args.no_progress or not console.is_terminal,
                  transient=not console.is_terminal) as progress:
        tasks: dict = {}

        def advance(stage, n, total=None):
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.advance(tasks[stage], n)
            progress.refresh()

        scored = score_runs(specs, options, skip_bad_runs=args.skip_bad_runs, workers=args.workers,
                            progress=advance, judge_health=True)
        for task in tasks.values():  # cells without resampling do not advance: show them done
            progress.update(task, total=progress.tasks[task].completed)
        result = scored.result
        if not args.no_noise_floor:
            floor_task = progress.add_task("judge-noise floor", total=1)
            progress.refresh()
            result.judge_noise_floor = measure_noise_floor(specs, result, options, args.noise_floor_draws,
                                                           args.workers)
            progress.advance(floor_task, 1)
        report_task = progress.add_task("figures and report", total=1)
        progress.refresh()
        write_report(args.out, result, scored.series, source, trace_runs,
                     extra_options={"input": kind, "source": str(source),
                                    **({"window_ns": list(parse_window(args.window))} if args.window else {}),
                                    **({"speed": "as written in the CSVs"} if kind == "csv" else {})},
                     overwrite=replace, workers=args.workers or os.cpu_count() or 1,
                     provenance=collect_provenance(result, kind, str(source)))
        progress.advance(report_task, 1)
        progress.refresh()

    print(score_summary(result, len(scored.skipped), args.out), file=sys.stdout)
    return 0


def measure_noise_floor(specs: list, result, options, draws: int, workers) -> dict:
    """``StudyResult.judge_noise_floor`` for the real runs scored (``service.noise_floor_draws``), or
    {"unavailable": why} when the inputs name no real bag to judge again."""
    from ..noise_floor.compute import judge_noise_floor
    from ..service import noise_floor_draws

    scored = {r.key for r in result.runs if r.side == "real"}
    found, why = noise_floor_draws([s for s in specs if s.key in scored], options, draws, workers=workers)
    if found is None:
        return {"unavailable": why}
    return judge_noise_floor(found, result.variants, result.scenarios)


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
