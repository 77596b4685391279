"""Replay of a real bag: simulated IMU and/or GPS in place of the real streams, judged like the real one.

``BagReplay`` is the one replay unit (a batch task; the ``replay`` command and the demo run it): it
reads one real bag (read-only) once and makes the runs the paper compares (seed 003 §III-A):
- ``OUT/real/real/<scenario>/<k>/``: the real /fix and /imu, judged unmodified;
- ``OUT/sim/<variant>/<scenario>/<k>/`` per ``Replacement``: the same bag with the chosen streams
  replaced, where ``variant`` = ``sim_imu-<preset>`` (``sim_gps-<preset>_imu-<preset>`` with both
  replaced, or a chosen name).
Scenario and k of a bag follow ``runs.name_real_bag`` (``DIR/<scenario>/<run>/``) unless given.

Ground truth comes from the bag's INS topics (``truth.bag.truth_from_bag``).

**One time window for every run of a bag.**  The judge gets sensor messages only from the window where
the truth exists, ``window_ns = [start, end]`` (``truth_window_ns``: the header stamps whose time lies in
[truth.t[0], truth.t[-1]]), recorded in every run.yaml.  The real streams are cropped to it too (a real
IMU typically starts before the INS solution): otherwise the real run's estimate would start earlier
than its simulated counterparts', the scorer (time origin = the earliest stamp of estimate and truth)
would see the identical ground truth on a different time axis, and S_gt — hence D and W2 — would
differ between sides for no physical reason.

A replaced IMU is sampled **at the real IMU's header stamps** in the window (and keeps the real
messages' receive times), so the judge sees the same timing; the truth is never extrapolated.  It
publishes in the real IMU's frame (``ReplaySpec.imu_frame``), mounted by the judge's static TF to that
frame (identity for base_link), so it replaces the real IMU where that one sits.  A
replaced GPS is sampled at the real GPS stream's rate (ticks k·period on the data clock inside the
window) around the bag's datum.  Every other input stays real (cropped to the window).
Both runs also carry the same ``/ground_truth/odom`` from the INS truth.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..art import GPS_ODOMETRY_TOPIC, TOPICS
from ..bags import get_typestore, open_bag
from ..bags.columns import decode_messages
from ..bags.records import (
    DEFAULT_GROUND_TRUTH_RATE,
    gps_cdr_records,
    imu_cdr_records,
    in_receive_order,
    judge_records,
    magnetic_field_cdr_records,
)
from ..errors import UserError
from ..judge.config import (
    JudgeConfig,
    are_sensor_blocks,
    judge_parts,
    judge_run,
    load_gps,
    load_imu,
    sensor_block,
)
from ..judge.findings import check_divergence, imu_findings, model_imu_findings
from ..message_fields import ODOMETRY as ODOMETRY_FIELDS
from ..metrics.inputs import RunSpec, load_and_score, series_from_arrays
from ..metrics.options import ScoreOptions, resolve_speed
from ..metrics.per_run import score_run
from ..metrics.study import RunRecord
from ..models import sensor_seed
from ..noise_floor.compute import SEED_KEY, floor_record
from ..pipeline.batch import RunOutcome
from ..runs import (
    RunId,
    RunInfo,
    existing_run,
    read_run_info,
    remove_stale_temporaries,
)
from ..runs.timing import TimingModel
from ..runs.write import write_run
from ..truth.bag import truth_from_bag
from .health import (
    HealthInputs,
    assess,
    assess_streams,
    health_of_replay,
    imu_columns,
    imu_frame_rotation,
    odometry_outputs,
)
from .real_bag import (
    RealStreams,
    Replacement,
    ReplaySpec,
    check_frames,
    read_real_streams,
    real_imu_covariances,
)


def run_imu_findings(spec: ReplaySpec, streams: RealStreams, sim: Replacement | None = None) -> list:
    """The covariance lint (``judge.findings.imu_findings``) of the IMU a run judges: the replaced IMU
    model of ``sim``, else the bag's real IMU."""
    if sim is not None and "imu" in sim.replace:
        return model_imu_findings(spec.judge, sim.replace["imu"], frame=spec.imu_frame)
    found = []
    for frame, covariances in real_imu_covariances(streams):
        found += imu_findings(spec.judge, frame, covariances, f"{spec.bag} {spec.imu_topic}")
    return found


def simulated_imu(spec: ReplaySpec, sim: Replacement, streams: RealStreams) -> list:
    """The replacement IMU: sampled at the real header stamps (all inside the window), real receive times;
    with a magnetometer, also its /imu/mag (the judge does not read it; the run bag keeps it)."""
    # The records carry the CDR bytes (bags.messages.*_cdr, in bulk), as the real streams do.
    samples = simulated_imu_samples(spec, sim, streams)
    return imu_cdr_records(samples) + magnetic_field_cdr_records(samples)


