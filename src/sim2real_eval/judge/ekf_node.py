"""ekf_node's behaviour around the filter (ros_filter.cpp): callbacks, sub-measurement split, stale-stamp
gates, the stamp-ordered queue, the periodic update and the published odometry."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Dict, List, Optional

import numpy as np

from ..errors import UserError
from . import engine
from .filter import make_filter
from .measurements import (
    Preparer,
    _frame_terms,
    _masked_memo,
    gravity_removed_rows,
    imu_orientation_rows,
    rotated_blocks,
    rotated_vectors,
    stamp_ns,
    stamp_seconds,
)
from .params import STATE_SIZE, EkfParams, SensorConfig
from .tf import TfBuffer, Transform, quaternion_from_rpy

TWO_D_INDICES_ARRAY = np.array(engine.TWO_D_INDICES)


@dataclass
class _Part:
    """One sub-measurement stream (e.g. ``imu0_twist``) of an input."""

    key: str
    update: np.ndarray  # (15,) bool, the callback's update vector
    threshold: float

    def __post_init__(self):
        self.update_sum = int(self.update.sum())  # loadParams' update_sum_ (fixed at load time)


@dataclass
class _Input:
    sensor: SensorConfig
    pose: _Part
    twist: _Part
    acceleration: Optional[_Part] = None


def _parts(sensor: SensorConfig, params: EkfParams, warnings: List[str]) -> _Input:
    config = np.array(sensor.config, dtype=bool)
    name = sensor.name
    if sensor.kind == "odom":
        pose = config.copy()
        pose[6:12] = False  # pose part: 0-5 (+ accel flags, fused as zero)
        twist = config.copy()
        twist[0:6] = False  # twist part: 6-14
        return _Input(
            sensor,
            _Part(f"{name}_pose", pose, sensor.pose_threshold),
            _Part(f"{name}_twist", twist, sensor.twist_threshold),
        )
    if sensor.kind == "pose":
        pose = config.copy()
        pose[6:] = False
        return _Input(
            sensor,
            _Part(name, pose, sensor.pose_threshold),
            _Part(f"{name}_unused", np.zeros(STATE_SIZE, bool), math.inf),
        )
    if sensor.kind == "twist":
        twist = config.copy()
        twist[:6] = False
        twist[12:] = False
        return _Input(
            sensor,
            _Part(f"{name}_unused", np.zeros(STATE_SIZE, bool), math.inf),
            _Part(name, twist, sensor.twist_threshold),
        )
    # imu
    if config[0:3].any() or config[6:9].any():
        warnings.append(f"{params.source}: {name}_config: IMU position/linear-velocity flags are ignored")
    pose = np.zeros(STATE_SIZE, bool)
    pose[3:6] = config[3:6]
    twist = np.zeros(STATE_SIZE, bool)
    twist[9:12] = config[9:12]
    accel = np.zeros(STATE_SIZE, bool)
    accel[12:15] = config[12:15]
    return _Input(
        sensor,
        _Part(f"{name}_pose", pose, sensor.pose_threshold),
        _Part(f"{name}_twist", twist, sensor.twist_threshold),
        _Part(f"{name}_acceleration", accel, sensor.acceleration_threshold),
    )


@dataclass
class Odometry:
    """One /odometry/filtered (or /odometry/gps) message's content."""

    stamp_ns: int
    frame_id: str
    child_frame_id: str
    position: np.ndarray
    orientation: np.ndarray
    pose_covariance: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    twist_covariance: np.ndarray

    def as_message(self):
        """A duck-typed nav_msgs/Odometry carrying this content (for feeding another node)."""

        def vec(v):
            return SimpleNamespace(x=float(v[0]), y=float(v[1]), z=float(v[2]))

        sec, nanosec = divmod(int(self.stamp_ns), 1_000_000_000)
        q = self.orientation
        return SimpleNamespace(
            header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec), frame_id=self.frame_id),
            child_frame_id=self.child_frame_id,
            pose=SimpleNamespace(
                pose=SimpleNamespace(
                    position=vec(self.position),
                    orientation=SimpleNamespace(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3])),
                ),
                covariance=self.pose_covariance,
            ),
            twist=SimpleNamespace(
                twist=SimpleNamespace(linear=vec(self.linear_velocity), angular=vec(self.angular_velocity)),
                covariance=self.twist_covariance,
            ),
        )


