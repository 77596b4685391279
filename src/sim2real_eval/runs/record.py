"""What a run is: its identity, its directory, its ``run.yaml`` — one definition for every writer and reader.

A **run** is one judged bag: ``OUT/<side>/<variant>/<scenario>/<k>/`` is a rosbag2 directory with
``run.yaml`` inside (docs/architecture.md, "runs").  Writers: the offline pipeline (simulated runs,
replayed real bags), the demo, and the ROS launch's recorder_node; readers: the scorer, resume, tune.
All of them use this module for

- the identity ``RunId(side, variant, scenario, k)``: its label, its directory (``RunId.directory``
  encodes the layout, ``find_runs`` decodes it) and the run key of its random streams (``seed_keys``);
- the names of a real bag's runs (``name_real_bag``, ``find_real_bags``): the documented layout of
  real bags is ``DIR/<scenario>/<run>/``, so a bag's scenario is its folder's name and its ``k`` its
  position among the bags of that folder (sorted by name);
- the run.yaml record ``RunInfo`` (typed; ``to_dict``/``to_yaml`` write it in one key order,
  ``RunInfo.from_dict``/``read_run_info`` validate it) and the builders of its parts
  (``judge_record``, ``model_parameters``, ``bag_run_info``);
- resume: ``existing_run`` (a complete matching run is kept, a different or incomplete one refused);
- completeness: ``complete``/``failure`` in run.yaml (``RunInfo.incomplete``, ``mark_run``): a run that
  did not finish (a node died, the launch failed or was stopped) says so, and readers refuse it;
- ``file_sha256``, the one file digest of the package.

Robot-side: Python 3.8, standard library + PyYAML (+ the models, imported lazily), so the ROS
recorder builds its run.yaml with the same code as the offline pipeline.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .art import GPS_ODOMETRY_TOPIC, TOPICS
from .errors import UserError
from .outputs import file_record

RUN_FILE = "run.yaml"
REAL = "real"
SIDES = (REAL, "sim")
SENSORS = ("gps", "imu")
STORAGES = ("sqlite3", "mcap")
OUTCOME_KEY = "judge_outcome"  # written after the judge ran: an output, never compared on resume
FILES_KEY = "files"  # {name: {size, sha256}} of the run's data files, written with them; checked on resume
# Written by every writer since 0.1.0+ (the offline pipeline: true, as the run is written only after its
# judge finished; the ROS launch: false until the launch confirms the bag was played to its end).
COMPLETE_KEY, FAILURE_KEY = "complete", "failure"
LAYOUT = "OUT/<side>/<variant>/<scenario>/<k>/"

# Names become directory components: keep them portable and unambiguous.  Always ``fullmatch``: ``$``
# also matches before a final newline, and ``\d`` / str.isdigit accept any Unicode digit ('٢', '²').
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
NAME_RULE = "ASCII letters, digits, '_', '.', '+', '-'"
NUMBER_PATTERN = re.compile(r"[0-9]+")


def is_name(value: Any) -> bool:
    """``value`` can name a directory of the layout (the whole string matches ``NAME_PATTERN``)."""
    return isinstance(value, str) and NAME_PATTERN.fullmatch(value) is not None


def is_number(text: Any) -> bool:
    """``text`` is a run number k as written in a name: ASCII digits only, nothing else."""
    return isinstance(text, str) and NUMBER_PATTERN.fullmatch(text) is not None


def check_name(value: Any, what: str) -> str:
    """``value`` if it can name a directory of the layout, else a UserError naming ``what``."""
    if not is_name(value):
        raise UserError(f"{what} {value!r}: use {NAME_RULE} (it names a directory)")
    return value


# ------------------------------------------------------------------------------------ identity
@dataclass(frozen=True)
class RunId:
    """Which run: ``side`` (sim | real), ``variant`` (``real`` on the real side), ``scenario``, ``k``."""

    side: str
    variant: str
    scenario: str
    k: int

    @property
    def label(self) -> str:
        return f"{self.side}/{self.variant}/{self.scenario}/{self.k}"

    def directory(self, out) -> Path:
        """``OUT/<side>/<variant>/<scenario>/<k>``: the one encoding of the layout."""
        return Path(out) / self.side / self.variant / self.scenario / str(int(self.k))

    @property
    def seed_keys(self) -> tuple:
        """The run key of the run's sensor streams: ``sensor_seed(seed, *seed_keys, "gps" | "imu")``."""
        return (self.variant, self.scenario, self.k)


