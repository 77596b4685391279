"""Every released sbg_driver wire layout (3.0.0 … 3.3.2) is read, detected and turned into truth.

The shipped definitions (``bags/msgdefs/<layout>``) were read per tag from SBG-Systems/sbg_ros2_driver;
the field facts pinned here are the changes between those tags.
"""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from fixtures.bags import sbg_ekf_nav_messages, sbg_ekf_quat_messages

from sim2real_eval import rotations
from sim2real_eval.bags import SBG_LAYOUTS, get_typestore, open_bag, write_bag
from sim2real_eval.truth import GroundTruth
from sim2real_eval.truth.bag import truth_from_bag

DATUM = (43.07, -89.4, 260.0)


def fields(layout, name):
    return [f for f, _ in get_typestore(sbg_layout=layout).fielddefs[f"sbg_driver/msg/{name}"][1]]


def test_the_layouts_are_the_released_ones():
    assert SBG_LAYOUTS == ("3.1", "3.2", "3.3", "3.3.2")
    status = {layout: fields(layout, "SbgEkfStatus") for layout in SBG_LAYOUTS}
    assert [len(status[layout]) for layout in SBG_LAYOUTS] == [16, 24, 24, 23]  # + solution_mode
    assert "gps1_course_used" in status["3.1"] and "gps1_course_used" not in status["3.2"]
    assert set(status["3.3"]) - set(status["3.3.2"]) and status["3.2"] == status["3.3"]
    imu = {layout: fields(layout, "SbgImuStatus") for layout in SBG_LAYOUTS}
    assert imu["3.1"] == imu["3.2"] and "imu_gyros_use_high_scale" not in imu["3.2"]  # changed in 3.3.0
    assert imu["3.3"] == imu["3.3.2"] and imu["3.3"][-1] == "imu_gyros_use_high_scale"
    assert "num_sv_tracked" not in fields("3.1", "SbgGpsPos")
    assert all("num_sv_tracked" in fields(layout, "SbgGpsPos") for layout in ("3.2", "3.3", "3.3.2"))


def truth_series():
    t = 100.0 + np.arange(0, 4, 0.02)
    yaw = 0.3 + 0.1 * (t - 100.0)
    v = np.stack([2 * np.cos(yaw), 2 * np.sin(yaw), 0 * t], 1)
    return GroundTruth.from_kinematics(t, np.cumsum(v, 0) * 0.02, rotations.from_yaw(yaw), v,
                                       angular_velocity=np.tile([0, 0, 0.1], (len(t), 1)))


@pytest.mark.parametrize("layout", SBG_LAYOUTS)
def test_a_humble_bag_of_each_layout_is_detected_and_read(tmp_path, layout):
    """As a Humble .db3 (no definitions inside): detected, decoded, the INS truth recovered."""
    store = get_typestore(sbg_layout=layout)
    truth = truth_series()
    items = sorted(list(sbg_ekf_nav_messages(truth, DATUM, rate_hz=50.0, typestore=store))
                   + list(sbg_ekf_quat_messages(truth, rate_hz=50.0, typestore=store)),
                   key=lambda m: (m.recv_ns, m.topic))
    bag = write_bag(tmp_path / "b", items, typestore=store)
    with sqlite3.connect(next(bag.glob("*.db3"))) as conn:
        conn.execute("DELETE FROM message_definitions")
    conn.close()
    with open_bag(bag) as reader:
        detected = reader.typestore
        nav = "sbg_driver/msg/SbgEkfNav"
        # The detected layout has this layout's wire format (3.3 is 3.2 on the wire for these types).
        status = detected.fielddefs["sbg_driver/msg/SbgEkfStatus"][1]
        assert len(status) == len(fields(layout, "SbgEkfStatus"))
        assert detected.fielddefs[nav] == store.fielddefs[nav]
        recovered, _datum = truth_from_bag(reader, source="sbg_ekf")
    expected = truth.interpolate(recovered.t)
    assert np.abs(recovered.velocity - expected.velocity).max() < 1e-6
