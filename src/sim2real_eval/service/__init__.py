"""The library behind the commands: judge a bag, simulate a study, replay real bags, score a run tree.

Each task is one function returning a result object.  The CLI modules, the demo and tune call these
(as evo's command line calls ``main_ape.ape``), so each task is assembled in one place; the commands
only parse arguments, show progress and print.

    judge_bag(bag, ekf, navsat=…, output=OUT) -> JudgedBag   (OUT written while judging)
    simulate_study(study, out) -> SimulatedRuns           simulate_runs(tasks, out)
    plan_replays(bags, replacements, judge) -> [BagReplay]  replay_bags(tasks, out) -> ReplayedBags
    find_runs_to_score(runs_dir | manifest | csv_dir) -> (kind, source, specs)
    load_runs(specs, options) -> LoadedRuns               score_runs(specs, options) -> ScoredRuns

Importing this module is cheap; the heavy packages load when a task runs.
"""
from __future__ import annotations

import contextlib
import functools
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .errors import DataWarning, UserError
from .outputs import check_name, check_paths

# ============================================================================ judge a bag
EXPECTED_TYPES = {
    "odom": "nav_msgs/msg/Odometry",
    "pose": "geometry_msgs/msg/PoseWithCovarianceStamped",
    "twist": "geometry_msgs/msg/TwistWithCovarianceStamped",
    "imu": "sensor_msgs/msg/Imu",
}
NAVSATFIX = "sensor_msgs/msg/NavSatFix"


@dataclass
class JudgedBag:
    """The embedded robot_localization's run on one bag: ``result`` (``judge.JudgeResult``), the
    ``judge`` that ran (its output topic names), the bag topics it read, and ``summary`` (summary.json)."""

    result: Any
    judge: Any
    topics: list
    summary: dict


