"""Launch arguments → processes, parameters and remaps of the three launch files (robot-side).

``launch/*.launch.py`` only declare the argument tables below and turn a plan's ``ProcessSpec`` list
into launch actions (``ros/launch_actions.py``); every decision is here, tested without ROS.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..art import ART_STATIC_TFS, EKF_CONFIG, GPS_ODOMETRY_TOPIC, IMU_FRAME, NAVSAT_CONFIG, TOPICS
from ..errors import UserError
from ..static_tf import mounting_rpy, parse_static_tf
from .params import STORAGES
from .ticks import period_ns

PACKAGE = "sim2real_eval"

MODES = ("sim_imu", "sim_gps", "sim_both", "real")

# name → (default, description).  The launch files declare exactly these; docs/ros.md documents them.
EVALUATE_ARGUMENTS: Dict[str, Tuple[str, str]] = {
    "bag": ("", "real ART bag to replay (rosbag2 directory); required"),
    "mode": ("sim_both", "which sensors are simulated: sim_imu | sim_gps | sim_both | real"),
    "gps_model": ("ch_gauss", "GPS model: preset name or YAML file (offline preset keys)"),
    "imu_model": ("chrono_paper_demo", "IMU model: preset name or YAML file (offline preset keys)"),
    "seed": ("0", "study seed; node streams are sensor_seed(seed, *seed_keys, gps|imu)"),
    "seed_keys": ("", "comma-separated run key for sensor_seed, e.g. 'sim_both,lot17,0'"),
    "ekf_config": ("", "ekf_node parameters (default: <share>/config/ekf_art_iros2024.yaml)"),
    "navsat_config": ("", "navsat_transform_node parameters "
                          "(default: <share>/config/navsat_art_iros2024.yaml)"),
    "output": ("", "recorded run directory (rosbag2 + run.yaml); default ./runs/<mode>_<bag name>"),
    "storage": ("sqlite3", "recorder storage plugin: sqlite3 | mcap"),
    "rate": ("10.0", "simulated GPS rate, Hz (ticks k/rate on the bag's clock)"),
    "imu_rate": ("100.0", "simulated IMU rate, Hz"),
    "truth_source": ("auto", "ground_truth_node input: auto | ekf (SbgEkfNav+SbgEkfQuat) | "
                             "gps (SbgGpsPos+SbgGpsVel)"),
    "play_rate": ("1.0", "ros2 bag play --rate"),
    "shutdown_when_done": ("true", "stop everything (recorder closes the bag) when the player exits"),
    "imu_ticks": ("real", "simulated IMU stamps: real (the replaced IMU's header stamps, as the offline "
                          "replay) | rate (k/imu_rate)"),
}
SENSORS_ARGUMENTS: Dict[str, Tuple[str, str]] = {
    key: EVALUATE_ARGUMENTS[key]
    for key in ("gps_model", "imu_model", "seed", "seed_keys", "rate", "imu_rate")
}
SENSORS_ARGUMENTS.update({
    "sensors": ("both", "which noise nodes to start: gps | imu | both"),
    "truth_topic": (TOPICS["ground_truth"], "ground-truth nav_msgs/Odometry from the simulator"),
    "twist_frame": ("child", "frame of the truth twist: child (nav_msgs convention) | world (Gazebo p3d)"),
    "use_sim_time": ("true", "use the simulator's /clock"),
})
JUDGE_ARGUMENTS: Dict[str, Tuple[str, str]] = {
    key: EVALUATE_ARGUMENTS[key] for key in ("ekf_config", "navsat_config")
}
JUDGE_ARGUMENTS["use_sim_time"] = ("true", "use /clock (bag replay or simulator)")


@dataclass
class ProcessSpec:
    """One ROS node (package/executable) or, with ``cmd``, a plain process."""

    name: str
    package: str = ""
    executable: str = ""
    parameters: List[Any] = field(default_factory=list)   # dicts and/or YAML file paths
    remappings: List[Tuple[str, str]] = field(default_factory=list)
    arguments: List[str] = field(default_factory=list)
    cmd: List[str] = field(default_factory=list)


@dataclass
class LaunchPlan:
    player: Optional[ProcessSpec]
    nodes: List[ProcessSpec]
    output: str
    run_record: Dict[str, Any]
    shutdown_when_done: bool = True


def _bool_text(value: str, name: str) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise UserError(f"launch argument {name}:={value!r}: expected true or false")


def _rate(value: str, name: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise UserError(f"launch argument {name}:={value!r}: expected a number (Hz)") from None
    period_ns(rate, f"launch argument {name}")
    return rate


def _seed(value: str) -> int:
    text = str(value).strip()
    if not text.isdigit():
        raise UserError(f"launch argument seed:={value!r}: expected an integer >= 0")
    return int(text)


def _split_keys(value: str) -> List[str]:
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _model_parameters(spec: str) -> Dict[str, Any]:
    """A launch ``*_model`` argument → node parameters: the preset name or YAML path goes to ``model``
    unchanged; the node's loader (``models.load_*_model``) resolves it exactly as offline."""
    if not str(spec).strip():
        raise UserError("launch argument gps_model/imu_model: expected a preset name or a YAML file")
    return {"model": str(spec).strip()}


