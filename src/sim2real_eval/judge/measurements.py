"""Message → measurement preparation of ekf_node (ros_filter.cpp, humble 3.5.2).

Each function fills a 15-vector ``z``, a 15×15 covariance and 15 update flags in place and returns
False when the transform lookup fails (the caller drops the message), as preparePose /
prepareTwist / prepareAcceleration do upstream.  Messages are duck-typed ROS messages.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from .filter import clamp_rotation
from .kernels import message_orientation_matrix, njit
from .tf import TfBuffer, Transform, matrix_from_rpy, rpy_from_matrix

# Indices forced by two_d_mode (z, roll, pitch, vz, vroll, vpitch, az).
TWO_D_INDICES = (2, 3, 4, 8, 9, 10, 14)
_TWO_D = np.array(TWO_D_INDICES)
_TWO_D_DIAGONAL = _TWO_D * 16  # flat indices of the diagonal entries (i, i) of a 15×15
MASK_NORM = 1e-6


def stamp_ns(header) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def stamp_seconds(header) -> float:
    """filter_utilities::toSec of a builtin Time: sec + nanosec·1e-9 (float)."""
    return float(header.stamp.sec) + float(header.stamp.nanosec) * 1e-9


def force_two_d(z: np.ndarray, cov: np.ndarray, update: np.ndarray) -> None:
    """RosFilter::forceTwoD: the 7 out-of-plane variables become zero pseudo-measurements with
    variance 1e-6 and their flags true; off-diagonals are left as they are (3.5.2)."""
    z[_TWO_D] = 0.0
    if cov.flags.c_contiguous:
        cov.reshape(-1)[_TWO_D_DIAGONAL] = 1e-6  # a view: one flat assignment
    else:
        cov[_TWO_D, _TWO_D] = 1e-6
    update[_TWO_D] = True


def _masked(rotation: np.ndarray, flags) -> np.ndarray:
    """Update-mask propagation: rows of R·diag(flags) with norm ≥ 1e-6 become true."""
    # row norm of R·diag(f) = sqrt(Σ_j R_ij² f_j) for 0/1 flags
    return np.sqrt((rotation * rotation) @ np.asarray(flags, dtype=float)) >= MASK_NORM


def _frame_terms(target: Transform, imu_data: bool):
    """(rotation for masks/covariance, its 6×6 block form, RPY of the transform), memoised on the
    transform: static transforms are looked up once and reused for every message."""
    key = "imu" if imu_data else "plain"
    found = target.memo.get(key)
    if found is None:
        rpy = rpy_from_matrix(target.rotation)
        # IMU orientation: masks and covariance rotate by the mounting yaw only (getRPY yaw).
        rotation = matrix_from_rpy(0.0, 0.0, rpy[2]) if imu_data else target.rotation
        found = (rotation, _rot6(rotation), rpy, {})
        target.memo[key] = found
    return found


def _masked_memo(masks: dict, rotation: np.ndarray, flags: np.ndarray) -> np.ndarray:
    key = flags.tobytes()
    found = masks.get(key)
    if found is None:
        found = _masked(rotation, flags)
        masks[key] = found
    return found


def _rot6(rotation: np.ndarray) -> np.ndarray:
    out = np.zeros((6, 6))
    out[:3, :3] = rotation
    out[3:, 3:] = rotation
    return out


def _quaternion_matrix(q) -> np.ndarray:
    """Orientation as upstream reads it: all-zero → identity; |q| off by > 0.01 → normalised."""
    return message_orientation_matrix(float(q.x), float(q.y), float(q.z), float(q.w))


class PoseMemory:
    """Per sub-topic memory of preparePose: previous pose/covariance (differential) and the first
    pose (relative)."""

    def __init__(self):
        self.previous: Dict[str, Tuple[Transform, np.ndarray]] = {}
        self.initial: Dict[str, Transform] = {}

    def clear(self) -> None:
        self.previous.clear()
        self.initial.clear()


class Preparer:
    """The prepare* functions of RosFilter bound to a TF buffer, frames and the filter state."""

    def __init__(
        self, tf: TfBuffer, world_frame: str, base_link_frame: str, two_d_mode: bool, gravity: float
    ):
        self.tf = tf
        self.world_frame = world_frame
        self.base_link_frame = base_link_frame
        self.two_d_mode = two_d_mode
        self.gravity = gravity
        self.memory = PoseMemory()

    # ------------------------------------------------------------------------------------------------
    def prepare_pose(
        self,
        header,
        position,
        orientation,
        covariance36,
        key: str,
        target_frame: str,
        differential: bool,
        relative: bool,
        imu_data: bool,
        update: np.ndarray,
        z: np.ndarray,
        cov: np.ndarray,
        state: np.ndarray,
        last_stamp_seconds: float,
    ) -> bool:
        """RosFilter::preparePose.  ``last_stamp_seconds`` is last_message_times_[key] (differential Δt)."""
        frame_id = header.frame_id
        if target_frame == "" and frame_id == "":
            final_target = self.world_frame
            pose_frame = final_target
        elif target_frame == "":
            final_target = frame_id
            pose_frame = final_target
        else:
            final_target = target_frame
            pose_frame = final_target if (differential and not imu_data) else frame_id
        pose = Transform(
            _quaternion_matrix(orientation),
            np.array([float(position.x), float(position.y), float(position.z)]),
        )
        target = self.tf.lookup_safe(final_target, pose_frame, stamp_ns(header))
        if target is None:
            return False
        rotation, rot6, target_rpy, masks = _frame_terms(target, imu_data)
        update[0:3] = _masked_memo(masks, rotation, update[0:3])
        update[3:6] = _masked_memo(masks, rotation, update[3:6])
        raw_cov = np.array(covariance36, dtype=float).reshape(6, 6)
        cov_rotated = rot6 @ raw_cov @ rot6.T
        if imu_data:
            roll_offset, pitch_offset, yaw_offset = target_rpy
            roll, pitch, yaw = rpy_from_matrix(pose.rotation)
            angles = np.array(
                [
                    clamp_rotation(roll - roll_offset),
                    clamp_rotation(pitch - pitch_offset),
                    clamp_rotation(yaw - yaw_offset),
                ]
            )
            angles = matrix_from_rpy(0.0, 0.0, yaw_offset) @ angles
            pose = Transform(matrix_from_rpy(angles[0], angles[1], angles[2]), pose.translation)
            target = None  # upstream: target = identity from here on
        if differential:
            success = False
            current = pose
            previous = self.memory.previous.get(key)
            if previous is not None:
                prev_pose, prev_cov = previous
                delta = prev_pose.inverse_times(pose)
                if target is not None:  # the target rotation (identity for IMU data)
                    delta = Transform(target.rotation, np.zeros(3)) * delta
                dt = stamp_seconds(header) - last_stamp_seconds
                with np.errstate(divide="ignore", invalid="ignore"):
                    linear = delta.translation / dt
                    angular = np.array(rpy_from_matrix(delta.rotation)) / dt
                twist_update = np.zeros(15, dtype=bool)
                twist_update[6:12] = update[0:6]
                update[:] = twist_update
                twist_cov = (cov_rotated + rot6 @ prev_cov @ rot6.T) * dt
                success = self.prepare_twist(
                    header,
                    self.base_link_frame,
                    linear,
                    angular,
                    twist_cov,
                    self.base_link_frame,
                    update,
                    z,
                    cov,
                    state,
                )
            self.memory.previous[key] = (current, raw_cov)
            return success
        if relative:
            initial = self.memory.initial.setdefault(key, pose)
            pose = initial.inverse_times(pose)
        if target is not None:  # identity for IMU data: skipping the product is exact
            pose = target * pose
        z[0:3] = pose.translation
        z[3:6] = rpy_from_matrix(pose.rotation)
        cov[0:6, 0:6] = cov_rotated
        if self.two_d_mode:
            force_two_d(z, cov, update)
        return True

    # ------------------------------------------------------------------------------------------------
    def prepare_twist(
        self,
        header,
        frame_id: Optional[str],
        linear,
        angular,
        covariance,
        target_frame: str,
        update: np.ndarray,
        z: np.ndarray,
        cov: np.ndarray,
        state: np.ndarray,
    ) -> bool:
        """RosFilter::prepareTwist: ω_b = R·ω, v_b = R·v + t × ω_state, covariance rotated blockwise."""
        msg_frame = target_frame if not frame_id else frame_id
        target = self.tf.lookup_safe(target_frame, msg_frame, stamp_ns(header))
        if target is None:
            return False
        rotation, rot6, _rpy, masks = _frame_terms(target, False)
        linear = np.asarray(linear, dtype=float)
        angular = np.asarray(angular, dtype=float)
        z[9:12] = rotation @ angular
        t, w = target.translation, state[9:12]
        lever = np.array([t[1] * w[2] - t[2] * w[1], t[2] * w[0] - t[0] * w[2], t[0] * w[1] - t[1] * w[0]])
        z[6:9] = rotation @ linear + lever  # t × ω_state
        update[6:9] = _masked_memo(masks, rotation, update[6:9])
        update[9:12] = _masked_memo(masks, rotation, update[9:12])
        cov[6:12, 6:12] = rot6 @ np.asarray(covariance, dtype=float).reshape(6, 6) @ rot6.T
        if self.two_d_mode:
            force_two_d(z, cov, update)
        return True

    # ------------------------------------------------------------------------------------------------
    def prepare_acceleration(
        self,
        msg,
        target_frame: str,
        remove_gravity: bool,
        update: np.ndarray,
        z: np.ndarray,
        cov: np.ndarray,
        state: np.ndarray,
    ) -> bool:
        """RosFilter::prepareAcceleration (humble order): gravity removed in the sensor frame using the
        message orientation (or the filter attitude ∘ mounting when orientation_covariance[0] = −1),
        then a_b = R·a_s; covariance R·C·Rᵀ; no lever-arm term."""
        header = msg.header
        msg_frame = header.frame_id or self.base_link_frame
        target = self.tf.lookup_safe(target_frame, msg_frame, stamp_ns(header))
        if target is None:
            return False
        a = msg.linear_acceleration
        acc = np.array([float(a.x), float(a.y), float(a.z)])
        if remove_gravity:
            if abs(float(msg.orientation_covariance[0]) + 1.0) < 1e-9:
                attitude = matrix_from_rpy(state[3], state[4], state[5]) @ target.rotation
            else:
                attitude = _quaternion_matrix(msg.orientation)
            acc = acc - self.gravity * attitude[2]  # Bᵀ·(0, 0, g): the third row of B times g
        rotation, _rot6_unused, _rpy, masks = _frame_terms(target, False)
        z[12:15] = rotation @ acc
        update[12:15] = _masked_memo(masks, rotation, update[12:15])
        raw = np.array(msg.linear_acceleration_covariance, dtype=float).reshape(3, 3)
        cov[12:15, 12:15] = rotation @ raw @ rotation.T
        if self.two_d_mode:
            force_two_d(z, cov, update)
        return True


# --- batch preparation of IMU messages (the Judge's fast path) -----------------------------------------
# The state-independent part of imuCallback → preparePose / prepareTwist / prepareAcceleration for
# all messages of a topic at once, with the same compiled tf2 helpers as the per-message code above.
# The state-dependent parts (lever arm with ω_state, gravity from the filter attitude) are applied at
# callback time by engine._deliver.


@njit(cache=True)
def imu_orientation_rows(quaternions, offsets, relative):
    """IMU orientation → measured (roll, pitch, yaw) per message (N, 3): message RPY minus the mounting
    RPY offsets (clamped), rotated by Rz(yaw offset), rebuilt with setRPY; relative: first⁻¹·R."""
    n = quaternions.shape[0]
    out = np.empty((n, 3))
    yaw_rotation = matrix_from_rpy(0.0, 0.0, offsets[2])
    initial = np.eye(3)
    for k in range(n):
        m = message_orientation_matrix(quaternions[k, 0], quaternions[k, 1], quaternions[k, 2],
                                       quaternions[k, 3])
        roll, pitch, yaw = rpy_from_matrix(m)
        angles = np.array([clamp_rotation(roll - offsets[0]), clamp_rotation(pitch - offsets[1]),
                           clamp_rotation(yaw - offsets[2])])
        angles = yaw_rotation @ angles
        rotation = matrix_from_rpy(angles[0], angles[1], angles[2])
        if relative:
            if k == 0:
                initial = rotation
            rotation = initial.T @ rotation
        out[k, 0], out[k, 1], out[k, 2] = rpy_from_matrix(rotation)
    return out


@njit(cache=True)
def rotated_blocks(rotation, covariances, offset):
    """The 6×6 covariance R6·C6·R6ᵀ per message, R6 = diag(R, R) and C6 holding a 3×3 covariance (N, 9)
    at ``offset`` (0 or 3) and zeros elsewhere: only the block R·C·Rᵀ at ``offset`` is non-zero."""
    n = covariances.shape[0]
    out = np.zeros((n, 6, 6))
    rc = np.empty((3, 3))
    for k in range(n):
        for i in range(3):
            for j in range(3):
                acc = 0.0
                for a in range(3):
                    acc += rotation[i, a] * covariances[k, 3 * a + j]
                rc[i, j] = acc
        for i in range(3):
            for j in range(3):
                acc = 0.0
                for b in range(3):
                    acc += rc[i, b] * rotation[j, b]
                out[k, offset + i, offset + j] = acc
    return out


@njit(cache=True)
def rotated_vectors(rotation, vectors):
    """R·v per message (N, 3)."""
    n = vectors.shape[0]
    out = np.empty((n, 3))
    for k in range(n):
        out[k] = rotation @ np.ascontiguousarray(vectors[k])
    return out


@njit(cache=True)
def gravity_removed_rows(rotation, accelerations, quaternions, gravity):
    """a_b = R·(a_s − g·Bᵀe_z) per message, B the message orientation (humble order)."""
    n = accelerations.shape[0]
    out = np.empty((n, 3))
    for k in range(n):
        attitude = message_orientation_matrix(quaternions[k, 0], quaternions[k, 1], quaternions[k, 2],
                                              quaternions[k, 3])
        acc = np.ascontiguousarray(accelerations[k]) - gravity * attitude[2]
        out[k] = rotation @ acc
    return out
