"""Pipeline throughput: 30 s runs on the ART judge config, local runner.

Prints ``name: value`` lines:
  runs_per_s                    runs completed per wall second (local process pool, --workers, default 2)
  sim_seconds_per_wall_second   simulated seconds of vehicle time per wall second (same batch)
  per_run_*_ms                  where one run's time goes (one run in this process, wall clocks, median
                                of --repeats): truth (scenario simulation) and truth_messages
                                (/ground_truth/odom records) are computed once per (scenario, k) by a
                                worker and shared by the variants; models; messages (the sensors' CDR
                                records the judge reads and the bag stores, sorted); judge; bag_write
  per_run_outside_judge_ms      models + messages + bag_write + the shared truth parts / variants
  replay_*                      the demo's run path (replay.offline on a shipped reference bag, one
                                real run + the demo's 6 simulated runs of that bag, in this process):
                                replay_read_real_bag_ms once per bag; per run (median): sensors
                                (simulated samples + records), judge, bag_records, bag_write; and
                                replay_per_run_outside_judge_ms (read_real_bag shared by the runs)

Usage: python benchmarks/bench_pipeline.py [--runs 10] [--workers 2] [--storage sqlite3] [--repeats 5]
       [--no-replay]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sim2real_eval.bags import records as B
from sim2real_eval.judge import config as J
from sim2real_eval.models import sensor_seed
from sim2real_eval.pipeline import simulated_run as R
from sim2real_eval.pipeline.batch import run_batch
from sim2real_eval.pipeline.study import load_study
from sim2real_eval.resources import config_path
from sim2real_eval.runs import write as W

STAGES = ("truth", "truth_messages", "models", "messages", "judge", "bag_write")


def study_runs(n: int, storage: str):
    study = load_study(config_path("studies", "paper_gps.yaml"))
    # The first n runs in dispatch order (grouped by shared ground truth, as the full study runs):
    # each (scenario, k) truth serves the 5 GPS variants.
    runs = sorted(study.runs(storage=storage), key=lambda r: r.locality_key)
    return runs[:n]


def profile_one(spec: R.SimRunSpec, out: Path) -> dict:
    """Wall time of each stage of one run (in this process), the steps of ``simulate_run``."""
    times = {}
    t0 = time.perf_counter()
    truth = R.scenario_truth(spec.scenario, spec.scenario_params, spec.seed, spec.k)
    t1 = time.perf_counter()
    truth_messages = B.truth_records(truth, spec.ground_truth_rate)
    t2 = time.perf_counter()
    keys = (spec.seed, spec.variant, spec.scenario, spec.k)
    gps = J.load_gps(spec.gps, sensor_seed(*keys, "gps")).sample(truth)
    imu = J.load_imu(spec.imu, spec.judge, sensor_seed(*keys, "imu")).sample(truth)
    t3 = time.perf_counter()
    sensors = B.in_receive_order(B.sensor_bag_records(gps, imu))
    t4 = time.perf_counter()
    result = J.judge_run(spec.judge, sensors)
    t5 = time.perf_counter()
    records = B.in_receive_order(sensors + B.judge_records(result) + truth_messages)
    t6 = time.perf_counter()
    W.write_run(out, records, spec.info(), spec.storage)
    t7 = time.perf_counter()
    times["truth"] = t1 - t0
    times["truth_messages"] = t2 - t1
    times["models"] = t3 - t2
    times["messages"] = (t4 - t3) + (t6 - t5)
    times["judge"] = t5 - t4
    times["bag_write"] = t7 - t6
    times["duration_s"] = truth.duration
    times["messages_written"] = len(records)
    return times


def profile_replay(out: Path, repeats: int) -> dict:
    """Stages of the demo's runs of one real bag (``replay.offline.BagReplay``: real run + 6 simulated)."""
    from sim2real_eval.reference import shipped_reference_dir
    from sim2real_eval.replay import offline as P
    from sim2real_eval.studies import config as studies_config
    from sim2real_eval.studies import plan

    config = studies_config.load_demo_config(None)
    bag = sorted((shipped_reference_dir() / "line").iterdir())[0]
    task = plan.plan_groups(config, {"line": [bag]}, "line")[0]
    spec = task.spec
    stages: dict = {name: [] for name in ("read_real_bag", "sensors", "judge", "bag_records", "bag_write")}
    P.read_real_streams(spec)  # warm-up: first-use costs (typestore, rosbags' generated deserialisers)
    for repeat in range(repeats):
        t0 = time.perf_counter()
        streams = P.read_real_streams(spec)
        stages["read_real_bag"].append(time.perf_counter() - t0)
        for i, sim in enumerate((None,) + task.sims):
            t0 = time.perf_counter()
            sensors = B.in_receive_order(P.sensor_streams(spec, streams, sim))
            info = spec.run_info(streams, sim)
            t1 = time.perf_counter()
            result = J.judge_run(spec.judge, ((recv, topic, msg) for recv, topic, _type, msg in sensors))
            t2 = time.perf_counter()
            records = B.in_receive_order(list(sensors) + B.judge_records(result)
                                         + streams.truth_records(spec.ground_truth_rate))
            t3 = time.perf_counter()
            W.write_run(out / f"replay{repeat}_{i}", records, info.with_outcome(result), spec.storage)
            t4 = time.perf_counter()
            for name, value in zip(("sensors", "judge", "bag_records", "bag_write"),
                                   (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                stages[name].append(value)
    runs = 1 + len(task.sims)
    out_stats = {name: statistics.median(values) for name, values in stages.items()}
    out_stats["runs_per_bag"] = runs
    return out_stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--storage", default="sqlite3", choices=("sqlite3", "mcap"))
    parser.add_argument("--repeats", type=int, default=5, help="profiled runs (median per stage)")
    parser.add_argument("--no-replay", action="store_true", help="skip the replay (demo path) profile")
    args = parser.parse_args()
    runs = study_runs(args.runs, args.storage)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # Warm-up (imports, config parsing, caches) so the batch measures steady-state runs.
        R.simulate_run(runs[0], tmp / "warm")
        profiles = [profile_one(runs[1 % len(runs)], tmp / f"profiled{i}") for i in range(args.repeats)]
        profile = {key: statistics.median(p[key] for p in profiles) for key in profiles[0]}
        replay = None if args.no_replay else profile_replay(tmp, max(1, args.repeats // 2))
        start = time.perf_counter()
        report = run_batch(runs, tmp / "batch", workers=args.workers, progress=False)
        wall = time.perf_counter() - start
        report.raise_on_failure()
    sim_seconds = sum(o.sim_seconds for o in report.outcomes)
    print(f"runs: {len(runs)}")
    print(f"workers: {args.workers}")
    print(f"runs_per_s: {len(runs) / wall:.3f}")
    print(f"sim_seconds_per_wall_second: {sim_seconds / wall:.1f}")
    print(f"mean_run_duration_s: {sim_seconds / len(runs):.1f}")
    for name in STAGES:
        print(f"per_run_{name}_ms: {profile[name] * 1e3:.1f}")
    variants = 5  # paper_gps.yaml: each (scenario, k) truth serves 5 GPS variants
    outside = (profile["models"] + profile["messages"] + profile["bag_write"]
               + (profile["truth"] + profile["truth_messages"]) / variants)
    print(f"per_run_outside_judge_ms: {outside * 1e3:.1f}")
    print(f"per_run_messages: {profile['messages_written']:.0f}")
    if replay is not None:
        print(f"replay_runs_per_bag: {replay['runs_per_bag']}")
        for name in ("read_real_bag", "sensors", "judge", "bag_records", "bag_write"):
            print(f"replay_{name}_ms: {replay[name] * 1e3:.1f}")
        outside = (replay["sensors"] + replay["bag_records"] + replay["bag_write"]
                   + replay["read_real_bag"] / replay["runs_per_bag"])
        print(f"replay_per_run_outside_judge_ms: {outside * 1e3:.1f}")


if __name__ == "__main__":
    main()