def simulated_imu_samples(spec: ReplaySpec, sim: Replacement, streams: RealStreams):
    stamps = np.asarray(streams.imu_stamps_ns, dtype=np.int64)
    seed = sensor_seed(spec.seed, *spec.run_id(sim).seed_keys, "imu")
    model = load_imu(sim.replace["imu"], spec.judge, seed, frame=spec.imu_frame)
    samples = model.sample(streams.truth, stamps_ns=stamps)
    # Received when the real messages were: the judge sees the replaced stream with the real timing.
    return dataclasses.replace(samples, receive_ns=np.array([r[0] for r in streams.imu], dtype=np.int64))


def simulated_gps(spec: ReplaySpec, sim: Replacement, streams: RealStreams) -> list:
    return gps_cdr_records(simulated_gps_samples(spec, sim, streams))


def simulated_gps_samples(spec: ReplaySpec, sim: Replacement, streams: RealStreams):
    # Anchored at the real bag's datum and rate, so simulated fixes land where and when the real ones do.
    model = load_gps(sim.replace["gps"], sensor_seed(spec.seed, *spec.run_id(sim).seed_keys, "gps"),
                     datum=streams.datum, rate=streams.gps_rate)
    return model.sample(streams.truth)


def sensor_streams(spec: ReplaySpec, streams: RealStreams, sim: Replacement | None = None) -> list:
    """/fix + /imu of a run (in that order, any receive order): the real ones, or with the streams of
    ``sim`` replaced by simulated ones (+ /imu/mag of a replaced IMU with a magnetometer).  Every record
    is (recv_ns, topic, msgtype, CDR bytes): what the judge reads and the run bag stores."""
    if sim is None:
        return streams.gps + streams.imu
    imu = simulated_imu(spec, sim, streams) if "imu" in sim.replace else streams.imu
    gps = simulated_gps(spec, sim, streams) if "gps" in sim.replace else streams.gps
    return gps + imu


def sensor_blocks(spec: ReplaySpec, streams: RealStreams, sim: Replacement | None = None):
    """``sensor_streams`` for a run that writes no bag: [/fix, /imu] as ``judge.SensorBlock``, the values
    the judge would decode from those records without making the bytes (same result: the judge merges
    the blocks in receive order, ties in this order as ``in_receive_order`` keeps them); None when a
    real stream does not decode in bulk (then use ``sensor_streams``)."""
    replace = {} if sim is None else sim.replace
    gps = (sensor_block(simulated_gps_samples(spec, sim, streams)) if "gps" in replace
           else streams.block("gps"))
    imu = (sensor_block(simulated_imu_samples(spec, sim, streams)) if "imu" in replace
           else streams.block("imu"))
    return None if gps is None or imu is None else [gps, imu]


def judge_sensors(spec: ReplaySpec, sensors: list, where: str, streams: RealStreams,
                  sim: Replacement | None = None):
    """The judge's run on ``sensors`` (records (recv_ns, topic, msgtype, message) in any order; the
    message as CDR bytes, as the replay's own streams carry it, or an object; or ``sensor_blocks``),
    started from ``spec.start_state``, checked: a run that lost a whole sensor (e.g. a "real" run judged
    without GPS) or diverged (``check_divergence``) is refused, naming ``where``."""
    messages = sensors if are_sensor_blocks(sensors) else in_receive_order(sensors)
    result = judge_run(spec.judge, messages, spec.timing, spec.start_state(streams))
    result.check_sensors(where)
    check_divergence(result, streams.truth, where, lambda: run_imu_findings(spec, streams, sim))
    return result


def judge_and_write(spec: ReplaySpec, path: Path, info: RunInfo, sensors: list,
                    streams: RealStreams, sim: Replacement | None = None) -> tuple:
    """Judge ``sensors`` (records in any order, as for ``judge_sensors``) and write the run: sensor
    messages + the judge's outputs + the bag's ``/ground_truth/odom``, ``info`` as run.yaml (CDR bytes
    are written as they are, objects serialised).  A run that lost a sensor or diverged is an error and
    is not written (``judge_sensors``).  Returns (RunOutcome, JudgeResult)."""
    bag_sensors = in_receive_order(sensors)  # CDR bytes: decoded in bulk by the judge
    result = judge_sensors(spec, bag_sensors, str(path), streams, sim)
    truth = streams.truth_records(spec.ground_truth_rate)
    records = in_receive_order(bag_sensors + judge_records(result) + truth)
    counts = write_run(path, records, info.with_outcome(result), spec.storage)
    return RunOutcome(info.run.label, str(path), False, counts, streams.truth.duration), result