def _xyz(v) -> np.ndarray:
    return np.array([float(v.x), float(v.y), float(v.z)])


def check_message(topic: str, kind: str, msg) -> None:
    """Raise a UserError naming the topic when msg lacks the fields its input kind needs."""
    required = {
        "odom": ("header", "child_frame_id", "pose", "twist"),
        "pose": ("header", "pose"),
        "twist": ("header", "twist"),
        "imu": ("header", "orientation", "angular_velocity", "linear_acceleration"),
    }[kind]
    expected = {
        "odom": "nav_msgs/msg/Odometry",
        "pose": "geometry_msgs/msg/PoseWithCovarianceStamped",
        "twist": "geometry_msgs/msg/TwistWithCovarianceStamped",
        "imu": "sensor_msgs/msg/Imu",
    }[kind]
    if (
        not all(hasattr(msg, name) for name in required)
        or (kind in ("pose", "odom") and not hasattr(msg.pose, "covariance"))
        or (kind in ("twist", "odom") and not hasattr(msg.twist, "covariance"))
    ):
        got = getattr(msg, "__msgtype__", type(msg).__name__)
        raise UserError(f"topic {topic}: expected {expected}, got {got}")


class EkfNode:
    """The ekf_node of robot_localization on the data clock (no ROS)."""

    def __init__(self, params: EkfParams, tf: TfBuffer, topic_of=lambda name: name):
        self.params = params
        self.tf = tf
        self.filter = make_filter(params)
        self.warnings: List[str] = []
        self.inputs: List[_Input] = [_parts(s, params, self.warnings) for s in params.sensors]
        # Fusing IMU linear acceleration turns control of the matching velocity off (loadParams).
        if params.use_control:
            for item in self.inputs:
                if item.sensor.kind == "imu":
                    for axis in range(3):
                        if item.sensor.config[12 + axis]:
                            self.filter.control_update[axis] = False
            if not self.filter.control_update.any():
                self.filter.use_control = False
        self.subscriptions: Dict[str, List[_Input]] = {}
        for item in self.inputs:
            self.subscriptions.setdefault(topic_of(_absolute(item.sensor.topic)), []).append(item)
        self.preparer = Preparer(
            tf,
            params.world_frame,
            params.base_link_frame,
            params.two_d_mode,
            params.gravitational_acceleration,
        )
        self._allocate_pool(16)
        self.last_message_ns: Dict[str, int] = {}
        self.last_set_pose_ns = 0
        self.last_published_ns = 0
        self.period_ns = int(round(1e9 / params.frequency))
        self.dropped: Counter = Counter()
        self.processed: Counter = Counter()
        self.enabled = not params.disabled_at_startup
        self._last_header_seconds: Dict[str, float] = {}
        self.unresolved: Counter = Counter()

    # --- callbacks ---------------------------------------------------------------------------------
    def handle(self, topic: str, msg) -> None:
        for item in self.subscriptions.get(topic, ()):
            kind = item.sensor.kind
            if kind == "odom":
                self._odometry(item, msg)
            elif kind == "imu":
                self._imu(item, msg)
            elif kind == "pose":
                self._pose(item.pose, msg, msg.pose, self.params.world_frame, item.sensor, False)
            else:
                self._twist(item.twist, msg.header, msg.header.frame_id, msg.twist)

    def _gate(self, part: _Part, stamp: int) -> bool:
        """Stale-stamp gate per sub-topic key (older than last accepted → drop; equal passes)."""
        last = self.last_message_ns.setdefault(part.key, stamp)
        if last <= stamp:
            return True
        self.dropped["stale_stamp"] += 1
        return False

    def _odometry(self, item: _Input, msg) -> None:
        stamp = stamp_ns(msg.header)
        if self.last_set_pose_ns >= stamp:
            self.dropped["stamp_not_after_set_pose"] += 1
            return
        if item.pose.update_sum > 0:
            self._pose(item.pose, msg, msg.pose, self.params.world_frame, item.sensor, False)
        if item.twist.update_sum > 0:
            self._twist(item.twist, msg.header, msg.child_frame_id, msg.twist)

    def _imu(self, item: _Input, msg) -> None:
        stamp = stamp_ns(msg.header)
        if self.last_set_pose_ns >= stamp:
            self.dropped["stamp_not_after_set_pose"] += 1
            return
        if item.pose.update_sum > 0:
            if abs(float(msg.orientation_covariance[0]) + 1.0) < 1e-9:
                self.dropped["imu_orientation_not_provided"] += 1
            else:
                cov = np.zeros(36)
                oc = np.asarray(msg.orientation_covariance, dtype=float).reshape(3, 3)
                cov.reshape(6, 6)[3:, 3:] = oc
                self._pose(
                    item.pose,
                    msg,
                    _ImuPose(msg.orientation, cov),
                    self.params.base_link_frame,
                    item.sensor,
                    True,
                )
        if item.twist.update_sum > 0:
            if abs(float(msg.angular_velocity_covariance[0]) + 1.0) < 1e-9:
                self.dropped["imu_angular_velocity_not_provided"] += 1
            else:
                cov = np.zeros(36)
                gc = np.asarray(msg.angular_velocity_covariance, dtype=float).reshape(3, 3)
                cov.reshape(6, 6)[3:, 3:] = gc
                self._twist(item.twist, msg.header, msg.header.frame_id, _ImuTwist(msg.angular_velocity, cov))
        if item.acceleration is not None and item.acceleration.update_sum > 0:
            if abs(float(msg.linear_acceleration_covariance[0]) + 1.0) < 1e-9:
                self.dropped["imu_acceleration_not_provided"] += 1
            else:
                self._acceleration(item.acceleration, msg, item.sensor)

    def _pose(
        self, part: _Part, msg, pose_with_cov, target_frame: str, sensor: SensorConfig, imu_data: bool
    ) -> None:
        header = msg.header
        stamp = stamp_ns(header)
        if not imu_data and self.last_set_pose_ns >= stamp:
            self.dropped["stamp_not_after_set_pose"] += 1
            return
        if not self._gate(part, stamp):
            return
        z = np.zeros(STATE_SIZE)
        cov = np.zeros((STATE_SIZE, STATE_SIZE))
        update = part.update.copy()
        last_seconds = self._last_seconds(part.key, header)
        had_previous = part.key in self.preparer.memory.previous
        ok = self.preparer.prepare_pose(
            header,
            pose_with_cov.pose.position,
            pose_with_cov.pose.orientation,
            pose_with_cov.covariance,
            part.key,
            target_frame,
            sensor.differential,
            sensor.relative,
            imu_data,
            update,
            z,
            cov,
            self.filter.state,
            last_seconds,
        )
        if ok:
            self._enqueue(part, z, cov, update, stamp)
        elif sensor.differential and not had_previous and part.key in self.preparer.memory.previous:
            self.dropped["differential_first_message"] += 1
        else:
            self._unresolved(part, target_frame, header.frame_id)
        self.last_message_ns[part.key] = stamp
        self._last_header_seconds[part.key] = stamp_seconds(header)

    def _last_seconds(self, key: str, header) -> float:
        # last_message_times_ as builtin Time → toSec (sec + nsec·1e-9); the gate inserted it already.
        return self._last_header_seconds.get(key, stamp_seconds(header))

    def _twist(self, part: _Part, header, frame_id: str, twist_with_cov) -> None:
        stamp = stamp_ns(header)
        if self.last_set_pose_ns >= stamp:
            self.dropped["stamp_not_after_set_pose"] += 1
            return
        if not self._gate(part, stamp):
            return
        z = np.zeros(STATE_SIZE)
        cov = np.zeros((STATE_SIZE, STATE_SIZE))
        update = part.update.copy()
        t = twist_with_cov.twist
        ok = self.preparer.prepare_twist(
            header,
            frame_id,
            _xyz(t.linear),
            _xyz(t.angular),
            twist_with_cov.covariance,
            self.params.base_link_frame,
            update,
            z,
            cov,
            self.filter.state,
        )
        if ok:
            self._enqueue(part, z, cov, update, stamp)
        else:
            self._unresolved(part, self.params.base_link_frame, frame_id)
        self.last_message_ns[part.key] = stamp
        self._last_header_seconds[part.key] = stamp_seconds(header)

    def _acceleration(self, part: _Part, msg, sensor: SensorConfig) -> None:
        stamp = stamp_ns(msg.header)
        if not self._gate(part, stamp):
            return
        z = np.zeros(STATE_SIZE)
        cov = np.zeros((STATE_SIZE, STATE_SIZE))
        update = part.update.copy()
        ok = self.preparer.prepare_acceleration(
            msg,
            self.params.base_link_frame,
            sensor.remove_gravitational_acceleration,
            update,
            z,
            cov,
            self.filter.state,
        )
        if ok:
            self._enqueue(part, z, cov, update, stamp)
        else:
            self._unresolved(part, self.params.base_link_frame, msg.header.frame_id)
        self.last_message_ns[part.key] = stamp
        self._last_header_seconds[part.key] = stamp_seconds(msg.header)

    def _unresolved(self, part: _Part, target: str, frame: str) -> None:
        """A failed transform lookup drops the measurement (upstream); count it per (key, frames)."""
        self.dropped["tf_unavailable"] += 1
        self.unresolved[(part.key, target, frame)] += 1

    def unresolved_warnings(self) -> List[str]:
        return [
            f"{key}: {count} message(s) dropped: no transform {frame!r} -> {target!r}"
            for (key, target, frame), count in sorted(self.unresolved.items())
        ]

    # --- the queue (engine.py: a heap of pool slots) -------------------------------------------------
    def _allocate_pool(self, capacity: int) -> None:
        """(Re)allocate the measurement pool, keeping queued entries in their slots and heap order."""
        old = getattr(self, "pool", None)
        self.pool = (
            np.zeros(capacity, dtype=np.int64),  # heap of slots
            np.zeros(capacity, dtype=np.int64),  # free slots (stack)
            np.zeros(capacity, dtype=np.int64),  # stamp
            np.zeros((capacity, STATE_SIZE)),  # z
            np.zeros((capacity, STATE_SIZE, STATE_SIZE)),  # covariance
            np.zeros((capacity, STATE_SIZE), dtype=bool),  # update flags
            np.zeros(capacity),  # threshold
        )
        ints = self.filter.ints
        if old is None:
            used = 0
        else:
            used = len(old[0])
            for new, previous in zip(self.pool, old):
                new[:used] = previous
        # Slots ≥ used are free; the old free stack was empty (only a full pool grows).
        count = capacity - used
        self.pool[1][:count] = np.arange(capacity - 1, used - 1, -1)
        ints[engine.I_FREE_SIZE] = count

    @property
    def queue(self) -> List[int]:
        """Stamps of the queued measurements (heap order)."""
        heap, stamps = self.pool[0], self.pool[2]
        return [int(stamps[heap[i]]) for i in range(int(self.filter.ints[engine.I_HEAP_SIZE]))]

    def _enqueue(self, part: _Part, z, cov, update, stamp: int) -> None:
        ints = self.filter.ints
        if ints[engine.I_FREE_SIZE] == 0:
            self._allocate_pool(2 * len(self.pool[0]))
        heap, free, stamps, pool_z, pool_cov, pool_update, pool_threshold = self.pool
        slot = engine.take_slot(free, ints)
        stamps[slot] = stamp
        pool_z[slot] = z
        pool_cov[slot] = cov
        pool_update[slot] = update
        pool_threshold[slot] = part.threshold
        engine.heap_push(heap, stamps, ints, slot)

    def set_control(self, linear, angular, now_ns: int) -> None:
        """cmd_vel (geometry_msgs/Twist): stamped with the node's now(), pushed into the filter."""
        self.filter.set_control(np.concatenate([_xyz(linear), _xyz(angular)]), now_ns)

    # --- periodic update ---------------------------------------------------------------------------
    def tick(self, now_ns: int) -> Optional[Odometry]:
        """periodicUpdate: integrateMeasurements (engine.ekf_tick), then publish only if the filter
        stamp advanced."""
        if not self.enabled:
            return None
        published = engine.ekf_tick(*self.filter.engine_args(), *self.pool, int(now_ns))
        self.sync_counts()
        if not published:
            return None
        self.published_tf(self.filter.last_measurement_ns, self.filter.state.copy())
        return self.odometry()

    def sync_counts(self) -> None:
        """Outcome counters of the engine → ``processed`` / ``dropped``."""
        ints = self.filter.ints
        for name, index in (("init", engine.I_INIT_COUNT), ("accepted", engine.I_ACCEPTED_COUNT),
                            ("rejected", engine.I_REJECTED_COUNT)):
            if ints[index]:
                self.processed[name] = int(ints[index])
        if ints[engine.I_REJECTED_COUNT]:
            self.dropped["mahalanobis_rejected"] = int(ints[engine.I_REJECTED_COUNT])

    def published_tf(self, stamp: int, state: np.ndarray) -> None:
        """publish_tf: world→base_link at the published stamp (+ transform_time_offset)."""
        if self.params.publish_tf and self.params.world_frame == self.params.odom_frame:
            self.tf.add_dynamic(
                self.params.odom_frame,
                self.params.base_link_frame_output,
                int(stamp) + int(round(self.params.transform_time_offset * 1e9)),
                state,  # converted to a Transform only when looked up (tf.py)
            )

    def odometry(self) -> Odometry:
        x = self.filter.state
        p = self.filter.covariance
        return Odometry(
            self.filter.last_measurement_ns,
            self.params.world_frame,
            self.params.base_link_frame_output,
            x[0:3].copy(),
            quaternion_from_rpy(x[3], x[4], x[5]),
            p[0:6, 0:6].reshape(36).copy(),
            x[6:9].copy(),
            x[9:12].copy(),
            p[6:12, 6:12].reshape(36).copy(),
        )


