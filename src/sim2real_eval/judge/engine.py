"""The sequential core of ekf_node in compiled form: filter state, the measurement queue and the timer.

One implementation serves both the per-message Python API (``filter.Ekf``, ``ekf_node.EkfNode``) and
the Judge's fast loop (``advance``): everything here is plain numpy code that numba compiles when it
is installed (``kernels.njit``), and runs as is otherwise.

State lives in arrays (so compiled code can mutate it in place):
- ``x`` (15,), ``p`` (15, 15), ``sigma`` (31, 15) (UKF sigma points);
- ``ints`` int64: see the ``I_*`` indices (initialised flag, filter time, control time, UKF
  ``uncorrected_``, last published stamp, heap size, free-slot count, next EKF tick, outputs written,
  outcome counters);
- ``control`` (6,): the latest control vector (cmd_vel).
Configuration: ``cfg_i`` int64 (``C_*``), ``cfg_f`` float64 (``F_*``), ``q`` (process noise),
``limits`` (4, 6) rows accel limit, accel gain, decel limit, decel gain, ``control_update`` (6,) bool,
``weights`` (2, 31) UKF state / covariance weights.

The queue is a binary heap of pool slots ordered by stamp **only**, a line-for-line port of Python's
heapq (which serves equal stamps in the same order as libstdc++'s std::priority_queue; tested).
"""

from __future__ import annotations

import numpy as np

from .kernels import correct, matrix_from_rpy, njit, predict, ukf_correct, ukf_predict

# ints
I_INITIALIZED, I_LAST_NS, I_CONTROL_NS, I_UNCORRECTED, I_LAST_PUBLISHED = 0, 1, 2, 3, 4
I_HEAP_SIZE, I_FREE_SIZE, I_NEXT_EKF, I_OUT_COUNT = 5, 6, 7, 8
I_INIT_COUNT, I_ACCEPTED_COUNT, I_REJECTED_COUNT = 9, 10, 11
INTS_SIZE = 12
# cfg_i
C_DYNAMIC, C_USE_CONTROL, C_CONTROL_TIMEOUT, C_UKF, C_SENSOR_TIMEOUT = 0, 1, 2, 3, 4
C_PREDICT_NOW, C_PERMIT_CORRECTED, C_PERIOD, C_TWO_D, C_DISABLED = 5, 6, 7, 8, 9
CFG_I_SIZE = 10
# cfg_f
F_LAMBDA, F_GRAVITY = 0, 1
CFG_F_SIZE = 2
# outcomes of process_measurement
INIT, ACCEPTED, REJECTED = 0, 1, 2
# advance() status
DONE, NAVSAT_TICK, POOL_FULL, OUTPUT_FULL = 0, 1, 2, 3
# fix-ups applied at callback time (state-dependent parts of the preparation)
FIX_NONE, FIX_LEVER_ARM, FIX_GRAVITY_FROM_STATE = 0, 1, 2

TWO_D_INDICES = (2, 3, 4, 8, 9, 10, 14)
NEVER = np.iinfo(np.int64).max


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
def control_accelerations(x, ints, control, cfg_i, limits, control_update, reference_ns):
    """prepareControl: a timed-out control (t − t_control ≥ control_timeout) is zeroed first."""
    accel = np.zeros(6)
    if cfg_i[C_USE_CONTROL] == 0:
        return accel
    if reference_ns - ints[I_CONTROL_NS] >= cfg_i[C_CONTROL_TIMEOUT]:
        control[:] = 0.0
    for i in range(6):
        if control_update[i]:
            accel[i] = control_acceleration(
                x[6 + i], control[i], limits[0, i], limits[1, i], limits[2, i], limits[3, i]
            )
    return accel


@njit(cache=True)
def filter_predict(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
                   reference_ns, delta_ns):
    """Ekf::predict / Ukf::predict at ``reference_ns`` over ``delta_ns`` (state updated in place)."""
    delta = delta_ns * 1e-9
    accel = control_accelerations(x, ints, control, cfg_i, limits, control_update, reference_ns)
    if cfg_i[C_UKF] != 0:
        nx, nP, ns = ukf_predict(x, p, q, delta, cfg_i[C_DYNAMIC] != 0, cfg_f[F_LAMBDA], weights[0],
                                 weights[1])
        sigma[:, :] = ns
        ints[I_UNCORRECTED] = 1
    else:
        nx, nP = predict(x, p, q, delta, cfg_i[C_DYNAMIC] != 0, accel, control_update,
                         cfg_i[C_USE_CONTROL] != 0)
    x[:] = nx
    p[:, :] = nP


