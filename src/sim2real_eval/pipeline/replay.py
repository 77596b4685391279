"""Replay of a real bag: simulated IMU and/or GPS in place of the real streams, judged like the real one.

From one real bag (read-only) this makes the pair the paper compares (seed 003 §III-A):
- ``OUT/real/real/<scenario>/<k>/``: the real /fix and /imu, judged unmodified;
- ``OUT/sim/<variant>/<scenario>/<k>/``: the same bag with the chosen streams replaced, where
  ``variant`` = ``sim_imu-<preset>`` (``sim_gps-<preset>_imu-<preset>`` with both replaced).

Ground truth comes from the bag's INS topics (``bags.truth.truth_from_bag``).

**One time window for every run of a bag.**  The judge gets sensor messages only from the window where
the truth exists, ``window_ns = [start, end]`` (``truth_window_ns``: the header stamps whose time lies in
[truth.t[0], truth.t[-1]]), recorded in every run.yaml.  The real streams are cropped to it too (a real
IMU typically starts before the INS solution): otherwise the real run's estimate would start earlier
than its simulated counterparts', the scorer (time origin = the earliest stamp of estimate and truth)
would see the identical ground truth on a different time axis, and S_gt — hence D and W2 — would
differ between sides for no physical reason.

A replaced IMU is sampled **at the real IMU's header stamps** in the window (and keeps the real
messages' receive times), so the judge sees the same timing; the truth is never extrapolated.  A
replaced GPS is sampled at the real GPS stream's rate (ticks k·period on the data clock inside the
window) around the bag's datum.  Every other input stays real (cropped to the window).
Both runs also carry the same ``/ground_truth/odom`` from the INS truth.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import UserError
from .run import (
    DEFAULT_GROUND_TRUTH_RATE,
    GPS_ODOMETRY_TOPIC,
    IMU,
    NAVSATFIX,
    TOPICS,
    JudgeConfig,
    RunOutcome,
    existing_run,
    gps_cdr_records,
    gps_records,
    imu_cdr_records,
    imu_records,
    in_receive_order,
    judge_records,
    judge_run,
    load_gps,
    load_imu,
    model_parameters,
    plain,
    remove_stale_temporaries,
    run_directory,
    truth_records,
    with_judge_outcome,
    write_run,
)

SENSORS = ("gps", "imu")


class SensorRecord(tuple):
    """A sensor message record ``(recv_ns, topic, msgtype, msg)`` — a 4-tuple like ``bags.BagMessage``,
    what the judge reads — that also carries ``raw``: the message's CDR bytes for the run bag.

    Real streams are serialised once per real bag (every run of the bag reuses the bytes), simulated
    streams in bulk (``bags.messages.*_cdr``); ``judge_and_write`` writes ``raw`` instead of
    serialising each message object again.  Plain 4-tuples still work (they are serialised).
    """

    def __new__(cls, recv_ns, topic, msgtype, msg, raw=None):
        record = tuple.__new__(cls, (recv_ns, topic, msgtype, msg))
        record.raw = raw
        return record


def _bag_record(record) -> tuple:
    raw = getattr(record, "raw", None)
    return record if raw is None else (record[0], record[1], record[2], raw)


def model_label(spec: Any) -> str:
    if isinstance(spec, str):
        return Path(spec).stem if spec.endswith((".yaml", ".yml")) else spec
    if isinstance(spec, dict) and isinstance(spec.get("name"), str):
        return spec["name"]
    raise UserError(f"--replace: cannot name the model {spec!r} (give a preset name or a YAML file)")


def replay_variant(replace: dict) -> str:
    """``{"imu": "chrono_paper_demo"}`` → ``sim_imu-chrono_paper_demo`` (sensors in gps, imu order)."""
    parts = [f"{sensor}-{model_label(replace[sensor])}" for sensor in SENSORS if sensor in replace]
    return "sim_" + "_".join(parts)


def parse_replace(items) -> dict:
    """``["imu=chrono_paper_demo", "gps=ch_rw"]`` → ``{"imu": ..., "gps": ...}``."""
    out: dict = {}
    for item in items or []:
        sensor, sep, spec = str(item).partition("=")
        sensor = sensor.strip()
        if not sep or sensor not in SENSORS or not spec.strip():
            raise UserError(f"--replace {item!r}: expected imu=PRESET or gps=PRESET")
        if sensor in out:
            raise UserError(f"--replace {item!r}: {sensor} is replaced twice")
        out[sensor] = spec.strip()
    if not out:
        raise UserError("--replace: name at least one stream to replace (imu=PRESET and/or gps=PRESET)")
    return out


@dataclass(frozen=True)
class ReplaySpec:
    bag: str
    replace: dict
    judge: JudgeConfig
    scenario: str
    k: int = 0
    seed: int = 0
    storage: str = "sqlite3"
    ground_truth_rate: float = DEFAULT_GROUND_TRUTH_RATE
    truth_source: str = "auto"
    msg_path: str | None = None
    imu_topic: str = TOPICS["imu"]
    gps_topic: str = TOPICS["gps"]

    @property
    def variant(self) -> str:
        return replay_variant(self.replace)

    def _common(self, side: str, variant: str) -> dict:
        return {"side": side, "variant": variant, "scenario": self.scenario, "k": self.k, "seed": self.seed,
                "source": str(Path(self.bag).resolve())}

    def _tail(self) -> dict:
        return {
            "judge": self.judge.record(),
            "ground_truth_rate": self.ground_truth_rate,
            "ground_truth_source": self.truth_source,
            "storage": self.storage,
            "input_topics": {"gps": self.gps_topic, "imu": self.imu_topic},
            "topics": dict(TOPICS, gps_odometry=GPS_ODOMETRY_TOPIC),
            "version": __version__,
        }

    def real_record(self, window_ns) -> dict:
        """run.yaml of the real run; ``window_ns`` = [start, end] of the sensor messages judged."""
        return {**self._common("real", "real"), "gps": "real", "imu": "real",
                "window_ns": [int(v) for v in window_ns], **self._tail()}

    def sim_record(self, datum, window_ns, gps_rate: float | None = None) -> dict:
        """run.yaml of the replayed run; ``datum``, ``window_ns`` and ``gps_rate`` are the real bag's
        (see RealStreams)."""
        gps = (model_parameters("gps", self.replace["gps"], datum=datum, rate=gps_rate)
               if "gps" in self.replace else "real")
        imu = model_parameters("imu", self.replace["imu"], self.judge) if "imu" in self.replace else "real"
        return {**self._common("sim", self.variant), "replaced": [s for s in SENSORS if s in self.replace],
                "models": {sensor: plain(spec) for sensor, spec in self.replace.items()},
                "gps": gps, "imu": imu, "window_ns": [int(v) for v in window_ns], **self._tail()}

    def real_record_for(self, streams: RealStreams) -> dict:
        """run.yaml of the real run of the bag read into ``streams``."""
        return self.real_record(streams.window_ns)

    def sim_record_for(self, streams: RealStreams) -> dict:
        """run.yaml of the replayed run from the real bag's streams (datum, window, GPS rate if replaced)."""
        return self.sim_record(streams.datum, streams.window_ns,
                               streams.gps_rate if "gps" in self.replace else None)

    def real_directory(self, out) -> Path:
        return run_directory(out, "real", "real", self.scenario, self.k)

    def sim_directory(self, out) -> Path:
        return run_directory(out, "sim", self.variant, self.scenario, self.k)


