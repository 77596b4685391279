"""What it costs that every reader checks a run's data files (issue 30 item 2; ``runs.check_data_files``).

Builds bench_score.py's study (real + 5 simulated variants x 3 scenarios x RUNS runs, sqlite3 run bags)
with run.yaml recording the data files (``files``: size + SHA-256, as the pipeline writes them), or
checks an existing run tree (``--runs-dir``, e.g. a demo's ``OUT/runs`` written with --keep-runs).
Files are read from the page cache (just written, or read once before timing): a cold disk adds its
read time, which the scorer's own read of the same bag then saves.

Prints ``name: value`` lines:
  runs, data_mb                 run directories and the bytes of their data files (MB = 1e6 bytes)
  sha256_mb_per_s               hashlib.sha256 over one 64 MB buffer in memory (this machine, one core)
  check_files_s                 check_data_files on every run, one process (every file read once)
  check_files_mb_per_s          data_mb / check_files_s
  check_counts_s                the same runs with ``files`` left out (the older format): metadata.yaml's
                                per-topic counts against the SQLite rows
  score_read_s, score_read_unchecked_s
                                discover + read + score every run (--workers), with the checks and without
  per_705_mb_s                  check_files_s scaled to the demo's 705 MB of kept runs (K = 10)

Usage: python benchmarks/bench_run_checks.py [--runs 10] [--workers 2] [--runs-dir DIR]
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_score import build_study  # noqa: E402 - the same study as the scorer's benchmark

from sim2real_eval import runs  # noqa: E402
from sim2real_eval.metrics import ScoreOptions  # noqa: E402
from sim2real_eval.metrics.inputs import discover_runs_dir, load_and_score_all  # noqa: E402

DEMO_KEPT_MB = 705.0  # README / docs/demo.md: the demo's K = 10 runs with --keep-runs


def record_files(root: Path) -> None:
    for _run, path in runs.find_runs(root):
        info = yaml.safe_load((path / runs.RUN_FILE).read_text())
        info[runs.FILES_KEY] = runs.data_files(path)
        (path / runs.RUN_FILE).write_text(yaml.safe_dump(info))


def run_records(root: Path) -> list:
    return [(path, yaml.safe_load((path / runs.RUN_FILE).read_text())) for _run, path in runs.find_runs(root)]


def check_all(records: list) -> float:
    start = time.perf_counter()
    for path, record in records:
        runs.check_data_files(path, record)
    return time.perf_counter() - start


def sha256_speed() -> float:
    block = bytes(64 * 1024 * 1024)
    start = time.perf_counter()
    hashlib.sha256(block).hexdigest()
    return len(block) / 1e6 / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per (variant, scenario)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs-dir", type=Path, help="check this run tree instead of a built one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = args.runs_dir or Path(temp) / "OUT"
        if args.runs_dir is None:
            build_study(root, args.runs)
            record_files(root)
        records = run_records(root)
        data_mb = sum(f.stat().st_size for path, _ in records for f in path.iterdir()
                      if f.name != runs.RUN_FILE and f.is_file()) / 1e6
        check_all(records)  # warm the page cache: every case below reads from memory
        check_files_s = check_all(records)
        old = [(path, {k: v for k, v in record.items() if k != runs.FILES_KEY}) for path, record in records]
        check_counts_s = check_all(old)
        options = ScoreOptions(bootstrap=0, permutations=0)
        start = time.perf_counter()
        specs = discover_runs_dir(root, options)
        load_and_score_all(specs, options, workers=args.workers)
        score_read_s = time.perf_counter() - start
        start = time.perf_counter()
        specs = [dataclasses.replace(s, run_record=None) for s in discover_runs_dir(root, options)]
        load_and_score_all(specs, options, workers=args.workers)
        unchecked_s = time.perf_counter() - start
    print(f"runs: {len(records)}")
    print(f"data_mb: {data_mb:.1f}")
    print(f"sha256_mb_per_s: {sha256_speed():.0f}")
    print(f"check_files_s: {check_files_s:.3f}")
    print(f"check_files_mb_per_s: {data_mb / check_files_s:.0f}")
    print(f"check_counts_s: {check_counts_s:.3f}")
    print(f"score_read_s: {score_read_s:.3f}")
    print(f"score_read_unchecked_s: {unchecked_s:.3f}")
    print(f"per_705_mb_s: {check_files_s * DEMO_KEPT_MB / data_mb:.2f}")


if __name__ == "__main__":
    main()
