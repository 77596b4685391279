"""Judge a bag: the embedded robot_localization (ekf_node + navsat_transform_node) on the topics of a
bag its configuration subscribes (``sim2real-eval judge``), and the lint of its parameter files
(``judge --check``)."""
from __future__ import annotations

import contextlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from ..bags import open_bag, write_bag
from ..bags.layout import check_types, default_static_tfs, first_messages
from ..errors import DataWarning, UserError
from ..resources import config_candidates
from ..runs import file_sha256
from ..runs.timing import RunTiming, TimingModel
from .common import warn_once

if TYPE_CHECKING:  # the judge's modules load when a bag is judged: importing this module stays cheap
    from ..judge import EkfParams, Judge, JudgeResult, NavsatParams

EXPECTED_TYPES = {
    "odom": "nav_msgs/msg/Odometry",
    "pose": "geometry_msgs/msg/PoseWithCovarianceStamped",
    "twist": "geometry_msgs/msg/TwistWithCovarianceStamped",
    "imu": "sensor_msgs/msg/Imu",
}
NAVSATFIX = "sensor_msgs/msg/NavSatFix"


@dataclass(frozen=True)
class JudgeOptions:
    """How ``judge_bag`` runs the judge (the options of ``sim2real-eval judge``)."""

    node: str | None = None               # filter section of the ekf file (default: its only one)
    filter_type: str | None = None        # ekf | ukf (default: the section's filter_type, else ekf)
    navsat_node: str | None = None        # section of the navsat file
    gps_topic: str = "/fix"               # navsat's gps/fix topic in the bag
    static_tfs: Sequence[str] | None = ()  # None: the bag's default (the ART TFs for the ART layout)
    remaps: dict = field(default_factory=dict)  # ROS-style {from: to} of the nodes' topics
    timing: TimingModel | None = None     # None: exact multiples, zero latency
    allow_missing_sensor: bool = False    # judge a bag whose whole input was lost (else an error)
    storage: str = "sqlite3"              # of the output bag
    overwrite: bool = False               # replace the output folder (atomically)


@dataclass
class JudgedBag:
    """The embedded robot_localization's run on one bag: ``result``, the ``judge`` that ran (its output
    topic names), the bag topics it read, and ``summary`` (summary.json)."""

    result: JudgeResult
    judge: Judge
    topics: list
    summary: dict


@dataclass
class _Setup:
    """One judging's inputs, loaded."""

    bag: str
    ekf_config: Path
    ekf_params: EkfParams
    navsat_config: Path | None
    navsat_params: NavsatParams | None
    options: JudgeOptions
    timing_record: dict


@dataclass
class _Plan:
    """What the judge reads and the transforms it got, decided from the bag before the run."""

    judge: Judge
    wanted: list           # the bag topics it subscribes, checked
    static_tfs: list       # the static TFs applied
    default_tfs: bool      # the TFs are the bag's default (JudgeOptions.static_tfs None)
    unconnected: dict      # {frame: [topics]} of sensor frames no static TF connects to base_link
    base_link_frame: str

    def tf_hint(self) -> str:
        """The clause naming the unconnected frames and how to connect them ("" when none is)."""
        if not self.unconnected:
            return ""
        return f"; {missing_transform_hint(self.unconnected, self.base_link_frame)}"


