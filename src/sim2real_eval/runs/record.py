"""A run's ``run.yaml``: the typed record ``RunInfo`` (``to_dict``/``to_yaml`` write it in one key order,
``RunInfo.from_dict``/``read_run_info`` validate it), the builders of its parts (``judge_record``,
``model_parameters``, ``bag_run_info``) and ``file_sha256``, the one file digest of the package.
Robot-side (Python 3.8; the models are imported lazily)."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import stat as stat_module
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

from .. import __version__
from ..art import GPS_ODOMETRY_TOPIC, TOPICS
from ..errors import UserError
from ..outputs import file_record
from .identity import (
    COMPLETE_KEY,
    FAILURE_KEY,
    FILES_KEY,
    OUTCOME_KEY,
    REAL,
    RUN_FILE,
    SENSORS,
    SIDES,
    STORAGES,
    RunId,
)


# ---------------------------------------------------------------------------------- record parts
def file_sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes: the identity of a judge configuration in run.yaml.

    Cached per (path, size, modification time), so an edited file is hashed again."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if not stat_module.S_ISREG(stat.st_mode):
        raise UserError(f"{path}: not a regular file")
    return _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)


def data_files(run_dir) -> Dict[str, Dict[str, Any]]:
    """run.yaml ``files``: {name: {size, sha256}} of every file of the run directory but run.yaml
    (metadata.yaml and the bag's storage files), computed when the run is written."""
    run_dir = Path(run_dir)
    return {p.name: file_record(p) for p in sorted(run_dir.iterdir())
            if p.name != RUN_FILE and p.is_file() and not p.is_symlink()}


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, _size: int, _mtime_ns: int) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as stream:  # in blocks: flat memory whatever the file is
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    return digest.hexdigest()


