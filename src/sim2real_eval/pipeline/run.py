"""One run: ground truth → simulated GPS + IMU → the embedded judge → one recorded bag.

A run directory ``OUT/<side>/<variant>/<scenario>/<k>/`` *is* a rosbag2 directory with ``run.yaml``
inside (docs/architecture.md, "runs").  It appears in one atomic rename, so a directory that exists is
complete; a run whose directory exists and whose run.yaml matches the spec is skipped (resume), one
whose run.yaml differs is refused.

Seeds (numpy SeedSequence via ``models.sensor_seed``):
- ground truth: ``sensor_seed(seed, "scenario", scenario, k)`` (as ``scenarios.generate``) — no variant,
  so every variant of a study sees the same K trajectories of a scenario and differs only by its sensors;
- sensors: ``sensor_seed(seed, variant, scenario, k, "gps" | "imu")``.

Importing this module is cheap (no rosbags/scipy/ray); heavy imports happen inside the functions.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from ..art import ART_STATIC_TFS, GPS_ODOMETRY_TOPIC, IMU_FRAME, TOPICS
from ..errors import UserError

DEFAULT_GROUND_TRUTH_RATE = 50.0  # Hz: plenty for speed metrics, 2× fewer messages than a 100 Hz truth
STORAGES = ("sqlite3", "mcap")
SIDES = ("sim", "real")
RUN_FILE = "run.yaml"
OUTCOME_KEY = "judge_outcome"  # run.yaml section written after the judge ran (not part of the spec)

NAVSATFIX = "sensor_msgs/msg/NavSatFix"
IMU = "sensor_msgs/msg/Imu"
ODOMETRY = "nav_msgs/msg/Odometry"


@functools.lru_cache(maxsize=64)
def file_sha256(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None


@dataclass(frozen=True)
class JudgeConfig:
    """The judge of a run: robot_localization YAML files and the static TFs of the launch."""

    ekf: str
    navsat: str
    static_tfs: tuple = ART_STATIC_TFS

    def record(self) -> dict:
        return {
            "ekf": self.ekf,
            "ekf_sha256": file_sha256(self.ekf),
            "navsat": self.navsat,
            "navsat_sha256": file_sha256(self.navsat),
            "static_tfs": list(self.static_tfs),
        }

    def mounting_rpy(self, child_frame: str = IMU_FRAME) -> list | None:
        """(roll, pitch, yaw) rad of the static TF base_link→``child_frame`` (None when there is none).

        The IMU model gets the same rotation, so simulated IMU data is expressed in the frame the TF
        describes (static_transform_publisher order is x y z yaw pitch roll).
        """
        from ..judge.tf import parse_static_tf

        for text in self.static_tfs:
            tf = parse_static_tf(text)
            if tf.parent == "base_link" and tf.child == child_frame:
                return [tf.roll, tf.pitch, tf.yaw]
        return None


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
    def label(self) -> str:
        return f"{self.side}/{self.variant}/{self.scenario}/{self.k}"

    @property
    def locality_key(self) -> tuple:
        """Runs with equal keys share their ground truth (the batch runner dispatches them together)."""
        return (self.scenario, json.dumps(plain(self.scenario_params), sort_keys=True), self.seed, self.k)

    def directory(self, out) -> Path:
        return run_directory(out, self.side, self.variant, self.scenario, self.k)

    def record(self) -> dict:
        """The run.yaml content (see docs/architecture.md)."""
        return {
            "side": self.side,
            "variant": self.variant,
            "scenario": self.scenario,
            "k": self.k,
            "seed": self.seed,
            "source": self.scenario,
            "scenario_params": self.scenario_params,
            "models": {"gps": plain(self.gps), "imu": plain(self.imu)},
            "gps": model_parameters("gps", self.gps),
            "imu": model_parameters("imu", self.imu, self.judge),
            "judge": self.judge.record(),
            "ground_truth_rate": self.ground_truth_rate,
            "storage": self.storage,
            "topics": dict(TOPICS, gps_odometry=GPS_ODOMETRY_TOPIC),
            "version": __version__,
        }

    def execute(self, out) -> RunOutcome:
        return simulate_run(self, out)


@dataclass(frozen=True)
class RunOutcome:
    label: str
    path: str
    skipped: bool
    messages: dict  # topic -> count written (empty when skipped)
    sim_seconds: float = 0.0


def run_directory(out, side: str, variant: str, scenario: str, k: int) -> Path:
    return Path(out) / side / variant / scenario / str(int(k))


def plain(value: Any) -> Any:
    """YAML-safe plain data (numpy scalars/arrays and tuples become Python numbers and lists)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    return value


