"""Time on the data clock: sensor periods in integer ns, exact ticks, throttled warnings (robot-side).

Stamps are int64 nanoseconds (``sim2real_eval.stamps`` converts to and from ROS times); a sensor
ticks at exact multiples ``k·period_ns`` of the data clock, ``period_ns = round(1e9 / rate)``.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import UserError
from ..stamps import period_ns


def checked_period_ns(rate_hz: float, name: str = "rate") -> int:
    """``stamps.period_ns`` of a node parameter ``name``, validated (a finite rate > 0 Hz, at most 1 GHz)."""
    if isinstance(rate_hz, bool) or not isinstance(rate_hz, (int, float)) or not math.isfinite(rate_hz) \
            or rate_hz <= 0:
        raise UserError(f"parameter {name}: expected a rate > 0 Hz, got {rate_hz!r}")
    period = period_ns(rate_hz)
    if period < 1:
        raise UserError(f"parameter {name}: {rate_hz!r} Hz is above 1 GHz")
    return period


def ticks_ns(start_ns: int, end_ns: int, period: int, include_end: bool) -> np.ndarray:
    """Every k·period in [start_ns, end_ns) (or [start_ns, end_ns] with include_end), int64.

    Integer arithmetic only, so absolute epoch stamps (~1.7e18 ns) keep every nanosecond.  Stamp 0
    is never produced (robot_localization drops it).
    """
    first = -(-int(start_ns) // period)  # ceil
    last = int(end_ns) // period
    if not include_end and last * period == int(end_ns):
        last -= 1
    if last < first:
        return np.zeros(0, dtype=np.int64)
    ticks = np.arange(first, last + 1, dtype=np.int64) * np.int64(period)
    return ticks[ticks != 0]


class ThrottledWarning:
    """At most one warning per ``period_s`` of wall time; counts what it suppressed in between."""

    def __init__(self, period_s: float = 5.0):
        self.period_s = float(period_s)
        self._last: Optional[float] = None
        self.suppressed = 0

    def message(self, text: str, now_s: float) -> Optional[str]:
        """The text to log now (with the number of suppressed repeats), or None to stay quiet."""
        if self._last is not None and now_s - self._last < self.period_s:
            self.suppressed += 1
            return None
        self._last = now_s
        note = f" ({self.suppressed} more since the last warning)" if self.suppressed else ""
        self.suppressed = 0
        return text + note



class TickRateCheck:
    """Does a stream of explicit ticks (``tick_topic``) run at the rate the model was built for?

    The model's noise is scaled for its ``rate`` (e.g. a random walk's step ∝ √dt); ticking it on
    another stream's stamps at a different rate would scale it wrongly.  After ``min_ticks`` ticks
    ``check`` returns a one-line warning once when the measured rate is off by more than ``tolerance``.
    """

    def __init__(self, rate_hz: float, min_ticks: int = 100, tolerance: float = 0.05):
        self.rate_hz = float(rate_hz)
        self.min_ticks = int(min_ticks)
        self.tolerance = float(tolerance)
        self._first: Optional[int] = None
        self._last: Optional[int] = None
        self._count = 0
        self.done = False

    def check(self, stamp_ns: int, name: str) -> Optional[str]:
        if self.done:
            return None
        stamp_ns = int(stamp_ns)
        if self._first is None:
            self._first = stamp_ns
        self._last = stamp_ns
        self._count += 1
        if self._count < self.min_ticks or self._last <= self._first:
            return None
        self.done = True
        measured = (self._count - 1) / ((self._last - self._first) / 1e9)
        if abs(measured - self.rate_hz) <= self.tolerance * self.rate_hz:
            return None
        return (f"{name} ticks at {measured:.2f} Hz but the model was built for {self.rate_hz:g} Hz: its "
                f"noise is scaled for the wrong interval (set the rate parameter to {measured:.2f})")