def run_directory(out, side: str, variant: str, scenario: str, k: int) -> Path:
    return RunId(side, variant, scenario, int(k)).directory(out)


def _visible_dirs(path: Path) -> list:
    # Hidden entries are atomic-write temporaries (".name.tmp-..."): never complete runs.
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


def find_runs(root, exclude_scenarios: Iterable[str] = ()) -> List[Tuple[RunId, Path]]:
    """Every run directory under ``root`` (the layout decoded), in side/variant/scenario/k name order.

    Only the directory names are read; ``read_run_info`` reads a run's record.
    """
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory (expected {LAYOUT})")
    sides = [p for p in _visible_dirs(root) if p.name in SIDES]
    if not sides:
        raise UserError(f"{root}: no real/ or sim/ folder (expected {LAYOUT})")
    excluded = set(exclude_scenarios)
    found = []
    for side_dir in sides:
        for variant_dir in _visible_dirs(side_dir):
            for scenario_dir in _visible_dirs(variant_dir):
                for folder, what in ((variant_dir, "variant"), (scenario_dir, "scenario")):
                    if not is_name(folder.name):
                        raise UserError(f"{folder}: folder name {folder.name!r} cannot name a {what} "
                                        f"({NAME_RULE})")
                if scenario_dir.name in excluded:
                    continue
                for run_dir in _visible_dirs(scenario_dir):
                    if not is_number(run_dir.name):
                        raise UserError(f"{run_dir}: run folder name must be the run number k "
                                        "(ASCII digits 0-9)")
                    found.append((RunId(side_dir.name, variant_dir.name, scenario_dir.name,
                                        int(run_dir.name)), run_dir))
    return found


# ------------------------------------------------------------------------ names of real bags
def is_bag(path: Path) -> bool:
    """A rosbag2 directory (metadata.yaml) or a ROS 1 .bag file; hidden entries are temporaries."""
    path = Path(path)
    if path.name.startswith("."):
        return False
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.is_file() and path.suffix == ".bag"


def bags_in(folder: Path) -> list:
    """The bags directly inside ``folder``, sorted by name."""
    return sorted(p for p in Path(folder).iterdir() if is_bag(p))


@dataclass(frozen=True)
class RealBag:
    """A real bag and the names of its runs: ``scenario`` and repeat ``k``."""

    path: str
    scenario: str
    k: int


def _bag_path(path) -> Path:
    """The bag as named: absolute but not resolved (a symlinked bag keeps its folder's names); a data
    file inside a rosbag2 directory stands for that directory."""
    bag = Path(os.path.abspath(str(path)))
    if bag.is_file() and bag.suffix != ".bag" and (bag.parent / "metadata.yaml").is_file():
        bag = bag.parent
    return bag


def name_real_bag(path, scenario: Optional[str] = None, k: Optional[int] = None) -> RealBag:
    """The one naming rule of a real bag ``DIR/<scenario>/<run>``: scenario = the bag's folder name,
    k = the bag's position among the bags of that folder (sorted by name, as ``find_real_bags``).

    ``scenario`` / ``k`` override the rule (``replay --scenario/--k``).
    """
    bag = _bag_path(path)
    if not bag.exists():
        raise UserError(f"{path}: no such bag")
    if scenario is None:
        scenario = bag.parent.name
        if not is_name(scenario):
            raise UserError(f"{path}: its folder {scenario!r} cannot name the scenario "
                            f"(DIR/<scenario>/<run>/ with {NAME_RULE}); give it with --scenario NAME")
    else:
        check_name(scenario, "--scenario")
    if k is None:
        siblings = sorted(set(bags_in(bag.parent)) | {bag})
        k = siblings.index(bag)
    elif isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UserError(f"--k {k!r}: expected an integer >= 0")
    return RealBag(str(bag), scenario, int(k))


