"""Bag I/O: memory flat in bag length when reading, and message build / write / read rates.

Prints ``name: value`` lines:
  build_messages_per_s        Imu + NavSatFix + ground-truth Odometry messages built per second (objects)
  write_messages_per_s        those messages serialised (rosbags serialize_cdr) and written per second
  build_cdr_messages_per_s    the same messages serialised in bulk (bags.messages.*_cdr, bags.cdr)
  write_cdr_messages_per_s    pre-serialised messages written per second (the pipeline's path)
  read_messages_per_s         messages read and deserialised per second (open_bag, all topics)
  read_standstill_messages_per_s  /fix + /imu read into arrays (calibrate.standstill.read_standstill_bag)
  read_speeds_messages_per_s  two Odometry topics read into speed arrays (metrics.inputs.read_bag_speeds)
  read_truth_messages_per_s   Odometry ground truth read into a GroundTruth (truth.bag, smoothing included)
  bag_read_peak_rss_mb_base   peak RSS of a fresh process that reads the base bag (BASE s) end to end
  bag_read_peak_rss_mb        same for a bag 10x longer
  bag_read_rss_ratio          10x / base (1.0 = flat: reading streams)

Usage: python benchmarks/bench_bags.py [--seconds 60] [--storage sqlite3]
"""

from __future__ import annotations

import argparse
import heapq
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sim2real_eval.bags import messages as M
from sim2real_eval.bags import open_bag, write_bag
from sim2real_eval.models.samples import GpsSamples, ImuSamples
from sim2real_eval.stamps import seconds_to_ns
from sim2real_eval.truth import GroundTruth

# Peak RSS from /proc/self/status VmHWM: it belongs to the exec'd image.  (ru_maxrss would carry the
# parent's peak over fork+exec on Linux.)
READER = """
import sys
from sim2real_eval.bags import open_bag
n = 0
with open_bag(sys.argv[1]) as bag:
    for message in bag.messages():
        n += 1
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(n, hwm_kb / 1024.0)
"""


def sensor_streams(seconds: float):
    """100 Hz IMU, 10 Hz GPS, 100 Hz truth of a straight drive at 1 m/s (content is irrelevant here)."""
    rng = np.random.default_rng(0)
    t = 10.0 + np.arange(0.0, seconds, 0.01)
    n = len(t)
    truth = GroundTruth.from_kinematics(t, np.stack([t, 0 * t, 0 * t], 1), np.tile([0, 0, 0, 1.0], (n, 1)),
                                        np.tile([1.0, 0, 0], (n, 1)))
    stamps = seconds_to_ns(t)
    cov = np.tile(np.eye(3).ravel() * 1e-4, (n, 1))
    imu = ImuSamples(stamps, stamps, truth.orientation, cov, rng.normal(size=(n, 3)), cov,
                     rng.normal(size=(n, 3)), cov)
    g = stamps[::10]
    m = len(g)
    gps = GpsSamples(g, g, np.full(m, 43.07), np.full(m, -89.4), np.full(m, 260.0), np.zeros(m), np.ones(m),
                     np.zeros((m, 9)), np.zeros(m), np.zeros((m, 3)))
    return imu, gps, truth


def merge_by_time(*streams) -> list:
    """Streams each in receive order -> one list in receive order (stable: ties keep stream order)."""
    return list(heapq.merge(*streams, key=lambda item: item[0]))


def build(seconds: float) -> list:
    imu, gps, truth = sensor_streams(seconds)
    return merge_by_time(M.imu_messages(imu), M.navsatfix_messages(gps), M.truth_odometry_messages(truth))


def build_cdr(seconds: float) -> list:
    imu, gps, truth = sensor_streams(seconds)
    return merge_by_time(M.imu_cdr(imu), M.navsatfix_cdr(gps), M.truth_odometry_cdr(truth))


def read_arrays(tmp: Path, seconds: float, storage: str) -> None:
    """The array readers of the scorer, the calibrator and the truth adapter on one long bag."""
    from sim2real_eval.calibrate.standstill import read_standstill_bag
    from sim2real_eval.metrics.inputs import RunSpec, read_bag_speeds
    from sim2real_eval.truth.bag import truth_from_bag

    imu, gps, truth = sensor_streams(seconds)
    truth_cdr = M.truth_odometry_cdr(truth)
    estimate = [M.BagMessage(m.recv_ns, "/odometry/filtered", m.msgtype, m.msg) for m in truth_cdr]
    bag = write_bag(tmp / "arrays", merge_by_time(M.imu_cdr(imu), M.navsatfix_cdr(gps), truth_cdr, estimate),
                    storage=storage)
    start = time.perf_counter()
    data = read_standstill_bag(bag)
    count = len(data.gps.t) + len(data.imu.t)
    print(f"read_standstill_messages_per_s: {count / (time.perf_counter() - start):.0f}")
    start = time.perf_counter()
    series = read_bag_speeds(RunSpec("sim", "v", "s", 0, str(bag), "bag"))
    count = len(series.t_est) + len(series.t_gt)
    print(f"read_speeds_messages_per_s: {count / (time.perf_counter() - start):.0f}")
    start = time.perf_counter()
    with open_bag(bag) as reader:
        got, _datum = truth_from_bag(reader, source="odometry")
    print(f"read_truth_messages_per_s: {len(got) / (time.perf_counter() - start):.0f}")


def peak_rss_mb(bag: Path) -> tuple[int, float]:
    out = subprocess.run([sys.executable, "-c", READER, str(bag)], check=True, capture_output=True, text=True)
    count, rss = out.stdout.split()
    return int(count), float(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="base bag length, s (long: 10x)")
    parser.add_argument("--storage", default="sqlite3", choices=["sqlite3", "mcap"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bags = {}
        for label, factor in (("base", 1), ("long", 10)):
            start = time.perf_counter()
            messages = build(args.seconds * factor)
            built = time.perf_counter()
            bags[label] = write_bag(Path(tmp) / label, messages, storage=args.storage)
            written = time.perf_counter()
            if label == "long":
                n = len(messages)
                print(f"build_messages_per_s: {n / (built - start):.0f}")
                print(f"write_messages_per_s: {n / (written - built):.0f}")
                start = time.perf_counter()
                raw = build_cdr(args.seconds * factor)
                built = time.perf_counter()
                write_bag(Path(tmp) / "long_cdr", raw, storage=args.storage)
                written = time.perf_counter()
                print(f"build_cdr_messages_per_s: {len(raw) / (built - start):.0f}")
                print(f"write_cdr_messages_per_s: {len(raw) / (written - built):.0f}")
                del raw
            del messages
        start = time.perf_counter()
        with open_bag(bags["long"]) as bag:
            n = sum(1 for _ in bag.messages())
        print(f"read_messages_per_s: {n / (time.perf_counter() - start):.0f}")
        read_arrays(Path(tmp), args.seconds * 10, args.storage)
        n_base, rss_base = peak_rss_mb(bags["base"])
        n_long, rss_long = peak_rss_mb(bags["long"])
        print(f"bag_messages_base: {n_base}")
        print(f"bag_messages_long: {n_long}")
        print(f"bag_read_peak_rss_mb_base: {rss_base:.1f}")
        print(f"bag_read_peak_rss_mb: {rss_long:.1f}")
        print(f"bag_read_rss_ratio: {rss_long / rss_base:.3f}")


if __name__ == "__main__":
    main()