def judge_bag(bag, ekf_config, navsat_config=None, options: JudgeOptions = JudgeOptions(), *, output=None,
              progress: Callable | None = None, notice: Callable | None = None) -> JudgedBag:
    """Run ekf_node (+ navsat_transform_node with ``navsat_config``) on the topics of ``bag`` that the
    configuration subscribes; every input topic is checked first (present, right type).  The judge
    reads the bag's raw CDR.

    ``options.static_tfs=None``: the ART static TFs (``art.ART_STATIC_TFS``, as ``replay`` applies) when
    the bag is in the ART layout (``default_static_tfs``; ``notice(text)`` is told, one line), none
    otherwise; ``summary["static_tfs_default"]`` says which.  Before the run, the IMU covariances of the
    bag's first IMU messages are linted under those TFs (``bag_imu_lint``: a DataWarning each).
    ``progress(start_ns, end_ns)``: a context manager around the run that yields a callable
    ``advance(recv_ns)`` (or None); ``JudgedBag.summary`` is what ``sim2real-eval judge`` writes as
    summary.json, with ``frames_without_transform``: sensor frames no static TF connects to base_link.
    With ``output``, the outputs are written there (rosbag2, atomic, with summary.json) while the bag is
    judged, so memory stays flat in the bag's length; ``result`` then holds only the last messages of its
    series (its counts, ``final_position`` and ``final_stamp_ns`` are complete).  A run that is refused
    (the filter never initialised, a lost input) leaves no output.
    """
    from ..judge import bag_records, load_ekf_params, load_navsat_params
    from ..stamps import period_ns

    ekf_params = load_ekf_params(ekf_config, options.node, options.filter_type)
    navsat_params = load_navsat_params(navsat_config, options.navsat_node) if navsat_config else None
    timing = options.timing or TimingModel()
    values = timing.run_timing((period_ns(ekf_params.frequency),
                                period_ns(navsat_params.frequency) if navsat_params is not None else None), 0)
    setup = _Setup(str(bag), ekf_config, ekf_params, navsat_config, navsat_params, options,
                   timing.record(values, 0) or {"model": "fixed", **RunTiming()._asdict()})
    with open_bag(bag) as reader:
        if reader.message_count == 0:
            raise UserError(f"{bag}: the bag is empty")
        plan = _plan(reader, setup, values, notice)
        with (progress(reader.start_ns, reader.end_ns) if progress is not None
              else contextlib.nullcontext()) as advance:
            records = bag_records(reader, plan.wanted)
            if output is None:
                result = plan.judge.run(records, progress=advance)
                _accept(result, setup, plan)
            else:
                result = _judge_into(output, records, advance, setup, plan)
    return JudgedBag(result, plan.judge, plan.wanted, _judge_summary(result, setup, plan))


def _plan(reader, setup: _Setup, timing_values, notice: Callable | None) -> _Plan:
    """The bag's input topics (checked), the static TFs (given, or the bag's default), the IMU lint under
    them, and the judge that will run."""
    from ..judge import Judge, parse_static_tf
    from ..judge.config import judge_timing

    ekf, options = setup.ekf_params, setup.options
    probe = Judge(ekf, setup.navsat_params, (), gps_topic=options.gps_topic, remaps=options.remaps or {})
    wanted = _judge_inputs(probe, ekf, setup.navsat_params, reader.topics, setup.bag, setup.ekf_config)
    frames = sensor_frames(reader, probe, ekf, wanted)
    default = options.static_tfs is None
    if default:
        imu_topics = [probe.topic(sensor.topic) for sensor in ekf.sensors if sensor.kind == "imu"]
        applied = default_static_tfs(reader, frames, ekf.base_link_frame, imu_topics, setup.bag, notice)
    else:
        applied = options.static_tfs
    tfs = [parse_static_tf(spec) for spec in applied]
    warn_once(bag_imu_lint(setup.bag, ekf, applied, unresolved=False))  # before the run: judge.lint
    judge = Judge(ekf, setup.navsat_params, tfs, gps_topic=options.gps_topic, remaps=options.remaps or {},
                  timing=judge_timing(timing_values))
    return _Plan(judge, wanted, list(applied), default,
                 frames_without_transform(frames, ekf.base_link_frame, tfs), ekf.base_link_frame)


def _judge_into(output, records, advance, setup: _Setup, plan: _Plan) -> JudgeResult:
    """Judge ``records`` while writing the output bag; summary.json is written last, once the run is
    accepted (``_accept`` refuses it before the output appears)."""
    from ..judge import output_records

    stream = plan.judge.stream(records, progress=advance)

    def outputs():
        yield from output_records(stream, plan.judge.filtered_topic, plan.judge.gps_odometry_topic)
        _accept(stream.result, setup, plan)

    write_bag(output, outputs(), storage=setup.options.storage, overwrite=setup.options.overwrite,
              extra_files={"summary.json": lambda: json.dumps(_judge_summary(stream.result, setup, plan),
                                                              indent=2) + "\n"})
    return stream.result


def _accept(result: JudgeResult, setup: _Setup, plan: _Plan) -> None:
    """A UserError when the filter never published or an input was lost (unless allowed); the run's
    warnings said (the CLI prints them), not only written to summary.json."""
    if result.published == 0:
        raise UserError(f"{setup.bag}: the filter never initialised (no usable measurement on "
                        f"{', '.join(plan.wanted)}); dropped: {result.dropped}{plan.tf_hint()}")
    for text in result.warnings:
        warnings.warn(text, DataWarning, stacklevel=3)
    result.check_sensors(setup.bag, allow_missing=setup.options.allow_missing_sensor,
                         hint=f"{plan.tf_hint()} (--allow-missing-sensor judges it anyway)")


