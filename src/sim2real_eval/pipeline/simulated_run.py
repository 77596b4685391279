"""One run: ground truth → simulated GPS + IMU → the embedded judge → one recorded bag.

A run directory ``OUT/<side>/<variant>/<scenario>/<k>/`` *is* a rosbag2 directory with ``run.yaml``
inside; its name, record and resume rule are ``sim2real_eval.runs``'s.  It appears in one atomic
rename, so a directory that exists is complete; a run whose directory exists and whose run.yaml
matches the spec is skipped (resume), one whose run.yaml differs is refused.

Seeds (numpy SeedSequence via ``models.sensor_seed``):
- ground truth: ``sensor_seed(seed, "scenario", scenario, k)`` (as ``scenarios.generate``) — no variant,
  so every variant of a study sees the same K trajectories of a scenario and differs only by its sensors;
- sensors: ``sensor_seed(seed, *run_id.seed_keys, "gps" | "imu")`` = ``(seed, variant, scenario, k, …)``.

Importing this module is cheap (no rosbags/scipy/ray); heavy imports happen inside the functions.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .. import runs
from ..art import ART_STATIC_TFS, GPS_ODOMETRY_TOPIC, IMU_FRAME, MAGNETIC_FIELD_TOPIC, TOPICS
from ..errors import UserError
from ..runs import (
    RUN_FILE,
    RunId,
    RunInfo,
    existing_run,
    judge_record,
    plain,
    remove_stale_temporaries,
    run_topics,
)
from .timing import RunTiming, TimingModel, judge_timing, period_ns

DEFAULT_GROUND_TRUTH_RATE = 50.0  # Hz: plenty for speed metrics, 2× fewer messages than a 100 Hz truth
# A run whose /odometry/filtered horizontal speed exceeds DIVERGENCE_FACTOR × the truth's peak speed (the
# peak taken as at least DIVERGENCE_MIN_PEAK, so a standstill run may reach 10 m/s) has diverged: an error.
DIVERGENCE_FACTOR = 10.0
DIVERGENCE_MIN_PEAK = 1.0  # m/s

NAVSATFIX = "sensor_msgs/msg/NavSatFix"
IMU = "sensor_msgs/msg/Imu"
ODOMETRY = "nav_msgs/msg/Odometry"


@dataclass(frozen=True)
class JudgeConfig:
    """The judge of a run: robot_localization YAML files, the static TFs of the launch, the timing
    model of its timers (``pipeline.timing``; default: ticks on exact multiples, zero latency) and its
    start (``pipeline.start``): ``initial_state`` "config" (the ekf YAML's) or "truth" (each run's truth
    at its first instant), ``warmup_s`` the seconds of each run the scorer skips."""

    ekf: str
    navsat: str
    static_tfs: tuple = ART_STATIC_TFS
    timing: TimingModel = TimingModel()
    initial_state: str = "config"
    warmup_s: float = 0.0

    def record(self) -> dict:
        return judge_record(self.ekf, self.navsat, self.static_tfs)

    def start_state(self, truth, stamp_ns: int):
        """The ekf_node ``initial_state`` of a run whose first instant is ``stamp_ns`` (None: the YAML's)."""
        if self.initial_state != "truth":
            return None
        from .start import initial_state_from_truth

        ekf = _judge_parts(self.ekf, self.navsat, tuple(self.static_tfs))[0]
        return initial_state_from_truth(truth, stamp_ns, ekf.two_d_mode)

    def start_records(self) -> dict:
        """run.yaml's ``initial_state`` ({source: truth}, the values added when known) and ``warmup_s``
        (absent when 0), as ``RunInfo`` keywords."""
        return {"initial_state": {"source": "truth"} if self.initial_state == "truth" else None,
                "warmup_s": float(self.warmup_s) if self.warmup_s else None}

    def periods(self) -> tuple:
        """(EKF, navsat) timer periods in ns, from the two parameter files."""
        ekf, navsat, _tfs = _judge_parts(self.ekf, self.navsat, tuple(self.static_tfs))
        return period_ns(ekf.frequency), period_ns(navsat.frequency)

    def run_timing(self, seed: int, scenario: str, k: int) -> RunTiming:
        """The timing of run ``k`` of ``scenario``: the same for every variant of it (common random
        numbers; ``pipeline.timing``)."""
        if self.timing.is_default:
            return RunTiming()
        return self.timing.run_timing(self.periods(), seed, scenario, int(k))

    def timing_record(self, values: RunTiming, seed: int) -> dict | None:
        """run.yaml ``timing`` (None for the default model)."""
        return self.timing.record(values, seed)

    def mounting_rpy(self, child_frame: str = IMU_FRAME) -> list | None:
        """(roll, pitch, yaw) rad of the static TF base_link→``child_frame`` (None when there is none).

        The IMU model gets the same rotation, so simulated IMU data is expressed in the frame the TF
        describes (static_transform_publisher order is x y z yaw pitch roll).
        """
        from ..static_tf import mounting_rpy

        return mounting_rpy(self.static_tfs, child_frame)

    def imu_overrides(self, frame: str | None = None) -> dict:
        """The IMU model's ``mounting_rpy`` from the judge's TF base_link→imu (none when the TF is absent);
        with ``frame`` (a replayed bag's real IMU frame), the model publishes in that frame instead,
        mounted by the TF to it (identity for base_link itself or an empty frame)."""
        if frame is None:
            rpy = self.mounting_rpy(IMU_FRAME)
            return {} if rpy is None else {"mounting_rpy": rpy}
        base = _judge_parts(self.ekf, self.navsat, tuple(self.static_tfs))[0].base_link_frame
        from ..static_tf import mounting_rpy

        rpy = [0.0, 0.0, 0.0] if frame in ("", base) else mounting_rpy(self.static_tfs, frame, base)
        return {"frame_id": frame, **({} if rpy is None else {"mounting_rpy": rpy})}

    def check_imu_frame(self, frame_id: str, spec: Any) -> None:
        children = {text.split()[1] for text in self.static_tfs}
        if frame_id not in children | {"base_link", ""}:
            raise UserError(f"imu model {spec!r}: frame_id {frame_id!r} has no static TF in the judge "
                            f"(TF children: {', '.join(sorted(children))}); "
                            "the judge would drop every IMU message")


@dataclass(frozen=True)
class SimRunSpec:
    """Everything that determines one simulated run (picklable: it travels to worker processes)."""

    variant: str
    scenario: str
    k: int
    seed: int
    gps: Any
    imu: Any
    judge: JudgeConfig
    scenario_params: Any = None
    ground_truth_rate: float = DEFAULT_GROUND_TRUTH_RATE
    storage: str = "sqlite3"
    side: str = "sim"

    @property
    def run_id(self) -> RunId:
        return RunId(self.side, self.variant, self.scenario, self.k)

    @property
    def label(self) -> str:
        return self.run_id.label

    @property
    def locality_key(self) -> tuple:
        """Runs with equal keys share their ground truth (the batch runner dispatches them together)."""
        return (self.scenario, json.dumps(plain(self.scenario_params), sort_keys=True), self.seed, self.k)

    def directory(self, out) -> Path:
        return self.run_id.directory(out)

    @property
    def timing(self) -> RunTiming:
        """The judge timing of this run (``JudgeConfig.run_timing``: shared by every variant)."""
        return self.judge.run_timing(self.seed, self.scenario, self.k)

    def info(self) -> RunInfo:
        """The typed run.yaml (see ``runs.RunInfo``)."""
        from .. import __version__

        return RunInfo(
            self.run_id, seed=self.seed, source=self.scenario, scenario_params=self.scenario_params,
            from_scenario=True, models={"gps": plain(self.gps), "imu": plain(self.imu)},
            gps=model_parameters("gps", self.gps), imu=model_parameters("imu", self.imu, self.judge),
            judge=self.judge.record(), timing=self.judge.timing_record(self.timing, self.seed),
            **self.judge.start_records(), ground_truth_rate=self.ground_truth_rate, storage=self.storage,
            topics=run_topics(), version=__version__)

    def record(self) -> dict:
        """The run.yaml content (see docs/architecture.md)."""
        return self.info().to_dict()

    def execute(self, out) -> RunOutcome:
        return simulate_run(self, out)


@dataclass(frozen=True)
class RunOutcome:
    label: str
    path: str
    skipped: bool
    messages: dict  # topic -> count written (empty when skipped)
    sim_seconds: float = 0.0
    runs: tuple = ()  # a task that makes several runs (one real bag's): the RunOutcome of each
    scores: tuple = ()  # a real bag's noise-floor judgements (draw, RunRecord): replay.noise_floor_scores
    scored: tuple = ()  # its runs scored where they were judged (replay.ScoredRun), with ``scoring``
    health: Any = None  # a replayed real run's judge health (replay.health.assess), when assessed


def load_gps(spec: Any, seed_sequence=None, datum=None, rate: float | None = None):
    """The GPS model of a run.  Replay of real bags overrides the preset's ``datum`` (lat, lon, alt)
    and ``rate`` (Hz) with the real receiver's."""
    from ..models import load_gps_model

    return load_gps_model(spec, seed_sequence, **_gps_overrides(datum, rate))


def _gps_overrides(datum, rate) -> dict:
    overrides: dict = {} if datum is None else {"datum": [float(v) for v in datum]}
    if rate is not None:
        overrides["rate"] = float(rate)
    return overrides


def load_imu(spec: Any, judge: JudgeConfig, seed_sequence=None, frame: str | None = None):
    """The IMU model of a run, mounted with the judge's base_link→imu rotation (overrides the preset's);
    ``frame``: publish in that frame, mounted by the TF to it (a replayed bag's real IMU frame).

    The simulated IMU then reports in the frame the static TF describes, and the judge rotates it
    back to base_link exactly as robot_localization does on the vehicle.
    """
    from ..models import load_imu_model

    model = load_imu_model(spec, seed_sequence, **judge.imu_overrides(frame))
    judge.check_imu_frame(model.frame_id, spec)
    return model


def model_parameters(kind: str, spec: Any, judge: JudgeConfig | None = None, datum=None,
                     rate: float | None = None, frame: str | None = None) -> dict:
    """Effective parameters of a run's model (``runs.model_parameters`` with the pipeline's overrides:
    the IMU mounted like the judge's TF (in ``frame`` when given), a replayed GPS at the real bag's datum
    and rate)."""
    if kind == "imu":
        parameters = runs.model_parameters("imu", spec, **judge.imu_overrides(frame))
        judge.check_imu_frame(parameters["frame_id"], spec)
        return parameters
    return runs.model_parameters("gps", spec, **_gps_overrides(datum, rate))


# ---------------------------------------------------------------------------------- the pieces
def scenario_truth(name: str, params: Any, seed: int, k: int):
    """Ground truth of repeat ``k`` of scenario ``name`` (``params`` override its YAML keys).

    Seeded like ``scenarios.generate`` (``sensor_seed(seed, "scenario", name, k)``), so a study run
    and ``sim2real-eval scenario`` give the same trajectory.
    """
    from .. import scenarios
    from ..models import sensor_seed

    data, source, stem = scenarios.load_scenario(name)
    if params:
        data = {**data, **params}
        source = f"{source} (with the study's overrides)"
    return scenarios.simulate(data, source, sensor_seed(seed, "scenario", stem, k))


class TruthCache:
    """The last ``size`` scenario truths with their /ground_truth/odom records (CDR bytes, read-only).

    Every variant of a study shares the trajectories of (scenario, k): a batch worker keeps the last
    few, and the batch runner dispatches runs grouped by (scenario, k) (``SimRunSpec.locality_key``)
    so these hits are frequent.
    """

    def __init__(self, size: int = 16):
        self.size = size
        self._entries: dict = {}

    def get(self, name: str, params: Any, seed: int, k: int, rate: float) -> tuple:
        """(GroundTruth, /ground_truth/odom records) of one repeat, computed once."""
        key = (name, json.dumps(plain(params), sort_keys=True), seed, k, rate)
        hit = self._entries.get(key)
        if hit is None:
            truth = scenario_truth(name, params, seed, k)
            hit = (truth, truth_records(truth, rate))
            while len(self._entries) >= self.size:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = hit
        return hit


# The truths of the batch worker this process is (a forked worker starts with a copy of its parent's).
WORKER_TRUTHS = TruthCache()


@functools.lru_cache(maxsize=8)
def _judge_parts(ekf: str, navsat: str, static_tfs: tuple):
    from ..judge import load_ekf_params, load_navsat_params, parse_static_tf

    return load_ekf_params(ekf), load_navsat_params(navsat), tuple(parse_static_tf(t) for t in static_tfs)


def judge_run(judge: JudgeConfig, messages: Iterable, timing: RunTiming | None = None, initial_state=None):
    """Run the embedded robot_localization on ``(recv_ns, topic, msg)`` or ``(recv_ns, topic, msgtype, msg)``
    records in receive order (``msg`` an object or CDR bytes: decoded in bulk), or on a list of
    ``judge.SensorBlock`` (messages already in columns, one block per topic: ``sensor_block``) →
    JudgeResult, its timers ticking as ``timing`` says (default: exact multiples of the periods, zero
    latency), ekf_node's ``initial_state`` parameter replaced by ``initial_state`` (15 values) when given.

    The only place the pipeline calls the judge.
    """
    import dataclasses

    from ..judge import Judge

    ekf, navsat, tfs = _judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))
    if initial_state is not None:
        import numpy as np

        ekf = dataclasses.replace(ekf, initial_state=np.array(initial_state, dtype=float))
    judge = Judge(ekf, navsat, static_tfs=tfs, gps_topic=TOPICS["gps"], timing=judge_timing(timing))
    return judge.run_blocks(messages) if are_sensor_blocks(messages) else judge.run(messages)