def find_real_bags(paths: Sequence, scenario: Optional[str] = None, limit: Optional[int] = None,
                   what: str = "") -> List[RealBag]:
    """The real bags of ``paths``, named by the one rule.  Each path is a bag (``DIR/<scenario>/<run>``),
    a scenario folder (``DIR/<scenario>/``: its bags) or a folder of scenario folders (``DIR/``).

    ``limit``: at most that many bags per scenario folder (the first by name).  ``scenario``
    overrides the scenario name of every bag.  ``what`` prefixes the errors (e.g. "--real").
    """
    prefix = f"{what} " if what else ""
    found: List[RealBag] = []
    for given in paths:
        path = Path(os.path.abspath(str(given)))
        if not path.exists():
            raise UserError(f"{prefix}{given}: no such bag")
        if is_bag(path) or path.is_file():
            found.append(name_real_bag(given, scenario))
            continue
        if not path.is_dir():
            raise UserError(f"{prefix}{given}: not a bag or a folder of bags")
        folders = [path] if bags_in(path) else _visible_dirs(path)
        count = len(found)
        for folder in folders:
            name = scenario if scenario is not None else folder.name
            bags = bags_in(folder)[:limit]
            if bags and not is_name(name):
                raise UserError(f"{prefix}{folder}: folder name {name!r} cannot name a scenario "
                                f"({NAME_RULE})")
            found += [RealBag(str(bag), name, k) for k, bag in enumerate(bags)]
        if len(found) == count:
            raise UserError(f"{prefix}{given}: no bags found (expected a bag, DIR/<run>/ or "
                            "DIR/<scenario>/<run>/ with rosbag2 folders or .bag files)")
    seen: Dict[tuple, str] = {}
    for bag in found:
        key = (bag.scenario, bag.k)
        if key in seen and seen[key] != bag.path:
            raise UserError(f"{bag.path}: same scenario {bag.scenario!r} and k = {bag.k} as {seen[key]} "
                            "(give bags of one folder per scenario, or --scenario/--k for one bag)")
        seen[key] = bag.path
    return list({(bag.scenario, bag.k): bag for bag in found}.values())


def model_label(spec: Any) -> str:
    """Short name of a model spec: the preset name, a YAML file's stem, an inline dict's ``name``."""
    if isinstance(spec, str):
        return Path(spec).stem if spec.endswith((".yaml", ".yml")) else spec
    if isinstance(spec, dict) and isinstance(spec.get("name"), str):
        return spec["name"]
    raise UserError(f"--replace: cannot name the model {spec!r} (give a preset name or a YAML file)")


def replay_variant(replace: Mapping) -> str:
    """``{"imu": "chrono_paper_demo"}`` → ``sim_imu-chrono_paper_demo`` (sensors in gps, imu order)."""
    parts = [f"{sensor}-{model_label(replace[sensor])}" for sensor in SENSORS if sensor in replace]
    return "sim_" + "_".join(parts)


def bag_run_id(bag: RealBag, replace: Mapping, variant: Optional[str] = None) -> RunId:
    """The run made from ``bag`` with the streams of ``replace`` simulated ({} = the real run)."""
    if not replace:
        return RunId(REAL, REAL, bag.scenario, bag.k)
    return RunId("sim", variant or replay_variant(replace), bag.scenario, bag.k)


