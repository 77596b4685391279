"""``sim2real-eval scenario``: ground truth of one manoeuvre from the kinematic vehicle models, and the
drive as a field rover's logs in the generic CSV layout (``--csv``, ``importer.scenario_csv``).

sim2real-eval scenario circle --k 2 --seed 0 --out circle_k2.npz --plot circle_k2.png
sim2real-eval scenario terrain --csv rover_logs
"""

from __future__ import annotations

import argparse

from . import integer

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): an existing --out or --plot file or --csv folder is "
           "refused unless --overwrite; the files appear together, complete, or neither does (a link is "
           "replaced as a link, never written through).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", metavar="NAME", help="scenario name (line, sine, circle, rest, terrain, ...) or a YAML path"
    )
    parser.add_argument(
        "--k", type=integer, default=0, help="repeat index: selects the run's perturbation (default 0)"
    )
    parser.add_argument("--seed", type=int, default=0, help="study seed (default 0)")
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


def plot_truth(truth, title: str, stream) -> None:
    """Four panels: path, speed, yaw rate, body specific force (PNG into ``stream``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), constrained_layout=True)
    axes[0, 0].plot(truth.position[:, 0], truth.position[:, 1])
    axes[0, 0].set(xlabel="east [m]", ylabel="north [m]", title="path", aspect="equal")
    axes[0, 1].plot(truth.t, np.hypot(truth.velocity[:, 0], truth.velocity[:, 1]))
    axes[0, 1].set(xlabel="t [s]", ylabel="speed [m/s]", title="horizontal speed")
    axes[1, 0].plot(truth.t, truth.angular_velocity[:, 2])
    axes[1, 0].set(xlabel="t [s]", ylabel="yaw rate [rad/s]", title="body yaw rate")
    for i, axis in enumerate("xy"):
        axes[1, 1].plot(truth.t, truth.specific_force[:, i], label=f"f_{axis}")
    axes[1, 1].set(xlabel="t [s]", ylabel="[m/s²]", title="body specific force (f_z = g not shown)")
    axes[1, 1].legend()
    fig.suptitle(title)
    fig.savefig(stream, format="png", dpi=110)
    plt.close(fig)


def run(args) -> int:
    from pathlib import Path

    import numpy as np

    from ..atomic import atomic_files
    from ..errors import UserError
    from ..outputs import check_paths
    from ..scenarios import generate

    if args.k < 0 or args.seed < 0:
        raise UserError("--k and --seed must be >= 0")
    if args.out is None and args.csv is None:
        raise UserError("give --out FILE.npz (the ground truth) and/or --csv DIR (the drive as CSV logs)")
    if args.plot and args.out is None:
        raise UserError("--plot needs --out FILE.npz")
    check_paths({"NAME": args.name if Path(args.name).is_file() else None},
                {"--out": args.out, "--plot": args.plot, "--csv": args.csv}, overwrite=args.overwrite)
    if args.csv is not None:
        from ..importer.scenario_csv import options, write_scenario_csv

        logs = options(truth_frame=args.csv_truth_frame, truth_velocity=not args.csv_no_velocity)
        write_scenario_csv(args.name, args.csv, k=args.k, seed=args.seed, logs=logs, overwrite=args.overwrite)
        print(f"{args.csv}: gnss.csv, imu.csv, truth.csv (synthetic rover logs; {args.csv}/README.md)")
        if args.out is None:
            return 0
    truth = generate(args.name, k=args.k, seed=args.seed)
    finals = [args.out] + ([args.plot] if args.plot else [])
    with atomic_files(finals, overwrite=args.overwrite) as temps:  # both or neither
        for index, temp in enumerate(temps):
            try:
                with open(temp, "wb") as stream:
                    if index == 0:
                        np.savez(stream, **truth.as_dict())
                    else:
                        plot_truth(truth, f"scenario {args.name}, k={args.k}, seed={args.seed}", stream)
            except OSError as exc:
                exc.filename = str(temp)  # the error names the file that failed
                raise
    print(f"{args.out}: {len(truth)} samples, t = {truth.t[0]:.3f}..{truth.t[-1]:.3f} s")
    if args.plot:
        print(f"{args.plot}: plot written")
    return 0
