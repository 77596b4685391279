"""The one GNSS-heading rule (sbg.heading_from_gps_vel), shared by truth.bag and ground_truth_node."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import sbg
from sim2real_eval.node import params, sbg_truth

S = 1_000_000_000


def test_heading_by_hand_holds_when_slow_and_back_fills():
    v = [[0.0, 0.1, 0.0],      # slow: before the first fast sample
         [1.0, 1.0, 0.0],      # fast: 45°
         [0.05, 0.0, 0.0],     # slow: hold 45°
         [0.0, -2.0, 5.0],     # fast, south (vertical speed does not count)
         [-3.0, 0.0, 0.0]]     # fast, west
    yaw = sbg.heading_from_gps_vel(v, min_speed=0.5)
    assert np.allclose(yaw, [math.pi / 4, math.pi / 4, math.pi / 4, -math.pi / 2, math.pi], atol=1e-15)
    held = sbg.heading_from_gps_vel(v, min_speed=0.5, initial_yaw=0.3)
    assert held[0] == 0.3 and np.array_equal(held[1:], yaw[1:])
    assert np.isnan(sbg.heading_from_gps_vel([[0.1, 0, 0]], min_speed=0.5)).all()
    assert sbg.heading_from_gps_vel([[0.5, 0, 0]], min_speed=0.5)[0] == 0.0  # the threshold counts as fast
    assert sbg.heading_from_gps_vel(np.zeros((0, 3)), 0.5).shape == (0,)


@settings(max_examples=60, deadline=None)
@given(v=st.lists(st.tuples(*[st.floats(-5, 5)] * 3), min_size=1, max_size=20),
       min_speed=st.floats(0.0, 3.0), initial=st.one_of(st.none(), st.floats(-3.0, 3.0)))
def test_heading_rule_properties(v, min_speed, initial):
    v = np.array(v)
    yaw = sbg.heading_from_gps_vel(v, min_speed, initial)
    fast = np.hypot(v[:, 0], v[:, 1]) >= min_speed
    assert np.array_equal(yaw[fast], np.arctan2(v[fast, 1], v[fast, 0]))
    for i in np.flatnonzero(~fast):
        if i > 0:
            assert yaw[i] == yaw[i - 1] or (np.isnan(yaw[i]) and np.isnan(yaw[i - 1]))
        elif initial is not None:
            assert yaw[0] == initial
    # streaming one sample at a time with the held yaw == the whole series with that initial yaw
    if initial is not None:
        held, streamed = initial, []
        for row in v:
            held = float(sbg.heading_from_gps_vel(row, min_speed, held)[0])
            streamed.append(held)
        assert np.array_equal(streamed, yaw)


def test_ground_truth_node_uses_the_rule():
    """The node's yaw follows the velocity direction (not the course field) and holds when slow."""
    assembler = sbg_truth.SbgTruthAssembler(params.parse_ground_truth_params({"min_course_speed": 0.5}))
    yaws = []
    for i, (ned, course) in enumerate((([0.2, 0.0, 0.0], 0.0),      # slow: the node's initial yaw 0
                                       ([1.0, 1.0, 0.0], 10.0),     # NE; a wrong course is ignored
                                       ([0.1, -0.1, 0.0], 300.0))):  # slow: held
        assembler.on_gps_vel(10 * S + i * S // 5, ned, course)
        out = assembler.on_gps_pos(10 * S + i * S // 5, 43.0, -89.0, 300.0, 0.0)
        yaws.append(math.atan2(out.orientation[2], out.orientation[3]) * 2)
    expected = sbg.heading_from_gps_vel(sbg.ned_to_enu([[0.2, 0, 0], [1, 1, 0], [0.1, -0.1, 0]]), 0.5, 0.0)
    assert np.allclose(yaws, expected, atol=1e-12) and abs(yaws[1] - math.pi / 4) < 1e-12