def load_gps(spec: Any, seed_sequence=None, datum=None, rate: float | None = None):
    """The GPS model of a run.  Replay of real bags overrides the preset's ``datum`` (lat, lon, alt)
    and ``rate`` (Hz) with the real receiver's."""
    from ..models import load_gps_model

    overrides: dict = {} if datum is None else {"datum": [float(v) for v in datum]}
    if rate is not None:
        overrides["rate"] = float(rate)
    return load_gps_model(spec, seed_sequence, **overrides)


def load_imu(spec: Any, judge: JudgeConfig, seed_sequence=None):
    """The IMU model of a run, mounted with the judge's base_link→imu rotation (overrides the preset's).

    The simulated IMU then reports in the frame the static TF describes, and the judge rotates it
    back to base_link exactly as robot_localization does on the vehicle.
    """
    from ..models import load_imu_model

    rpy = judge.mounting_rpy(IMU_FRAME)
    model = load_imu_model(spec, seed_sequence, **({} if rpy is None else {"mounting_rpy": rpy}))
    children = {text.split()[1] for text in judge.static_tfs}
    if model.frame_id not in children | {"base_link"}:
        raise UserError(f"imu model {spec!r}: frame_id {model.frame_id!r} has no static TF in the judge "
                        f"(TF children: {', '.join(sorted(children))}); "
                        "the judge would drop every IMU message")
    return model


@functools.lru_cache(maxsize=256)
def _parameters(kind: str, spec_text: str, judge: JudgeConfig | None, datum: tuple | None,
                rate: float | None) -> str:
    spec = json.loads(spec_text)
    model = load_imu(spec, judge) if kind == "imu" else load_gps(spec, datum=datum, rate=rate)
    return json.dumps(plain(model.parameters))


def model_parameters(kind: str, spec: Any, judge: JudgeConfig | None = None, datum=None,
                     rate: float | None = None) -> dict:
    """Effective parameters of a model (what run.yaml records); they do not depend on the seed."""
    key = json.dumps(plain(spec), sort_keys=True)
    datum = None if datum is None else tuple(float(v) for v in datum)
    return json.loads(_parameters(kind, key, judge if kind == "imu" else None, datum, rate))


# --------------------------------------------------------------------------------------- resume
def _comparable(record: dict) -> dict:
    """run.yaml fields that must match for an existing run to count as this run.

    Not compared: the package version and the judge files' paths (their sha256 are compared), so an
    output tree survives a reinstall or a moved config directory.
    """
    out = {k: v for k, v in record.items() if k not in ("version", OUTCOME_KEY)}
    if isinstance(out.get("judge"), dict):
        out["judge"] = {k: v for k, v in out["judge"].items() if k not in ("ekf", "navsat")}
    return out


