"""A run's bag records: /ground_truth/odom at the study's rate, the sensors' /fix, /imu (and /imu/mag)
and the judge's /odometry/filtered, /odometry/gps as (recv_ns, topic, msgtype, CDR bytes) records in
receive order (``runs.write.write_run`` writes them as a run directory).
"""
from __future__ import annotations

import numpy as np

from ..art import GPS_ODOMETRY_TOPIC, MAGNETIC_FIELD_TOPIC, TOPICS
from ..errors import UserError
from ..limits import GROUND_TRUTH_RATE
from . import messages as bag_messages

DEFAULT_GROUND_TRUTH_RATE = 50.0  # Hz: plenty for speed metrics, 2× fewer messages than a 100 Hz truth

def check_ground_truth_rate(rate: float, where: str) -> float:
    """A ground_truth_rate inside ``limits.GROUND_TRUTH_RATE`` (1 Hz … 1 kHz); errors name ``where``."""
    return GROUND_TRUTH_RATE.check(float(rate), where)


def truth_records(truth, rate: float) -> list:
    """/ground_truth/odom at ``rate`` Hz: ticks k·period inside the truth span (docs: Time), as
    (recv_ns, topic, msgtype, CDR bytes) records.  A run is never written without them."""
    check_ground_truth_rate(rate, "ground_truth_rate")
    stamps = bag_messages.tick_stamps_ns(truth, rate)
    if len(stamps) < 2:
        raise UserError(f"ground_truth_rate {rate:g} Hz: {len(stamps)} /ground_truth/odom message(s) in the "
                        f"{truth.duration:.3g} s of ground truth; the scorer needs at least 2")
    # ns -> s may step past the span by an ulp at epoch-scale times: clip, never extrapolate.
    sampled = truth.interpolate(np.clip(stamps * 1e-9, truth.t[0], truth.t[-1]))
    return bag_messages.truth_odometry_cdr(sampled, TOPICS["ground_truth"])


def gps_records(samples) -> list:
    """/fix as message objects (what the judge reads)."""
    return list(bag_messages.navsatfix_messages(samples, TOPICS["gps"]))


def imu_records(samples) -> list:
    """/imu as message objects (what the judge reads)."""
    return list(bag_messages.imu_messages(samples, TOPICS["imu"]))


def gps_cdr_records(samples) -> list:
    """/fix as CDR records (the bytes rosbags would write for ``gps_records``), serialised in bulk."""
    return bag_messages.navsatfix_cdr(samples, TOPICS["gps"])


def imu_cdr_records(samples) -> list:
    """/imu as CDR records (the bytes rosbags would write for ``imu_records``), serialised in bulk."""
    return bag_messages.imu_cdr(samples, TOPICS["imu"])


def magnetic_field_cdr_records(samples) -> list:
    """/imu/mag as CDR records when the IMU model's magnetometer is on, else none: the content
    imu_noise_node publishes (same stamps and frame as /imu), received with the IMU message."""
    return bag_messages.magnetic_field_cdr(samples, MAGNETIC_FIELD_TOPIC)


def sensor_bag_records(gps, imu) -> list:
    """/fix + /imu (+ /imu/mag) records for the bag (``gps_records`` + ``imu_records`` +
    ``magnetic_field_cdr_records``, in that order, as bytes)."""
    return gps_cdr_records(gps) + imu_cdr_records(imu) + magnetic_field_cdr_records(imu)


def judge_records(result) -> list:
    """The judge's outputs as CDR records; received at their header stamps (a subscriber on the same
    clock)."""
    out = bag_messages.odometry_cdr(result.filtered, TOPICS["estimate"])
    if result.gps_odometry is not None:
        out += bag_messages.odometry_cdr(result.gps_odometry, GPS_ODOMETRY_TOPIC)
    return out


def in_receive_order(records: list) -> list:
    """Stable sort by receive time (ties keep their input order, so the result is deterministic)."""
    return sorted(records, key=lambda r: r[0])
