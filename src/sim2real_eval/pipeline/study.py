"""Study files (``config/studies/*.yaml``): scenarios × K repeats × sensor variants, one judge.

A study file, every key checked (unknown keys are errors naming the file and key)::

    name: paper_gps                 # optional, default: the file name without .yaml
    seed: 2024                      # study seed; every random stream derives from it (sensor_seed)
    repeats: 10                     # K, runs per (variant, scenario)
    scenarios: [line, sine, circle] # names, or a mapping name -> scenario parameters (dict)
    variants:                       # name -> GPS and IMU model (preset name or inline dict)
      ch_gauss: {gps: ch_gauss, imu: chrono_paper_demo}
    matrix:                         # alternative to / in addition to `variants`: the cross product
      gps: [ch_gauss, ch_rw]        #   variant name = the GPS name when there is one IMU, the IMU
      imu: [chrono_paper_demo]      #   name when there is one GPS, otherwise "<gps>+<imu>"
    judge:
      ekf: ekf_art_iros2024.yaml    # relative to the study file's folder, else to config/
      navsat: navsat_art_iros2024.yaml
      static_tfs:                   # "PARENT CHILD x y z yaw pitch roll" (static_transform_publisher)
        - base_link imu 0 0 0 3.1416 -1.5708 0
        - base_link gps 0 0 0 0 0 0
      timing: {model: random}       # the timers' timing (runs.timing): random draws per run (seed:
                                    # the study's, or `seed: S`); or {model: fixed, ekf_phase_ms: 12,
                                    # navsat_phase_ms: 9, tick_latency_ms: 0}; default fixed 0/0/0
      initial_state: truth          # ekf_node's initial_state from each run's truth at its first instant
                                    # (runs.start); default `config`: the ekf YAML's own
      warmup_s: 1.0                 # seconds at the start of each run the scorer skips (run.yaml
                                    # warmup_s; `score` reads it); default 0
    ground_truth_rate: 50           # Hz of /ground_truth/odom in the run bags
    storage: sqlite3                # or mcap

Inline model dicts inside ``matrix`` need a ``name`` key (it becomes part of the variant name and is
removed before the dict reaches the model loader).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..art import ART_STATIC_TFS, EKF_CONFIG, NAVSAT_CONFIG
from ..bags.records import DEFAULT_GROUND_TRUTH_RATE, check_ground_truth_rate
from ..errors import UserError
from ..judge.config import JudgeConfig
from ..judge.tf import parse_static_tf
from ..limits import check_repeats
from ..resources import config_path
from ..runs import NAME_RULE, STORAGES, is_name
from ..runs.start import INITIAL_STATES
from ..runs.timing import TimingModel
from ..yamlio import Section, load_yaml
from .simulated_run import SimRunSpec

TOP_KEYS = ("name", "seed", "repeats", "scenarios", "variants", "matrix", "judge", "ground_truth_rate",
            "storage")
JUDGE_KEYS = ("ekf", "navsat", "static_tfs", "timing", "initial_state", "warmup_s")


@dataclass(frozen=True)
class Variant:
    name: str
    gps: Any  # preset name, YAML path, or inline dict (as models.load_gps_model accepts)
    imu: Any


@dataclass(frozen=True)
class Study:
    name: str
    source: str
    seed: int
    repeats: int
    scenarios: dict  # name -> scenario parameters (None = the scenario's defaults)
    variants: tuple  # of Variant, in file order
    judge: JudgeConfig
    ground_truth_rate: float = DEFAULT_GROUND_TRUTH_RATE
    storage: str = "sqlite3"

    def runs(self, storage: str | None = None, variants=None, scenarios=None) -> list[SimRunSpec]:
        """Every run of the study, ordered variant → scenario → k (the order of the files).

        ``variants`` (Variant objects) / ``scenarios`` (names) replace the study's own (tune: the
        candidate model on the scored scenarios)."""
        variants = self.variants if variants is None else variants
        if scenarios is None:
            scenarios = self.scenarios
        else:
            scenarios = {name: self.scenarios[name] for name in scenarios}
        return [
            SimRunSpec(
                variant=variant.name,
                scenario=scenario,
                k=k,
                seed=self.seed,
                gps=variant.gps,
                imu=variant.imu,
                judge=self.judge,
                scenario_params=params,
                ground_truth_rate=self.ground_truth_rate,
                storage=storage or self.storage,
            )
            for variant in variants
            for scenario, params in scenarios.items()
            for k in range(self.repeats)
        ]


def check_name(section: Section, key: str, value: Any, what: str) -> str:
    if not is_name(value):
        raise section.error(key, f"{what} {value!r} must be a string of {NAME_RULE}")
    return value


def resolve_config_file(section: Section, key: str, value: str, base_dir: Path) -> Path:
    """A judge config path: absolute, or relative to the study file's folder, else to config/."""
    path = Path(value).expanduser()
    candidates = [path] if path.is_absolute() else [base_dir / path, config_path(value)]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise section.error(key, f"file {value!r} not found (looked in: {', '.join(map(str, candidates))})")


def parse_static_tf_text(text: str, where: str) -> str:
    """Validate "PARENT CHILD x y z yaw pitch roll" with the judge's parser; error names ``where``."""
    try:
        parse_static_tf(text)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    return " ".join(str(text).split())