def judge_bag(bag, ekf_config, navsat_config=None, *, node: str | None = None, filter_type: str | None = None,
              navsat_node: str | None = None, gps_topic: str = "/fix", static_tfs: Sequence[str] | None = (),
              remaps: dict | None = None, timing=None, progress: Callable | None = None,
              allow_missing_sensor: bool = False, output=None, storage: str = "sqlite3",
              overwrite: bool = False, notice: Callable | None = None) -> JudgedBag:
    """Run ekf_node (+ navsat_transform_node with ``navsat_config``) on the topics of ``bag`` that the
    configuration subscribes; every input topic is checked first (present, right type).  The judge
    reads the bag's raw CDR.

    ``timing``: the timers' ``pipeline.timing.TimingModel`` (default: exact multiples, zero latency;
    random draws with its seed, default 0).

    ``static_tfs=None``: the ART static TFs (``art.ART_STATIC_TFS``, as ``replay`` applies) when the bag
    is in the ART layout (``default_static_tfs``; ``notice(text)`` is told, one line), none otherwise;
    ``summary["static_tfs_default"]`` says which.  Before the run, the IMU covariances of the bag's first
    IMU messages are linted under those TFs (``bag_imu_lint``: a DataWarning each).
    ``progress(start_ns, end_ns)``: a context manager around the run that yields a callable
    ``advance(recv_ns)`` (or None); ``JudgedBag.summary`` is what ``sim2real-eval judge`` writes as
    summary.json, with ``frames_without_transform``: sensor frames no static TF connects to base_link.
    With ``output``, the outputs are written there (rosbag2, atomic, with summary.json) while the bag is
    judged, so memory stays flat in the bag's length; ``result`` then holds only the last messages of its
    series (its counts, ``final_position`` and ``final_stamp_ns`` are complete).
    """
    from .bags import open_bag
    from .bags.layout import default_static_tfs
    from .judge import (
        Judge,
        bag_records,
        load_ekf_params,
        load_navsat_params,
        output_records,
        parse_static_tf,
    )
    from .pipeline.timing import RunTiming, TimingModel, judge_timing, period_ns
    from .runs import file_sha256

    ekf_params = load_ekf_params(ekf_config, node, filter_type)
    navsat_params = load_navsat_params(navsat_config, navsat_node) if navsat_config else None
    timing = timing or TimingModel()
    periods = (period_ns(ekf_params.frequency),
               period_ns(navsat_params.frequency) if navsat_params is not None else None)
    values = timing.run_timing(periods, 0)
    timing_record = timing.record(values, 0) or {"model": "fixed", **RunTiming()._asdict()}
    state: dict = {}

    def finish(result) -> None:  # before anything is written: a refused run leaves no output
        if result.published == 0:
            raise UserError(
                f"{bag}: the filter never initialised (no usable measurement on "
                f"{', '.join(wanted)}); dropped: {result.dropped}{tf_hint}"
            )
        for text in result.warnings:  # said, not only written to summary.json (the CLI prints them)
            warnings.warn(text, DataWarning, stacklevel=3)
        result.check_sensors(str(bag), allow_missing=allow_missing_sensor,  # a lost input is an error
                             hint=f"{tf_hint} (--allow-missing-sensor judges it anyway)")
        summary = _judge_summary(result, bag, ekf_config, ekf_params, navsat_config, navsat_params,
                                 applied_tfs, remaps, file_sha256, timing_record)
        summary["static_tfs_default"] = ("ART layout: art.ART_STATIC_TFS" if default and applied_tfs
                                         else "none" if default else "given")
        summary["frames_without_transform"] = dict(unconnected)
        summary["config"]["base_link_frame"] = ekf_params.base_link_frame
        state["result"], state["summary"] = result, summary

    with open_bag(bag) as reader:
        if reader.message_count == 0:
            raise UserError(f"{bag}: the bag is empty")
        probe = Judge(ekf_params, navsat_params, (), gps_topic=gps_topic, remaps=remaps or {})
        wanted = _judge_inputs(probe, ekf_params, navsat_params, reader.topics, bag, ekf_config)
        frames = sensor_frames(reader, probe, ekf_params, wanted)
        default = static_tfs is None
        imu_topics = [probe.topic(sensor.topic) for sensor in ekf_params.sensors if sensor.kind == "imu"]
        applied_tfs = (default_static_tfs(reader, frames, ekf_params.base_link_frame, imu_topics, str(bag),
                                          notice) if default else static_tfs)
        tfs = [parse_static_tf(spec) for spec in applied_tfs]
        _warn_once(bag_imu_lint(bag, ekf_params, applied_tfs, unresolved=False))  # before the run: judge.lint
        unconnected = frames_without_transform(frames, ekf_params.base_link_frame, tfs)
        tf_hint = (f"; {missing_transform_hint(unconnected, ekf_params.base_link_frame)}"
                   if unconnected else "")
        judge = Judge(ekf_params, navsat_params, tfs, gps_topic=gps_topic, remaps=remaps or {},
                      timing=judge_timing(values))
        context = progress(reader.start_ns, reader.end_ns) if progress is not None else _no_progress()
        with context as advance:
            records = bag_records(reader, wanted)
            if output is None:
                finish(judge.run(records, progress=advance))
            else:
                import json

                from .bags import write_bag

                stream = judge.stream(records, progress=advance)

                def outputs():
                    yield from output_records(stream, judge.filtered_topic, judge.gps_odometry_topic)
                    finish(stream.result)

                write_bag(output, outputs(), storage=storage, overwrite=overwrite,
                          extra_files={"summary.json": lambda: json.dumps(state["summary"], indent=2) + "\n"})
    return JudgedBag(state["result"], judge, wanted, state["summary"])


@contextlib.contextmanager
def _no_progress():
    yield None


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
    from .bags import open_bag
    from .bags.layout import check_types, default_static_tfs, first_messages
    from .judge import Judge, parse_static_tf
    from .judge.lint import IMU_PARTS, imu_covariance_findings

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
    from .judge.tf import TfBuffer

    buffer = TfBuffer(tfs)
    return {frame: topics for frame, topics in sorted(frames.items())
            if frame not in (base_link_frame, "") and buffer.lookup_safe(base_link_frame, frame, 0) is None}


def missing_transform_hint(unconnected: dict, base_link_frame: str) -> str:
    """One line naming the frames without a transform and the option that gives one."""
    listed = ", ".join(f"{frame!r} ({', '.join(topics)})" for frame, topics in unconnected.items())
    example = next(iter(unconnected))
    return (f"no transform from {listed} to {base_link_frame!r}: give each with "
            f"--static-tf \"{base_link_frame} {example} x y z yaw pitch roll\" (repeatable)")