def are_sensor_blocks(messages) -> bool:
    """Whether ``messages`` is a list of ``judge.SensorBlock`` (``judge_run``), not records."""
    from ..judge import SensorBlock

    return isinstance(messages, list) and bool(messages) and isinstance(messages[0], SensorBlock)


def imu_findings(judge: JudgeConfig, frame_id: str, covariances: dict, where: str) -> list:
    """``judge.lint`` findings for an IMU in ``frame_id`` publishing ``covariances`` ({part: 9 values}),
    under this judge's configuration and static TFs: one line each (none when valid; a frame without a
    TF is the run's own error)."""
    from ..judge.lint import imu_covariance_findings

    ekf, _navsat, tfs = _judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))
    return imu_covariance_findings(ekf, tfs, frame_id, covariances, where, unresolved=False)


def model_imu_findings(judge: JudgeConfig, spec: Any, where: str | None = None, frame: str | None = None
                       ) -> list:
    """``imu_findings`` for the covariances the IMU model ``spec`` publishes (mounted by the judge's TF;
    in ``frame`` when given, as ``load_imu``)."""
    from ..judge.lint import model_covariances

    model = load_imu(spec, judge, frame=frame)
    name = spec if isinstance(spec, str) else (spec.get("name") if isinstance(spec, dict) else None)
    return imu_findings(judge, model.frame_id, model_covariances(model),
                        where or (f"imu model {name}" if name else f"imu model {spec!r}"))


