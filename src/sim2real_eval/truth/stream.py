"""Ground truth streamed in live (robot-side: Python 3.8, numpy).

- ``TruthStream``: orders ground-truth samples (drops non-increasing stamps), derives the specific
  force exactly as the offline path does (``GroundTruth.from_kinematics``: central differences of the
  world velocity, one-sided at the first/last sample) and hands out finished truth *segments*
  between consecutive samples;
- ``odometry_to_truth_sample``: a nav_msgs/Odometry's fields as one truth sample.

This is the live path (a simulator publishing truth as it runs); the noise nodes sample their sensors
on it (``node.sensor_stream.SensorStream``).  Replaying a recorded bag reads the truth ahead instead
(``truth.bag``, through ``replay``), so its sensors are not delayed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from .. import rotations
from ..errors import UserError
from ..stamps import ns_to_seconds
from . import GroundTruth


@dataclass(frozen=True)
class TruthSegment:
    """Finished ground truth between two consecutive samples (a 2-row GroundTruth).

    ``start_ns``/``end_ns`` are the two sample stamps; ticks go in [start, end), or [start, end]
    for the last segment of a stream (``include_end``), so every tick belongs to one segment.
    """

    truth: GroundTruth
    start_ns: int
    end_ns: int
    include_end: bool = False


class TruthStream:
    """Ground-truth samples in, finished 2-sample segments out, identical to the offline derivation.

    The offline path builds ``GroundTruth.from_kinematics(t, p, q, v, ω)`` over the whole series:
    world acceleration by ``truth.time_derivative`` (second-order differences on the stamps inside,
    one-sided at both ends).  Each interior row only depends on its two neighbours and the same
    operations make it whatever the spacing (np.gradient would not: it changes formula when all of
    its spacings are equal, as 3 evenly spaced stamps often are), so evaluating the same function on
    the window (i−1, i, i+1) gives bit-identical rows; row i is therefore final as soon as sample i+1
    arrives, and row N−1 when the stream ends (``finish``).
    Stamps must increase strictly: a sample that does not is dropped (``push`` returns False).
    """

    def __init__(self):
        self._raw: List[Tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._last_row: Optional[GroundTruth] = None
        self._last_row_ns = 0
        self._finished = False
        self.dropped = 0
        self.accepted = 0

    @property
    def last_stamp_ns(self) -> Optional[int]:
        return self._raw[-1][0] if self._raw else None

    def push(self, stamp_ns: int, position, orientation, velocity, angular_velocity,
             segments: Optional[List[TruthSegment]] = None) -> bool:
        """Add one sample (ENU position m, xyzw body→ENU, world ENU velocity m/s, body rate rad/s).

        Finished segments are appended to ``segments``.  Returns False (and counts it) when the
        stamp does not increase or the sample is not finite.
        """
        stamp_ns = int(stamp_ns)
        if self._finished:
            raise RuntimeError("TruthStream.push after finish")
        sample = (stamp_ns, np.asarray(position, dtype=np.float64).reshape(3),
                  np.asarray(orientation, dtype=np.float64).reshape(4),
                  np.asarray(velocity, dtype=np.float64).reshape(3),
                  np.asarray(angular_velocity, dtype=np.float64).reshape(3))
        # A zero quaternion (an unset orientation) is as unusable as a NaN.
        finite = all(np.isfinite(part).all() for part in sample[1:]) and np.linalg.norm(sample[2]) > 0.5
        if not finite or (self._raw and stamp_ns <= self._raw[-1][0]):
            self.dropped += 1
            return False
        self.accepted += 1
        self._raw.append(sample)
        del self._raw[:-3]
        if len(self._raw) == 2 and self._last_row is None:
            self._finish_row(self._raw, 0, segments)   # first row: forward difference
        elif len(self._raw) == 3:
            self._finish_row(self._raw, 1, segments)   # interior row: central difference
        return True

    def finish(self, segments: Optional[List[TruthSegment]] = None) -> None:
        """End of stream: the last row (backward difference) and the closed last segment."""
        if self._finished:
            return
        self._finished = True
        if len(self._raw) >= 2:
            self._finish_row(self._raw[-2:], 1, segments, include_end=True)

    def _finish_row(self, window, index: int, segments, include_end: bool = False) -> None:
        t = np.array([s[0] for s in window], dtype=np.int64)
        truth = GroundTruth.from_kinematics(
            ns_to_seconds(t), np.array([s[1] for s in window]), np.array([s[2] for s in window]),
            np.array([s[3] for s in window]), angular_velocity=np.array([s[4] for s in window]))
        row = truth.slice(index, index + 1)
        if self._last_row is not None and segments is not None:
            pair = GroundTruth(**{name: np.concatenate([getattr(self._last_row, name), getattr(row, name)])
                                  for name in ("t", "position", "orientation", "velocity",
                                               "angular_velocity", "specific_force")})
            segments.append(TruthSegment(pair, self._last_row_ns, int(t[index]), include_end))
        self._last_row = row
        self._last_row_ns = int(t[index])


def odometry_to_truth_sample(position, orientation, linear_velocity, angular_velocity,
                             twist_frame: str = "child") -> Tuple[np.ndarray, ...]:
    """nav_msgs/Odometry fields → (ENU position, xyzw, world ENU velocity, body rate).

    nav_msgs/Odometry gives the twist in ``child_frame_id`` (base_link): v_world = R(q)·v_body.
    Some simulators (e.g. Gazebo's p3d plugin) publish it in the world frame: ``twist_frame: world``
    takes the linear velocity as is and rotates the angular rate into the body, ω_body = R(q)ᵀ·ω.
    """
    q = rotations.normalize(np.asarray(orientation, dtype=np.float64).reshape(1, 4))
    v = np.asarray(linear_velocity, dtype=np.float64).reshape(1, 3)
    w = np.asarray(angular_velocity, dtype=np.float64).reshape(1, 3)
    if twist_frame == "child":
        v_world, w_body = rotations.rotate(q, v), w
    elif twist_frame == "world":
        v_world, w_body = v, rotations.rotate_inverse(q, w)
    else:
        raise UserError(f"parameter twist_frame: unknown value {twist_frame!r}; expected child or world")
    return (np.asarray(position, dtype=np.float64).reshape(3), q[0], v_world[0], w_body[0])
