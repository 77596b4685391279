"""robot_localization's own acceptance tests: ekf and ukf bag1 on test1.bag (judge.md §6)."""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from sim2real_eval.judge import Judge, load_ekf_params, parse_static_tf
from sim2real_eval.resources import config_path

BAG1_TF = "base_link imu_link 0 -0.3 0.52 -1.570796327 0 1.570796327"
TOPICS = ("/imu/data", "/husky_velocity_controller/odom")


@pytest.fixture(scope="module")
def bag1_messages(peer_bag):
    with AnyReader([peer_bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        wanted = [c for c in reader.connections if c.topic in TOPICS]
        return [
            (recv_ns, c.topic, reader.deserialize(raw, c.msgtype))
            for c, recv_ns, raw in reader.messages(wanted)
        ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "config, expected, tolerance",
    [
        ("ekf_bag1.yaml", (-40.0454, -76.9988, -2.6974), 1.0452),
        ("ukf_bag1.yaml", (-39.7333, -76.9820, -2.4427), 1.2910),
    ],
)
def test_bag1_final_position_within_upstream_tolerance(bag1_messages, config, expected, tolerance):
    params = load_ekf_params(config_path("judge", config))
    result = Judge(params, static_tfs=[parse_static_tf(BAG1_TF)]).run(bag1_messages)
    error = float(np.linalg.norm(result.final_position - np.array(expected)))
    print(f"{config}: final position {result.final_position}, error {error:.4f} m")
    assert error < tolerance  # upstream: the last /odometry/filtered, strictly less than the tolerance
    assert result.inputs == {"/imu/data": 11865, "/husky_velocity_controller/odom": 3952}