def load_judge_config(section: Section, base_dir: Path) -> JudgeConfig:
    section.unknown_keys(JUDGE_KEYS)
    ekf = resolve_config_file(section, "ekf", section.string("ekf", EKF_CONFIG), base_dir)
    navsat = resolve_config_file(section, "navsat", section.string("navsat", NAVSAT_CONFIG), base_dir)
    raw_tfs = section.data.get("static_tfs", list(ART_STATIC_TFS))
    if not isinstance(raw_tfs, list):
        raise section.error("static_tfs", f"expected a list of strings, got {raw_tfs!r}")
    tfs = tuple(parse_static_tf_text(tf, f"{section.source}: {section.name('static_tfs')}[{i}]")
                for i, tf in enumerate(raw_tfs))
    timing = TimingModel.from_section(section.section("timing")) if section.has("timing") else TimingModel()
    initial_state = section.string("initial_state", "config", choices=INITIAL_STATES)
    warmup = section.number("warmup_s", 0.0, nonnegative=True)
    return JudgeConfig(ekf=str(ekf), navsat=str(navsat), static_tfs=tfs, timing=timing,
                       initial_state=initial_state, warmup_s=warmup)


def _model_spec(section: Section, key: str, value: Any) -> Any:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, dict) and value:
        return dict(value)
    raise section.error(key, f"expected a preset name or a mapping of model parameters, got {value!r}")


def _matrix_entry(section: Section, key: str, index: int, value: Any) -> tuple[str, Any]:
    where = f"{key}[{index}]"
    if isinstance(value, dict):
        value = dict(value)
        name = value.pop("name", None)
        if name is None:
            raise section.error(where, "an inline model needs a 'name' (used in the variant name)")
        return check_name(section, where, name, "name"), _model_spec(section, where, value)
    spec = _model_spec(section, where, value)
    name = Path(spec).stem if spec.endswith((".yaml", ".yml")) else spec
    return check_name(section, where, name, "name"), spec


def load_variants(study: Section) -> tuple:
    variants: dict[str, Variant] = {}
    if study.has("variants"):
        section = study.section("variants")
        if not section.data:
            raise study.error("variants", "must name at least one variant")
        for name in section.data:
            check_name(section, str(name), name, "variant name")
            if name == "real":
                raise section.error(name, "'real' is reserved for the real side")
            entry = section.section(name)
            entry.unknown_keys(("gps", "imu"))
            for key in ("gps", "imu"):
                if not entry.has(key):
                    raise entry.error(key, "missing key")
            variants[name] = Variant(name, _model_spec(entry, "gps", entry.data["gps"]),
                                     _model_spec(entry, "imu", entry.data["imu"]))
    if study.has("matrix"):
        matrix = study.section("matrix")
        matrix.unknown_keys(("gps", "imu"))
        lists = {}
        for key in ("gps", "imu"):
            value = matrix.data.get(key)
            if not isinstance(value, list) or not value:
                raise matrix.error(key, f"expected a non-empty list of presets, got {value!r}")
            lists[key] = [_matrix_entry(matrix, key, i, item) for i, item in enumerate(value)]
        for gps_name, gps in lists["gps"]:
            for imu_name, imu in lists["imu"]:
                if len(lists["imu"]) == 1:
                    name = gps_name
                elif len(lists["gps"]) == 1:
                    name = imu_name
                else:
                    name = f"{gps_name}+{imu_name}"
                if name in variants:
                    raise matrix.error("gps", f"variant name {name!r} is defined twice")
                variants[name] = Variant(name, gps, imu)
    if not variants:
        raise UserError(f"{study.source}: top level: needs 'variants' or 'matrix'")
    return tuple(variants.values())


def load_scenarios(study: Section) -> dict:
    if not study.has("scenarios"):
        raise study.error("scenarios", "missing key")
    raw = study.data["scenarios"]
    out: dict[str, Any] = {}
    if isinstance(raw, list) and raw:
        for i, name in enumerate(raw):
            check_name(study, f"scenarios[{i}]", name, "scenario name")
            if name in out:
                raise study.error(f"scenarios[{i}]", f"scenario {name!r} listed twice")
            out[name] = None
    elif isinstance(raw, dict) and raw:
        section = study.section("scenarios")
        for name, params in raw.items():
            check_name(section, str(name), name, "scenario name")
            if params is not None and not isinstance(params, dict):
                raise section.error(name, f"expected a mapping of scenario parameters, got {params!r}")
            out[name] = dict(params) if params else None
    else:
        raise study.error("scenarios", f"expected a non-empty list of names or a mapping, got {raw!r}")
    return out


def load_study(path) -> Study:
    """Parse and validate a study file; any problem is a UserError naming the file and key."""
    path = Path(path)
    data = load_yaml(path)
    study = Section(data, str(path))
    study.unknown_keys(TOP_KEYS)
    name = study.string("name", path.stem)
    check_name(study, "name", name, "study name")
    seed = study.integer("seed", required=True, minimum=0)
    repeats = study.integer("repeats", required=True, minimum=1)
    storage = study.string("storage", "sqlite3", choices=STORAGES)
    rate = study.number("ground_truth_rate", DEFAULT_GROUND_TRUTH_RATE, positive=True)
    check_ground_truth_rate(rate, f"{path}: ground_truth_rate")
    check_repeats(repeats, f"{path}: repeats")
    return Study(
        name=name,
        source=str(path),
        seed=seed,
        repeats=repeats,
        scenarios=load_scenarios(study),
        variants=load_variants(study),
        judge=load_judge_config(study.section("judge"), path.parent),
        ground_truth_rate=rate,
        storage=storage,
    )