def gps_implied_speeds(result):
    """Horizontal speeds (m/s) between consecutive /odometry/gps positions: what the GPS input itself says
    (the ART configuration fuses exactly these differences as velocities); empty without navsat."""
    import numpy as np

    gps = result.gps_odometry
    if gps is None or len(gps) < 2:
        return np.empty(0)
    dt = np.diff(gps.stamp_ns) * 1e-9
    steps = np.hypot(*np.diff(gps.position[:, :2], axis=0).T)
    return steps[dt > 0] / dt[dt > 0]


def check_divergence(result, truth, where: str, causes=None) -> None:
    """A UserError when the run's judge diverged: its filtered horizontal speed is non-finite, or above
    ``DIVERGENCE_FACTOR`` × the truth's peak horizontal speed (at least ``DIVERGENCE_MIN_PEAK``) while
    its GPS input does not say so (``gps_implied_speeds`` below half that speed): the filter left both
    the truth and its measurements.  ``causes()`` → lines naming what made it diverge (``imu_findings``),
    called only then; the first is put in the message.  A filter that follows a GPS input as fast as
    itself is no divergence but a GPS model the judge cannot use: a DataWarning naming both speeds, and
    the run is kept (it scores as far from real as it is)."""
    import warnings

    import numpy as np

    from ..errors import DataWarning

    filtered = result.filtered
    if filtered is None or len(filtered) == 0:
        return
    speed = np.hypot(filtered.linear_velocity[:, 0], filtered.linear_velocity[:, 1])
    peak_truth = float(np.max(np.hypot(truth.velocity[:, 0], truth.velocity[:, 1])))
    limit = DIVERGENCE_FACTOR * max(peak_truth, DIVERGENCE_MIN_PEAK)
    bad = ~np.isfinite(speed) | (speed > limit)
    if not bad.any():
        return
    first = int(np.argmax(bad))
    at = (int(filtered.stamp_ns[first]) - int(filtered.stamp_ns[0])) * 1e-9
    finite = speed[np.isfinite(speed)]
    peak = float(finite.max()) if finite.size else float("nan")
    what = (f"reaches {peak:.3g} m/s (above {limit:.3g} m/s from {at:.2f} s on)"
            if np.isfinite(speed[first]) else f"is not finite from {at:.2f} s on")
    gps = gps_implied_speeds(result)
    gps_peak = float(gps.max()) if gps.size else 0.0
    if np.isfinite(speed).all() and gps_peak >= 0.5 * peak:
        warnings.warn(f"{where}: /odometry/filtered's speed {what}, more than {DIVERGENCE_FACTOR:g} × the "
                      f"ground truth's peak {peak_truth:.3g} m/s, following its GPS input, whose consecutive "
                      f"/odometry/gps positions imply up to {gps_peak:.3g} m/s: the GPS model's noise is far "
                      "beyond what its covariance tells the judge (docs/judge.md, 'Divergence')",
                      DataWarning, stacklevel=2)
        return
    found = list(causes()) if causes is not None else []
    cause = (f"cause: {found[0]}" if found else
             "no invalid IMU covariance found: check the static TFs and the sensors' covariances and stamps "
             "(docs/judge.md, 'Divergence')")
    raise UserError(f"{where}: the judge diverged: /odometry/filtered's speed {what}, more than "
                    f"{DIVERGENCE_FACTOR:g} × the ground truth's peak {peak_truth:.3g} m/s while its GPS "
                    f"input implies at most {gps_peak:.3g} m/s; nothing written for this run; {cause}")