def static_tf_nodes(static_tfs: Sequence[str] = ART_STATIC_TFS) -> List[ProcessSpec]:
    """tf2_ros static_transform_publisher for each "PARENT CHILD x y z yaw pitch roll" string."""
    nodes = []
    for text in static_tfs:
        tf = parse_static_tf(text)
        args = ["--x", repr(tf.x), "--y", repr(tf.y), "--z", repr(tf.z), "--yaw", repr(tf.yaw),
                "--pitch", repr(tf.pitch), "--roll", repr(tf.roll), "--frame-id", tf.parent,
                "--child-frame-id", tf.child]
        nodes.append(ProcessSpec(name=f"static_tf_{tf.parent}_to_{tf.child}", package="tf2_ros",
                                 executable="static_transform_publisher", arguments=args,
                                 parameters=[{"use_sim_time": True}]))
    return nodes


def noise_node(sensor: str, model: str, seed: int, keys: List[str], rate: float,
               use_sim_time: bool = True, truth_topic: str = TOPICS["ground_truth"],
               twist_frame: str = "child") -> ProcessSpec:
    params: Dict[str, Any] = {"use_sim_time": use_sim_time, "seed": seed, "rate": rate,
                              "truth_topic": truth_topic, "twist_frame": twist_frame}
    if keys:
        params["seed_keys"] = keys
    params.update(_model_parameters(model))
    return ProcessSpec(name=f"{sensor}_noise_node", package=PACKAGE, executable=f"{sensor}_noise_node",
                       parameters=[params])


def judge_nodes(ekf_config: str, navsat_config: str, use_sim_time: bool = True) -> List[ProcessSpec]:
    """robot_localization's ekf_node + navsat_transform_node, named as in the ART configs.

    navsat_transform_node subscribes ``imu`` (not ``imu/data``) and ``gps/fix``: remap the latter
    to /fix; ``imu`` already resolves to /imu in the root namespace (stated for clarity).
    """
    for name, path in (("ekf_config", ekf_config), ("navsat_config", navsat_config)):
        if not Path(path).is_file():
            raise UserError(f"launch argument {name}: {path} does not exist")
    sim = {"use_sim_time": use_sim_time}
    return [
        ProcessSpec(name="ekf_filter_node", package="robot_localization", executable="ekf_node",
                    parameters=[ekf_config, sim]),
        ProcessSpec(name="navsat_transform", package="robot_localization", executable="navsat_transform_node",
                    parameters=[navsat_config, sim],
                    remappings=[("gps/fix", TOPICS["gps"]), ("imu", TOPICS["imu"]),
                                ("odometry/filtered", TOPICS["estimate"]),
                                ("odometry/gps", GPS_ODOMETRY_TOPIC)]),
    ]


def default_config(name: str) -> str:
    from ..resources import config_path
    return str(config_path(name))


