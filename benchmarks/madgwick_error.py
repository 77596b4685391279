"""The Madgwick orientation's roll and pitch error on the terrain scenario (docs/models.md, "Orientation
from a raw IMU"): the numbers written there come from this script.

    python benchmarks/madgwick_error.py [--repeats 3] [--gains 0.1 0.05 0.02 0.01]

For repeats k of ``terrain`` (seed 0), the IMU exactly as ``scenario terrain --csv`` logs it (200 Hz,
reference_mems noise and biases, mounted at yaw −90°, forward-right-down), turned back to the IMU's FLU
axes and filtered with ``models.madgwick.madgwick_orientation``; the IMU attitude is turned into
base_link with the known mounting and its roll and pitch compared with the truth's (RMS and max over
the drive, the first 5 s left out: convergence).  Also the filter's CPU time per drive.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gains", type=float, nargs="+", default=[0.1, 0.05, 0.02, 0.01])
    args = parser.parse_args()
    print("| gain | repeat | roll RMS [deg] | pitch RMS [deg] | roll max | pitch max | CPU [s] (samples) |")
    print("|---|---|---|---|---|---|---|")
    for gain in args.gains:
        for k in range(args.repeats):
            rms, worst, cpu, n = errors(k, gain)
            print(f"| {gain:g} | {k} | {rms[0]:.2f} | {rms[1]:.2f} | {worst[0]:.2f} | {worst[1]:.2f} | "
                  f"{cpu:.2f} ({n}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