def start_stamp_ns(truth) -> int:
    """A run's first instant: the first header stamp inside the truth span (``truth.truth_window_ns``);
    the judge's ``initial_state: truth`` is the truth there."""
    from ..truth import truth_window_ns

    return truth_window_ns(truth)[0]


def check_ground_truth_rate(rate: float, where: str) -> float:
    """A ground_truth_rate inside ``limits.GROUND_TRUTH_RATE`` (1 Hz … 1 kHz); errors name ``where``."""
    from ..limits import GROUND_TRUTH_RATE

    return GROUND_TRUTH_RATE.check(float(rate), where)


def truth_records(truth, rate: float) -> list:
    """/ground_truth/odom at ``rate`` Hz: ticks k·period inside the truth span (docs: Time), as
    (recv_ns, topic, msgtype, CDR bytes) records.  A run is never written without them."""
    import numpy as np

    from ..bags import messages as bag_messages

    check_ground_truth_rate(rate, "ground_truth_rate")
    stamps = bag_messages.tick_stamps_ns(truth, rate)
    if len(stamps) < 2:
        raise UserError(f"ground_truth_rate {rate:g} Hz: {len(stamps)} /ground_truth/odom message(s) in the "
                        f"{truth.duration:.3g} s of ground truth; the scorer needs at least 2")
    # ns -> s may step past the span by an ulp at epoch-scale times: clip, never extrapolate.
    sampled = truth.interpolate(np.clip(stamps * 1e-9, truth.t[0], truth.t[-1]))
    return bag_messages.truth_odometry_cdr(sampled, TOPICS["ground_truth"])


