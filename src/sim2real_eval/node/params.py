"""Node parameters → validated configs, or a one-line UserError naming the parameter (robot-side).

The parameter names are the launch files' argument names (``node.launch_plan``): one vocabulary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..art import GPS_FRAME, GPS_ODOMETRY_TOPIC, IMU_FRAME, TOPICS
from ..errors import UserError
from .ticks import period_ns
from .truth_stream import TRUTH_MODES, SensorStream

MAGNETIC_FIELD_TOPIC = "/imu/mag"


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
        node[keys[-1]] = list(value) if isinstance(value, (tuple, np.ndarray)) else value
    return out


def seed_keys(values: Sequence[str]) -> List[Any]:
    """ROS string-array ``seed_keys`` → sensor_seed keys; all-digit strings become ints.

    (``sensor_seed`` tags ints and strings differently, and the offline run key ``k`` is an int.)
    """
    keys: List[Any] = []
    for value in values:
        text = str(value)
        keys.append(int(text) if text.isdigit() else text)
    return keys


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
        """The offline model with the node's ``rate`` (so its sample clock matches the node's ticks):
        offline equivalent ``load_*_model(spec, sensor_seed(...), rate=rate)``."""
        from ..models import load_gps_model, load_imu_model
        loader = load_gps_model if self.sensor == "gps" else load_imu_model
        return loader(self.model_spec, self.seed_sequence(), rate=self.rate_hz)


NOISE_NODE_DEFAULTS = {
    "gps": {"model": "ch_gauss", "rate": 10.0, "frame_id": GPS_FRAME, "output_topic": TOPICS["gps"]},
    "imu": {"model": "chrono_paper_demo", "rate": 100.0, "frame_id": IMU_FRAME,
            "output_topic": TOPICS["imu"]},
}
COMMON_NODE_DEFAULTS = {
    "seed": 0, "seed_keys": [], "truth_topic": TOPICS["ground_truth"], "truth_mode": "interpolate",
    "max_truth_gap": 1.0, "twist_frame": "child", "tick_topic": "",
}


def noise_node_defaults(sensor: str) -> Dict[str, Any]:
    """Every parameter a noise node declares, with its default (the IMU adds ``magnetometer_topic``)."""
    if sensor not in NOISE_NODE_DEFAULTS:
        raise ValueError(sensor)
    defaults = dict(COMMON_NODE_DEFAULTS)
    defaults.update(NOISE_NODE_DEFAULTS[sensor])
    if sensor == "imu":
        defaults["magnetometer_topic"] = ""
    return defaults


def parse_noise_node_params(sensor: str, params: Dict[str, Any]) -> NoiseNodeConfig:
    """ROS parameters (flattened names → values) → NoiseNodeConfig, or a UserError naming the parameter.

    The model is ``model`` (a preset name or a YAML file, as offline) plus optional overrides
    ``model_params.<key>`` using exactly the preset's YAML keys (nested keys with dots, which is how
    a ROS params file flattens a mapping).  With overrides the spec is ``{preset: model, **overrides}``.
    """
    defaults = noise_node_defaults(sensor)
    allowed = set(defaults) | {"use_sim_time"}
    unknown = sorted(n for n in params if n not in allowed and not n.startswith("model_params.")
                     and not n.startswith("qos_overrides."))
    if unknown:
        raise UserError(f"{sensor}_noise_node: unknown parameter(s) {', '.join(unknown)}; expected "
                        f"{', '.join(sorted(allowed))} or model_params.<preset key>")
    merged = dict(defaults)
    merged.update({k: v for k, v in params.items() if k in defaults})

    def text(name: str, allow_empty: bool = False) -> str:
        value = merged[name]
        if not isinstance(value, str) or (not allow_empty and not value.strip()):
            raise UserError(f"parameter {name}: expected a non-empty string, got {value!r}")
        return value.strip()

    def number(name: str) -> float:
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise UserError(f"parameter {name}: expected a number, got {value!r}")
        return float(value)

    rate = number("rate")
    period_ns(rate)  # validates > 0
    seed = merged["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UserError(f"parameter seed: expected an integer >= 0, got {seed!r}")
    keys = merged["seed_keys"]
    if isinstance(keys, str) or not all(isinstance(k, str) for k in keys):
        raise UserError(f"parameter seed_keys: expected a list of strings, got {keys!r}")
    truth_mode = text("truth_mode")
    if truth_mode not in TRUTH_MODES:
        raise UserError(f"parameter truth_mode: unknown value {truth_mode!r}; expected one of "
                        f"{', '.join(TRUTH_MODES)}")
    gap = number("max_truth_gap")
    if gap <= 0:
        raise UserError(f"parameter max_truth_gap: must be > 0 s, got {gap!r}")
    twist_frame = text("twist_frame")
    if twist_frame not in ("child", "world"):
        raise UserError(f"parameter twist_frame: unknown value {twist_frame!r}; expected child or world")
    model = text("model")
    overrides = unflatten(params, "model_params")
    spec: Any = dict(overrides, preset=model) if overrides else model
    for name in ("truth_topic", "output_topic"):
        if not text(name).startswith("/") and not text(name)[0].isalpha():
            raise UserError(f"parameter {name}: {merged[name]!r} is not a topic name")
    return NoiseNodeConfig(
        sensor=sensor, model_spec=spec, seed=int(seed), seed_keys=seed_keys(keys), rate_hz=rate,
        frame_id=text("frame_id"), truth_topic=text("truth_topic"), output_topic=text("output_topic"),
        truth_mode=truth_mode, max_truth_gap_s=gap, twist_frame=twist_frame,
        magnetometer_topic=text("magnetometer_topic", allow_empty=True) if sensor == "imu" else "",
        tick_topic=text("tick_topic", allow_empty=True),
    )


# ------------------------------------------------------------------------------ ground truth node
TRUTH_SOURCES = ("auto", "ekf", "gps")
GROUND_TRUTH_DEFAULTS = {
    "source": "auto", "sbg_enu": False, "datum": [], "min_course_speed": 0.5, "frame_id": "odom",
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
    unknown = sorted(n for n in params if n not in GROUND_TRUTH_DEFAULTS and n != "use_sim_time")
    if unknown:
        raise UserError(f"ground_truth_node: unknown parameter(s) {', '.join(unknown)}; expected "
                        f"{', '.join(sorted(GROUND_TRUTH_DEFAULTS))}")
    merged = dict(GROUND_TRUTH_DEFAULTS)
    merged.update(params)
    if merged["source"] not in TRUTH_SOURCES:
        raise UserError(f"parameter source: unknown value {merged['source']!r}; expected one of "
                        f"{', '.join(TRUTH_SOURCES)}")
    if not isinstance(merged["sbg_enu"], bool):
        raise UserError(f"parameter sbg_enu: expected true/false, got {merged['sbg_enu']!r}")
    datum = list(merged["datum"])
    if datum and (len(datum) != 3 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in datum)
                  or abs(datum[0]) > 90 or abs(datum[1]) > 180):
        raise UserError(f"parameter datum: expected [latitude deg, longitude deg, height m], got {datum!r}")
    for name in ("min_course_speed", "max_pair_gap"):
        value = merged[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise UserError(f"parameter {name}: expected a number >= 0, got {value!r}")
    topics = {key: str(merged[key])
              for key in ("ekf_nav_topic", "ekf_quat_topic", "gps_pos_topic", "gps_vel_topic")}
    return GroundTruthConfig(
        source=merged["source"], sbg_enu=merged["sbg_enu"], datum=[float(v) for v in datum] or None,
        min_course_speed=float(merged["min_course_speed"]), frame_id=str(merged["frame_id"]),
        child_frame_id=str(merged["child_frame_id"]), output_topic=str(merged["output_topic"]),
        max_pair_gap_s=float(merged["max_pair_gap"]), topics=topics)




RECORDER_DEFAULTS = {
    "output": "", "storage": "sqlite3", "topics": [TOPICS["estimate"], GPS_ODOMETRY_TOPIC,
                                                   TOPICS["ground_truth"], TOPICS["gps"], TOPICS["imu"]],
    "run_yaml": "", "idle_timeout": 0.0,
}
STORAGES = ("sqlite3", "mcap")


@dataclass
class RecorderConfig:
    output: Path
    storage: str
    topics: List[str]
    run_yaml: str          # the run.yaml text written inside the bag directory on close
    idle_timeout_s: float  # > 0: stop after this long (wall time) without messages once one arrived


def parse_recorder_params(params: Dict[str, Any]) -> RecorderConfig:
    unknown = sorted(n for n in params if n not in RECORDER_DEFAULTS and n != "use_sim_time")
    if unknown:
        raise UserError(f"recorder_node: unknown parameter(s) {', '.join(unknown)}; expected "
                        f"{', '.join(sorted(RECORDER_DEFAULTS))}")
    merged = dict(RECORDER_DEFAULTS)
    merged.update(params)
    output = merged["output"]
    if not isinstance(output, str) or not output.strip():
        raise UserError("parameter output: the bag directory to write is required")
    output_path = Path(output).expanduser()
    if output_path.exists():
        raise UserError(f"parameter output: {output_path} already exists (choose another output)")
    storage = merged["storage"]
    if storage not in STORAGES:
        raise UserError(f"parameter storage: unknown value {storage!r}; expected one of "
                        f"{', '.join(STORAGES)}")
    topics = list(merged["topics"])
    if not topics or not all(isinstance(t, str) and t.startswith("/") for t in topics):
        raise UserError(f"parameter topics: expected absolute topic names, got {topics!r}")
    timeout = merged["idle_timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise UserError(f"parameter idle_timeout: expected seconds >= 0, got {timeout!r}")
    return RecorderConfig(output_path, storage, topics, str(merged["run_yaml"]), float(timeout))