def _judge_summary(result: JudgeResult, setup: _Setup, plan: _Plan) -> dict:
    """summary.json."""
    ekf, navsat = setup.ekf_params, setup.navsat_params
    config = {"ekf": str(setup.ekf_config), "ekf_sha256": file_sha256(str(setup.ekf_config)),
              "node": ekf.node, "filter_type": ekf.filter_type}
    if navsat is not None:
        config.update({"navsat": str(setup.navsat_config),
                       "navsat_sha256": file_sha256(str(setup.navsat_config)), "navsat_node": navsat.node})
    config["base_link_frame"] = ekf.base_link_frame
    return {
        "bag": setup.bag,
        "config": config,
        "final_position": [float(v) for v in result.final_position],
        "final_stamp_ns": int(result.final_stamp_ns),
        "published": result.published,
        "gps_odometry_published": result.gps_published,
        "inputs": result.inputs,
        "dropped": result.dropped,
        "warnings": result.warnings,
        "config_warnings": list(ekf.warnings) + list(navsat.warnings if navsat else []),
        "static_tfs": list(plan.static_tfs),
        "remaps": dict(setup.options.remaps or {}),
        "timing": setup.timing_record,
        "static_tfs_default": ("ART layout: art.ART_STATIC_TFS" if plan.default_tfs and plan.static_tfs
                               else "none" if plan.default_tfs else "given"),
        "frames_without_transform": dict(plan.unconnected),
    }
def sensor_frames(reader, judge, ekf_params, wanted: Sequence[str]) -> dict:
    """{frame_id: [topics]} of the first message of each IMU input and navsat's GPS topic: the frames
    the judge must transform into base_link (odometry/pose/twist inputs name world frames too and are
    not surveyed)."""
    topics = [t for t in wanted if (t == judge.gps_topic or any(
        judge.topic(s.topic) == t and s.kind == "imu" for s in ekf_params.sensors))
        and reader.topics[t].count > 0]  # an empty topic would make this read the whole bag
    frames: dict = {}
    seen: set = set()
    if topics:
        for message in reader.messages(topics, allow_empty=True):
            if message.topic in seen:
                continue
            seen.add(message.topic)
            frames.setdefault(str(message.msg.header.frame_id), []).append(message.topic)
            if len(seen) == len(topics):
                break
    return frames


def bag_imu_lint(bag, ekf_params, static_tfs: Sequence[str] | None = None, notice: Callable | None = None,
                 unresolved: bool = True) -> list:
    """``judge.lint`` findings (one line each) for the covariances of the first message of each IMU input
    of ``ekf_params`` in ``bag``, with ``static_tfs`` (None: the bag's default, ``default_static_tfs``);
    ``unresolved``: also the IMU frames no TF connects (their covariances cannot be checked)."""
    from ..judge import Judge, parse_static_tf
    from ..judge.lint import IMU_PARTS, imu_covariance_findings

    probe = Judge(ekf_params, None, ())
    topics = [probe.topic(sensor.topic) for sensor in ekf_params.sensors if sensor.kind == "imu"]
    findings: list = []
    with open_bag(bag) as reader:
        check_types(reader, bag, [(topic, "sensor_msgs/msg/Imu") for topic in topics])
        first, frames = first_messages(reader, topics)
        tfs = (default_static_tfs(reader, frames, ekf_params.base_link_frame, list(first), str(bag), notice)
               if static_tfs is None else static_tfs)
    transforms = [parse_static_tf(text) for text in tfs]
    for topic, msg in first.items():
        covariances = {part: list(getattr(msg, part)) for part in IMU_PARTS}
        findings += imu_covariance_findings(ekf_params, transforms, str(msg.header.frame_id), covariances,
                                            f"{bag} {topic}", unresolved)
    return findings


def frames_without_transform(frames: dict, base_link_frame: str, tfs: Sequence) -> dict:
    """{frame: [topics]} of the sensor frames that no static transform connects to ``base_link_frame``."""
    from ..judge.tf import TfBuffer

    buffer = TfBuffer(tfs)
    return {frame: topics for frame, topics in sorted(frames.items())
            if frame not in (base_link_frame, "") and buffer.lookup_safe(base_link_frame, frame, 0) is None}


def missing_transform_hint(unconnected: dict, base_link_frame: str) -> str:
    """One line naming the frames without a transform and the option that gives one."""
    listed = ", ".join(f"{frame!r} ({', '.join(topics)})" for frame, topics in unconnected.items())
    example = next(iter(unconnected))
    return (f"no transform from {listed} to {base_link_frame!r}: give each with "
            f"--static-tf \"{base_link_frame} {example} x y z yaw pitch roll\" (repeatable)")


