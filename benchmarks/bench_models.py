"""Throughput of the sensor models (batch), printed as ``name: value`` lines.

    python benchmarks/bench_models.py [--samples N] [--repeats R]

Figures are samples per second of CPU time (``time.process_time``, best of R), one process, one core
(set OMP/OPENBLAS threads to 1 for a fair single-core figure).  Target: ≥ 5 M IMU samples/s for the
model itself.  ``*_end_to_end`` figures include ``GroundTruth.interpolate`` (linear + slerp) onto the
ticks, which ``sample`` always does; ``imu_samples_per_s`` is the model on truth already at the ticks
(``measure``), the part this package's models own.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from sim2real_eval import rotations  # noqa: E402
from sim2real_eval.models import load_gps_model, load_imu_model  # noqa: E402
from sim2real_eval.truth import GRAVITY, GroundTruth  # noqa: E402


def circle_truth(n: int, rate: float) -> GroundTruth:
    t = 10.0 + np.arange(n) / rate
    yaw = 0.4 * t
    pos = np.stack([2.5 * np.sin(yaw), 2.5 * (1 - np.cos(yaw)), np.zeros(n)], axis=-1)
    vel = np.stack([np.cos(yaw), np.sin(yaw), np.zeros(n)], axis=-1)
    force = np.tile([0.0, 0.4, GRAVITY], (n, 1))
    rates = np.tile([0.0, 0.0, 0.4], (n, 1))
    return GroundTruth(t, pos, rotations.from_yaw(yaw), vel, rates, force)


def best_rate(make, run, count: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        model = make()
        start = time.process_time()
        run(model)
        best = min(best, time.process_time() - start)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="IMU samples (default 1e6)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    n = args.samples
    truth = circle_truth(n, 100.0)
    stamps = np.round(truth.t * 1e9).astype(np.int64)
    imu_presets = (("chrono_paper_demo", "imu"), ("airsim_imu", "imu_airsim"), ("mavs_mems", "imu_mavs"))
    for preset, label in imu_presets:
        rate = best_rate(lambda p=preset: load_imu_model(p, 0), lambda m: m.measure(stamps, truth), n,
                         args.repeats)
        print(f"{label}_samples_per_s: {rate:.0f}")
    art = [0.0, -1.5708, 3.1416]
    rate = best_rate(lambda: load_imu_model("chrono_paper_demo", 0, mounting_rpy=art),
                     lambda m: m.measure(stamps, truth), n, args.repeats)
    print(f"imu_art_mounting_samples_per_s: {rate:.0f}")
    rate = best_rate(lambda: load_imu_model("chrono_paper_demo", 0), lambda m: m.sample(truth),
                     n, max(1, args.repeats - 2))
    print(f"imu_samples_per_s_end_to_end: {rate:.0f}")

    m = max(n // 10, 1000)  # 10 Hz fixes over the same span
    gps_truth = circle_truth(m, 10.0)
    gps_stamps = np.round(gps_truth.t * 1e9).astype(np.int64)
    for preset, label in (("ch_gauss", "gps"), ("ch_rw", "gps_ch_rw"), ("airsim", "gps_airsim")):
        count = m if preset != "ch_rw" else m // 10  # the walk integrates 10 sub-steps per fix in Python
        rate = best_rate(lambda p=preset: load_gps_model(p, 0),
                         lambda model, c=count: model.measure(gps_stamps[:c], gps_truth.slice(0, c)), count,
                         args.repeats)
        print(f"{label}_samples_per_s: {rate:.0f}")


if __name__ == "__main__":
    main()