def gps_records(samples) -> list:
    """/fix as message objects (what the judge reads)."""
    from ..bags import messages as bag_messages

    return list(bag_messages.navsatfix_messages(samples, TOPICS["gps"]))


def imu_records(samples) -> list:
    """/imu as message objects (what the judge reads)."""
    from ..bags import messages as bag_messages

    return list(bag_messages.imu_messages(samples, TOPICS["imu"]))


def gps_cdr_records(samples) -> list:
    """/fix as CDR records (the bytes rosbags would write for ``gps_records``), serialised in bulk."""
    from ..bags import messages as bag_messages

    return bag_messages.navsatfix_cdr(samples, TOPICS["gps"])


def imu_cdr_records(samples) -> list:
    """/imu as CDR records (the bytes rosbags would write for ``imu_records``), serialised in bulk."""
    from ..bags import messages as bag_messages

    return bag_messages.imu_cdr(samples, TOPICS["imu"])


def sensor_block(samples) -> Any:
    """``judge.SensorBlock`` of a model's samples (GpsSamples → /fix, ImuSamples → /imu): the values the
    judge would decode from ``gps_cdr_records`` / ``imu_cdr_records``, without making the bytes (a run
    that writes no bag; /imu/mag is left out: the judge does not read it)."""
    from .. import message_fields
    from ..bags import get_typestore
    from ..bags import messages as bag_messages
    from ..judge import SensorBlock
    from ..judge.input_rows import columns_from_wire
    from ..models.samples import ImuSamples

    table, topic = ((message_fields.IMU, TOPICS["imu"]) if isinstance(samples, ImuSamples)
                    else (message_fields.NAVSATFIX, TOPICS["gps"]))
    strings, wire, receive = bag_messages.container_wire_columns(table, samples)
    columns = columns_from_wire(get_typestore(), table.msgtype, strings, wire, len(receive))
    return SensorBlock(receive, topic, table.msgtype, columns)


