"""Where runs come from: the reference CSV layout, pipeline run directories, a manifest of bags.

Every source is first turned into a list of ``RunSpec`` (cheap: directory listing and YAML only),
then each spec is loaded into a ``RunSeries`` (two speed series on one time origin) and scored, in
parallel worker processes (``load_and_score_all``).

**The time window of a bag run** (issue 12): ``[start, end]`` header stamps, ns.  Both series are
cropped to it, the time origin is its start and the common timeline ends where the truth ends inside
it — so identical truth always gives an identical timeline and S_gt, whatever the estimate (before,
the origin was the earliest stamp of the two series, and the same truth gave S_gt 0.026-0.053 on ROS
recordings of one bag, whose estimates start with the bag, not with the INS).  The window is the one
recorded in run.yaml (``window_ns``: replayed real bags), else a manifest entry's ``window_ns``, else an
explicit one (``score --window``), else the truth topic's stamp span.  The reference CSV layout keeps
the authors' times as written: their origin is already their truth's start (t = 0).
"""
from __future__ import annotations

import csv
import dataclasses
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import message_fields
from ..bags import open_bag
from ..bags.columns import read_topics
from ..errors import UserError
from ..runs import FILES_KEY, RUN_FILE, check_data_files, find_runs, incomplete_reason, read_run_info
from ..workers import WorkerPool
from ..yamlio import Section, load_yaml
from .options import ScoreOptions, resolve_speed
from .per_run import score_run
from .speed import speed_from_velocity
from .study import REAL, RunRecord

