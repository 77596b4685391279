"""Moving starts: how much of a window's score is the judge's start-up transient (docs/judge.md).

Windows of the shipped reference bags that start mid-drive (every topic cropped by header stamp to
[start + OFFSET, start + OFFSET + LENGTH]: the car is at ~1 m/s from the first instant) are replayed
with the Chrono IMU, once with ekf_node's own initial state (zeros) and once with ``initial_state:
truth``.  For the real runs it prints the speed RMS error of /odometry/filtered against the truth in
time bins after the window's start, and the scorer's E (no warm-up).

Prints ``name: value`` lines (m/s): ``rms_<bin>_<start>`` and ``E_<start>`` means over the windows.

Usage: python benchmarks/moving_start.py [--offset 8] [--length 18] [--keep DIR]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np

from sim2real_eval import message_fields as F
from sim2real_eval.bags import open_bag, write_bag
from sim2real_eval.bags.columns import read_topics
from sim2real_eval.judge.config import JudgeConfig
from sim2real_eval.metrics import ScoreOptions
from sim2real_eval.metrics.inputs import discover_runs_dir, load_and_score
from sim2real_eval.reference import shipped_reference_dir
from sim2real_eval.replay.real_bag import Replacement
from sim2real_eval.resources import config_path
from sim2real_eval.runs import find_real_bags
from sim2real_eval.service import plan_replays, replay_bags

BINS = ((0.0, 0.25), (0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, None))


def crop(source: Path, target: Path, offset_s: float, length_s: float) -> None:
    """Every message whose header stamp lies in [first stamp + offset, + length]."""
    with open_bag(source) as reader:
        messages = list(reader.messages())

    def stamp(message):
        header = message.msg.header
        return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec

    start = min(stamp(m) for m in messages) + int(offset_s * 1e9)
    end = start + int(length_s * 1e9)
    write_bag(target, [(m.recv_ns, m.topic, m.msgtype, m.msg) for m in messages if start <= stamp(m) <= end])


def speed_errors(run: Path) -> tuple:
    """(seconds after the run's window start, |v_est| − |v_truth|) of /odometry/filtered."""
    import yaml

    with open_bag(run) as reader:
        columns = read_topics(reader, {"/odometry/filtered": F.ODOMETRY, "/ground_truth/odom": F.ODOMETRY})
    est, truth = columns["/odometry/filtered"], columns["/ground_truth/odom"]
    start = yaml.safe_load((run / "run.yaml").read_text())["window_ns"][0]
    speed = np.hypot(est["linear_velocity"][:, 0], est["linear_velocity"][:, 1])
    truth_speed = np.interp(est["stamp_ns"], truth["stamp_ns"], np.hypot(truth["linear_velocity"][:, 0],
                                                                         truth["linear_velocity"][:, 1]))
    return (est["stamp_ns"] - start) * 1e-9, speed - truth_speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offset", type=float, default=8.0, help="window start after the bag's start (s)")
    parser.add_argument("--length", type=float, default=18.0, help="window length (s)")
    parser.add_argument("--keep", default=None, help="write the windows and runs here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        for bag in find_real_bags([shipped_reference_dir()]):
            target = root / "windows" / bag.scenario / Path(bag.path).name
            crop(Path(bag.path), target, args.offset, args.length)
        bags = find_real_bags([root / "windows"])
        options = ScoreOptions(bootstrap=0, permutations=0, exclude_scenarios=()).validate()
        for start in ("config", "truth"):
            judge = JudgeConfig(str(config_path("ekf_art_iros2024.yaml")),
                                str(config_path("navsat_art_iros2024.yaml")), initial_state=start)
            tasks = plan_replays(bags, [Replacement({"imu": "chrono_paper_demo"})], judge,
                                 static_tfs_by_layout=True)
            replay_bags(tasks, root / f"runs_{start}", workers=2, progress=False).raise_on_failure()
            specs = [s for s in discover_runs_dir(root / f"runs_{start}", options) if s.side == "real"]
            errors = [speed_errors(Path(spec.source)) for spec in specs]
            for low, high in BINS:
                inside = [(t >= low) & (t < (np.inf if high is None else high)) for t, _e in errors]
                rms = [float(np.sqrt(np.mean(e[keep] ** 2))) for (_t, e), keep in zip(errors, inside)]
                label = f"{low:g}-{'end' if high is None else f'{high:g}s'}"
                print(f"rms_{label}_{start}: {statistics.mean(rms):.4f}")
            scores = [load_and_score(spec, options)[0].score.rmse for spec in specs]
            print(f"E_{start}: {statistics.mean(scores):.4f} (min {min(scores):.4f}, max {max(scores):.4f}, "
                  f"{len(scores)} windows)")


if __name__ == "__main__":
    main()
