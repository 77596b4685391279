"""RosFilter::preparePose / prepareTwist / prepareAcceleration of ros_filter.cpp (humble 3.5.2), compiled:
a message's part → the prepared measurement in a queue slot (z, covariance, update flags) in the
target frame, through the TF table and the filter's current state.  ``ekf_node.py`` (the rest of
RosFilter: callbacks, gates, forceTwoD, the queue, the periodic update) calls them from its compiled
callback; they live apart because upstream's three prepare* functions are most of ros_filter.cpp.
"""

from __future__ import annotations

import math

from . import input_rows
from .compiled_cache import njit
from .kernels import (
    clamp_rotation,
    copy1,
    copy2,
    mat3_into,
    mat3_t_into,
    matrix_from_rpy_into,
    message_orientation_matrix_into,
    rotate,
    rotate_t,
    rotated_covariance,
    rpy_from_matrix,
)
from .state import EMPTY_FRAME, STATE_SIZE
from .tf import lookup

MASK_NORM = 1e-6  # update-mask propagation: rows of R·diag(flags) with norm ≥ 1e-6 become true
PREPARED, UNRESOLVED, FIRST_DIFFERENTIAL = 0, 1, 2  # what a prepare* did with the part (see prepare_pose)


@njit(cache=True, inline="always")
def stamp_seconds(stamp):
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
def copy_block(values, start, size, out, offset):
    """out[offset:offset + size, offset:offset + size] = values[start:start + size²] (row-major)."""
    for i in range(size):
        for j in range(size):
            out[offset + i, offset + j] = values[start + size * i + j]


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
        last_seconds = part.last_seconds if part.has_last else stamp_seconds(stamp)
        dt = stamp_seconds(stamp) - last_seconds
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
    copy_block(values, input_rows.IMU_LINEAR_ACCELERATION_COVARIANCE, 3, raw, 0)
    rotated_covariance(rotation, raw, slot.covariance, 12, 3, scratch.rc)
    return True