def _judge_summary(result, bag, ekf_config, ekf_params, navsat_config, navsat_params, static_tfs, remaps,
                   file_sha256, timing: dict) -> dict:
    summary = {
        "bag": str(bag),
        "config": {
            "ekf": str(ekf_config),
            "ekf_sha256": file_sha256(str(ekf_config)),
            "node": ekf_params.node,
            "filter_type": ekf_params.filter_type,
        },
        "final_position": [float(v) for v in result.final_position],
        "final_stamp_ns": int(result.final_stamp_ns),
        "published": result.published,
        "gps_odometry_published": result.gps_published,
        "inputs": result.inputs,
        "dropped": result.dropped,
        "warnings": result.warnings,
        "config_warnings": list(ekf_params.warnings) + list(navsat_params.warnings if navsat_params else []),
        "static_tfs": list(static_tfs),
        "remaps": dict(remaps or {}),
        "timing": timing,
    }
    if navsat_params is not None:
        summary["config"].update({"navsat": str(navsat_config),
                                  "navsat_sha256": file_sha256(str(navsat_config)),
                                  "navsat_node": navsat_params.node})
    return summary


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


# ======================================================================= simulate a study
@dataclass
class SimulatedRuns:
    """Simulated runs: the tasks, the batch report (outcomes in task order, failures) and wall time."""

    tasks: list
    report: Any  # pipeline.batch.BatchReport
    seconds: float
    study: Any = None

    def first_failure(self) -> None:
        """Raise the first failed run's own message (as if that run had run alone)."""
        if self.report.failures:
            raise UserError(self.report.failures[0].message)


def simulate_runs(tasks: Sequence, out, *, workers: int | None = None, ray_address: str | None = None,
                  progress: bool = True, description: str = "runs") -> SimulatedRuns:
    """Execute simulated runs (``pipeline.run.SimRunSpec``) into ``out``; complete ones are skipped."""
    from .pipeline.batch import run_batch

    start = time.perf_counter()
    report = run_batch(tasks, out, workers=workers, ray_address=ray_address, progress=progress,
                       description=description)
    return SimulatedRuns(list(tasks), report, time.perf_counter() - start)


def simulate_study(study, out, *, storage: str | None = None, workers: int | None = None,
                   ray_address: str | None = None, progress: bool = True, timing=None) -> SimulatedRuns:
    """Every run of a study (a ``pipeline.study.Study`` or a study file) into ``out/sim/…``; ``timing``
    (a ``pipeline.timing.TimingModel``) replaces the study's judge timing."""
    import dataclasses

    from .pipeline.study import load_study

    if not hasattr(study, "runs"):
        study = load_study(study)
    if timing is not None:
        study = dataclasses.replace(study, judge=dataclasses.replace(study.judge, timing=timing))
    check_name(out, "--out")
    tasks = study.runs(storage=storage)
    files = [p for t in tasks for p in (t.judge.ekf, t.judge.navsat, t.gps, t.imu)]
    check_paths({"STUDY": study.source, "(files of the study)": _existing_files(files)},
                {"--out": Path(out) / "sim"})
    lint_study_imus(study)
    done = simulate_runs(tasks, out, workers=workers, ray_address=ray_address,
                         progress=progress, description=f"simulate {study.name}")
    done.study = study
    return done


def lint_study_imus(study) -> None:
    """Before any run: each IMU model of the study whose covariance is no covariance once ekf_node has
    rotated it into base_link (``judge.lint``) is a DataWarning, one line per model."""
    from .pipeline.run import model_imu_findings

    specs = {_json_key(variant.imu): variant.imu for variant in study.variants}
    findings = []
    for spec in specs.values():
        try:
            findings += model_imu_findings(study.judge, spec)
        except UserError:
            pass  # a model the runs cannot load either: the batch's preflight names it
    _warn_once(findings)


def _json_key(value) -> str:
    """A model spec (name, path or mapping) as a hashable key."""
    import json

    return json.dumps(value, sort_keys=True, default=str)


def _existing_files(values: Iterable) -> list:
    """The values that name existing files (model specs may also be preset names or mappings)."""
    return sorted({str(v) for v in values if isinstance(v, (str, os.PathLike)) and Path(v).is_file()})


