"""robot_localization's 15-state EKF core (humble 3.5.2: ekf.cpp, filter_base.cpp), time in int64 ns.

State (world frame for pose, body frame for rates):
``0 x, 1 y, 2 z, 3 roll, 4 pitch, 5 yaw, 6 vx, 7 vy, 8 vz, 9 vroll, 10 vpitch, 11 vyaw, 12 ax, 13 ay, 14 az``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .params import STATE_SIZE, EkfParams

ANGLE_INDICES = (3, 4, 5)
PI = math.pi
TAU = 2.0 * math.pi


def clamp_rotation(angle: float) -> float:
    """filter_utilities::clampRotation (3.5.2): subtract 2π while > π, add 2π while < −π; ±π unchanged."""
    while angle > PI:
        angle -= TAU
    while angle < -PI:
        angle += TAU
    return angle


@dataclass
class Measurement:
    """One enqueued sub-measurement (ros_filter.cpp enqueueMeasurement).

    Ordered by stamp **only** so heapq serves ties in the same order as std::priority_queue.
    """

    stamp_ns: int
    topic: str
    z: np.ndarray                # (15,) measurement in state layout
    covariance: np.ndarray       # (15, 15)
    update: np.ndarray           # (15,) bool
    threshold: float = math.inf  # Mahalanobis threshold in sigmas
    latest_control: np.ndarray = field(default_factory=lambda: np.zeros(6))
    latest_control_ns: int = 0

    def __lt__(self, other: Measurement) -> bool:
        return self.stamp_ns < other.stamp_ns


def transition(state: np.ndarray, delta: float):
    """(F, J): the transfer function F (x⁺ = F·x) and its Jacobian J from the current angles/rates.

    p⁺ = p + R·(vΔ + ½aΔ²) with R = Rz(ψ)Ry(θ)Rx(φ); Euler rates from body rates; v⁺ = v + aΔ.
    J = F with the analytic partials of p⁺ and of the Euler angles w.r.t. (φ, θ, ψ).
    """
    roll, pitch, yaw = state[3], state[4], state[5]
    sr, cr = math.sin(roll), math.cos(roll)
    sp, cp = math.sin(pitch), math.cos(pitch)
    sy, cy = math.sin(yaw), math.cos(yaw)
    cpi = 1.0 / cp
    tp = sp * cpi
    d = delta
    half_d2 = 0.5 * d * d
    # R rows (body→world)
    r = ((cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr),
         (sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr),
         (-sp, cp * sr, cp * cr))
    f = np.eye(STATE_SIZE)
    for i in range(3):
        for j in range(3):
            f[i, 6 + j] = r[i][j] * d
            f[i, 12 + j] = 0.5 * f[i, 6 + j] * d
    f[3, 9] = d
    f[3, 10] = sr * tp * d
    f[3, 11] = cr * tp * d
    f[4, 10] = cr * d
    f[4, 11] = -sr * d
    f[5, 10] = sr * cpi * d
    f[5, 11] = cr * cpi * d
    f[6, 12] = f[7, 13] = f[8, 14] = d

    vx, vy, vz = state[6], state[7], state[8]
    wy, wz = state[10], state[11]
    ax, ay, az = state[12], state[13], state[14]

    def dpos(c):  # coefficient row applied to v·Δ + ½a·Δ²
        return (c[0] * vx + c[1] * vy + c[2] * vz) * d + (c[0] * ax + c[1] * ay + c[2] * az) * half_d2

    j = f.copy()
    # ∂R/∂roll, ∂R/∂pitch, ∂R/∂yaw rows
    j[0, 3] = dpos((0.0, cy * sp * cr + sy * sr, -cy * sp * sr + sy * cr))
    j[0, 4] = dpos((-cy * sp, cy * cp * sr, cy * cp * cr))
    j[0, 5] = dpos((-sy * cp, -sy * sp * sr - cy * cr, -sy * sp * cr + cy * sr))
    j[1, 3] = dpos((0.0, sy * sp * cr - cy * sr, -sy * sp * sr - cy * cr))
    j[1, 4] = dpos((-sy * sp, sy * cp * sr, sy * cp * cr))
    j[1, 5] = dpos((cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr))
    j[2, 3] = dpos((0.0, cp * cr, -cp * sr))
    j[2, 4] = dpos((-cp, -sp * sr, -sp * cr))
    j[3, 3] = 1.0 + (cr * tp * wy - sr * tp * wz) * d
    j[3, 4] = (cpi * cpi * sr * wy + cpi * cpi * cr * wz) * d
    j[4, 3] = (-sr * wy - cr * wz) * d
    j[5, 3] = (cr * cpi * wy - sr * cpi * wz) * d
    j[5, 4] = (sr * tp * cpi * wy + cr * tp * cpi * wz) * d
    return f, j


def control_acceleration(state_velocity: float, control: float, accel_limit: float, accel_gain: float,
                         decel_limit: float, decel_gain: float) -> float:
    """FilterBase::computeControlAcceleration: a = clamp(gain·(u − s), ±limit), with the deceleration
    limit/gain when |set-point| < |s| (set-point u if |u − s| ≤ |u| + 0.01, else 0)."""
    error = control - state_velocity
    same_sign = abs(error) <= abs(control) + 0.01
    set_point = control if same_sign else 0.0
    if abs(set_point) < abs(state_velocity):
        limit, gain = decel_limit, decel_gain
    else:
        limit, gain = accel_limit, accel_gain
    return min(max(gain * error, -limit), limit)


class Ekf:
    """ekf.cpp + filter_base.cpp: predict, correct, processMeasurement (no smoothing/history)."""

    def __init__(self, params: EkfParams):
        self.params = params
        self.state = np.array(params.initial_state, dtype=float)
        self.covariance = np.array(params.initial_estimate_covariance, dtype=float)
        self.process_noise = np.array(params.process_noise_covariance, dtype=float)
        self.initialized = False
        self.last_measurement_ns = 0
        self.sensor_timeout_ns = int(round(params.sensor_timeout * 1e9))
        self.use_control = params.use_control
        self.control_update = np.array(params.control_config, dtype=bool)
        self.control_timeout_ns = int(round(params.control_timeout * 1e9))
        self.latest_control = np.zeros(6)
        self.latest_control_ns = 0
        self._identity = np.eye(STATE_SIZE)

    # --- control -----------------------------------------------------------------------------------
    def set_control(self, control, stamp_ns: int) -> None:
        self.latest_control = np.array(control, dtype=float)
        self.latest_control_ns = int(stamp_ns)

    def _control_accelerations(self, reference_ns: int) -> np.ndarray:
        accel = np.zeros(6)
        if not self.use_control:
            return accel
        if reference_ns - self.latest_control_ns >= self.control_timeout_ns:
            self.latest_control = np.zeros(6)  # timed out: upstream zeroes the control
        p = self.params
        for i in range(6):
            if self.control_update[i]:
                accel[i] = control_acceleration(self.state[6 + i], self.latest_control[i],
                                                p.acceleration_limits[i], p.acceleration_gains[i],
                                                p.deceleration_limits[i], p.deceleration_gains[i])
        return accel

    # --- predict -----------------------------------------------------------------------------------
    def predict(self, reference_ns: int, delta_ns: int) -> None:
        """Ekf::predict: F, J from the pre-update state; control; x ← F·x; wrap; P ← J P Jᵀ + Δ·Q."""
        delta = delta_ns * 1e-9
        x = self.state
        f, j = transition(x, delta)
        q = self.process_noise
        if self.params.dynamic_process_noise_covariance:
            # Q′: top-left 6×6 pose block scaled by ‖(vx, vy, vz, vroll, vpitch, vyaw)‖².
            q = q.copy()
            speed2 = float(np.dot(x[6:12], x[6:12]))
            q[:6, :6] *= speed2
        accel = self._control_accelerations(reference_ns)
        if self.use_control:
            x[9:12] += accel[3:6] * delta
            for i in range(3):
                if self.control_update[i]:
                    x[12 + i] = accel[i]
        self.state = f @ x
        self.wrap_state_angles()
        self.covariance = j @ self.covariance @ j.T + delta * q

    def wrap_state_angles(self) -> None:
        for i in ANGLE_INDICES:
            self.state[i] = clamp_rotation(self.state[i])

    # --- correct -----------------------------------------------------------------------------------
    def correct(self, m: Measurement) -> bool:
        """Ekf::correct.  Returns True if the update was applied (False: rejected or empty)."""
        flagged = np.flatnonzero(m.update)
        idx = flagged[np.isfinite(m.z[flagged])]  # NaN / inf entries are excluded
        if idx.size == 0:
            return False
        p = self.covariance
        r = m.covariance[np.ix_(idx, idx)].copy()
        diag = np.abs(np.diagonal(r))  # negative variances: absolute value
        diag = np.where(diag < 1e-9, 1e-9, diag)  # the only floor: diagonal below 1e-9 -> 1e-9
        r[np.diag_indices_from(r)] = diag
        s = p[np.ix_(idx, idx)] + r
        s_inv = np.linalg.inv(s)
        k = p[:, idx] @ s_inv
        innovation = m.z[idx] - self.state[idx]
        for n, i in enumerate(idx):
            if 3 <= i <= 5:
                value = innovation[n]
                while value < -PI:
                    value += TAU
                while value > PI:
                    value -= TAU
                innovation[n] = value
        # Mahalanobis gate: reject when d² ≥ thr² (thr in sigmas; DBL_MAX → never)
        d2 = float(innovation @ s_inv @ innovation)
        threshold2 = m.threshold * m.threshold
        if d2 >= threshold2:
            return False
        self.state = self.state + k @ innovation
        gain_residual = self._identity.copy()
        gain_residual[:, idx] -= k
        self.covariance = gain_residual @ p @ gain_residual.T + k @ r @ k.T
        self.wrap_state_angles()
        return True

    # --- processMeasurement ------------------------------------------------------------------------
    def process_measurement(self, m: Measurement) -> str:
        """FilterBase::processMeasurement.  Returns 'init', 'accepted' or 'rejected'."""
        if not self.initialized:
            # First measurement: copy flagged entries and the raw covariance (no 1e-9 floor).
            upd = m.update
            self.state = np.where(upd, m.z, self.state)
            both = np.outer(upd, upd)
            self.covariance = np.where(both, m.covariance, self.covariance)
            self.initialized = True
            self.last_measurement_ns = m.stamp_ns
            return "init"
        delta_ns = m.stamp_ns - self.last_measurement_ns
        if delta_ns > 0:
            self.predict(m.stamp_ns, delta_ns)
        accepted = self.correct(m)
        if delta_ns >= 0:
            self.last_measurement_ns = m.stamp_ns
        return "accepted" if accepted else "rejected"
