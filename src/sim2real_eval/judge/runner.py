"""The Judge: ekf_node (+ navsat_transform_node) driven by a recorded message stream on the data clock.

Scheduling (deterministic replacement for ROS timers; see docs/judge.md):
- Messages are delivered at their receive time (bag record time), in the given order.
- The EKF timer ticks at t = k·round(1e9/frequency) ns, the navsat timer at k·round(1e9/navsat_frequency).
  At one instant the order is: messages received at or before t, then the EKF tick, then the navsat tick.
- The EKF's published odometry reaches navsat at once; navsat's /odometry/gps reaches the EKF at once
  (it is processed at the next EKF tick).
- Ticks run from the first message until the first EKF tick at or after the last message.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from ..errors import DataWarning, UserError
from . import engine
from .ekf_node import EkfNode, Odometry, _absolute, batch_imu_rows, check_message, concatenate_rows
from .engine import NEVER
from .navsat import NavsatNode, lat_lon_to_utm_many
from .params import EkfParams, NavsatParams
from .tf import StaticTransform, TfBuffer, quaternion_from_rpy


@dataclass
class OdometrySeries:
    """A nav_msgs/Odometry stream as arrays (pose in frame_id, twist in child_frame_id)."""

    stamp_ns: np.ndarray
    frame_id: str
    child_frame_id: str
    position: np.ndarray
    orientation: np.ndarray
    pose_covariance: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    twist_covariance: np.ndarray

    def __len__(self) -> int:
        return int(self.stamp_ns.shape[0])

    @staticmethod
    def from_messages(
        items: Sequence[Odometry], frame_id: str = "", child_frame_id: str = ""
    ) -> OdometrySeries:
        n = len(items)
        if n:
            frame_id, child_frame_id = items[0].frame_id, items[0].child_frame_id

        def stack(name, width):
            if not n:
                return np.zeros((0, width))
            return np.array([getattr(item, name) for item in items], dtype=float).reshape(n, width)

        return OdometrySeries(
            np.array([item.stamp_ns for item in items], dtype=np.int64),
            frame_id,
            child_frame_id,
            stack("position", 3),
            stack("orientation", 4),
            stack("pose_covariance", 36),
            stack("linear_velocity", 3),
            stack("angular_velocity", 3),
            stack("twist_covariance", 36),
        )


@dataclass
class JudgeResult:
    filtered: OdometrySeries
    gps_odometry: Optional[OdometrySeries]
    inputs: Dict[str, int] = field(default_factory=dict)
    dropped: Dict[str, int] = field(default_factory=dict)
    published: int = 0
    warnings: List[str] = field(default_factory=list)
    lost: Dict[str, str] = field(default_factory=dict)  # {input topic: why none of it reached the filter}

    @property
    def final_position(self) -> Optional[np.ndarray]:
        return self.filtered.position[-1].copy() if len(self.filtered) else None

    def check_sensors(self, where: str, allow_missing: bool = False, hint: str = "") -> None:
        """A run that lost a whole input (``lost``) is an error (UserError naming ``where``, the topics
        and why, then ``hint``), or with ``allow_missing`` a DataWarning per lost topic."""
        if not self.lost:
            return
        losses = "; ".join(f"{topic}: {why}" for topic, why in sorted(self.lost.items()))
        if not allow_missing:
            raise UserError(f"{where}: the judge lost a whole sensor ({losses}); its estimate would be "
                            f"judged without it{hint}")
        import warnings

        warnings.warn(f"{where}: judged without a whole sensor ({losses})", DataWarning, stacklevel=2)


class Judge:
    """ekf_node + navsat_transform_node of robot_localization humble 3.5.2, offline.

    ``remaps`` maps absolute topic names the nodes use to the names in the stream (ROS remapping).
    ``gps_topic`` is navsat's ``gps/fix`` subscription.
    """

    def __init__(
        self,
        ekf_params: EkfParams,
        navsat_params: Optional[NavsatParams] = None,
        static_tfs: Iterable[StaticTransform] = (),
        gps_topic: str = "/fix",
        remaps: Optional[Mapping[str, str]] = None,
    ):
        self.ekf_params = ekf_params
        self.navsat_params = navsat_params
        self.static_tfs = tuple(static_tfs)
        self.remaps = {_absolute(k): _absolute(v) for k, v in (remaps or {}).items()}
        self.gps_topic = self.topic(gps_topic)
        self.filtered_topic = self.topic("/odometry/filtered")
        self.gps_odometry_topic = self.topic("/odometry/gps")
        self.navsat_imu_topic = self.topic("/imu")
        self.cmd_vel_topic = self.topic("/cmd_vel")

    def topic(self, name: str) -> str:
        name = _absolute(name)
        return self.remaps.get(name, name)

    @property
    def input_topics(self) -> Dict[str, str]:
        """{topic: kind} the EKF subscribes to (outputs of the judge itself excluded)."""
        out = {}
        for sensor in self.ekf_params.sensors:
            topic = self.topic(sensor.topic)
            if self.navsat_params is not None and topic == self.gps_odometry_topic:
                continue
            out[topic] = sensor.kind
        return out

    def run(self, messages: Iterable, progress=None) -> JudgeResult:
        """Run over (recv_ns, topic, msg) — or BagMessage (recv_ns, topic, msgtype, msg) — in record
        order; ``progress(recv_ns)`` is called as messages are read."""
        stream = []
        for item in messages:
            # (recv_ns, topic, msg); bags.BagMessage's (recv_ns, topic, msgtype, msg) is accepted too
            recv_ns, topic, msg = (item[0], item[1], item[3]) if len(item) == 4 else item
            stream.append((int(recv_ns), topic, msg))
            if progress is not None:
                progress(int(recv_ns))
        return _Run(self, stream).result()


class _Run:
    """One Judge.run: IMU topics prepared in batch (measurements.imu_*_rows) and delivered by the
    compiled loop (engine.advance); every other callback, the navsat timer and navsat's fix callback
    run in Python between calls of that loop, at their place in the schedule (see the module doc)."""

    def __init__(self, judge: Judge, stream: list):
        self.judge = judge
        self.stream = stream
        self.tf = TfBuffer(judge.static_tfs)
        self.ekf = EkfNode(judge.ekf_params, self.tf, judge.topic)
        self.navsat = NavsatNode(judge.navsat_params, self.tf) if judge.navsat_params is not None else None
        self.inputs: Counter = Counter()
        self.dropped: Counter = Counter()
        self.gps_odometry: List[Odometry] = []
        self.synced = 0  # outputs already given to the TF buffer / navsat
        self.batch_topics = set()
        self.fixes: List[int] = []  # navsat fixes: applied lazily before each navsat tick (_navsat_tick)
        self.fix_index = 0

    # --- classification -----------------------------------------------------------------------------
    def result(self) -> JudgeResult:
        judge, ekf, navsat = self.judge, self.ekf, self.navsat
        kinds = {}
        for sensor in judge.ekf_params.sensors:
            kinds.setdefault(judge.topic(sensor.topic), sensor.kind)
        own_outputs = {judge.filtered_topic}
        if navsat is not None:
            own_outputs.add(judge.gps_odometry_topic)
        by_topic: Dict[str, List[int]] = {}
        for position, (_recv, topic, _msg) in enumerate(self.stream):
            by_topic.setdefault(topic, []).append(position)
        python_events: List[int] = []  # stream positions handled by Python callbacks, in order
        row_parts = []
        for topic, positions in by_topic.items():
            if topic in own_outputs:
                self.dropped["shadowed_by_judge_output"] += len(positions)
                continue
            used = False
            if topic in ekf.subscriptions:
                check_message(topic, kinds[topic], self.stream[positions[0]][2])
                rows = batch_imu_rows(ekf, topic, [self.stream[i] for i in positions], positions)
                if rows is None:
                    python_events += positions
                else:
                    row_parts.append(rows)
                    self.batch_topics.add(topic)
                used = True
            if navsat is not None:
                if topic == judge.gps_topic:
                    self.fixes += positions
                    used = True
                elif topic == judge.navsat_imu_topic and navsat.wants_imu:
                    python_events += positions  # counted when navsat takes them
            if topic == judge.cmd_vel_topic and ekf.filter.use_control:
                python_events += positions
            if used:
                self.inputs[topic] += len(positions)
        self.python_events = sorted(set(python_events))
        self.fixes.sort()
        self.fix_utm = self._fix_utm()
        self.rows = concatenate_rows(row_parts)
        self._schedule()
        return self._result()

    def _fix_utm(self) -> list:
        """UTM of every fix in one pass (None when a message is not NavSatFix-like: fix() reports it)."""
        msgs = [self.stream[i][2] for i in self.fixes]
        if not msgs or not all(hasattr(m, "latitude") and hasattr(m, "longitude") for m in msgs):
            return [None] * len(msgs)
        easting, northing, gamma = lat_lon_to_utm_many([float(m.latitude) for m in msgs],
                                                       [float(m.longitude) for m in msgs])
        return [(float(e), float(n), float(g)) for e, n, g in zip(easting, northing, gamma)]

    def _apply_fix(self) -> None:
        position = self.fixes[self.fix_index]
        _recv, topic, msg = self.stream[position]
        self.navsat.fix(msg, topic, self.fix_utm[self.fix_index])
        self.fix_index += 1

    # --- the schedule -------------------------------------------------------------------------------
    def _schedule(self) -> None:
        if not self.stream:
            return
        ekf, navsat = self.ekf, self.navsat
        f = ekf.filter
        first_recv = self.stream[0][0]
        last_recv = self.stream[-1][0]
        period = ekf.period_ns
        f.ints[engine.I_NEXT_EKF] = -(-first_recv // period) * period
        self.nav_period = navsat.period_ns if navsat is not None else None
        self.next_nav = -(-first_recv // self.nav_period) * self.nav_period if navsat is not None else NEVER
        final_tick = -(-last_recv // period) * period
        capacity = max(16, (max(r for r, _t, _m in self.stream) - first_recv) // period + 4)
        self.out_stamp = np.zeros(capacity, dtype=np.int64)
        self.out_state = np.zeros((capacity, 15))
        self.out_covariance = np.zeros((capacity, 15, 15))
        self.row = 0
        rows_position = self.rows["position"]
        for position in self.python_events:
            recv, topic, msg = self.stream[position]
            row_end = int(np.searchsorted(rows_position, position))
            self._advance(row_end, recv, False, position)
            self._python_callback(position, recv, topic, msg)
        self._advance(len(rows_position), final_tick, True, len(self.stream))

    def _advance(self, row_end: int, limit_ns: int, inclusive: bool, next_position: int) -> None:
        """engine.advance until ``row_end`` / ``limit_ns``, running navsat ticks and growing buffers."""
        ekf = self.ekf
        rows = self.rows
        while True:
            self.row, status = engine.advance(
                *ekf.filter.engine_args(), *ekf.pool, self.out_stamp, self.out_state, self.out_covariance,
                rows["recv"], rows["stamp"], rows["z"], rows["update"], rows["block"], rows["offset"],
                rows["size"], rows["threshold"], rows["fix"], rows["aux"], self.row, row_end, limit_ns,
                inclusive, self.next_nav)
            if status == engine.DONE:
                return
            if status == engine.NAVSAT_TICK:
                position = int(rows["position"][self.row]) if self.row < row_end else next_position
                self._navsat_tick(self.next_nav, position)
                self.next_nav += self.nav_period
            elif status == engine.POOL_FULL:
                ekf._allocate_pool(2 * len(ekf.pool[0]))
            else:  # OUTPUT_FULL
                grow = len(self.out_stamp)
                self.out_stamp = np.concatenate([self.out_stamp, np.zeros(grow, np.int64)])
                self.out_state = np.concatenate([self.out_state, np.zeros((grow, 15))])
                self.out_covariance = np.concatenate([self.out_covariance, np.zeros((grow, 15, 15))])

    def _sync_outputs(self) -> None:
        """Published outputs since the last call → the TF buffer (publish_tf) and navsat's odometry
        callback (only the latest matters to navsat: its callback keeps the last message)."""
        count = int(self.ekf.filter.ints[engine.I_OUT_COUNT])
        if count == self.synced:
            return
        params = self.judge.ekf_params
        if params.publish_tf and params.world_frame == params.odom_frame:  # as EkfNode.published_tf
            add, parent, child = self.tf.add_dynamic, params.odom_frame, params.base_link_frame_output
            offset = int(round(params.transform_time_offset * 1e9))
            states = self.out_state
            for k, stamp in enumerate(self.out_stamp[self.synced:count].tolist(), self.synced):
                add(parent, child, stamp + offset, states[k])
        if self.navsat is not None:
            if self.navsat.transform_good:
                self.navsat.odometry_after_transform(params.world_frame, params.base_link_frame_output)
            else:
                self.navsat.odometry(self._odometry(count - 1))
        self.synced = count

    def _odometry(self, k: int) -> Odometry:
        x, p = self.out_state[k], self.out_covariance[k]
        params = self.judge.ekf_params
        return Odometry(int(self.out_stamp[k]), params.world_frame, params.base_link_frame_output,
                        x[0:3].copy(), quaternion_from_rpy(x[3], x[4], x[5]), p[0:6, 0:6].reshape(36).copy(),
                        x[6:9].copy(), x[9:12].copy(), p[6:12, 6:12].reshape(36).copy())

    def _navsat_tick(self, now_ns: int, next_position: int) -> None:
        navsat = self.navsat
        # Fix callbacks only set navsat's GPS fields, read at ticks: apply those delivered before this
        # tick (earlier in the stream than the next undelivered message, and received at or before now).
        while (self.fix_index < len(self.fixes) and self.fixes[self.fix_index] < next_position
               and self.stream[self.fixes[self.fix_index]][0] <= now_ns):
            self._apply_fix()
        self._sync_outputs()
        out = navsat.tick(now_ns)
        if out is not None:
            self.gps_odometry.append(out)
            if self.judge.gps_odometry_topic in self.ekf.subscriptions:
                self.ekf.handle(self.judge.gps_odometry_topic, out.as_message())

    def _python_callback(self, position: int, recv: int, topic: str, msg) -> None:
        judge, ekf, navsat = self.judge, self.ekf, self.navsat
        self._sync_outputs()
        if topic in ekf.subscriptions and topic not in self.batch_topics:
            ekf.handle(topic, msg)
        if navsat is not None and topic == judge.navsat_imu_topic and topic != judge.gps_topic:
            if navsat.wants_imu:
                while self.fix_index < len(self.fixes) and self.fixes[self.fix_index] < position:
                    self._apply_fix()
                navsat.imu(msg)
                if topic not in ekf.subscriptions:
                    self.inputs[topic] += 1
        if topic == judge.cmd_vel_topic and ekf.filter.use_control and hasattr(msg, "angular"):
            ekf.set_control(msg.linear, msg.angular, recv)
            if topic not in ekf.subscriptions:
                self.inputs[topic] += 1

    # --- the result ---------------------------------------------------------------------------------
    def _lost(self, unresolved: Counter) -> Dict[str, str]:
        """Input topics of which nothing reached the filter: no message, every message dropped for a
        missing transform, or (navsat) no usable /odometry/gps from the fixes."""
        judge, navsat = self.judge, self.navsat
        lost = {}
        if navsat is not None:
            fixes = self.inputs.get(judge.gps_topic, 0)
            outputs = len(self.gps_odometry)
            if fixes == 0:
                lost[judge.gps_topic] = "no fix received"
            elif outputs == 0 and navsat.dropped.get("unusable_fix", 0) >= fixes:
                lost[judge.gps_topic] = "every fix is NO_FIX or NaN: no /odometry/gps"
            elif outputs == 0:
                lost[judge.gps_topic] = "navsat published no /odometry/gps (no datum or transform)"
            elif navsat.dropped.get("gps_tf_unavailable", 0) >= outputs:
                lost[judge.gps_topic] = (f"every /odometry/gps is at (0, 0, 0): no transform "
                                         f"{navsat.gps_frame!r} -> {navsat.base_link_frame!r}")
        for item in self.ekf.inputs:
            topic = judge.topic(item.sensor.topic)
            if navsat is not None and topic == judge.gps_odometry_topic:
                continue  # navsat's output: judged by the fixes above
            received = self.inputs.get(topic, 0)
            parts = [p for p in (item.pose, item.twist, item.acceleration) if p is not None and p.update_sum]
            reasons = {(target, frame) for (key, target, frame), count in unresolved.items()
                       if key in {p.key for p in parts} and count >= received}
            dropped = {key for (key, _t, _f), count in unresolved.items() if count >= received}
            if received == 0:
                lost.setdefault(topic, "no message received")
            elif parts and all(p.key in dropped for p in parts):
                target, frame = sorted(reasons)[0]
                lost.setdefault(topic, f"every message dropped: no transform {frame!r} -> {target!r}")
        return lost

    def _result(self) -> JudgeResult:
        judge, ekf, navsat = self.judge, self.ekf, self.navsat
        params = judge.ekf_params
        if navsat is not None:  # fixes after the last navsat tick
            while self.fix_index < len(self.fixes):
                self._apply_fix()
        ekf.sync_counts()
        dropped = self.dropped
        dropped.update(self.rows["dropped"])
        dropped.update(ekf.dropped)
        count = int(ekf.filter.ints[engine.I_OUT_COUNT]) if self.stream else 0
        if count:
            x, p = self.out_state[:count], self.out_covariance[:count]
            filtered = OdometrySeries(
                self.out_stamp[:count].copy(), params.world_frame, params.base_link_frame_output,
                x[:, 0:3].copy(), quaternion_from_rpy(x[:, 3], x[:, 4], x[:, 5]),
                p[:, 0:6, 0:6].reshape(count, 36).copy(), x[:, 6:9].copy(), x[:, 9:12].copy(),
                p[:, 6:12, 6:12].reshape(count, 36).copy())
        else:
            filtered = OdometrySeries.from_messages([], params.world_frame, params.base_link_frame_output)
        unresolved = Counter(ekf.unresolved)
        unresolved.update(self.rows["unresolved"])
        ekf.unresolved = unresolved
        if navsat is not None:
            dropped.update({f"navsat_{k}": v for k, v in navsat.dropped.items()})
        warnings = list(ekf.warnings) + ekf.unresolved_warnings()
        if navsat is not None:
            warnings += navsat.warnings
            if navsat.dropped.get("gps_tf_unavailable"):
                warnings.append(
                    f"navsat: {navsat.dropped['gps_tf_unavailable']} /odometry/gps at (0, 0, 0): no "
                    f"transform {navsat.gps_frame!r} -> {navsat.base_link_frame!r} (upstream behaviour)"
                )
        return JudgeResult(
            lost=self._lost(unresolved),
            filtered=filtered,
            gps_odometry=(
                OdometrySeries.from_messages(self.gps_odometry, params.world_frame, "")
                if navsat is not None
                else None
            ),
            inputs=dict(self.inputs),
            dropped=dict(dropped),
            published=count,
            warnings=warnings,
        )