def _absolute(topic: str) -> str:
    return topic if topic.startswith("/") else "/" + topic


class _ImuPose:
    """The PoseWithCovariance imuCallback builds from an Imu message (orientation + its 3×3 block)."""

    class _Zero:
        x = y = z = 0.0

    def __init__(self, orientation, covariance36):
        self.pose = self
        self.position = self._Zero()
        self.orientation = orientation
        self.covariance = covariance36


class _ImuTwist:
    class _Zero:
        x = y = z = 0.0

    def __init__(self, angular_velocity, covariance36):
        self.twist = self
        self.linear = self._Zero()
        self.angular = angular_velocity
        self.covariance = covariance36


# --- batch preparation for the Judge's compiled loop ------------------------------------------------

ROW_FIELDS = ("position", "part", "recv", "stamp", "z", "update", "block", "offset", "size", "threshold",
              "fix", "aux")


def _static_lookup(tf: TfBuffer, target: str, source: str) -> Optional[Transform]:
    """T(target←source) when it resolves through static transforms only (then it never changes during a
    run), else None (the message is left to the per-message callback)."""
    found = tf.lookup_safe(target, source, 0)
    if found is None or tf._static_cache.get((target, source)) is not found:
        return None
    return found


def _gate(stamps: np.ndarray) -> np.ndarray:
    """Per-key stale-stamp gate over a key's messages in order: pass iff stamp ≥ every earlier stamp
    that reached the gate (the last accepted stamp is their running maximum)."""
    if not len(stamps):
        return np.zeros(0, dtype=bool)
    previous = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min], stamps[:-1]]))
    return stamps >= previous


