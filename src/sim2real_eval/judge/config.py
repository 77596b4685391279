"""A run's judge: its configuration (``JudgeConfig``: the robot_localization YAML files, static TFs,
timer timing and start), those files parsed once (``judge_parts``), the sensor models a judged run uses
(the IMU mounted by the judge's static TF: ``load_imu``, ``model_parameters``), the model samples as the
judge's input blocks (``sensor_block``) and the one call of the judge by the offline pipeline
(``judge_run``).

Importing this module loads the judge's package (its compiled kernels from numba's cache); the YAML
files are read when a run needs them.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .. import message_fields, runs
from ..art import ART_STATIC_TFS, IMU_FRAME, TOPICS
from ..bags import get_typestore
from ..bags import messages as bag_messages
from ..errors import UserError
from ..models import load_gps_model, load_imu_model
from ..models.samples import ImuSamples
from ..runs import judge_record
from ..runs.start import initial_state_from_truth
from ..runs.timing import RunTiming, TimingModel
from ..stamps import period_ns
from ..static_tf import mounting_rpy
from .input_rows import columns_from_wire
from .params import load_ekf_params, load_navsat_params
from .runner import Judge, JudgeTiming, SensorBlock
from .tf import parse_static_tf


@dataclass(frozen=True)
class JudgeConfig:
    """The judge of a run: robot_localization YAML files, the static TFs of the launch, the timing
    model of its timers (``runs.timing``; default: ticks on exact multiples, zero latency) and its
    start (``runs.start``): ``initial_state`` "config" (the ekf YAML's) or "truth" (each run's truth
    at its first instant), ``warmup_s`` the seconds of each run the scorer skips."""

    ekf: str
    navsat: str
    static_tfs: tuple = ART_STATIC_TFS
    timing: TimingModel = TimingModel()
    initial_state: str = "config"
    warmup_s: float = 0.0

    def record(self) -> dict:
        return judge_record(self.ekf, self.navsat, self.static_tfs)

    def start_state(self, truth, stamp_ns: int):
        """The ekf_node ``initial_state`` of a run whose first instant is ``stamp_ns`` (None: the YAML's)."""
        if self.initial_state != "truth":
            return None

        ekf = judge_parts(self.ekf, self.navsat, tuple(self.static_tfs))[0]
        return initial_state_from_truth(truth, stamp_ns, ekf.two_d_mode)

    def start_records(self) -> dict:
        """run.yaml's ``initial_state`` ({source: truth}, the values added when known) and ``warmup_s``
        (absent when 0), as ``RunInfo`` keywords."""
        return {"initial_state": {"source": "truth"} if self.initial_state == "truth" else None,
                "warmup_s": float(self.warmup_s) if self.warmup_s else None}

    def periods(self) -> tuple:
        """(EKF, navsat) timer periods in ns, from the two parameter files."""
        ekf, navsat, _tfs = judge_parts(self.ekf, self.navsat, tuple(self.static_tfs))
        return period_ns(ekf.frequency), period_ns(navsat.frequency)

    def run_timing(self, seed: int, scenario: str, k: int) -> RunTiming:
        """The timing of run ``k`` of ``scenario``: the same for every variant of it (common random
        numbers; ``runs.timing``)."""
        if self.timing.is_default:
            return RunTiming()
        return self.timing.run_timing(self.periods(), seed, scenario, int(k))

    def timing_record(self, values: RunTiming, seed: int) -> dict | None:
        """run.yaml ``timing`` (None for the default model)."""
        return self.timing.record(values, seed)

    def mounting_rpy(self, child_frame: str = IMU_FRAME) -> list | None:
        """(roll, pitch, yaw) rad of the static TF base_link→``child_frame`` (None when there is none).

        The IMU model gets the same rotation, so simulated IMU data is expressed in the frame the TF
        describes (static_transform_publisher order is x y z yaw pitch roll).
        """
        return mounting_rpy(self.static_tfs, child_frame)

    def imu_overrides(self, frame: str | None = None) -> dict:
        """The IMU model's ``mounting_rpy`` from the judge's TF base_link→imu (none when the TF is absent);
        with ``frame`` (a replayed bag's real IMU frame), the model publishes in that frame instead,
        mounted by the TF to it (identity for base_link itself or an empty frame)."""
        if frame is None:
            rpy = self.mounting_rpy(IMU_FRAME)
            return {} if rpy is None else {"mounting_rpy": rpy}
        base = judge_parts(self.ekf, self.navsat, tuple(self.static_tfs))[0].base_link_frame

        rpy = [0.0, 0.0, 0.0] if frame in ("", base) else mounting_rpy(self.static_tfs, frame, base)
        return {"frame_id": frame, **({} if rpy is None else {"mounting_rpy": rpy})}

    def check_imu_frame(self, frame_id: str, spec: Any) -> None:
        children = {text.split()[1] for text in self.static_tfs}
        if frame_id not in children | {"base_link", ""}:
            raise UserError(f"imu model {spec!r}: frame_id {frame_id!r} has no static TF in the judge "
                            f"(TF children: {', '.join(sorted(children))}); "
                            "the judge would drop every IMU message")


@functools.lru_cache(maxsize=8)
def judge_parts(ekf: str, navsat: str, static_tfs: tuple) -> tuple:
    """(EkfParams, NavsatParams, StaticTransforms) of the YAML files ``ekf``, ``navsat`` and the static-TF
    strings ``static_tfs``; the last 8 are kept (every run of a study asks for the same ones)."""
    return load_ekf_params(ekf), load_navsat_params(navsat), tuple(parse_static_tf(t) for t in static_tfs)


def judge_timing(values: RunTiming | None) -> JudgeTiming | None:
    """``judge.JudgeTiming`` of a run's timing values (None: the judge's default)."""
    if values is None:
        return None
    return JudgeTiming(int(values.ekf_phase_ns), int(values.navsat_phase_ns), int(values.tick_latency_ns))


def judge_run(judge: JudgeConfig, messages: Iterable, timing: RunTiming | None = None, initial_state=None):
    """Run the embedded robot_localization on ``(recv_ns, topic, msg)`` or ``(recv_ns, topic, msgtype, msg)``
    records in receive order (``msg`` an object or CDR bytes: decoded in bulk), or on a list of
    ``judge.SensorBlock`` (messages already in columns, one block per topic: ``sensor_block``) →
    JudgeResult, its timers ticking as ``timing`` says (default: exact multiples of the periods, zero
    latency), ekf_node's ``initial_state`` parameter replaced by ``initial_state`` (15 values) when given.

    The only place the pipeline calls the judge.
    """
    ekf, navsat, tfs = judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))
    if initial_state is not None:
        ekf = dataclasses.replace(ekf, initial_state=np.array(initial_state, dtype=float))
    judge = Judge(ekf, navsat, static_tfs=tfs, gps_topic=TOPICS["gps"], timing=judge_timing(timing))
    return judge.run_blocks(messages) if are_sensor_blocks(messages) else judge.run(messages)


