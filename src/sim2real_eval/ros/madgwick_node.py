"""madgwick_node: imu_filter_madgwick's 6-DoF filter for IMUs that publish no orientation, as a node.

Subscribes ``imu/data_raw`` (sensor_msgs/Imu), publishes ``imu/data``: the same message with the
Madgwick orientation (ENU) and orientation_stddev² on the covariance diagonal — what
imu_filter_madgwick_node publishes with ``use_mag: false``.  judge.launch.py starts the real
imu_filter_madgwick_node where that package is installed and this node otherwise (``madgwick_node``
argument); both take the same parameters (gain, zeta, world_frame, orientation_stddev, constant_dt).
The logic is ``node.madgwick`` (rclpy-free), the filter ``models.madgwick`` (the offline import's).
"""
from __future__ import annotations

import sys

from sensor_msgs.msg import Imu

from ..node.madgwick import MADGWICK_DEFAULTS, MadgwickRepublisher, parse_madgwick_params
from ..node.ticks import ThrottledWarning
from . import node_runtime


def build(_stop):
    node = node_runtime.make_node("madgwick_node", MADGWICK_DEFAULTS)
    config = parse_madgwick_params(node_runtime.parameter_values(node))
    republisher = MadgwickRepublisher(config)
    publisher = node.create_publisher(Imu, "imu/data", node_runtime.PUBLISH_QOS)
    free_fall = ThrottledWarning(5.0)

    def on_imu(msg: Imu) -> None:
        if republisher.on_imu(msg):
            publisher.publish(msg)
            return
        text = free_fall.message("the IMU seems to be in free fall, cannot determine gravity direction "
                                 f"({republisher.waiting} messages waited for one)",
                                    node_runtime.wall_seconds())
        if text:
            node.get_logger().warning(text)

    node.create_subscription(Imu, "imu/data_raw", on_imu, node_runtime.SUBSCRIBE_QOS)
    node.get_logger().info(f"madgwick: gain {config.gain:g}, zeta {config.zeta:g}, world frame "
                           f"{config.world_frame}, orientation_stddev {config.orientation_stddev:g} rad; "
                           "imu/data_raw -> imu/data")
    return node


def main() -> int:
    return node_runtime.run("madgwick_node", build)


if __name__ == "__main__":
    sys.exit(main())
