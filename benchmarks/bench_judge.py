"""Speed and memory of the embedded judge on the ART configuration (100 Hz IMU + 10 Hz GPS).

Prints ``name: value`` lines:
  judge_realtime_factor          simulated seconds / CPU seconds of Judge.run on the --duration s run given as
                                 CDR records (what a bag holds: the judge decodes them in bulk), best of
                                 --repeat; process CPU time (the machine is shared), one core
  judge_realtime_factor_wall     the same with wall-clock time
  judge_realtime_factor_objects  the same run given as rosbags message objects
  judge_cpu_us_per_input_message CPU per input message (CDR records)
  judge_first_run_cpu_seconds    the first (short) run of this process: loads numba's cached kernels
  judge_cold_start_cpu_seconds   with --cold: that first run in a fresh process with an empty numba cache
  judge_cold_start_wall_seconds  (NUMBA_CACHE_DIR in a temporary directory): the one-time compilation
  judge_peak_rss_mb_base         with --memory: peak RSS of a fresh process running `sim2real-eval judge`
  judge_peak_rss_mb              on a bag of --memory-seconds (base) and on one 10x longer (the judge
  judge_rss_ratio                streams: 10x / base ≈ 1)

Usage: python benchmarks/bench_judge.py [--duration 30] [--repeat 5] [--cold]
                                         [--memory [--memory-seconds 300]]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_records, art_like_stream
from sim2real_eval.resources import config_path

ART_TFS = ("base_link gps 0 0 0 0 0 0", "base_link imu 0 0 0 3.1416 -1.5708 0")

# Peak RSS from /proc/self/status VmHWM of the exec'd process (ru_maxrss would carry the parent's peak).
JUDGE_BAG = """
import sys
from sim2real_eval.cli import main
code = main(sys.argv[1:])
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, hwm_kb / 1024.0)
"""


def best_times(judge: Judge, messages, repeat: int) -> tuple:
    best_cpu = best_wall = float("inf")
    result = None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = judge.run(messages)
        best_wall = min(best_wall, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best_cpu, best_wall, result


def write_art_bag(path: Path, seconds: float) -> Path:
    from sim2real_eval.bags import write_bag

    return write_bag(path, art_like_records(duration=seconds, heading_rate=0.05, seed=1))


def judge_bag_rss(bag: Path, out: Path) -> float:
    args = ["judge", str(bag), "--config", str(config_path("ekf_art_iros2024.yaml")), "--navsat",
            str(config_path("navsat_art_iros2024.yaml")), "--output", str(out), "--no-progress"]
    for tf in ART_TFS:
        args += ["--static-tf", tf]
    run = subprocess.run([sys.executable, "-c", JUDGE_BAG, *args], check=True, capture_output=True, text=True)
    code, rss = run.stdout.split()[-2:]
    if code != "0":
        raise SystemExit(f"judge failed on {bag}: {run.stderr}")
    return float(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="also measure the cold start (slow: compiles)")
    parser.add_argument("--memory", action="store_true",
                        help="also measure peak RSS on a bag and one 10x longer")
    parser.add_argument("--memory-seconds", type=float, default=300.0,
                        help="the base bag's length (s; several chunks, so chunk-sized buffers are in both)")
    parser.add_argument("--first-run-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    records = art_like_records(duration=args.duration, heading_rate=0.05, seed=1)
    judge = Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
                  load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS)
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    judge.run(records[:300])  # load (or compile) numba's kernels
    print(f"judge_first_run_cpu_seconds: {time.process_time() - start_cpu:.2f}")
    if args.first_run_only:
        print(f"judge_first_run_wall_seconds: {time.perf_counter() - start_wall:.2f}")
        return
    if args.cold:
        with tempfile.TemporaryDirectory() as cache:
            out = subprocess.run([sys.executable, __file__, "--first-run-only", "--duration", "2"],
                                 env={**os.environ, "NUMBA_CACHE_DIR": cache}, capture_output=True,
                                 text=True, check=True).stdout
        print(out.strip().replace("judge_first_run_", "judge_cold_start_"))
    cpu, wall, result = best_times(judge, records, args.repeat)
    objects_cpu, _wall, _result = best_times(judge, art_like_stream(duration=args.duration,
                                                                    heading_rate=0.05, seed=1),
                                             args.repeat)
    print(f"judge_messages: {len(records)}")
    print(f"judge_published: {result.published}")
    print(f"judge_wall_seconds: {wall:.4f}")
    print(f"judge_cpu_seconds: {cpu:.4f}")
    print(f"judge_cpu_us_per_input_message: {cpu / len(records) * 1e6:.1f}")
    print(f"judge_realtime_factor_wall: {args.duration / wall:.1f}")
    print(f"judge_realtime_factor_objects: {args.duration / objects_cpu:.1f}")
    print(f"judge_realtime_factor: {args.duration / cpu:.1f}")
    if args.memory:
        with tempfile.TemporaryDirectory() as tmp:
            rss = {}
            for label, factor in (("base", 1), ("long", 10)):
                bag = write_art_bag(Path(tmp) / label, args.memory_seconds * factor)
                rss[label] = judge_bag_rss(bag, Path(tmp) / f"{label}_judged")
            print(f"judge_peak_rss_mb_base: {rss['base']:.1f}")
            print(f"judge_peak_rss_mb: {rss['long']:.1f}")
            print(f"judge_rss_ratio: {rss['long'] / rss['base']:.3f}")


if __name__ == "__main__":
    main()
