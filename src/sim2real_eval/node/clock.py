"""Following the bag player's sim clock between its /clock messages (robot-side: stdlib only).

``ros2 bag play --clock`` publishes /clock at a fixed rate (40 Hz by default), but sends its own
messages at their exact bag times: a node that published "when its ROS clock reaches t" would be up
to one /clock period (25 ms) late, in bursts.  The player's clock is a straight line in the machine's
steady clock (rosbag2's TimeControllerClock: ``sim = a + rate·steady``, and ``steady_clock`` is
CLOCK_MONOTONIC, the clock of ``time.monotonic_ns`` in every process of the machine).  Each /clock
message gives one point of that line, seen some delivery delay d ≥ 0 after it was taken:
``sim_i − rate·arrival_i = a − rate·d_i ≤ a``, so the largest of these over recent messages is the
offset with the least delivery delay.  ``ClockFollower`` keeps that estimate and answers "what is the
sim time now" and "at which steady time does the sim clock reach t".

A paused player repeats the same /clock value, a seek jumps it: either starts a new line (the
follower is "not running" until two advancing values have arrived).  It never extrapolates further
than ``horizon_s`` past the last /clock value, so a player that stopped publishing stops us too.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Deque, List, Optional, Tuple


class ClockFollower:
    def __init__(self, rate: float, window: int = 80, horizon_s: float = 0.1):
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate!r}")
        self.rate = float(rate)
        self.horizon_ns = int(horizon_s * 1e9)
        self._points: Deque[Tuple[int, int]] = deque(maxlen=window)  # (sim ns, arrival steady ns)
        # The line is sim = base_sim + offset + rate·(steady − base_steady), with (base_sim,
        # base_steady) the first point of the current line: small numbers, so float64 keeps
        # nanoseconds (bag times ~1.7e18 ns would not).
        self._base: Tuple[int, int] = (0, 0)
        self._offset: Optional[float] = None
        self.resets = 0

    @property
    def running(self) -> bool:
        """True once two advancing /clock values of the current line have arrived."""
        return self._offset is not None

    @property
    def last_clock_ns(self) -> Optional[int]:
        return self._points[-1][0] if self._points else None

    def update(self, clock_ns: int, steady_ns: int) -> None:
        """One /clock message: its value and the steady time it arrived."""
        clock_ns, steady_ns = int(clock_ns), int(steady_ns)
        if self._points and clock_ns <= self._points[-1][0]:
            # Paused (same value) or jumped back: the old line no longer holds.
            self._points.clear()
            self._offset = None
            self.resets += 1
        if not self._points:
            self._base = (clock_ns, steady_ns)
        self._points.append((clock_ns, steady_ns))
        if len(self._points) >= 2:
            c0, s0 = self._base
            self._offset = max((c - c0) - self.rate * (s - s0) for c, s in self._points)

    def now(self, steady_ns: int) -> Optional[int]:
        """The sim time at ``steady_ns`` (ns), capped at the horizon; None while not running."""
        if self._offset is None:
            return None
        c0, s0 = self._base
        estimate = c0 + int(math.floor(self._offset + self.rate * (int(steady_ns) - s0)))
        return min(max(estimate, self._points[-1][0]), self._points[-1][0] + self.horizon_ns)

    def steady_at(self, clock_ns: int) -> Optional[int]:
        """The steady time (ns) at which the sim clock reaches ``clock_ns``; None while not running
        or when ``clock_ns`` lies beyond the horizon of the last /clock value (wait for more)."""
        if self._offset is None or clock_ns > self._points[-1][0] + self.horizon_ns:
            return None
        c0, s0 = self._base
        steady = s0 + math.ceil((int(clock_ns) - c0 - self._offset) / self.rate)
        while self.now(steady) < clock_ns:  # float rounding: step until now() agrees (1–2 ns)
            steady += 1
        return steady


class Schedule:
    """Records to publish at their receive times ``recv_ns`` (sim time), in order.

    ``due(sim_now)`` pops every record whose time has come; ``next_ns`` is the time of the next one.
    Records are ``(recv_ns, key, payload)`` tuples; ties keep their input order.
    """

    def __init__(self, records: List[Tuple[int, str, bytes]]):
        self._records = sorted(records, key=lambda r: r[0])
        self._next = 0

    def __len__(self) -> int:
        return len(self._records)

    @property
    def published(self) -> int:
        return self._next

    @property
    def next_ns(self) -> Optional[int]:
        return self._records[self._next][0] if self._next < len(self._records) else None

    @property
    def first_ns(self) -> Optional[int]:
        return self._records[0][0] if self._records else None

    @property
    def last_ns(self) -> Optional[int]:
        return self._records[-1][0] if self._records else None

    def due(self, sim_now_ns: int) -> List[Tuple[int, str, bytes]]:
        start = self._next
        while self._next < len(self._records) and self._records[self._next][0] <= sim_now_ns:
            self._next += 1
        return self._records[start:self._next]
