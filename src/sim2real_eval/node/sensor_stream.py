"""One streaming sensor: live ground truth in, model samples out on exact ticks (robot-side: Python 3.8,
numpy).

``SensorStream`` takes the finished truth segments of a ``truth.stream.TruthStream`` → ticks inside
them → ``model.step`` → sensor samples.  The tick at τ is published once the truth sample *after* the
one following τ has arrived (the central difference needs it): stamps are exact ticks, publication
lags by at most two truth periods (0.4 s with Chrono::ROS's 5 Hz vehicle state).  Truth is
interpolated between the two samples that bracket τ (``truth_mode: interpolate``, the offline
behaviour) or held from the earlier one (``truth_mode: hold``); nothing is ever extrapolated, and
ticks inside a truth gap longer than ``max_truth_gap`` seconds are skipped.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import UserError
from ..stamps import ns_to_seconds
from ..truth import GroundTruth
from ..truth.stream import TruthSegment, TruthStream
from .ticks import checked_period_ns, ticks_ns

TRUTH_MODES = ("interpolate", "hold")


class SensorStream:
    """One streaming sensor: truth samples in, model samples out on exact ticks of the data clock.

    ``model`` is a GpsModel/ImuModel (anything with ``step(stamp_ns, truth_at_stamp)`` returning a
    0- or 1-row samples container).  The truth handed to ``step`` is ``segment.interpolate(τ/1e9)``
    (linear + slerp, as ``model.sample`` does offline) or, with ``truth_mode: hold``, the latest truth
    sample at or before τ, re-stamped at τ.

    Ticks are ``k·period`` of ``rate_hz`` or, with ``explicit_ticks``, the stamps given to
    ``add_tick`` (e.g. the header stamps of the real IMU being replaced, as the offline replay
    samples it).  An explicit tick is used if it arrives before the truth around it is finished;
    one arriving later, out of order, or outside the truth span is dropped and counted.
    """

    def __init__(self, model, rate_hz: float, truth_mode: str = "interpolate",
                 max_truth_gap_s: float = 1.0, explicit_ticks: bool = False):
        if truth_mode not in TRUTH_MODES:
            raise UserError(f"parameter truth_mode: unknown value {truth_mode!r}; expected one of "
                            f"{', '.join(TRUTH_MODES)}")
        if not (max_truth_gap_s > 0):
            raise UserError(f"parameter max_truth_gap: must be > 0 s, got {max_truth_gap_s!r}")
        self.model = model
        self.period_ns = checked_period_ns(rate_hz)
        self.truth_mode = truth_mode
        self.max_gap_ns = int(round(max_truth_gap_s * 1e9))
        self.truth = TruthStream()
        self.skipped_ticks = 0
        self.explicit_ticks = explicit_ticks
        self._pending: List[int] = []     # explicit ticks waiting for their truth, increasing
        self._done_until: Optional[int] = None  # ticks before this stamp can no longer be served
        self.dropped_ticks = 0

    def add_tick(self, stamp_ns: int) -> bool:
        """Queue an explicit tick; False (and counted) when it is late or not increasing."""
        if not self.explicit_ticks:
            raise RuntimeError("add_tick needs SensorStream(explicit_ticks=True)")
        stamp_ns = int(stamp_ns)
        late = self._done_until is not None and stamp_ns < self._done_until
        if late or (self._pending and stamp_ns <= self._pending[-1]):
            self.dropped_ticks += 1
            return False
        self._pending.append(stamp_ns)
        return True

    def push_truth(self, stamp_ns: int, position, orientation, velocity,
                   angular_velocity) -> Tuple[List, bool]:
        """Returns (samples ready to publish, accepted).  accepted False = stamp not increasing."""
        segments: List[TruthSegment] = []
        accepted = self.truth.push(stamp_ns, position, orientation, velocity, angular_velocity, segments)
        return self._emit(segments), accepted

    def finish(self) -> List:
        """End of the truth stream: the ticks of the last segment, including its end."""
        segments: List[TruthSegment] = []
        self.truth.finish(segments)
        return self._emit(segments)

    def _ticks(self, segment: TruthSegment) -> List[int]:
        if not self.explicit_ticks:
            return ticks_ns(segment.start_ns, segment.end_ns, self.period_ns, segment.include_end).tolist()
        end = segment.end_ns + 1 if segment.include_end else segment.end_ns
        before = [t for t in self._pending if t < segment.start_ns]  # outside the truth span
        mine = [t for t in self._pending if segment.start_ns <= t < end]
        self._pending = [t for t in self._pending if t >= end]
        self.dropped_ticks += len(before)
        self._done_until = end
        return mine

    def _emit(self, segments: List[TruthSegment]) -> List:
        out = []
        for segment in segments:
            ticks = self._ticks(segment)
            if segment.end_ns - segment.start_ns > self.max_gap_ns:
                self.skipped_ticks += len(ticks)  # a truth dropout: no data rather than invented data
                continue
            for tick in ticks:
                tick = int(tick)
                if self.truth_mode == "interpolate":
                    at_tick = segment.truth.interpolate(ns_to_seconds([tick]))
                else:
                    row = 1 if tick == segment.end_ns else 0  # the latest sample at or before τ
                    held = segment.truth.slice(row, row + 1)
                    at_tick = GroundTruth(ns_to_seconds([tick]), held.position, held.orientation,
                                          held.velocity, held.angular_velocity, held.specific_force)
                samples = self.model.step(tick, at_tick)
                if samples is not None and len(samples):
                    out.append(samples)
        return out