def batch_imu_rows(node: EkfNode, topic: str, items: list, positions: List[int]):
    """imuCallback for every message of an IMU topic at once → prepared rows for engine.advance (dict
    of arrays, ``dropped`` and ``unresolved`` counters), or None when the topic needs the per-message
    callbacks (non-IMU input, differential IMU, several frames, or a transform that is not static)."""
    inputs = node.subscriptions.get(topic, [])
    if not inputs or any(item.sensor.kind != "imu" or item.sensor.differential for item in inputs):
        return None
    msgs = [msg for _recv, _topic, msg in items]
    frames = {msg.header.frame_id for msg in msgs}
    if len(frames) != 1:
        return None
    frame = frames.pop()
    params = node.params
    base = params.base_link_frame
    imu_target = _static_lookup(node.tf, base, frame) if frame else None
    rate_target = _static_lookup(node.tf, base, frame or base)
    n = len(msgs)
    # One pass over the messages: every number a row needs, as one float table (+ int stamps).
    stamps = np.array([m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in msgs],
                      dtype=np.int64)
    table = np.array(
        [
            (m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w,
             m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z,
             m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z,
             *m.orientation_covariance, *m.angular_velocity_covariance, *m.linear_acceleration_covariance)
            for m in msgs
        ],
        dtype=float,
    ).reshape(n, 37)
    quaternions = np.ascontiguousarray(table[:, 0:4])
    gyro = np.ascontiguousarray(table[:, 4:7])
    accel = np.ascontiguousarray(table[:, 7:10])
    orientation_cov = np.ascontiguousarray(table[:, 10:19])
    gyro_cov = np.ascontiguousarray(table[:, 19:28])
    accel_cov = np.ascontiguousarray(table[:, 28:37])
    recv = np.array([r for r, _t, _m in items], dtype=np.int64)
    position = np.asarray(positions, dtype=np.int64)
    dropped: Counter = Counter()
    alive = stamps > node.last_set_pose_ns
    dropped["stamp_not_after_set_pose"] += int((~alive).sum()) * len(inputs)  # once per input
    parts = []
    for item_index, item in enumerate(inputs):
        sensor = item.sensor
        for part_index, (part, cov, label) in enumerate(
            ((item.pose, orientation_cov, "orientation"), (item.twist, gyro_cov, "angular_velocity"),
             (item.acceleration, accel_cov, "acceleration"))
        ):
            if part is None or part.update_sum == 0:
                continue
            provided = np.abs(cov[:, 0] + 1.0) >= 1e-9
            dropped[f"imu_{label}_not_provided"] += int((alive & ~provided).sum())
            reach = np.flatnonzero(alive & provided)
            passing = reach[_gate(stamps[reach])]
            dropped["stale_stamp"] += len(reach) - len(passing)
            target = imu_target if part_index == 0 else rate_target
            if target is None:
                if len(passing):
                    return None  # an unresolved frame: leave the counting to the callbacks
                continue
            k = len(passing)
            z = np.zeros((k, STATE_SIZE))
            update = np.zeros((k, STATE_SIZE), dtype=bool)
            fix = np.zeros(k, dtype=np.int64)
            aux = np.zeros((k, 12))
            flags = part.update.copy()
            if part_index == 0:  # preparePose (imu_data): rotations by the mounting yaw only
                rotation, rot6, target_rpy, masks = _frame_terms(target, True)
                flags[0:3] = _masked_memo(masks, rotation, flags[0:3])
                flags[3:6] = _masked_memo(masks, rotation, flags[3:6])
                z[:, 3:6] = imu_orientation_rows(quaternions[passing], np.array(target_rpy), sensor.relative)
                block = rotated_blocks(rotation, orientation_cov[passing], 3)
                offset, size = 0, 6
            elif part_index == 1:  # prepareTwist: ω_b = R·ω, v_b = R·0 + t × ω_state (at callback)
                rotation, rot6, _rpy, masks = _frame_terms(target, False)
                z[:, 9:12] = rotated_vectors(rotation, gyro[passing])
                z[:, 6:9] = rotated_vectors(rotation, np.zeros((k, 3)))
                if np.any(target.translation != 0.0):
                    fix[:] = engine.FIX_LEVER_ARM
                    aux[:, 0:3] = target.translation
                flags[6:9] = _masked_memo(masks, rotation, flags[6:9])
                flags[9:12] = _masked_memo(masks, rotation, flags[9:12])
                block = rotated_blocks(rotation, gyro_cov[passing], 3)
                offset, size = 6, 6
            else:  # prepareAcceleration (humble): gravity removed in the sensor frame, then rotated
                rotation, rot6, _rpy, masks = _frame_terms(target, False)
                acc = accel[passing]
                if sensor.remove_gravitational_acceleration:
                    from_state = ~provided_orientation(orientation_cov[passing])
                    z[:, 12:15] = gravity_removed_rows(rotation, acc, quaternions[passing],
                                                       params.gravitational_acceleration)
                    fix[from_state] = engine.FIX_GRAVITY_FROM_STATE
                    aux[from_state, 0:3] = acc[from_state]
                    aux[from_state, 3:12] = rotation.reshape(9)
                else:
                    z[:, 12:15] = rotated_vectors(rotation, acc)
                flags[12:15] = _masked_memo(masks, rotation, flags[12:15])
                block = rotated_blocks(rotation, accel_cov[passing], 0)  # top-left 3×3: R·C·Rᵀ
                offset, size = 12, 3
            update[:] = flags
            if params.two_d_mode:
                z[:, TWO_D_INDICES_ARRAY] = 0.0
                update[:, TWO_D_INDICES_ARRAY] = True
            parts.append({
                "position": position[passing], "part": np.full(k, 3 * item_index + part_index),
                "recv": recv[passing], "stamp": stamps[passing], "z": z, "update": update, "block": block,
                "offset": np.full(k, offset, dtype=np.int64), "size": np.full(k, size, dtype=np.int64),
                "threshold": np.full(k, part.threshold), "fix": fix, "aux": aux,
            })
    rows = concatenate_rows(parts)
    rows["dropped"] = +dropped
    return rows


