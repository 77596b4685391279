"""robot_localization's 15-state EKF core (humble 3.5.2: ekf.cpp, filter_base.cpp), time in int64 ns.

State (world frame for pose, body frame for rates):
``0 x, 1 y, 2 z, 3 roll, 4 pitch, 5 yaw, 6 vx, 7 vy, 8 vz, 9 vroll, 10 vpitch, 11 vyaw, 12 ax, 13 ay, 14 az``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import kernels
from .kernels import clamp_rotation, transition  # noqa: F401 - re-exported
from .params import EkfParams

ANGLE_INDICES = (3, 4, 5)
PI = math.pi
TAU = 2.0 * math.pi


@dataclass
class Measurement:
    """One enqueued sub-measurement (ros_filter.cpp enqueueMeasurement).

    Ordered by stamp **only** so heapq serves ties in the same order as std::priority_queue.
    """

    stamp_ns: int
    topic: str
    z: np.ndarray  # (15,) measurement in state layout
    covariance: np.ndarray  # (15, 15)
    update: np.ndarray  # (15,) bool
    threshold: float = math.inf  # Mahalanobis threshold in sigmas
    latest_control: np.ndarray = field(default_factory=lambda: np.zeros(6))
    latest_control_ns: int = 0

    def __lt__(self, other: Measurement) -> bool:
        return self.stamp_ns < other.stamp_ns


def control_acceleration(
    state_velocity: float,
    control: float,
    accel_limit: float,
    accel_gain: float,
    decel_limit: float,
    decel_gain: float,
) -> float:
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
                accel[i] = control_acceleration(
                    self.state[6 + i],
                    self.latest_control[i],
                    p.acceleration_limits[i],
                    p.acceleration_gains[i],
                    p.deceleration_limits[i],
                    p.deceleration_gains[i],
                )
        return accel

    # --- predict -----------------------------------------------------------------------------------
    def predict(self, reference_ns: int, delta_ns: int) -> None:
        """Ekf::predict (kernels.predict); the control acceleration is computed from the pre-update state."""
        delta = delta_ns * 1e-9
        accel = self._control_accelerations(reference_ns)
        self.state, self.covariance = kernels.predict(
            self.state,
            self.covariance,
            self.process_noise,
            delta,
            self.params.dynamic_process_noise_covariance,
            accel,
            self.control_update,
            self.use_control,
        )

    def wrap_state_angles(self) -> None:
        for i in ANGLE_INDICES:
            self.state[i] = clamp_rotation(self.state[i])

    # --- correct -----------------------------------------------------------------------------------
    def correct(self, m: Measurement) -> bool:
        """Ekf::correct (kernels.correct).  Returns True if the update was applied."""
        applied, state, covariance = kernels.correct(
            self.state, self.covariance, m.z, m.covariance, m.update, m.threshold
        )
        if applied:
            self.state, self.covariance = state, covariance
        return applied

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


class Ukf(Ekf):
    """ukf.cpp: the same process model and node behaviour, unscented predict/correct (α, κ, β)."""

    def __init__(self, params: EkfParams):
        super().__init__(params)
        self.lam, self.state_weights, self.covar_weights = kernels.ukf_weights(
            params.ukf_alpha, params.ukf_kappa, params.ukf_beta
        )
        self.sigma_points = np.zeros((31, 15))  # upstream starts from zero sigma points
        self.uncorrected = True

    def predict(self, reference_ns: int, delta_ns: int) -> None:
        """Ukf::predict (kernels.ukf_predict).  prepareControl runs, but ukf.cpp applies no control term."""
        self._control_accelerations(reference_ns)
        self.state, self.covariance, self.sigma_points = kernels.ukf_predict(
            self.state,
            self.covariance,
            self.process_noise,
            delta_ns * 1e-9,
            self.params.dynamic_process_noise_covariance,
            self.lam,
            self.state_weights,
            self.covar_weights,
        )
        self.uncorrected = True

    def correct(self, m: Measurement) -> bool:
        applied, state, covariance, sigma = kernels.ukf_correct(
            self.state,
            self.covariance,
            self.sigma_points,
            not self.uncorrected,
            m.z,
            m.covariance,
            m.update,
            m.threshold,
            self.lam,
            self.state_weights,
            self.covar_weights,
        )
        self.sigma_points = sigma
        if applied:
            self.state, self.covariance = state, covariance
            self.uncorrected = False
        return applied


def make_filter(params: EkfParams) -> Ekf:
    """The filter ekf_node (filter_type ekf) or ukf_node (filter_type ukf) runs."""
    return Ukf(params) if params.filter_type == "ukf" else Ekf(params)
