"""ros.messages: model arrays → ROS messages, checked on real Humble message classes (rosbags).

The ROS nodes fill rclpy messages with these functions; here the same functions fill rosbags
dataclasses (identical field names and types) and the result must serialize to exactly the bytes
the offline bag writer (bags.messages) produces for the same samples — one message content for the
node path and the offline path.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim2real_eval import rotations
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.ros import messages
from sim2real_eval.truth import GroundTruth
from sim2real_eval.truth import stream as truth_stream

bags_messages = pytest.importorskip("sim2real_eval.bags.messages")

NAVSATFIX = "sensor_msgs/msg/NavSatFix"
IMU = "sensor_msgs/msg/Imu"
MAG = "sensor_msgs/msg/MagneticField"
ODOMETRY = "nav_msgs/msg/Odometry"


@pytest.fixture(scope="module")
def typestore():
    from sim2real_eval.bags import get_typestore
    return get_typestore()


@pytest.fixture(scope="module")
def truth():
    t = 10.0 + np.arange(0, 3.0, 0.02)
    yaw = 0.3 * t
    v = np.stack([2 * np.cos(yaw), 2 * np.sin(yaw), np.zeros_like(t)], axis=1)
    p = np.cumsum(v, axis=0) * 0.02
    return GroundTruth.from_kinematics(t, p, rotations.from_yaw(yaw), v)


def cdr(typestore, msg, msgtype):
    return bytes(typestore.serialize_cdr(msg, msgtype))


def test_navsatfix_matches_the_offline_writer(typestore, truth):
    fixes = load_gps_model("ch_rw_airsim", sensor_seed(1, "gps")).sample(truth)
    offline = list(bags_messages.navsatfix_messages(fixes, typestore=typestore))
    assert len(offline) == len(fixes) > 20
    for i, item in enumerate(offline):
        msg = messages.fill_navsatfix(bags_messages.default_message(NAVSATFIX, typestore), fixes, i)
        assert cdr(typestore, msg, NAVSATFIX) == cdr(typestore, item.msg, NAVSATFIX)
    assert msg.header.frame_id == "gps" and msg.position_covariance_type == 1  # APPROXIMATED (HDOP)
    assert isinstance(msg.status.status, int) and isinstance(msg.latitude, float)  # rclpy needs builtins


def test_imu_and_magnetic_field_match_the_offline_writer(typestore, truth):
    imu = load_imu_model("mavs_mems", sensor_seed(1, "imu")).sample(truth)
    assert imu.magnetic_field is not None
    offline = list(bags_messages.imu_messages(imu, typestore=typestore))
    offline_mag = list(bags_messages.magnetic_field_messages(imu, typestore=typestore))
    for i in range(len(imu)):
        msg = messages.fill_imu(bags_messages.default_message(IMU, typestore), imu, i)
        assert cdr(typestore, msg, IMU) == cdr(typestore, offline[i].msg, IMU)
        mag = messages.fill_magnetic_field(bags_messages.default_message(MAG, typestore), imu, i)
        assert cdr(typestore, mag, MAG) == cdr(typestore, offline_mag[i].msg, MAG)
    no_mag = load_imu_model("chrono_paper_demo", sensor_seed(1, "imu")).sample(truth)
    with pytest.raises(ValueError, match="magnetometer off"):
        messages.fill_magnetic_field(bags_messages.default_message(MAG, typestore), no_mag, 0)


def test_header_stamp_split_and_back(typestore, truth):
    fixes = load_gps_model("ch_rw_airsim", sensor_seed(1, "gps")).sample(truth)
    fixes = dataclasses.replace(fixes, stamp_ns=fixes.stamp_ns * 0 + 1_707_000_000_123_456_789)
    msg = messages.fill_navsatfix(bags_messages.default_message(NAVSATFIX, typestore), fixes, 0)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1_707_000_000, 123_456_789)
    assert messages.header_ns(msg.header) == 1_707_000_000_123_456_789


def test_odometry_round_trip_through_the_truth_stream(typestore, truth):
    """Truth → Odometry (as ground_truth_node publishes) → fields → node truth sample == truth."""
    offline = list(bags_messages.truth_odometry_messages(truth, typestore=typestore))
    for i in (0, 50, 149):
        stamp, position, orientation, linear, angular = messages.odometry_fields(offline[i].msg)
        assert stamp == round(truth.t[i] * 1e9)
        p, q, v_world, w_body = truth_stream.odometry_to_truth_sample(position, orientation, linear, angular)
        assert np.allclose(p, truth.position[i]) and np.allclose(v_world, truth.velocity[i], atol=1e-12)
        assert np.allclose(w_body, truth.angular_velocity[i])
        assert abs(abs(np.dot(q, truth.orientation[i])) - 1) < 1e-12
        body_v = rotations.rotate_inverse(truth.orientation[i:i + 1], truth.velocity[i:i + 1])[0]
        msg = messages.fill_odometry(bags_messages.default_message(ODOMETRY, typestore), stamp, "odom",
                                     "base_link", truth.position[i], truth.orientation[i], body_v,
                                     truth.angular_velocity[i])
        assert cdr(typestore, msg, ODOMETRY) == cdr(typestore, offline[i].msg, ODOMETRY)