@dataclass
class RealStreams:
    """What the replay needs from the real bag (all in memory: sensor topics are small).

    ``gps`` and ``imu`` hold only the messages whose header stamp lies in ``window_ns`` (inclusive).
    """

    truth: Any
    datum: Any
    gps: list  # SensorRecord (recv_ns, topic, msgtype, msg) + raw CDR bytes
    imu: list
    window_ns: tuple  # (start, end) int ns: truth_window_ns(truth)

    @property
    def gps_rate(self) -> float:
        """Rate of the real GPS stream (Hz, ``stream_rate`` of its header stamps in the window)."""
        return stream_rate([_stamp_ns(r[3]) for r in self.gps], "real GPS stream")


def stream_rate(stamps_ns, what: str) -> float:
    """Rate (Hz) of a sensor stream from its header stamps, rounded to 0.01 Hz.

    Each positive step counts as k_i = max(1, round(step / median step)) periods (a dropped message
    makes a step of 2), and period = (last − first stamp) / Σ k_i.  Unlike 1 / median step, this is
    not thrown off by stamp jitter (a 10 Hz receiver stamped at reception ±10 ms gave 10.04 Hz or
    9.98 Hz from the median; the span over hundreds of periods gives 10.00).
    """
    import numpy as np

    stamps = np.asarray(stamps_ns, dtype=np.int64)
    steps = np.diff(stamps)
    steps = steps[steps > 0]
    if steps.size == 0:
        raise UserError(f"{what}: need two messages with different stamps to know its rate")
    periods = np.maximum(1, np.rint(steps / float(np.median(steps)))).sum()
    return round(1e9 * float(periods) / float(steps.sum()), 2)


