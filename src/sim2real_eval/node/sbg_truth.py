"""sbg_driver messages → ground-truth odometry for ground_truth_node (robot-side: Python 3.8, numpy).

The conversions (NED/ENU, geodesy, the GNSS-heading rule) are ``sim2real_eval.sbg``, shared with the
offline bag adapters; this module pairs the messages as they arrive.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from .. import rotations, sbg
from ..truth import body_rates_from_orientation
from .params import GroundTruthConfig


@dataclass(frozen=True)
class TruthOdometry:
    """What ground_truth_node publishes: pose in ENU ``odom``, twist in base_link (nav_msgs)."""

    stamp_ns: int
    position: np.ndarray
    orientation: np.ndarray
    linear_velocity_body: np.ndarray
    angular_velocity_body: np.ndarray


class SbgTruthAssembler:
    """sbg_driver messages → ground-truth odometry, using the ``sbg`` conversions (NED/ENU, geodesy).

    ``sbg_ekf``: SbgEkfNav (position, world velocity) paired with the latest SbgEkfQuat (attitude).
    ``sbg_gps``: SbgGpsPos paired with the latest SbgGpsVel; the yaw is the GNSS course (held while the
    speed is below ``min_course_speed``), roll = pitch = 0 (a ground vehicle's GNSS has no attitude).
    Each message of a pair may arrive first (stamps within ``max_pair_gap``); the output carries the
    position message's stamp, and the partner is the one closest in time.  ``auto`` uses the first
    pair that completes and sticks to it.  Body rates are the one-sided
    difference of the orientation between consecutive outputs (``truth.body_rates_from_orientation``
    on the two samples); the first output has zero rates.  Outputs with non-increasing stamps are
    never produced.
    """

    def __init__(self, config: GroundTruthConfig):
        self.config = config
        self.active = None if config.source == "auto" else config.source
        self.datum = config.datum
        self._quats: List[Tuple[int, np.ndarray]] = []         # last two SbgEkfQuat (ENU attitude)
        self._vels: List[Tuple[int, np.ndarray, float]] = []   # last two SbgGpsVel (ENU velocity, course)
        self._nav: Optional[tuple] = None  # pending SbgEkfNav waiting for its attitude
        self._pos: Optional[tuple] = None  # pending SbgGpsPos waiting for its velocity
        self._yaw = 0.0
        self._last: Optional[TruthOdometry] = None
        self.dropped = 0

    def _partner(self, stamp_ns: int, candidates: list):
        """The candidate closest in time to ``stamp_ns`` once one at or after it has arrived (so a
        closer one can no longer come), within ``max_pair_gap``; None = keep waiting."""
        if not candidates or candidates[-1][0] < stamp_ns:
            return None
        best = min(candidates, key=lambda c: abs(c[0] - stamp_ns))
        return best if abs(best[0] - stamp_ns) <= self.config.max_pair_gap_s * 1e9 else None

    # Each message of a pair may arrive first; the output is produced by whichever completes the pair,
    # stamped with the position message.
    def on_ekf_quat(self, stamp_ns: int, quaternion) -> Optional[TruthOdometry]:
        self._quats = self._quats[-1:] + [(int(stamp_ns), sbg.quaternion_to_enu(
            np.asarray(quaternion, float).reshape(1, 4), self.config.sbg_enu)[0])]
        return self._try_ekf()

    def on_ekf_nav(self, stamp_ns: int, velocity, latitude, longitude, altitude,
                   undulation) -> Optional[TruthOdometry]:
        velocity_enu = sbg.vector_to_enu(np.asarray(velocity, float).reshape(1, 3), self.config.sbg_enu)[0]
        self._nav = (int(stamp_ns), velocity_enu, latitude, longitude, altitude, undulation)
        return self._try_ekf()

    def on_gps_vel(self, stamp_ns: int, velocity, course_deg: float) -> Optional[TruthOdometry]:
        self._vels = self._vels[-1:] + [(int(stamp_ns), sbg.vector_to_enu(
            np.asarray(velocity, float).reshape(1, 3), self.config.sbg_enu)[0], float(course_deg))]
        return self._try_gps()

    def on_gps_pos(self, stamp_ns: int, latitude, longitude, altitude, undulation) -> Optional[TruthOdometry]:
        self._pos = (int(stamp_ns), latitude, longitude, altitude, undulation)
        return self._try_gps()

    def _try_ekf(self) -> Optional[TruthOdometry]:
        if self.active not in (None, "sbg_ekf") or self._nav is None:
            return None
        quat = self._partner(self._nav[0], self._quats)
        if quat is None:
            return None
        (stamp_ns, velocity_enu, latitude, longitude, altitude, undulation), self._nav = self._nav, None
        return self._emit("sbg_ekf", stamp_ns, latitude, longitude, altitude, undulation, quat[1],
                          velocity_enu)

    def _try_gps(self) -> Optional[TruthOdometry]:
        if self.active not in (None, "sbg_gps") or self._pos is None:
            return None
        vel = self._partner(self._pos[0], self._vels)
        if vel is None:
            return None
        (stamp_ns, latitude, longitude, altitude, undulation), self._pos = self._pos, None
        velocity_enu = vel[1]
        # The one GNSS-heading rule (shared with the offline adapter): held while slower than the threshold.
        self._yaw = float(sbg.heading_from_gps_vel(velocity_enu, self.config.min_course_speed, self._yaw)[0])
        orientation = np.asarray(rotations.from_yaw(self._yaw), float).reshape(4)
        return self._emit("sbg_gps", stamp_ns, latitude, longitude, altitude, undulation, orientation,
                          velocity_enu)

    def _emit(self, source, stamp_ns, latitude, longitude, altitude, undulation, orientation,
              velocity_enu) -> Optional[TruthOdometry]:
        if self._last is not None and stamp_ns <= self._last.stamp_ns:
            self.dropped += 1
            return None
        if self.datum is None:
            height = float(sbg.ellipsoidal_height(altitude, undulation))
            self.datum = [float(latitude), float(longitude), height]
        self.active = source
        position = np.asarray(sbg.position_to_enu(latitude, longitude, altitude, undulation, self.datum),
                              float).reshape(3)
        if self._last is None:
            rates = np.zeros(3)
        else:
            pair = np.stack([self._last.orientation, orientation])
            rates = body_rates_from_orientation(np.array([self._last.stamp_ns, stamp_ns]) / 1e9, pair)[1]
        q = orientation.reshape(1, 4)
        out = TruthOdometry(stamp_ns, position, orientation,
                            rotations.rotate_inverse(q, velocity_enu.reshape(1, 3))[0], rates)
        self._last = out
        return out

