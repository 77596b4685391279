"""ground_truth_node: sbg_driver (SbgEkfNav+SbgEkfQuat or SbgGpsPos+SbgGpsVel, NED or ENU) →
nav_msgs/Odometry on /ground_truth/odom (pose in ENU ``odom``, twist in ``base_link``).

It lets a live SBG INS (or a bag played beside the noise nodes) drive the noise nodes;
evaluate.launch.py does not need it (replay_node reads the truth from the bag).  sbg_driver is an
optional dependency: without it the node exits with one error line saying so.  While the chosen
``truth_source`` topics give no pair, it warns every 10 s naming the topics it waits for and those
it did receive.  Conversions: ``sim2real_eval.sbg``; pairing and rates:
``node.sbg_truth.SbgTruthAssembler``.
"""
from __future__ import annotations

import sys

from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType

from ..errors import UserError
from ..node import params, sbg_truth, ticks
from . import messages, node_runtime


def _sbg_types():
    try:
        from sbg_driver.msg import SbgEkfNav, SbgEkfQuat, SbgGpsPos, SbgGpsVel
    except ImportError:
        raise UserError("ground_truth_node: the ROS package sbg_driver is not installed (needed to read "
                        "/sbg/* topics); build SBG-Systems/sbg_ros2_driver in the workspace") from None
    return SbgEkfNav, SbgEkfQuat, SbgGpsPos, SbgGpsVel


class GroundTruthNode:
    def __init__(self):
        self.node = node_runtime.make_node("ground_truth_node", params.GROUND_TRUTH_DEFAULTS)
        self.config = params.parse_ground_truth_params(node_runtime.parameter_values(self.node))
        self.assembler = sbg_truth.SbgTruthAssembler(self.config)
        SbgEkfNav, SbgEkfQuat, SbgGpsPos, SbgGpsVel = _sbg_types()
        self.publisher = self.node.create_publisher(Odometry, self.config.output_topic,
                                                    node_runtime.PUBLISH_QOS)
        self.out_of_order = ticks.ThrottledWarning(5.0)
        self.reported_drops = 0
        topics, qos = self.config.topics, node_runtime.SUBSCRIBE_QOS
        sub = self.node.create_subscription
        if self.config.source in ("auto", "sbg_ekf"):
            sub(SbgEkfQuat, topics["ekf_quat_topic"], self.on_ekf_quat, qos)
            sub(SbgEkfNav, topics["ekf_nav_topic"], self.on_ekf_nav, qos)
        if self.config.source in ("auto", "sbg_gps"):
            sub(SbgGpsVel, topics["gps_vel_topic"], self.on_gps_vel, qos)
            sub(SbgGpsPos, topics["gps_pos_topic"], self.on_gps_pos, qos)
        self.received = {}
        self.published = 0
        self.node.create_timer(10.0, self.check_truth, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def check_truth(self) -> None:
        """No output yet: say which topics the node waits for and what it got (e.g. truth_source:=ekf
        on a bag that only has SbgGpsPos/SbgGpsVel)."""
        if self.published:
            return
        wanted = {"sbg_ekf": ("ekf_nav_topic", "ekf_quat_topic"),
                  "sbg_gps": ("gps_pos_topic", "gps_vel_topic")}
        sources = ("sbg_ekf", "sbg_gps") if self.config.source == "auto" else (self.config.source,)
        waits = " or ".join(" + ".join(self.config.topics[k] for k in wanted[s]) for s in sources)
        got = ", ".join(f"{t} ({n})" for t, n in sorted(self.received.items())) or "nothing"
        self.node.get_logger().warning(f"no ground truth published yet (truth_source {self.config.source}): "
                                       f"waiting for {waits}; received {got}")

    def count(self, key: str) -> None:
        topic = self.config.topics[key]
        self.received[topic] = self.received.get(topic, 0) + 1

    def on_ekf_quat(self, msg) -> None:
        self.count("ekf_quat_topic")
        q = msg.quaternion
        self.publish(self.assembler.on_ekf_quat(messages.header_ns(msg.header), [q.x, q.y, q.z, q.w]))

    def on_gps_vel(self, msg) -> None:
        self.count("gps_vel_topic")
        v = msg.velocity
        self.publish(self.assembler.on_gps_vel(messages.header_ns(msg.header), [v.x, v.y, v.z], msg.course))

    def on_ekf_nav(self, msg) -> None:
        self.count("ekf_nav_topic")
        v = msg.velocity
        self.publish(self.assembler.on_ekf_nav(messages.header_ns(msg.header), [v.x, v.y, v.z], msg.latitude,
                                               msg.longitude, msg.altitude, msg.undulation))

    def on_gps_pos(self, msg) -> None:
        self.count("gps_pos_topic")
        self.publish(self.assembler.on_gps_pos(messages.header_ns(msg.header), msg.latitude, msg.longitude,
                                               msg.altitude, msg.undulation))

    def publish(self, out) -> None:
        if out is None:
            if self.assembler.dropped > self.reported_drops:
                self.reported_drops = self.assembler.dropped
                text = self.out_of_order.message(
                    f"dropped sbg sample(s) with non-increasing stamps ({self.assembler.dropped} so far)",
                    node_runtime.wall_seconds())
                if text:
                    self.node.get_logger().warning(text)
            return
        msg = messages.fill_odometry(Odometry(), out.stamp_ns, self.config.frame_id,
                                     self.config.child_frame_id, out.position, out.orientation,
                                     out.linear_velocity_body, out.angular_velocity_body)
        self.publisher.publish(msg)
        self.published += 1


def main() -> int:
    return node_runtime.run("ground_truth_node", lambda _stop: GroundTruthNode().node)


if __name__ == "__main__":
    sys.exit(main())
