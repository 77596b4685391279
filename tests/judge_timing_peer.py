"""The real robot_localization's timer timing, measured on the shipped real runs (issue 12).

Reads ``../shared/peer/robot_localization_ros1`` (ROS 1 noetic: 4 runs at play rate 1 and one at 0.25
per scenario) and ``../shared/peer/robot_localization_humble`` (Humble through evaluate.launch.py, rate
1): what the real ekf_node and navsat_transform_node published on the reference runs ``run_00``, with
each message's header stamp and receive time, plus the input bags (/fix, /imu) they were fed.

What a timer tick did is visible twice in those files:

- **receive times** (``recv``) of its output: the tick executed at about that time (the recorder's
  clock: a few ms late, and on ROS 1 its own sim clock lags by up to ~10 ms at rate 1);
- **header stamps** of its output, exact data-clock facts: ekf_node publishes with the stamp of the
  last measurement it integrated (predict_to_current_time is off), so an output stamped with IMU
  message j means the tick ran after IMU j was received and before IMU j + 1 was; navsat publishes
  /odometry/gps with the stamp of the fix it used, so it ran after that fix arrived and before the
  next; and a fix that never appears was overwritten (two fixes between ticks): no tick ran between
  its arrival and the next fix's.

From them, per run and timer (period P: the judge's, round(1e9 / frequency)):

- ``exec_phase``: where in its period the timer's ticks executed — the circular median of the
  output receive times mod P.  This is the judge's phase that reproduces the run (ROS integrates
  every measurement stamped up to the execution time ``now()``, so execution time is what counts);
- ``stamp_plateau``: the phases a judge timer (latency 0) can have and integrate exactly the inputs
  the real ticks integrated (the longest arc of phases that explains the largest fraction of outputs,
  ``stamp_consistency``).  The EKF's is 2-10 ms wide; navsat's is the whole period outside the
  35-55 ms in which fixes arrive unless fixes were lost, then a fraction of a ms;
- ``nominal_phase`` and ``latency``: the timer's grid k·P + nominal_phase is the lower envelope of the
  execution times (the start of the largest gap in their residues mod P: the earliest ticks ran on
  time), and a tick's latency is its execution time minus its nominal time.

Run ``python tests/judge_timing_peer.py`` for the tables and the latency fit (docs/judge.md, "Timing").
``tests/test_judge_timing_peer.py`` checks the model's constants against this analysis.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
ROS1 = SHARED_DIR / "peer" / "robot_localization_ros1"
HUMBLE = SHARED_DIR / "peer" / "robot_localization_humble"
SCENARIOS = ("line", "sine", "circle")
EKF_FREQUENCY, NAVSAT_FREQUENCY = 35.0, 10.0  # config/ekf_art_iros2024.yaml, navsat_art_iros2024.yaml
FILTERED, GPS_ODOMETRY = "/odometry/filtered", "/odometry/gps"


def period_ns(frequency: float) -> int:
    return int(round(1e9 / frequency))


def available() -> bool:
    return ROS1.is_dir() and all((ROS1 / f"{s}_run_00_input.bag.gz").is_file() for s in SCENARIOS)


def real_runs() -> list:
    """(source, scenario, run name, csv path) of every shipped real run."""
    runs = []
    for source, folder in (("ros1", ROS1), ("humble", HUMBLE)):
        for path in sorted(folder.glob("*_run_00_*.csv.gz")) if folder.is_dir() else []:
            name = path.name[:-len(".csv.gz")]
            scenario = name.split("_")[0]
            if scenario in SCENARIOS:
                runs.append((source, scenario, name, path))
    return runs


def read_outputs(path) -> dict:
    """{topic: (stamp_ns, recv_ns)} int64 arrays in file order."""
    rows: dict = {}
    with gzip.open(path, "rt", newline="") as stream:
        for row in csv.DictReader(stream):
            rows.setdefault(row["topic"], []).append((int(row["stamp_ns"]), int(row["recv_ns"])))
    return {topic: tuple(np.array(column, dtype=np.int64) for column in zip(*values))
            for topic, values in rows.items()}


@lru_cache(maxsize=None)
def read_inputs(scenario: str) -> dict:
    """{"/imu" | "/fix": (stamp_ns, recv_ns)} of the input bag the real runs were fed (stamp order)."""
    from sim2real_eval.bags import open_bag
    from sim2real_eval.stamps import header_ns

    with tempfile.TemporaryDirectory() as tmp:
        bag = Path(tmp) / f"{scenario}.bag"
        with gzip.open(ROS1 / f"{scenario}_run_00_input.bag.gz", "rb") as src, open(bag, "wb") as dst:
            shutil.copyfileobj(src, dst)
        columns: dict = {"/imu": [], "/fix": []}
        with open_bag(bag) as reader:
            for message in reader.messages(["/imu", "/fix"]):
                columns[message.topic].append((header_ns(message.msg), message.recv_ns))
    out = {}
    for topic, values in columns.items():
        stamps, recv = (np.array(c, dtype=np.int64) for c in zip(*values))
        order = np.argsort(stamps, kind="stable")
        out[topic] = (stamps[order], recv[order])
    return out


# ------------------------------------------------------------------------------ circular statistics
def largest_gap_start(residues: np.ndarray, period: int) -> int:
    """The residue right after the largest circular gap between sorted residues: where a band of
    residues on the circle [0, period) begins."""
    ordered = np.sort(np.asarray(residues, dtype=np.int64) % period)
    gaps = np.diff(np.concatenate([ordered, ordered[:1] + period]))
    return int(ordered[(int(np.argmax(gaps)) + 1) % len(ordered)])


def unwrap_from(residues: np.ndarray, start: int, period: int) -> np.ndarray:
    """Residues as offsets in [0, period) from ``start``."""
    return (np.asarray(residues, dtype=np.int64) - start) % period


def circular_median(values: np.ndarray, period: int) -> int:
    """Median of values on the circle mod ``period``, cut at the largest gap."""
    start = largest_gap_start(values, period)
    return int((start + int(np.median(unwrap_from(values, start, period)))) % period)


# ------------------------------------------------------------------------------------ stamp facts
def tick_intervals(out_stamps: np.ndarray, inputs: tuple) -> tuple:
    """For outputs stamped with an input message's stamp: [receive time of that input, receive time of
    the next input) — when the tick that published it ran.  Outputs with other stamps are left out."""
    stamps, recv = inputs
    j = np.searchsorted(stamps, out_stamps)
    inside = j < len(stamps) - 1
    j = j[inside]
    j = j[stamps[j] == out_stamps[inside]]
    return recv[j], recv[j + 1]


def skipped_intervals(used_stamps: np.ndarray, inputs: tuple) -> tuple:
    """[receive time of a fix never used, receive time of the next fix): no tick ran in there."""
    stamps, recv = inputs
    first, last = np.searchsorted(stamps, used_stamps[0]), np.searchsorted(stamps, used_stamps[-1])
    candidates = np.arange(first, last)
    skipped = candidates[~np.isin(stamps[candidates], used_stamps)]
    return recv[skipped], recv[skipped + 1], len(skipped)


def explained(phases: np.ndarray, period: int, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """(len(phases),) counts of intervals [start, end) that contain a tick k·period + phase."""
    if len(start) == 0:
        return np.zeros(len(phases))
    width = (end - start)[:, None]
    return ((phases[None, :] - start[:, None]) % period < width).sum(axis=0)


def stamp_plateau(period: int, contains: tuple, excludes: tuple = ((), ()), step: int = 100_000) -> tuple:
    """(centre, width, fraction): the phases (latency 0) that explain the most stamp facts — intervals
    that must contain a tick and intervals that must not — as the centre and width of the longest
    arc of best phases, and the fraction of facts they explain."""
    phases = np.arange(0, period, step, dtype=np.int64)
    total = len(contains[0]) + len(excludes[0])
    score = explained(phases, period, np.asarray(contains[0]), np.asarray(contains[1]))
    missed = explained(phases, period, np.asarray(excludes[0]), np.asarray(excludes[1]))
    score = score + len(excludes[0]) - missed
    best = score == score.max()
    # Longest circular run of best phases.
    doubled = np.concatenate([best, best])
    run_start, run_length, current = 0, 0, 0
    for i, flag in enumerate(doubled):
        current = current + 1 if flag else 0
        if current > run_length:
            run_length, run_start = min(current, len(best)), i - current + 1
    centre = (phases[run_start % len(phases)] + (run_length - 1) * step // 2) % period
    return int(centre), int(run_length * step), float(score.max() / total)


# ------------------------------------------------------------------------------------- per run
@dataclass
class TimerFacts:
    exec_phase_ms: float        # circular median of the output receive times mod P
    nominal_phase_ms: float     # lower envelope of the execution times (start of the largest gap)
    stamp_plateau_ms: float     # centre of the phases that explain the output stamps (latency 0)
    stamp_plateau_width_ms: float
    stamp_consistency: float    # fraction of stamp facts the plateau explains
    latency_ms: list            # per tick: execution (receive) time − nominal tick time


@dataclass
class RunFacts:
    source: str
    scenario: str
    run: str
    filtered: int
    gps_odometry: int
    fixes_lost: int
    gps_loss: float             # lost / (used + lost) between the first and last fix used
    ekf: TimerFacts
    navsat: TimerFacts


def timer_facts(recv: np.ndarray, period: int, contains: tuple, excludes: tuple = ((), ())) -> TimerFacts:
    nominal = largest_gap_start(recv, period)
    centre, width, fraction = stamp_plateau(period, contains, excludes)
    latency = unwrap_from(recv, nominal, period) * 1e-6
    return TimerFacts(circular_median(recv, period) * 1e-6, nominal * 1e-6, centre * 1e-6, width * 1e-6,
                      fraction, latency.tolist())


def run_facts(source: str, scenario: str, name: str, path) -> RunFacts:
    outputs, inputs = read_outputs(path), read_inputs(scenario)
    filtered_stamps, filtered_recv = outputs[FILTERED]
    gps_stamps, gps_recv = outputs[GPS_ODOMETRY]
    ekf = timer_facts(filtered_recv, period_ns(EKF_FREQUENCY),
                      tick_intervals(filtered_stamps, inputs["/imu"]))
    lost_start, lost_end, lost = skipped_intervals(gps_stamps, inputs["/fix"])
    navsat = timer_facts(gps_recv, period_ns(NAVSAT_FREQUENCY), tick_intervals(gps_stamps, inputs["/fix"]),
                         (lost_start, lost_end))
    return RunFacts(source, scenario, name, len(filtered_stamps), len(gps_stamps), lost,
                    lost / (len(gps_stamps) + lost), ekf, navsat)


@lru_cache(maxsize=1)
def all_facts() -> tuple:
    return tuple(run_facts(*run) for run in real_runs())


# ------------------------------------------------------------------------------------ latency fit
@dataclass
class LatencyFit:
    group: str
    ticks: int
    runs: int
    median_ms: float
    p95_ms: float
    uniform_high_ms: float      # U(0, high): high = the 99.5th percentile / 0.995 (robust to stragglers)
    ks_uniform: float           # Kolmogorov-Smirnov distance to U(0, high)
    ks_exponential: float       # ... to the exponential of the same mean
    ks_gamma: float             # ... to a gamma fitted by maximum likelihood (location 0)


def fit_latency(group: str, facts) -> LatencyFit:
    from scipy import stats

    values = np.concatenate([np.asarray(f.ekf.latency_ms) for f in facts])
    high = float(np.percentile(values, 99.5) / 0.995)
    shape, _, scale = stats.gamma.fit(values[values > 0], floc=0)
    return LatencyFit(
        group, len(values), len(facts), float(np.median(values)), float(np.percentile(values, 95)), high,
        float(stats.kstest(values, "uniform", args=(0, high)).statistic),
        float(stats.kstest(values, "expon", args=(0, values.mean())).statistic),
        float(stats.kstest(values, "gamma", args=(shape, 0, scale)).statistic))


def latency_fits(facts) -> list:
    groups = {
        "humble (evaluate.launch.py, rate 1)": [f for f in facts if f.source == "humble"],
        "ros1 rate 1": [f for f in facts if f.source == "ros1" and "realtime" in f.run],
        "ros1 rate 0.25": [f for f in facts if f.source == "ros1" and "quarter" in f.run],
    }
    return [fit_latency(name, members) for name, members in groups.items() if members]


# ------------------------------------------------------------------------------ the embedded judge
# The acceptance of issue 12: the embedded judge with the timing model against the real runs, every run
# scored the same way (the scorer on the reference bag's window, its INS truth).
REFERENCE = Path(__file__).resolve().parents[1] / "bags" / "reference"
QUARTER = "quarter_speed"


@lru_cache(maxsize=None)
def bag_streams(scenario: str):
    """(ReplaySpec, RealStreams) of the reference run the real runs were fed (run_00: its INS truth and
    window), and the uncropped /fix + /imu of the input bag (ROS got all of them)."""
    from sim2real_eval.bags import open_bag
    from sim2real_eval.judge.config import JudgeConfig
    from sim2real_eval.replay.real_bag import ReplaySpec, read_real_streams
    from sim2real_eval.resources import config_path

    judge = JudgeConfig(str(config_path("ekf_art_iros2024.yaml")),
                        str(config_path("navsat_art_iros2024.yaml")))
    spec = ReplaySpec(str(REFERENCE / scenario / "run_00"), judge, scenario)
    with open_bag(spec.bag) as reader:
        sensors = [(m.recv_ns, m.topic, m.msg) for m in reader.messages(["/fix", "/imu"])]
    return spec, read_real_streams(spec), sensors


class Estimate:
    """An /odometry/filtered series as the scorer needs it (stamps, velocities, orientations)."""

    def __init__(self, stamp_ns, linear_velocity):
        self.stamp_ns = np.asarray(stamp_ns, dtype=np.int64)
        self.linear_velocity = np.asarray(linear_velocity, dtype=float)
        self.orientation = np.tile([0.0, 0.0, 0.0, 1.0], (len(self.stamp_ns), 1))


def real_estimate(path) -> Estimate:
    stamps, velocity = [], []
    with gzip.open(path, "rt", newline="") as stream:
        for row in csv.DictReader(stream):
            if row["topic"] == FILTERED:
                stamps.append(int(row["stamp_ns"]))
                velocity.append((float(row["vx"]), float(row["vy"]), float(row["vz"])))
    return Estimate(stamps, velocity)


@dataclass
class Judged:
    E: float
    S_est: float
    gps_odometry: int
    speed: tuple  # (stamp_ns, horizontal speed)


def judged(scenario: str, timing) -> Judged:
    """The embedded judge on the input the real runs got, with ``timing`` (runs.timing.RunTiming)."""
    from sim2real_eval.judge.config import judge_run
    from sim2real_eval.metrics import ScoreOptions
    from sim2real_eval.replay.offline import estimate_score

    spec, streams, sensors = bag_streams(scenario)
    result = judge_run(spec.judge, sensors, timing)
    score = estimate_score(spec, streams, ScoreOptions(), result.filtered, f"{scenario} judged")
    v = result.filtered.linear_velocity
    return Judged(score.rmse, score.S_est, len(result.gps_odometry.stamp_ns),
                  (result.filtered.stamp_ns, np.hypot(v[:, 0], v[:, 1])))


def real_scored(scenario: str, path) -> Judged:
    from sim2real_eval.metrics import ScoreOptions
    from sim2real_eval.replay.offline import estimate_score

    spec, streams, _sensors = bag_streams(scenario)
    estimate = real_estimate(path)
    score = estimate_score(spec, streams, ScoreOptions(), estimate, str(path))
    v = estimate.linear_velocity
    return Judged(score.rmse, score.S_est, len(read_outputs(path)[GPS_ODOMETRY][0]),
                  (estimate.stamp_ns, np.hypot(v[:, 0], v[:, 1])))


def speed_rms(judge: Judged, real: Judged) -> float:
    """RMS of the judge's horizontal speed (interpolated) minus the real run's, at the real run's stamps
    inside both series."""
    (tj, vj), (tr, vr) = judge.speed, real.speed
    inside = (tr >= max(tj[0], tr[0])) & (tr <= min(tj[-1], tr[-1]))
    return float(np.sqrt(np.mean((np.interp(tr[inside], tj, vj) - vr[inside]) ** 2)))


def quarter_speed_timing(facts):
    """The quarter-speed run's timing as the model's fixed values: each timer's execution phase (where
    ROS ran its ticks), latency 0 — ROS integrates up to the execution time, so that is the phase."""
    from sim2real_eval.runs.timing import RunTiming

    return RunTiming(int(round(facts.ekf.exec_phase_ms * 1e6)), int(round(facts.navsat.exec_phase_ms * 1e6)),
                     0)


def acceptance_fixed(scenario: str) -> dict:
    facts = next(f for f in all_facts() if f.run == f"{scenario}_run_00_{QUARTER}")
    timing = quarter_speed_timing(facts)
    real = real_scored(scenario, ROS1 / f"{facts.run}.csv.gz")
    ours = judged(scenario, timing)
    return {"scenario": scenario, "timing": timing, "speed_rms": speed_rms(ours, real),
            "E_error": ours.E / real.E - 1, "S_est_error": ours.S_est / real.S_est - 1,
            "gps_odometry": (ours.gps_odometry, real.gps_odometry)}


def acceptance_random(scenario: str, seeds: int) -> dict:
    from sim2real_eval.runs.timing import TimingModel

    spec, _streams, _sensors = bag_streams(scenario)
    periods = spec.judge.periods()
    model = TimingModel("random")
    ours = [judged(scenario, model.run_timing(periods, seed, scenario, 0)) for seed in range(seeds)]
    real = [real_scored(scenario, path) for _source, name, _run, path in real_runs() if name == scenario]
    return {"scenario": scenario, "seeds": seeds, "E": [j.E for j in ours], "real_E": [j.E for j in real],
            "gps": [j.gps_odometry for j in ours], "real_gps": [j.gps_odometry for j in real]}


def _acceptance(seeds: int) -> None:
    print("| scenario | quarter-speed timing (EKF, navsat ms) | speed RMS m/s | E error | S_est error | "
          "/odometry/gps judge / real |")
    print("|---|---|---|---|---|---|")
    for scenario in SCENARIOS:
        a = acceptance_fixed(scenario)
        t = a["timing"]
        print(f"| {scenario} | {t.ekf_phase_ns / 1e6:.1f}, {t.navsat_phase_ns / 1e6:.1f} | "
              f"{a['speed_rms']:.4f} | {100 * a['E_error']:+.1f} % | {100 * a['S_est_error']:+.1f} % | "
              f"{a['gps_odometry'][0]} / {a['gps_odometry'][1]} |")
    print()
    print(f"| scenario | real E range | random E range ({seeds} seeds) | real /odometry/gps range | "
          "random range | random draws losing >= 15 % of /odometry/gps |")
    print("|---|---|---|---|---|---|")
    for scenario in SCENARIOS:
        r = acceptance_random(scenario, seeds)
        lost = sum(1 for g in r["gps"] if g < 0.85 * max(r["gps"]))
        print(f"| {scenario} | {min(r['real_E']):.4f}–{max(r['real_E']):.4f} | "
              f"{min(r['E']):.4f}–{max(r['E']):.4f} | {min(r['real_gps'])}–{max(r['real_gps'])} | "
              f"{min(r['gps'])}–{max(r['gps'])} | {lost} |")


# ------------------------------------------------------------------------------------------ main
def _table(facts) -> str:
    lines = ["| run | /odometry/gps | fixes lost | EKF exec phase | EKF stamp plateau (consistency) | "
             "navsat exec phase | navsat stamp plateau (consistency) | EKF latency median / p95 |",
             "|---|---|---|---|---|---|---|---|"]
    for f in facts:
        e, n = f.ekf, f.navsat
        lines.append(
            f"| {f.run} | {f.gps_odometry} | {f.fixes_lost} ({100 * f.gps_loss:.0f} %) | "
            f"{e.exec_phase_ms:.1f} | "
            f"{e.stamp_plateau_ms:.1f} ± {e.stamp_plateau_width_ms / 2:.1f} ({e.stamp_consistency:.2f}) | "
            f"{n.exec_phase_ms:.1f} | {n.stamp_plateau_ms:.1f} ± {n.stamp_plateau_width_ms / 2:.1f} "
            f"({n.stamp_consistency:.2f}) | {np.median(e.latency_ms):.1f} / "
            f"{np.percentile(e.latency_ms, 95):.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="OUT", help="also write every number (per-tick latencies too)")
    parser.add_argument("--acceptance", type=int, metavar="SEEDS", default=0,
                        help="also run the embedded judge: the quarter-speed runs' timing (fixed) and SEEDS "
                             "random draws per scenario, against the real runs")
    args = parser.parse_args(argv)
    if not available():
        print(f"peer data not found in {ROS1}: nothing to analyse")
        return 0
    facts = all_facts()
    print(_table(facts))
    print()
    print("| latency group | runs | ticks | median ms | p95 ms | U(0, high): high ms | KS uniform | "
          "KS exponential | KS gamma |")
    print("|---|---|---|---|---|---|---|---|---|")
    fits = latency_fits(facts)
    for fit in fits:
        print(f"| {fit.group} | {fit.runs} | {fit.ticks} | {fit.median_ms:.1f} | {fit.p95_ms:.1f} | "
              f"{fit.uniform_high_ms:.1f} | {fit.ks_uniform:.3f} | {fit.ks_exponential:.3f} | "
              f"{fit.ks_gamma:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": [asdict(f) for f in facts],
                                               "latency": [asdict(f) for f in fits]}) + "\n")
    if args.acceptance:
        print()
        _acceptance(args.acceptance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