def plain(value: Any) -> Any:
    """YAML-safe plain data (numpy scalars/arrays and tuples become Python numbers and lists)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    return value


def judge_record(ekf: str, navsat: str, static_tfs: Sequence[str]) -> dict:
    """run.yaml ``judge``: the robot_localization files (path + SHA-256) and the static TFs."""
    return {"ekf": ekf, "ekf_sha256": file_sha256(ekf), "navsat": navsat,
            "navsat_sha256": file_sha256(navsat), "static_tfs": list(static_tfs)}


def run_topics() -> dict:
    """run.yaml ``topics``: the topics of every run bag."""
    return dict(TOPICS, gps_odometry=GPS_ODOMETRY_TOPIC)


@functools.lru_cache(maxsize=256)
def _model_parameters(kind: str, spec_text: str, overrides_text: str) -> str:
    from ..models import load_gps_model, load_imu_model

    load = load_imu_model if kind == "imu" else load_gps_model
    return json.dumps(plain(load(json.loads(spec_text), None, **json.loads(overrides_text)).parameters))


def model_parameters(kind: str, spec: Any, **overrides) -> dict:
    """Effective parameters of a GPS or IMU model (what run.yaml records as ``gps`` / ``imu``): the
    spec (preset name, YAML path or mapping) resolved, ``overrides`` of top-level keys applied
    (``mounting_rpy``, ``datum``, ``rate``).  They do not depend on the seed."""
    if kind not in SENSORS:
        raise ValueError(f"model_parameters: kind must be gps or imu, got {kind!r}")
    return json.loads(_model_parameters(kind, json.dumps(plain(spec), sort_keys=True),
                                        json.dumps(plain(overrides), sort_keys=True)))


# --------------------------------------------------------------------------------- the record
# run.yaml keys after side, variant, scenario, k, in the order they are written; `judge_outcome` last.
_ORDER = ("seed", "seed_keys", "source", "scenario_params", "replaced", "models", "gps", "imu", "window_ns",
          "judge", "timing", "initial_state", "warmup_s", "ground_truth_rate", "ground_truth_source",
          "storage", "input_topics", "topics", "recorded_by", "version", COMPLETE_KEY, FAILURE_KEY)


@dataclass(frozen=True)
class RunInfo:
    """The typed run.yaml.  Only the identity is required; an absent (None) key is not written.

    - ``seed``: study seed; the sensor streams are ``sensor_seed(seed, *run.seed_keys, sensor)``
      (``seed_keys`` is written only when a run used other keys: ROS launches that set them);
    - ``source``: the scenario name (simulated runs) or the absolute path of the real bag;
    - ``scenario_params``: the study's overrides of the scenario (None = its defaults); written for
      every run simulated from a scenario (``from_scenario``), even when None;
    - ``replaced`` / ``models``: on a replayed sim run, the replaced sensors and their model specs as
      given (``models`` on a scenario run: the specs of both sensors);
    - ``gps`` / ``imu``: the effective model parameters (``model_parameters``), or ``"real"``;
    - ``window_ns``: [start, end] header stamps of the sensor messages judged (runs of a real bag);
    - ``judge``: ``judge_record``; ``timing``: the judge's timer timing (``runs.timing``: ``model``
      fixed | random, ``ekf_phase_ns``, ``navsat_phase_ns``, ``tick_latency_ns``, for random its
      ``seed`` and ``latency`` distribution), absent for the default (fixed 0 / 0 / 0);
      ``initial_state``: the judge started from the truth (``runs.start``): ``{source: truth,
      stamp_ns, state: [15 values]}`` (absent: the ekf YAML's own); ``warmup_s``: seconds of the run the
      scorer skips (absent: 0);
      ``topics``: ``run_topics``; ``input_topics``: the real bag's
      sensor topics; ``ground_truth_rate`` (Hz of /ground_truth/odom), ``ground_truth_source``,
      ``storage``, ``recorded_by`` (the ROS recorder), ``version`` (of the package);
    - ``complete``: True when the run finished (its judge ran over the whole input), False when it did
      not (``failure`` says why: a node died, the launch failed or was stopped); absent in files written
      before this key existed.  ``incomplete`` is what readers check;
    - ``judge_outcome``: what the judge did (inputs, drops by reason, outputs), written after it ran;
    - ``files``: {name: {size, sha256}} of the run's data files (``data_files``), written with them;
      resume checks them (``existing_run``);
    - ``extra``: keys this version does not know, kept as read.
    """

    run: RunId
    seed: Optional[int] = None
    seed_keys: Optional[list] = None
    source: Optional[str] = None
    scenario_params: Any = None
    from_scenario: bool = False
    replaced: Optional[list] = None
    models: Optional[dict] = None
    gps: Any = None
    imu: Any = None
    window_ns: Optional[list] = None
    judge: Optional[dict] = None
    timing: Optional[dict] = None
    initial_state: Optional[dict] = None
    warmup_s: Optional[float] = None
    ground_truth_rate: Optional[float] = None
    ground_truth_source: Optional[str] = None
    storage: Optional[str] = None
    input_topics: Optional[dict] = None
    topics: Optional[dict] = None
    recorded_by: Optional[str] = None
    version: Optional[str] = None
    complete: Optional[bool] = None
    failure: Optional[str] = None
    judge_outcome: Optional[dict] = None
    files: Optional[dict] = None
    extra: dict = field(default_factory=dict)

    def topic(self, role: str) -> str:
        """The bag topic of ``role`` (estimate, ground_truth, gps, imu, gps_odometry)."""
        return (self.topics or {}).get(role) or run_topics()[role]

    @property
    def incomplete(self) -> Optional[str]:
        """Why the run is not complete (one line), or None when it is — or when its run.yaml predates the
        ``complete`` key (files written before it are read as they are)."""
        return incomplete_reason({COMPLETE_KEY: self.complete, FAILURE_KEY: self.failure})

    def marked(self, failure: Optional[str]) -> RunInfo:
        """This record marked complete (``failure`` None) or incomplete for ``failure``."""
        return dataclasses.replace(self, complete=failure is None,
                                   failure=None if failure is None else " ".join(str(failure).split()))

    def with_outcome(self, result) -> RunInfo:
        """This record + what the judge did (a ``JudgeResult``), marked complete: the judge ran over the
        whole input.  An output, not compared on resume; it tells a user at a glance e.g. that IMU
        messages were dropped."""
        outcome = {
            "inputs": plain(dict(result.inputs)),
            "dropped": plain(dict(result.dropped)),
            "published": int(result.published),
        }
        warnings = list(getattr(result, "warnings", []) or [])
        if warnings:
            outcome["warnings"] = [str(w) for w in warnings[:20]]
        return dataclasses.replace(self.marked(None), judge_outcome=outcome)

    def with_initial_state(self, stamp_ns: int, state) -> RunInfo:
        """This record with the values of its ``initial_state: {source: truth}`` (``runs.start``): the
        header stamp of the run's first instant and the 15 values ekf_node was given."""
        values = {"source": "truth", "stamp_ns": int(stamp_ns), "state": [float(v) for v in state]}
        return dataclasses.replace(self, initial_state=values)

    def with_files(self, run_dir) -> RunInfo:
        """This record + the ``files`` of ``run_dir`` (its data files as written: ``data_files``)."""
        return dataclasses.replace(self, files=data_files(run_dir))

    def to_dict(self) -> dict:
        """The run.yaml mapping, keys in the one order every writer uses."""
        run = self.run
        out: Dict[str, Any] = {"side": run.side, "variant": run.variant, "scenario": run.scenario,
                               "k": int(run.k)}
        for name in _ORDER:
            value = getattr(self, name)
            if value is not None or (name == "scenario_params" and self.from_scenario):
                out[name] = value
        out.update(self.extra)
        if self.judge_outcome is not None:
            out[OUTCOME_KEY] = self.judge_outcome
        if self.files is not None:
            out[FILES_KEY] = self.files
        return out

    def to_yaml(self) -> str:
        from ..yamlio import dump_yaml

        return dump_yaml(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, source: str, run: Optional[RunId] = None) -> RunInfo:
        """Validate a run.yaml mapping; errors are one line naming ``source`` and the key.

        ``run``: the identity of the directory the file is in, used for identity keys the file lacks
        (a hand-written run.yaml may give only ``topics``); without it they are required.  The other keys
        are read by ``_READ_STEPS``, in its order (a file's first error is the one reported).
        """
        from ..yamlio import Section

        if not isinstance(data, Mapping):
            raise UserError(f"{source}: not a run description (expected a mapping)")
        sec = Section(data, source)
        values: Dict[str, Any] = {"run": _read_identity(sec, run), "from_scenario": "scenario_params" in data}
        for step in _READ_STEPS:
            values.update(step(sec, data, values))
        known = {"side", "variant", "scenario", "k", OUTCOME_KEY, FILES_KEY, *_ORDER}
        values["extra"] = {key: value for key, value in data.items() if key not in known}
        return cls(**values)


def _read_identity(sec, run: Optional[RunId]) -> RunId:
    """side, variant, scenario, k of a run.yaml (``run``: the directory's, for the keys the file lacks)."""
    known = dataclasses.asdict(run) if run is not None else {}
    required = run is None
    side = sec.string("side", known.get("side"), required=required, choices=SIDES)
    variant = sec.string("variant", known.get("variant"), required=required)
    scenario = sec.string("scenario", known.get("scenario"), required=required)
    k = sec.integer("k", known.get("k"), required=required, minimum=0)
    for key, value in (("variant", variant), ("scenario", scenario)):
        if not value:
            raise sec.error(key, "must not be empty")
    if (side == REAL) != (variant == REAL):
        raise sec.error("variant", f"{variant!r} on side {side!r}: the real side's variant, and only "
                                   "it, is 'real'")
    return RunId(side, variant, scenario, k)


def _scalar(key: str, kind: str, **options):
    """A step reading the scalar ``key`` with the yamlio.Section reader ``kind``."""
    return lambda sec, _data, _values: {key: getattr(sec, kind)(key, **options)}


def _container(key: str, expected: type, what: str):
    """A step reading ``key`` as a list or mapping (its content is checked by later steps)."""
    def read(sec, data, _values) -> dict:
        value = data.get(key)
        if value is not None and not isinstance(value, expected):
            raise sec.error(key, f"expected {what}, got {value!r}")
        return {key: value}

    return read


def _check_replaced(sec, _data, values) -> dict:
    if values["replaced"] is not None and not set(values["replaced"]) <= set(SENSORS):
        raise sec.error("replaced", f"expected sensors among gps, imu, got {values['replaced']!r}")
    return {}


def _check_window(sec, _data, values) -> dict:
    window = values["window_ns"]
    if window is not None and not (len(window) == 2 and all(_is_int(v) for v in window)
                                   and window[0] <= window[1]):
        raise sec.error("window_ns", f"expected [start, end] integer ns with start <= end, got {window!r}")
    return {}


def _check_timing(sec, _data, _values) -> dict:
    """run.yaml ``timing`` (when present): the model and the run's values in ns."""
    timing = sec.section("timing")
    if not timing.data:
        return {}
    timing.string("model", required=True, choices=TIMING_MODELS)
    for key in ("ekf_phase_ns", "navsat_phase_ns", "tick_latency_ns"):
        timing.integer(key, required=True, minimum=0)
    timing.integer("seed", minimum=0)
    return {}


def _check_initial_state(sec, _data, _values) -> dict:
    """run.yaml ``initial_state`` (when present): ``source: truth`` and, once judged, where and what."""
    start = sec.section("initial_state")
    if not start.data:
        return {}
    start.string("source", required=True, choices=("truth",))
    start.integer("stamp_ns")
    state = start.data.get("state")
    if state is not None and not (isinstance(state, list) and len(state) == 15 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in state)):
        raise start.error("state", f"expected the 15 numbers of robot_localization's state, got {state!r}")
    return {}