def are_sensor_blocks(messages) -> bool:
    """Whether ``messages`` is a list of ``judge.SensorBlock`` (``judge_run``), not records."""
    return isinstance(messages, list) and bool(messages) and isinstance(messages[0], SensorBlock)


def sensor_block(samples) -> Any:
    """``judge.SensorBlock`` of a model's samples (GpsSamples → /fix, ImuSamples → /imu): the values the
    judge would decode from ``gps_cdr_records`` / ``imu_cdr_records``, without making the bytes (a run
    that writes no bag; /imu/mag is left out: the judge does not read it)."""
    table, topic = ((message_fields.IMU, TOPICS["imu"]) if isinstance(samples, ImuSamples)
                    else (message_fields.NAVSATFIX, TOPICS["gps"]))
    strings, wire, receive = bag_messages.container_wire_columns(table, samples)
    columns = columns_from_wire(get_typestore(), table.msgtype, strings, wire, len(receive))
    return SensorBlock(receive, topic, table.msgtype, columns)



def load_gps(spec: Any, seed_sequence=None, datum=None, rate: float | None = None):
    """The GPS model of a run.  Replay of real bags overrides the preset's ``datum`` (lat, lon, alt)
    and ``rate`` (Hz) with the real receiver's."""
    return load_gps_model(spec, seed_sequence, **gps_overrides(datum, rate))


def gps_overrides(datum, rate) -> dict:
    """The GPS model keywords of a replayed real receiver: its ``datum`` (lat, lon, alt) and ``rate`` (Hz),
    each when given."""
    overrides: dict = {} if datum is None else {"datum": [float(v) for v in datum]}
    if rate is not None:
        overrides["rate"] = float(rate)
    return overrides


def load_imu(spec: Any, judge: JudgeConfig, seed_sequence=None, frame: str | None = None):
    """The IMU model of a run, mounted with the judge's base_link→imu rotation (overrides the preset's);
    ``frame``: publish in that frame, mounted by the TF to it (a replayed bag's real IMU frame).

    The simulated IMU then reports in the frame the static TF describes, and the judge rotates it
    back to base_link exactly as robot_localization does on the vehicle.
    """
    model = load_imu_model(spec, seed_sequence, **judge.imu_overrides(frame))
    judge.check_imu_frame(model.frame_id, spec)
    return model


def model_parameters(kind: str, spec: Any, judge: JudgeConfig | None = None, datum=None,
                     rate: float | None = None, frame: str | None = None) -> dict:
    """Effective parameters of a run's model (``runs.model_parameters`` with the pipeline's overrides:
    the IMU mounted like the judge's TF (in ``frame`` when given), a replayed GPS at the real bag's datum
    and rate)."""
    if kind == "imu":
        parameters = runs.model_parameters("imu", spec, **judge.imu_overrides(frame))
        judge.check_imu_frame(parameters["frame_id"], spec)
        return parameters
    return runs.model_parameters("gps", spec, **gps_overrides(datum, rate))