def judge_plan(args: Dict[str, str]) -> List[ProcessSpec]:
    """judge.launch.py: the robot_localization pair with our configs."""
    ekf = args.get("ekf_config") or default_config(EKF_CONFIG)
    navsat = args.get("navsat_config") or default_config(NAVSAT_CONFIG)
    use_sim_time = _bool_text(args.get("use_sim_time", "true"), "use_sim_time")
    return judge_nodes(ekf, navsat, use_sim_time)


def sensors_plan(args: Dict[str, str]) -> List[ProcessSpec]:
    """sensors.launch.py: the noise nodes beside a simulator (Chrono::ROS, Gazebo)."""
    which = args.get("sensors", "both")
    if which not in ("gps", "imu", "both"):
        raise UserError(f"launch argument sensors:={which!r}: expected gps, imu or both")
    seed = _seed(args.get("seed", "0"))
    keys = _split_keys(args.get("seed_keys", ""))
    use_sim_time = _bool_text(args.get("use_sim_time", "true"), "use_sim_time")
    truth_topic = args.get("truth_topic") or TOPICS["ground_truth"]
    twist_frame = args.get("twist_frame", "child")
    nodes = []
    if which in ("gps", "both"):
        model = args.get("gps_model") or EVALUATE_ARGUMENTS["gps_model"][0]
        nodes.append(noise_node("gps", model, seed, keys, _rate(args.get("rate", "10.0"), "rate"),
                                use_sim_time, truth_topic, twist_frame))
    if which in ("imu", "both"):
        model = args.get("imu_model") or EVALUATE_ARGUMENTS["imu_model"][0]
        nodes.append(noise_node("imu", model, seed, keys, _rate(args.get("imu_rate", "100.0"), "imu_rate"),
                                use_sim_time, truth_topic, twist_frame))
    return nodes