def _stamp_ns(msg) -> int:
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def truth_window_ns(truth) -> tuple[int, int]:
    """(start, end) int ns such that a header stamp s lies inside the truth span, i.e.
    truth.t[0] <= s·1e-9 <= truth.t[-1] with the one ns→s conversion (``models.base.stamps_to_seconds``),
    exactly when start <= s <= end.

    The conversion is monotonic in s, so each bound is where it flips; at epoch-scale times one float
    second covers ~240 ns, so the flip is searched among the integers around t·1e9.
    """
    import numpy as np

    from ..models.base import stamps_to_seconds

    def first_at_or_after(seconds: float) -> int:
        guess = int(np.ceil(seconds * 1e9))
        candidates = guess + np.arange(-4096, 4097, dtype=np.int64)
        inside = stamps_to_seconds(candidates) >= seconds
        first = int(np.argmax(inside))
        if not inside[-1] or first == 0:  # cannot happen for float64 seconds; guards the search range
            raise ValueError(f"truth_window_ns: no ns bound found near {seconds!r} s")
        return int(candidates[first])

    start = first_at_or_after(float(truth.t[0]))
    after_end = first_at_or_after(float(np.nextafter(truth.t[-1], np.inf)))
    return start, after_end - 1


def _check_stamps(records: list, topic: str, bag: str, strict: bool) -> None:
    import numpy as np

    stamps = np.array([_stamp_ns(r[3]) for r in records], dtype=np.int64)
    steps = np.diff(stamps)
    bad = steps <= 0 if strict else steps < 0
    if bad.any():
        i = int(np.argmax(bad)) + 1
        raise UserError(f"{bag}: topic {topic}: header stamps go backwards at message {i} "
                        f"({stamps[i - 1]} ns then {stamps[i]} ns)")


def read_real_streams(spec: ReplaySpec) -> RealStreams:
    """Ground truth + the real GPS and IMU messages of the bag, checked."""
    from ..bags import open_bag
    from ..bags.truth import truth_from_bag

    wanted = {spec.gps_topic: NAVSATFIX, spec.imu_topic: IMU}
    with open_bag(spec.bag, msg_path=spec.msg_path) as reader:
        for topic, msgtype in wanted.items():
            info = reader.topics.get(topic)
            if info is None:
                raise UserError(f"{spec.bag}: topic {topic} not found "
                                f"(topics: {', '.join(sorted(reader.topics))})")
            if info.msgtype != msgtype:
                raise UserError(f"{spec.bag}: topic {topic} has type {info.msgtype}, expected {msgtype}")
            if info.count == 0:
                raise UserError(f"{spec.bag}: topic {topic} is empty")
        truth, datum = truth_from_bag(reader, source=spec.truth_source)
        streams = {spec.gps_topic: [], spec.imu_topic: []}
        for message in reader.messages(topics=list(wanted)):
            streams[message.topic].append((int(message.recv_ns), message.topic, message.msgtype, message.msg))
    window = truth_window_ns(truth)
    for topic, records in streams.items():
        if not records:
            raise UserError(f"{spec.bag}: topic {topic} is empty")
        _check_stamps(records, topic, spec.bag, strict=(topic == spec.imu_topic))
        # Every run of the bag is judged on the same window: the real streams are cropped like the
        # simulated ones are sampled (see the module docstring).
        records[:] = [r for r in records if window[0] <= _stamp_ns(r[3]) <= window[1]]
        if not records:
            raise UserError(f"{spec.bag}: topic {topic}: no message stamp lies inside the ground-truth span "
                            f"{truth.t[0]:.3f}..{truth.t[-1]:.3f} s")
    # Output bags use the standard topic names whatever the input called them.  Each message is
    # serialised once here (as write_bag would), for every run of this bag.
    from ..bags import get_typestore

    serialize = get_typestore().serialize_cdr
    gps = [SensorRecord(r[0], TOPICS["gps"], r[2], r[3], bytes(serialize(r[3], r[2])))
           for r in streams[spec.gps_topic]]
    imu = [SensorRecord(r[0], TOPICS["imu"], r[2], r[3], bytes(serialize(r[3], r[2])))
           for r in streams[spec.imu_topic]]
    return RealStreams(truth, datum, gps, imu, window)


