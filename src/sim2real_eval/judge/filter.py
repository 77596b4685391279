"""robot_localization's filter core (humble 3.5.2: filter_base.cpp, ekf.cpp, ukf.cpp), time in int64 ns.

Compiled: the control term, predict / correct (EKF or UKF), processMeasurement and the measurement
queue (heapq's algorithm on pool slots, compared by stamp only: the same tie order as libstdc++'s
std::priority_queue, tested).  ``Ekf`` / ``Ukf`` are Python holders of a FILTER_CONFIG and a
FILTER_STATE record (state.py) with the per-call API the tests use; ekf_node and the Judge's loop call
the same compiled functions on the same records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import kernels
from .compiled_cache import njit, overload
from .kernels import (  # noqa: F401 - transition: re-exported
    clamp_rotation,
    correct,
    predict,
    transition,
    ukf_correct,
    ukf_predict,
)
from .params import EkfParams
from .state import (
    ACCEPTED,
    FILTER_CONFIG,
    FILTER_STATE,
    FILTER_STATE_UKF,
    INIT,
    OUTCOMES,
    QUEUE_HEAD,
    QUEUE_SLOT,
    REJECTED,
    ROW,
    STATE_SIZE,
    VX,
    Queue,
    record,
    records,
)


@njit(cache=True)
def control_acceleration(state_velocity, control, accel_limit, accel_gain, decel_limit, decel_gain):
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


@njit(cache=True)
def control_accelerations(config, state, reference_ns):
    """prepareControl: a timed-out control (t − t_control ≥ control_timeout) is zeroed first."""
    accel = state.acceleration
    accel[:] = 0.0
    if not config.use_control:
        return accel
    if reference_ns - state.control_ns >= config.control_timeout_ns:
        state.control[:] = 0.0
    for i in range(6):
        if config.control_update[i]:
            accel[i] = control_acceleration(state.x[VX + i], state.control[i], config.acceleration_limits[i],
                                            config.acceleration_gains[i], config.deceleration_limits[i],
                                            config.deceleration_gains[i])
    return accel


@njit(cache=True)
def _ekf_predict(config, state, reference_ns, delta_ns):
    delta = delta_ns * 1e-9
    accel = control_accelerations(config, state, reference_ns)
    predict(state.x, state.p, config.process_noise, delta, config.dynamic_process_noise, accel,
            config.control_update, config.use_control, state)


@njit(cache=True)
def _ukf_predict(config, state, reference_ns, delta_ns):
    # computed (a timed-out control is zeroed), not applied
    control_accelerations(config, state, reference_ns)
    nx, n_p, sigma = ukf_predict(state.x, state.p, config.process_noise, delta_ns * 1e-9,
                                 config.dynamic_process_noise, config.lam, config.state_weights,
                                 config.covariance_weights)
    state.sigma[:, :] = sigma
    state.uncorrected = True
    state.x[:] = nx
    state.p[:, :] = n_p


@njit(cache=True)
def _ekf_correct(config, state, slot):
    return correct(state.x, state.p, slot.z, slot.covariance, slot.update, slot.threshold, state)


@njit(cache=True)
def _ukf_correct(config, state, slot):
    applied = ukf_correct(state.x, state.p, state.sigma, not state.uncorrected, slot.z, slot.covariance,
                          slot.update,
                          slot.threshold, config.lam, config.state_weights, config.covariance_weights)
    if applied:
        state.uncorrected = False
    return applied


def is_ukf(state) -> bool:
    """The state record is a UKF's (FILTER_STATE_UKF)."""
    return "sigma" in state.dtype.names


def filter_predict(config, state, reference_ns, delta_ns):
    """Ekf::predict / Ukf::predict at ``reference_ns`` over ``delta_ns`` (state updated in place)."""
    (_ukf_predict if is_ukf(state) else _ekf_predict)(config, state, reference_ns, delta_ns)


def filter_correct(config, state, slot):
    """Ekf::correct / Ukf::correct with the measurement in ``slot`` (QUEUE_SLOT), in place; True when the
    update was applied."""
    return (_ukf_correct if is_ukf(state) else _ekf_correct)(config, state, slot)


# Compiled callers choose by the state's record type: an EKF's code never contains the UKF.
@overload(filter_predict)
def _filter_predict_typed(config, state, reference_ns, delta_ns):
    if "sigma" in state.fields:
        return lambda config, state, reference_ns, delta_ns: _ukf_predict(config, state, reference_ns,
                                                                          delta_ns)
    return lambda config, state, reference_ns, delta_ns: _ekf_predict(config, state, reference_ns, delta_ns)


@overload(filter_correct)
def _filter_correct_typed(config, state, slot):
    if "sigma" in state.fields:
        return lambda config, state, slot: _ukf_correct(config, state, slot)
    return lambda config, state, slot: _ekf_correct(config, state, slot)


