"""Frames of imported drives: everything into REP-103 (ENU world, FLU body) and REP-145 (specific force).

- ``FRD_TO_FLU``: forward-right-down axes → forward-left-up (180° about x: y and z change sign); the
  attitude of an FRD body becomes that of its FLU twin by q_w←FLU = q_w←FRD ⊗ q_FRD←FLU.
- ``truth_from_ecef`` / ``truth_from_lla`` / ``truth_from_enu``: a reference trajectory (position and
  velocity — or poses only, whose velocity comes from ``vehicle.pose_velocity`` —, optionally attitude
  and body rates) → ``GroundTruth`` in the ENU frame at a datum.  Missing
  attitude: planar, yaw along the horizontal velocity (``truth.bag`` does the same for INS velocity-only
  truth); missing rates: from the smoothed attitude; specific force from the smoothed velocity derivative
  (the same zero-phase differentiator as every truth adapter, ``truth.bag.smooth_derivative``).
- ``vehicle_frame``: the rotation from a device's body frame to the vehicle frame (x along the direction
  of travel, z up on average) — a car does not slide sideways, so its velocity lies along its x axis.
- ``estimate_mounting``: the rotation of an IMU's axes in base_link from the drive itself (Wahba's
  problem, solved by SVD): the low-passed IMU specific force and rates against the truth's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import geodesy, rotations
from ..errors import UserError
from ..truth import GroundTruth
from ..truth.bag import planar_attitude, smooth_body_rates, smooth_derivative, zero_phase_lowpass
from .vehicle import COLUMN_NOISE_CUTOFF_HZ, pose_velocity, white_noise

FRD_TO_FLU = np.array([1.0, -1.0, -1.0])     # component-wise: (x, y, z)_FRD → (x, −y, −z)_FLU
Q_FRD_FLU = np.array([1.0, 0.0, 0.0, 0.0])    # 180° about x (xyzw)
DEFAULT_CUTOFF_HZ = 5.0   # the truth adapters' differentiator cut-off (docs/bags.md)
MIN_HEADING_SPEED = 0.2   # m/s: below it a velocity heading is not trusted (truth.bag's default)


def frd_to_flu(vectors) -> np.ndarray:
    """(N, 3) FRD components → FLU components."""
    return np.asarray(vectors, dtype=float) * FRD_TO_FLU


def attitude_frd_to_flu(q_world_frd) -> np.ndarray:
    """Attitude of an FRD body → attitude of the same body with FLU axes."""
    return rotations.multiply(q_world_frd, Q_FRD_FLU)


def enu_axes(datum) -> np.ndarray:
    """Rows: the E, N, U unit vectors in ECEF at ``datum`` (enu = R·(ecef − ecef0))."""
    return geodesy.enu_rotation(geodesy.as_datum(datum))


def datum_of_ecef(position_ecef) -> geodesy.Datum:
    """The geodetic point (WGS-84, ellipsoidal height) of one ECEF position."""
    lat, lon, height = geodesy.ecef_to_geodetic(np.asarray(position_ecef, dtype=float))
    return geodesy.Datum(float(lat), float(lon), float(height))


def _q_enu_ecef(datum) -> np.ndarray:
    return rotations.from_matrix(enu_axes(datum))


def build_truth(t, position, velocity, orientation=None, angular_velocity=None, source: str = "truth",
                cutoff_hz: float = DEFAULT_CUTOFF_HZ, measured: dict | None = None) -> GroundTruth:
    """``GroundTruth`` from ENU position/velocity (+ optional body→ENU attitude and body rates).

    Without velocity (None: a pose-only truth): positions and velocity from the low-passed poses
    (``vehicle.pose_velocity``); its velocity noise estimate goes into ``measured``.  Without
    attitude: planar (roll = pitch = 0, yaw along the horizontal velocity, held below 0.2 m/s).
    Without rates: ω from the smoothed attitude.  Specific force: R_bwᵀ·(dv/dt + g·ẑ) with dv/dt from
    the zero-phase differentiator (no lag).
    """
    t = np.asarray(t, dtype=float)
    measured = {} if measured is None else measured
    measured["attitude_given"] = orientation is not None
    if velocity is None:
        position, velocity, noise = pose_velocity(t, position)
        measured["velocity_source"] = "smoothed poses"
    else:
        velocity = np.asarray(velocity, dtype=float)
        noise = white_noise(t, velocity[:, :2], COLUMN_NOISE_CUTOFF_HZ)
        measured["velocity_source"] = "columns"
    measured["velocity_noise_mps"] = round(noise, 4)
    if orientation is None:
        orientation, planar_rates = planar_attitude(t, velocity, MIN_HEADING_SPEED, cutoff_hz, source)
        if angular_velocity is None:
            angular_velocity = planar_rates
    else:
        orientation = rotations.normalize(orientation)
        if angular_velocity is None:
            angular_velocity = smooth_body_rates(t, orientation, cutoff_hz)
    acceleration = smooth_derivative(t, velocity, cutoff_hz)
    truth = GroundTruth.from_kinematics(t, position, orientation, velocity, angular_velocity, acceleration)
    return truth.validate(source)


def truth_from_ecef(t, position_ecef, velocity_ecef, q_ecef_body=None, angular_velocity=None,
                    datum=None, source: str = "truth", cutoff_hz: float = DEFAULT_CUTOFF_HZ,
                    measured: dict | None = None):
    """(GroundTruth in ENU at ``datum``, datum) from ECEF position/velocity (+ body→ECEF attitude).

    The datum defaults to the first position (WGS-84, ellipsoidal height)."""
    position_ecef = np.asarray(position_ecef, dtype=float)
    datum = datum_of_ecef(position_ecef[0]) if datum is None else geodesy.as_datum(datum)
    axes = enu_axes(datum)
    origin = geodesy.geodetic_to_ecef(datum.lat, datum.lon, datum.alt)
    position = (position_ecef - origin) @ axes.T
    velocity = None if velocity_ecef is None else np.asarray(velocity_ecef, dtype=float) @ axes.T
    orientation = None
    if q_ecef_body is not None:
        orientation = rotations.multiply(_q_enu_ecef(datum), rotations.normalize(q_ecef_body))
    truth = build_truth(t, position, velocity, orientation, angular_velocity, source, cutoff_hz, measured)
    return truth, datum


def local_enu_to_ecef_quaternions(latitude, longitude) -> np.ndarray:
    """q_ECEF←ENU(lat, lon) of the local ENU frame at each point (N, 4)."""
    lat = np.asarray(latitude, dtype=float)
    lon = np.asarray(longitude, dtype=float)
    matrices = np.stack([enu_axes(geodesy.Datum(float(a), float(b), 0.0)).T for a, b in zip(lat, lon)])
    return rotations.from_matrix(matrices)


def truth_from_lla(t, latitude, longitude, height, velocity_enu, q_enu_body=None, angular_velocity=None,
                   datum=None, source: str = "truth", cutoff_hz: float = DEFAULT_CUTOFF_HZ,
                   measured: dict | None = None):
    """(GroundTruth, datum) from geodetic positions (deg, deg, ellipsoidal m), velocity in the local
    ENU frame of each point and attitude in that local ENU frame (rotated to the datum's ENU frame:
    they differ by the meridian convergence, ≈ 1e-5 rad per 100 m)."""
    ecef = geodesy.geodetic_to_ecef(np.asarray(latitude, dtype=float), np.asarray(longitude, dtype=float),
                                    np.asarray(height, dtype=float))
    q_ecef_local = local_enu_to_ecef_quaternions(latitude, longitude)
    velocity_ecef = None if velocity_enu is None else rotations.rotate(q_ecef_local, velocity_enu)
    q_ecef_body = None if q_enu_body is None else rotations.multiply(q_ecef_local, q_enu_body)
    return truth_from_ecef(t, ecef, velocity_ecef, q_ecef_body, angular_velocity, datum, source, cutoff_hz,
                           measured)


def truth_from_enu(t, position_enu, velocity_enu, q_enu_body=None, angular_velocity=None, datum=None,
                   source: str = "truth", cutoff_hz: float = DEFAULT_CUTOFF_HZ, measured: dict | None = None):
    """(GroundTruth, datum) from positions already in the ENU frame at ``datum`` (required)."""
    if datum is None:
        raise UserError(f"{source}: positions in ENU need the datum they are relative to "
                        "(--datum LAT LON ALT)")
    truth = build_truth(t, position_enu, velocity_enu, q_enu_body, angular_velocity, source, cutoff_hz,
                        measured)
    return truth, geodesy.as_datum(datum)


# --------------------------------------------------------------------------------------- mounting
@dataclass(frozen=True)
class Mounting:
    """A constant rotation R_body←sensor (the sensor's axes in the body frame) and how it was found
    (``vehicle_frame`` returns R_device←vehicle: the vehicle's axes in the device body).

    rpy: (roll, pitch, yaw) rad with R = Rz(yaw)·Ry(pitch)·Rx(roll), the order of a static TF and of an
    IMU model's ``mounting_rpy``.  ``residual_before`` / ``residual_after``: RMS (m/s²) of the specific
    force residual against the truth with the identity and with this rotation (``estimate_mounting``)."""

    matrix: np.ndarray
    method: str
    residual_before: float = float("nan")
    residual_after: float = float("nan")
    note: str = ""

    @property
    def quaternion(self) -> np.ndarray:
        return rotations.from_matrix(self.matrix)

    @property
    def rpy(self) -> list:
        return [float(v) for v in rotations.to_rpy(self.quaternion)]

    @property
    def angle_deg(self) -> float:
        """Total rotation angle, degrees."""
        cos = np.clip((np.trace(self.matrix) - 1.0) / 2.0, -1.0, 1.0)
        return float(np.degrees(np.arccos(cos)))

    def record(self) -> dict:
        out = {"method": self.method, "rpy_rad": [round(v, 6) for v in self.rpy],
               "rpy_deg": [round(float(np.degrees(v)), 3) for v in self.rpy],
               "angle_deg": round(self.angle_deg, 3)}
        if np.isfinite(self.residual_before):
            out["specific_force_residual_rms_m_s2"] = {"identity": round(self.residual_before, 4),
                                                       "estimated": round(self.residual_after, 4)}
        if self.note:
            out["note"] = self.note
        return out


IDENTITY = Mounting(np.eye(3), "identity (sensor axes = base_link axes)")


def vehicle_frame(truth: GroundTruth, min_speed: float = 2.0, source: str = "truth") -> Mounting:
    """R_body←vehicle for a truth whose body is a device in the car (not the car itself).

    Vehicle x: the mean direction of the body-frame velocity while faster than ``min_speed`` (a car
    does not slide sideways: its velocity lies along its x axis, road grade included).  Vehicle z: the
    mean body-frame up direction, made orthogonal to x (roads are not banked on average).  y = z × x.
    """
    speed = np.linalg.norm(truth.velocity, axis=1)
    moving = speed > min_speed
    if moving.sum() < 10:
        raise UserError(f"{source}: the vehicle frame needs the car moving faster than {min_speed} m/s "
                        f"for at least 10 samples; only {int(moving.sum())}")
    body_velocity = rotations.rotate_inverse(truth.orientation[moving], truth.velocity[moving])
    x = np.mean(body_velocity / np.linalg.norm(body_velocity, axis=1, keepdims=True), axis=0)
    x /= np.linalg.norm(x)
    up = np.mean(rotations.rotate_inverse(truth.orientation, np.array([0.0, 0.0, 1.0])), axis=0)
    z = up - np.dot(up, x) * x
    z /= np.linalg.norm(z)
    y = np.cross(z, x)
    return Mounting(np.column_stack([x, y, z]), "vehicle frame: x = mean direction of travel, "
                                                "z = mean up (orthogonal to x)")


def rotate_body(truth: GroundTruth, mounting: Mounting, source: str = "truth",
                cutoff_hz: float = DEFAULT_CUTOFF_HZ) -> GroundTruth:
    """The same trajectory with the body frame turned by ``mounting`` (R_old←new): attitude
    q_w←new = q_w←old ⊗ q_old←new, rates in the new axes, specific force recomputed."""
    orientation = rotations.multiply(truth.orientation, mounting.quaternion)
    rates = truth.angular_velocity @ mounting.matrix   # (Rᵀ·ω)ᵀ = ωᵀ·R
    acceleration = smooth_derivative(truth.t, truth.velocity, cutoff_hz)
    return GroundTruth.from_kinematics(truth.t, truth.position, orientation, truth.velocity, rates,
                                       acceleration).validate(source)


def wahba(sensor_vectors, body_vectors) -> np.ndarray:
    """R minimising Σ |b_i − R·s_i|² over rotations (det +1): Kabsch/Wahba by SVD of H = Σ s_i b_iᵀ."""
    h = np.asarray(sensor_vectors, dtype=float).T @ np.asarray(body_vectors, dtype=float)
    u, _s, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T


def estimate_mounting(truth: GroundTruth, t, accel, gyro, source: str = "imu",
                      cutoff_hz: float = DEFAULT_CUTOFF_HZ) -> Mounting:
    """R_base_link←imu from the drive: the IMU's low-passed specific force and rates (the truth's
    bandwidth) against the truth's at the same instants, solved as Wahba's problem.

    Gravity fixes roll and pitch; yaw comes from the horizontal accelerations (braking, cornering)
    and is only as good as they are strong: under 0.3 m/s² RMS the estimate says so in its note.
    The rates are weighted so their dynamic RMS equals the specific force's.
    """
    t = np.asarray(t, dtype=float)
    inside = (t >= truth.t[0]) & (t <= truth.t[-1])
    if inside.sum() < 100:
        raise UserError(f"{source}: --estimate-mounting needs at least 100 IMU samples inside the truth "
                        "span, "
                        f"got {int(inside.sum())}")
    t = t[inside]
    reference = truth.interpolate(t)
    f_s = zero_phase_lowpass(t, np.asarray(accel, dtype=float)[inside], cutoff_hz)
    w_s = zero_phase_lowpass(t, np.asarray(gyro, dtype=float)[inside], cutoff_hz)
    f_b, w_b = reference.specific_force, reference.angular_velocity
    dynamic = np.sqrt(np.mean(np.sum((f_b - f_b.mean(axis=0)) ** 2, axis=1)))
    rate_rms = np.sqrt(np.mean(np.sum(w_b ** 2, axis=1)))
    weight = dynamic / rate_rms if rate_rms > 1e-6 else 0.0
    matrix = wahba(np.vstack([f_s, weight * w_s]), np.vstack([f_b, weight * w_b]))
    before = float(np.sqrt(np.mean(np.sum((f_s - f_b) ** 2, axis=1))))
    after = float(np.sqrt(np.mean(np.sum((f_s @ matrix.T - f_b) ** 2, axis=1))))
    horizontal = float(np.sqrt(np.mean(np.sum((f_b[:, :2] - f_b[:, :2].mean(axis=0)) ** 2, axis=1))))
    note = "" if horizontal >= 0.3 else (
        f"the drive's horizontal accelerations are weak ({horizontal:.2f} m/s² RMS): the yaw of the "
        "mounting is poorly determined")
    return Mounting(matrix, "estimated: Wahba fit of the IMU's specific force and rates to the truth's",
                    before, after, note)