def estimate_series(spec: ReplaySpec, streams: RealStreams, options, estimate, run: RunId | None = None,
                    source: str | None = None):
    """``metrics.inputs.RunSeries`` of an estimate (``judge.OdometrySeries``: stamp_ns, linear_velocity,
    orientation) of this bag, exactly as the scorer reads the run's bag (``metrics.inputs``): the bag's
    /ground_truth/odom records decoded, the estimate's values (a bag stores these float64s as they
    are), the bag's window.  ``run``: the run it is (default: the real run)."""
    run = run or spec.run_id()
    spec_run = RunSpec(run.side, run.variant, spec.scenario, spec.k, source or spec.bag, "bag",
                       TOPICS["estimate"], TOPICS["ground_truth"],
                       resolve_speed(options.speed, run.side, "speed"), tuple(streams.window_ns))
    columns = ("stamp_ns", "linear_velocity", "orientation")
    decoded = streams.decoded_truth(spec.ground_truth_rate, columns)
    if decoded is None:
        decoded = decode_messages(get_typestore(), ODOMETRY_FIELDS,
                                  [r[3] for r in streams.truth_records(spec.ground_truth_rate)], columns)
        streams.keep_decoded_truth(spec.ground_truth_rate, columns, decoded)
    return series_from_arrays(spec_run, {
        spec_run.estimate_topic: (estimate.stamp_ns, estimate.linear_velocity, estimate.orientation),
        spec_run.truth_topic: tuple(decoded[name] for name in columns)})


def estimate_score(spec: ReplaySpec, streams: RealStreams, options, estimate, name: str):
    """RunScore of an estimate of this bag, scored exactly as the scorer scores the bag's real run
    (``estimate_series``)."""
    series = estimate_series(spec, streams, options, estimate)
    return score_run(name, series.t_est, series.v_est, series.t_gt, series.v_gt, options, series.timeline_end)


def judged_scores(spec: ReplaySpec, streams: RealStreams, options, timings) -> list:
    """The bag's real /fix + /imu judged once per ``timings`` (``runs.timing.RunTiming``), each scored
    as the scorer scores the real run's bag (``estimate_score``) → [RunScore]."""
    sensors = sensor_blocks(spec, streams) or in_receive_order(streams.gps + streams.imu)
    start = spec.start_state(streams)
    scores = []
    for timing in timings:
        result = judge_run(spec.judge, sensors, timing, start)
        check_divergence(result, streams.truth, f"{spec.bag} (judged with timing {tuple(timing)})",
                         lambda: run_imu_findings(spec, streams))
        scores.append(estimate_score(spec, streams, options, result.filtered,
                                     f"{spec.bag} (judged with timing {tuple(timing)})"))
    return scores


def noise_floor_scores(spec: ReplaySpec, streams: RealStreams, options, draws: int) -> tuple:
    """The judge-noise floor's judgements of this bag (``noise_floor.compute``): its real run judged with
    ``draws`` independent random timings, draw d seeded (seed, "timing", scenario, k, "noise-floor", d)
    → ((draw, RunRecord), ...)."""
    periods = spec.judge.periods()
    timings = [TimingModel("random").run_timing(periods, spec.seed, spec.scenario, spec.k, SEED_KEY, draw)
               for draw in range(draws)]
    scores = judged_scores(spec, streams, options, timings)
    return tuple((draw, floor_record(spec.scenario, spec.k, f"{spec.bag} (noise floor, timing draw {draw})",
                                     score)) for draw, score in enumerate(scores))


@dataclass(frozen=True)
class ScoredRun:
    """A run scored where it was judged (``BagReplay`` with ``scoring``): its ``metrics.RunRecord``, its
    ``metrics.inputs.RunSeries`` (the report's traces) and its run.yaml as a dict (the report's
    provenance) — what the scorer would have read back from the run bag, without the bag."""

    record: Any
    series: Any
    info: dict


