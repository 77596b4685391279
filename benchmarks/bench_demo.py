"""Time, CPU and memory of ``sim2real-eval demo`` as a user runs it, and where the time goes.

    python benchmarks/bench_demo.py                      # the command line, warm: 3 runs into one OUT
    python benchmarks/bench_demo.py --cold --repeat 3    # + a first run with an empty numba cache
    python benchmarks/bench_demo.py --quick              # the same for `demo --quick`
    python benchmarks/bench_demo.py --real-sample        # the same for `demo --real-sample` (the real car)
    python benchmarks/bench_demo.py --judges ekf,ukf     # the same with every run judged by both judges
    python benchmarks/bench_demo.py --profile --k 3      # cProfile of the demo in this process

Default mode: ``sim2real-eval demo --out OUT --no-progress`` (this checkout's src/) is run ``--repeat``
times into the same OUT, as a user runs it: the first run regenerates the reference runs 3–9 into
OUT/reference, later runs reuse them.  Per run it prints ``name: value`` lines — wall and CPU
(user + sys of the command and every worker it started, from ``wait4``), the peak RSS of the largest
process, the 1-minute load average before and after (a loaded machine stretches wall time: compare
CPU, and give the load with any wall time) and each step's wall and CPU seconds from OUT/demo.json.
``--cold``: one more run first, with numba's cache in an empty temporary folder (NUMBA_CACHE_DIR): the
first run after installation, which compiles the judge's kernels.  Targets (issue 19, 2-core machine,
idle): warm ≤ 15 s wall, cold ≤ 60 s, peak RSS ≤ 1 GB — printed as ratios (≤ 1 meets it).

``--profile`` profiles the calling process only (combine with ``--workers 1`` to see every run); the
time per area is the cumulative time of the area's entry points.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"warm_wall_s": 15.0, "cold_wall_s": 60.0, "peak_rss_mb": 1024.0}

# Entry points per area for --profile: (area, file suffix, function name).  Cumulative times.
AREAS = (
    ("reference generation (scenario + sensors + bag write)", "sim2real_eval/reference.py",
     "write_reference_run"),
    ("read real bag + INS truth (replay.offline)", "replay/offline.py", "read_real_streams"),
    ("simulated GPS samples", "replay/offline.py", "simulated_gps"),
    ("simulated IMU samples", "replay/offline.py", "simulated_imu"),
    ("embedded judge (robot_localization port)", "judge/config.py", "judge_run"),
    ("  of which the judge-noise floor's draws", "replay/offline.py", "noise_floor_scores"),
    ("per-run scores from memory", "replay/offline.py", "estimate_series"),
    ("run bag writing (--keep-runs)", "runs/write.py", "write_run"),
    ("statistics: intervals, permutations, comparisons", "metrics/study.py", "score_study"),
    ("figures", "report/__init__.py", "draw"),
    ("report files", "report/__init__.py", "write_report"),
)


def area_times(stats: pstats.Stats) -> dict:
    out = {}
    for (filename, _line, function), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():
        for area, suffix, name in AREAS:
            if function == name and filename.endswith(suffix):
                out[area] = out.get(area, 0.0) + cumulative
    return out


def run_command(argv: list, env: dict) -> dict:
    """Wall, CPU (user + sys of the process and its reaped descendants) and peak RSS of one command."""
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate()  # reaps it: its rusage is read from the children's total
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}):\n{stderr[-3000:]}")
    return {"wall": wall, "load_before": load_before, "load_after": os.getloadavg()[0], "stdout": stdout}


def measure(argv: list, env: dict) -> dict:
    """``run_command`` in a fresh child process so its rusage (children totals, max RSS) is its own."""
    import resource

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child runs the command and reports its children's rusage
        os.close(read)
        result = run_command(argv, env)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        result.update(cpu=usage.ru_utime + usage.ru_stime, user=usage.ru_utime, sys=usage.ru_stime,
                      peak_rss_mb=usage.ru_maxrss / 1024.0)
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def command_mode(args) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"),
                                                                     os.environ.get("PYTHONPATH")])))
    base = [sys.executable, "-c", "import sys; from sim2real_eval.cli import main; sys.exit(main())", "demo",
            "--no-progress"] + (["--quick"] if args.quick else []) + (["--k", str(args.k)] if args.k else [])
    base += ["--real-sample"] if args.real_sample else []
    base += ["--judges", args.judges] if args.judges else []
    base += ["--workers", str(args.workers)] if args.workers else []
    with tempfile.TemporaryDirectory(prefix="bench_demo_") as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "report"
        runs = []

        def run(name: str, where: Path, environment: dict) -> None:
            result = measure(base + ["--out", str(where)], environment)
            result["summary"] = json.loads((where / "demo.json").read_text())  # before the next run
            runs.append((name, result))

        if args.cold:
            run("cold", Path(tmp) / "cold", dict(env, NUMBA_CACHE_DIR=str(Path(tmp) / "numba_cache")))
        for i in range(args.repeat):
            run(f"warm{i + 1}", out, env)
        print(f"command: sim2real-eval {' '.join(base[3:])} --out OUT")
        print(f"cores: {os.cpu_count()}")
        for name, run in runs:
            summary = run["summary"]
            print(f"{name}_wall_s: {run['wall']:.2f}")
            print(f"{name}_cpu_s: {run['cpu']:.2f} (user {run['user']:.2f} + sys {run['sys']:.2f})")
            print(f"{name}_peak_rss_mb: {run['peak_rss_mb']:.0f}")
            print(f"{name}_load_1min: {run['load_before']:.2f} before, {run['load_after']:.2f} after")
            steps = ", ".join(f"{step} {summary['wall_time_s'][step]:.1f}/{summary['cpu_time_s'][step]:.1f}"
                              for step in ("startup", "real_sample", "real_bags", "runs", "score", "judges",
                                           "sensitivity", "report") if step in summary["wall_time_s"])
            print(f"{name}_steps_wall/cpu_s: {steps}")
        warm = [run for name, run in runs if name != "cold"]
        if warm:
            best = min(run["wall"] for run in warm)
            print(f"warm_wall_s_best: {best:.2f}")
            print(f"warm_cpu_s_best: {min(run['cpu'] for run in warm):.2f}")
            if not args.quick and not args.k and not args.real_sample and not args.judges:
                print(f"warm_wall_ratio_to_target (<= 1 meets {TARGETS['warm_wall_s']:g} s): "
                      f"{best / TARGETS['warm_wall_s']:.2f}")
        cold = [run for name, run in runs if name == "cold"]
        if cold and not args.quick and not args.k and not args.real_sample:
            print(f"cold_wall_ratio_to_target (<= 1 meets {TARGETS['cold_wall_s']:g} s): "
                  f"{cold[0]['wall'] / TARGETS['cold_wall_s']:.2f}")
        peak = max(run["peak_rss_mb"] for _name, run in runs)
        print(f"peak_rss_ratio_to_target (<= 1 meets {TARGETS['peak_rss_mb']:g} MB): "
              f"{peak / TARGETS['peak_rss_mb']:.2f}")
        print(runs[-1][1]["stdout"].rstrip())


def profile_mode(args) -> None:
    from sim2real_eval.studies.demo import DemoOptions, run_demo

    with tempfile.TemporaryDirectory(prefix="bench_demo_") as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "report"
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        k = None if args.real_sample else args.k or (3 if args.quick else None)
        result = run_demo(out, DemoOptions(k=k, quick=args.quick, real_sample=args.real_sample,
                                           workers=args.workers, progress=False))
        profiler.disable()
        print(f"wall_time_s: {time.perf_counter() - start:.2f}")
        print(f"runs_total: {result.runs_total}")
        stats = pstats.Stats(profiler)
        total = sum(v[3] for k, v in stats.stats.items() if k[2] == "run_demo")
        for area, seconds in area_times(stats).items():
            print(f"profile {area}: {seconds:.2f} s ({100 * seconds / total:.0f} %)")
        print(f"profile total (run_demo, profiled): {total:.2f} s")
        rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:args.top]
        for (filename, line, function), (_cc, calls, own, _cum, _callers) in rows:
            short = "/".join(Path(filename).parts[-2:])
            print(f"own-time {short}:{line}({function}): {own:.2f} s in {calls} calls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=None, help="runs per scenario (default: the demo's, 10)")
    parser.add_argument("--quick", action="store_true", help="demo --quick (K = 3)")
    parser.add_argument("--real-sample", action="store_true", help="demo --real-sample (the comma2k19 drive)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--judges", default=None, help="demo --judges NAMES (e.g. ekf,ukf)")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs into the same OUT (default 3)")
    parser.add_argument("--cold", action="store_true", help="first a run with an empty numba cache")
    parser.add_argument("--profile", action="store_true", help="cProfile the demo in this process")
    parser.add_argument("--out", default=None, help="the warm runs' OUT (default: a temporary folder)")
    parser.add_argument("--top", type=int, default=15, help="functions listed by own time with --profile")
    args = parser.parse_args()
    (profile_mode if args.profile else command_mode)(args)


if __name__ == "__main__":
    main()