# ---------------------------------------------------------------------------------- record parts
def file_sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes: the identity of a judge configuration in run.yaml.

    Cached per (path, size, modification time), so an edited file is hashed again."""
    import stat as stat_module

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
    from .models import load_gps_model, load_imu_model

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
    - ``judge``: ``judge_record``; ``timing``: the judge's timer timing (``pipeline.timing``: ``model``
      fixed | random, ``ekf_phase_ns``, ``navsat_phase_ns``, ``tick_latency_ns``, for random its
      ``seed`` and ``latency`` distribution), absent for the default (fixed 0 / 0 / 0);
      ``initial_state``: the judge started from the truth (``pipeline.start``): ``{source: truth,
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
        """This record with the values of its ``initial_state: {source: truth}`` (``pipeline.start``): the
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
        from .yamlio import dump_yaml

        return dump_yaml(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, source: str, run: Optional[RunId] = None) -> RunInfo:
        """Validate a run.yaml mapping; errors are one line naming ``source`` and the key.

        ``run``: the identity of the directory the file is in, used for identity keys the file lacks
        (a hand-written run.yaml may give only ``topics``); without it they are required.  The other keys
        are read by ``_READ_STEPS``, in its order (a file's first error is the one reported).
        """
        from .yamlio import Section

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


TIMING_MODELS = ("fixed", "random")  # the judge's timing models (pipeline.timing)


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
    from .yamlio import load_yaml

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
    from . import __version__

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


# ------------------------------------------------------------------------------------------ resume
def _comparable(record: dict) -> dict:
    """run.yaml fields that must match for an existing run to count as this run.

    Not compared: the package version, the judge's outcome, the completeness mark (an incomplete run is
    refused before), the data files' record (checked against the files, ``check_data_files``), the judge
    files' paths (their sha256 are compared) and the values of ``initial_state`` (its source is compared;
    the values are the run's truth at its first instant), so an output tree survives a reinstall or a
    moved config directory.
    """
    out = {k: v for k, v in record.items()
           if k not in ("version", OUTCOME_KEY, FILES_KEY, COMPLETE_KEY, FAILURE_KEY)}
    if isinstance(out.get("judge"), dict):
        out["judge"] = {k: v for k, v in out["judge"].items() if k not in ("ekf", "navsat")}
    if isinstance(out.get("initial_state"), dict):  # its values follow from the run's truth and window
        out["initial_state"] = {"source": out["initial_state"].get("source")}
    return out


