"""Launch arguments → processes, parameters and remaps of the three launch files (robot-side).

``launch/*.launch.py`` only declare the argument tables below and turn a plan's ``ProcessSpec`` list
into launch actions (``ros/launch_actions.py``); every decision is here, tested without ROS.

One vocabulary: a launch argument that sets a node parameter has that parameter's name
(``gps_model``, ``imu_rate``, ``truth_source``…).  ``ros2 launch`` silently drops arguments a launch
file does not declare; ``unknown_arguments`` lets the launch files refuse them instead.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..art import ART_STATIC_TFS, EKF_CONFIG, GPS_ODOMETRY_TOPIC, NAVSAT_CONFIG, TOPICS
from ..errors import UserError
from ..resources import config_path
from ..runs import is_number
from ..static_tf import parse_static_tf, parse_static_tf_list, static_tf_list_text
from .params import RECORDED_TOPICS, REPLAY_MODES, ROBOT_GPS_MODEL, ROBOT_IMU_MODEL, STORAGES
from .recording import UNCONFIRMED
from .ticks import checked_period_ns

PACKAGE = "sim2real_eval"
MODES = REPLAY_MODES
PLAYER_NODE = "rosbag2_player"  # ros2 bag play's node name: its services are /rosbag2_player/*
HIDDEN_PREFIX = "/real"          # the bag's own /fix and /imu are played as /real/fix, /real/imu

# name → (default, description).  The launch files declare exactly these; docs/ros.md documents them.
EVALUATE_ARGUMENTS: Dict[str, Tuple[str, str]] = {
    "bag": ("", "real ART bag to replay (rosbag2 directory); required"),
    "mode": ("sim_both", "which sensors are simulated: sim_imu | sim_gps | sim_both | real"),
    "gps_model": ("ch_gauss", "GPS model: preset name or YAML file (offline preset keys); default: the "
                              "paper's Ch:Gauss variant (3 cm white noise, zero covariance)"),
    "imu_model": ("chrono_paper_demo", "IMU model: preset name or YAML file (offline preset keys); default: "
                                       "the paper's demo Chrono IMU (accelerometer drift, noise-free gyro)"),
    "seed": ("0", "study seed; streams are sensor_seed(seed, variant, scenario, k, gps|imu), as offline"),
    "scenario": ("", "scenario name of the run (default: the bag's folder, DIR/<scenario>/<run>)"),
    "k": ("", "repeat index of the run (default: the bag's position among the bags of its folder)"),
    "ekf_config": ("", "ekf_node parameters (default: <share>/config/ekf_art_iros2024.yaml)"),
    "navsat_config": ("", "navsat_transform_node parameters "
                          "(default: <share>/config/navsat_art_iros2024.yaml)"),
    "output": ("", "recorded run directory (rosbag2 + run.yaml); "
                   "default ./runs/<side>/<variant>/<scenario>/<k> (the offline layout)"),
    "storage": ("sqlite3", "recorder storage plugin: sqlite3 | mcap"),
    "truth_source": ("auto", "ground truth in the bag (as sim2real-eval replay --truth): auto | sbg_ekf "
                             "(SbgEkfNav+SbgEkfQuat) | sbg_gps (SbgGpsVel+SbgGpsPos) | odometry | twist"),
    "play_rate": ("1.0", "ros2 bag play --rate"),
    "static_tfs": ("", "the judge's static TFs, ';'-separated 'PARENT CHILD x y z yaw pitch roll' strings, "
                       "or none (as the offline --static-tf); default: the bag's own, the ART vehicle's "
                       "TFs for a bag in the ART layout (said on stderr), none otherwise"),
    "shutdown_when_done": ("true", "stop everything (recorder closes the bag) when the player exits"),
}
SENSORS_ARGUMENTS: Dict[str, Tuple[str, str]] = {
    "sensors": ("both", "which noise nodes to start: gps | imu | both"),
    "gps_model": (ROBOT_GPS_MODEL, "GPS model: preset name (config/sensors/gps) or YAML file.  Default "
                                   "robot_rtk_f9p: a u-blox ZED-F9P in RTK-fixed mode at 10 Hz, error "
                                   "1.24 cm per horizontal axis and 2.47 cm vertical (1 sigma), published "
                                   "with that variance as its covariance (DIAGONAL_KNOWN).  The paper's demo "
                                   "GPS: gps_model:=ch_gauss"),
    "imu_model": (ROBOT_IMU_MODEL, "IMU model: preset name (config/sensors/imu) or YAML file.  Default "
                                   "robot_ahrs_mti: an Xsens MTi-class MEMS AHRS at 100 Hz (gyro 0.007 "
                                   "deg/s/sqrt(Hz), accelerometer 120 ug/sqrt(Hz), orientation 0.5 deg "
                                   "roll/pitch and 1 deg yaw), each covariance the variance of the error "
                                   "it adds.  The paper's demo IMU: imu_model:=chrono_paper_demo"),
    "seed": ("0", "study seed; node streams are sensor_seed(seed, *seed_keys, gps|imu)"),
    "seed_keys": ("", "comma-separated run key for sensor_seed, e.g. 'sim_both,lot17,0'"),
    "gps_rate": ("10.0", "simulated GPS rate, Hz (ticks k/gps_rate on the data clock)"),
    "imu_rate": ("100.0", "simulated IMU rate, Hz (ticks k/imu_rate on the data clock)"),
    "truth_topic": (TOPICS["ground_truth"], "ground-truth nav_msgs/Odometry from the simulator"),
    "twist_frame": ("child", "frame of the truth twist: child (nav_msgs convention) | world (Gazebo p3d)"),
    "use_sim_time": ("true", "use the simulator's /clock"),
}
JUDGE_ARGUMENTS: Dict[str, Tuple[str, str]] = {
    key: EVALUATE_ARGUMENTS[key] for key in ("ekf_config", "navsat_config")
}
JUDGE_ARGUMENTS["use_sim_time"] = ("true", "use /clock (bag replay or simulator)")
JUDGE_ARGUMENTS["imu_orientation"] = (
    "none", "an orientation for an IMU that publishes none: none (the judge reads /imu as it is) | madgwick "
            "(imu_filter_madgwick between imu_raw_topic and /imu: ROS's standard chain to "
            "robot_localization)")
JUDGE_ARGUMENTS["imu_raw_topic"] = ("/imu/data_raw", "the raw IMU's topic (with imu_orientation:=madgwick)")
JUDGE_ARGUMENTS["madgwick_node"] = (
    "auto", "which Madgwick node: auto (imu_filter_madgwick's imu_filter_madgwick_node where that package is "
            "installed, else ours) | imu_filter_madgwick | sim2real_eval (our madgwick_node: the same "
            "filter as import --imu-orientation madgwick)")
JUDGE_ARGUMENTS["madgwick_gain"] = ("0.1", "the filter's gain (imu_filter_madgwick's gain; its default 0.1)")
JUDGE_ARGUMENTS["madgwick_zeta"] = ("0.0", "gyro drift gain (imu_filter_madgwick's zeta; no effect without "
                                           "a magnetometer)")
JUDGE_ARGUMENTS["orientation_stddev"] = (
    "0.015", "1-sigma of the published orientation, rad (imu_filter_madgwick's orientation_stddev; 0.015 = "
             "the roll/pitch error measured on the terrain scenario, docs/models.md)")
IMU_ORIENTATIONS = ("none", "madgwick")
MADGWICK_NODES = ("auto", "imu_filter_madgwick", "sim2real_eval")
JUDGE_ARGUMENTS["static_tfs"] = ("", "static TFs published for the judge, ';'-separated 'PARENT CHILD x y z "
                                     "yaw pitch roll' strings, or none; default: the ART vehicle's (said "
                                     "on stderr)")
# Arguments ros2 launch adds itself (its --launch-prefix options).
LAUNCH_OWN_ARGUMENTS = ("launch-prefix", "launch-prefix-filter")


@dataclass
class ProcessSpec:
    """One ROS node (package/executable) or, with ``cmd``, a plain process.

    ``must_succeed``: a non-zero exit fails the launch (exit code != 0) whenever it happens;
    otherwise only while the launch is not shutting down (a process stopped by the launch's
    shutdown may report the signal).
    """

    name: str
    package: str = ""
    executable: str = ""
    parameters: List[Any] = field(default_factory=list)   # dicts and/or YAML file paths
    remappings: List[Tuple[str, str]] = field(default_factory=list)
    arguments: List[str] = field(default_factory=list)
    cmd: List[str] = field(default_factory=list)
    must_succeed: bool = False


@dataclass
class LaunchPlan:
    player: Optional[ProcessSpec]
    nodes: List[ProcessSpec]
    output: str
    run_record: Dict[str, Any]
    shutdown_when_done: bool = True


def unknown_arguments(given: Sequence[str], declared: Sequence[str]) -> List[str]:
    """Command-line ``name:=value`` arguments that the launch file does not declare."""
    names = [str(item).partition(":=")[0] for item in given if ":=" in str(item)]
    allowed = set(declared) | set(LAUNCH_OWN_ARGUMENTS)
    return sorted({name for name in names if name not in allowed})


def launched_directly(launch_file: str, argv: Sequence[str]) -> bool:
    """True when ``launch_file`` is the file named on the command line (``ros2 launch PKG FILE`` or
    ``ros2 launch PATH``), not a file included by another: only then are the command-line arguments
    all meant for it."""
    name = os.path.basename(str(launch_file))
    return any(":=" not in arg and os.path.basename(arg) == name for arg in argv[1:])


def check_arguments(launch_file: str, given: Sequence[str], declared: Sequence[str],
                    argv: Sequence[str]) -> None:
    if not launched_directly(launch_file, argv):
        return
    unknown = unknown_arguments(given, declared)
    if unknown:
        raise UserError(f"{os.path.basename(launch_file)}: unknown argument(s) {', '.join(unknown)}; "
                        f"expected {', '.join(sorted(declared))}")


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
    checked_period_ns(rate, f"launch argument {name}")
    return rate


def _index(value: str, name: str, empty: Optional[int] = None) -> int:
    """A launch argument that is an integer >= 0 (``empty`` when not given, if allowed)."""
    text = str(value).strip()
    if not text and empty is not None:
        return empty
    if not is_number(text):
        raise UserError(f"launch argument {name}:={value!r}: expected an integer >= 0 (ASCII digits)")
    return int(text)


def _split_keys(value: str) -> List[str]:
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _model(value: str, name: str) -> str:
    if not str(value).strip():
        raise UserError(f"launch argument {name}: expected a preset name or a YAML file")
    return str(value).strip()


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
    params: Dict[str, Any] = {"use_sim_time": use_sim_time, "seed": seed, f"{sensor}_rate": rate,
                              "truth_topic": truth_topic, "twist_frame": twist_frame,
                              f"{sensor}_model": _model(model, f"{sensor}_model")}
    if keys:
        params["seed_keys"] = keys
    return ProcessSpec(name=f"{sensor}_noise_node", package=PACKAGE, executable=f"{sensor}_noise_node",
                       parameters=[params], must_succeed=True)


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
    return str(config_path(name))


def ros_package_installed(name: str, environ: Optional[Dict[str, str]] = None) -> bool:
    """True when a sourced ROS workspace has the package ``name``: its marker in the ament resource
    index (``<prefix>/share/ament_index/resource_index/packages/<name>``) under a prefix of
    AMENT_PREFIX_PATH — what ``ros2 pkg prefix`` looks up, without importing ROS."""
    prefixes = (os.environ if environ is None else environ).get("AMENT_PREFIX_PATH", "")
    return any((Path(prefix) / "share" / "ament_index" / "resource_index" / "packages" / name).is_file()
               for prefix in prefixes.split(os.pathsep) if prefix)


def _unit_interval(value: str, name: str, low: float = 0.0) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not low <= number <= 1.0:
        raise UserError(f"launch argument {name}:={value!r}: expected a number in [{low:g}, 1]")
    return number


def madgwick_nodes(args: Dict[str, str], use_sim_time: bool = True,
                   environ: Optional[Dict[str, str]] = None,
                   notice: Optional[Callable[[str], None]] = None) -> List[ProcessSpec]:
    """The Madgwick step of judge.launch.py (``imu_orientation:=madgwick``): imu_raw_topic → /imu with
    an orientation, by imu_filter_madgwick_node (6-DoF: use_mag false, world_frame enu, publish_tf
    false) where installed, else our madgwick_node (same parameters, same filter as the offline
    import); none with ``imu_orientation:=none``."""
    get = {name: str(args.get(name, JUDGE_ARGUMENTS[name][0])) for name in
           ("imu_orientation", "imu_raw_topic", "madgwick_node", "madgwick_gain", "madgwick_zeta",
            "orientation_stddev")}
    if get["imu_orientation"] not in IMU_ORIENTATIONS:
        raise UserError(f"launch argument imu_orientation:={get['imu_orientation']!r}: expected one of "
                        f"{', '.join(IMU_ORIENTATIONS)}")
    if get["madgwick_node"] not in MADGWICK_NODES:
        raise UserError(f"launch argument madgwick_node:={get['madgwick_node']!r}: expected one of "
                        f"{', '.join(MADGWICK_NODES)}")
    if get["imu_orientation"] == "none":
        return []
    raw = get["imu_raw_topic"].strip()
    if not raw or not (raw.startswith("/") or raw[0].isalpha()) or raw == TOPICS["imu"]:
        raise UserError(f"launch argument imu_raw_topic:={raw!r}: expected the raw IMU's topic, not "
                        f"{TOPICS['imu']} (the filter publishes there)")
    parameters = {"use_sim_time": use_sim_time, "use_mag": False, "world_frame": "enu", "publish_tf": False,
                  "gain": _unit_interval(get["madgwick_gain"], "madgwick_gain"),
                  "zeta": _unit_interval(get["madgwick_zeta"], "madgwick_zeta", -1.0),
                  "orientation_stddev": _unit_interval(get["orientation_stddev"], "orientation_stddev")}
    which = get["madgwick_node"]
    if which == "auto":
        which = "imu_filter_madgwick" if ros_package_installed("imu_filter_madgwick", environ) else PACKAGE
        (notice or _stderr)(f"judge.launch.py: madgwick_node:={which} (imu_filter_madgwick is "
                            f"{'' if which != PACKAGE else 'not '}installed)")
    executable = "imu_filter_madgwick_node" if which == "imu_filter_madgwick" else "madgwick_node"
    return [ProcessSpec(name="imu_filter_madgwick" if which == "imu_filter_madgwick" else "madgwick_node",
                        package=which if which == "imu_filter_madgwick" else PACKAGE, executable=executable,
                        parameters=[parameters],
                        # a filter node like ekf_node: its failure while running fails the launch, its
                        # exit code -2 at a terminal's Ctrl-C (the C++ node's, SIGINT to the group) does not
                        remappings=[("imu/data_raw", raw), ("imu/data", TOPICS["imu"])], must_succeed=False)]


def judge_plan(args: Dict[str, str], notice: Optional[Callable[[str], None]] = None,
               environ: Optional[Dict[str, str]] = None) -> List[ProcessSpec]:
    """judge.launch.py: the robot_localization pair with our configs, a static TF publisher per
    static TF (``static_tfs``; default the ART vehicle's, ``notice(text)`` told), and with
    ``imu_orientation:=madgwick`` the Madgwick node giving a raw IMU its orientation
    (``madgwick_nodes``)."""
    ekf = args.get("ekf_config") or default_config(EKF_CONFIG)
    navsat = args.get("navsat_config") or default_config(NAVSAT_CONFIG)
    use_sim_time = _bool_text(args.get("use_sim_time", "true"), "use_sim_time")
    static_tfs = parse_static_tf_list(args.get("static_tfs", ""), "launch argument static_tfs")
    if static_tfs is None:
        static_tfs = ART_STATIC_TFS
        (notice or _stderr)(f"judge.launch.py: applied the ART static TFs {_quoted(ART_STATIC_TFS)} "
                            f"(static_tfs:= overrides)")
    madgwick = madgwick_nodes(args, use_sim_time, environ, notice)
    return madgwick + judge_nodes(ekf, navsat, use_sim_time) + static_tf_nodes(static_tfs)


def _quoted(static_tfs: Sequence[str]) -> str:
    return " and ".join(f'"{tf}"' for tf in static_tfs)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def sensors_plan(args: Dict[str, str]) -> List[ProcessSpec]:
    """sensors.launch.py: the noise nodes beside a simulator (Chrono::ROS, Gazebo)."""
    get = {name: str(args.get(name, default[0])) for name, default in SENSORS_ARGUMENTS.items()}
    which = get["sensors"]
    if which not in ("gps", "imu", "both"):
        raise UserError(f"launch argument sensors:={which!r}: expected gps, imu or both")
    seed = _index(get["seed"], "seed")
    keys = _split_keys(get["seed_keys"])
    use_sim_time = _bool_text(get["use_sim_time"], "use_sim_time")
    truth_topic = get["truth_topic"] or TOPICS["ground_truth"]
    nodes = []
    for sensor in ("gps", "imu"):
        if which in (sensor, "both"):
            nodes.append(noise_node(sensor, get[f"{sensor}_model"], seed, keys,
                                    _rate(get[f"{sensor}_rate"], f"{sensor}_rate"), use_sim_time,
                                    truth_topic, get["twist_frame"]))
    return nodes


CLOCK_HZ = 40.0  # ros2 bag play's default /clock rate at play rate 1


def player(bag: str, play_rate: float, topics: Sequence[str]) -> ProcessSpec:
    """``ros2 bag play``: only ``topics`` (the real sensors, hidden under /real so that nobody judges
    them), publishing /clock, started paused (replay_node resumes it once every subscriber matched:
    nothing is lost before discovery), without keyboard controls (no terminal under launch).

    /clock is published at 40 Hz × ``play_rate`` of wall time, so the sim clock always advances in
    25 ms steps: the judge's timers (they fire on /clock updates) run as at play rate 1.
    """
    cmd = ["ros2", "bag", "play", bag, "--clock", repr(CLOCK_HZ * play_rate), "--rate", repr(play_rate),
           "--start-paused",
           "--disable-keyboard-controls", "--topics", *topics,
           "--remap", *[f"{topic}:={HIDDEN_PREFIX}{topic}" for topic in topics]]
    return ProcessSpec(name="bag_player", cmd=cmd)


def _offline_replay_loader():
    """replay.read_ahead.load_replay, or one line saying why evaluate cannot run here (the Jetson)."""
    where = ("evaluate.launch.py reads the bag with the offline tools (Python >= 3.10, rosbags): run it "
             "on a desktop or in docker/Dockerfile; on the robot use sensors.launch.py")
    if sys.version_info < (3, 10):
        raise UserError(f"{where} (this is Python {sys.version_info[0]}.{sys.version_info[1]})")
    try:
        from ..replay.read_ahead import load_replay
    except ImportError as exc:
        raise UserError(f"{where} ({exc})") from None
    return load_replay


def evaluate_plan(args: Dict[str, str], cwd: Optional[str] = None,
                  notice: Optional[Callable[[str], None]] = None) -> LaunchPlan:
    """evaluate.launch.py: launch arguments → every process, parameter and remap.

    The judge (ekf_node + navsat_transform_node, the bag's static TFs: ``static_tfs``, or as offline the
    ART ones for a bag in the ART layout, ``notice(text)`` told, none otherwise) gets /fix, /imu and the
    recorder /ground_truth/odom from ``replay_node``, which publishes the offline replay's streams of
    the bag (``replay.read_ahead``) on the player's clock; the player plays the bag's real /fix and /imu
    hidden under /real (it is the clock).  The bag is read here once, so a bad bag, a missing truth
    or a bad model fails before anything starts, in one line naming what is wrong.
    """
    load_replay = _offline_replay_loader()
    get = {name: str(args.get(name, default[0])) for name, default in EVALUATE_ARGUMENTS.items()}
    unknown = sorted(set(args) - set(EVALUATE_ARGUMENTS))
    if unknown:
        raise UserError(f"evaluate.launch.py: unknown argument(s) {', '.join(unknown)}")
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
    truth_source = get["truth_source"].strip()  # checked by the offline truth reader
    seed = _index(get["seed"], "seed")
    k = _index(get["k"], "k", empty=-1)
    play_rate = _rate(get["play_rate"], "play_rate")
    shutdown_when_done = _bool_text(get["shutdown_when_done"], "shutdown_when_done")
    gps_model = _model(get["gps_model"], "gps_model")
    imu_model = _model(get["imu_model"], "imu_model")
    ekf = str(Path(get["ekf_config"] or default_config(EKF_CONFIG)).expanduser())
    navsat = str(Path(get["navsat_config"] or default_config(NAVSAT_CONFIG)).expanduser())
    judge = judge_nodes(ekf, navsat)  # checks that both files exist
    static_tfs = parse_static_tf_list(get["static_tfs"], "launch argument static_tfs")
    try:
        replay = load_replay(str(bag_path), mode, gps_model, imu_model, seed, get["scenario"].strip(),
                             None if k < 0 else k, truth_source, ekf, navsat, storage, static_tfs,
                             notice=lambda line: (notice or _stderr)(f"evaluate.launch.py: {line}"))
    except UserError as exc:
        raise UserError(f"evaluate.launch.py: {exc}") from None
    # Marked incomplete until the launch confirms the run (node.recording.RunCompletion).
    info = replay.info().marked(UNCONFIRMED)
    output = get["output"].strip() or str(replay.directory(os.path.join(cwd or os.getcwd(), "runs")))
    if Path(output).exists():
        raise UserError(f"launch argument output: {output} already exists (choose another output)")

    spec = replay.spec
    bag_player = player(str(bag_path), play_rate, [spec.gps_topic, spec.imu_topic])
    # The judge and the recorder must listen before the first message is published (replay_node
    # waits for these subscriber counts, then resumes the player): /fix and /imu have navsat_transform
    # and the recorder, /odometry/filtered navsat_transform and the recorder, the truth the recorder.
    wait_for = [f"{TOPICS['gps']}=2", f"{TOPICS['imu']}=2", f"{TOPICS['estimate']}=2",
                f"{TOPICS['ground_truth']}=1"]
    replay_node = ProcessSpec(
        name="replay_node", package=PACKAGE, executable="replay_node", must_succeed=True,
        parameters=[{"use_sim_time": True, "bag": str(bag_path.resolve()), "mode": mode,
                     "gps_model": gps_model, "imu_model": imu_model, "seed": seed,
                     "scenario": spec.scenario, "k": spec.k, "truth_source": truth_source,
                     "ekf_config": spec.judge.ekf, "navsat_config": spec.judge.navsat, "play_rate": play_rate,
                     "wait_for": wait_for, "resume_service": f"/{PLAYER_NODE}/resume",
                     "static_tfs": static_tf_list_text(spec.judge.static_tfs)}])
    recorder = ProcessSpec(
        name="recorder_node", package=PACKAGE, executable="recorder_node", must_succeed=True,
        parameters=[{"use_sim_time": True, "output": output, "storage": storage,
                     "topics": list(RECORDED_TOPICS),
                     "required_topics": [TOPICS["estimate"], TOPICS["ground_truth"], TOPICS["gps"],
                                         TOPICS["imu"]],
                     "run_yaml": info.to_yaml()}])
    nodes = [replay_node] + static_tf_nodes(spec.judge.static_tfs) + judge + [recorder]
    return LaunchPlan(player=bag_player, nodes=nodes, output=output, run_record=info.to_dict(),
                      shutdown_when_done=shutdown_when_done)