def _read_models(sec, data, _values) -> dict:
    """``gps`` / ``imu``: "real" or the model's effective parameters."""
    out = {}
    for key in SENSORS:
        value = data.get(key)
        if value is not None and value != REAL and not isinstance(value, Mapping):
            raise sec.error(key, f"expected 'real' or the model's parameters (a mapping), got {value!r}")
        out[key] = value
    return out


def _check_judge(sec, _data, _values) -> dict:
    """``judge``: the config files, their SHA-256 and the static TFs."""
    judge = sec.section("judge")
    for key in ("ekf", "navsat"):
        judge.string(key)
        digest = judge.string(f"{key}_sha256")
        if digest is not None and not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise judge.error(f"{key}_sha256", f"expected a SHA-256 hex digest, got {digest!r}")
    tfs = judge.data.get("static_tfs")
    if tfs is not None and not (isinstance(tfs, list) and all(isinstance(t, str) for t in tfs)):
        raise judge.error("static_tfs", "expected a list of 'PARENT CHILD x y z yaw pitch roll', "
                                        f"got {tfs!r}")
    return {}


def _read_topics(sec, data, _values) -> dict:
    """``topics`` / ``input_topics``: {role: absolute topic name}."""
    out = {}
    for key in ("topics", "input_topics"):
        section = sec.section(key)
        for role in section.data:
            topic = section.string(str(role))
            if topic is not None and not topic.startswith("/"):
                raise section.error(str(role), f"expected an absolute topic name, got {topic!r}")
        out[key] = dict(section.data) if key in data and data[key] is not None else None
    return out