# ========================================================================= replay bags
@dataclass
class ReplayedBags:
    """Replayed real bags: one task per bag, the batch report and wall time; ``runs`` lists each run."""

    tasks: list
    report: Any
    seconds: float

    @property
    def runs(self) -> list:
        """The RunOutcome of every run (written or already complete), bag by bag."""
        return [run for outcome in self.report.outcomes if outcome is not None for run in outcome.runs]

    @property
    def scored(self) -> list:
        """Every run scored where it was judged (``replay.offline.ScoredRun``), bag by bag."""
        return [run for outcome in self.report.outcomes if outcome is not None for run in outcome.scored]

    def health_records(self) -> list:
        """The real runs whose judge health was assessed, as ``RunRecord`` (scored ones as scored; those of
        a replay without scoring carry no score)."""
        from .metrics.study import REAL, RunRecord

        records = [run.record for run in self.scored if run.record.health is not None]
        if records:
            return records
        return [RunRecord(REAL, REAL, task.spec.scenario, task.spec.k, run.path, None, run.health)
                for task, outcome in zip(self.tasks, self.report.outcomes) if outcome is not None
                for run in outcome.runs if run.health is not None]

    def noise_floor_draws(self) -> list:
        """The noise-floor judgements of the bags, as one list of ``RunRecord`` per timing draw."""
        draws: dict = {}
        for outcome in self.report.outcomes:
            for draw, record in (outcome.scores if outcome is not None else ()):
                draws.setdefault(draw, []).append(record)
        return [draws[draw] for draw in sorted(draws)]

    def raise_on_failure(self) -> None:
        """A UserError when a bag failed: its own message when it was the only bag."""
        if len(self.tasks) == 1 and self.report.failures:
            raise UserError(self.report.failures[0].message)
        self.report.raise_on_failure()


def plan_replays(bags: Iterable, replacements: Sequence, judge, *, real: bool = True, scoring=None,
                 write: bool = True, floor_draws: int = 0, static_tfs_by_layout: bool = False,
                 **options) -> list:
    """One ``replay.offline.BagReplay`` per real bag (``runs.RealBag``): its real run (``real``) and
    one sim run per ``replay.offline.Replacement``.  With ``scoring`` (``metrics.ScoreOptions``) every
    run is scored where it is judged (``ReplayedBags.scored``), and ``write`` False writes no run bag;
    ``floor_draws``: the judge-noise floor's judgements of the real streams (``noise_floor``).
    ``options``: ``ReplaySpec`` fields (seed, storage, ground_truth_rate, truth_source, msg_path,
    imu_topic, gps_topic).

    Each bag is peeked at (its first IMU and GPS messages): a replaced IMU publishes in the frame of the
    bag's real IMU (``ReplaySpec.imu_frame``); with ``static_tfs_by_layout``, ``judge.static_tfs`` are
    replaced per bag by its default (``default_static_tfs``: the ART ones for a bag in the ART layout,
    else none).  ``replay_bags`` says which bags got the ART TFs and lints the IMU covariances."""
    import dataclasses

    from .replay.offline import BagReplay, ReplaySpec

    tasks = []
    for bag in bags:
        tfs, real_imu = _peek_real_bag(bag.path, judge, options, by_layout=static_tfs_by_layout)
        bag_judge = dataclasses.replace(judge, static_tfs=tfs) if static_tfs_by_layout else judge
        frame = None if real_imu is None else real_imu[0]  # the replaced IMU publishes there
        spec = ReplaySpec.of(bag, bag_judge, imu_frame=frame, **options)
        tasks.append(BagReplay(spec, tuple(replacements), real, scoring, write, floor_draws,
                               static_tfs_by_layout, real_imu))
    return tasks


def announce_replays(tasks: Sequence, notice: Callable | None = None) -> None:
    """What the replay of ``tasks`` applies and risks, said before any run: one ``notice`` line naming
    the bags that got the ART static TFs by default, and a DataWarning per IMU covariance that is no
    covariance once ekf_node has rotated it into base_link (``judge.lint``): each distinct real IMU
    (first message of its bag) and each replaced IMU model, once per mount."""
    from .art import ART_STATIC_TFS
    from .bags.layout import art_static_tfs_note
    from .pipeline.run import imu_findings, model_imu_findings

    applied = [t.spec.bag for t in tasks
               if t.default_static_tfs and t.spec.judge.static_tfs == ART_STATIC_TFS]
    if applied and notice is not None:
        notice(art_static_tfs_note(applied))
    findings: list = []
    real_imus: dict = {}  # (judge, frame, covariances) -> bags: each distinct real IMU linted once
    for task in tasks:
        judges_real_imu = task.real or any("imu" not in sim.replace for sim in task.sims)
        if task.real_imu is not None and judges_real_imu:
            frame, covariances = task.real_imu
            key = (task.spec.judge, frame, tuple(tuple(float(v) for v in c) for c in covariances.values()))
            real_imus.setdefault(key, (covariances, task.spec.imu_topic, []))[2].append(task.spec.bag)
    for (judge, frame, _values), (covariances, topic, paths) in real_imus.items():
        more = f" (and {len(paths) - 1} more bag(s) with this IMU covariance)" if len(paths) > 1 else ""
        findings += imu_findings(judge, frame, covariances, f"{paths[0]} {topic}{more}")
    models = {(t.spec.judge, t.spec.imu_frame, _json_key(sim.replace["imu"])): sim.replace["imu"]
              for t in tasks for sim in t.sims if "imu" in sim.replace}
    for (judge, frame, _key), spec in models.items():  # each model once per mount
        try:
            findings += model_imu_findings(judge, spec, frame=frame)
        except UserError:
            pass  # a model the run cannot load either: the run names it, after the bag's own checks
    _warn_once(findings)


