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

from .ekf_node import EkfNode, Odometry, _absolute, check_message
from .navsat import NavsatNode
from .params import EkfParams, NavsatParams
from .tf import StaticTransform, TfBuffer


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

    @property
    def final_position(self) -> Optional[np.ndarray]:
        return self.filtered.position[-1].copy() if len(self.filtered) else None


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
        order; ``progress(recv_ns)`` is called per message."""
        tf = TfBuffer(self.static_tfs)
        ekf = EkfNode(self.ekf_params, tf, self.topic)
        navsat = NavsatNode(self.navsat_params, tf) if self.navsat_params is not None else None
        kinds = {}
        for sensor in self.ekf_params.sensors:
            kinds.setdefault(self.topic(sensor.topic), sensor.kind)
        inputs: Counter = Counter()
        dropped: Counter = Counter()
        filtered: List[Odometry] = []
        gps_odometry: List[Odometry] = []
        checked = set()
        own_outputs = {self.filtered_topic}
        if navsat is not None:
            own_outputs.add(self.gps_odometry_topic)

        ekf_period = ekf.period_ns
        nav_period = navsat.period_ns if navsat is not None else None
        next_ekf = next_nav = None
        last_recv = None

        def run_ticks(until_ns: int, inclusive: bool) -> None:
            nonlocal next_ekf, next_nav
            while True:
                due = next_ekf if nav_period is None else min(next_ekf, next_nav)
                if due > until_ns or (due == until_ns and not inclusive):
                    return
                if next_ekf == due:
                    odom = ekf.tick(due)
                    next_ekf += ekf_period
                    if odom is not None:
                        filtered.append(odom)
                        if navsat is not None:
                            navsat.odometry(odom)
                if nav_period is not None and next_nav == due:
                    out = navsat.tick(due)
                    next_nav += nav_period
                    if out is not None:
                        gps_odometry.append(out)
                        if self.gps_odometry_topic in ekf.subscriptions:
                            ekf.handle(self.gps_odometry_topic, out.as_message())

        for item in messages:
            # (recv_ns, topic, msg); bags.BagMessage's (recv_ns, topic, msgtype, msg) is accepted too
            recv_ns, topic, msg = (item[0], item[1], item[3]) if len(item) == 4 else item
            recv_ns = int(recv_ns)
            if next_ekf is None:
                next_ekf = -(-recv_ns // ekf_period) * ekf_period
                if nav_period is not None:
                    next_nav = -(-recv_ns // nav_period) * nav_period
            else:
                run_ticks(recv_ns, inclusive=False)
            last_recv = recv_ns
            if progress is not None:
                progress(recv_ns)
            if topic in own_outputs:
                dropped["shadowed_by_judge_output"] += 1
                continue
            used = False
            if topic in ekf.subscriptions:
                if topic not in checked:
                    check_message(topic, kinds[topic], msg)
                    checked.add(topic)
                ekf.handle(topic, msg)
                used = True
            if navsat is not None:
                if topic == self.gps_topic:
                    navsat.fix(msg, topic)
                    used = True
                elif topic == self.navsat_imu_topic and navsat.wants_imu:
                    navsat.imu(msg)
                    used = True
            if topic == self.cmd_vel_topic and ekf.filter.use_control and hasattr(msg, "angular"):
                ekf.set_control(msg.linear, msg.angular, recv_ns)
                used = True
            if used:
                inputs[topic] += 1
        if last_recv is not None:
            # Keep ticking until the first EKF tick at or after the last message (then stop, like a
            # sim clock that stops with the bag).
            final_tick = -(-last_recv // ekf_period) * ekf_period
            run_ticks(final_tick, inclusive=True)
        dropped.update(ekf.dropped)
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
            filtered=OdometrySeries.from_messages(
                filtered, self.ekf_params.world_frame, self.ekf_params.base_link_frame_output
            ),
            gps_odometry=(
                OdometrySeries.from_messages(gps_odometry, self.ekf_params.world_frame, "")
                if navsat is not None
                else None
            ),
            inputs=dict(inputs),
            dropped=dict(dropped),
            published=len(filtered),
            warnings=warnings,
        )