@dataclass(frozen=True)
class BagReplay:
    """The one replay unit: every run made from one real bag — its real run (``real``) and one
    simulated run per ``Replacement`` — judged on the same window from one reading of the bag.

    A batch task (``pipeline.batch``).  Resume happens per run inside ``execute`` (each run directory
    against its run.yaml, all checked before any is written, so a refused run leaves OUT as it was),
    because the records need the bag's window and datum, known only after reading it; the runner's
    own check looks at ``directory(out)``, which is never created.

    ``scoring`` (``metrics.ScoreOptions``): every run is also scored where it is judged, from the judged
    series in memory (``ScoredRun`` in ``RunOutcome.scored``; a run found complete is scored from its
    bag): the same numbers as scoring the bags (``estimate_series``).  ``write`` False: no run bag is
    written and none is looked for (the demo without ``--keep-runs``).  ``floor_draws`` > 0 (needs
    ``scoring``): the judge-noise floor's judgements of the real streams (``noise_floor_scores``).
    """

    spec: ReplaySpec
    sims: tuple = ()  # Replacement
    real: bool = True
    scoring: Any = None  # metrics.ScoreOptions: score each run in memory
    write: bool = True
    floor_draws: int = 0
    default_static_tfs: bool = False  # spec.judge.static_tfs: the bag's default (bags.layout)
    real_imu: Any = None  # (frame, {part: covariance}) of the bag's first IMU message: linted before any run
    # (service.announce_replays)

    @property
    def label(self) -> str:
        return f"{self.spec.scenario}/{self.spec.k}"

    @property
    def writes(self) -> bool:
        """Whether this task writes anything below OUT (``pipeline.batch``)."""
        return self.write and (self.real or bool(self.sims))

    def directory(self, out) -> Path:
        return Path(out) / ".groups" / self.label.replace("/", "_")

    def record(self) -> dict:
        return {"group": self.label}

    def execute(self, out) -> RunOutcome:
        """Write (or find complete) every run of the bag; the outcome lists each run's in ``runs``."""
        if self.floor_draws and self.scoring is None:
            raise ValueError("BagReplay: floor_draws needs scoring options")
        streams = read_real_streams(self.spec)
        check_frames(self.spec, streams)
        todo = ([None] if self.real else []) + list(self.sims)
        planned = [(sim, self.spec.run_id(sim).directory(out), self.spec.run_info(streams, sim))
                   for sim in todo]
        complete = [self.write and existing_run(path, info) for _sim, path, info in planned]
        outcomes, scored = [], []
        for (sim, path, info), done in zip(planned, complete):
            if done:
                outcomes.append(RunOutcome(info.run.label, str(path), True, {}))
                if self.scoring is not None:
                    scored.append(self._score_bag(path, info))
                continue
            if self.write:
                remove_stale_temporaries(path)
                sensors = sensor_streams(self.spec, streams, sim)
                outcome, result = judge_and_write(self.spec, path, info, sensors, streams, sim)
            else:
                sensors = sensor_blocks(self.spec, streams, sim) or sensor_streams(self.spec, streams, sim)
                result = judge_sensors(self.spec, sensors, str(path), streams, sim)
                outcome = RunOutcome(info.run.label, str(path), False, {}, streams.truth.duration)
            source = str(path) if self.write else f"{self.spec.bag} [{info.run.label}, not written]"
            if self.scoring is not None:
                series = estimate_series(self.spec, streams, self.scoring, result.filtered, info.run, source)
                record = _record(series, self.scoring)
                if sim is None:  # the real run: does the judge track the real vehicle? (replay.health)
                    record = dataclasses.replace(record, health=_health(self.spec, streams, result, series,
                                                                        record, self.scoring))
                    outcome = dataclasses.replace(outcome, health=record.health)
                scored.append(ScoredRun(record, series, info.with_outcome(result).to_dict()))
            elif sim is None:  # the replay command: the real run's health with the default scoring
                options = _default_scoring(self.spec)
                series = estimate_series(self.spec, streams, options, result.filtered, info.run, source)
                record = _record(series, options)
                outcome = dataclasses.replace(outcome, health=_health(self.spec, streams, result, series,
                                                                      record, options))
            outcomes.append(outcome)
        counts: dict = {}
        for outcome in outcomes:
            for topic, count in outcome.messages.items():
                counts[topic] = counts.get(topic, 0) + count
        written = [o for o in outcomes if not o.skipped]
        floor = () if not self.floor_draws else noise_floor_scores(self.spec, streams, self.scoring,
                                                                   self.floor_draws)
        return RunOutcome(self.label, str(self.spec.run_id().directory(out)), not written, counts,
                          sum(o.sim_seconds for o in written), tuple(outcomes), floor, tuple(scored))

    def _score_bag(self, path: Path, info: RunInfo) -> ScoredRun:
        """A complete run found in OUT (resume), scored from its bag as ``sim2real-eval score`` does."""
        run = info.run
        speed = resolve_speed(self.scoring.speed, run.side, f"{path}: speed")
        spec = RunSpec(run.side, run.variant, run.scenario, run.k, str(path), "bag", info.topic("estimate"),
                       info.topic("ground_truth"), speed,
                       None if info.window_ns is None else tuple(int(v) for v in info.window_ns))
        record, series = load_and_score(spec, self.scoring)
        if record is None:
            raise UserError(series)
        stored = read_run_info(path, run)
        if run.side == "real":
            record = dataclasses.replace(record, health=health_of_run_bag(path, stored, series, record.score,
                                                                          self.scoring))
        return ScoredRun(record, series, stored.to_dict())


