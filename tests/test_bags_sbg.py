"""sbg_driver layouts 3.1 / 3.2 (serialise, deserialise, detect), sbg.py frame math, message builders."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from fixtures.bags import header, merge_by_time, sbg_ekf_quat_messages
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import message_fields, rotations, sbg, stamps
from sim2real_eval.bags import detect_sbg_layout, get_typestore, open_bag, write_bag
from sim2real_eval.bags import messages as M
from sim2real_eval.bags.typestore import LAYOUT_DEPENDENT
from sim2real_eval.errors import UserError
from sim2real_eval.truth import GroundTruth

SBG_TYPES = ["SbgGpsVel", "SbgGpsPos", "SbgEkfNav", "SbgEkfQuat", "SbgEkfEuler", "SbgImuData"]


@pytest.mark.parametrize("layout", ["3.1", "3.2"])
@pytest.mark.parametrize("name", SBG_TYPES)
def test_each_layout_round_trips(layout, name):
    store = get_typestore(sbg_layout=layout)
    msgtype = f"sbg_driver/msg/{name}"
    msg = M.default_message(msgtype, store)
    msg.header = header(1_708_000_000_123_456_789, "imu_link_ned", store)
    msg.time_stamp = 4_000_000_000
    raw = store.serialize_cdr(msg, msgtype)
    back = store.deserialize_cdr(raw, msgtype)
    assert back.header.stamp.sec == 1_708_000_000 and back.header.stamp.nanosec == 123_456_789
    assert back.time_stamp == 4_000_000_000
    assert bytes(store.serialize_cdr(back, msgtype)) == bytes(raw)


def test_layouts_differ_where_the_driver_changed():
    old, new = get_typestore(sbg_layout="3.1"), get_typestore(sbg_layout="3.2")
    fields = {layout: {n: [f for f, _ in s.fielddefs[f"sbg_driver/msg/{n}"][1]]
                       for n in ("SbgGpsPos", "SbgGpsPosStatus", "SbgEkfStatus", "SbgImuStatus")}
              for layout, s in (("3.1", old), ("3.2", new))}
    assert "num_sv_tracked" not in fields["3.1"]["SbgGpsPos"]
    new_pos = fields["3.2"]["SbgGpsPos"]
    assert new_pos.index("num_sv_tracked") == new_pos.index("num_sv_used") - 1
    assert fields["3.2"]["SbgGpsPosStatus"][:5] == ["status", "type", "ifm", "spoofing", "osnma"]
    assert "gps1_course_used" in fields["3.1"]["SbgEkfStatus"]
    assert "gps1_course_used" not in fields["3.2"]["SbgEkfStatus"]
    assert len(fields["3.1"]["SbgEkfStatus"]) == 16
    assert "imu_gyros_use_high_scale" not in fields["3.2"]["SbgImuStatus"]  # added in 3.3.0
    # Field order of the 3.1.0 SbgGpsVel as recorded on ART.
    assert [f for f, _ in old.fielddefs["sbg_driver/msg/SbgGpsVel"][1]] == [
        "header", "time_stamp", "status", "gps_tow", "velocity", "velocity_accuracy", "course", "course_acc"]
    for name in ("SbgGpsPos", "SbgEkfNav", "SbgEkfQuat"):
        msgtype = f"sbg_driver/msg/{name}"
        size_old = len(old.serialize_cdr(M.default_message(msgtype, old), msgtype))
        size_new = len(new.serialize_cdr(M.default_message(msgtype, new), msgtype))
        assert size_new - size_old >= 4, name


def _truth():
    t = 100.0 + np.arange(0, 4, 0.01)
    pos = np.stack([t - 100.0, 0 * t, 0 * t], 1)
    level = np.tile([0, 0, 0, 1.0], (len(t), 1))
    return GroundTruth.from_kinematics(t, pos, level, np.tile([1.0, 0, 0], (len(t), 1)))


@pytest.mark.parametrize("layout", ["3.1", "3.2"])
def test_layout_detected_in_bags_without_definitions(tmp_path, layout):
    store = get_typestore(sbg_layout=layout)
    truth = _truth()
    bag = write_bag(tmp_path / "b", merge_by_time(
        M.sbg_gps_pos_messages(truth, (43.07, -89.4, 260.0), typestore=store),
        sbg_ekf_quat_messages(truth, typestore=store)), typestore=store)
    db = next(bag.glob("*.db3"))
    with sqlite3.connect(db) as conn:  # now like a Humble .db3: no definitions inside
        conn.execute("DELETE FROM message_definitions")
    conn.close()
    with open_bag(bag) as reader:
        fixes = [m.msg for m in reader.messages(["/sbg/gps_pos"])]
        name = "sbg_driver/msg/SbgGpsPos"
        assert reader.typestore.fielddefs[name] == store.fielddefs[name]
    assert fixes[0].num_sv_used == 20 and fixes[0].latitude == pytest.approx(43.07)
    other = get_typestore(sbg_layout="3.2" if layout == "3.1" else "3.1")
    with open_bag(bag, typestore=other) as reader, pytest.raises(UserError, match="topic /sbg/"):
        list(reader.messages())


def test_detect_layout_rejects_foreign_bytes():
    store = get_typestore()
    name = "sbg_driver/msg/SbgEkfQuat"
    raw = bytes(store.serialize_cdr(M.default_message(name, store), name))
    assert detect_sbg_layout({"sbg_driver/msg/SbgEkfQuat": raw}) == "3.1"
    assert detect_sbg_layout({"sensor_msgs/msg/Imu": b"..."}) is None
    with pytest.raises(UserError, match="match neither layout"):
        detect_sbg_layout({"sbg_driver/msg/SbgEkfQuat": raw + b"\x00" * 40}, "bag.db3")
    assert set(LAYOUT_DEPENDENT) >= {"sbg_driver/msg/SbgGpsPos", "sbg_driver/msg/SbgEkfNav"}
    with pytest.raises(UserError, match="sbg_layout"):
        get_typestore(sbg_layout="4.0")


# --- sbg.py: hand-computed values ------------------------------------------------------------------

def test_ned_to_enu_by_hand():
    np.testing.assert_array_equal(sbg.ned_to_enu([1.0, 2.0, 3.0]), [2.0, 1.0, -3.0])
    np.testing.assert_array_equal(sbg.vector_to_enu([1.0, 2.0, 3.0], enu_mode=True), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(sbg.ned_to_enu([[0, 0, 1.0]] * 2), [[0, 0, -1.0]] * 2)


def test_quaternions_by_hand():
    # FRD body aligned with NED (identity) = vehicle facing north, level: ENU yaw +90°, FLU body.
    q = sbg.quaternion_to_enu([0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(q, [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-15)
    # Facing east in NED (yaw 90° about down) = ENU yaw 0.
    q_ned_east = [0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)]
    np.testing.assert_allclose(sbg.quaternion_to_enu(q_ned_east), [0, 0, 0, 1], atol=1e-15)
    # Nose up 10° in NED (positive pitch about FRD y) stays nose up in ENU: body x gets +z.
    q_up = [0.0, np.sin(np.radians(5)), 0.0, np.cos(np.radians(5))]
    nose = rotations.rotate(sbg.quaternion_to_enu(q_up), [1.0, 0, 0])
    np.testing.assert_allclose(nose, [0, np.cos(np.radians(10)), np.sin(np.radians(10))], atol=1e-12)
    np.testing.assert_allclose(sbg.quaternion_to_enu(q_up, enu_mode=True), q_up)


def test_course_and_height_by_hand():
    assert sbg.course_to_yaw(0.0) == pytest.approx(np.pi / 2)       # north
    assert sbg.course_to_yaw(90.0) == pytest.approx(0.0)            # east
    assert sbg.course_to_yaw(180.0) == pytest.approx(-np.pi / 2)    # south
    assert sbg.course_to_yaw(30.0, enu_mode=True) == pytest.approx(np.radians(30))
    assert sbg.yaw_to_course(np.pi) == pytest.approx(270.0)         # west
    assert sbg.ellipsoidal_height(290.0, -33.5) == pytest.approx(256.5)
    enu = sbg.position_to_enu(43.07, -89.4, 293.5, -33.5, (43.07, -89.4, 260.0))
    np.testing.assert_allclose(enu, [0, 0, 0], atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1),
       st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-1e3, 1e3))
def test_conversions_invert(q, x, y, z):
    q = rotations.normalize(q)
    back = sbg.quaternion_to_enu(sbg.quaternion_from_enu(q))
    assert abs(abs(float(np.dot(back, q))) - 1.0) < 1e-12
    v = np.array([x, y, z])
    np.testing.assert_array_equal(sbg.enu_to_ned(sbg.ned_to_enu(v)), v)
    yaw = np.arctan2(y, x) if (x or y) else 0.0
    assert np.isclose(np.cos(sbg.course_to_yaw(sbg.yaw_to_course(yaw)) - yaw), 1.0)


# --- builders -----------------------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**62))
def test_header_stamp_round_trip(stamp_ns):
    msg = M.build_messages(message_fields.TWIST_STAMPED, {"stamp_ns": [stamp_ns], "frame_id": "base_link",
                                                          "linear_velocity": 0.0, "angular_velocity": 0.0},
                           [stamp_ns], "/t")[0].msg
    h = msg.header
    assert 0 <= h.stamp.nanosec < 10**9 and stamps.stamp_to_ns(h.stamp) == stamp_ns
    assert h.frame_id == "base_link"


def test_truth_odometry_twist_is_in_the_body_frame():
    # Facing north (yaw 90°), moving north at 2 m/s, turning at 0.3 rad/s: body twist (2, 0, 0), (0, 0, 0.3).
    t = np.array([10.0, 10.5])
    q = np.tile(rotations.from_yaw(np.pi / 2), (2, 1))
    truth = GroundTruth(t, np.zeros((2, 3)), q, np.tile([0, 2.0, 0], (2, 1)), np.tile([0, 0, 0.3], (2, 1)),
                        np.tile([0, 0, 9.80665], (2, 1)))
    msgs = list(M.truth_odometry_messages(truth))
    assert [m.recv_ns for m in msgs] == [10_000_000_000, 10_500_000_000]
    odom = msgs[1].msg
    assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "base_link")
    assert odom.header.stamp.sec == 10 and odom.header.stamp.nanosec == 500_000_000
    lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
    np.testing.assert_allclose([lin.x, lin.y, lin.z], [2, 0, 0], atol=1e-12)
    assert (ang.x, ang.y, ang.z) == (0, 0, 0.3)
    assert odom.pose.pose.orientation.z == pytest.approx(np.sqrt(0.5))
    assert not odom.pose.covariance.any()


def test_tick_stamps_are_exact_multiples_inside_the_span():
    truth = GroundTruth.from_kinematics([10.01, 10.99], np.zeros((2, 3)), np.tile([0, 0, 0, 1.0], (2, 1)),
                                        np.zeros((2, 3)))
    np.testing.assert_array_equal(M.tick_stamps_ns(truth, 5.0), [10_200_000_000, 10_400_000_000,
                                                                 10_600_000_000, 10_800_000_000])
