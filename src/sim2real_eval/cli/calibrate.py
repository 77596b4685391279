"""``sim2real-eval calibrate STANDSTILL_BAG --out params.yaml``: GPS/IMU noise parameters from a bag
recorded while the vehicle stands still (see sim2real_eval.calibrate.core and docs/calibration.md);
``calibrate --truth DRIVE_BAG --out params.yaml``: from a drive with ground truth, sensor minus truth
(GPS bias, Gauss–Markov τ, white noise, stamp lag when observable, jitter; the IMU residual) —
calibrate.drive, calibrate.lag."""
from __future__ import annotations

import argparse

from .validators import existing_path, non_negative_int, positive_float

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): an existing output file is refused unless --overwrite; "
           "all files (presets, report, plots) appear together, complete, or none does (a link is replaced "
           "as a link, never written through); an output may not lie inside the bag.")


def _epe(text: str):
    if text == "status":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected metres or 'status', got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bag", metavar="STANDSTILL_BAG", type=existing_path,
                        help="rosbag2 directory (or ROS 1 .bag) of a standstill; with --truth, of a drive "
                             "with ground truth (e.g. a run written by sim2real-eval import)")
    parser.add_argument("--truth", action="store_true",
                        help="the bag is a drive with ground truth, at any speed: fit sensor minus truth "
                             "(GPS bias, Gauss-Markov and white noise; IMU bias and noise) instead of a "
                             "standstill.  The GPS stamp lag is estimated when the drive makes it "
                             "observable (its standard error < fix period/4: speed and heading must "
                             "change); otherwise it is reported as not observable with the bound the "
                             "data allows (2 standard errors) and set to 0")
    parser.add_argument("--truth-source", default="auto",
                        choices=("auto", "odometry", "sbg_ekf", "sbg_gps", "twist"),
                        help="--truth: where the bag's ground truth comes from (default auto)")
    parser.add_argument("--static-tf", action="append", default=[],
                        metavar="'base_link FRAME x y z yaw pitch roll'",
                        help="--truth: mounting of an IMU whose frame is not base_link (repeatable)")
    parser.add_argument("--out", required=True, metavar="PARAMS.yaml",
                        help="report + inline presets; the presets also go to "
                             "PARAMS_gps.yaml / PARAMS_imu.yaml")
    parser.add_argument("--gps-topic", default="/fix", help="sensor_msgs/NavSatFix topic (default /fix)")
    parser.add_argument("--imu-topic", default="/imu", help="sensor_msgs/Imu topic (default /imu)")
    parser.add_argument("--velocity-topic", default=None,
                        help="INS velocity for the motion check (default: an sbg_driver SbgGpsVel/SbgEkfNav "
                             "topic if the bag has one)")
    parser.add_argument("--plots", metavar="DIR", default=None,
                        help="write the Allan/GPS/HDOP fit plots here")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace existing output files (all of them together, when complete)")
    parser.add_argument("--epe", type=_epe, default=0.02,
                        help="estimated position error (m) of the nmea_navsat_driver formula "
                             "var_h = (hdop*epe)^2 used to recover HDOP (default 0.02 = RTK fixed); "
                             "'status' = the driver's table by fix status")
    parser.add_argument("--surveyed", type=float, nargs=3, default=None, metavar=("LAT", "LON", "ALT"),
                        help="GNSS-only standstill (a bag without IMU, e.g. import nmea): the antenna's "
                             "surveyed position (deg, deg, ellipsoidal m) as truth; default: the mean fix "
                             "(a constant bias is then not measurable)")
    parser.add_argument("--shortfall", nargs=2, metavar=("GPS", "IMU"), default=None,
                        help="--truth: also compare this GPS + IMU model pair (preset names or YAML files; "
                             "'calibrated' for the presets fitted here) with the bag's real sensors on its "
                             "truth: fix - truth PSD and autocorrelation, IMU - truth Allan deviation, per "
                             "axis, side by side; writes shortfall.png/.md/.json next to --out "
                             "(docs/calibration.md, 'Why a model falls short')")
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="--shortfall: seed of the simulated model streams (default 0)")
    parser.add_argument("--t-b", type=float, default=0.1, dest="t_b",
                        help="Chrono drift correlation time t_b (s) for b0 = K*sqrt(t_b) (default 0.1)")
    parser.add_argument("--max-speed", type=positive_float, default=0.1,
                        help="refuse the bag if it moves faster than this (m/s, default 0.1)")
    parser.add_argument("--min-duration", type=float, default=None,
                        help="shortest IMU record accepted for the Allan analysis (s, default 60; "
                             "30 with --truth)")


def run(args) -> int:
    from rich.console import Console

    from ..service.data import CalibrateRequest, calibrate

    done = calibrate(CalibrateRequest(
        bag=args.bag, out=args.out, truth=args.truth, truth_source=args.truth_source,
        static_tfs=args.static_tf, gps_topic=args.gps_topic, imu_topic=args.imu_topic,
        velocity_topic=args.velocity_topic, plots=args.plots, overwrite=args.overwrite, epe=args.epe,
        surveyed=args.surveyed, t_b=args.t_b, max_speed=args.max_speed, min_duration=args.min_duration,
        shortfall=args.shortfall, seed=args.seed))
    console = Console(stderr=True)
    for line in done.lines:
        console.print(line, highlight=False)
    for name, path in done.written.items():
        console.print(f"wrote {name}: {path}")
    return 0
