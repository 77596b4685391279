"""Streaming cost of the noise nodes' core (sensor_stream.SensorStream + model.step), no ROS.

The nodes must keep up with their sensor rate on the robot (Jetson AGX Xavier): prints the
sustained tick rate for the IMU (100 Hz needed) and GPS (10 Hz needed) and the headroom factor.

    python benchmarks/bench_node_streams.py
"""
from __future__ import annotations

import time

import numpy as np

from sim2real_eval import rotations
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.node import sensor_stream


def truth_messages(seconds: float, rate: float = 50.0):
    stamps = (10e9 + np.arange(0, seconds, 1.0 / rate) * 1e9).astype(np.int64)
    t = stamps / 1e9
    yaw = 0.2 * t
    q = rotations.from_yaw(yaw)
    v = np.stack([3 * np.cos(yaw), 3 * np.sin(yaw), 0 * t], axis=1)
    p = np.cumsum(v, axis=0) / rate
    w = np.tile([0.0, 0.0, 0.2], (len(t), 1))
    return stamps, p, q, v, w


def ticks_per_second(sensor: str, spec: str, rate: float, seconds: float = 20.0) -> float:
    loader = load_gps_model if sensor == "gps" else load_imu_model
    stream = sensor_stream.SensorStream(loader(spec, sensor_seed(0, sensor), rate=rate), rate)
    stamps, p, q, v, w = truth_messages(seconds)
    produced = 0
    start = time.perf_counter()
    for i, stamp in enumerate(stamps):
        ready, _ = stream.push_truth(int(stamp), p[i], q[i], v[i], w[i])
        produced += sum(len(s) for s in ready)
    produced += sum(len(s) for s in stream.finish())
    return produced / (time.perf_counter() - start)


if __name__ == "__main__":
    imu = ticks_per_second("imu", "chrono_paper_demo", 100.0)
    gps = ticks_per_second("gps", "ch_rw_airsim", 10.0)
    print(f"imu_node_stream_ticks_per_s: {imu:.0f}")
    print(f"imu_realtime_headroom_at_100hz: {imu / 100.0:.1f}")
    print(f"gps_node_stream_ticks_per_s: {gps:.0f}")
    print(f"gps_realtime_headroom_at_10hz: {gps / 10.0:.1f}")