@njit(cache=True)
def filter_correct(x, p, sigma, ints, cfg_i, cfg_f, weights, z, covariance, update, threshold):
    """Ekf::correct / Ukf::correct (state updated in place); True when the update was applied."""
    if cfg_i[C_UKF] != 0:
        applied, nx, nP, ns = ukf_correct(x, p, sigma, ints[I_UNCORRECTED] == 0, z, covariance, update,
                                          threshold, cfg_f[F_LAMBDA], weights[0], weights[1])
        sigma[:, :] = ns
        if applied:
            ints[I_UNCORRECTED] = 0
    else:
        applied, nx, nP = correct(x, p, z, covariance, update, threshold)
    if applied:
        x[:] = nx
        p[:, :] = nP
    return applied


@njit(cache=True)
def process_measurement(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
                        stamp_ns, z, covariance, update, threshold):
    """FilterBase::processMeasurement → INIT, ACCEPTED or REJECTED.

    First measurement: copy flagged entries and the raw covariance (no 1e-9 floor).  Otherwise
    Δ = stamp − filter time: predict when Δ > 0, correct, and move the filter time only when Δ ≥ 0.
    """
    if ints[I_INITIALIZED] == 0:
        for i in range(15):
            if update[i]:
                x[i] = z[i]
                for j in range(15):
                    if update[j]:
                        p[i, j] = covariance[i, j]
        ints[I_INITIALIZED] = 1
        ints[I_LAST_NS] = stamp_ns
        return INIT
    delta_ns = stamp_ns - ints[I_LAST_NS]
    if delta_ns > 0:
        filter_predict(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
                       stamp_ns, delta_ns)
    accepted = filter_correct(x, p, sigma, ints, cfg_i, cfg_f, weights, z, covariance, update, threshold)
    if delta_ns >= 0:
        ints[I_LAST_NS] = stamp_ns
    return ACCEPTED if accepted else REJECTED


# --- the queue (heapq's algorithm on pool slots, compared by stamp only) -----------------------------


@njit(cache=True)
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


@njit(cache=True)
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
def heap_push(heap, stamps, ints, slot):
    """heapq.heappush."""
    size = ints[I_HEAP_SIZE]
    heap[size] = slot
    ints[I_HEAP_SIZE] = size + 1
    _sift_down(heap, stamps, 0, size)


@njit(cache=True)
def heap_pop(heap, stamps, ints):
    """heapq.heappop → slot."""
    size = ints[I_HEAP_SIZE] - 1
    ints[I_HEAP_SIZE] = size
    last = heap[size]
    if size > 0:
        top = heap[0]
        heap[0] = last
        _sift_up(heap, stamps, size, 0)
        return top
    return last


@njit(cache=True)
def take_slot(free, ints):
    """A free pool slot, or −1 when the pool is full."""
    n = ints[I_FREE_SIZE]
    if n == 0:
        return -1
    ints[I_FREE_SIZE] = n - 1
    return free[n - 1]


# --- the timer --------------------------------------------------------------------------------------


@njit(cache=True)
def ekf_tick(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
             heap, free, pool_stamp, pool_z, pool_cov, pool_update, pool_threshold, now_ns):
    """periodicUpdate: integrateMeasurements(now) then the publication rule.  True = publish.

    Pops and processes every queued measurement with stamp ≤ now; with an empty queue and an
    initialised filter, a sensor-timeout predict to now; publish only if the filter stamp advanced
    (unless permit_corrected_publication).  A disabled filter (disabled_at_startup) does nothing."""
    if cfg_i[C_DISABLED] != 0:
        return False
    predict_now = cfg_i[C_PREDICT_NOW] != 0
    if ints[I_HEAP_SIZE] > 0:
        while ints[I_HEAP_SIZE] > 0 and pool_stamp[heap[0]] <= now_ns:
            slot = heap_pop(heap, pool_stamp, ints)
            outcome = process_measurement(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits,
                                          control_update, weights, pool_stamp[slot], pool_z[slot],
                                          pool_cov[slot], pool_update[slot], pool_threshold[slot])
            ints[I_INIT_COUNT + outcome] += 1
            free[ints[I_FREE_SIZE]] = slot
            ints[I_FREE_SIZE] += 1
    elif ints[I_INITIALIZED] != 0 and now_ns - ints[I_LAST_NS] >= cfg_i[C_SENSOR_TIMEOUT]:
        predict_now = True
    if ints[I_INITIALIZED] != 0 and predict_now:
        delta = now_ns - ints[I_LAST_NS]
        filter_predict(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
                       now_ns, delta)
        ints[I_LAST_NS] += delta
    if ints[I_INITIALIZED] == 0:
        return False
    stamp = ints[I_LAST_NS]
    corrected = cfg_i[C_PERMIT_CORRECTED] == 0 and ints[I_LAST_PUBLISHED] >= stamp
    ints[I_LAST_PUBLISHED] = stamp
    return not corrected


# --- the Judge's loop over prepared sub-measurements ------------------------------------------------


