"""``sim2real-eval calibrate STANDSTILL_BAG --out params.yaml``: GPS/IMU noise parameters from a bag
recorded while the vehicle stands still (see sim2real_eval.calibrate.core and docs/calibration.md)."""
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
                        help="rosbag2 directory (or ROS 1 .bag) of a standstill")
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
    parser.add_argument("--t-b", type=float, default=0.1, dest="t_b",
                        help="Chrono drift correlation time t_b (s) for b0 = K*sqrt(t_b) (default 0.1)")
    parser.add_argument("--max-speed", type=float, default=0.1,
                        help="refuse the bag if it moves faster than this (m/s, default 0.1)")
    parser.add_argument("--min-duration", type=float, default=60.0,
                        help="shortest IMU record accepted for the Allan analysis (s, default 60)")


def run(args) -> int:
    import numpy as np
    from rich.console import Console

    from ..calibrate.core import calibrate_standstill, output_files, write_calibration
    from ..calibrate.standstill import read_standstill_bag
    from ..outputs import check_paths

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