def replay_spec_of_run(info, scenario: str, k: int):
    """The ``ReplaySpec`` a real run's run.yaml describes (its real bag, judge files and TFs, truth source,
    topics), or None when it names no real bag or judge files that exist here: what ``score`` judges
    again (the noise floor) and reads the judge health from."""
    judge = info.judge or {}
    files = [info.source, judge.get("ekf"), judge.get("navsat")]
    if info.window_ns is None or not all(f and Path(str(f)).exists() for f in files):
        return None
    topics = info.input_topics or {}
    start = "truth" if (info.initial_state or {}).get("source") == "truth" else "config"
    return ReplaySpec(bag=str(info.source), judge=JudgeConfig(str(judge["ekf"]), str(judge["navsat"]),
                                                              tuple(judge.get("static_tfs") or ()),
                                                              initial_state=start),
                      scenario=scenario, k=k, seed=info.seed or 0,
                      ground_truth_rate=info.ground_truth_rate or DEFAULT_GROUND_TRUTH_RATE,
                      truth_source=info.ground_truth_source or "auto",
                      imu_topic=topics.get("imu", "/imu"), gps_topic=topics.get("gps", "/fix"))


def health_of_run_bag(path, info, series, score, options) -> dict:
    """The health of a real run read back from its bag (``score``).  A replayed run (its run.yaml names
    the real bag and judge files, and they exist): the real bag's sensors, truth and datum read as the
    replay reads them and the judge's outputs from the run bag — the numbers the replay gave.  Otherwise
    (a ROS recording away from its bag, moved files): what the run bag holds — the judge's outputs, /imu
    and the /ground_truth/odom truth, with the judge files' parameters and TFs when they exist (the NIS,
    gravity, bias and mount need them); the GPS lag (it needs the real bag's datum) is not measured."""
    estimate = info.topic("estimate")
    spec = replay_spec_of_run(info, series.spec.scenario, series.spec.k)
    with open_bag(path) as reader:
        outputs = odometry_outputs(reader, (estimate, GPS_ODOMETRY_TOPIC))
        if spec is None:
            imu_records = list(reader.raw_messages(topics=["/imu"])) if "/imu" in reader.topics else []
            truth_topic = info.topic("ground_truth")
            truth = truth_from_bag(reader, source="odometry", topics={"odometry": truth_topic})[0] \
                if truth_topic in reader.topics else None
    if spec is not None:
        return assess_streams(spec, read_real_streams(spec), outputs.get(estimate),
                               outputs.get(GPS_ODOMETRY_TOPIC), series, score, options)
    files = info.judge or {}
    exist = all(files.get(key) and Path(str(files[key])).is_file() for key in ("ekf", "navsat"))
    judge = (JudgeConfig(str(files["ekf"]), str(files["navsat"]), tuple(files.get("static_tfs") or ()))
             if exist else None)
    ekf = None if judge is None else judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))[0]
    inputs = HealthInputs(series.t_est, series.v_est, series.t_gt, series.v_gt, series.timeline_end,
                          score.rmse, options, truth=truth, filtered=outputs.get(estimate),
                          gps_odometry=outputs.get(GPS_ODOMETRY_TOPIC), imu=imu_columns(imu_records),
                          imu_rotation=None if judge is None else imu_frame_rotation(imu_records, judge),
                          ekf=ekf)
    return assess(inputs)


def _health(spec: ReplaySpec, streams: RealStreams, result, series, record, options) -> dict:
    return health_of_replay(spec, streams, result, series, record.score, options)


def _default_scoring(spec: ReplaySpec):
    """The scorer's default options with the judge's warm-up: how ``score`` will score the run."""
    return ScoreOptions(warmup_s=float(spec.judge.warmup_s or 0.0))


def _record(series, options):
    """The ``metrics.RunRecord`` of a run's series, scored as ``metrics.inputs.load_and_score`` does."""
    spec = series.spec
    score = score_run(spec.source, series.t_est, series.v_est, series.t_gt, series.v_gt, options,
                      series.timeline_end)
    return RunRecord(spec.side, spec.variant, spec.scenario, spec.k, spec.source, score)
