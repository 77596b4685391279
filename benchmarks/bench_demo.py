"""Wall time of ``sim2real-eval demo`` and where it goes.  Prints ``name: value`` lines.

    python benchmarks/bench_demo.py                      # full demo, K = 10, all cores
    python benchmarks/bench_demo.py --k 3 --profile      # + cProfile of one process (use --workers 1)

The demo runs from scratch into a temporary folder (the reference runs beyond the shipped ones are
regenerated, as on a fresh clone).  ``--profile`` profiles the calling process only, so combine it
with ``--workers 1`` to see every run; the time per area is the cumulative time of the area's entry
points (cProfile), which overlap only where one area calls another (noted below).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import tempfile
import time
from pathlib import Path

# Entry points per area: (area, file suffix, function name).  Cumulative times of these functions.
AREAS = (
    ("reference generation (scenario + sensors + bag write)", "sim2real_eval/reference.py",
     "write_reference_run"),
    ("  of which scenario integration (RK4, scenarios.py)", "sim2real_eval/scenarios.py", "simulate"),
    ("read real bag + INS truth (pipeline.replay)", "pipeline/replay.py", "read_real_streams"),
    ("simulated GPS/IMU samples", "pipeline/replay.py", "simulated_gps"),
    ("simulated IMU samples", "pipeline/replay.py", "simulated_imu"),
    ("embedded judge (robot_localization port)", "pipeline/run.py", "judge_run"),
    ("message building for the run bags", "pipeline/run.py", "judge_records"),
    ("ground-truth odometry messages", "pipeline/run.py", "truth_records"),
    ("run bag writing (rosbags, sqlite3)", "pipeline/run.py", "write_run"),
    ("scoring: find runs (run.yaml)", "metrics/inputs.py", "discover_runs_dir"),
    ("scoring: read runs + per-run metrics", "metrics/inputs.py", "load_and_score_all"),
    ("  of which opening bags (rosbags metadata + QoS YAML)", "bags/reader.py", "open_bag"),
    ("scoring: W1/W2/VEPD + bootstrap + permutations", "metrics/study.py", "score_study"),
    ("report: figures + HTML", "report/__init__.py", "write_report"),
)


def area_times(stats: pstats.Stats) -> dict:
    out = {}
    for (filename, _line, function), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():
        for area, suffix, name in AREAS:
            if function == name and filename.endswith(suffix):
                out[area] = out.get(area, 0.0) + cumulative
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", default=None, help="keep the output here (default: a temporary folder)")
    parser.add_argument("--top", type=int, default=15, help="functions listed by own time with --profile")
    args = parser.parse_args()

    from sim2real_eval.demo import run_demo

    with tempfile.TemporaryDirectory(prefix="bench_demo_") as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "report"
        profiler = cProfile.Profile() if args.profile else None
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        result = run_demo(out, k=args.k, workers=args.workers, progress=False)
        if profiler:
            profiler.disable()
        wall = time.perf_counter() - start
        used = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)  # worker processes (reaped)
        cpu = used.ru_utime + used.ru_stime + children.ru_utime + children.ru_stime
        print(f"k: {args.k}")
        print(f"workers: {args.workers or 'all cores'}")
        print(f"runs_total: {result.runs_total}")
        print(f"wall_time_s: {wall:.2f}")
        print(f"cpu_time_s (this process + workers): {cpu:.2f}")
        print(f"load_average_1min_at_end: {os.getloadavg()[0]:.2f}")
        for name, value in result.timings.items():
            print(f"wall_time_{name}_s: {value:.2f}")
        print(f"wall_time_per_run_s: {result.timings['runs'] / result.runs_total:.3f}")
        for name, value in result.ordering["vepd"].items():
            print(f"vepd_{name}: {value:.4f}")
        if result.imu:
            for name, row in result.imu["combined"].items():
                print(f"vepd_imu_study_{name}: {row['VEPD']:.4f}")
        for name, value in result.ordering["checks"].items():
            print(f"paper_ordering_{name}: {value}")
        if profiler:
            stats = pstats.Stats(profiler)
            total = sum(v[3] for k, v in stats.stats.items() if k[2] == "run_demo")
            for area, seconds in area_times(stats).items():
                print(f"profile {area}: {seconds:.2f} s ({100 * seconds / total:.0f} %)")
            print(f"profile total (run_demo, profiled): {total:.2f} s")
            rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:args.top]
            for (filename, line, function), (_cc, calls, own, _cum, _callers) in rows:
                short = "/".join(Path(filename).parts[-2:])
                print(f"own-time {short}:{line}({function}): {own:.2f} s in {calls} calls")


if __name__ == "__main__":
    main()