def _first_difference(a: Any, b: Any, prefix: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{prefix}.{key}" if prefix else str(key)
            if key not in a or key not in b:
                return where
            diff = _first_difference(a[key], b[key], where)
            if diff:
                return diff
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return prefix
        for i, (x, y) in enumerate(zip(a, b)):
            diff = _first_difference(x, y, f"{prefix}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else (prefix or "value")


def remove_stale_temporaries(path: Path) -> None:
    """Remove leftovers of a run killed hard (SIGKILL) while building ``path`` (atomic.py siblings)."""
    parent = path.parent
    if parent.is_dir():
        for stale in parent.glob(f".{path.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)


def existing_run(path: Path, record: dict) -> bool:
    """True when ``path`` holds this run already; False when absent; UserError when it differs."""
    from ..yamlio import load_yaml

    path = Path(path)
    if not path.exists():
        return False
    run_file = path / RUN_FILE
    if not run_file.is_file():
        raise UserError(f"{path}: exists but has no {RUN_FILE}, so it is not a run; "
                        "remove it or choose another --out")
    found = load_yaml(run_file)
    if not isinstance(found, dict):
        raise UserError(f"{run_file}: not a run description (expected a mapping)")
    # Round-trip the expected record through YAML so tuples/lists and floats compare like on disk.
    import yaml

    from ..yamlio import dump_yaml

    expected = yaml.safe_load(dump_yaml(record))
    diff = _first_difference(_comparable(found), _comparable(expected))
    if diff:
        raise UserError(
            f"{run_file}: an existing run differs from the requested one at '{diff}'; "
            "remove it or choose another --out"
        )
    return True


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


# Every variant of a study shares the trajectories of (scenario, k): a worker keeps the last few
# truths and their /ground_truth/odom records (CDR bytes, read-only), and the batch runner dispatches runs
# grouped by (scenario, k) so these hits are frequent.
_TRUTH_CACHE: dict = {}
_TRUTH_CACHE_SIZE = 16


def cached_truth(name: str, params: Any, seed: int, k: int, rate: float) -> tuple:
    """(GroundTruth, /ground_truth/odom records) of one repeat, computed once per worker."""
    key = (name, json.dumps(plain(params), sort_keys=True), seed, k, rate)
    hit = _TRUTH_CACHE.get(key)
    if hit is None:
        truth = scenario_truth(name, params, seed, k)
        hit = (truth, truth_records(truth, rate))
        while len(_TRUTH_CACHE) >= _TRUTH_CACHE_SIZE:
            _TRUTH_CACHE.pop(next(iter(_TRUTH_CACHE)))
        _TRUTH_CACHE[key] = hit
    return hit


@functools.lru_cache(maxsize=8)
def _judge_parts(ekf: str, navsat: str, static_tfs: tuple):
    from ..judge import load_ekf_params, load_navsat_params, parse_static_tf

    return load_ekf_params(ekf), load_navsat_params(navsat), tuple(parse_static_tf(t) for t in static_tfs)


def judge_run(judge: JudgeConfig, messages: Iterable):
    """Run the embedded robot_localization on ``(recv_ns, topic, msg)`` in receive order → JudgeResult.

    The only place the pipeline calls the judge.
    """
    from ..judge import Judge

    ekf, navsat, tfs = _judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))
    return Judge(ekf, navsat, static_tfs=tfs, gps_topic=TOPICS["gps"]).run(messages)


def truth_records(truth, rate: float) -> list:
    """/ground_truth/odom at ``rate`` Hz: ticks k·period inside the truth span (docs: Time), as
    (recv_ns, topic, msgtype, CDR bytes) records."""
    import numpy as np

    from ..bags import messages as bag_messages

    stamps = bag_messages.tick_stamps_ns(truth, rate)
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


def sensor_bag_records(gps, imu) -> list:
    """/fix + /imu records for the bag (``gps_records`` + ``imu_records``, in that order, as bytes)."""
    return gps_cdr_records(gps) + imu_cdr_records(imu)


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


def with_judge_outcome(record: dict, result) -> dict:
    """run.yaml + what the judge did (message counts in, drops by reason, outputs): an output, so
    it is not compared on resume; it tells a user at a glance e.g. that IMU messages were dropped."""
    outcome = {
        "inputs": plain(dict(result.inputs)),
        "dropped": plain(dict(result.dropped)),
        "published": int(result.published),
    }
    warnings = list(getattr(result, "warnings", []) or [])
    if warnings:
        outcome["warnings"] = [str(w) for w in warnings[:20]]
    return {**record, OUTCOME_KEY: outcome}


def write_run(path: Path, records: list, record: dict, storage: str) -> dict:
    """Write the run bag + run.yaml atomically; return {topic: count}."""
    from ..bags import write_bag
    from ..yamlio import dump_yaml

    counts: dict[str, int] = {}
    for rec in records:
        counts[rec[1]] = counts.get(rec[1], 0) + 1
    # write_bag builds the bag in a temporary sibling and renames it: no half directory on failure.
    write_bag(path, records, storage=storage, extra_files={RUN_FILE: dump_yaml(record)})
    return counts


def simulate_run(spec: SimRunSpec, out) -> RunOutcome:
    """Execute one simulated run (or skip it when its directory already holds it)."""
    from ..models import sensor_seed

    path = spec.directory(out)
    record = spec.record()
    if existing_run(path, record):
        return RunOutcome(spec.label, str(path), True, {})
    remove_stale_temporaries(path)
    truth, truth_messages = cached_truth(spec.scenario, spec.scenario_params, spec.seed, spec.k,
                                         spec.ground_truth_rate)
    keys = (spec.seed, spec.variant, spec.scenario, spec.k)
    gps = load_gps(spec.gps, sensor_seed(*keys, "gps")).sample(truth)
    imu = load_imu(spec.imu, spec.judge, sensor_seed(*keys, "imu")).sample(truth)
    sensors = in_receive_order(gps_records(gps) + imu_records(imu))
    result = judge_run(spec.judge, ((recv, topic, msg) for recv, topic, _type, msg in sensors))
    # The bag gets the same sensor messages serialised in bulk, not the judge's message objects.
    records = in_receive_order(sensor_bag_records(gps, imu) + judge_records(result) + truth_messages)
    counts = write_run(path, records, with_judge_outcome(record, result), spec.storage)
    return RunOutcome(spec.label, str(path), False, counts, truth.duration)
