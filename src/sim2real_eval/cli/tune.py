"""``sim2real-eval tune --study STUDY.yaml --real DIR --params "gps.sigma=0.01:0.1" --out DIR``:
search model parameters that minimise VEPD against real runs (Optuna TPE; local or Ray)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from .validators import non_negative_int, positive_int

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): --out must be new, empty or an earlier tune output (its "
           "marker .sim2real-eval.json, and nothing but its five files with the SHA-256 it records; replaced "
           "when the search is done); any other folder is refused "
           "unless --overwrite, which replaces it atomically; --storage must be a new file or an Optuna "
           "SQLite storage, outside --real and --out; nothing is written through a symbolic link.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", required=True,
                        help="study file: scenarios, K, judge and the variant to tune")
    parser.add_argument("--real", required=True, metavar="DIR",
                        help="the real runs, taken as they are: replay's output (DIR/real/real/<scenario>/"
                             "<k>/) or a demo output with its run bags (demo --keep-runs: "
                             "DIR/runs/real/real/<scenario>/<k>/); at least 2 per scenario of the study")
    parser.add_argument("--params", required=True,
                        help="comma-separated NAME=LOW:HIGH[:log], e.g. "
                             "'gps.position_noise.sigma=0.005:0.5:log,imu.accelerometer.b0=0:0.2' "
                             "(a unique suffix such as gps.sigma is enough)")
    parser.add_argument("--out", required=True,
                        help="output directory: best presets, trials.csv, convergence.png (new, empty or an "
                             "earlier tune output)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out that is not a tune output, once the search is done")
    parser.add_argument("--variant", default=None, help="study variant to tune (needed when it has several)")
    parser.add_argument("--budget", type=positive_int, default=20,
                        help="number of trials in total (default 20)")
    parser.add_argument("--objective", default="combined",
                        help="'combined' (scenarios pooled, Table I) or one scenario name")
    parser.add_argument("--storage", default=None, metavar="FILE.db",
                        help="SQLite file for a resumable study (finished trials count towards --budget): a "
                             "new file or an Optuna storage, outside --real and --out")
    parser.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="run trials as Ray tasks: a cluster address, 'auto' or 'local'")
    parser.add_argument("--workers", type=positive_int, default=1,
                        help="trials run at once: local processes, or CPUs of a --ray local cluster "
                             "(default 1)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="sampler seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    from rich.console import Console

    try:  # the search itself: the [all] extra (checked before any work, not as a traceback after it)
        import optuna  # noqa: F401
    except ImportError:
        raise UserError("tune needs optuna: pip install 'sim2real_eval[all]' (or: pip install optuna)"
                        ) from None

    from ..outputs import OwnNames, check_paths, output_folder
    from ..resources import find_config
    from ..studies.tune import real_runs_dir, tune
    from ..studies.tune_outputs import COMMAND, OUTPUT_FILES, write_outputs

    out = Path(args.out)
    args.study = str(find_config(args.study, "studies", option="--study"))  # a bare name: config/studies/
    # tune reads the real runs of --real (RUNS/real/real/<scenario>/<k>/): an --out (or a --storage)
    # beside them is fine.  --storage is written: an output, so it may not lie in the runs tune reads nor
    # in --out (replaced).
    check_paths({"--study": args.study, "--real": real_runs_dir(args.real, check=False) / "real"},
                {"--out": out, "--storage": args.storage})
    # An earlier tune output is replaced as a whole: only when every file in it is tune's, as its marker
    # records it (a marker is not taken on trust: outputs.own_output_problem).
    output_folder(out, "--out", args.overwrite, command=COMMAND,
                  own=OwnNames(COMMAND, OUTPUT_FILES, whole=True))
    result = tune(args.study, args.real, args.params, budget=args.budget, objective=args.objective,
                  variant=args.variant, storage=args.storage, ray_address=args.ray, workers=args.workers,
                  seed=args.seed, progress=not args.no_progress)
    write_outputs(result, out, overwrite=True)
    console = Console(stderr=True)
    for line in summary_lines(result, out):
        console.print(line)
    return 0


def summary_lines(result, out: Path) -> list:
    """What tune says on stderr: the untuned and best VEPD (or that no trial beat the untuned model), the
    trials and the files written."""
    base, best = result.baseline, result.best
    if result.best_is_baseline:
        tried = min((t for t in result.trials if t.vepd is not None), key=lambda t: t.vepd, default=None)
        closest = f"; the best trial, {tried.number}, has VEPD {tried.vepd:.5g}" if tried else ""
        first = (f"no trial beat the untuned model (VEPD {base.vepd:.5g}{closest}): best_*.yaml hold "
                 "the untuned parameters; widen --params or raise --budget")
    else:
        factor = base.vepd / best.vepd if best.vepd else float("inf")
        values = ", ".join(f"{k}={v:.5g}" for k, v in best.values.items())
        first = (f"untuned VEPD {base.vepd:.5g} -> best {best.vepd:.5g} (x{factor:.2f} lower) at trial "
                 f"{best.number}: {values}")
    return [first, f"{len(result.trials)} trials, {result.wall_seconds:.1f} s wall ({result.executor}); "
                   f"wrote {out}/best_gps.yaml, best_imu.yaml, best.yaml, trials.csv, convergence.png"]