def _read_version(sec, data, _values) -> dict:
    version = data.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, (str, int, float))):
        raise sec.error("version", f"expected a version string, got {version!r}")
    return {"version": version}


def _check_files(sec, _data, values) -> dict:
    """``files``: {name: {size, sha256}}."""
    for name, record in (values[FILES_KEY] or {}).items():
        digest = record.get("sha256") if isinstance(record, Mapping) else None
        if not (isinstance(record, Mapping) and _is_int(record.get("size"))
                and isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
            raise sec.error(f"{FILES_KEY}.{name}", f"expected {{size, sha256}}, got {record!r}")
    return {}



def incomplete_reason(record: Mapping) -> Optional[str]:
    """Why the run of a run.yaml mapping is incomplete (``complete: false``), else None (complete, or
    written before the ``complete`` key existed)."""
    if record.get(COMPLETE_KEY) is not False:
        return None
    failure = record.get(FAILURE_KEY)
    return str(failure) if failure else "marked incomplete"


TIMING_MODELS = ("fixed", "random")  # the judge's timing models (runs.timing)


# How run.yaml is read after its identity: one step per key or check, in this order; each step returns
# the values it read ({} for a check).
_READ_STEPS = (
    _scalar("seed", "integer", minimum=0),
    _scalar("source", "string"),
    _scalar("ground_truth_rate", "number", positive=True),
    _scalar("warmup_s", "number", nonnegative=True),
    _scalar("ground_truth_source", "string"),
    _scalar("storage", "string", choices=STORAGES),
    _scalar("recorded_by", "string"),
    _scalar(COMPLETE_KEY, "boolean"),
    _scalar(FAILURE_KEY, "string"),
    _container("seed_keys", list, "a list"),
    _container("replaced", list, "a list"),
    _container("window_ns", list, "a list"),
    _check_replaced,
    _check_window,
    *(_container(key, Mapping, "a mapping") for key in ("scenario_params", "models", "judge", "timing",
                                                          "initial_state", OUTCOME_KEY, FILES_KEY)),
    _check_timing,
    _check_initial_state,
    _read_models,
    _check_judge,
    _read_topics,
    _read_version,
    _check_files,
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_run_info(run_dir, run: Optional[RunId] = None) -> RunInfo:
    """The validated run.yaml of the run directory ``run_dir`` (``run``: its identity from the layout,
    for identity keys the file lacks)."""
    from ..yamlio import load_yaml

    run_file = Path(run_dir) / RUN_FILE
    if not run_file.is_file():
        raise UserError(f"{run_dir}: no {RUN_FILE} (not a run directory written by the pipeline)")
    return RunInfo.from_dict(load_yaml(run_file), str(run_file), run)


def bag_run_info(run: RunId, bag, seed: int, judge: dict, *, replace: Optional[Mapping] = None,
                 gps: Any = REAL, imu: Any = REAL, window_ns=None, timing: Optional[Mapping] = None,
                 initial_state: Optional[Mapping] = None, warmup_s: Optional[float] = None,
                 ground_truth_rate: Optional[float] = None,
                 ground_truth_source: Optional[str] = None, storage: Optional[str] = None,
                 input_topics: Optional[Mapping] = None, seed_keys: Optional[Sequence] = None,
                 recorded_by: Optional[str] = None) -> RunInfo:
    """The record of a run made from a real bag (offline replay, the demo, the ROS launch).

    ``replace``: {sensor: model spec} of the simulated streams (empty on the real run); ``gps`` /
    ``imu``: their effective parameters (``model_parameters``), ``"real"`` for a real stream; ``timing``:
    the judge's timer timing record (None: the default).
    """
    simulated = run.side != REAL
    return RunInfo(
        run, seed=int(seed), seed_keys=None if seed_keys is None else list(seed_keys),
        source=str(Path(bag).resolve()),
        replaced=[s for s in SENSORS if s in (replace or {})] if simulated else None,
        models={sensor: plain(spec) for sensor, spec in (replace or {}).items()} if simulated else None,
        gps=gps, imu=imu, window_ns=None if window_ns is None else [int(v) for v in window_ns], judge=judge,
        timing=None if timing is None else dict(timing),
        initial_state=None if initial_state is None else dict(initial_state), warmup_s=warmup_s,
        ground_truth_rate=ground_truth_rate,
        ground_truth_source=ground_truth_source, storage=storage,
        input_topics=None if input_topics is None else dict(input_topics), topics=run_topics(),
        recorded_by=recorded_by, version=__version__)


