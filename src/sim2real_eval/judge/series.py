"""The judge's published messages as arrays: ``OdometrySeries`` (a nav_msgs/Odometry stream:
/odometry/filtered, /odometry/gps) and the conversion of navsat's published records into one.

Below the nodes and the runner: ``EkfNode.tick``, ``NavsatNode.tick`` and the ``Judge`` all hand
out these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np


@dataclass
class OdometrySeries:
    """A nav_msgs/Odometry stream as arrays (pose in frame_id, twist in child_frame_id)."""

    stamp_ns: np.ndarray
    frame_id: str
    child_frame_id: str
    position: np.ndarray
    orientation: np.ndarray
    pose_covariance: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    twist_covariance: np.ndarray

    def __len__(self) -> int:
        return int(self.stamp_ns.shape[0])

    @staticmethod
    def empty(frame_id: str = "", child_frame_id: str = "") -> OdometrySeries:
        return OdometrySeries(np.zeros(0, np.int64), frame_id, child_frame_id, np.zeros((0, 3)),
                              np.zeros((0, 4)),
                              np.zeros((0, 36)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 36)))

    @staticmethod
    def from_published(odometry: np.ndarray, frame_id: str, child_frame_id: str) -> OdometrySeries:
        """The EKF's published messages (an ODOMETRY array: EkfNode.take_published) as a series."""
        state = odometry["state"]
        return OdometrySeries(odometry["stamp"].copy(), frame_id, child_frame_id, state[:, 0:3].copy(),
                              odometry["orientation"].copy(), odometry["pose_covariance"].copy(),
                              state[:, 6:9].copy(), state[:, 9:12].copy(),
                              odometry["twist_covariance"].copy())

    @staticmethod
    def concatenate(parts: List[OdometrySeries], frame_id: str, child_frame_id: str) -> OdometrySeries:
        if not parts:
            return OdometrySeries.empty(frame_id, child_frame_id)
        if len(parts) == 1:
            return parts[0]
        names = ("stamp_ns", "position", "orientation", "pose_covariance", "linear_velocity",
                 "angular_velocity",
                 "twist_covariance")
        joined = {name: np.concatenate([getattr(p, name) for p in parts]) for name in names}
        return OdometrySeries(frame_id=frame_id, child_frame_id=child_frame_id, **joined)

    def tail(self, count: int = 1) -> OdometrySeries:
        names = ("stamp_ns", "position", "orientation", "pose_covariance", "linear_velocity",
                 "angular_velocity",
                 "twist_covariance")
        return OdometrySeries(frame_id=self.frame_id, child_frame_id=self.child_frame_id,
                              **{name: getattr(self, name)[-count:].copy() for name in names})


def gps_series(gps: np.ndarray, frame_id: str) -> OdometrySeries:
    """navsat's published messages (a GPS_ODOMETRY array) as /odometry/gps: identity orientation, zero
    twist, no child frame."""
    n = len(gps)
    orientation = np.zeros((n, 4))
    orientation[:, 3] = 1.0
    return OdometrySeries(gps["stamp"].copy(), frame_id, "", gps["position"].copy(), orientation,
                          gps["covariance"].copy(), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 36)))