def simulated_imu(spec: ReplaySpec, streams: RealStreams) -> list:
    """The replacement IMU: sampled at the real header stamps (all inside the window), real receive times."""
    import numpy as np

    from ..models import sensor_seed

    stamps = np.array([_stamp_ns(r[3]) for r in streams.imu], dtype=np.int64)
    receive = [r[0] for r in streams.imu]
    seed = sensor_seed(spec.seed, spec.variant, spec.scenario, spec.k, "imu")
    model = load_imu(spec.replace["imu"], spec.judge, seed)
    samples = model.sample(streams.truth, stamps_ns=stamps)
    records = imu_records(samples)
    raws = imu_cdr_records(samples)
    # Keep the real receive times: the judge sees the replaced stream with the real timing.
    return [SensorRecord(int(recv), topic, msgtype, msg, raw[3])
            for recv, (_r, topic, msgtype, msg), raw in zip(receive, records, raws)]


def simulated_gps(spec: ReplaySpec, streams: RealStreams) -> list:
    from ..models import sensor_seed

    # Anchored at the real bag's datum and rate, so simulated fixes land where and when the real ones do.
    model = load_gps(spec.replace["gps"], sensor_seed(spec.seed, spec.variant, spec.scenario, spec.k, "gps"),
                     datum=streams.datum, rate=streams.gps_rate)
    samples = model.sample(streams.truth)
    raws = gps_cdr_records(samples)
    return [SensorRecord(*record, raw[3]) for record, raw in zip(gps_records(samples), raws)]


# The runs of one real bag share its ground truth: keep the last truth's /ground_truth/odom records.
_TRUTH_RECORDS: list = [None, None, None]  # [truth, rate, records]


def _shared_truth_records(truth, rate: float) -> list:
    if _TRUTH_RECORDS[0] is not truth or _TRUTH_RECORDS[1] != rate:
        _TRUTH_RECORDS[:] = [truth, rate, truth_records(truth, rate)]
    return _TRUTH_RECORDS[2]


def judge_and_write(spec: ReplaySpec, path: Path, record: dict, sensors: list, truth) -> RunOutcome:
    """Judge ``sensors`` (records in any order, SensorRecord or plain 4-tuples) and write the run:
    sensor messages + the judge's outputs + ``/ground_truth/odom`` of ``truth``, ``record`` as run.yaml."""
    sensors = in_receive_order(sensors)
    result = judge_run(spec.judge, ((recv, topic, msg) for recv, topic, _type, msg in sensors))
    bag_sensors = [_bag_record(r) for r in sensors]
    records = in_receive_order(bag_sensors + judge_records(result)
                               + _shared_truth_records(truth, spec.ground_truth_rate))
    counts = write_run(path, records, with_judge_outcome(record, result), spec.storage)
    return RunOutcome(_label(path), str(path), False, counts, truth.duration)


def _label(path: Path) -> str:
    return "/".join(path.parts[-4:])


def replay(spec: ReplaySpec, out) -> tuple[RunOutcome, RunOutcome]:
    """Write (or find complete) the real run and the replayed sim run of one real bag."""
    streams = read_real_streams(spec)
    real_path, sim_path = spec.real_directory(out), spec.sim_directory(out)
    real_record, sim_record = spec.real_record_for(streams), spec.sim_record_for(streams)
    # Check both before writing either, so a refused pair leaves OUT as it was.
    real_done = existing_run(real_path, real_record)
    sim_done = existing_run(sim_path, sim_record)
    if real_done:
        real = RunOutcome(_label(real_path), str(real_path), True, {})
    else:
        remove_stale_temporaries(real_path)
        real = judge_and_write(spec, real_path, real_record, streams.gps + streams.imu, streams.truth)
    if sim_done:
        sim = RunOutcome(_label(sim_path), str(sim_path), True, {})
    else:
        remove_stale_temporaries(sim_path)
        imu = simulated_imu(spec, streams) if "imu" in spec.replace else streams.imu
        gps = simulated_gps(spec, streams) if "gps" in spec.replace else streams.gps
        sim = judge_and_write(spec, sim_path, sim_record, gps + imu, streams.truth)
    return real, sim
