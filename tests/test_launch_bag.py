"""The launch tests' input bag (tests/launch/art_bag.py) is a valid ART-like rosbag2 bag.

The launch_testing test itself needs ROS 2; its input is built and checked here so that it is known
good before it reaches the Docker CI.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "launch"))
bags = pytest.importorskip("sim2real_eval.bags")
from art_bag import DATUM, drive, make_art_bag  # noqa: E402

from sim2real_eval.node import params, sbg_truth  # noqa: E402
from sim2real_eval.ros import messages  # noqa: E402


def test_art_bag_has_the_real_topics_and_its_sbg_truth_drives_ground_truth_node(tmp_path):
    path = make_art_bag(tmp_path / "art", duration_s=6.0)
    with bags.open_bag(path) as reader:
        topics = reader.topics
        assert {"/fix", "/imu", "/sbg/ekf_nav", "/sbg/ekf_quat"} <= set(topics)
        assert topics["/fix"].count == 60 and topics["/imu"].count == 600
        assembler = sbg_truth.SbgTruthAssembler(params.parse_ground_truth_params({"datum": DATUM}))
        outputs = []
        for item in reader.messages(["/sbg/ekf_nav", "/sbg/ekf_quat"]):
            stamp = messages.header_ns(item.msg.header)
            if item.topic == "/sbg/ekf_quat":
                q = item.msg.quaternion
                outputs.append(assembler.on_ekf_quat(stamp, [q.x, q.y, q.z, q.w]))
            else:
                v = item.msg.velocity
                nav = item.msg
                outputs.append(assembler.on_ekf_nav(stamp, [v.x, v.y, v.z], nav.latitude, nav.longitude,
                                                    nav.altitude, nav.undulation))
    outputs = [o for o in outputs if o is not None]
    truth = drive(6.0)
    assert len(outputs) == 300
    expected = truth.interpolate(np.array([o.stamp_ns for o in outputs]) / 1e9)
    assert np.abs(np.array([o.position for o in outputs]) - expected.position).max() < 1e-6


def test_art_bag_with_the_sbg_3_2_layout(tmp_path):
    path = make_art_bag(tmp_path / "art32", duration_s=2.0, sbg_layout="3.2")
    with bags.open_bag(path, typestore=bags.get_typestore(sbg_layout="3.2")) as reader:
        navs = [m.msg for m in reader.messages(["/sbg/ekf_nav"])]
    assert len(navs) == 100 and navs[0].latitude == pytest.approx(DATUM[0], abs=1e-3)