@njit(cache=True)
def process_measurement(config, state, stamp_ns, slot):
    """FilterBase::processMeasurement → INIT, ACCEPTED or REJECTED.

    First measurement: copy flagged entries and the raw covariance (no 1e-9 floor).  Otherwise
    Δ = stamp − filter time: predict when Δ > 0, correct, and move the filter time only when Δ ≥ 0.
    """
    update = slot.update
    if not state.initialized:
        for i in range(STATE_SIZE):
            if update[i]:
                state.x[i] = slot.z[i]
                for j in range(STATE_SIZE):
                    if update[j]:
                        state.p[i, j] = slot.covariance[i, j]
        state.initialized = True
        state.time_ns = stamp_ns
        return INIT
    delta_ns = stamp_ns - state.time_ns
    if delta_ns > 0:
        filter_predict(config, state, stamp_ns, delta_ns)
    accepted = filter_correct(config, state, slot)
    if delta_ns >= 0:
        state.time_ns = stamp_ns
    return ACCEPTED if accepted else REJECTED


# --- the queue (heapq's algorithm on pool slots, compared by stamp only) -----------------------------


@njit(cache=True, inline="always")
def _sift_down(heap, stamps, start, pos):
    item = heap[pos]
    while pos > start:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        if stamps[item] < stamps[parent]:
            heap[pos] = parent
            pos = parent_pos
            continue
        break
    heap[pos] = item


@njit(cache=True, inline="always")
def _sift_up(heap, stamps, size, pos):
    start = pos
    item = heap[pos]
    child = 2 * pos + 1
    while child < size:
        right = child + 1
        if right < size and not stamps[heap[child]] < stamps[heap[right]]:
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _sift_down(heap, stamps, start, pos)


@njit(cache=True)
def heap_push(heap, stamps, head, slot):
    """heapq.heappush of ``slot`` (``head``: QUEUE_HEAD, its length grows)."""
    n = head.length
    heap[n] = slot
    head.length = n + 1
    _sift_down(heap, stamps, 0, n)


@njit(cache=True)
def heap_pop(heap, stamps, head):
    """heapq.heappop → slot."""
    n = head.length - 1
    head.length = n
    last = heap[n]
    if n > 0:
        top = heap[0]
        heap[0] = last
        _sift_up(heap, stamps, n, 0)
        return top
    return last


@njit(cache=True, inline="always")
def take_slot(queue):
    """A free pool slot (the caller has made sure one is free: ``head.free_count`` > 0)."""
    n = queue.head.free_count - 1
    queue.head.free_count = n
    return queue.free[n]


@njit(cache=True, inline="always")
def release_slot(queue, slot):
    queue.free[queue.head.free_count] = slot
    queue.head.free_count += 1


def make_queue(capacity: int, old: Queue | None = None) -> Queue:
    """An empty queue, or ``old`` grown to ``capacity`` (queued entries keep their slots and order)."""
    queue = Queue(slots=records(capacity, QUEUE_SLOT), stamp=np.zeros(capacity, np.int64),
                  heap=np.zeros(capacity, np.int64), free=np.zeros(capacity, np.int64),
                  head=record(QUEUE_HEAD)[0])
    used = free = 0
    if old is not None:
        used = len(old.heap)
        for name in ("slots", "stamp", "heap"):
            getattr(queue, name)[:used] = getattr(old, name)
        queue.head["length"] = old.head["length"]
        free = int(old.head["free_count"])
        queue.free[:free] = old.free[:free]  # still free; the new slots go on top
    count = capacity - used
    queue.free[free:free + count] = np.arange(capacity - 1, used - 1, -1)
    queue.head["free_count"] = free + count
    return queue


# --- Python holders ---------------------------------------------------------------------------------


@dataclass
class Measurement:
    """One sub-measurement (ros_filter.cpp's Measurement): ordered by stamp **only**, as the queue."""

    stamp_ns: int
    topic: str
    z: np.ndarray  # (15,) measurement in state layout
    covariance: np.ndarray  # (15, 15)
    update: np.ndarray  # (15,) bool
    threshold: float = math.inf  # Mahalanobis threshold in sigmas
    latest_control: np.ndarray = field(default_factory=lambda: np.zeros(6))

    def __lt__(self, other: Measurement) -> bool:
        return self.stamp_ns < other.stamp_ns


