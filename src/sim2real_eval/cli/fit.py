"""``sim2real-eval fit DRIVE --out DIR``: a GPS model and an IMU model fitted together to a real drive's
windows by blocked cross-validation (``studies.fit``; docs/calibration.md, "Fitting a GPS + IMU pair")."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from .validators import integer

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): --out must be new, empty or an earlier fit output (its "
           "marker .sim2real-eval.json and nothing but its files with the SHA-256 it records; replaced "
           "when the fit is done); any other folder is refused unless --overwrite, which replaces it "
           "atomically; --storage must be a new file or an Optuna SQLite storage, outside DRIVE and --out.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..studies.fit_params import DEFAULT_BUDGET, DEFAULT_FOLDS, DEFAULT_SEEDS

    parser.add_argument("drive", metavar="DRIVE",
                        help="the drive's windows: an import folder (`sim2real-eval import --window`: "
                             "DIR/<scenario>/run_<kk>/) or a folder of real bags of one scenario, in order")
    parser.add_argument("--out", required=True,
                        help="output folder: fit_gps.yaml, fit_imu.yaml (presets), fit.yaml, trials.csv, "
                             "shortfall.md/.json/.png")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out that is not a fit output, once the fit is done")
    parser.add_argument("--config", default="demo_car.yaml",
                        help="demo file giving the judge and the presets compared (default demo_car.yaml; "
                             "demo.yaml for ART-layout bags)")
    parser.add_argument("--runs", default=None, metavar="A:B",
                        help="only runs A … B-1 of DRIVE (e.g. 0:5, the real sample's held-out windows)")
    parser.add_argument("--folds", type=integer, default=DEFAULT_FOLDS,
                        help=f"blocked folds (contiguous blocks of runs, >= 2 runs each; "
                             f"default {DEFAULT_FOLDS})")
    parser.add_argument("--budget", type=integer, default=DEFAULT_BUDGET,
                        help=f"trials per fold (default {DEFAULT_BUDGET})")
    parser.add_argument("--seeds", type=integer, default=DEFAULT_SEEDS,
                        help=f"noise draws averaged per trial (default {DEFAULT_SEEDS})")
    parser.add_argument("--seed", type=integer, default=0, help="sampler seed (default 0)")
    parser.add_argument("--storage", default=None, metavar="FILE.db",
                        help="SQLite file for a resumable search (one Optuna study per fold)")
    parser.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="run trials as Ray tasks: a cluster address, 'auto' or 'local'")
    parser.add_argument("--workers", type=integer, default=1,
                        help="trials run at once: local processes, or CPUs of a --ray local cluster "
                             "(default 1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    try:  # the search itself: the [all] extra (checked before any work)
        import optuna  # noqa: F401
    except ImportError:
        raise UserError("fit needs optuna: pip install 'sim2real_eval[all]' (or: pip install optuna)"
                        ) from None

    from ..outputs import OwnNames, check_paths, output_folder
    from ..resources import find_config
    from ..studies.config import load_demo_config
    from ..studies.fit import check_inputs, drive_runs, fit, setup_from_demo
    from ..studies.fit_outputs import COMMAND, OUTPUT_FILES, summary_lines, write_outputs

    out = Path(args.out)
    config_path = find_config(args.config, "studies", option="--config")
    check_paths({"DRIVE": args.drive, "--config": config_path}, {"--out": out, "--storage": args.storage})
    output_folder(out, "--out", args.overwrite, command=COMMAND,
                  own=OwnNames(COMMAND, OUTPUT_FILES, whole=True))
    check_inputs(args.budget, args.seeds, args.seed, args.workers, args.storage)
    bags = drive_runs(args.drive, args.runs)
    setup = setup_from_demo(load_demo_config(config_path))
    result = fit(bags, setup, folds=args.folds, budget=args.budget, seeds=args.seeds, seed=args.seed,
                 storage=args.storage, ray_address=args.ray, workers=args.workers,
                 progress=not args.no_progress, drive=str(Path(args.drive)))
    write_outputs(result, out, overwrite=True)
    print("\n".join(summary_lines(result)))
    print(f"wrote {out}/fit_gps.yaml, fit_imu.yaml (presets: gps_model:=, imu_model:= of sensors.launch.py), "
          "fit.yaml, trials.csv, shortfall.md/.json/.png")
    return 0
