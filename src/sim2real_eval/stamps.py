"""Time stamps: the one place that converts between int64 nanoseconds and ROS times.

Stamps are int64 nanoseconds everywhere in the project (docs/architecture.md "Time"); seconds as
floats only for math.  ``builtin_interfaces/Time`` is ``(sec, nanosec)`` with ``0 <= nanosec < 1e9``;
floor division keeps that true for negative stamps too.  Functions taking a message or a stamp
duck-type on the ROS field names, so rosbags, rclpy and ROS 1 (``.sec``/``.nanosec`` via rosbags)
objects all work.  Robot-side: Python 3.8, numpy only.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

NS_PER_S = 1_000_000_000


def period_ns(rate: float) -> int:
    """The period of a ``rate`` Hz tick in integer nanoseconds, round(1e9 / rate): a sensor's ticks
    (k·period on the data clock, docs/architecture.md "Time") and the judge's timers.  The one definition."""
    return int(round(NS_PER_S / float(rate)))


def seconds_to_ns(t) -> np.ndarray:
    """Seconds (float, scalar or array) -> int64 nanoseconds, rounded to the nearest ns."""
    return np.rint(np.asarray(t, dtype=np.float64) * 1e9).astype(np.int64)


def ns_to_seconds(stamp_ns) -> np.ndarray:
    """int64 nanoseconds (scalar or array) -> float64 seconds."""
    return np.asarray(stamp_ns, dtype=np.int64) / 1e9


def to_ns(sec: int, nanosec: int) -> int:
    """(sec, nanosec) -> int ns."""
    return int(sec) * NS_PER_S + int(nanosec)


def from_ns(stamp_ns: int) -> Tuple[int, int]:
    """int ns -> (sec, nanosec) with 0 <= nanosec < 1e9 (floor division, also for negative stamps)."""
    stamp_ns = int(stamp_ns)
    return stamp_ns // NS_PER_S, stamp_ns % NS_PER_S


def split_ns(stamp_ns) -> Tuple[np.ndarray, np.ndarray]:
    """int ns (array) -> (sec, nanosec) int64 arrays, 0 <= nanosec < 1e9 (as ``from_ns``, vectorised)."""
    return np.divmod(np.asarray(stamp_ns, dtype=np.int64), NS_PER_S)


def join_ns(sec, nanosec) -> np.ndarray:
    """(sec, nanosec) arrays -> int64 ns (as ``to_ns``, vectorised)."""
    return np.asarray(sec, dtype=np.int64) * NS_PER_S + np.asarray(nanosec, dtype=np.int64)


def stamp_to_ns(stamp) -> int:
    """A builtin_interfaces/Time object (``.sec``, ``.nanosec``) -> int ns."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def header_ns(msg) -> int:
    """``msg.header.stamp`` -> int ns."""
    return stamp_to_ns(msg.header.stamp)


def stamp_seconds(stamp) -> float:
    """A Time object -> float seconds as robot_localization's ``filter_utilities::toSec`` computes it
    (sec + nanosec·1e-9, in that order: the judge relies on this exact rounding)."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def ns_to_stamp_seconds(stamp_ns) -> np.ndarray:
    """int ns (array) -> float64 seconds rounded as ``stamp_seconds`` (sec + nanosec·1e-9), which can
    differ from ``ns_to_seconds`` (ns / 1e9) in the last bit."""
    sec, nanosec = split_ns(stamp_ns)
    return sec.astype(np.float64) + nanosec.astype(np.float64) * 1e-9