def _peek_real_bag(path: str, judge, options: dict, by_layout: bool) -> tuple:
    """(static TFs, (IMU frame, {part: covariance}) of its first IMU message or None) of a real bag: the
    TFs are ``judge.static_tfs``, or with ``by_layout`` the bag's default (``bags.layout.peek_real_bag``;
    a bag whose frames need a TF it does not get is refused by the replay before any run,
    ``replay.offline.check_frames``).  Without ``by_layout``, a bag that cannot be read here is left to
    the replay, which names the problem."""
    from .art import TOPICS
    from .bags.layout import peek_real_bag
    from .judge.lint import IMU_PARTS
    from .pipeline.run import _judge_parts

    imu_topic, gps_topic = options.get("imu_topic", TOPICS["imu"]), options.get("gps_topic", TOPICS["gps"])
    ekf = _judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))[0]
    try:
        tfs, imu = peek_real_bag(path, imu_topic, gps_topic, ekf.base_link_frame, options.get("msg_path"),
                                 by_layout)
    except UserError:
        if by_layout:
            raise
        return tuple(judge.static_tfs), None
    covariances = None if imu is None else (str(imu.header.frame_id),
                                            {part: list(getattr(imu, part)) for part in IMU_PARTS})
    return (tfs if by_layout else tuple(judge.static_tfs)), covariances


def _warn_once(lines: Iterable[str]) -> None:
    """Each distinct line as a DataWarning (the CLI prints ``sim2real-eval CMD: warning: …``)."""
    for line in dict.fromkeys(lines):
        warnings.warn(line, DataWarning, stacklevel=3)


def replay_bags(tasks: Sequence, out, *, workers: int | None = None, ray_address: str | None = None,
                progress: bool = True, description: str | None = None, notice: Callable | None = None,
                shared=None, warn_health: bool = True) -> ReplayedBags:
    """Execute ``plan_replays``'s tasks into ``out``: bags in parallel, runs of a bag in one task.  Once
    the paths are checked and before any run, ``announce_replays`` (``notice``: the ART TFs line).
    ``shared``: the existing folder Ray's nodes must see when ``out`` is not made (``pipeline.batch``).
    After the runs, with ``warn_health``: one DataWarning when the judge does not track the real vehicle
    in a real run (``replay.health``; ``report.health.warning_line``: the cause measured and a next step)."""
    from .pipeline.batch import available_cores, run_batch

    start = time.perf_counter()
    tasks = list(tasks)
    check_name(out, "--out")
    check_paths({"BAG": [t.spec.bag for t in tasks], "--msg-path": [t.spec.msg_path for t in tasks],
                 "(judge/model files)": _existing_files(
                     [f for t in tasks for f in (t.spec.judge.ekf, t.spec.judge.navsat)]
                     + [m for t in tasks for sim in t.sims for m in sim.replace.values()])},
                {"--out": [t.spec.run_id(sim).directory(out)
                           for t in tasks if t.write for sim in ([None] if t.real else []) + list(t.sims)]})
    workers = available_cores() if workers is None else int(workers)
    description = description or f"replaying {len(tasks)} real bag(s)"
    if ray_address is None and workers > 1 and len(tasks) > 1:
        # The judge's numba kernels are compiled (or loaded from numba's cache) once, here, on a 3-s
        # synthetic stream, and inherited by the forked workers rather than loaded in each; with an empty
        # cache the other cores share the compilation meanwhile.  Before the lint below, which runs the
        # judge's callbacks too (alone, it would compile a third of the kernels on one core first).
        from .judge.parallel_compile import compilation_helpers

        warm = functools.partial(warm_judge, tasks[0].spec.judge)
        with compilation_helpers(warm, workers - 1), \
                _status(progress, f"{description}: loading the judge (its first run compiles its kernels)"):
            warm()
    announce_replays(tasks, notice)
    report = run_batch(tasks, out, workers=workers, ray_address=ray_address, progress=progress,
                       description=description, shared=shared)
    replayed = ReplayedBags(tasks, report, time.perf_counter() - start)
    if warn_health:
        warn_judge_health(replayed.health_records())
    return replayed