def first_difference(a: Any, b: Any, prefix: str = "") -> Optional[str]:
    """The dotted path of the first difference between two YAML documents (None when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{prefix}.{key}" if prefix else str(key)
            if key not in a or key not in b:
                return where
            diff = first_difference(a[key], b[key], where)
            if diff:
                return diff
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return prefix
        for i, (x, y) in enumerate(zip(a, b)):
            diff = first_difference(x, y, f"{prefix}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else (prefix or "value")


def existing_run(path, record: Union[RunInfo, Mapping]) -> bool:
    """True when ``path`` holds this run already: its run.yaml is the requested record and its data files
    are the ones written (``check_data_files``); False when absent; UserError when either differs."""
    import yaml

    from .yamlio import dump_yaml, load_yaml

    path = Path(path)
    if not os.path.lexists(path):
        return False
    run_file = path / RUN_FILE
    if path.is_symlink() or not run_file.is_file():
        raise UserError(f"{path}: exists but has no {RUN_FILE}, so it is not a run; "
                        "remove it or choose another --out")
    found = load_yaml(run_file)
    if not isinstance(found, dict):
        raise UserError(f"{run_file}: not a run description (expected a mapping)")
    if incomplete_reason(found):
        raise UserError(f"{path}: an incomplete run ({incomplete_reason(found)}); "
                        "remove it or choose another --out")
    expected = record.to_dict() if isinstance(record, RunInfo) else dict(record)
    # Round-trip the expected record through YAML so tuples/lists and floats compare like on disk.
    expected = yaml.safe_load(dump_yaml(expected))
    diff = first_difference(_comparable(found), _comparable(expected))
    if diff:
        raise UserError(
            f"{run_file}: an existing run differs from the requested one at '{diff}'; "
            "remove it or choose another --out"
        )
    check_data_files(path, found)
    return True


def check_data_files(path, found: Mapping) -> None:
    """The run's data files are what run.yaml ``files`` recorded when they were written (size, then
    SHA-256, each file read once); a run written before ``files`` existed (or by the ROS recorder, which
    does not write it) must have the storage files its metadata.yaml names, holding per topic the
    number of messages metadata.yaml records (``stored_message_counts``).  Otherwise one line naming
    the run: it is not resumed nor scored (its bag was truncated, deleted or replaced after it was
    written — rejudging or scoring it would hide that), the user removes it.  Every reader calls this:
    resume (``existing_run``), score and tune (``metrics.inputs.load_and_score``)."""
    path = Path(path)
    label = "/".join(str(found.get(key)) for key in ("side", "variant", "scenario", "k"))
    recorded = found.get(FILES_KEY)
    problem = None
    if isinstance(recorded, Mapping):
        problem = _recorded_files_problem(path, recorded)
    else:
        problem = _unrecorded_files_problem(path)
    if problem:
        raise UserError(f"{path}: run {label}: {problem}; the run's data changed after it was written "
                        f"(truncated, deleted or replaced): remove {path} to judge it again")


def _recorded_files_problem(path: Path, recorded: Mapping) -> Optional[str]:
    import stat as stat_module

    from .outputs import own_file, plain_relative

    for name in sorted(recorded):
        record = recorded[name]
        if not plain_relative(str(name)) or "/" in str(name):
            return f"run.yaml lists {name!r} among its files, not a file name of the run folder"
        file = path / str(name)
        try:
            found = os.stat(file, follow_symlinks=False)
        except OSError:
            return f"{name} is missing"
        if not stat_module.S_ISREG(found.st_mode):
            return f"{name} is missing (a {'symbolic link' if file.is_symlink() else 'non-file'} is there)"
        if not isinstance(record, Mapping) or found.st_size != record.get("size"):
            size = record.get("size") if isinstance(record, Mapping) else record
            return f"{name} has {found.st_size} bytes, {size} when written"
        if not own_file(path, str(name), dict(record)):
            return f"{name} has other bytes than when written (SHA-256 differs)"
    listed = _metadata_files(path)
    if listed is not None and "metadata.yaml" not in recorded:
        return "metadata.yaml is there, but run.yaml's files do not record it"
    if isinstance(listed, list):
        unlisted = [name for name in listed if name not in recorded]
        if unlisted:
            return f"metadata.yaml names {unlisted[0]}, which run.yaml's files do not record"
    return None


def _metadata_files(path: Path):
    """The storage files metadata.yaml names (a list), None without metadata.yaml, or a problem (str)."""
    from .yamlio import load_yaml

    metadata = path / "metadata.yaml"
    if not metadata.is_file():
        return None
    try:
        names = load_yaml(metadata)["rosbag2_bagfile_information"]["relative_file_paths"]
    except (UserError, KeyError, TypeError):
        return "metadata.yaml is not a rosbag2 metadata file"
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "metadata.yaml is not a rosbag2 metadata file"
    return names


def _unrecorded_files_problem(path: Path) -> Optional[str]:
    """A run.yaml without ``files``: its bag must be whole as metadata.yaml describes it."""
    names = _metadata_files(path)
    if names is None:
        return "run.yaml records no data files (files:) and there is no metadata.yaml to check the bag " \
               "against"
    if isinstance(names, str):
        return names
    for name in names:
        if "/" in name or not (path / name).is_file() or (path / name).is_symlink():
            return f"{name} is missing"
    try:
        stored = stored_message_counts(path, names)
    except UserError as exc:
        return f"its bag cannot be read ({exc})"
    from .yamlio import load_yaml

    info = load_yaml(path / "metadata.yaml")["rosbag2_bagfile_information"]
    for entry in info.get("topics_with_message_count") or []:
        try:
            topic, count = entry["topic_metadata"]["name"], int(entry["message_count"])
        except (KeyError, TypeError, ValueError):
            return "metadata.yaml is not a rosbag2 metadata file"
        if stored.get(topic, 0) != count:
            return f"topic {topic} holds {stored.get(topic, 0)} messages, metadata.yaml records {count}"
    return None


def stored_message_counts(path, names: Sequence[str]) -> Dict[str, int]:
    """{topic: messages actually stored} in the storage files ``names`` of the bag directory ``path``
    (each read once, read-only): SQLite files counted by SQL, MCAP files by reading them (``bags``)."""
    import sqlite3
    from urllib.parse import quote

    path = Path(path)
    counts: Dict[str, int] = {}
    if any(not name.endswith(".db3") for name in names):
        import struct

        from rosbags.rosbag2 import Reader, ReaderError  # offline only: MCAP runs are written offline

        try:
            with Reader(path) as reader:
                for connection, _stamp, _data in reader.messages():
                    counts[connection.topic] = counts.get(connection.topic, 0) + 1
        except (ReaderError, struct.error, EOFError, OSError, ValueError, KeyError, IndexError,
                AssertionError, RuntimeError) as exc:  # what a damaged MCAP file raises in rosbags
            raise UserError(" ".join(str(exc).split()) or type(exc).__name__) from None
        return counts
    for name in names:
        uri = f"file:{quote(os.path.abspath(path / name))}?mode=ro&immutable=1"
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
                rows = conn.execute("SELECT topics.name, COUNT(messages.id) FROM topics LEFT JOIN messages "
                                    "ON messages.topic_id = topics.id GROUP BY topics.id").fetchall()
        except sqlite3.Error as exc:
            raise UserError(f"{name}: {exc}") from None
        for topic, count in rows:
            counts[topic] = counts.get(topic, 0) + int(count)
    return counts


def mark_run(run_dir, failure: Optional[str]) -> RunInfo:
    """Rewrite ``run_dir``/run.yaml marked complete (``failure`` None) or incomplete for ``failure``
    (atomically: the file is whole before and after).  Every other key keeps its value and order."""
    from .atomic import atomic_file

    info = read_run_info(run_dir).marked(failure)
    with atomic_file(Path(run_dir) / RUN_FILE, overwrite=True, encoding="utf-8") as stream:
        stream.write(info.to_yaml())
    return info


def remove_stale_temporaries(path) -> None:
    """Remove leftovers of a run killed hard (SIGKILL) while building ``path`` (atomic.py siblings).
    Links are unlinked, never followed."""
    from .atomic import temp_prefix

    path = Path(path)
    parent = path.parent
    if parent.is_dir() and not parent.is_symlink():
        prefix = temp_prefix(path)
        for name in os.listdir(parent):
            stale = parent / name
            if not name.startswith(prefix):
                continue
            if stale.is_symlink() or not stale.is_dir():
                stale.unlink(missing_ok=True)
            else:
                shutil.rmtree(stale, ignore_errors=True)


__all__ = ["FILES_KEY", "LAYOUT", "NAME_PATTERN", "OUTCOME_KEY", "REAL", "RUN_FILE", "SENSORS", "SIDES",
           "STORAGES", "RealBag", "RunId", "RunInfo", "bag_run_id", "bag_run_info", "bags_in",
           "check_data_files", "check_name", "data_files", "existing_run", "file_record", "file_sha256",
           "find_real_bags", "find_runs", "first_difference", "incomplete_reason", "is_bag", "is_name",
           "is_number", "judge_record", "mark_run", "model_label", "model_parameters", "name_real_bag",
           "plain", "read_run_info", "remove_stale_temporaries", "replay_variant",
           "run_directory", "run_topics", "stored_message_counts"]
