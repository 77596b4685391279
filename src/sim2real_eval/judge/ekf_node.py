"""ekf_node around the filter (ros_filter.cpp, humble 3.5.2): callbacks, sub-measurement split, stale-stamp
gates, preparePose / prepareTwist / prepareAcceleration (compiled in ``ekf_prepare.py``), forceTwoD, the
queue, the periodic update and the published odometry.

One measurement path: a message is one row of columns (input_rows.py); ``ekf_callback`` (compiled) runs
ros_filter's callback for it at the moment it is delivered — gate, preparation into a queue slot (the
prepared measurement: z, covariance, update flags, threshold, source), forceTwoD, enqueue — reading
the TF table and the filter state *now*, as upstream does (the lever arm t × ω and gravity from the
filter attitude use the current state; differential and relative poses the part's memory).
``EkfNode.handle`` is that callback for one message object; the Judge's loop (loop.py) calls it for
every row of a chunk.  ``ekf_tick`` is periodicUpdate.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional

import numpy as np

from ..errors import UserError
from . import input_rows
from .compiled_cache import njit
from .ekf_prepare import (
    FIRST_DIFFERENTIAL,
    PREPARED,
    UNRESOLVED,
    copy_block,
    prepare_acceleration,
    prepare_pose,
    prepare_twist,
    stamp_seconds,
)
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
    copy1,
    quaternion_from_rpy_into,
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
from .tf import TfBuffer, edge_add

NO_SET_POSE_NS = 0  # set_pose is not implemented: the last set-pose stamp stays 0


# --- the callback (compiled) -----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _finite(values, start, count):
    for i in range(start, start + count):
        if not np.isfinite(values[i]):
            return False
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
        copy_block(values, c, size, covariance6, at)
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
    part.last_seconds = stamp_seconds(stamp)
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
