"""``sim2real-eval sensors``: simulate GPS and IMU from a scenario and write the series for inspection.

    sim2real-eval sensors --scenario circle --gps ch_rw --imu chrono_paper_demo --seed 3 --out DIR --plot

DIR gets truth/gps/imu as NPZ and/or CSV, ``sensors.yaml`` (effective model parameters and seeds) and,
with --plot, ``sensors.png`` (truth vs measured position, acceleration and yaw rate).  Streams:
``sensor_seed(seed, scenario, k, "gps")`` and ``(…, "imu")``, as the pipeline derives them.
"""

from __future__ import annotations

import argparse

from . import REPLACED
from .validators import finite_float, non_negative_int

OUTPUTS = REPLACED.format(what="--out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scenario", metavar="NAME", help="scenario name (line, sine, circle, rest) or YAML path"
    )
    source.add_argument(
        "--truth", metavar="FILE.npz", help="ground truth written by `sim2real-eval scenario`"
    )
    parser.add_argument("--k", type=non_negative_int, default=0, help="repeat index (default 0)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="study seed (default 0)")
    parser.add_argument(
        "--gps", default="ch_gauss", metavar="PRESET", help="GPS preset or YAML (default ch_gauss)"
    )
    parser.add_argument(
        "--imu",
        default="chrono_paper_demo",
        metavar="PRESET",
        help="IMU preset or YAML (default chrono_paper_demo)",
    )
    parser.add_argument(
        "--datum",
        nargs=3,
        type=float,
        metavar=("LAT", "LON", "ALT"),
        help="GPS datum (default: the preset's, the paper's 43.070 -89.400 260)",
    )
    parser.add_argument(
        "--mounting-rpy",
        nargs=3,
        type=finite_float,
        metavar=("ROLL", "PITCH", "YAW"),
        help="IMU frame in base_link, rad (default: the preset's, identity)",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder, new or empty (written "
                                                                    "atomically)")
    parser.add_argument("--format", choices=("npz", "csv", "both"), default="both", help="series format")
    parser.add_argument("--plot", action="store_true", help="also write sensors.png")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out folder, once the new one is complete")


def run(args) -> int:
    from ..service.sensors import SensorsRequest, simulate_sensors

    series = simulate_sensors(SensorsRequest(
        out=args.out, scenario=args.scenario, truth=args.truth, k=args.k, seed=args.seed, gps=args.gps,
        imu=args.imu, datum=args.datum, mounting_rpy=args.mounting_rpy, format=args.format, plot=args.plot,
        overwrite=args.overwrite))
    print(f"{args.out}: {len(series.truth)} truth samples, {len(series.fixes)} GPS fixes, "
          f"{len(series.imu_samples)} IMU samples")
    return 0
