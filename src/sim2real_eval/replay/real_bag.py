"""One real bag to replay: what is made of it (``ReplaySpec``: how its runs are read, named, seeded and
judged; ``Replacement``: the simulated streams of a sim run, ``parse_replace`` of --replace) and its
streams, read once (``RealStreams``, ``read_real_streams``: the real /fix and /imu cropped to the truth's
window, as CDR bytes, and the truth; ``check_frames``, ``real_imu_covariances``).  The replay unit that
judges them is ``replay.offline.BagReplay``."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from .. import message_fields
from ..art import TOPICS
from ..bags import RawMessage, get_typestore, open_bag
from ..bags.cdr import CDR_LE_HEADER
from ..bags.columns import decode_messages
from ..bags.messages import IMU, NAVSATFIX
from ..bags.reader import require_topic
from ..bags.records import (
    DEFAULT_GROUND_TRUTH_RATE,
    truth_records,
)
from ..errors import UserError
from ..judge import SensorBlock
from ..judge.config import (
    JudgeConfig,
    judge_parts,
    model_parameters,
)
from ..judge.input_rows import cdr_columns
from ..judge.lint import IMU_PARTS
from ..judge.tf import TfBuffer, parse_static_tf
from ..runs import (
    SENSORS,
    RealBag,
    RunId,
    RunInfo,
    bag_run_id,
    bag_run_info,
    replay_variant,
)
from ..truth import truth_window_ns
from ..truth.bag import truth_from_bag


def parse_replace(items) -> list:
    """``--replace SENSOR=MODEL`` items → the ``Replacement`` of every variant they ask for.

    The models given per sensor are crossed, as a study's ``matrix:``: ``imu=a`` → one variant
    (sim_imu-a); ``gps=x imu=a`` → one variant with both replaced (sim_gps-x_imu-a); ``imu=a imu=b`` →
    two variants (sim_imu-a, sim_imu-b); ``gps=x gps=y imu=a`` → sim_gps-x_imu-a, sim_gps-y_imu-a.
    """
    models: dict = {}
    for item in items or []:
        sensor, sep, spec = str(item).partition("=")
        sensor, spec = sensor.strip(), spec.strip()
        if not sep or sensor not in SENSORS or not spec:
            raise UserError(f"--replace {item!r}: expected imu=PRESET or gps=PRESET")
        if spec in models.setdefault(sensor, []):
            raise UserError(f"--replace {item!r}: {sensor} model {spec!r} is given twice")
        models[sensor].append(spec)
    if not models:
        raise UserError("--replace: name at least one stream to replace (imu=PRESET and/or gps=PRESET)")
    sensors = [sensor for sensor in SENSORS if sensor in models]
    variants = [Replacement(dict(zip(sensors, chosen)))
                for chosen in itertools.product(*(models[sensor] for sensor in sensors))]
    seen: dict = {}
    for variant in variants:
        if variant.variant in seen:
            raise UserError(f"--replace: {seen[variant.variant]} and {variant.replace} both make the variant "
                            f"{variant.variant!r} (models of the same name); give distinct file names")
        seen[variant.variant] = variant.replace
    return variants


@dataclass(frozen=True)
class Replacement:
    """Simulated streams in place of a real bag's: ``replace`` {sensor: model spec}; the sim run's
    variant is ``name``, by default ``runs.replay_variant(replace)``."""

    replace: dict
    name: str = ""

    @property
    def variant(self) -> str:
        return self.name or replay_variant(self.replace)


@dataclass(frozen=True)
class ReplaySpec:
    """One real bag and how every run made from it is read, named, seeded and judged."""

    bag: str
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
    imu_frame: str | None = None  # the real IMU's frame: a replaced IMU publishes in it (None: the model's)

    @classmethod
    def of(cls, bag: RealBag, judge: JudgeConfig, **options) -> ReplaySpec:
        """The spec of a bag named by ``runs.name_real_bag`` / ``runs.find_real_bags``."""
        return cls(bag=bag.path, judge=judge, scenario=bag.scenario, k=bag.k, **options)

    def run_id(self, sim: Replacement | None = None) -> RunId:
        """The real run (``sim`` None) or the sim run of ``sim``."""
        bag = RealBag(self.bag, self.scenario, self.k)
        return bag_run_id(bag, {}) if sim is None else bag_run_id(bag, sim.replace, sim.variant)

    @property
    def timing(self):
        """The judge timing of every run of this bag (``runs.timing``: the real run and each sim run
        share it — common random numbers)."""
        return self.judge.run_timing(self.seed, self.scenario, self.k)

    def run_info(self, streams: RealStreams, sim: Replacement | None = None) -> RunInfo:
        """run.yaml of the real run (``sim`` None) or of the sim run of ``sim``, from the bag's streams:
        every run records the bag's ``window_ns`` and judge timing; a replaced GPS runs at the bag's
        datum and rate."""
        replace = {} if sim is None else sim.replace
        gps = (model_parameters("gps", replace["gps"], datum=streams.datum, rate=streams.gps_rate)
               if "gps" in replace else "real")
        imu = (model_parameters("imu", replace["imu"], self.judge, frame=self.imu_frame) if "imu" in replace
               else "real")
        info = bag_run_info(self.run_id(sim), self.bag, self.seed, self.judge.record(), replace=replace,
                            gps=gps, imu=imu, window_ns=streams.window_ns,
                            timing=self.judge.timing_record(self.timing, self.seed),
                            **self.judge.start_records(),
                            ground_truth_rate=self.ground_truth_rate, ground_truth_source=self.truth_source,
                            storage=self.storage, input_topics={"gps": self.gps_topic, "imu": self.imu_topic})
        state = self.start_state(streams)
        return info if state is None else info.with_initial_state(streams.window_ns[0], state)

    def start_state(self, streams: RealStreams):
        """ekf_node's ``initial_state`` for every run of this bag (the real one, each sim one and the
        noise floor's): the truth at the window's start, or None (the YAML's own; ``runs.start``)."""
        return self.judge.start_state(streams.truth, streams.window_ns[0])


@dataclass
class RealStreams:
    """What the replay needs from the real bag (all in memory: sensor topics are small).

    ``gps`` and ``imu`` hold only the messages whose header stamp lies in ``window_ns`` (inclusive), as
    their CDR bytes (``bags.RawMessage``: read once, what every run of the bag judges and writes).
    The bag's /ground_truth/odom records are made once (``truth_records``) and shared by its runs.
    """

    truth: Any
    datum: Any
    gps: list  # bags.RawMessage (recv_ns, topic, msgtype, data: CDR bytes), standard topic names
    imu: list
    window_ns: tuple  # (start, end) int ns: truth_window_ns(truth)
    gps_stamps_ns: Any = None  # header stamps of ``gps`` / ``imu`` (int64 arrays)
    imu_stamps_ns: Any = None
    _truth_records: dict = field(default_factory=dict, repr=False)
    _decoded_truth: dict = field(default_factory=dict, repr=False)
    _blocks: dict = field(default_factory=dict, repr=False)

    @property
    def gps_rate(self) -> float:
        """Rate of the real GPS stream (Hz, ``stream_rate`` of its header stamps in the window)."""
        return stream_rate(self.gps_stamps_ns, "real GPS stream")

    def block(self, name: str):
        """``gps`` or ``imu`` (``name``) as a ``judge.SensorBlock``, decoded once for every in-memory
        judgement of the bag (its real run, the floor's draws, a sim run keeping that stream); None when
        its messages do not decode in bulk (the judge then reads the CDR records)."""
        if name not in self._blocks:
            records = getattr(self, name)
            topic, msgtype = records[0].topic, records[0].msgtype
            columns = cdr_columns(get_typestore(), topic, msgtype, [r.data for r in records])
            recv = np.array([r.recv_ns for r in records], dtype=np.int64)
            # a fix block is projected to UTM here once, not by each of the bag's runs
            self._blocks[name] = (None if columns is None
                                  else SensorBlock(recv, topic, msgtype, columns).with_utm())
        return self._blocks[name]

    def truth_records(self, rate: float) -> list:
        """/ground_truth/odom of the bag's truth at ``rate`` Hz (computed once per rate)."""
        if rate not in self._truth_records:
            self._truth_records[rate] = truth_records(self.truth, rate)
        return self._truth_records[rate]

    def decoded_truth(self, rate: float, columns: tuple):
        """The columns of ``truth_records(rate)`` decoded as the scorer decodes them (None until kept)."""
        return self._decoded_truth.get((rate, columns))

    def keep_decoded_truth(self, rate: float, columns: tuple, decoded: dict) -> None:
        self._decoded_truth[(rate, columns)] = decoded


def stream_rate(stamps_ns, what: str) -> float:
    """Rate (Hz) of a sensor stream from its header stamps, rounded to 0.01 Hz.

    Each positive step counts as k_i = max(1, round(step / median step)) periods (a dropped message
    makes a step of 2), and period = (last − first stamp) / Σ k_i.  Unlike 1 / median step, this is
    not thrown off by stamp jitter (a 10 Hz receiver stamped at reception ±10 ms gave 10.04 Hz or
    9.98 Hz from the median; the span over hundreds of periods gives 10.00).
    """
    stamps = np.asarray(stamps_ns, dtype=np.int64)
    steps = np.diff(stamps)
    steps = steps[steps > 0]
    if steps.size == 0:
        raise UserError(f"{what}: need two messages with different stamps to know its rate")
    periods = np.maximum(1, np.rint(steps / float(np.median(steps)))).sum()
    return round(1e9 * float(periods) / float(steps.sum()), 2)


def _check_stamps(stamps, topic: str, bag: str, strict: bool) -> None:
    steps = np.diff(stamps)
    bad = steps <= 0 if strict else steps < 0
    if bad.any():
        i = int(np.argmax(bad)) + 1
        what = "repeat" if stamps[i] == stamps[i - 1] else "go backwards"
        raise UserError(f"{bag}: topic {topic}: header stamps {what} at message {i} "
                        f"({stamps[i - 1]} ns then {stamps[i]} ns)")


def _standard_cdr(reader, msgtype: str) -> bool:
    """Whether the bag's messages of ``msgtype`` can be written to run bags as they are: ROS 2 CDR of
    the same definition as the project's typestore (then re-serialising gives the same values; only
    padding bytes could differ, and the bag's own bytes are kept)."""
    if reader.is_ros1:
        return False
    ours, theirs = get_typestore(), reader.typestore
    try:
        definitions = [store.generate_msgdef(msgtype, ros_version=2)[0] for store in (ours, theirs)]
    except Exception:  # noqa: BLE001 - a definition rosbags cannot render: re-serialise
        return False
    return definitions[0] == definitions[1]


def read_real_streams(spec: ReplaySpec) -> RealStreams:
    """Ground truth + the real GPS and IMU messages of the bag, checked.

    Messages are read as bytes and their header stamps decoded in bulk (``bags.columns``: one line
    naming the bag and topic for a message that does not decode).  Little-endian CDR of the standard
    definitions is kept as it is; anything else (ROS 1 bags, other definitions, big-endian CDR) is
    deserialised and serialised again for the run bags."""

    wanted = {spec.gps_topic: NAVSATFIX, spec.imu_topic: IMU}
    tables = {NAVSATFIX: message_fields.NAVSATFIX, IMU: message_fields.IMU}
    with open_bag(spec.bag, msg_path=spec.msg_path) as reader:
        for topic, msgtype in wanted.items():
            info = require_topic(reader, topic, msgtype)
            if info.count == 0:
                raise UserError(f"{spec.bag}: topic {topic} is empty")
        truth, datum = truth_from_bag(reader, source=spec.truth_source)
        received = {topic: ([], []) for topic in wanted}  # (receive ns, CDR bytes) of each topic
        for message in reader.raw_messages(topics=list(wanted)):
            recvs, datas = received[message.topic]
            recvs.append(int(message.recv_ns))
            datas.append(bytes(message.data))
        store, ros1 = reader.typestore, reader.is_ros1
        as_is = {topic: _standard_cdr(reader, msgtype) for topic, msgtype in wanted.items()}
    window = truth_window_ns(truth)
    serialize = get_typestore().serialize_cdr
    out = {}
    for topic, msgtype in wanted.items():
        recvs, datas = received[topic]
        if not datas:
            raise UserError(f"{spec.bag}: topic {topic} is empty")
        stamps = decode_messages(store, tables[msgtype], datas, ["stamp_ns"], ros1,
                                 f"{spec.bag}: topic {topic}: ")["stamp_ns"]
        _check_stamps(stamps, topic, spec.bag, strict=(topic == spec.imu_topic))
        # Every run of the bag is judged on the same window: the real streams are cropped like the
        # simulated ones are sampled (see the module docstring).
        inside = np.flatnonzero((stamps >= window[0]) & (stamps <= window[1]))
        if inside.size == 0:
            raise UserError(f"{spec.bag}: topic {topic}: no message stamp lies inside the ground-truth span "
                            f"{truth.t[0]:.3f}..{truth.t[-1]:.3f} s")
        # Output bags use the standard topic names whatever the input called them.
        name = TOPICS["gps" if msgtype == NAVSATFIX else "imu"]
        index = inside.tolist()  # (Python ints index the lists faster)
        if as_is[topic] and all(datas[i][:2] == CDR_LE_HEADER[:2] for i in index):
            chosen = [datas[i] for i in index]
        else:  # serialised once here, for every run of this bag
            deserialize = store.deserialize_ros1 if ros1 else store.deserialize_cdr
            chosen = [bytes(serialize(deserialize(datas[i], msgtype), msgtype)) for i in index]
        kept = list(map(RawMessage, [recvs[i] for i in index], repeat(name), repeat(msgtype), chosen))
        out[topic] = (kept, stamps[inside])
    (gps, gps_stamps), (imu, imu_stamps) = out[spec.gps_topic], out[spec.imu_topic]
    return RealStreams(truth, datum, gps, imu, window, gps_stamps, imu_stamps)


FRAMES_HINT = '--static-tf "{base} {frame} x y z yaw pitch roll" (repeatable)'


def check_frames(spec: ReplaySpec, streams: RealStreams, hint: str = FRAMES_HINT) -> None:
    """The real IMU's and GPS's frames (their first messages) must reach the judge's base_link through
    its static TFs, or every run of the bag would lose that sensor: a UserError naming the bag, the
    frames and the option (``hint``, formatted with ``base`` and ``frame``; a bag outside the ART layout
    gets no TF by default)."""
    base = judge_parts(spec.judge.ekf, spec.judge.navsat, tuple(spec.judge.static_tfs))[0].base_link_frame
    store = get_typestore()
    frames: dict = {}
    for records, msgtype, topic in ((streams.imu, IMU, spec.imu_topic),
                                    (streams.gps, NAVSATFIX, spec.gps_topic)):
        frame = str(store.deserialize_cdr(records[0].data, msgtype).header.frame_id)
        frames.setdefault(frame, []).append(topic)
    buffer = TfBuffer([parse_static_tf(text) for text in spec.judge.static_tfs])
    missing = {frame: topics for frame, topics in frames.items()
               if frame not in (base, "") and buffer.lookup_safe(base, frame, 0) is None}
    if missing:
        listed = ", ".join(f"{frame!r} ({', '.join(topics)})" for frame, topics in missing.items())
        example = next(iter(missing))
        raise UserError(f"{spec.bag}: no static TF from {listed} to {base!r} (the ART ones are applied only "
                        f"to bags in the ART layout, docs/judge.md): give each with "
                        f"{hint.format(base=base, frame=example)}")


def real_imu_covariances(streams: RealStreams, limit: int = 8) -> list:
    """[(frame_id, {part: 9 values})] of the real IMU stream: its distinct covariances (the first
    ``limit``), for the covariance lint (``judge.lint``)."""
    datas = [record.data for record in streams.imu]
    store = get_typestore()
    frame = str(store.deserialize_cdr(datas[0], IMU).header.frame_id)
    columns = decode_messages(store, message_fields.IMU, datas, IMU_PARTS)
    rows = np.concatenate([np.asarray(columns[part], dtype=float).reshape(-1, 9) for part in IMU_PARTS],
                          axis=1)
    distinct = np.unique(rows, axis=0)[:limit]
    return [(frame, {part: row[9 * i:9 * i + 9] for i, part in enumerate(IMU_PARTS)}) for row in distinct]