CSV_COLUMNS = ("se_time", "gt_time", "se_vel", "gt_vel")
CSV_NAME = re.compile(r"(?P<scenario>.+)_(?P<k>[0-9]+)\.csv")  # fullmatch; ASCII digits (not '٢', '²')
DEFAULT_TOPICS = {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom"}
SIDES = (REAL, "sim")


@dataclass(frozen=True)
class RunSpec:
    """One run to load.  ``kind`` is "csv" or "bag"; ``speed`` is (estimate expr, truth expr)."""

    side: str
    variant: str
    scenario: str
    k: int
    source: str
    kind: str
    estimate_topic: str = DEFAULT_TOPICS["estimate"]
    truth_topic: str = DEFAULT_TOPICS["ground_truth"]
    speed: tuple = ("horizontal", "horizontal")
    window_ns: tuple | None = None  # bag runs: [start, end] stamps judged (None: the truth's span)
    warmup_s: float | None = None  # run.yaml's warmup_s (None: not recorded); see ``warmup_of_runs``
    incomplete: str | None = None   # why the run did not finish (run.yaml complete: false): refused
    # A run directory's record to check its data files against before they are read (run.yaml's side,
    # variant, scenario, k and files: ``runs.check_data_files``); None: not a run (a bag of a manifest
    # without run.yaml, a CSV file), or already checked (a run the demo resumed).
    run_record: dict | None = field(default=None, compare=False)

    def check_complete(self) -> None:
        """A run that did not finish is never scored: one line naming it and why."""
        if self.incomplete is not None:
            raise UserError(f"{self.source}: incomplete run, not scored ({self.incomplete}); record it "
                            "again or remove it")

    @property
    def key(self):
        return (self.side, self.variant, self.scenario, self.k)


@dataclass
class RunSeries:
    """Speeds (m/s) of one run on times (s) from one origin: estimate (t_est, v_est), truth (t_gt, v_gt);
    ``timeline_end`` (s) for a windowed bag run (None: the reference's rule, ``per_run.common_timeline``)."""

    spec: RunSpec
    t_est: np.ndarray
    v_est: np.ndarray
    t_gt: np.ndarray
    v_gt: np.ndarray
    timeline_end: float | None = None


# ----------------------------------------------------------------------------------------------
# The reference CSV layout: DIR/Real/<scenario>_<k>.csv, DIR/Sim/<variant>/<scenario>_<k>.csv


def check_label(value: str, where: str, what: str) -> str:
    """``value`` (a variant or scenario name) if it holds no control character, else a one-line UserError:
    names are shown in tables.md rows, figure labels and report.html, where a newline or carriage return
    splits a row or becomes a missing glyph."""
    bad = [c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    if bad:
        raise UserError(f"{where}: {what} {value!r} contains the control character {bad[0]!r}; names are "
                        "shown in tables and figures: use printable characters")
    return value


def _csv_specs(directory: Path, side: str, variant: str, exclude) -> list:
    specs = []
    for path in sorted(directory.glob("*.csv")):
        check_label(path.name, repr(str(directory)), "file name")
        match = CSV_NAME.fullmatch(path.name)
        if not match:
            raise UserError(f"{path}: file name does not match <scenario>_<k>.csv")
        if match["scenario"] in exclude:
            continue
        specs.append(RunSpec(side, variant, match["scenario"], int(match["k"]), str(path), "csv"))
    return specs


def discover_csv_dir(root, options: ScoreOptions) -> list:
    """RunSpecs of the reference layout; variants are the folder names under Sim/."""
    root = Path(root)
    real_dir, sim_dir = root / "Real", root / "Sim"
    for needed in (real_dir, sim_dir):
        if not needed.is_dir():
            raise UserError(f"{needed}: missing folder (--csv-dir expects Real/ and Sim/<variant>/)")
    specs = _csv_specs(real_dir, REAL, REAL, options.exclude_scenarios)
    for variant_dir in sorted(p for p in sim_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        check_label(variant_dir.name, str(sim_dir), "variant folder")
        specs += _csv_specs(variant_dir, "sim", variant_dir.name, options.exclude_scenarios)
    return specs


def _column(values: list, path, name: str) -> np.ndarray:
    """Floats of one CSV column; trailing empty cells are padding of a shorter column."""
    while values and values[-1].strip() == "":
        values.pop()
    out = np.empty(len(values))
    for row, text in enumerate(values):
        try:
            out[row] = float(text)
        except ValueError:
            raise UserError(f"{path}: column {name} row {row + 2}: not a number ({text!r})") from None
    return out


def read_reference_csv(path) -> tuple:
    """(se_time, gt_time, se_vel, gt_vel) of one reference CSV, with the reference quirk:

    every exact 0.0 is dropped from gt_time and from gt_vel *independently* (the authors' files
    pad the shorter ground-truth columns with zeros).  The estimate columns are used as written.
    """
    try:
        with open(path, newline="", encoding="utf-8") as stream:
            rows = list(csv.reader(stream))
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text CSV file") from None
    if not rows:
        raise UserError(f"{path}: empty CSV (expected columns {', '.join(CSV_COLUMNS)})")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)} (has {', '.join(header)})")
    columns = {}
    for name in CSV_COLUMNS:
        index = header.index(name)
        columns[name] = _column([r[index] if index < len(r) else "" for r in rows[1:]], path, name)
    gt_time = columns["gt_time"][columns["gt_time"] != 0.0]
    gt_vel = columns["gt_vel"][columns["gt_vel"] != 0.0]
    return columns["se_time"], gt_time, columns["se_vel"], gt_vel


# ----------------------------------------------------------------------------------------------
# Pipeline run directories: OUT/<side>/<variant>/<scenario>/<k>/ (a rosbag2 dir with run.yaml);
# the layout and run.yaml are ``sim2real_eval.runs``'s.


def discover_runs_dir(root, options: ScoreOptions) -> list:
    """RunSpecs of a run tree: identity from the directories, topics from each run.yaml."""
    specs = []
    for run, run_dir in find_runs(root, options.exclude_scenarios):
        info = read_run_info(run_dir, run)
        specs.append(RunSpec(
            run.side, run.variant, run.scenario, run.k, str(run_dir), "bag",
            estimate_topic=info.topic("estimate"), truth_topic=info.topic("ground_truth"),
            speed=resolve_speed(options.speed, run.side, f"{run_dir}: speed"),
            window_ns=None if info.window_ns is None else tuple(int(v) for v in info.window_ns),
            warmup_s=info.warmup_s,
            incomplete=info.incomplete,
            run_record=_checked_keys(info.to_dict()),
        ))
    return specs


def _checked_keys(record: dict) -> dict:
    """What ``runs.check_data_files`` reads of a run.yaml mapping: the identity and ``files``."""
    return {key: record.get(key) for key in ("side", "variant", "scenario", "k", FILES_KEY)}


def warmup_of_runs(specs: list, given: float | None = None) -> float:
    """The warm-up the runs are scored with (``ScoreOptions.warmup_s``): ``given`` (``score --warmup``),
    else the one their run.yaml files record (absent = 0); runs recording different ones are a UserError
    (every run of a study must skip the same start, or the comparison is not like with like)."""
    if given is not None:
        return float(given)
    recorded: dict = {}
    for spec in specs:
        recorded.setdefault(float(spec.warmup_s or 0.0), spec.source)
    if len(recorded) > 1:
        shown = ", ".join(f"{source}: {value:g} s" for value, source in sorted(recorded.items()))
        raise UserError(f"the runs record different warm-ups ({shown}); score them with one: "
                        "--warmup SECONDS")
    return next(iter(recorded), 0.0)


def _bag_run(bag: Path) -> tuple:
    """(why the run in ``bag`` is incomplete or None, its record to check or None) when the bag is a run
    directory (run.yaml inside), else (None, None)."""
    run_file = bag / RUN_FILE
    data = load_yaml(run_file) if run_file.is_file() else None
    if not isinstance(data, dict):
        return None, None
    return incomplete_reason(data), _checked_keys(data)


def parse_window(text: str, where: str = "--window") -> tuple:
    """``START:END`` header stamps in integer ns → (start, end)."""
    start, sep, end = str(text).partition(":")
    try:
        window = (int(start), int(end))
    except ValueError:
        window = None
    if not sep or window is None or window[0] >= window[1] or window[0] < 0:
        raise UserError(f"{where} {text!r}: expected START:END header stamps in integer ns, START < END")
    return window


def with_window(specs: list, window: tuple | None) -> list:
    """``window`` for every bag run that has none recorded (``score --window``)."""
    if window is None:
        return specs
    return [dataclasses.replace(s, window_ns=tuple(window)) if s.kind == "bag" and s.window_ns is None else s
            for s in specs]


# ----------------------------------------------------------------------------------------------
# Manifest YAML
#   defaults: {topics: {estimate: ..., ground_truth: ...}, speed: horizontal}      (optional)
#   runs:
#     - {path: bags/real_line_1, side: real, scenario: line, k: 1}
#     - {path: ..., side: sim, variant: gauss, scenario: line, topics: {...}, speed: paper-sim}
# Paths are relative to the manifest's folder.  k defaults to the order within (side, variant, scenario).

RUN_KEYS = ("path", "side", "variant", "scenario", "k", "topics", "speed", "window_ns")


def read_manifest(path, options: ScoreOptions) -> list:
    path = Path(path)
    top = Section(load_yaml(path), str(path))
    top.unknown_keys(("defaults", "runs"))
    defaults = top.section("defaults")
    defaults.unknown_keys(("topics", "speed"))
    default_topics = defaults.section("topics")
    default_topics.unknown_keys(DEFAULT_TOPICS)
    entries = top.data.get("runs")
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{path}: runs: expected a non-empty list of runs")
    specs, counters = [], {}
    for index, entry in enumerate(entries):
        run = Section(entry, str(path), f"runs[{index}]")
        run.unknown_keys(RUN_KEYS)
        side = run.string("side", required=True, choices=SIDES)
        variant = check_label(run.string("variant", REAL if side == REAL else None, required=side != REAL),
                              f"{path}: runs[{index}]", "variant")
        scenario = check_label(run.string("scenario", required=True), f"{path}: runs[{index}]", "scenario")
        if scenario in options.exclude_scenarios:
            continue
        bag = Path(run.string("path", required=True))
        bag = bag if bag.is_absolute() else path.parent / bag
        counters[(side, variant, scenario)] = counters.get((side, variant, scenario), 0) + 1
        k = run.integer("k", counters[(side, variant, scenario)], minimum=0)
        topics = run.section("topics")
        topics.unknown_keys(DEFAULT_TOPICS)
        speed = run.data.get("speed", defaults.data.get("speed", options.speed))
        window = run.data.get("window_ns")
        if window is not None:
            integers = isinstance(window, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                                        for v in window)
            if not (integers and len(window) == 2 and window[0] < window[1]):
                raise run.error("window_ns", f"expected [start, end] stamps (integer ns), got {window!r}")
            window = (int(window[0]), int(window[1]))
        incomplete, run_record = _bag_run(bag)
        specs.append(RunSpec(
            side, variant, scenario, k, str(bag), "bag",
            estimate_topic=topics.string(
                "estimate", default_topics.string("estimate", DEFAULT_TOPICS["estimate"])),
            truth_topic=topics.string(
                "ground_truth", default_topics.string("ground_truth", DEFAULT_TOPICS["ground_truth"])),
            speed=resolve_speed(speed, side, f"{path}: runs[{index}].speed"),
            window_ns=window,
            incomplete=incomplete,
            run_record=run_record,
        ))
    return specs


# ----------------------------------------------------------------------------------------------
# Bags

# msgtype -> (its field table, the velocity column); Odometry also gives the orientation
VELOCITY_FIELDS = {table.msgtype: (table, column) for table, column in (
    (message_fields.ODOMETRY, "linear_velocity"),
    (message_fields.TWIST_STAMPED, "linear_velocity"),
    (message_fields.TWIST_WITH_COVARIANCE_STAMPED, "linear_velocity"),
    (message_fields.SBG_GPS_VEL, "velocity"),
    (message_fields.SBG_EKF_NAV, "velocity"),
)}


def read_bag_speeds(spec: RunSpec) -> RunSeries:
    """Speeds of the estimate and ground-truth topics of one bag, on header-stamp time.

    Only the two topics are read, streaming, into arrays (``bags.columns``).  Time origin: the
    earliest header stamp of the two series; each series is put in stamp order (record order can
    differ from stamp order).
    """
    where = spec.source
    if spec.estimate_topic == spec.truth_topic:
        raise UserError(f"{where}: estimate and ground-truth topics are both {spec.estimate_topic}")
    topics = (spec.estimate_topic, spec.truth_topic)
    with open_bag(spec.source) as reader:
        for role, topic in zip(("estimate", "ground truth"), topics):
            if topic not in reader.topics:
                have = ", ".join(sorted(reader.topics)) or "none"
                raise UserError(f"{where}: {role} topic {topic} is missing (bag has: {have})")
            msgtype = reader.topics[topic].msgtype
            if msgtype not in VELOCITY_FIELDS:
                raise UserError(f"{where}: {role} topic {topic} has type {msgtype}; expected one of "
                                f"{', '.join(VELOCITY_FIELDS)}")
            if reader.topics[topic].count == 0:
                raise UserError(f"{where}: {role} topic {topic} has no messages")
        types = {topic: reader.topics[topic].msgtype for topic in topics}
        wanted = {topic: _speed_columns(types[topic]) for topic in topics}
        columns = read_topics(reader, {topic: VELOCITY_FIELDS[types[topic]][0] for topic in topics}, wanted)
    arrays = {}
    for topic in topics:
        got = [columns[topic][name] for name in wanted[topic]]
        arrays[topic] = (got[0], got[1], got[2] if len(got) > 2 else np.empty((0, 4)))
    return series_from_arrays(spec, arrays)


def _speed_columns(msgtype: str) -> tuple:
    """The columns the scorer reads of ``msgtype``: stamp, velocity (and Odometry's orientation)."""
    velocity = VELOCITY_FIELDS[msgtype][1]
    return ("stamp_ns", velocity) + (("orientation",) if msgtype == message_fields.ODOMETRY.msgtype else ())


def series_from_arrays(spec: RunSpec, arrays: dict) -> RunSeries:
    """RunSeries from {topic: (stamp_ns (N,), velocity (N, 3), orientation (N, 4) or empty)}, on the run's
    window (the module docstring): cropped to it, times from its start, timeline to the truth's end."""
    where = spec.source
    result = []
    for role, topic, expression in (("estimate", spec.estimate_topic, spec.speed[0]),
                                    ("ground truth", spec.truth_topic, spec.speed[1])):
        stamps, velocity, orientation = arrays[topic]
        if len(stamps) == 0:
            raise UserError(f"{where}: {role} topic {topic} has no messages")
        order = np.argsort(stamps, kind="stable")
        orientation = orientation[order] if len(orientation) else None
        speed = speed_from_velocity(velocity.reshape(-1, 3)[order], expression, orientation,
                                    f"{where}: {role} topic {topic}")
        result.append((np.asarray(stamps, dtype=np.int64)[order], speed))
    (est_ns, v_est), (gt_ns, v_gt) = result
    start, end = spec.window_ns if spec.window_ns is not None else (int(gt_ns[0]), int(gt_ns[-1]))
    inside_est = (est_ns >= start) & (est_ns <= end)
    inside_gt = (gt_ns >= start) & (gt_ns <= end)
    for role, topic, inside, stamps in (("estimate", spec.estimate_topic, inside_est, est_ns),
                                        ("ground truth", spec.truth_topic, inside_gt, gt_ns)):
        if not inside.any():
            raise UserError(f"{where}: {role} topic {topic}: no message inside the run's window "
                            f"[{start}, {end}] ns (its stamps: {stamps[0]}..{stamps[-1]})")
    est_ns, v_est, gt_ns, v_gt = est_ns[inside_est], v_est[inside_est], gt_ns[inside_gt], v_gt[inside_gt]
    t_gt = (gt_ns - start) * 1e-9
    return RunSeries(spec, (est_ns - start) * 1e-9, v_est, t_gt, v_gt, float(t_gt[-1]))


# ----------------------------------------------------------------------------------------------
# Loading and scoring


def load_series(spec: RunSpec) -> RunSeries:
    if spec.kind == "csv":
        se_time, gt_time, se_vel, gt_vel = read_reference_csv(spec.source)
        return RunSeries(spec, se_time, se_vel, gt_time, gt_vel)
    if not Path(spec.source).exists():
        raise UserError(f"{spec.source}: bag not found")
    return read_bag_speeds(spec)


def load_and_score(spec: RunSpec, options: ScoreOptions):
    """(RunRecord, RunSeries) or (None, error message) for a per-run defect."""
    try:
        spec.check_complete()
        if spec.run_record is not None:  # its data files as written (each read once, here in the worker)
            check_data_files(spec.source, spec.run_record)
        series = load_series(spec)
        score = score_run(spec.source, series.t_est, series.v_est, series.t_gt, series.v_gt, options,
                          series.timeline_end)
    except UserError as exc:
        return None, str(exc)
    record = RunRecord(spec.side, spec.variant, spec.scenario, spec.k, spec.source, score)
    return record, series


def _load_chunk(specs, options):
    return [load_and_score(spec, options) for spec in specs]


def check_unique(specs) -> None:
    seen = {}
    for spec in specs:
        if spec.key in seen:
            raise UserError(f"{spec.source}: same side/variant/scenario/k {'/'.join(map(str, spec.key))} "
                            f"as {seen[spec.key]}")
        seen[spec.key] = spec.source


def load_and_score_all(specs, options: ScoreOptions, skip_bad_runs: bool = False, workers=None,
                       progress=None):
    """Load and score every spec, in ``workers`` processes (default: CPU count).

    Returns (records, {key: RunSeries}, skipped [(source, reason)]).  Without ``skip_bad_runs`` the
    first defect (in spec order) is raised as a UserError.  ``progress(n)`` is called as runs finish.
    """
    check_unique(specs)
    specs = sorted(specs, key=lambda s: s.key)
    if not skip_bad_runs:  # before reading any bag: an incomplete run is refused at once
        for spec in specs:
            spec.check_complete()
    workers = workers or os.cpu_count() or 1
    workers = max(1, min(workers, len(specs) // 8 or 1))
    if workers == 1:
        results = []
        for spec in specs:
            results.append(load_and_score(spec, options))
            if progress:
                progress(1)
    else:
        # Chunks amortise process start-up and pickling; ~4 chunks per worker balances the load.
        size = max(1, math.ceil(len(specs) / (workers * 4)))
        chunks = [specs[i:i + size] for i in range(0, len(specs), size)]
        results = []
        with WorkerPool(workers) as pool:
            for chunk_results in pool.map(_load_chunk, chunks, [options] * len(chunks)):
                results += chunk_results
                if progress:
                    progress(len(chunk_results))
    records, series, skipped = [], {}, []
    for spec, (record, payload) in zip(specs, results):
        if record is None:
            if not skip_bad_runs:
                raise UserError(payload)
            skipped.append((spec.source, payload))
            continue
        records.append(record)
        series[spec.key] = payload
    return records, series, skipped
