"""madgwick_node on a real ROS 2 (Humble): raw sensor_msgs/Imu on imu/data_raw in, the offline filter's
orientation on imu/data out, and a refused parameter exits 2.  Skips cleanly without rclpy."""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (no ROS 2 here)")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402  (after the skip: exists only with ROS 2)
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Imu  # noqa: E402

from sim2real_eval import scenarios  # noqa: E402
from sim2real_eval.models import load_imu_model, madgwick, sensor_seed  # noqa: E402
from sim2real_eval.ros import messages  # noqa: E402

RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def test_madgwick_node_republishes_the_offline_orientation():
    truth = scenarios.generate("terrain", k=0, seed=0).slice(0, 1000)
    samples = load_imu_model("reference_mems", sensor_seed(0, "node"), rate=200.0).sample(truth)
    command = [sys.executable, "-m", "sim2real_eval.ros.madgwick_node", "--ros-args",
               "-p", "use_sim_time:=false"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    context = rclpy.context.Context()
    rclpy.init(args=[], context=context)
    node = Node("madgwick_test", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    received = []
    try:
        publisher = node.create_publisher(Imu, "imu/data_raw", RELIABLE)
        node.create_subscription(Imu, "imu/data", received.append, RELIABLE)
        end = time.monotonic() + 20.0
        while publisher.get_subscription_count() < 1 or node.count_publishers("imu/data") < 1:
            assert time.monotonic() < end, "madgwick_node did not start"
            executor.spin_once(timeout_sec=0.05)
        # The node subscribes as imu_filter_madgwick does (sensor-data QoS: best effort, depth 5), so a
        # burst of 1000 messages overflows its queue (763 of 1000 arrived on a real Humble): like a
        # sensor, publish one message at a time, the next once its orientation is back.
        for i in range(len(samples.stamp_ns)):
            publisher.publish(messages.fill_imu(Imu(), samples, i))
            deadline = time.monotonic() + 5.0
            while len(received) <= i and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.01)
        end = time.monotonic() + 20.0
        while len(received) < len(samples.stamp_ns) and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
    finally:
        process.terminate()
        process.communicate(timeout=15)
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
    assert len(received) == len(samples.stamp_ns)
    offline = madgwick.madgwick_orientation(samples.stamp_ns / 1e9, samples.linear_acceleration,
                                            samples.angular_velocity)
    got = np.array([[m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w] for m in received])
    np.testing.assert_array_equal(got, offline)
    np.testing.assert_array_equal(received[0].orientation_covariance,
                                  madgwick.orientation_covariance(madgwick.ORIENTATION_STDDEV))


def test_madgwick_node_refuses_a_magnetometer():
    done = subprocess.run([sys.executable, "-m", "sim2real_eval.ros.madgwick_node", "--ros-args", "-p",
                           "use_mag:=true"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "parameter use_mag: true is not provided" in done.stdout + done.stderr