@njit(cache=True)
def _deliver(x, ints, cfg_i, cfg_f, heap, free, pool_stamp, pool_z, pool_cov, pool_update,
             pool_threshold, row_stamp, row_z, row_update, row_block, row_offset, row_size,
             row_threshold, row_fix, row_aux, r):
    """The callback of one prepared sub-measurement: apply its state-dependent part (read from the
    filter state *now*, as upstream's callbacks do) and enqueue it.  False when the pool is full."""
    slot = take_slot(free, ints)
    if slot < 0:
        return False
    z = pool_z[slot]
    z[:] = row_z[r]
    fix = row_fix[r]
    if fix == FIX_LEVER_ARM:  # v_b = R·v + t × ω_state (R·v prepared)
        t0, t1, t2 = row_aux[r, 0], row_aux[r, 1], row_aux[r, 2]
        w0, w1, w2 = x[9], x[10], x[11]
        z[6] = row_z[r, 6] + (t1 * w2 - t2 * w1)
        z[7] = row_z[r, 7] + (t2 * w0 - t0 * w2)
        z[8] = row_z[r, 8] + (t0 * w1 - t1 * w0)
    elif fix == FIX_GRAVITY_FROM_STATE:  # B = R(filter rpy)·R(base←imu); a_b = R·(a_s − g·Bᵀe_z)
        rotation = np.empty((3, 3))
        for i in range(3):
            for j in range(3):
                rotation[i, j] = row_aux[r, 3 + 3 * i + j]
        attitude = matrix_from_rpy(x[3], x[4], x[5]) @ rotation
        acc = row_aux[r, 0:3] - cfg_f[F_GRAVITY] * attitude[2]  # Bᵀ·(0, 0, g) = g·(third row of B)
        z[12:15] = rotation @ acc
    if cfg_i[C_TWO_D] != 0:
        for i in TWO_D_INDICES:
            z[i] = 0.0
    cov = pool_cov[slot]
    cov[:, :] = 0.0
    offset, size = row_offset[r], row_size[r]
    for i in range(size):
        for j in range(size):
            cov[offset + i, offset + j] = row_block[r, i, j]
    if cfg_i[C_TWO_D] != 0:
        for i in TWO_D_INDICES:
            cov[i, i] = 1e-6
    pool_update[slot] = row_update[r]
    pool_threshold[slot] = row_threshold[r]
    pool_stamp[slot] = row_stamp[r]
    heap_push(heap, pool_stamp, ints, slot)
    return True


@njit(cache=True)
def advance(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
            heap, free, pool_stamp, pool_z, pool_cov, pool_update, pool_threshold,
            out_stamp, out_state, out_covariance,
            row_recv, row_stamp, row_z, row_update, row_block, row_offset, row_size, row_threshold,
            row_fix, row_aux, row, row_end, limit_ns, inclusive, navsat_due):
    """Deliver prepared rows ``row`` … ``row_end − 1`` in order, each preceded by the timer ticks due
    strictly before its receive time, then the ticks due before ``limit_ns`` (or at it, ``inclusive``).

    Ticks follow the runner's rule: at one instant messages first, then the EKF tick, then the navsat
    tick; the loop returns (row, NAVSAT_TICK) when a navsat tick (``navsat_due``) is due — after the
    EKF tick of the same instant — so the caller runs navsat and calls again.  Published outputs are
    appended to ``out_*`` (filter time, state, P).  Returns (next row, status)."""
    period = cfg_i[C_PERIOD]
    while True:
        if row < row_end:
            until = row_recv[row]
            until_inclusive = False
        else:
            until = limit_ns
            until_inclusive = inclusive
        while True:
            next_ekf = ints[I_NEXT_EKF]
            due = min(next_ekf, navsat_due)
            if due > until or (due == until and not until_inclusive):
                break
            if next_ekf == due:
                if ints[I_OUT_COUNT] >= out_stamp.shape[0]:
                    return row, OUTPUT_FULL
                if ekf_tick(x, p, sigma, ints, control, cfg_i, cfg_f, q, limits, control_update, weights,
                            heap, free, pool_stamp, pool_z, pool_cov, pool_update, pool_threshold, due):
                    k = ints[I_OUT_COUNT]
                    out_stamp[k] = ints[I_LAST_NS]
                    out_state[k] = x
                    out_covariance[k] = p
                    ints[I_OUT_COUNT] = k + 1
                ints[I_NEXT_EKF] = next_ekf + period
            if navsat_due == due:
                return row, NAVSAT_TICK
        if row >= row_end:
            return row, DONE
        if not _deliver(x, ints, cfg_i, cfg_f, heap, free, pool_stamp, pool_z, pool_cov, pool_update,
                        pool_threshold, row_stamp, row_z, row_update, row_block, row_offset, row_size,
                        row_threshold, row_fix, row_aux, row):
            return row, POOL_FULL
        row += 1