def filter_config(params: EkfParams, use_control: bool | None = None, control_update=None) -> np.ndarray:
    """FILTER_CONFIG of a parameter set (``use_control``/``control_update`` as ekf_node adjusts them)."""
    config = record(FILTER_CONFIG)
    c = config[0]
    c["ukf"] = params.filter_type == "ukf"
    if c["ukf"]:
        c["lam"], c["state_weights"], c["covariance_weights"] = kernels.ukf_weights(
            params.ukf_alpha, params.ukf_kappa, params.ukf_beta)
    c["dynamic_process_noise"] = bool(params.dynamic_process_noise_covariance)
    c["use_control"] = bool(params.use_control if use_control is None else use_control)
    c["control_timeout_ns"] = int(round(params.control_timeout * 1e9))
    c["sensor_timeout_ns"] = int(round(params.sensor_timeout * 1e9))
    c["predict_to_current_time"] = bool(params.predict_to_current_time)
    c["permit_corrected_publication"] = bool(params.permit_corrected_publication)
    c["disabled"] = bool(params.disabled_at_startup)
    c["process_noise"] = np.array(params.process_noise_covariance, dtype=float)
    c["acceleration_limits"] = params.acceleration_limits
    c["acceleration_gains"] = params.acceleration_gains
    c["deceleration_limits"] = params.deceleration_limits
    c["deceleration_gains"] = params.deceleration_gains
    c["control_update"] = np.array(params.control_config if control_update is None else control_update,
                                   dtype=bool)
    return config


def filter_state(params: EkfParams) -> np.ndarray:
    ukf = params.filter_type == "ukf"
    state = record(FILTER_STATE_UKF if ukf else FILTER_STATE)
    s = state[0]
    s["x"] = params.initial_state
    s["p"] = np.array(params.initial_estimate_covariance, dtype=float)
    s["row_width"] = ROW
    if ukf:
        s["uncorrected"] = True  # upstream starts from zero sigma points, regenerated at the first predict
    return state


def measurement_slot(m: Measurement) -> np.ndarray:
    """A one-element QUEUE_SLOT array holding ``m`` (the form the compiled filter reads)."""
    slot = records(1, QUEUE_SLOT)
    slot["z"], slot["covariance"] = m.z, m.covariance
    slot["update"], slot["threshold"] = m.update, m.threshold
    return slot


class Ekf:
    """ekf.cpp + filter_base.cpp (no smoothing/history) over a FILTER_CONFIG and a FILTER_STATE record."""

    def __init__(self, params: EkfParams, config: np.ndarray | None = None, state: np.ndarray | None = None):
        self.params = params
        self.config_array = config if config is not None else filter_config(params)
        self.state_array = state if state is not None else filter_state(params)
        self.config, self.record = self.config_array[0], self.state_array[0]

    @property
    def state(self) -> np.ndarray:
        return self.record["x"]

    @state.setter
    def state(self, value) -> None:
        self.record["x"] = value

    @property
    def covariance(self) -> np.ndarray:
        return self.record["p"]

    @covariance.setter
    def covariance(self, value) -> None:
        self.record["p"] = value

    @property
    def initialized(self) -> bool:
        return bool(self.record["initialized"])

    @initialized.setter
    def initialized(self, value: bool) -> None:
        self.record["initialized"] = bool(value)

    @property
    def last_measurement_ns(self) -> int:
        return int(self.record["time_ns"])

    @last_measurement_ns.setter
    def last_measurement_ns(self, value: int) -> None:
        self.record["time_ns"] = value

    @property
    def uncorrected(self) -> bool:
        return bool(self.record["uncorrected"])

    @uncorrected.setter
    def uncorrected(self, value: bool) -> None:
        self.record["uncorrected"] = bool(value)

    def set_control(self, control, stamp_ns: int) -> None:
        self.record["control"] = np.asarray(control, dtype=float)
        self.record["control_ns"] = int(stamp_ns)

    def predict(self, reference_ns: int, delta_ns: int) -> None:
        """Ekf::predict (Ukf::predict with filter_type ukf); the control acceleration comes from the
        pre-update state (ukf.cpp computes it but applies no control term)."""
        filter_predict(self.config, self.record, int(reference_ns), int(delta_ns))

    def wrap_state_angles(self) -> None:
        for i in range(3, 6):
            self.state[i] = clamp_rotation(self.state[i])

    def correct(self, m: Measurement) -> bool:
        """Ekf::correct (Ukf::correct).  Returns True if the update was applied."""
        return bool(filter_correct(self.config, self.record, measurement_slot(m)[0]))

    def process_measurement(self, m: Measurement) -> str:
        """FilterBase::processMeasurement.  Returns 'init', 'accepted' or 'rejected'."""
        return OUTCOMES[process_measurement(self.config, self.record, int(m.stamp_ns),
                                            measurement_slot(m)[0])]


class Ukf(Ekf):
    """ukf.cpp: the same process model and node behaviour, unscented predict/correct (α, κ, β)."""


def make_filter(params: EkfParams, config: np.ndarray | None = None, state: np.ndarray | None = None) -> Ekf:
    """The filter ekf_node (filter_type ekf) or ukf_node (filter_type ukf) runs."""
    return (Ukf if params.filter_type == "ukf" else Ekf)(params, config, state)
