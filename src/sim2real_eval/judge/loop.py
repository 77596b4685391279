"""The Judge's schedule, compiled: input messages delivered at their receive time between the timer ticks.

``advance`` delivers the rows ``start … end − 1`` of a chunk (INPUT_ROW, in record order), each after
the ticks due before it, and with ``final`` then the ticks up to ``final_ns``:

- the EKF timer ticks at nominal times ``k·period + ekf_phase``, navsat's at ``k·period + navsat_phase``;
- a tick at nominal time T sees the messages received up to T + latency (``TIMING.latency_ns``): a
  message received at r is delivered before the tick iff r ≤ T + latency.  At one instant the order is:
  messages, then the EKF tick, then the navsat tick (phases and latency 0: ticks on exact multiples of
  the period, and a message received exactly at a tick time is seen by that tick);
- the EKF's published odometry reaches navsat at once (its odometry callback, and the TF edge when
  publish_tf); navsat's /odometry/gps reaches the EKF at once (its callbacks of the inputs subscribed
  to /odometry/gps; processed at the next EKF tick).

It returns (next row, status): DONE; NEED_SPACE when the queue pool or an output buffer might not hold
what the next step adds, or after ``TICKS_PER_CALL`` ticks (the owner grows the pool or takes the
outputs, and calls again: Python's signal handlers run in between); FAULT when a callback refused an
input or the filter became non-finite (``counters.fault_*``).
"""

from __future__ import annotations

from . import input_rows
from .compiled_cache import borrowed, njit
from .ekf_node import ekf_callback, ekf_tick
from .navsat import navsat_fix, navsat_imu, navsat_odometry, navsat_tick
from .state import DONE, EMPTY_FRAME, FAULT, NEED_SPACE, Ekf, Outputs, Queue, Tf


@njit(cache=True, inline="always")
def _room(queue, outputs, reserve):
    return (queue.head.free_count >= reserve and outputs.odometry_head.count < outputs.odometry.shape[0]
            and outputs.gps_head.count < outputs.gps.shape[0])


@njit(cache=True, inline="always")
def _callbacks(ekf, tf, queue, topics, topic, row):
    """ekf_node's callbacks of the inputs subscribed to ``topic`` for one row; False on a fault."""
    inputs = topics[topic].inputs
    for k in range(inputs.shape[0]):
        if inputs[k] < 0:
            break
        if not ekf_callback(ekf, tf, queue, inputs[k], row):
            return False
    return True


@njit(cache=True, inline="always")
def _gps_to_ekf(ekf, tf, queue, outputs, navsat, topics):
    """navsat's latest /odometry/gps → the EKF's callbacks of the inputs subscribed to it: an Odometry
    row with identity orientation and zero twist, sourced from the fix it came from."""
    out, state, row = outputs.gps[outputs.gps_head.count - 1], navsat.state, navsat.row
    row.values[:] = 0.0
    for i in range(3):
        row.values[input_rows.POSITION + i] = out.position[i]
    row.values[input_rows.ORIENTATION + 3] = 1.0
    for i in range(36):
        row.values[input_rows.POSE_COVARIANCE + i] = out.covariance[i]
    row.stamp, row.frame, row.child = out.stamp, state.world_frame, EMPTY_FRAME
    row.topic, row.index = state.gps_topic, state.gps_index
    return _callbacks(ekf, tf, queue, topics, ekf.node.gps_odometry_topic, row)


# Ticks run per call at most: then the loop returns to Python (as NEED_SPACE), where signal handlers run,
# so SIGTERM / Ctrl-C are acted on within milliseconds even when a gap in a bag holds millions of ticks
# that publish nothing (an uninitialised filter) — before, one call could run for minutes.
TICKS_PER_CALL = 1 << 16


