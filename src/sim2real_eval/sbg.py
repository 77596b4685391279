"""sbg_driver field conversions to the project's frames (robot-side: Python 3.8, numpy only).

One implementation of this math, used by the offline ground-truth adapters (``truth/bag.py``) and by
the ROS ``ground_truth_node``.

Frames.  By default the SBG driver publishes in NED (``use_enu: false``, frame ``imu_link_ned``):
velocities are (north, east, down), the attitude quaternion rotates the device body frame FRD
(x forward, y right, z down) into NED, and the GNSS course is in degrees clockwise from north.  With
``use_enu: true`` the driver has already swapped north/east and negated down, its quaternion rotates
FLU (x forward, y left, z up) into ENU, and its course is counter-clockwise from east.  The project
uses ENU (x east, y north, z up) and FLU body axes (REP-103).

Position: SBG latitude/longitude are WGS-84 degrees and ``altitude`` is above mean sea level; the
ellipsoidal height (what GPS NavSatFix altitudes and ``geodesy`` use) is altitude + undulation.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import geodesy, rotations

# Quaternion (x, y, z, w) of the fixed rotation NED -> ENU: 180° about the axis (1, 1, 0)/√2.
# Its matrix maps (n, e, d) to (e, n, −d).
Q_ENU_FROM_NED = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])
# Quaternion of the body-axis change FLU -> FRD: 180° about x.  Maps (f, l, u) to (f, −l, −u).
Q_FRD_FROM_FLU = np.array([1.0, 0.0, 0.0, 0.0])


def ned_to_enu(vectors) -> np.ndarray:
    """(..., 3) NED vectors -> ENU: (n, e, d) ↦ (e, n, −d).  The map is its own inverse."""
    v = np.asarray(vectors, dtype=float)
    return np.stack([v[..., 1], v[..., 0], -v[..., 2]], axis=-1)


enu_to_ned = ned_to_enu


def vector_to_enu(vectors, enu_mode: bool = False) -> np.ndarray:
    """A world-frame sbg vector (velocity, ...) in ENU: unchanged in ENU mode, else ``ned_to_enu``."""
    v = np.asarray(vectors, dtype=float)
    return v.copy() if enu_mode else ned_to_enu(v)


def quaternion_to_enu(quaternions, enu_mode: bool = False) -> np.ndarray:
    """sbg attitude quaternion(s) (x, y, z, w) -> body FLU -> ENU attitude.

    NED mode: q_ENU←FLU = q_ENU←NED ⊗ q_NED←FRD ⊗ q_FRD←FLU.  ENU mode: already FLU -> ENU
    (normalised only).  The result keeps w ≥ 0 (q and −q are the same rotation).
    """
    q = rotations.normalize(quaternions)
    if not enu_mode:
        q = rotations.multiply(rotations.multiply(Q_ENU_FROM_NED, q), Q_FRD_FROM_FLU)
    return np.where(q[..., 3:4] < 0, -q, q)


def quaternion_from_enu(quaternions) -> np.ndarray:
    """Inverse of ``quaternion_to_enu`` in NED mode: body FLU -> ENU attitude -> sbg FRD -> NED quaternion."""
    q = rotations.normalize(quaternions)
    q = rotations.multiply(rotations.multiply(rotations.conjugate(Q_ENU_FROM_NED), q),
                           rotations.conjugate(Q_FRD_FROM_FLU))
    return np.where(q[..., 3:4] < 0, -q, q)


def course_to_yaw(course_deg, enu_mode: bool = False) -> np.ndarray:
    """GNSS course over ground (degrees) -> ENU yaw of the velocity (radians, in (−π, π]).

    NED: course is clockwise from north, yaw = π/2 − course.  ENU mode: counter-clockwise from east,
    yaw = course.
    """
    c = np.radians(np.asarray(course_deg, dtype=float))
    yaw = c if enu_mode else np.pi / 2.0 - c
    return np.arctan2(np.sin(yaw), np.cos(yaw))


def heading_from_gps_vel(velocity_enu, min_speed: float, initial_yaw: Optional[float] = None) -> np.ndarray:
    """Vehicle yaw (rad, ENU, in (−π, π]) from SbgGpsVel velocities (N, 3) already in ENU (vector_to_enu).

    The one rule for a GNSS-only heading (offline adapter ``truth.bag`` and ``ground_truth_node``):
    yaw_i = atan2(v_north, v_east) when the horizontal speed √(v_e² + v_n²) ≥ ``min_speed`` (m/s);
    below it the direction is noise and the yaw of the last fast sample is held.  Before the first fast
    sample: ``initial_yaw`` when given (a stream continuing its held yaw), else the first fast sample's
    yaw (a whole recording, back-filled).  NaN where no heading is known yet (no fast sample and no
    ``initial_yaw``).  The velocity is used rather than the ``course`` field: it is the same GNSS
    solution, and it is already in ENU whichever frame mode the driver ran in.
    """
    v = np.asarray(velocity_enu, dtype=float).reshape(-1, 3)
    fast = np.hypot(v[:, 0], v[:, 1]) >= min_speed
    heading = geodesy.arctan2(v[:, 1], v[:, 0])  # (columns: the same bits wherever they lie)
    index = np.maximum.accumulate(np.where(fast, np.arange(len(v)), -1)) if len(v) else np.zeros(0, int)
    yaw = heading[np.maximum(index, 0)] if len(v) else np.zeros(0)
    before_first = index < 0
    if initial_yaw is not None:
        yaw[before_first] = float(initial_yaw)
    elif fast.any():
        yaw[before_first] = heading[int(np.argmax(fast))]
    else:
        yaw[:] = np.nan
    return yaw


def yaw_to_course(yaw_rad) -> np.ndarray:
    """ENU yaw (radians) -> NED course over ground in degrees [0, 360) (inverse of course_to_yaw)."""
    return np.mod(np.degrees(np.pi / 2.0 - np.asarray(yaw_rad, dtype=float)), 360.0)


def ellipsoidal_height(altitude, undulation) -> np.ndarray:
    """Height above the WGS-84 ellipsoid from sbg's MSL altitude: h = altitude + undulation (m)."""
    return np.asarray(altitude, dtype=float) + np.asarray(undulation, dtype=float)


def position_to_enu(latitude, longitude, altitude, undulation, datum) -> np.ndarray:
    """sbg geodetic position(s) -> local ENU metres (..., 3) at ``datum`` (lat, lon, ellipsoidal h)."""
    return geodesy.geodetic_to_enu(latitude, longitude, ellipsoidal_height(altitude, undulation), datum)
