"""Scorer throughput on pipeline-like run bags (goal: 180 runs from bags in <= 2 s on 2 cores).

Builds a study like the paper's: real + 5 sim variants x 3 scenarios x 10 runs = 180 run directories
(``OUT/<side>/<variant>/<scenario>/<k>/``, sqlite3 bags with run.yaml), each 31 s long with
/odometry/filtered at 35 Hz, /ground_truth/odom at 50 Hz, /imu at 100 Hz and /fix at 10 Hz.

Prints ``name: value`` lines:
  runs                    number of run bags scored
  messages_per_run        messages in one bag (all topics)
  read_score_s            wall time to discover, read (two topics, streaming) and score every run
  pairs_per_s             runs / read_score_s  (goal: >= 90, i.e. 180 runs in <= 2 s)
  cpu_ms_per_run          CPU time of one run read + scored in this process (robust to a busy machine;
                          the 2 s goal needs <= ~20 ms with 2 cores)
  study_s                 Tables I/II + bootstrap (1000) + permutations (1000) for all variants
  report_s                writing vepd.json, tables, figures and report.html (figures in this process)
  report_parallel_s       the same with the figures drawn by --workers processes

Usage: python benchmarks/bench_score.py [--workers 2] [--runs 10] [--keep DIR]
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from sim2real_eval.bags import get_typestore, write_bag
from sim2real_eval.metrics import ScoreOptions, score_study
from sim2real_eval.metrics.inputs import discover_runs_dir, load_and_score, load_and_score_all
from sim2real_eval.report import write_report

VARIANTS = {"real": 0.04, "ch_gauss": 0.10, "ch_rw": 0.05, "airsim": 0.04, "ch_gauss_airsim": 0.08,
            "ch_rw_airsim": 0.05}
SCENARIOS = ("line", "circle", "sine")
DURATION_S = 31.0
T0_NS = 1_700_000_000_000_000_000


def _odometry_bytes(store, stamp_ns, velocity, frame, child):
    t = store.types
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    msg = t["nav_msgs/msg/Odometry"](
        t["std_msgs/msg/Header"](t["builtin_interfaces/msg/Time"](sec, nsec), frame), child,
        t["geometry_msgs/msg/PoseWithCovariance"](
            t["geometry_msgs/msg/Pose"](t["geometry_msgs/msg/Point"](0.0, 0.0, 0.0),
                                        t["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0)), np.zeros(36)),
        t["geometry_msgs/msg/TwistWithCovariance"](
            t["geometry_msgs/msg/Twist"](t["geometry_msgs/msg/Vector3"](*velocity),
                                         t["geometry_msgs/msg/Vector3"](0.0, 0.0, 0.0)), np.zeros(36)))
    return store.serialize_cdr(msg, "nav_msgs/msg/Odometry")


def _filler(store, msgtype):
    from sim2real_eval.bags.messages import default_message
    return store.serialize_cdr(default_message(msgtype, store), msgtype)


def build_study(root: Path, runs: int, seed: int = 0) -> int:
    store = get_typestore()
    imu, fix = _filler(store, "sensor_msgs/msg/Imu"), _filler(store, "sensor_msgs/msg/NavSatFix")
    rng = np.random.default_rng(seed)
    per_run = 0
    for variant, noise in VARIANTS.items():
        side = "real" if variant == "real" else "sim"
        for scenario in SCENARIOS:
            for k in range(1, runs + 1):
                gt_ns = T0_NS + np.arange(int(DURATION_S * 50)) * 20_000_000
                t = (gt_ns - T0_NS) * 1e-9
                speed = np.clip(t - 2.0, 0.0, 1.0) * (1.0 + 0.1 * math.sin(k))
                est_ns = T0_NS + np.arange(int(DURATION_S * 35)) * 28_571_429
                est = np.interp((est_ns - T0_NS) * 1e-9, t, speed) + noise * rng.standard_normal(len(est_ns))
                items = [(int(s), "/ground_truth/odom", "nav_msgs/msg/Odometry",
                          _odometry_bytes(store, s, (v, 0.0, 0.0), "odom", "base_link"))
                         for s, v in zip(gt_ns, speed)]
                items += [(int(s) + 2_000_000, "/odometry/filtered", "nav_msgs/msg/Odometry",
                           _odometry_bytes(store, s, (v, 0.01, 0.0), "odom", "base_link"))
                          for s, v in zip(est_ns, est)]
                items += [(T0_NS + i * 10_000_000, "/imu", "sensor_msgs/msg/Imu", imu)
                          for i in range(int(DURATION_S * 100))]
                items += [(T0_NS + i * 100_000_000, "/fix", "sensor_msgs/msg/NavSatFix", fix)
                          for i in range(int(DURATION_S * 10))]
                items.sort(key=lambda item: item[0])
                per_run = len(items)
                info = {"side": side, "variant": variant, "scenario": scenario, "k": k, "seed": seed,
                        "topics": {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom",
                                   "gps": "/fix", "imu": "/imu"}}
                write_bag(root / side / variant / scenario / str(k), items,
                          extra_files={"run.yaml": yaml.safe_dump(info)})
    return per_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10, help="runs per (variant, scenario)")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the study here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = args.keep or Path(temp) / "OUT"
        per_run = None
        if not (root / "real").is_dir():
            per_run = build_study(root, args.runs)
        options = ScoreOptions()
        start = time.perf_counter()
        specs = discover_runs_dir(root, options)
        records, series, skipped = load_and_score_all(specs, options, workers=args.workers)
        read_s = time.perf_counter() - start
        sample = specs[: min(20, len(specs))]
        cpu_start = time.process_time()
        for spec in sample:
            load_and_score(spec, options)
        cpu_ms = 1000 * (time.process_time() - cpu_start) / len(sample)
        start = time.perf_counter()
        result = score_study(records, options, skipped)
        study_s = time.perf_counter() - start
        start = time.perf_counter()
        write_report(Path(temp) / "report", result, series, str(root))
        report_s = time.perf_counter() - start
        start = time.perf_counter()
        write_report(Path(temp) / "report_parallel", result, series, str(root), workers=args.workers)
        report_parallel_s = time.perf_counter() - start
        print(f"runs: {len(records)}")
        if per_run is not None:
            print(f"messages_per_run: {per_run}")
        print(f"read_score_s: {read_s:.3f}")
        print(f"pairs_per_s: {len(records) / read_s:.1f}")
        print(f"cpu_ms_per_run: {cpu_ms:.1f}")
        print(f"study_s: {study_s:.3f}")
        print(f"report_s: {report_s:.3f}")
        print(f"report_parallel_s: {report_parallel_s:.3f}")


if __name__ == "__main__":
    main()