@njit(cache=True, inline="always")
def _ticks(ekf, tf, queue, outputs, navsat, topics, timing, until, inclusive, reserve):
    """Run the ticks due before ``until`` (at it too when ``inclusive``) → DONE, NEED_SPACE (also after
    ``TICKS_PER_CALL`` ticks) or FAULT."""
    count = 0
    while True:
        next_ekf, next_navsat = timing.next_ekf, timing.next_navsat
        due = min(next_ekf, next_navsat)
        if due > until or (due == until and not inclusive):
            return DONE
        if not _room(queue, outputs, reserve) or count >= TICKS_PER_CALL:
            return NEED_SPACE
        count += 1
        if next_ekf == due:
            status = ekf_tick(ekf, tf, queue, outputs, due)
            if status < 0:
                return FAULT
            if status > 0 and navsat.config.enabled:
                navsat_odometry(navsat, tf, ekf.counters, ekf.node.world_frame,
                                ekf.node.base_link_frame_output,
                                outputs.odometry[outputs.odometry_head.count - 1])
            timing.next_ekf = next_ekf + timing.ekf_period_ns
        if next_navsat == due:
            status = navsat_tick(navsat, tf, ekf.counters, outputs)
            if status < 0:
                return FAULT
            if status > 0 and ekf.node.gps_odometry_topic >= 0:
                if not _gps_to_ekf(ekf, tf, queue, outputs, navsat, topics):
                    return FAULT
            timing.next_navsat = next_navsat + timing.navsat_period_ns


@njit(cache=True, inline="always")
def _deliver(ekf, tf, queue, navsat, topics, row):
    """Every callback of the row's topic, in the order ROS would run them here: the EKF inputs, then
    navsat's fix and IMU callbacks, then the control input.  False on a fault."""
    counters = ekf.counters
    topic = topics[row.topic]
    subscribed = topic.inputs[0] >= 0
    if subscribed or topic.fix:
        counters.inputs[row.topic] += 1
    if not _callbacks(ekf, tf, queue, topics, row.topic, row):
        return False
    if topic.fix:
        if not navsat_fix(navsat, counters, row):
            return False
    elif topic.navsat_imu and not navsat.state.transform_good:
        navsat_imu(navsat, tf, counters, row)
        if not subscribed:
            counters.inputs[row.topic] += 1
    if topic.cmd_vel and ekf.config.use_control:  # cmd_vel: stamped with the node's now()
        for i in range(6):
            ekf.state.control[i] = row.values[input_rows.CMD_LINEAR + i]
        ekf.state.control_ns = row.recv
        if not subscribed:
            counters.inputs[row.topic] += 1
    return True


@njit(cache=True)
def advance(ekf, tf, queue, outputs, navsat, topics, timing, rows, start, end, final, final_ns, reserve):
    """Deliver rows start … end − 1 with the ticks due before each; with ``final``, then the ticks up to
    ``final_ns`` (inclusive).  ``reserve``: free queue slots one step may need.  → (next row, status)."""
    # every array the callbacks and ticks are passed, as views holding no reference: their owners (the
    # caller's) outlive this call, and numba's atomic reference counts on each call below cost ≈ 15 %
    ekf = Ekf(ekf.config, ekf.state, ekf.node, borrowed(ekf.parts), borrowed(ekf.inputs), ekf.counters,
              borrowed(ekf.unresolved), ekf.scratch)
    tf = Tf(borrowed(tf.lookups), borrowed(tf.edge), tf.edge_head)
    queue = Queue(borrowed(queue.slots), borrowed(queue.stamp), borrowed(queue.heap), borrowed(queue.free),
                  queue.head)
    outputs = Outputs(borrowed(outputs.odometry), outputs.odometry_head, borrowed(outputs.gps),
                      outputs.gps_head)
    topics, rows = borrowed(topics), borrowed(rows)
    e = start
    while True:
        if e < end:  # the ticks a message received at recv comes after: T + latency < recv
            until, inclusive = rows[e].recv - timing.latency_ns, False
        elif final:
            until, inclusive = final_ns, True
        else:
            return e, DONE
        status = _ticks(ekf, tf, queue, outputs, navsat, topics, timing, until, inclusive, reserve)
        if status != DONE:
            return e, status
        if e >= end:
            return e, DONE
        if not _room(queue, outputs, reserve):
            return e, NEED_SPACE
        if not _deliver(ekf, tf, queue, navsat, topics, rows[e]):
            return e, FAULT
        e += 1
