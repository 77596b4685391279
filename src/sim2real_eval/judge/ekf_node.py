"""ekf_node around the filter (ros_filter.cpp, humble 3.5.2): callbacks, sub-measurement split, stale-stamp
gates, preparePose / prepareTwist / prepareAcceleration, forceTwoD, the queue, the periodic update and
the published odometry.

One measurement path: a message is one row of columns (input_rows.py); ``ekf_callback`` (compiled) runs
ros_filter's callback for it at the moment it is delivered — gate, preparation into a queue slot (the
prepared measurement: z, covariance, update flags, threshold, source), forceTwoD, enqueue — reading
the TF table and the filter state *now*, as upstream does (the lever arm t × ω and gravity from the
filter attitude use the current state; differential and relative poses the part's memory).
``EkfNode.handle`` is that callback for one message object; the Judge's loop (loop.py) calls it for
every row of a chunk.  ``ekf_tick`` is periodicUpdate.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Dict, List, Optional

import numpy as np

from ..errors import UserError
from . import input_rows
from .compiled_cache import njit
from .filter import (
    Measurement,
    filter_config,
    filter_predict,
    filter_state,
    heap_pop,
    heap_push,
    make_filter,
    make_queue,
    process_measurement,
    release_slot,
    take_slot,
)
from .kernels import (
    clamp_rotation,
    copy1,
    copy2,
    mat3_into,
    mat3_t_into,
    matrix_from_rpy_into,
    message_orientation_matrix_into,
    quaternion_from_rpy_into,
    rotate,
    rotate_t,
    rotated_covariance,
    rpy_from_matrix,
)
from .params import EkfParams, SensorConfig, absolute_topic
from .series import OdometrySeries
from .state import (
    COUNTERS,
    DROP_DIFFERENTIAL_FIRST,
    DROP_IMU_ACCELERATION,
    DROP_IMU_ANGULAR_VELOCITY,
    DROP_IMU_ORIENTATION,
    DROP_NAMES,
    DROP_SET_POSE,
    DROP_STALE,
    DROP_TF,
    EMPTY_FRAME,
    FAULT_COVARIANCE,
    FAULT_FILTER,
    FAULT_INITIAL_VALUE,
    FIELD_ACCEL_COVARIANCE,
    FIELD_GYRO_COVARIANCE,
    FIELD_MEASUREMENT,
    FIELD_ORIENTATION_COVARIANCE,
    FIELD_POSE_COVARIANCE,
    FIELD_TWIST_COVARIANCE,
    GPS_ODOMETRY,
    INPUT,
    INPUT_IMU,
    INPUT_KINDS,
    INPUT_ODOM,
    MAX_FRAMES,
    NO_PART,
    NO_SOURCE,
    NODE_CONFIG,
    ODOMETRY,
    OUTCOMES,
    OUTPUT_HEAD,
    PART,
    PART_ACCELERATION,
    PART_POSE,
    PART_TWIST,
    PREPARE,
    REJECTED,
    STATE_SIZE,
    TWO_D_INDICES,
    Ekf,
    Outputs,
    describe_fault,
    record,
    records,
)
from .tf import TfBuffer, edge_add, lookup

MASK_NORM = 1e-6  # update-mask propagation: rows of R·diag(flags) with norm ≥ 1e-6 become true
NO_SET_POSE_NS = 0  # set_pose is not implemented: the last set-pose stamp stays 0
PREPARED, UNRESOLVED, FIRST_DIFFERENTIAL = 0, 1, 2


# --- preparation (compiled) ------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _stamp_seconds(stamp):
    """filter_utilities::toSec of a builtin Time: sec + nanosec·1e-9 (float)."""
    return float(stamp // 1_000_000_000) + float(stamp % 1_000_000_000) * 1e-9


@njit(cache=True, inline="always")
def _mask(rotation, update, offset):
    """Update-mask propagation over update[offset:offset + 3]: rows of R·diag(flags) with norm ≥ 1e-6."""
    f0 = 1.0 if update[offset] else 0.0
    f1 = 1.0 if update[offset + 1] else 0.0
    f2 = 1.0 if update[offset + 2] else 0.0
    for i in range(3):
        norm2 = rotation[i, 0] ** 2 * f0 + rotation[i, 1] ** 2 * f1 + rotation[i, 2] ** 2 * f2
        update[offset + i] = math.sqrt(norm2) >= MASK_NORM


@njit(cache=True, inline="always")
def _block(values, start, size, out, offset):
    """out[offset:offset + size, offset:offset + size] = values[start:start + size²] (row-major)."""
    for i in range(size):
        for j in range(size):
            out[offset + i, offset + j] = values[start + size * i + j]


@njit(cache=True, inline="always")
def _finite(values, start, count):
    for i in range(start, start + count):
        if not np.isfinite(values[i]):
            return False
    return True


@njit(cache=True, error_model="numpy")
def prepare_twist(ekf, tf, target_frame, frame, linear, angular, covariance6, stamp, slot):
    """RosFilter::prepareTwist into ``slot``: ω_b = R·ω, v_b = R·v + t × ω_state, covariance rotated
    blockwise.  False when the transform lookup fails."""
    scratch = ekf.scratch
    source = target_frame if frame == EMPTY_FRAME else frame
    rotation, translation = scratch.twist_rotation, scratch.twist_translation
    if not lookup(tf, target_frame, source, stamp, rotation, translation):
        return False
    x, z = ekf.state.x, slot.z
    rotate(rotation, angular, z, 9)
    rotate(rotation, linear, z, 6)
    t0, t1, t2 = translation[0], translation[1], translation[2]
    w0, w1, w2 = x[9], x[10], x[11]  # the filter's body rates now
    z[6] += t1 * w2 - t2 * w1
    z[7] += t2 * w0 - t0 * w2
    z[8] += t0 * w1 - t1 * w0
    _mask(rotation, slot.update, 6)
    _mask(rotation, slot.update, 9)
    rotated_covariance(rotation, covariance6, slot.covariance, 6, 6, scratch.rc)
    return True


@njit(cache=True, inline="always", error_model="numpy")
def _differential_pose(ekf, tf, part, stamp, covariance6, rotation, has_target, slot):
    """preparePose's differential branch: the pose (``scratch.pose_*``, rotated covariance in
    ``scratch.rotated``) relative to the part's previous one, divided by Δt, prepared as a twist in
    base_link (``prepare_twist``); the first message only stores its pose (FIRST_DIFFERENTIAL)."""
    node, scratch = ekf.node, ekf.scratch
    pose_rotation, pose_translation = scratch.pose_rotation, scratch.pose_translation
    target_rotation, rotated = scratch.target_rotation, scratch.rotated
    update, turned, product = slot.update, scratch.turned, scratch.product
    status = FIRST_DIFFERENTIAL
    if part.has_previous:
        delta_rotation, delta_translation = scratch.delta_rotation, scratch.delta_translation
        moved = scratch.moved
        mat3_t_into(part.previous_rotation, pose_rotation, delta_rotation)  # previous⁻¹·pose
        for i in range(3):
            moved[i] = pose_translation[i] - part.previous_translation[i]
        rotate_t(part.previous_rotation, moved, delta_translation, 0)
        if has_target:  # rotated into the target frame (no translation)
            mat3_into(target_rotation, delta_rotation, product)
            copy2(product, delta_rotation)
            rotate(target_rotation, delta_translation, turned, 0)
            copy1(turned, delta_translation)
        last_seconds = part.last_seconds if part.has_last else _stamp_seconds(stamp)
        dt = _stamp_seconds(stamp) - last_seconds
        linear, angular = scratch.linear, scratch.angular
        for i in range(3):
            linear[i] = delta_translation[i] / dt
        dr, dp, dy = rpy_from_matrix(delta_rotation)
        angular[0], angular[1], angular[2] = dr / dt, dp / dt, dy / dt
        for i in range(6):  # pose flags become twist flags; the rest is cleared
            update[6 + i] = update[i]
            update[i] = False
        for i in range(12, STATE_SIZE):
            update[i] = False
        previous6, twist6 = scratch.previous6, scratch.twist6
        previous6[:, :] = 0.0
        rotated_covariance(rotation, part.previous_covariance, previous6, 0, 6, scratch.rc)
        for i in range(6):
            for j in range(6):
                twist6[i, j] = (rotated[i, j] + previous6[i, j]) * dt
        base = node.base_link_frame
        prepared = prepare_twist(ekf, tf, base, base, linear, angular, twist6, stamp, slot)
        status = PREPARED if prepared else UNRESOLVED
    part.has_previous = True
    copy2(pose_rotation, part.previous_rotation)
    copy1(pose_translation, part.previous_translation)
    copy2(covariance6, part.previous_covariance)
    return status


@njit(cache=True, error_model="numpy")
def prepare_pose(ekf, tf, part, stamp, frame, position, quaternion, covariance6, slot):
    """RosFilter::preparePose into ``slot`` → PREPARED, UNRESOLVED (transform lookup failed) or
    FIRST_DIFFERENTIAL (the first message of a differential input only stores its pose)."""
    node, scratch = ekf.node, ekf.scratch
    imu = part.imu
    if part.target == EMPTY_FRAME and frame == EMPTY_FRAME:
        final_target = node.world_frame
        pose_frame = final_target
    elif part.target == EMPTY_FRAME:
        final_target = frame
        pose_frame = frame
    else:
        final_target = part.target
        pose_frame = final_target if (part.differential and not imu) else frame
    pose_rotation, pose_translation = scratch.pose_rotation, scratch.pose_translation
    message_orientation_matrix_into(quaternion[0], quaternion[1], quaternion[2], quaternion[3], pose_rotation)
    copy1(position, pose_translation)
    target_rotation, target_translation = scratch.target_rotation, scratch.target_translation
    if not lookup(tf, final_target, pose_frame, stamp, target_rotation, target_translation):
        return UNRESOLVED
    roll_offset, pitch_offset, yaw_offset = rpy_from_matrix(target_rotation)
    # IMU orientation: masks and covariance rotate by the mounting yaw only
    rotation = target_rotation
    if imu:
        rotation = scratch.yaw_rotation
        matrix_from_rpy_into(0.0, 0.0, yaw_offset, rotation)
    update, turned, product = slot.update, scratch.turned, scratch.product
    _mask(rotation, update, 0)
    _mask(rotation, update, 3)
    rotated = scratch.rotated
    rotated[:, :] = 0.0
    rotated_covariance(rotation, covariance6, rotated, 0, 6, scratch.rc)
    if imu:
        roll, pitch, yaw = rpy_from_matrix(pose_rotation)
        angles = scratch.angles
        angles[0] = clamp_rotation(roll - roll_offset)
        angles[1] = clamp_rotation(pitch - pitch_offset)
        angles[2] = clamp_rotation(yaw - yaw_offset)
        rotate(rotation, angles, turned, 0)  # (rotation: Rz(yaw offset) here)
        matrix_from_rpy_into(turned[0], turned[1], turned[2], pose_rotation)
    has_target = not imu  # upstream: target = identity from here on for IMU data
    if part.differential:
        return _differential_pose(ekf, tf, part, stamp, covariance6, rotation, has_target, slot)
    if part.relative:
        if not part.has_initial:
            part.has_initial = True
            copy2(pose_rotation, part.initial_rotation)
            copy1(pose_translation, part.initial_translation)
        moved = scratch.moved
        for i in range(3):
            moved[i] = pose_translation[i] - part.initial_translation[i]
        rotate_t(part.initial_rotation, moved, pose_translation, 0)
        mat3_t_into(part.initial_rotation, pose_rotation, product)
        copy2(product, pose_rotation)
    if has_target:
        rotate(target_rotation, pose_translation, turned, 0)
        for i in range(3):
            pose_translation[i] = turned[i] + target_translation[i]
        mat3_into(target_rotation, pose_rotation, product)
        copy2(product, pose_rotation)
    z = slot.z
    z[0], z[1], z[2] = pose_translation[0], pose_translation[1], pose_translation[2]
    z[3], z[4], z[5] = rpy_from_matrix(pose_rotation)
    for i in range(6):
        for j in range(6):
            slot.covariance[i, j] = rotated[i, j]
    return PREPARED


@njit(cache=True, error_model="numpy")
def prepare_acceleration(ekf, tf, part, stamp, frame, values, slot):
    """RosFilter::prepareAcceleration (humble order) into ``slot``: gravity removed in the sensor frame
    using the message orientation (or the filter attitude ∘ mounting when orientation_covariance[0] =
    −1), then a_b = R·a_s; covariance R·C·Rᵀ; no lever-arm term.  False when the lookup fails."""
    node, scratch = ekf.node, ekf.scratch
    base = node.base_link_frame
    source = base if frame == EMPTY_FRAME else frame
    rotation = scratch.accel_rotation
    if not lookup(tf, base, source, stamp, rotation, scratch.accel_translation):
        return False
    a = input_rows.IMU_LINEAR_ACCELERATION
    acc = scratch.acceleration
    acc[0], acc[1], acc[2] = values[a], values[a + 1], values[a + 2]
    if part.remove_gravity:
        attitude = scratch.attitude
        if abs(values[input_rows.IMU_ORIENTATION_COVARIANCE] + 1.0) < 1e-9:
            x = ekf.state.x
            matrix_from_rpy_into(x[3], x[4], x[5], scratch.state_rotation)
            mat3_into(scratch.state_rotation, rotation, attitude)
        else:
            q = input_rows.IMU_ORIENTATION
            message_orientation_matrix_into(values[q], values[q + 1], values[q + 2], values[q + 3], attitude)
        for i in range(3):  # Bᵀ·(0, 0, g): the third row of B times g
            acc[i] = acc[i] - node.gravity * attitude[2, i]
    rotate(rotation, acc, slot.z, 12)
    _mask(rotation, slot.update, 12)
    raw = scratch.raw
    _block(values, input_rows.IMU_LINEAR_ACCELERATION_COVARIANCE, 3, raw, 0)
    rotated_covariance(rotation, raw, slot.covariance, 12, 3, scratch.rc)
    return True


@njit(cache=True, error_model="numpy")
def _part_callback(ekf, tf, queue, part_index, row, frame):
    """One sub-measurement of a message: stale-stamp gate, preparation into a queue slot, forceTwoD,
    enqueue.  False on a fault (a non-finite covariance: ``counters.fault_*``)."""
    part, counters, scratch = ekf.parts[part_index], ekf.counters, ekf.scratch
    stamp, values = row.stamp, row.values
    if part.has_last and part.last_ns > stamp:  # older than the last message on this key
        counters.dropped[DROP_STALE] += 1
        return True
    kind = part.kind
    if kind == PART_POSE:
        if part.imu:
            c, field, size, at = input_rows.IMU_ORIENTATION_COVARIANCE, FIELD_ORIENTATION_COVARIANCE, 3, 3
        else:
            c, field, size, at = input_rows.POSE_COVARIANCE, FIELD_POSE_COVARIANCE, 6, 0
    elif kind == PART_TWIST:
        if part.imu:
            c, field, size, at = input_rows.IMU_ANGULAR_VELOCITY_COVARIANCE, FIELD_GYRO_COVARIANCE, 3, 3
        else:
            c, field, size, at = input_rows.TWIST_COVARIANCE, FIELD_TWIST_COVARIANCE, 6, 0
    else:
        c, field, size, at = input_rows.IMU_LINEAR_ACCELERATION_COVARIANCE, FIELD_ACCEL_COVARIANCE, 3, 0
    if not _finite(values, c, size * size):  # would make the filter non-finite: refused
        counters.fault_kind, counters.fault_topic = FAULT_COVARIANCE, row.topic
        counters.fault_index, counters.fault_field = row.index, field
        return False
    covariance6 = scratch.covariance6
    if kind != PART_ACCELERATION:
        covariance6[:, :] = 0.0
        _block(values, c, size, covariance6, at)
    index = take_slot(queue)
    slot = queue.slots[index]
    slot.z[:] = 0.0
    slot.covariance[:, :] = 0.0
    copy1(part.update, slot.update)
    if kind == PART_POSE:
        position, quaternion = scratch.position, scratch.quaternion
        q = input_rows.IMU_ORIENTATION if part.imu else input_rows.ORIENTATION
        for i in range(4):
            quaternion[i] = values[q + i]
        for i in range(3):
            position[i] = 0.0 if part.imu else values[input_rows.POSITION + i]
        status = prepare_pose(ekf, tf, part, stamp, frame, position, quaternion, covariance6, slot)
    elif kind == PART_TWIST:
        linear, angular = scratch.linear, scratch.angular
        w = input_rows.IMU_ANGULAR_VELOCITY if part.imu else input_rows.ANGULAR
        for i in range(3):
            angular[i] = values[w + i]
            linear[i] = 0.0 if part.imu else values[input_rows.LINEAR + i]
        ok = prepare_twist(ekf, tf, ekf.node.base_link_frame, frame, linear, angular, covariance6, stamp,
                           slot)
        status = PREPARED if ok else UNRESOLVED
    else:
        status = PREPARED if prepare_acceleration(ekf, tf, part, stamp, frame, values, slot) else UNRESOLVED
    if status == PREPARED:
        if ekf.node.two_d_mode:  # forceTwoD: zero pseudo-measurements, variance 1e-6, off-diagonals kept
            for i in TWO_D_INDICES:
                slot.z[i] = 0.0
                slot.covariance[i, i] = 1e-6
                slot.update[i] = True
        queue.stamp[index] = stamp
        slot.threshold = part.threshold
        slot.topic = row.topic
        slot.index = row.index
        heap_push(queue.heap, queue.stamp, queue.head, index)
    else:
        release_slot(queue, index)
        if status == FIRST_DIFFERENTIAL:
            counters.dropped[DROP_DIFFERENTIAL_FIRST] += 1
        else:  # a failed transform lookup drops the measurement (upstream); counted per part and frame
            counters.dropped[DROP_TF] += 1
            ekf.unresolved[part_index, frame] += 1
    part.has_last = True
    part.last_ns = stamp
    part.last_seconds = _stamp_seconds(stamp)
    return True


@njit(cache=True, error_model="numpy")
def ekf_callback(ekf, tf, queue, input_index, row):
    """The callback of one ekf_node input (odometryCallback, poseCallback, twistCallback, imuCallback)
    for one message (INPUT_ROW); False on a fault (``counters.fault_*``)."""
    item, dropped, values = ekf.inputs[input_index], ekf.counters.dropped, row.values
    if row.stamp <= NO_SET_POSE_NS:  # stamps not after the last set_pose (never called: 0) are dropped
        dropped[DROP_SET_POSE] += 1
        return True
    for which in range(3):  # the pose, twist and acceleration parts, in the callbacks' order
        if which == 0:
            part, frame = item.pose, row.frame
            provided, drop = input_rows.IMU_ORIENTATION_COVARIANCE, DROP_IMU_ORIENTATION
        elif which == 1:
            part, frame = item.twist, row.child if item.kind == INPUT_ODOM else row.frame
            provided, drop = input_rows.IMU_ANGULAR_VELOCITY_COVARIANCE, DROP_IMU_ANGULAR_VELOCITY
        else:
            part, frame = item.acceleration, row.frame
            provided, drop = input_rows.IMU_LINEAR_ACCELERATION_COVARIANCE, DROP_IMU_ACCELERATION
        if part == NO_PART:
            continue
        # imuCallback: a part only when its covariance is provided (element 0 ≠ −1)
        if item.kind == INPUT_IMU and abs(values[provided] + 1.0) < 1e-9:
            dropped[drop] += 1
            continue
        if not _part_callback(ekf, tf, queue, part, row, frame):
            return False
    return True


# --- the periodic update (compiled) ----------------------------------------------------------------------


@njit(cache=True, inline="always")
def _state_finite(state):
    for i in range(STATE_SIZE):
        if not (np.isfinite(state.x[i]) and np.isfinite(state.p[i, i])):
            return False
    return True


@njit(cache=True, inline="always")
def _fault(counters, kind, topic, index, field):
    counters.fault_kind, counters.fault_topic = kind, topic
    counters.fault_index, counters.fault_field = index, field


@njit(cache=True)
def ekf_tick(ekf, tf, queue, outputs, now_ns):
    """periodicUpdate: integrateMeasurements(now) then the publication rule → 1 published, 0 not,
    −1 fault (a measurement would make the filter non-finite: ``counters.fault_*`` names it).

    Pops and processes every queued measurement with stamp ≤ now; with an empty queue and an
    initialised filter, a sensor-timeout predict to now; publishes only if the filter stamp advanced
    (unless permit_corrected_publication).  A disabled filter (disabled_at_startup) does nothing."""
    config, state, counters = ekf.config, ekf.state, ekf.counters
    if config.disabled:
        return 0
    predict_now = config.predict_to_current_time
    if queue.head.length > 0:
        while queue.head.length > 0 and queue.stamp[queue.heap[0]] <= now_ns:
            index = heap_pop(queue.heap, queue.stamp, queue.head)
            slot = queue.slots[index]
            if not state.initialized:  # upstream copies the values as they are: refuse non-finite ones
                for i in range(STATE_SIZE):
                    if slot.update[i] and not np.isfinite(slot.z[i]):
                        _fault(counters, FAULT_INITIAL_VALUE, slot.topic, slot.index, FIELD_MEASUREMENT)
                        release_slot(queue, index)
                        return -1
            outcome = process_measurement(config, state, queue.stamp[index], slot)
            counters.outcomes[outcome] += 1
            release_slot(queue, index)
            if not _state_finite(state):  # (a rejected correction's predict can overflow too)
                _fault(counters, FAULT_FILTER, slot.topic, slot.index, FIELD_MEASUREMENT)
                return -1
    elif state.initialized and now_ns - state.time_ns >= config.sensor_timeout_ns:
        predict_now = True
    if state.initialized and predict_now:
        delta = now_ns - state.time_ns
        filter_predict(config, state, now_ns, delta)
        state.time_ns += delta
    if not state.initialized:
        return 0
    stamp = state.time_ns
    corrected = not config.permit_corrected_publication and state.last_published_ns >= stamp
    state.last_published_ns = stamp
    if corrected:
        return 0
    return publish(ekf, tf, outputs, stamp)


@njit(cache=True)
def publish(ekf, tf, outputs, stamp):
    """/odometry/filtered (+ the odom→base_link TF when publish_tf) into ``outputs.odometry``; −1 when the
    output would not be finite (upstream's validateFilterOutput logs and publishes; here it stops)."""
    state = ekf.state
    x, p = state.x, state.p
    if not _state_finite(state):
        _fault(ekf.counters, FAULT_FILTER, NO_SOURCE, -1, FIELD_MEASUREMENT)
        return -1
    k = outputs.odometry_head.count
    out = outputs.odometry[k]
    out.stamp = stamp
    copy1(x, out.state)
    quaternion_from_rpy_into(x[3], x[4], x[5], out.orientation)
    for i in range(6):
        for j in range(6):
            out.pose_covariance[6 * i + j] = p[i, j]
            out.twist_covariance[6 * i + j] = p[6 + i, 6 + j]
    outputs.odometry_head.count = k + 1
    node = ekf.node
    if node.publish_tf:
        edge_add(tf.edge, tf.edge_head, stamp + node.tf_offset_ns, out.orientation, out.state)
    return 1


# --- ekf_node in Python --------------------------------------------------------------------------------


class _Input:
    """One ekf_node input (``odom0``, ``imu0``...) and the keys of its parts."""

    def __init__(self, sensor: SensorConfig, parts: Dict[str, Optional[int]]):
        self.sensor = sensor
        self.parts = parts  # {"pose"|"twist"|"acceleration": part index or None}


def _split(sensor: SensorConfig, params: EkfParams, warnings: List[str]):
    """The parts (key, kind, update flags, threshold, processed) of one input: ros_filter's callbacks
    split a message into pose / twist / acceleration sub-measurements, each with its own key."""
    config = np.array(sensor.config, dtype=bool)
    name = sensor.name
    if sensor.kind == "odom":
        pose = config.copy()
        pose[6:12] = False  # pose part: 0-5 (+ accel flags, fused as zero)
        twist = config.copy()
        twist[0:6] = False  # twist part: 6-14
        return [("pose", f"{name}_pose", PART_POSE, pose, sensor.pose_threshold, pose.any()),
                ("twist", f"{name}_twist", PART_TWIST, twist, sensor.twist_threshold, twist.any())]
    if sensor.kind == "pose":
        pose = config.copy()
        pose[6:] = False
        return [("pose", name, PART_POSE, pose, sensor.pose_threshold, True)]
    if sensor.kind == "twist":
        twist = config.copy()
        twist[:6] = False
        twist[12:] = False
        return [("twist", name, PART_TWIST, twist, sensor.twist_threshold, True)]
    if config[0:3].any() or config[6:9].any():
        warnings.append(f"{params.source}: {name}_config: IMU position/linear-velocity flags are ignored")
    pose, twist, accel = (np.zeros(STATE_SIZE, bool) for _ in range(3))
    pose[3:6] = config[3:6]
    twist[9:12] = config[9:12]
    accel[12:15] = config[12:15]
    return [("pose", f"{name}_pose", PART_POSE, pose, sensor.pose_threshold, pose.any()),
            ("twist", f"{name}_twist", PART_TWIST, twist, sensor.twist_threshold, twist.any()),
            ("acceleration", f"{name}_acceleration", PART_ACCELERATION, accel, sensor.acceleration_threshold,
             accel.any())]


class EkfNode:
    """The ekf_node of robot_localization on the data clock (no ROS).

    ``handle(topic, msg)`` is the node's callback for one message; ``tick(now_ns)`` its timer.  The
    Judge's loop drives ``core`` (state.Ekf), ``queue`` and ``outputs`` directly; ``ensure_queue_space``
    and ``take_published`` are what the loop's owner calls when the pool or the output buffer is full.
    """

    def __init__(self, params: EkfParams, tf: TfBuffer, topic_of=lambda name: name,
                 output_capacity: int = 256):
        self.params = params
        self.tf = tf
        self.warnings: List[str] = []
        self.part_keys: List[str] = []
        self.part_targets: List[str] = []
        self.inputs: List[_Input] = []
        rows = []
        for sensor in params.sensors:
            indices = {}
            for name, key, kind, update, threshold, processed in _split(sensor, params, self.warnings):
                if not processed:
                    indices[name] = None
                    continue
                imu = sensor.kind == "imu"
                target = params.world_frame if kind == PART_POSE and not imu else params.base_link_frame
                indices[name] = len(rows)
                rows.append(dict(kind=kind, update=update, threshold=threshold,
                                 differential=sensor.differential,
                                 relative=sensor.relative, imu=imu,
                                 remove_gravity=sensor.remove_gravitational_acceleration,
                                 target=tf.code(target)))
                self.part_keys.append(key)
                self.part_targets.append(target)
            self.inputs.append(_Input(sensor, indices))
        self.subscriptions: Dict[str, List[int]] = {}
        for i, item in enumerate(self.inputs):
            self.subscriptions.setdefault(topic_of(absolute_topic(item.sensor.topic)), []).append(i)
        # Fusing IMU linear acceleration turns control of the matching velocity off (loadParams).
        control_update = np.array(params.control_config, dtype=bool)
        use_control = bool(params.use_control)
        if use_control:
            for item in self.inputs:
                if item.sensor.kind == "imu":
                    control_update[:3] &= ~np.array(item.sensor.config[12:15], dtype=bool)
            use_control = bool(control_update.any())
        self.use_control = use_control
        self.period_ns = int(round(1e9 / params.frequency))
        parts = records(max(len(rows), 1), PART)
        for i, row in enumerate(rows):
            for name, value in row.items():
                parts[i][name] = value
        inputs = records(max(len(self.inputs), 1), INPUT)
        for i, item in enumerate(self.inputs):
            inputs[i]["kind"] = INPUT_KINDS.index(item.sensor.kind)
            for name in ("pose", "twist", "acceleration"):
                part = item.parts.get(name)
                inputs[i][name] = NO_PART if part is None else part
        self._arrays = {"node": record(NODE_CONFIG), "counters": record(COUNTERS),
                        "config": filter_config(params, use_control, control_update),
                        "state": filter_state(params), "odometry_head": record(OUTPUT_HEAD)}
        node = self._arrays["node"][0]
        node["two_d_mode"] = bool(params.two_d_mode)
        node["gravity"] = params.gravitational_acceleration
        node["world_frame"] = tf.code(params.world_frame)
        node["base_link_frame"] = tf.code(params.base_link_frame)
        node["base_link_frame_output"] = tf.code(params.base_link_frame_output)
        node["publish_tf"] = bool(params.publish_tf and params.world_frame == params.odom_frame
                                  and tf.set_dynamic(params.odom_frame, params.base_link_frame_output))
        node["tf_offset_ns"] = int(round(params.transform_time_offset * 1e9))
        node["period_ns"] = self.period_ns
        node["gps_odometry_topic"] = -1
        self._arrays["scratch"] = record(PREPARE)
        self.core = Ekf(config=self._arrays["config"][0], state=self._arrays["state"][0], node=node,
                        parts=parts,
                        inputs=inputs, counters=self._arrays["counters"][0],
                        unresolved=np.zeros((len(parts), MAX_FRAMES), np.int64),
                        scratch=self._arrays["scratch"][0])
        self.queue = make_queue(16)
        self.odometry = records(output_capacity, ODOMETRY)
        self.odometry_head = self._arrays["odometry_head"][0]
        # the largest number of queue slots one message can take: three parts per input on its topic,
        # and navsat's /odometry/gps (two parts per input) at the same step
        per_topic = max([len(v) for v in self.subscriptions.values()] or [1])
        self.slots_per_message = 3 * per_topic + 2 * len(self.inputs)

    # --- the loop owner's API -----------------------------------------------------------------------------
    def ensure_queue_space(self) -> None:
        """Grow the queue's pool (doubling; queued measurements keep their slots and order) until one
        more message fits."""
        while self.queue.head["free_count"] < self.slots_per_message:
            self.queue = make_queue(2 * len(self.queue.heap), self.queue)

    def take_published(self) -> np.ndarray:
        """The /odometry/filtered messages published since the last call (an ODOMETRY array, a copy)."""
        k = int(self.odometry_head["count"])
        taken = self.odometry[:k].copy()
        self.odometry_head["count"] = 0
        return taken

    @property
    def tf_core(self):
        return self.tf.core

    # --- per-message API --------------------------------------------------------------------------------
    def handle(self, topic: str, msg, index: int = 0) -> None:
        """The callbacks of the inputs subscribed to ``topic`` for one message object."""
        subscribed = self.subscriptions.get(topic, ())
        if not subscribed:
            return
        msgtype = input_rows.INPUT_TYPES[self.inputs[subscribed[0]].sensor.kind]
        row = input_rows.rows(input_rows.object_columns(topic, msgtype, [msg]), self.tf, 0, index)[0]
        for i in subscribed:
            self.ensure_queue_space()
            if not ekf_callback(self.core, self.tf.core, self.queue, i, row):
                raise UserError(describe_fault(self.core.counters, [topic]))

    def tick(self, now_ns: int):
        """periodicUpdate at ``now_ns``: the published /odometry/filtered (a one-message
        OdometrySeries), or None."""
        self.odometry_head["count"] = 0
        outputs = Outputs(self.odometry, self.odometry_head, _NO_GPS, _NO_GPS_HEAD)
        status = ekf_tick(self.core, self.tf.core, self.queue, outputs, int(now_ns))
        if status < 0:
            raise UserError(describe_fault(self.core.counters, []))
        if status == 0:
            return None
        return OdometrySeries.from_published(self.take_published(), self.params.world_frame,
                                             self.params.base_link_frame_output)

    def set_control(self, linear, angular, now_ns: int) -> None:
        """cmd_vel (geometry_msgs/Twist): stamped with the node's now(), pushed into the filter."""
        self.filter.set_control([linear.x, linear.y, linear.z, angular.x, angular.y, angular.z], now_ns)

    # --- views -------------------------------------------------------------------------------------------
    @property
    def filter(self):
        """The filter (a filter.Ekf/Ukf view of this node's FILTER_CONFIG and FILTER_STATE)."""
        return make_filter(self.params, self._arrays["config"], self._arrays["state"])

    @property
    def measurements(self) -> list:
        """The queued measurements (filter.Measurement, heap order)."""
        q = self.queue
        out = []
        for i in range(int(q.head["length"])):
            index = q.heap[i]
            slot = q.slots[index]
            out.append(Measurement(int(q.stamp[index]), "", slot["z"].copy(), slot["covariance"].copy(),
                                   slot["update"].astype(bool), float(slot["threshold"])))
        return out

    @property
    def queue_stamps(self) -> List[int]:
        """Stamps of the queued measurements (heap order)."""
        q = self.queue
        return [int(q.stamp[q.heap[i]]) for i in range(int(q.head["length"]))]

    @property
    def dropped(self) -> Counter:
        counters = self.core.counters
        out = Counter({name: int(v) for name, v in zip(DROP_NAMES, counters["dropped"]) if v})
        if counters["outcomes"][REJECTED]:
            out["mahalanobis_rejected"] = int(counters["outcomes"][REJECTED])
        return out

    @property
    def processed(self) -> Counter:
        return Counter({name: int(v) for name, v in zip(OUTCOMES, self.core.counters["outcomes"]) if v})

    def unresolved_warnings(self) -> List[str]:
        unresolved = self.core.unresolved
        found = []
        for part, frame in zip(*np.nonzero(unresolved)):
            found.append((self.part_keys[part], self.part_targets[part], self.tf.names[frame],
                          int(unresolved[part, frame])))
        return [f"{key}: {count} message(s) dropped: no transform {frame!r} -> {target!r}"
                for key, target, frame, count in sorted(found)]


_NO_GPS = records(1, GPS_ODOMETRY)  # EkfNode.tick publishes no /odometry/gps
_NO_GPS_HEAD = record(OUTPUT_HEAD)[0]
