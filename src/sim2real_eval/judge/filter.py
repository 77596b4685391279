"""robot_localization's 15-state EKF core (humble 3.5.2: ekf.cpp, filter_base.cpp), time in int64 ns.

State (world frame for pose, body frame for rates):
``0 x, 1 y, 2 z, 3 roll, 4 pitch, 5 yaw, 6 vx, 7 vy, 8 vz, 9 vroll, 10 vpitch, 11 vyaw, 12 ax, 13 ay, 14 az``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import engine, kernels
from .engine import control_acceleration  # noqa: F401 - re-exported
from .kernels import clamp_rotation, transition  # noqa: F401 - re-exported
from .params import EkfParams

ANGLE_INDICES = (3, 4, 5)
PI = math.pi
TAU = 2.0 * math.pi
OUTCOMES = ("init", "accepted", "rejected")


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


class Ekf:
    """ekf.cpp + filter_base.cpp: predict, correct, processMeasurement (no smoothing/history).

    A thin holder of the engine arrays (engine.py) so the node, the Judge's compiled loop and these
    methods share one state and one implementation."""

    def __init__(self, params: EkfParams):
        self.params = params
        self.x = np.array(params.initial_state, dtype=float)
        self.p = np.array(params.initial_estimate_covariance, dtype=float)
        self.sigma = np.zeros((31, 15))  # UKF sigma points (upstream starts from zeros)
        self.ints = np.zeros(engine.INTS_SIZE, dtype=np.int64)
        self.ints[engine.I_UNCORRECTED] = 1
        self.control = np.zeros(6)
        self.q = np.array(params.process_noise_covariance, dtype=float)
        self.control_update = np.array(params.control_config, dtype=bool)
        self.limits = np.array(
            [params.acceleration_limits, params.acceleration_gains, params.deceleration_limits,
             params.deceleration_gains], dtype=float)
        self.cfg_i = np.zeros(engine.CFG_I_SIZE, dtype=np.int64)
        self.cfg_i[engine.C_DYNAMIC] = bool(params.dynamic_process_noise_covariance)
        self.cfg_i[engine.C_USE_CONTROL] = bool(params.use_control)
        self.cfg_i[engine.C_CONTROL_TIMEOUT] = int(round(params.control_timeout * 1e9))
        self.cfg_i[engine.C_UKF] = params.filter_type == "ukf"
        self.cfg_i[engine.C_SENSOR_TIMEOUT] = int(round(params.sensor_timeout * 1e9))
        self.cfg_i[engine.C_PREDICT_NOW] = bool(params.predict_to_current_time)
        self.cfg_i[engine.C_PERMIT_CORRECTED] = bool(params.permit_corrected_publication)
        self.cfg_i[engine.C_PERIOD] = int(round(1e9 / params.frequency))
        self.cfg_i[engine.C_TWO_D] = bool(params.two_d_mode)
        self.cfg_i[engine.C_DISABLED] = bool(params.disabled_at_startup)
        self.cfg_f = np.zeros(engine.CFG_F_SIZE)
        self.cfg_f[engine.F_GRAVITY] = params.gravitational_acceleration
        self.weights = np.zeros((2, 31))
        if params.filter_type == "ukf":
            lam, state_weights, covar_weights = kernels.ukf_weights(
                params.ukf_alpha, params.ukf_kappa, params.ukf_beta
            )
            self.cfg_f[engine.F_LAMBDA] = lam
            self.weights[0], self.weights[1] = state_weights, covar_weights

    # --- state as attributes (views of the engine arrays) ------------------------------------------
    @property
    def state(self) -> np.ndarray:
        return self.x

    @state.setter
    def state(self, value) -> None:
        self.x[:] = value

    @property
    def covariance(self) -> np.ndarray:
        return self.p

    @covariance.setter
    def covariance(self, value) -> None:
        self.p[:, :] = value

    @property
    def initialized(self) -> bool:
        return bool(self.ints[engine.I_INITIALIZED])

    @initialized.setter
    def initialized(self, value: bool) -> None:
        self.ints[engine.I_INITIALIZED] = bool(value)

    @property
    def last_measurement_ns(self) -> int:
        return int(self.ints[engine.I_LAST_NS])

    @last_measurement_ns.setter
    def last_measurement_ns(self, value: int) -> None:
        self.ints[engine.I_LAST_NS] = value

    @property
    def use_control(self) -> bool:
        return bool(self.cfg_i[engine.C_USE_CONTROL])

    @use_control.setter
    def use_control(self, value: bool) -> None:
        self.cfg_i[engine.C_USE_CONTROL] = bool(value)

    @property
    def latest_control(self) -> np.ndarray:
        return self.control

    @property
    def latest_control_ns(self) -> int:
        return int(self.ints[engine.I_CONTROL_NS])

    @property
    def sensor_timeout_ns(self) -> int:
        return int(self.cfg_i[engine.C_SENSOR_TIMEOUT])

    @property
    def uncorrected(self) -> bool:
        return bool(self.ints[engine.I_UNCORRECTED])

    @uncorrected.setter
    def uncorrected(self, value: bool) -> None:
        self.ints[engine.I_UNCORRECTED] = bool(value)

    def engine_args(self) -> tuple:
        """The state and configuration arrays in engine.py's argument order."""
        return (self.x, self.p, self.sigma, self.ints, self.control, self.cfg_i, self.cfg_f, self.q,
                self.limits, self.control_update, self.weights)

    # --- control -----------------------------------------------------------------------------------
    def set_control(self, control, stamp_ns: int) -> None:
        self.control[:] = np.asarray(control, dtype=float)
        self.ints[engine.I_CONTROL_NS] = int(stamp_ns)

    # --- predict / correct / processMeasurement -----------------------------------------------------
    def predict(self, reference_ns: int, delta_ns: int) -> None:
        """Ekf::predict (Ukf::predict with filter_type ukf); the control acceleration comes from the
        pre-update state (ukf.cpp computes it but applies no control term)."""
        engine.filter_predict(*self.engine_args(), int(reference_ns), int(delta_ns))

    def wrap_state_angles(self) -> None:
        for i in ANGLE_INDICES:
            self.x[i] = clamp_rotation(self.x[i])

    def correct(self, m: Measurement) -> bool:
        """Ekf::correct (Ukf::correct).  Returns True if the update was applied."""
        return bool(engine.filter_correct(
            self.x, self.p, self.sigma, self.ints, self.cfg_i, self.cfg_f, self.weights,
            np.asarray(m.z, dtype=float), np.asarray(m.covariance, dtype=float),
            np.asarray(m.update, dtype=bool), float(m.threshold)))

    def process_measurement(self, m: Measurement) -> str:
        """FilterBase::processMeasurement.  Returns 'init', 'accepted' or 'rejected'."""
        outcome = engine.process_measurement(
            *self.engine_args(), int(m.stamp_ns), np.asarray(m.z, dtype=float),
            np.asarray(m.covariance, dtype=float), np.asarray(m.update, dtype=bool), float(m.threshold))
        return OUTCOMES[outcome]


class Ukf(Ekf):
    """ukf.cpp: the same process model and node behaviour, unscented predict/correct (α, κ, β)."""

    @property
    def lam(self) -> float:
        return float(self.cfg_f[engine.F_LAMBDA])

    @property
    def state_weights(self) -> np.ndarray:
        return self.weights[0]

    @property
    def covar_weights(self) -> np.ndarray:
        return self.weights[1]

    @property
    def sigma_points(self) -> np.ndarray:
        return self.sigma


def make_filter(params: EkfParams) -> Ekf:
    """The filter ekf_node (filter_type ekf) or ukf_node (filter_type ukf) runs."""
    return Ukf(params) if params.filter_type == "ukf" else Ekf(params)
