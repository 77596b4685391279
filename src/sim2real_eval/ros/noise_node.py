"""The rclpy part of gps_noise_node and imu_noise_node: Odometry in, sensor messages out.

All logic (parameter validation, truth ordering and interpolation, exact ticks) is in
``sim2real_eval.node``; the model is the offline one (``models.load_*_model`` + ``step``).
These nodes follow a *live* ground truth (a simulator beside them); a recorded bag is replayed by
``replay_node`` instead, which reads the truth ahead (see docs/ros.md).
"""
from __future__ import annotations

from typing import List, Optional

from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, MagneticField, NavSatFix

from ..node import params, ticks
from ..truth.stream import odometry_to_truth_sample
from . import messages, node_runtime


class NoiseNode:
    """Holds the rclpy node, the core stream and the publishers of one simulated sensor."""

    def __init__(self, sensor: str):
        self.sensor = sensor
        self.node = node_runtime.make_node(f"{sensor}_noise_node", params.noise_node_defaults(sensor))
        self.config = params.parse_noise_node_params(sensor, node_runtime.parameter_values(self.node))
        model = self.config.load_model()
        self.stream = self.config.stream(model)
        self.out_of_order = ticks.ThrottledWarning(5.0)
        self.late_ticks = ticks.ThrottledWarning(5.0)
        self.tick_rate = ticks.TickRateCheck(self.config.rate_hz)
        self.published = 0
        msg_type = NavSatFix if sensor == "gps" else Imu
        self.publisher = self.node.create_publisher(msg_type, self.config.output_topic,
                                                    node_runtime.PUBLISH_QOS)
        self.mag_publisher = None
        if sensor == "imu" and self.config.magnetometer_topic:
            self.mag_publisher = self.node.create_publisher(MagneticField, self.config.magnetometer_topic,
                                                            node_runtime.PUBLISH_QOS)
        self.node.create_subscription(Odometry, self.config.truth_topic, self.on_truth,
                                      node_runtime.SUBSCRIBE_QOS)
        if self.config.tick_topic:  # tick on another stream's stamps (e.g. a real sensor being replaced)
            self.node.create_subscription(msg_type, self.config.tick_topic, self.on_tick,
                                          node_runtime.SUBSCRIBE_QOS)
        self.node.get_logger().info(
            f"{sensor}: model {self.config.model_spec!r}, {self.config.rate_hz:g} Hz on the data clock, "
            f"truth {self.config.truth_topic} ({self.config.truth_mode}) -> {self.config.output_topic}")

    def on_truth(self, msg: Odometry) -> None:
        stamp_ns, position, orientation, linear, angular = messages.odometry_fields(msg)
        truth = odometry_to_truth_sample(position, orientation, linear, angular,
                                                      self.config.twist_frame)
        ready, accepted = self.stream.push_truth(stamp_ns, *truth)
        if not accepted:
            text = self.out_of_order.message(
                f"dropped ground truth stamped {stamp_ns} ns: not after {self.stream.truth.last_stamp_ns} ns "
                f"(or not finite); {self.stream.truth.dropped} dropped so far", node_runtime.wall_seconds())
            if text:
                self.node.get_logger().warning(text)
        self.publish(ready)

    def on_tick(self, msg) -> None:
        stamp_ns = messages.header_ns(msg.header)
        mismatch = self.tick_rate.check(stamp_ns, f"{self.config.tick_topic}")
        if mismatch:
            self.node.get_logger().warning(f"{mismatch} ({self.sensor}_rate)")
        if not self.stream.add_tick(stamp_ns):
            text = self.late_ticks.message(
                f"dropped tick from {self.config.tick_topic}: late or out of order "
                f"({self.stream.dropped_ticks} so far)", node_runtime.wall_seconds())
            if text:
                self.node.get_logger().warning(text)

    def publish(self, ready: List) -> None:
        for samples in ready:
            for i in range(len(samples)):
                if self.sensor == "gps":
                    self.publisher.publish(messages.fill_navsatfix(NavSatFix(), samples, i))
                else:
                    self.publisher.publish(messages.fill_imu(Imu(), samples, i))
                    if self.mag_publisher is not None and samples.magnetic_field is not None:
                        self.mag_publisher.publish(messages.fill_magnetic_field(MagneticField(), samples, i))
                self.published += 1

    def finish(self) -> None:
        """End of input (SIGINT/SIGTERM): publish the ticks of the last truth interval.  The context
        is still valid here (``node_runtime.run`` shuts it down afterwards)."""
        before = self.published
        self.publish(self.stream.finish())
        self.node.get_logger().info(f"stopped: {self.published} messages published "
                                    f"({self.published - before} from the last truth interval)")


def main_for(sensor: str, argv: Optional[List[str]] = None) -> int:
    holder = {}

    def build(_stop):
        holder["node"] = NoiseNode(sensor)
        return holder["node"].node

    def finish():
        if "node" in holder:
            holder["node"].finish()

    return node_runtime.run(f"{sensor}_noise_node", build, finish, argv)
