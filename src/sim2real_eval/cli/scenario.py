"""``sim2real-eval scenario``: ground truth of one manoeuvre from the kinematic vehicle models, and the
drive as a field rover's logs in the generic CSV layout (``--csv``, ``importer.scenario_csv``).

sim2real-eval scenario circle --k 2 --seed 0 --out circle_k2.npz --plot circle_k2.png
sim2real-eval scenario terrain --csv rover_logs
"""

from __future__ import annotations

import argparse

from .validators import non_negative_int

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): an existing --out or --plot file or --csv folder is "
           "refused unless --overwrite; the files appear together, complete, or neither does (a link is "
           "replaced as a link, never written through).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", metavar="NAME", help="scenario name (line, sine, circle, rest, terrain, ...) or a YAML path"
    )
    parser.add_argument(
        "--k", type=non_negative_int, default=0,
        help="repeat index: selects the run's perturbation (default 0)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="study seed (default 0)")
    parser.add_argument("--out", metavar="FILE.npz", help="ground truth (GroundTruth NPZ arrays)")
    parser.add_argument("--plot", metavar="PNG", help="also draw path, speed, yaw rate and specific force")
    parser.add_argument(
        "--csv", metavar="DIR",
        help="write the drive as a field rover's logs in the generic CSV layout (gnss.csv 20 Hz without "
             "accuracy, imu.csv 200 Hz forward-right-down mounted at yaw -90 deg, truth.csv 2.2 Hz poses; "
             "docs/import.md, 'Synthetic rover logs'), ready for `sim2real-eval import csv`")
    parser.add_argument("--csv-truth-frame", choices=("lla", "enu"), default="lla",
                        help="truth.csv positions as lat, lon, alt (default) or east, north, up at the datum")
    parser.add_argument("--csv-no-velocity", action="store_true",
                        help="truth.csv without v_east, v_north, v_up (poses only, like a SLAM log)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing --out/--plot files")


def run(args) -> int:
    from ..service.sensors import ScenarioRequest, write_scenario

    written = write_scenario(ScenarioRequest(
        name=args.name, k=args.k, seed=args.seed, out=args.out, plot=args.plot, csv=args.csv,
        csv_truth_frame=args.csv_truth_frame, csv_velocity=not args.csv_no_velocity,
        overwrite=args.overwrite))
    if args.csv is not None:
        print(f"{args.csv}: gnss.csv, imu.csv, truth.csv (synthetic rover logs; {args.csv}/README.md)")
    truth = written.truth
    if truth is not None:
        print(f"{args.out}: {len(truth)} samples, t = {truth.t[0]:.3f}..{truth.t[-1]:.3f} s")
    if truth is not None and args.plot:
        print(f"{args.plot}: plot written")
    return 0
