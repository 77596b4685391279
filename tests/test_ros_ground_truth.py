"""ground_truth_node's core on sbg_driver messages built by the offline bag writer (NED driver default).

The messages come from the sbg builders of bags.messages and tests/fixtures/bags.py (their own inverse
conversions); feeding them to sbg_truth.SbgTruthAssembler, exactly as the node does, must give back the
truth they were built from.
"""
from __future__ import annotations

import numpy as np
import pytest

from sim2real_eval import rotations
from sim2real_eval.node import params, sbg_truth
from sim2real_eval.ros import messages
from sim2real_eval.truth import GroundTruth

bags_messages = pytest.importorskip("sim2real_eval.bags.messages")
from fixtures.bags import sbg_ekf_nav_messages, sbg_ekf_quat_messages  # noqa: E402  (needs rosbags)

DATUM = [43.07, -89.40, 260.0]


@pytest.fixture(scope="module")
def truth():
    t = 10.0 + np.arange(0, 6.0, 0.01)
    yaw = 0.4 + 0.25 * t
    speed = 2.0 + 0.2 * t
    v = np.stack([speed * np.cos(yaw), speed * np.sin(yaw), np.zeros_like(t)], axis=1)
    p = np.cumsum(v, axis=0) * 0.01 + [5.0, -3.0, 1.0]
    rates = np.tile([0, 0, 0.25], (len(t), 1))
    return GroundTruth.from_kinematics(t, p, rotations.from_yaw(yaw), v, angular_velocity=rates)


def feed(assembler, items):
    outputs = []
    for item in sorted(items, key=lambda m: (m.recv_ns, m.topic)):
        msg, stamp = item.msg, messages.header_ns(item.msg.header)
        if item.topic == "/sbg/ekf_quat":
            q = msg.quaternion
            outputs.append(assembler.on_ekf_quat(stamp, [q.x, q.y, q.z, q.w]))
        elif item.topic == "/sbg/gps_vel":
            v = msg.velocity
            outputs.append(assembler.on_gps_vel(stamp, [v.x, v.y, v.z], msg.course))
        elif item.topic == "/sbg/ekf_nav":
            v = msg.velocity
            outputs.append(assembler.on_ekf_nav(stamp, [v.x, v.y, v.z], msg.latitude, msg.longitude,
                                                msg.altitude, msg.undulation))
        elif item.topic == "/sbg/gps_pos":
            outputs.append(assembler.on_gps_pos(stamp, msg.latitude, msg.longitude, msg.altitude,
                                                msg.undulation))
    return [o for o in outputs if o is not None]


def test_ekf_pair_reproduces_the_truth(truth):
    items = list(sbg_ekf_quat_messages(truth)) + list(sbg_ekf_nav_messages(truth, DATUM, undulation=-33.0))
    config = params.parse_ground_truth_params({"truth_source": "sbg_ekf", "datum": DATUM})
    outputs = feed(sbg_truth.SbgTruthAssembler(config), items)
    assert len(outputs) == 300  # 50 Hz for 6 s
    stamps = np.array([o.stamp_ns for o in outputs])
    expected = truth.interpolate(stamps / 1e9)
    position = np.array([o.position for o in outputs])
    assert np.abs(position - expected.position).max() < 1e-6  # metres
    q = np.array([o.orientation for o in outputs])
    assert np.abs(np.abs(np.sum(q * expected.orientation, axis=1)) - 1).max() < 1e-12
    body_v = rotations.rotate_inverse(expected.orientation, expected.velocity)
    assert np.abs(np.array([o.linear_velocity_body for o in outputs]) - body_v).max() < 1e-9
    yaw_rate = np.array([o.angular_velocity_body[2] for o in outputs])[1:]
    assert np.allclose(yaw_rate, 0.25, atol=1e-9)  # constant-rate turn: the one-sided difference is exact


def test_gps_pair_gives_course_heading_and_first_fix_datum(truth):
    items = list(bags_messages.sbg_gps_vel_messages(truth))
    items += list(bags_messages.sbg_gps_pos_messages(truth, DATUM))
    assembler = sbg_truth.SbgTruthAssembler(params.parse_ground_truth_params({"truth_source": "auto"}))
    outputs = feed(assembler, items)
    assert assembler.active == "sbg_gps" and len(outputs) == 30  # 5 Hz
    assert np.allclose(outputs[0].position, 0, atol=1e-9)  # the first fix is the datum
    stamps = np.array([o.stamp_ns for o in outputs])
    expected = truth.interpolate(stamps / 1e9)
    moved = np.array([o.position for o in outputs])
    assert np.abs(moved - (expected.position - expected.position[0])).max() < 1e-3
    heading = np.arctan2(expected.velocity[:, 1], expected.velocity[:, 0])
    yaw = rotations.yaw_of(np.array([o.orientation for o in outputs]))
    assert np.abs(np.angle(np.exp(1j * (yaw - heading)))).max() < 1e-9
