"""Node parameters → validated configs, or a one-line UserError naming the parameter (robot-side).

One vocabulary: a node parameter has the name of the launch argument that sets it (``gps_model``,
``imu_rate``, ``truth_source``, ``output``…), so ``ros2 run … -p gps_model:=ch_rw`` and
``ros2 launch … gps_model:=ch_rw`` mean the same.

Values arrive as rclpy gives them (``ros.node_runtime.parameter_values``).  A parameter given without a
value — ``seed_keys: []`` in a params file or ``-p seed_keys:=[]`` — reaches the node as ``None``
(rcl stores an empty YAML list as NOT_SET); a list parameter then takes the empty list, any other
parameter is refused naming it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..art import GPS_FRAME, GPS_ODOMETRY_TOPIC, IMU_FRAME, TOPICS
from ..errors import UserError
from ..runs import is_number
from ..static_tf import parse_static_tf_list
from .sensor_stream import TRUTH_MODES, SensorStream
from .ticks import checked_period_ns

# Parameters every rclpy node may carry besides its own (TimeSource, QoS overrides).
ROS_PARAMETERS = ("use_sim_time",)
ROS_PREFIXES = ("qos_overrides.",)


class Parameters:
    """A node's parameters merged over its defaults, with typed getters that name the parameter."""

    def __init__(self, node: str, params: Dict[str, Any], defaults: Dict[str, Any],
                 prefixes: Sequence[str] = ()):
        allowed = set(defaults) | set(ROS_PARAMETERS)
        unknown = sorted(n for n in params if n not in allowed
                         and not any(n.startswith(p) for p in tuple(prefixes) + ROS_PREFIXES))
        if unknown:
            extra = "".join(f" or {p}<key>" for p in prefixes)
            raise UserError(f"{node}: unknown parameter(s) {', '.join(unknown)}; expected "
                            f"{', '.join(sorted(allowed))}{extra}")
        self.params = params
        self.values = dict(defaults)
        for name, value in params.items():
            if name in defaults:
                if value is None and not isinstance(defaults[name], list):
                    raise UserError(f"parameter {name}: given without a value")
                self.values[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def text(self, name: str, allow_empty: bool = False) -> str:
        value = self.values[name]
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            raise UserError(f"parameter {name}: expected a non-empty string, got {value!r}")
        return value.strip()

    def number(self, name: str, minimum: Optional[float] = None, positive: bool = False) -> float:
        value = self.values[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise UserError(f"parameter {name}: expected a number, got {value!r}")
        if positive and not value > 0:
            raise UserError(f"parameter {name}: must be > 0, got {value!r}")
        if minimum is not None and value < minimum:
            raise UserError(f"parameter {name}: expected a number >= {minimum:g}, got {value!r}")
        return float(value)

    def boolean(self, name: str) -> bool:
        value = self.values[name]
        if not isinstance(value, bool):
            raise UserError(f"parameter {name}: expected true/false, got {value!r}")
        return value

    def integer(self, name: str, minimum: int = 0) -> int:
        value = self.values[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UserError(f"parameter {name}: expected an integer >= {minimum}, got {value!r}")
        return int(value)

    def strings(self, name: str) -> List[str]:
        value = self.values[name]
        value = [] if value is None else value
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise UserError(f"parameter {name}: expected a list of strings, got {value!r}")
        return [str(v) for v in value]

    def numbers(self, name: str) -> List[float]:
        value = self.values[name]
        value = [] if value is None else list(value)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   for v in value):
            raise UserError(f"parameter {name}: expected a list of numbers, got {value!r}")
        return [float(v) for v in value]

    def topic(self, name: str, allow_empty: bool = False) -> str:
        value = self.text(name, allow_empty)
        if value and not (value.startswith("/") or value[0].isalpha()):
            raise UserError(f"parameter {name}: {value!r} is not a topic name")
        return value


def unflatten(flat: Dict[str, Any], prefix: str) -> Dict[str, Any]:
    """ROS parameters ``prefix.a.b: v`` → nested ``{a: {b: v}}`` (how a params YAML is flattened)."""
    out: Dict[str, Any] = {}
    for name in sorted(flat):
        if not name.startswith(prefix + "."):
            continue
        keys = name[len(prefix) + 1:].split(".")
        node = out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise UserError(f"parameter {name}: {prefix}.{'.'.join(keys[:-1])} is both a value "
                                "and a group")
        value = flat[name]
        if value is None:
            raise UserError(f"parameter {name}: given without a value")
        node[keys[-1]] = list(value) if isinstance(value, (tuple, np.ndarray)) else value
    return out


def seed_keys(values: Sequence[str]) -> List[Any]:
    """ROS string-array ``seed_keys`` → sensor_seed keys; all-digit strings become ints.

    (``sensor_seed`` tags ints and strings differently, and the offline run key ``k`` is an int.)
    """
    keys: List[Any] = []
    for value in values:
        text = str(value)
        keys.append(int(text) if is_number(text) else text)
    return keys


# ------------------------------------------------------------------------------------ noise nodes
@dataclass
class NoiseNodeConfig:
    """Validated parameters of gps_noise_node / imu_noise_node."""

    sensor: str
    model_spec: Any                 # preset name, YAML path or dict, as models.load_*_model accept
    seed: int
    seed_keys: List[Any]
    rate_hz: float
    frame_id: str
    truth_topic: str
    output_topic: str
    truth_mode: str
    max_truth_gap_s: float
    twist_frame: str
    magnetometer_topic: str = ""    # IMU only; empty = no MagneticField publisher
    tick_topic: str = ""            # non-empty: tick on this topic's header stamps instead of k·period

    def stream(self, model) -> SensorStream:
        return SensorStream(model, self.rate_hz, self.truth_mode, self.max_truth_gap_s,
                            explicit_ticks=bool(self.tick_topic))

    def seed_sequence(self):
        from ..models import sensor_seed
        return sensor_seed(self.seed, *self.seed_keys, self.sensor)

    def load_model(self):
        """The offline model with the node's rate (so its sample clock matches the node's ticks):
        offline equivalent ``load_*_model(spec, sensor_seed(...), rate=rate)``.  With ``tick_topic``
        the ticks are another stream's stamps, and the rate must be that stream's."""
        from ..models import load_gps_model, load_imu_model
        loader = load_gps_model if self.sensor == "gps" else load_imu_model
        return loader(self.model_spec, self.seed_sequence(), rate=self.rate_hz)


# The noise nodes' (and sensors.launch.py's) default models: a realistic robot sensor pair with honest
# covariances (config/sensors/*/robot_*.yaml).  The paper's demo pair is one parameter away:
# gps_model:=ch_gauss imu_model:=chrono_paper_demo (evaluate.launch.py's defaults: it replays the study).
ROBOT_GPS_MODEL = "robot_rtk_f9p"
ROBOT_IMU_MODEL = "robot_ahrs_mti"
NOISE_NODE_DEFAULTS = {
    "gps": {"gps_model": ROBOT_GPS_MODEL, "gps_rate": 10.0, "frame_id": GPS_FRAME,
            "output_topic": TOPICS["gps"]},
    "imu": {"imu_model": ROBOT_IMU_MODEL, "imu_rate": 100.0, "frame_id": IMU_FRAME,
            "output_topic": TOPICS["imu"], "magnetometer_topic": ""},
}
COMMON_NODE_DEFAULTS = {
    "seed": 0, "seed_keys": [], "truth_topic": TOPICS["ground_truth"], "truth_mode": "interpolate",
    "max_truth_gap": 1.0, "twist_frame": "child", "tick_topic": "",
}
MODEL_PARAMS = "model_params"


def noise_node_defaults(sensor: str) -> Dict[str, Any]:
    """Every parameter a noise node declares, with its default."""
    if sensor not in NOISE_NODE_DEFAULTS:
        raise ValueError(sensor)
    defaults = dict(COMMON_NODE_DEFAULTS)
    defaults.update(NOISE_NODE_DEFAULTS[sensor])
    return defaults


def parse_noise_node_params(sensor: str, params: Dict[str, Any]) -> NoiseNodeConfig:
    """ROS parameters (flattened names → values) → NoiseNodeConfig, or a UserError naming the parameter.

    The model is ``<sensor>_model`` (a preset name or a YAML file, as offline) plus optional overrides
    ``model_params.<key>`` using exactly the preset's YAML keys (nested keys with dots, which is how
    a ROS params file flattens a mapping).  With overrides the spec is ``{preset: model, **overrides}``.
    """
    p = Parameters(f"{sensor}_noise_node", params, noise_node_defaults(sensor), (MODEL_PARAMS + ".",))
    rate = p.number(f"{sensor}_rate")
    checked_period_ns(rate, f"{sensor}_rate")  # validates > 0
    truth_mode = p.text("truth_mode")
    if truth_mode not in TRUTH_MODES:
        raise UserError(f"parameter truth_mode: unknown value {truth_mode!r}; expected one of "
                        f"{', '.join(TRUTH_MODES)}")
    twist_frame = p.text("twist_frame")
    if twist_frame not in ("child", "world"):
        raise UserError(f"parameter twist_frame: unknown value {twist_frame!r}; expected child or world")
    model = p.text(f"{sensor}_model")
    overrides = unflatten(params, MODEL_PARAMS)
    spec: Any = dict(overrides, preset=model) if overrides else model
    return NoiseNodeConfig(
        sensor=sensor, model_spec=spec, seed=p.integer("seed"), seed_keys=seed_keys(p.strings("seed_keys")),
        rate_hz=rate, frame_id=p.text("frame_id"), truth_topic=p.topic("truth_topic"),
        output_topic=p.topic("output_topic"), truth_mode=truth_mode,
        max_truth_gap_s=p.number("max_truth_gap", positive=True), twist_frame=twist_frame,
        magnetometer_topic=p.topic("magnetometer_topic", allow_empty=True) if sensor == "imu" else "",
        tick_topic=p.topic("tick_topic", allow_empty=True),
    )


# ------------------------------------------------------------------------------ ground truth node
# The offline names (truth.bag.SOURCES) of the sbg pairs ground_truth_node assembles.
TRUTH_SOURCES = ("auto", "sbg_ekf", "sbg_gps")
GROUND_TRUTH_DEFAULTS = {
    "truth_source": "auto", "sbg_enu": False, "datum": [], "min_course_speed": 0.5, "frame_id": "odom",
    "child_frame_id": "base_link", "output_topic": TOPICS["ground_truth"], "max_pair_gap": 0.1,
    "ekf_nav_topic": "/sbg/ekf_nav", "ekf_quat_topic": "/sbg/ekf_quat",
    "gps_pos_topic": "/sbg/gps_pos", "gps_vel_topic": "/sbg/gps_vel",
}


@dataclass
class GroundTruthConfig:
    source: str
    sbg_enu: bool                 # the driver ran with use_enu: true
    datum: Optional[List[float]]  # [lat deg, lon deg, ellipsoidal h m]; None = the first fix
    min_course_speed: float       # m/s: below it the GNSS course is noise, the yaw is held
    frame_id: str
    child_frame_id: str
    output_topic: str
    max_pair_gap_s: float         # two sbg messages are paired if their stamps differ by at most this
    topics: Dict[str, str]


def parse_ground_truth_params(params: Dict[str, Any]) -> GroundTruthConfig:
    p = Parameters("ground_truth_node", params, GROUND_TRUTH_DEFAULTS)
    source = p["truth_source"]
    if source not in TRUTH_SOURCES:
        raise UserError(f"parameter truth_source: unknown value {source!r}; expected one of "
                        f"{', '.join(TRUTH_SOURCES)}")
    datum = p.numbers("datum")
    if datum and (len(datum) != 3 or abs(datum[0]) > 90 or abs(datum[1]) > 180):
        raise UserError(f"parameter datum: expected [latitude deg, longitude deg, height m], got {datum!r}")
    topics = {key: p.topic(key)
              for key in ("ekf_nav_topic", "ekf_quat_topic", "gps_pos_topic", "gps_vel_topic")}
    return GroundTruthConfig(
        source=source, sbg_enu=p.boolean("sbg_enu"), datum=datum or None,
        min_course_speed=p.number("min_course_speed", minimum=0.0), frame_id=p.text("frame_id"),
        child_frame_id=p.text("child_frame_id"), output_topic=p.topic("output_topic"),
        max_pair_gap_s=p.number("max_pair_gap", minimum=0.0), topics=topics)


# ------------------------------------------------------------------------------------- recorder
RECORDED_TOPICS = [TOPICS["estimate"], GPS_ODOMETRY_TOPIC, TOPICS["ground_truth"], TOPICS["gps"],
                   TOPICS["imu"]]
RECORDER_DEFAULTS = {
    "output": "", "storage": "sqlite3", "topics": list(RECORDED_TOPICS), "required_topics": [],
    "run_yaml": "", "idle_timeout": 0.0,
}
STORAGES = ("sqlite3", "mcap")


@dataclass
class RecorderConfig:
    output: Path
    storage: str
    topics: List[str]
    required_topics: List[str]  # a run missing any of them is not written (exit 2)
    run_yaml: str               # the run.yaml text written inside the bag directory on close
    idle_timeout_s: float       # > 0: stop after this long (wall time) without messages once one arrived


def parse_recorder_params(params: Dict[str, Any]) -> RecorderConfig:
    p = Parameters("recorder_node", params, RECORDER_DEFAULTS)
    output = p.text("output") if isinstance(p["output"], str) and p["output"].strip() else ""
    if not output:
        raise UserError("parameter output: the bag directory to write is required")
    output_path = Path(output).expanduser()
    if output_path.exists():
        raise UserError(f"parameter output: {output_path} already exists (choose another output)")
    storage = p["storage"]
    if storage not in STORAGES:
        raise UserError(f"parameter storage: unknown value {storage!r}; expected one of "
                        f"{', '.join(STORAGES)}")
    topics = p.strings("topics")
    if not topics or not all(t.startswith("/") for t in topics):
        raise UserError(f"parameter topics: expected absolute topic names, got {topics!r}")
    required = p.strings("required_topics")
    missing = sorted(set(required) - set(topics))
    if missing:
        raise UserError(f"parameter required_topics: {', '.join(missing)} not in topics")
    return RecorderConfig(output_path, storage, topics, required, str(p["run_yaml"]),
                          p.number("idle_timeout", minimum=0.0))


def missing_topics(counts: Dict[str, int], required: Sequence[str]) -> List[str]:
    """The required topics with no recorded message (the recorder refuses to finish such a run)."""
    return [topic for topic in required if not counts.get(topic)]


# ----------------------------------------------------------------------------------- replay node
REPLAY_MODES = ("sim_imu", "sim_gps", "sim_both", "real")
REPLAY_DEFAULTS = {
    "bag": "", "mode": "sim_both", "gps_model": "ch_gauss", "imu_model": "chrono_paper_demo", "seed": 0,
    "scenario": "", "k": -1, "truth_source": "auto", "ekf_config": "", "navsat_config": "",
    "play_rate": 1.0, "wait_for": [], "resume_service": "", "start_timeout": 60.0, "static_tfs": "",
}


@dataclass
class ReplayConfig:
    """Validated parameters of replay_node (the evaluate.launch.py arguments it shares, same names)."""

    bag: str
    mode: str
    gps_model: str
    imu_model: str
    seed: int
    scenario: str          # "" = from the bag's path (``runs.name_real_bag``)
    k: int                 # -1 = from the bag's path
    truth_source: str
    ekf_config: str        # "" = the ART config
    navsat_config: str
    play_rate: float       # the player's --rate: the sim clock runs this fast
    wait_for: List[Tuple[str, int]]  # (topic, subscribers) matched before the player is resumed
    resume_service: str    # the player's resume service ("" = the player is not paused)
    start_timeout_s: float
    static_tfs: Optional[Tuple[str, ...]] = None  # None = the bag's default (``bags.layout``), () = none


def parse_wait_for(values: Sequence[str]) -> List[Tuple[str, int]]:
    """``["/fix=2", "/imu=2"]`` → [("/fix", 2), ("/imu", 2)]."""
    out = []
    for item in values:
        topic, sep, count = str(item).partition("=")
        if not sep or not topic.startswith("/") or not is_number(count) or int(count) < 1:
            raise UserError(f"parameter wait_for: {item!r} is not TOPIC=SUBSCRIBERS (e.g. /fix=2)")
        out.append((topic, int(count)))
    return out


def parse_replay_params(params: Dict[str, Any]) -> ReplayConfig:
    p = Parameters("replay_node", params, REPLAY_DEFAULTS)
    bag = p.text("bag") if isinstance(p["bag"], str) and p["bag"].strip() else ""
    if not bag:
        raise UserError("parameter bag: the real bag to replay is required")
    mode = p["mode"]
    if mode not in REPLAY_MODES:
        raise UserError(f"parameter mode: unknown value {mode!r}; expected one of {', '.join(REPLAY_MODES)}")
    source = p.text("truth_source")  # checked by the offline truth reader (truth.bag.SOURCES)
    k = p.integer("k", minimum=-1)
    return ReplayConfig(
        bag=bag, mode=mode, gps_model=p.text("gps_model"), imu_model=p.text("imu_model"),
        seed=p.integer("seed"), scenario=p.text("scenario", allow_empty=True), k=k, truth_source=source,
        ekf_config=p.text("ekf_config", allow_empty=True),
        navsat_config=p.text("navsat_config", allow_empty=True),
        play_rate=p.number("play_rate", positive=True), wait_for=parse_wait_for(p.strings("wait_for")),
        resume_service=p.text("resume_service", allow_empty=True),
        start_timeout_s=p.number("start_timeout", positive=True),
        static_tfs=parse_static_tf_list(p.text("static_tfs", allow_empty=True), "parameter static_tfs"))