def provided_orientation(orientation_cov: np.ndarray) -> np.ndarray:
    """orientation_covariance[0] ≠ −1 (|c₀ + 1| ≥ 1e-9): the message carries an orientation."""
    return np.abs(orientation_cov[:, 0] + 1.0) >= 1e-9


def concatenate_rows(parts: list) -> dict:
    """Rows of several topics/parts in callback order: message position, then input and part order."""
    if not parts:
        rows = {
            "position": np.zeros(0, np.int64), "part": np.zeros(0, np.int64), "recv": np.zeros(0, np.int64),
            "stamp": np.zeros(0, np.int64), "z": np.zeros((0, STATE_SIZE)),
            "update": np.zeros((0, STATE_SIZE), bool), "block": np.zeros((0, 6, 6)),
            "offset": np.zeros(0, np.int64), "size": np.zeros(0, np.int64), "threshold": np.zeros(0),
            "fix": np.zeros(0, np.int64), "aux": np.zeros((0, 12)),
        }
    elif len(parts) == 1 and "dropped" in parts[0]:
        return parts[0]  # already in order
    else:
        # One scatter per field: row i of the concatenation goes to its place in callback order.
        position = np.concatenate([p["position"] for p in parts])
        order = np.lexsort((np.concatenate([p["part"] for p in parts]), position))
        destination = np.empty_like(order)
        destination[order] = np.arange(len(order))
        rows = {}
        for name in ROW_FIELDS:
            first = parts[0][name]
            out = np.empty((len(order),) + first.shape[1:], dtype=first.dtype)
            start = 0
            for p in parts:
                count = len(p[name])
                out[destination[start:start + count]] = p[name]
                start += count
            rows[name] = out
    dropped: Counter = Counter()
    for p in parts:
        dropped.update(p.get("dropped", {}))
    rows["dropped"] = dropped
    rows["unresolved"] = Counter()
    return rows
