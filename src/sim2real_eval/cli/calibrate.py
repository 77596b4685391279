"""``sim2real-eval calibrate STANDSTILL_BAG --out params.yaml``: GPS/IMU noise parameters from a bag
recorded while the vehicle stands still (see sim2real_eval.calibrate.core and docs/calibration.md);
``calibrate --truth DRIVE_BAG --out params.yaml``: from a drive with ground truth, sensor minus truth
(GPS bias, Gauss–Markov τ, white noise, stamp lag when observable, jitter; the IMU residual) —
calibrate.drive, calibrate.lag."""
from __future__ import annotations

import argparse

from ..errors import UserError

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
    parser.add_argument("bag", metavar="STANDSTILL_BAG",
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
    parser.add_argument("--seed", type=int, default=0,
                        help="--shortfall: seed of the simulated model streams (default 0)")
    parser.add_argument("--t-b", type=float, default=0.1, dest="t_b",
                        help="Chrono drift correlation time t_b (s) for b0 = K*sqrt(t_b) (default 0.1)")
    parser.add_argument("--max-speed", type=float, default=0.1,
                        help="refuse the bag if it moves faster than this (m/s, default 0.1)")
    parser.add_argument("--min-duration", type=float, default=None,
                        help="shortest IMU record accepted for the Allan analysis (s, default 60; "
                             "30 with --truth)")


def run(args) -> int:
    import numpy as np
    from rich.console import Console

    from ..calibrate.core import calibrate_standstill, output_files, write_calibration
    from ..calibrate.standstill import read_standstill_bag
    from ..outputs import check_paths

    if args.shortfall is not None and not args.truth:
        raise UserError("--shortfall: only with --truth (the models are compared with the sensors on "
                        "the truth)")
    if args.truth:
        if args.surveyed is not None:
            raise UserError("--surveyed: only for a GNSS-only standstill (a bag without an IMU topic)")
        return run_drive(args)
    from ..calibrate import receiver

    if not receiver.bag_has_imu(args.bag, args.imu_topic):  # a receiver log alone: GPS-only calibration
        return receiver.run(args, Console(stderr=True))
    if args.surveyed is not None:
        raise UserError(f"--surveyed: only for a GNSS-only standstill; {args.bag} has an IMU topic")
    if args.truth_source != "auto":
        raise UserError("--truth-source: only with --truth")
    if args.static_tf:
        raise UserError("--static-tf: only with --truth (a standstill's IMU axes do not matter)")
    if args.min_duration is None:
        args.min_duration = 60.0
    if not args.max_speed > 0:
        raise UserError(f"--max-speed must be > 0, got {args.max_speed}")
    files = output_files(args.out, args.plots)  # names and places checked before the work
    plots = [path for name, path in files.items() if name.endswith("_plot")]
    check_paths({"STANDSTILL_BAG": args.bag},
                {"--out": [files["report"], files["gps"], files["imu"]], "--plots": plots},
                overwrite=args.overwrite)
    console = Console(stderr=True)
    with console.status(f"reading {args.bag}"):
        data = read_standstill_bag(args.bag, args.gps_topic, args.imu_topic, args.velocity_topic)
    with console.status("fitting"):
        cal = calibrate_standstill(data, epe=args.epe, t_b=args.t_b, max_speed=args.max_speed,
                                   min_imu_duration=args.min_duration)
        written = write_calibration(cal, args.out, args.plots, overwrite=args.overwrite)
    gps = cal.report["gps"]
    console.print(f"GPS: {gps['fixes']} fixes over {gps['duration_s']:.0f} s; std "
                  + ", ".join(f"{k} {v:.4g} m" for k, v in gps["std_m"].items()))
    if cal.hdop is not None and cal.hdop.decaying:
        console.print(f"HDOP: H0 {cal.hdop.h0:.4g}, H_inf {cal.hdop.h_inf:.4g}, tau {cal.hdop.tau:.4g} s")
    elif cal.hdop is not None:
        console.print(f"HDOP: median {float(np.median(cal.hdop.hdop)):.4g} (no decay visible; "
                      f"covariance written as a constant diagonal)")
    accel, gyro = cal.imu_preset["accelerometer"], cal.imu_preset["gyroscope"]
    console.print(f"IMU: {cal.report['imu']['duration_s']:.0f} s at {cal.imu.rate:.1f} Hz; "
                  f"accel sigma {[round(s, 5) for s in accel['sigma']]}, b0 {accel['b0']:.3g}; "
                  f"gyro sigma {[round(s, 6) for s in gyro['sigma']]}, b0 {gyro['b0']:.3g}")
    for name, path in written.items():
        console.print(f"wrote {name}: {path}")
    return 0


def run_drive(args) -> int:
    """calibrate --truth: sensor minus truth on a drive (calibrate.drive); with --shortfall, a model pair
    against the same sensors (calibrate.shortfall)."""
    from pathlib import Path

    from rich.console import Console

    from ..calibrate import shortfall
    from ..calibrate.drive import (
        DEFAULT_MIN_IMU_DURATION,
        calibrate_drive,
        drive_output_files,
        read_drive,
        write_drive_calibration,
    )
    from ..outputs import check_paths

    files = drive_output_files(args.out, args.plots)
    plots = [path for name, path in files.items() if name.endswith("_plot")]
    gap_files = list(shortfall.shortfall_files(Path(args.out).parent).values()) if args.shortfall else []
    check_paths({"DRIVE_BAG": args.bag}, {"--out": [files["report"], files["gps"], files["imu"]] + gap_files,
                                          "--plots": plots}, overwrite=args.overwrite)
    min_duration = DEFAULT_MIN_IMU_DURATION if args.min_duration is None else args.min_duration
    console = Console(stderr=True)
    with console.status(f"reading {args.bag}"):
        data, truth, datum = read_drive(args.bag, args.gps_topic, args.imu_topic, args.truth_source,
                                        args.static_tf)
    with console.status("fitting"):
        cal = calibrate_drive(data, truth, datum, t_b=args.t_b, min_imu_duration=min_duration)
        gap = None
        if args.shortfall:
            models = [{"gps": cal.gps_preset, "imu": cal.imu_preset}[kind] if spec == "calibrated" else spec
                      for kind, spec in zip(("gps", "imu"), args.shortfall)]
            gap = shortfall.error_statistics([shortfall.segment_of_drive(data, truth, datum, str(args.bag))],
                                             *models, seed=args.seed)
        extra = shortfall.shortfall_writers(gap, Path(args.out).parent) if gap is not None else None
        written = write_drive_calibration(cal, args.out, args.plots, overwrite=args.overwrite, extra=extra)
    gps = cal.report["gps"]
    speed = gps["speed_m_s"]
    console.print(f"GPS: {gps['fixes']} fixes over {gps['duration_s']:.0f} s at {speed['p5']:.2g}-"
                  f"{speed['p95']:.2g} m/s (5-95 %, median {speed['median']:.2g}); jitter std "
                  f"{gps['stamp_jitter_std_s'] * 1e3:.1f} ms; bias "
                  + ", ".join(f"{k} {v:+.3g}" for k, v in gps["bias_m"].items()) + " m; std "
                  + ", ".join(f"{k} {v:.3g}" for k, v in gps["std_m"].items()) + " m")
    console.print(f"GPS {gps['stamp_lag']['summary']}", highlight=False)
    gm = cal.gps_preset["position_noise"]
    if gm["model"] == "gauss_markov":
        console.print(f"GPS model: Gauss-Markov tau {gm['tau']:.3g} s, bias_sigma "
                      f"{[round(v, 4) for v in gm['bias_sigma']]}, white sigma "
                      f"{[round(v, 4) for v in gm['sigma']]}")
    imu = cal.report["imu"]
    console.print("IMU - truth: accel bias " + ", ".join(f"{v:+.3g}" for v in imu["accel_bias_m_s2"].values())
                  + " m/s², std " + ", ".join(f"{v:.3g}" for v in imu["accel_residual_std_m_s2"].values())
                  + "; gyro bias " + ", ".join(f"{v:+.2g}" for v in imu["gyro_bias_rad_s"].values())
                  + " rad/s, std " + ", ".join(f"{v:.2g}" for v in imu["gyro_residual_std_rad_s"].values()))
    for axis, properties in (gap.differing() if gap is not None else {}).items():
        console.print(f"shortfall {axis}: the model differs in "
                      + ", ".join(shortfall.PROPERTY_NAMES[p] for p in properties), highlight=False)
    for name, path in written.items():
        console.print(f"wrote {name}: {path}")
    return 0