def warn_judge_health(records: Sequence) -> None:
    """One DataWarning naming the cause and a next step when a real run of ``records`` (RunRecord with
    ``health``) is not tracked by the judge (``report.health.warning_line``)."""
    from .report.health import warning_line

    line = warning_line(records)
    if line:
        _warn_once([line])


def warm_judge(judge) -> None:
    """Run the embedded judge of ``judge`` (``pipeline.run.JudgeConfig``) once on a 3-s ART-like stream
    (/fix + /imu as CDR bytes, what every run gives it): every compiled kernel is then in this process."""
    from .judge.synthetic import art_like_records
    from .pipeline.run import judge_run

    judge_run(judge, art_like_records(duration=3.0, heading_rate=0.05))


def _status(enabled: bool, text: str):
    """A rich spinner with ``text`` on stderr while the block runs (nothing when disabled)."""
    import contextlib

    if not enabled:
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(text)


# ====================================================================== score a run tree
def find_runs_to_score(options, runs_dir=None, manifest=None, csv_dir=None) -> tuple:
    """(kind, source, RunSpecs) of exactly one input: a run tree, a manifest or the reference CSV layout."""
    from .metrics.inputs import discover_csv_dir, discover_runs_dir, read_manifest

    inputs = (("RUNS_DIR", runs_dir), ("--manifest", manifest), ("--csv-dir", csv_dir))
    given = [name for name, value in inputs if value]
    if len(given) != 1:
        raise UserError("give exactly one input: RUNS_DIR, --manifest or --csv-dir "
                        f"(got {', '.join(given) or 'none'})")
    if csv_dir:
        kind, source, specs = "csv", csv_dir, discover_csv_dir(csv_dir, options)
    elif manifest:
        kind, source, specs = "manifest", manifest, read_manifest(manifest, options)
    else:
        kind, source, specs = "runs_dir", runs_dir, discover_runs_dir(runs_dir, options)
    if not specs:
        raise UserError(f"{source}: no runs found")
    return kind, source, specs


@dataclass
class LoadedRuns:
    """Runs read and scored one by one: ``records`` (metrics.RunRecord), ``series`` {key: RunSeries},
    ``skipped`` [(source, reason)] (with ``skip_bad_runs``)."""

    records: list
    series: dict
    skipped: list


@dataclass
class ScoredRuns(LoadedRuns):
    """A scored study: ``result`` (metrics.StudyResult: Tables I/II, intervals, p-values) + the runs."""

    result: Any = None
    extra: list = field(default_factory=list)


def load_runs(specs: Sequence, options, *, skip_bad_runs: bool = False, workers: int | None = None,
              progress: Callable | None = None) -> LoadedRuns:
    """Read and score every run (``metrics.inputs.RunSpec``), in ``workers`` processes (default: all)."""
    from .metrics.inputs import load_and_score_all

    records, series, skipped = load_and_score_all(list(specs), options, skip_bad_runs, workers, progress)
    return LoadedRuns(records, series, skipped)


