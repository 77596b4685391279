"""imu_noise_node: ground-truth nav_msgs/Odometry → simulated sensor_msgs/Imu (default /imu, 100 Hz).

REP-145: specific force and body rates in the sensor frame ``frame_id`` (default ``imu``; the
mounting rotation is the model's ``mounting_rpy``), orientation of the sensor in ENU.  Optional
sensor_msgs/MagneticField on ``magnetometer_topic`` when the model has a magnetometer.
Parameters as gps_noise_node with imu_model and imu_rate, plus magnetometer_topic; see docs/ros.md.
"""
from __future__ import annotations

import sys

from .noise_node import main_for


def main() -> int:
    return main_for("imu")


if __name__ == "__main__":
    sys.exit(main())