def magnetic_field_cdr_records(samples) -> list:
    """/imu/mag as CDR records when the IMU model's magnetometer is on, else none: the content
    imu_noise_node publishes (same stamps and frame as /imu), received with the IMU message."""
    from ..bags import messages as bag_messages

    return bag_messages.magnetic_field_cdr(samples, MAGNETIC_FIELD_TOPIC)


def sensor_bag_records(gps, imu) -> list:
    """/fix + /imu (+ /imu/mag) records for the bag (``gps_records`` + ``imu_records`` +
    ``magnetic_field_cdr_records``, in that order, as bytes)."""
    return gps_cdr_records(gps) + imu_cdr_records(imu) + magnetic_field_cdr_records(imu)


def judge_records(result) -> list:
    """The judge's outputs as CDR records; received at their header stamps (a subscriber on the same
    clock)."""
    from ..bags import messages as bag_messages

    out = bag_messages.odometry_cdr(result.filtered, TOPICS["estimate"])
    if result.gps_odometry is not None:
        out += bag_messages.odometry_cdr(result.gps_odometry, GPS_ODOMETRY_TOPIC)
    return out


def in_receive_order(records: list) -> list:
    """Stable sort by receive time (ties keep their input order, so the result is deterministic)."""
    return sorted(records, key=lambda r: r[0])


def write_run(path: Path, records: list, record: RunInfo | dict, storage: str) -> dict:
    """Write the run bag + run.yaml atomically; return {topic: count}."""
    from ..bags import write_bag
    from ..yamlio import dump_yaml

    counts: dict[str, int] = {}
    for rec in records:
        counts[rec[1]] = counts.get(rec[1], 0) + 1
    def run_yaml(directory: Path) -> str:
        # The data files' sizes and SHA-256 as written: resume checks them (runs.existing_run).
        if isinstance(record, RunInfo):
            return record.with_files(directory).to_yaml()
        return dump_yaml({**record, runs.FILES_KEY: runs.data_files(directory)})

    # write_bag builds the bag in a temporary sibling and renames it: no half directory on failure.
    write_bag(path, records, storage=storage, extra_files={RUN_FILE: run_yaml})
    return counts


def simulate_run(spec: SimRunSpec, out, truths: TruthCache | None = None) -> RunOutcome:
    """Execute one simulated run (or skip it when its directory already holds it).

    ``truths``: where the scenario truths come from (default: this process's ``WORKER_TRUTHS``).
    """
    from ..models import sensor_seed

    path = spec.directory(out)
    info = spec.info()
    if existing_run(path, info):
        return RunOutcome(spec.label, str(path), True, {})
    remove_stale_temporaries(path)
    truths = WORKER_TRUTHS if truths is None else truths
    truth, truth_messages = truths.get(spec.scenario, spec.scenario_params, spec.seed, spec.k,
                                       spec.ground_truth_rate)
    keys = (spec.seed, *spec.run_id.seed_keys)
    gps = load_gps(spec.gps, sensor_seed(*keys, "gps")).sample(truth)
    imu = load_imu(spec.imu, spec.judge, sensor_seed(*keys, "imu")).sample(truth)
    # The sensor messages serialised in bulk: the judge decodes these bytes, the bag stores them.
    sensors = in_receive_order(sensor_bag_records(gps, imu))
    start = start_stamp_ns(truth)
    initial_state = spec.judge.start_state(truth, start)
    result = judge_run(spec.judge, sensors, spec.timing, initial_state)
    result.check_sensors(str(path))  # a run that lost a whole sensor is not written
    check_divergence(result, truth, str(path), lambda: model_imu_findings(spec.judge, spec.imu))
    if initial_state is not None:
        info = info.with_initial_state(start, initial_state)
    records = in_receive_order(sensors + judge_records(result) + truth_messages)
    counts = write_run(path, records, info.with_outcome(result), spec.storage)
    return RunOutcome(spec.label, str(path), False, counts, truth.duration)