def score_runs(specs: Sequence, options, *, keep: Callable | None = None, extra_records: Sequence = (),
               skip_bad_runs: bool = False, workers: int | None = None, progress: Callable | None = None,
               source: str = "", judge_health: bool = False) -> ScoredRuns:
    """Score a study: the runs of ``specs`` selected by ``keep(spec)`` (plus ``extra_records``,
    runs scored before, e.g. tune's real side) → W1, W2, VEPD, intervals, p-values.  ``judge_health``:
    each real bag run's judge health too (``assess_real_runs``; a DataWarning when one is not tracked).

    ``progress(stage, advance, total)``: stage "reading runs" (one per run), then
    "bootstrap/permutations" (one per (variant, pooled or scenario) cell); ``total`` given once.
    """
    from .metrics import score_study

    specs = [spec for spec in specs if keep is None or keep(spec)]
    if not specs:
        raise UserError(f"{source}: no runs to score" if source else "no runs to score")
    report = progress or (lambda stage, advance, total=None: None)
    report("reading runs", 0, len(specs))
    loaded = load_runs(specs, options, skip_bad_runs=skip_bad_runs, workers=workers,
                       progress=lambda n: report("reading runs", n, None))
    if judge_health:
        loaded.records = assess_real_runs(loaded.records, loaded.series, specs, options)
        warn_judge_health(loaded.records)
    records = list(extra_records) + loaded.records
    variants = {r.variant for r in records if r.side != "real"}
    report("bootstrap/permutations", 0, len(variants) * (1 + len({r.scenario for r in records})))
    result = score_study(records, options, loaded.skipped,
                         progress=lambda n: report("bootstrap/permutations", n, None),
                         workers=workers or os.cpu_count() or 1)
    return ScoredRuns(loaded.records, loaded.series, loaded.skipped, result, list(extra_records))


def assess_real_runs(records: Sequence, series: dict, specs: Sequence, options) -> list:
    """``records`` with the judge health (``replay.health.health_of_run_bag``) of each real bag run that
    has a run.yaml (replayed runs, the ROS recorder's runs); a run whose health cannot be measured is
    said in a DataWarning and left unassessed."""
    import dataclasses

    from .replay.offline import health_of_run_bag
    from .runs import read_run_info

    by_key = {spec.key: spec for spec in specs}
    out = []
    for record in records:
        spec = by_key.get(record.key)
        if record.side == "real" and spec is not None and spec.kind == "bag" and record.key in series:
            try:
                info = read_run_info(spec.source)
                health = health_of_run_bag(spec.source, info, series[record.key], record.score, options)
            except UserError as exc:
                _warn_once([f"{spec.source}: judge health not assessed ({exc})"])
            else:
                record = dataclasses.replace(record, health=health)
        out.append(record)
    return out


def noise_floor_draws(specs: Sequence, options, draws: int, *, workers: int | None = None,
                      progress: bool = False) -> tuple:
    """The judge-noise floor's draws for the real runs of ``specs`` (``noise_floor``): each real
    run's real bag — named by its run.yaml (``source``, ``judge``, ``window_ns``: a replayed real bag) —
    judged ``draws`` times with random judge timing, seeded as the demo seeds them, so the floor of a
    demo's kept runs is the demo's.  Returns (one list of RunRecord per draw, "") or (None, why not):
    inputs that record no real bag (CSV files, manifests, ROS recordings without a window) have no floor.
    """
    from .errors import UserError as _UserError
    from .pipeline.batch import run_batch
    from .replay.offline import BagReplay, replay_spec_of_run
    from .runs import read_run_info

    real = [spec for spec in specs if spec.side == "real"]
    tasks = []
    for spec in real:
        if spec.kind != "bag":
            return None, f"{spec.source}: a CSV run records no real bag to judge again"
        try:
            info = read_run_info(spec.source)
        except _UserError:
            return None, f"{spec.source}: no run.yaml naming the real bag it was judged from"
        replay = replay_spec_of_run(info, spec.scenario, spec.k)
        if replay is None:
            judge = info.judge or {}
            return None, (f"{spec.source}: its run.yaml names no replayed real bag and judge files that "
                          f"exist here (source {info.source}, judge {judge.get('ekf')}, window_ns "
                          f"{info.window_ns})")
        tasks.append(BagReplay(replay, (), real=False, scoring=options, write=False, floor_draws=draws))
    if not tasks:
        return None, "no real runs"
    report = run_batch(tasks, ".", workers=workers, progress=progress,
                       description=f"judge-noise floor: {len(tasks)} real bag(s) x {draws} timing draws")
    if report.failures:
        first = report.failures[0]
        return None, f"{first.label}: {first.message}"
    replayed = ReplayedBags(tasks, report, 0.0)
    return replayed.noise_floor_draws(), ""


__all__ = ["JudgedBag", "LoadedRuns", "ReplayedBags", "ScoredRuns", "SimulatedRuns", "find_runs_to_score",
           "judge_bag", "load_runs", "noise_floor_draws", "plan_replays", "replay_bags", "score_runs",
           "simulate_runs", "simulate_study"]