def evaluate_plan(args: Dict[str, str], cwd: Optional[str] = None) -> LaunchPlan:
    """evaluate.launch.py: launch arguments → every process, parameter and remap.

    Replays ``bag`` with ``--clock`` (all nodes on use_sim_time); in a simulated mode the replaced
    real topic is remapped to ``/real/<topic>`` so only the simulated one reaches the judge; starts
    ground_truth_node (sbg_driver → /ground_truth/odom), the noise nodes (the IMU model mounted as the
    base_link→imu TF says: ``model_params.mounting_rpy``), the ART static TFs,
    ekf_node + navsat_transform_node and the recorder.  Missing files fail here, naming the path.
    """
    unknown = sorted(set(args) - set(EVALUATE_ARGUMENTS))
    if unknown:
        raise UserError(f"evaluate.launch.py: unknown argument(s) {', '.join(unknown)}")
    get = {name: str(args.get(name, default[0])) for name, default in EVALUATE_ARGUMENTS.items()}
    bag = get["bag"].strip()
    if not bag:
        raise UserError("launch argument bag:= is required (a rosbag2 directory of a real ART run)")
    bag_path = Path(bag).expanduser()
    if not bag_path.exists():
        raise UserError(f"launch argument bag: {bag_path} does not exist")
    mode = get["mode"]
    if mode not in MODES:
        raise UserError(f"launch argument mode:={mode!r}: expected one of {', '.join(MODES)}")
    storage = get["storage"]
    if storage not in STORAGES:
        raise UserError(f"launch argument storage:={storage!r}: expected one of {', '.join(STORAGES)}")
    truth_source = get["truth_source"]
    if truth_source not in ("auto", "ekf", "gps"):
        raise UserError(f"launch argument truth_source:={truth_source!r}: expected auto, ekf or gps")
    seed = _seed(get["seed"])
    keys = _split_keys(get["seed_keys"])
    gps_rate = _rate(get["rate"], "rate")
    imu_rate = _rate(get["imu_rate"], "imu_rate")
    play_rate = _rate(get["play_rate"], "play_rate")
    shutdown_when_done = _bool_text(get["shutdown_when_done"], "shutdown_when_done")
    if get["imu_ticks"] not in ("real", "rate"):
        raise UserError(f"launch argument imu_ticks:={get['imu_ticks']!r}: expected real or rate")
    output = get["output"].strip() or os.path.join(cwd or os.getcwd(), "runs",
                                                   f"{mode}_{bag_path.resolve().name}")
    if Path(output).exists():
        raise UserError(f"launch argument output: {output} already exists (choose another output)")

    sim_gps = mode in ("sim_gps", "sim_both")
    sim_imu = mode in ("sim_imu", "sim_both")
    hidden = [topic for topic, simulated in ((TOPICS["gps"], sim_gps), (TOPICS["imu"], sim_imu)) if simulated]
    player_cmd = ["ros2", "bag", "play", str(bag_path), "--clock", "--rate", repr(play_rate)]
    if hidden:
        player_cmd += ["--remap"] + [f"{topic}:=/real{topic}" for topic in hidden]
    player = ProcessSpec(name="bag_player", cmd=player_cmd)

    nodes = [ProcessSpec(name="ground_truth_node", package=PACKAGE, executable="ground_truth_node",
                         parameters=[{"use_sim_time": True, "source": truth_source}])]
    if sim_gps:
        nodes.append(noise_node("gps", get["gps_model"], seed, keys, gps_rate))
    if sim_imu:
        imu = noise_node("imu", get["imu_model"], seed, keys, imu_rate)
        imu.parameters[0]["model_params.mounting_rpy"] = mounting_rpy(ART_STATIC_TFS, IMU_FRAME)
        if get["imu_ticks"] == "real":  # the real IMU's stamps, like `sim2real-eval replay`
            imu.parameters[0]["tick_topic"] = "/real" + TOPICS["imu"]
        nodes.append(imu)
    nodes += static_tf_nodes()
    ekf = get["ekf_config"] or default_config(EKF_CONFIG)
    navsat = get["navsat_config"] or default_config(NAVSAT_CONFIG)
    nodes += judge_nodes(ekf, navsat)
    record = run_record(mode, str(bag_path), get["gps_model"] if sim_gps else None,
                        get["imu_model"] if sim_imu else None, seed, keys, ekf, navsat)
    from ..yamlio import dump_yaml
    nodes.append(ProcessSpec(name="recorder_node", package=PACKAGE, executable="recorder_node",
                             parameters=[{"use_sim_time": True, "output": output, "storage": storage,
                                          "run_yaml": dump_yaml(record)}]))
    return LaunchPlan(player=player, nodes=nodes, output=output, run_record=record,
                      shutdown_when_done=shutdown_when_done)


def _sha256(path: str) -> str:
    import hashlib
    with open(path, "rb") as stream:
        return hashlib.sha256(stream.read()).hexdigest()


def run_record(mode: str, bag: str, gps_model: Optional[str], imu_model: Optional[str], seed: int,
               keys: List[str], ekf: str, navsat: str) -> Dict[str, Any]:
    """run.yaml of a ROS replay run (docs/architecture.md "runs"): real side for mode real."""
    from .. import __version__
    return {
        "side": "real" if mode == "real" else "sim",
        "variant": "real" if mode == "real" else mode,
        "scenario": Path(bag).resolve().name,
        "k": 0,
        "seed": seed,
        "seed_keys": list(keys),
        "source": str(Path(bag).resolve()),
        "gps": {"model": gps_model} if gps_model else {"model": "real"},
        "imu": ({"model": imu_model, "mounting_rpy": mounting_rpy(ART_STATIC_TFS, IMU_FRAME)} if imu_model
                else {"model": "real"}),
        "judge": {"ekf": ekf, "ekf_sha256": _sha256(ekf), "navsat": navsat, "navsat_sha256": _sha256(navsat),
                  "static_tfs": list(ART_STATIC_TFS)},
        "topics": dict(TOPICS),
        "recorded_by": "recorder_node (ros2 launch sim2real_eval evaluate.launch.py)",
        "version": __version__,
    }
