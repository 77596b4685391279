"""Rates and latencies the judge sees in ``evaluate.launch.py``, per mode, on a real ROS 2 (Humble).

For each mode the launch is run on BAG while a probe node subscribes to /clock, /fix, /imu,
/odometry/filtered and /odometry/gps.  The probe follows the player's sim clock between /clock
messages (``node.clock.ClockFollower``, so arrival times are not rounded to the 25 ms /clock period)
and prints, per topic: messages, rate (Hz of sim time over the topic's own span) and the latency
"arrival − header stamp" (ms of sim time: median, 95th percentile, max).  The recorded run is scored
with the project's scorer (E, S_est, S_gt).  Needs rclpy and a built workspace; run from a shell with
the workspace sourced:

    python3 benchmarks/bench_ros_timing.py BAG [--modes real sim_imu sim_gps sim_both] [--play-rate 1.0]
        [--out DIR] [--json results.json] [--launch-arg NAME:=VALUE ...]

It also drives older checkouts whose evaluate.launch.py takes ``bag``, ``mode``, ``play_rate`` and
``output`` (e.g. 37f60d8, with ``--launch-arg truth_source:=gps`` for an SbgGpsPos/Vel bag).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

TOPICS = ("/fix", "/imu", "/odometry/filtered", "/odometry/gps")


def probe(stop: threading.Event, ready: threading.Event, results: dict, play_rate: float) -> None:
    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Imu, NavSatFix

    rclpy.init(args=[])
    node = Node("timing_probe")
    arrivals = {topic: [] for topic in TOPICS}
    best_effort = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)

    def recorder(topic):
        def callback(msg):
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            arrivals[topic].append((stamp, time.monotonic_ns()))
        return callback

    clocks = []

    def keep_clock(msg):
        clocks.append((msg.clock.sec * 1_000_000_000 + msg.clock.nanosec, time.monotonic_ns()))

    node.create_subscription(Clock, "/clock", keep_clock, best_effort)
    for topic, kind in zip(TOPICS, (NavSatFix, Imu, Odometry, Odometry)):
        node.create_subscription(kind, topic, recorder(topic), best_effort)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    ready.set()
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)
    # Arrival → sim time with the line through the /clock messages of the playing segment.
    results.update(summarise(arrivals, clocks, play_rate))
    node.destroy_node()
    rclpy.try_shutdown()


def clock_follower():
    """This checkout's node.clock.ClockFollower (stdlib only), whichever sim2real_eval is installed:
    the bench also measures older checkouts."""
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "src" / "sim2real_eval" / "node" / "clock.py"
    spec = importlib.util.spec_from_file_location("bench_clock", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ClockFollower


def summarise(arrivals: dict, clocks: list, play_rate: float) -> dict:
    ClockFollower = clock_follower()  # noqa: N806
    out = {}
    clocks = sorted(clocks, key=lambda c: c[1])
    for topic, items in arrivals.items():
        if len(items) < 2:
            out[topic] = {"n": len(items)}
            continue
        stamps = np.array([s for s, _ in items], dtype=np.int64)
        latencies = []
        follower, k = ClockFollower(play_rate, window=400, horizon_s=10.0), 0
        for stamp, arrival in items:
            while k < len(clocks) and clocks[k][1] <= arrival:  # the /clock messages seen so far
                follower.update(*clocks[k])
                k += 1
            now = follower.now(arrival)
            if now is not None:
                latencies.append((now - stamp) / 1e6)
        span = (stamps.max() - stamps.min()) / 1e9
        lat = np.array(latencies)
        gaps = np.diff(np.array([a for _, a in items])) / 1e6 * play_rate
        out[topic] = {"n": len(items), "rate_hz": round((len(items) - 1) / span, 2) if span > 0 else None,
                      "latency_ms_median": round(float(np.median(lat)), 2) if lat.size else None,
                      "latency_ms_p95": round(float(np.percentile(lat, 95)), 2) if lat.size else None,
                      "latency_ms_max": round(float(lat.max()), 2) if lat.size else None,
                      "arrival_gap_ms_p95": round(float(np.percentile(gaps, 95)), 2),
                      "latencies_ms": [round(v, 3) for v in latencies]}
    return out


def score(run_dir: Path) -> dict:
    from sim2real_eval.metrics.inputs import RunSpec, load_and_score
    from sim2real_eval.metrics.options import ScoreOptions

    record, series = load_and_score(RunSpec("real", "ros", "run", 0, str(run_dir), "bag"), ScoreOptions())
    if record is None:
        return {"error": series}
    s = record.score
    return {"E": round(s.rmse, 4), "S_est": round(s.S_est, 4), "S_gt": round(s.S_gt, 4)}


def run_mode(bag: str, mode: str, play_rate: float, out: Path, extra: list) -> dict:
    output = out / f"{mode}_{play_rate:g}"
    args = [f"bag:={bag}", f"mode:={mode}", f"play_rate:={play_rate!r}", f"output:={output}", *extra]
    stop, ready, results = threading.Event(), threading.Event(), {}
    thread = threading.Thread(target=probe, args=(stop, ready, results, play_rate))
    thread.start()
    ready.wait(30)
    started = time.monotonic()
    launch = subprocess.run(["ros2", "launch", "sim2real_eval", "evaluate.launch.py", *args],
                            capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - started
    time.sleep(1.0)
    stop.set()
    thread.join(30)
    row = {"mode": mode, "play_rate": play_rate, "exit": launch.returncode, "wall_s": round(wall, 1),
           "topics": results}
    if launch.returncode != 0:
        row["log_tail"] = launch.stdout[-3000:] + launch.stderr[-3000:]
    if output.is_dir():
        try:
            row["score"] = score(output)
        except Exception as exc:  # noqa: BLE001 — reported in the table, the bench goes on
            row["score"] = {"error": str(exc)}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bag")
    parser.add_argument("--modes", nargs="+", default=["real", "sim_imu", "sim_gps", "sim_both"])
    parser.add_argument("--play-rate", type=float, nargs="+", default=[1.0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--launch-arg", action="append", default=[], metavar="NAME:=VALUE",
                        help="more evaluate.launch.py arguments (repeatable)")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_ros_timing_"))
    rows = []
    for play_rate in args.play_rate:
        for mode in args.modes:
            row = run_mode(str(Path(args.bag).resolve()), mode, play_rate, out, args.launch_arg)
            rows.append(row)
            t = row["topics"]
            cells = []
            for topic in TOPICS:
                d = t.get(topic, {})
                cells.append(f"{topic} {d.get('rate_hz')} Hz lat {d.get('latency_ms_median')}/"
                             f"{d.get('latency_ms_p95')}/{d.get('latency_ms_max')} ms")
            print(f"{mode} x{play_rate:g} exit {row['exit']} {row['wall_s']} s | " + " | ".join(cells)
                  + f" | {row.get('score')}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
