"""robot_localization's own acceptance test: ekf bag1 on test1.bag (judge.md §6)."""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from sim2real_eval.judge import Judge, load_ekf_params, parse_static_tf
from sim2real_eval.resources import config_path

EXPECTED = np.array([-40.0454, -76.9988, -2.6974])
TOLERANCE = 1.0452
BAG1_TF = "base_link imu_link 0 -0.3 0.52 -1.570796327 0 1.570796327"


def bag_messages(path):
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        wanted = [
            c for c in reader.connections if c.topic in ("/imu/data", "/husky_velocity_controller/odom")
        ]
        for connection, recv_ns, raw in reader.messages(wanted):
            yield recv_ns, connection.topic, reader.deserialize(raw, connection.msgtype)


@pytest.mark.slow
def test_ekf_bag1_final_position_within_upstream_tolerance(peer_bag):
    params = load_ekf_params(config_path("judge", "ekf_bag1.yaml"))
    result = Judge(params, static_tfs=[parse_static_tf(BAG1_TF)]).run(bag_messages(peer_bag))
    error = float(np.linalg.norm(result.final_position - EXPECTED))
    print(f"ekf bag1 final position {result.final_position}, error {error:.4f} m")
    assert error < TOLERANCE
    assert result.inputs == {"/imu/data": 11865, "/husky_velocity_controller/odom": 3952}
