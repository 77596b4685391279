"""Copy model arrays into ROS messages and read ground truth out of them (robot-side, no rclpy).

Works on any object with the ROS field names: rclpy messages in the nodes, rosbags dataclasses in
the tests.  Content decisions (status, covariance type, −1 = not provided) were made by the models;
this module only copies.  Scalars are converted to Python int/float because rclpy's setters reject
numpy scalars; fixed-size arrays are float64 numpy arrays (accepted by rclpy and rosbags alike).
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..node_core import ns_to_stamp, stamp_to_ns


def set_header(header, stamp_ns: int, frame_id: str) -> None:
    header.stamp.sec, header.stamp.nanosec = ns_to_stamp(stamp_ns)
    header.frame_id = str(frame_id)


def header_ns(header) -> int:
    return stamp_to_ns(header.stamp.sec, header.stamp.nanosec)


def _xyz(target, values) -> None:
    target.x, target.y, target.z = (float(v) for v in values)


def _xyzw(target, values) -> None:
    target.x, target.y, target.z, target.w = (float(v) for v in values)


def fill_navsatfix(msg, samples, i: int):
    """Row ``i`` of GpsSamples → sensor_msgs/NavSatFix (header stamp = the measurement stamp)."""
    set_header(msg.header, int(samples.stamp_ns[i]), samples.frame_id)
    msg.status.status = int(samples.status[i])
    msg.status.service = int(samples.service[i])
    msg.latitude = float(samples.latitude[i])
    msg.longitude = float(samples.longitude[i])
    msg.altitude = float(samples.altitude[i])
    msg.position_covariance = np.array(samples.position_covariance[i], dtype=np.float64)
    msg.position_covariance_type = int(samples.position_covariance_type[i])
    return msg


def fill_imu(msg, samples, i: int):
    """Row ``i`` of ImuSamples → sensor_msgs/Imu (REP-145: sensor frame, specific force)."""
    set_header(msg.header, int(samples.stamp_ns[i]), samples.frame_id)
    _xyzw(msg.orientation, samples.orientation[i])
    msg.orientation_covariance = np.array(samples.orientation_covariance[i], dtype=np.float64)
    _xyz(msg.angular_velocity, samples.angular_velocity[i])
    msg.angular_velocity_covariance = np.array(samples.angular_velocity_covariance[i], dtype=np.float64)
    _xyz(msg.linear_acceleration, samples.linear_acceleration[i])
    msg.linear_acceleration_covariance = np.array(samples.linear_acceleration_covariance[i], dtype=np.float64)
    return msg


def fill_magnetic_field(msg, samples, i: int):
    """Row ``i`` of ImuSamples' magnetometer → sensor_msgs/MagneticField (tesla, sensor frame)."""
    if samples.magnetic_field is None:
        raise ValueError("these ImuSamples carry no magnetic field (magnetometer off)")
    set_header(msg.header, int(samples.stamp_ns[i]), samples.frame_id)
    _xyz(msg.magnetic_field, samples.magnetic_field[i])
    msg.magnetic_field_covariance = np.array(samples.magnetic_field_covariance[i], dtype=np.float64)
    return msg


def odometry_fields(msg) -> Tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """nav_msgs/Odometry → (stamp ns, position, xyzw, twist linear, twist angular) as float64 arrays."""
    pose, twist = msg.pose.pose, msg.twist.twist
    return (
        header_ns(msg.header),
        np.array([pose.position.x, pose.position.y, pose.position.z], dtype=np.float64),
        np.array([pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w],
                 dtype=np.float64),
        np.array([twist.linear.x, twist.linear.y, twist.linear.z], dtype=np.float64),
        np.array([twist.angular.x, twist.angular.y, twist.angular.z], dtype=np.float64),
    )


def fill_odometry(msg, stamp_ns: int, frame_id: str, child_frame_id: str, position, orientation,
                  linear_velocity_body, angular_velocity_body, pose_covariance=None, twist_covariance=None):
    """nav_msgs/Odometry: pose in ``frame_id`` (ENU odom), twist in ``child_frame_id`` (base_link)."""
    set_header(msg.header, stamp_ns, frame_id)
    msg.child_frame_id = str(child_frame_id)
    _xyz(msg.pose.pose.position, position)
    _xyzw(msg.pose.pose.orientation, orientation)
    _xyz(msg.twist.twist.linear, linear_velocity_body)
    _xyz(msg.twist.twist.angular, angular_velocity_body)
    msg.pose.covariance = (np.zeros(36) if pose_covariance is None
                           else np.array(pose_covariance, dtype=np.float64))
    msg.twist.covariance = (np.zeros(36) if twist_covariance is None
                            else np.array(twist_covariance, dtype=np.float64))
    return msg
