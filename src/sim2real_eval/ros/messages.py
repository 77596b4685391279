"""Copy model arrays into ROS messages and read ground truth out of them (robot-side, no rclpy).

Works on any object with the ROS field names: rclpy messages in the nodes, rosbags dataclasses in
the tests.  Which fields, where and of which kind: the tables of ``message_fields`` (the same ones
the offline bag writers use, so the node and the offline pipeline write one content).  Content
decisions (status, covariance type, −1 = not provided) were made by the models; this module only
copies.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from .. import message_fields as F
from .. import stamps


def header_ns(header) -> int:
    """std_msgs/Header -> its stamp in int ns."""
    return stamps.stamp_to_ns(header.stamp)


def fill_navsatfix(msg, samples, i: int):
    """Row ``i`` of GpsSamples → sensor_msgs/NavSatFix (header stamp = the measurement stamp)."""
    return F.fill(msg, F.NAVSATFIX, F.row(F.NAVSATFIX, samples, i))


def fill_imu(msg, samples, i: int):
    """Row ``i`` of ImuSamples → sensor_msgs/Imu (REP-145: sensor frame, specific force)."""
    return F.fill(msg, F.IMU, F.row(F.IMU, samples, i))


def fill_magnetic_field(msg, samples, i: int):
    """Row ``i`` of ImuSamples' magnetometer → sensor_msgs/MagneticField (tesla, sensor frame)."""
    if samples.magnetic_field is None:
        raise ValueError("these ImuSamples carry no magnetic field (magnetometer off)")
    return F.fill(msg, F.MAGNETIC_FIELD, F.row(F.MAGNETIC_FIELD, samples, i))


def odometry_fields(msg) -> Tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """nav_msgs/Odometry → (stamp ns, position, xyzw, twist linear, twist angular) as float64 arrays."""
    got = F.read(msg, F.ODOMETRY, ("stamp_ns", "position", "orientation", "linear_velocity",
                                   "angular_velocity"))
    return (got["stamp_ns"], got["position"], got["orientation"], got["linear_velocity"],
            got["angular_velocity"])


def fill_odometry(msg, stamp_ns: int, frame_id: str, child_frame_id: str, position, orientation,
                  linear_velocity_body, angular_velocity_body, pose_covariance=None, twist_covariance=None):
    """nav_msgs/Odometry: pose in ``frame_id`` (ENU odom), twist in ``child_frame_id`` (base_link)."""
    return F.fill(msg, F.ODOMETRY, {
        "stamp_ns": stamp_ns, "frame_id": frame_id, "child_frame_id": child_frame_id,
        "position": position, "orientation": orientation,
        "pose_covariance": np.zeros(36) if pose_covariance is None else pose_covariance,
        "linear_velocity": linear_velocity_body, "angular_velocity": angular_velocity_body,
        "twist_covariance": np.zeros(36) if twist_covariance is None else twist_covariance})