def _judge_inputs(judge, ekf_params, navsat_params, topics: dict, bag, ekf_config) -> list:
    """The bag topics the judge subscribes, each checked against the bag (present, right type)."""
    wanted = []
    for sensor in ekf_params.sensors:
        topic = judge.topic(sensor.topic)
        if topic not in judge.input_topics:
            continue  # produced by the judge itself (navsat's /odometry/gps)
        where = f"{sensor.name} ({sensor.topic}) of {ekf_config}"
        if topic not in topics:
            raise UserError(f"topic {topic}, {where}, is not in {bag} "
                            f"(topics: {', '.join(sorted(topics)) or 'none'})")
        if topics[topic].msgtype != EXPECTED_TYPES[sensor.kind]:
            raise UserError(f"topic {topic} in {bag} is {topics[topic].msgtype}; {where} needs "
                            f"{EXPECTED_TYPES[sensor.kind]}")
        wanted.append(topic)
    if navsat_params is not None:
        gps = judge.gps_topic
        if gps not in topics:
            raise UserError(f"GPS topic {gps} (navsat gps/fix) is not in {bag} "
                            f"(topics: {', '.join(sorted(topics))})")
        if topics[gps].msgtype != NAVSATFIX:
            raise UserError(f"topic {gps} in {bag} is {topics[gps].msgtype}; navsat needs {NAVSATFIX}")
        wanted.append(gps)
        if (judge.navsat_imu_topic in topics and not navsat_params.use_odometry_yaw
                and not navsat_params.wait_for_datum):
            if topics[judge.navsat_imu_topic].msgtype != EXPECTED_TYPES["imu"]:
                raise UserError(f"topic {judge.navsat_imu_topic} in {bag} is not sensor_msgs/msg/Imu")
            wanted.append(judge.navsat_imu_topic)
    if ekf_params.use_control and judge.cmd_vel_topic in topics:
        wanted.append(judge.cmd_vel_topic)
    return list(dict.fromkeys(wanted))




# ================================================================== judge --check: the files alone
@dataclass
class CheckedConfig:
    """One parameter file linted as Humble reads it: ``lines`` [(level, text)], the file's ``summary``
    (what it holds) and its number of errors."""

    path: Path
    lines: list
    summary: str
    errors: int

    @property
    def warnings(self) -> int:
        return sum(level == "warning" for level, _text in self.lines)


def check_configs(paths: Sequence, imu_models: Sequence[str] = (), bag=None, static_tfs: Sequence[str] = (),
                  notice: Callable | None = None) -> list:
    """``judge --check``: every finding of every robot_localization parameter file (a bare name is looked
    up in config/ too), a ``CheckedConfig`` each.  With IMU models or a bag, each ekf/ukf file that loads
    is also checked against those IMUs' covariances (``judge.lint``: a covariance that is no covariance
    once rotated into base_link and two_d_mode is applied; a warning, as Humble runs it)."""
    from ..judge.params import check_params_file

    checked = []
    for given in paths:
        path = next((c for c in config_candidates(given) if c.is_file()), given)
        result = check_params_file(path)
        lines = list(result.lines)
        if result.errors == 0 and (imu_models or bag is not None):
            lines += [("warning", text) for text in _imu_lint(path, imu_models, bag, static_tfs, notice)]
        checked.append(CheckedConfig(path, lines, result.summary, result.errors))
    return checked


def _imu_lint(path, imu_models, bag, static_tfs, notice) -> list:
    """``path: warning: SOURCE: …`` lines of the IMU covariance lint (nothing for a file without one filter
    section); a bag without static TFs gets its default ones (the ART ones for the ART layout)."""
    from ..judge import load_ekf_params, parse_static_tf
    from ..judge.lint import imu_covariance_findings, model_covariances
    from ..models import load_imu_model

    try:
        ekf = load_ekf_params(path)
    except UserError:
        return []  # a navsat file, or several filter sections: nothing to check the IMU against
    tfs = [parse_static_tf(text) for text in static_tfs]
    lines = []
    for spec in imu_models:
        model = load_imu_model(spec, None)
        lines += imu_covariance_findings(ekf, tfs, model.frame_id, model_covariances(model),
                                         f"imu model {spec}")
    if bag is not None:
        lines += bag_imu_lint(bag, ekf, static_tfs or None, notice)
    return [f"{path}: warning: {text}" for text in lines]


__all__ = ["EXPECTED_TYPES", "NAVSATFIX", "CheckedConfig", "JudgeOptions", "JudgedBag", "bag_imu_lint",
           "check_configs", "frames_without_transform", "judge_bag", "missing_transform_hint",
           "sensor_frames"]
