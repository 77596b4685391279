"""The Madgwick orientation's roll and pitch error on the terrain scenario (docs/models.md, "Orientation
from a raw IMU"): the numbers written there come from this script.

    python benchmarks/madgwick_error.py [--repeats 3] [--gains 0.1 0.05 0.02 0.01]
    python benchmarks/madgwick_error.py --judge        # also: what the orientation does for the car judge

For repeats k of ``terrain`` (seed 0), the IMU exactly as ``scenario terrain --csv`` logs it (200 Hz,
reference_mems noise and biases, mounted at yaw −90°, forward-right-down), turned back to the IMU's FLU
axes and filtered with ``models.madgwick.madgwick_orientation``; the IMU attitude is turned into
base_link with the known mounting and its roll and pitch compared with the truth's (RMS and max over
the drive, the first 5 s left out: convergence).  Also the filter's CPU time per drive.

``--judge``: repeat 0 written with ``scenario terrain --csv``, imported as docs/import.md says (30-s
windows) without and with ``--imu-orientation madgwick``, every window replayed with the car template
(config/ekf_car.yaml: two_d_mode, accelerations fused, gravity removed along the IMU's orientation);
the real side's judged horizontal speed against the truth's, RMSE per window (first second left out).
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def errors(k: int, gain: float):
    from sim2real_eval import rotations, scenarios
    from sim2real_eval.importer.scenario_csv import RoverLogs, imu_rows
    from sim2real_eval.models import sensor_seed
    from sim2real_eval.models.madgwick import madgwick_orientation

    logs = RoverLogs()
    truth = scenarios.generate("terrain", k=k, seed=0)
    rows = imu_rows(truth, logs, lambda stream: sensor_seed(0, "scenario_csv", "terrain", k, stream))
    flip = np.array([1.0, -1.0, -1.0])  # FRD → the IMU's FLU
    t, accel, gyro = rows[:, 0], rows[:, 1:4] * flip, rows[:, 4:7] * flip
    started = time.process_time()
    q_imu = madgwick_orientation(t, accel, gyro, gain=gain)
    cpu = time.process_time() - started
    q_body = rotations.multiply(q_imu, rotations.conjugate(rotations.from_rpy(*logs.imu_mounting_rpy)))
    true_rp = rotations.to_rpy(truth.interpolate(t).orientation)[:, :2]
    error = np.degrees(rotations.to_rpy(q_body)[:, :2] - true_rp)
    error = error[t >= t[0] + 5.0]
    return np.sqrt(np.mean(error ** 2, axis=0)), np.abs(error).max(axis=0), cpu, len(t)


def judged_speed_rmse(run) -> float:
    from sim2real_eval import message_fields as F
    from sim2real_eval.bags import open_bag
    from sim2real_eval.bags.columns import read_topics

    with open_bag(run) as reader:
        columns = read_topics(reader, {"/odometry/filtered": F.ODOMETRY, "/ground_truth/odom": F.ODOMETRY})
    estimate, truth = columns["/odometry/filtered"], columns["/ground_truth/odom"]
    judged = np.hypot(estimate["linear_velocity"][:, 0], estimate["linear_velocity"][:, 1])
    true_speed = np.linalg.norm(truth["linear_velocity"], axis=1)
    true = np.interp(estimate["stamp_ns"], truth["stamp_ns"], true_speed)
    keep = estimate["stamp_ns"] > estimate["stamp_ns"][0] + 1e9
    return float(np.sqrt(np.mean((judged - true)[keep] ** 2)))


def judge_table() -> None:
    import tempfile
    from pathlib import Path

    from sim2real_eval.cli import main as cli
    from sim2real_eval.resources import config_path

    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder) / "rover"
        assert cli(["scenario", "terrain", "--csv", str(logs)]) == 0
        rows = {}
        for option in ("none", "madgwick"):
            imported = Path(folder) / f"import_{option}"
            runs = Path(folder) / f"runs_{option}"
            assert cli(["import", "csv", str(logs), "--out", str(imported), "--imu-axes", "frd",
                        "--estimate-mounting", "--fix-covariance", "0.7", "--window", "30",
                        "--imu-orientation", option]) == 0
            assert cli(["replay", str(imported / "rover"), "--replace", "gps=car_gauss", "--out", str(runs),
                        "--config", str(config_path("ekf_car.yaml")), "--navsat",
                        str(config_path("navsat_car.yaml")), "--static-tf", "base_link imu 0 0 0 0 0 0",
                        "--static-tf", "base_link gps 0 0 0 0 0 0", "--initial-state", "truth", "--warmup",
                        "1", "--no-progress"]) == 0
            found = sorted((runs / "real" / "real" / "rover").iterdir(), key=lambda p: int(p.name))
            rows[option] = [judged_speed_rmse(run) for run in found]
    print("\n| /imu orientation | real-side speed RMSE per 30-s window [m/s] | mean |")
    print("|---|---|---|")
    for option, values in rows.items():
        print(f"| {option} | {', '.join(f'{v:.2f}' for v in values)} | {np.mean(values):.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gains", type=float, nargs="+", default=[0.1, 0.05, 0.02, 0.01])
    parser.add_argument("--judge", action="store_true", help="also the car judge's speed error (minutes)")
    args = parser.parse_args()
    print("| gain | repeat | roll RMS [deg] | pitch RMS [deg] | roll max | pitch max | CPU [s] (samples) |")
    print("|---|---|---|---|---|---|---|")
    for gain in args.gains:
        for k in range(args.repeats):
            rms, worst, cpu, n = errors(k, gain)
            print(f"| {gain:g} | {k} | {rms[0]:.2f} | {rms[1]:.2f} | {worst[0]:.2f} | {worst[1]:.2f} | "
                  f"{cpu:.2f} ({n}) |")
    if args.judge:
        judge_table()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
