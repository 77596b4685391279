"""An orientation for IMUs that publish none: the Madgwick filter of imu_filter_madgwick (robot-side:
Python 3.8, numpy only).  The ROS-standard chain is imu_filter_madgwick → robot_localization; this is
its offline twin, and the node ``ros/madgwick_node.py`` runs this same code where the real package is
not installed (docs/models.md, "Orientation from a raw IMU").

Conventions (imu_filter_madgwick, humble, 6-DoF: ``use_mag: false``):

- q is the IMU frame's attitude in the world frame (body → world, ROS ``orientation``), world ENU
  (z up): at rest the specific force a (+g up, REP-145) points along Rᵀ(q)·ẑ.
- Initialisation from the first sample whose accelerometer reading is usable
  (``stateless_orientation``): roll and pitch from gravity, a yaw fixed by an arbitrary horizontal
  reference (no magnetometer: yaw is not observable and only integrates the gyro from there).
  That first sample is published with this attitude (its dt is 0); samples before it (free fall:
  no gravity direction) are not published (NaN rows here).
- One update per sample, dt = the stamp difference (or ``constant_dt`` > 0):
      q̇ = ½·q ⊗ (0, ω) − β·∇/‖∇‖,   ∇ = Jᵀ·f,   f(q) = Rᵀ(q)·ẑ − â   (â = a/‖a‖)
      q ← normalise(q + q̇·dt)
  with β = ``gain`` (default 0.1); a zero accelerometer reading skips the correction.
- ``zeta`` (gyro drift gain, default 0) is accepted and recorded like the node's parameter, and has
  no effect here: imu_filter_madgwick applies its drift compensation in the magnetometer update only,
  never in the 6-DoF one.
- Covariance: the node publishes ``orientation_stddev``² on the diagonal of orientation_covariance
  (its default orientation_stddev is 0).  ``ORIENTATION_STDDEV`` is ours, from the measured error.

Differences from the C++ node: float64 and an exact square root (the node computes in float32 with
a fast inverse square root, so its published quaternions have norms within ~0.2 % of 1; the
attitudes agree to ~1e-3 rad).  Magnetometer, ``world_frame`` ned/nwu, ``stateless``,
``remove_gravity_vector`` and the yaw offset are not provided (ENU and gravity only).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Tuple

import numpy as np

from .. import rotations
from ..errors import UserError

GAIN = 0.1                 # imu_filter_madgwick's default gain (β)
ZETA = 0.0                 # imu_filter_madgwick's default zeta
WORLD_FRAMES = ("enu",)
# The orientation's 1-σ per axis that we publish (rad): 0.015 rad = 0.86°, just above the largest roll or
# pitch RMS error measured on the terrain scenario's IMU at gain 0.1 (0.83°, benchmarks/madgwick_error.py;
# docs/models.md, "Orientation from a raw IMU").  imu_filter_madgwick's own default is 0.
ORIENTATION_STDDEV = 0.015

Quaternion = Tuple[float, float, float, float]  # (w, x, y, z) inside this module


def check_parameters(gain: float, zeta: float, world_frame: str, orientation_stddev: float,
                     source: str = "madgwick") -> None:
    """The node's parameter ranges: gain in [0, 1], zeta in [−1, 1], orientation_stddev in [0, 1]."""
    for name, value, low, high in (("gain", gain, 0.0, 1.0), ("zeta", zeta, -1.0, 1.0),
                                   ("orientation_stddev", orientation_stddev, 0.0, 1.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise UserError(f"{source}: {name}: expected a number in [{low:g}, {high:g}], got {value!r}")
    if world_frame not in WORLD_FRAMES:
        raise UserError(f"{source}: world_frame: only {', '.join(WORLD_FRAMES)} (REP-103) is provided, "
                        f"got {world_frame!r}")


def orientation_covariance(stddev: float = ORIENTATION_STDDEV) -> np.ndarray:
    """The 9 row-major entries of orientation_covariance the node publishes: stddev² on the diagonal."""
    out = np.zeros(9)
    out[[0, 4, 8]] = float(stddev) ** 2
    return out


def stateless_orientation(accel) -> Optional[Quaternion]:
    """The node's initial attitude (w, x, y, z) from one accelerometer reading, or None (free fall).

    Up A = the reading; an arbitrary reference E not parallel to it — (a_y, a_x, 0) when |a_x| or |a_y|
    exceeds 0.1, else (0, a_z, a_y) when |a_z| does; east H = E × A (None when ‖H‖ < 1e-7), north
    M = Â × Ĥ.  The world axes seen in the IMU frame are (Ĥ, M, Â), i.e. the columns of R(q)ᵀ.
    """
    ax, ay, az = (float(v) for v in accel)
    if abs(ax) > 0.1 or abs(ay) > 0.1:
        reference = (ay, ax, 0.0)
    elif abs(az) > 0.1:
        reference = (0.0, az, ay)
    else:
        return None
    up = np.array([ax, ay, az])
    east = np.cross(reference, up)
    norm = float(np.linalg.norm(east))
    if norm < 1e-7:
        return None
    east /= norm
    up /= np.linalg.norm(up)
    north = np.cross(up, east)
    world_to_imu = np.column_stack([east, north, up])  # R(q)ᵀ

    x, y, z, w = rotations.from_matrix(world_to_imu.T)
    return float(w), float(x), float(y), float(z)


def madgwick_step(q: Quaternion, gyro, accel, dt: float, gain: float) -> Quaternion:
    """One 6-DoF update of the attitude q = (w, x, y, z) (module docstring's equations)."""
    w, x, y, z = q
    gx, gy, gz = (float(v) for v in gyro)
    ax, ay, az = (float(v) for v in accel)
    # q̇ from the gyro: ½·q ⊗ (0, ω)
    dw = 0.5 * (-x * gx - y * gy - z * gz)
    dx = 0.5 * (w * gx + y * gz - z * gy)
    dy = 0.5 * (w * gy - x * gz + z * gx)
    dz = 0.5 * (w * gz + x * gy - y * gx)
    norm_a = math.sqrt(ax * ax + ay * ay + az * az)
    if norm_a > 0.0:
        ax, ay, az = ax / norm_a, ay / norm_a, az / norm_a
        # f = Rᵀ(q)·ẑ − â: the predicted direction of "up" in the IMU frame minus the measured one
        f0 = 2.0 * (x * z - w * y) - ax
        f1 = 2.0 * (w * x + y * z) - ay
        f2 = 1.0 - 2.0 * (x * x + y * y) - az
        # ∇ = Jᵀ·f, J = ∂f/∂(w, x, y, z)
        sw = -2.0 * y * f0 + 2.0 * x * f1
        sx = 2.0 * z * f0 + 2.0 * w * f1 - 4.0 * x * f2
        sy = -2.0 * w * f0 + 2.0 * z * f1 - 4.0 * y * f2
        sz = 2.0 * x * f0 + 2.0 * y * f1
        norm_s = math.sqrt(sw * sw + sx * sx + sy * sy + sz * sz)
        if norm_s > 0.0:
            dw -= gain * sw / norm_s
            dx -= gain * sx / norm_s
            dy -= gain * sy / norm_s
            dz -= gain * sz / norm_s
    w, x, y, z = w + dw * dt, x + dx * dt, y + dy * dt, z + dz * dt
    norm_q = math.sqrt(w * w + x * x + y * y + z * z)
    return w / norm_q, x / norm_q, y / norm_q, z / norm_q


class MadgwickFilter:
    """The filter of one IMU stream, sample by sample (the node's callback): ``update`` returns the
    published orientation (x, y, z, w), or None while no gravity direction was seen yet."""

    def __init__(self, gain: float = GAIN, zeta: float = ZETA, world_frame: str = "enu",
                 constant_dt: float = 0.0, source: str = "madgwick"):
        check_parameters(gain, zeta, world_frame, 0.0, source)
        if not (constant_dt >= 0.0 and math.isfinite(constant_dt)):
            raise UserError(f"{source}: constant_dt: expected a number of seconds >= 0, got {constant_dt!r}")
        self.gain = float(gain)
        self.zeta = float(zeta)
        self.constant_dt = float(constant_dt)
        self.q: Optional[Quaternion] = None
        self.last_t = 0.0

    def update(self, t: float, accel, gyro) -> Optional[Tuple[float, float, float, float]]:
        if self.q is None:
            start = stateless_orientation(accel)
            if start is None:
                return None
            self.q = start
            self.last_t = float(t)
        dt = self.constant_dt if self.constant_dt > 0.0 else float(t) - self.last_t
        self.last_t = float(t)
        self.q = madgwick_step(self.q, gyro, accel, dt, self.gain)
        w, x, y, z = self.q
        return x, y, z, w


def madgwick_orientation(t, accel, gyro, gain: float = GAIN, zeta: float = ZETA, world_frame: str = "enu",
                         constant_dt: float = 0.0) -> np.ndarray:
    """(N, 4) orientations x, y, z, w of an IMU stream (t s, accel m/s² +g up at rest, gyro rad/s, in
    the IMU frame), as imu_filter_madgwick publishes them; NaN rows before the first usable
    accelerometer reading (the node publishes nothing there)."""
    t = np.asarray(t, dtype=float)
    accel = np.asarray(accel, dtype=float)
    gyro = np.asarray(gyro, dtype=float)
    if accel.shape != (len(t), 3) or gyro.shape != (len(t), 3):
        raise UserError(f"madgwick: accel {accel.shape} and gyro {gyro.shape} must be ({len(t)}, 3)")
    if not (np.isfinite(t).all() and np.isfinite(accel).all() and np.isfinite(gyro).all()):
        raise UserError("madgwick: t, accel and gyro must be finite")
    flt = MadgwickFilter(gain, zeta, world_frame, constant_dt)
    out = np.full((len(t), 4), np.nan)
    for i, (ti, a, g) in enumerate(zip(t.tolist(), accel.tolist(), gyro.tolist())):
        q = flt.update(ti, a, g)
        if q is not None:
            out[i] = q
    return out


def fill_orientation(samples, gain: float = GAIN, zeta: float = ZETA,
                     orientation_stddev: float = ORIENTATION_STDDEV, world_frame: str = "enu"):
    """``samples`` (an ``ImuSamples`` stream without an orientation, e.g. a raw IMU read from a bag) with
    the Madgwick orientation and its covariance filled in, as imu_filter_madgwick republishes
    imu/data_raw on imu/data; samples before the first usable accelerometer reading keep "not
    provided" (identity, covariance[0] = −1)."""
    check_parameters(gain, zeta, world_frame, orientation_stddev)
    q = madgwick_orientation(np.asarray(samples.stamp_ns, dtype=np.int64) / 1e9, samples.linear_acceleration,
                             samples.angular_velocity, gain, zeta, world_frame)
    published = np.isfinite(q).all(axis=1)
    not_provided = np.zeros(9)
    not_provided[0] = -1.0
    orientation = np.where(published[:, None], q, [0.0, 0.0, 0.0, 1.0])
    covariance = np.where(published[:, None], orientation_covariance(orientation_stddev), not_provided)
    return dataclasses.replace(samples, orientation=orientation, orientation_covariance=covariance)
