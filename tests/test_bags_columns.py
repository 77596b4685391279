"""message_fields tables, and bags.columns: bag topics -> arrays, the inverse of the writers.

The tables are checked against the typestore (paths and kinds, both sbg_driver layouts); every table
round-trips values through the writers (objects and bulk CDR, byte-identical) and back through the
column reader (bulk and one-by-one), and the reader agrees with rosbags' deserialiser.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rosbags.typesys.base import Nodetype

from sim2real_eval import message_fields as F
from sim2real_eval.bags import cdr, columns, get_typestore, open_bag, write_bag
from sim2real_eval.bags import messages as M
from sim2real_eval.errors import UserError

LAYOUTS = ("3.1", "3.2")
INT_TYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "byte", "char"}
# Types the project writes whole: every wire field must be in the table (nothing silently zero).
WRITTEN_WHOLE = (F.NAVSATFIX, F.IMU, F.MAGNETIC_FIELD, F.ODOMETRY, F.TWIST_STAMPED,
                 F.TWIST_WITH_COVARIANCE_STAMPED)


def _node(store, msgtype: str, path: str):
    """The typestore node (kind, spec) of a field path."""
    typename = msgtype
    *parents, leaf = path.split(".")
    for name in parents:
        kind, spec = dict(store.fielddefs[typename][1])[name]
        assert kind == Nodetype.NAME, path
        typename = spec
    return dict(store.fielddefs[typename][1])[leaf]


def _member_names(store, typename: str) -> list:
    return [name for name, _node in store.fielddefs[typename][1]]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("table", list(F.TABLES.values()), ids=lambda t: t.msgtype.split("/")[-1])
def test_table_paths_and_kinds_match_the_typestore(table, layout):
    store = get_typestore(sbg_layout=layout)
    leaves = []
    for field in table.fields:
        kind, spec = _node(store, table.msgtype, field.path)
        if field.kind == F.STAMP:
            assert (kind, spec) == (Nodetype.NAME, "builtin_interfaces/msg/Time")
        elif field.kind in (F.XYZ, F.XYZW):
            assert kind == Nodetype.NAME and _member_names(store, spec) == list(field.kind)
        elif field.kind == F.ARRAY:
            assert kind == Nodetype.ARRAY and spec == ((Nodetype.BASE, ("float64", 0)), field.size)
        else:
            expected = {F.STRING: {"string"}, F.FLOAT: {"float32", "float64"}, F.BOOL: {"bool"},
                        F.INT: INT_TYPES}[field.kind]
            assert kind == Nodetype.BASE and spec[0] in expected, field
        leaves += field.leaves
    assert len(leaves) == len(set(leaves))


@pytest.mark.parametrize("table", WRITTEN_WHOLE, ids=lambda t: t.msgtype.split("/")[-1])
def test_written_types_are_covered_field_for_field(table):
    layout = cdr.message_layout(get_typestore(), table.msgtype)
    covered = {leaf for field in table.fields for leaf in field.leaves}
    assert covered == set(layout.fields) | set(layout.strings)


def _draw_values(draw, table: F.MessageFields, layout, n: int, frame: str) -> dict:
    """Random columns for ``table`` within each field's wire type."""
    values = {}
    for field in table.fields:
        if field.kind == F.STRING:
            values[field.name] = frame
        elif field.kind == F.STAMP:
            values[field.name] = np.array(draw(st.lists(st.integers(-2**31 * 10**9, 2**31 * 10**9 - 1),
                                                        min_size=n, max_size=n)), dtype=np.int64)
        elif field.kind == F.BOOL:
            values[field.name] = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        elif field.kind == F.INT:
            info = np.iinfo(np.dtype(layout.fields[field.path][1]))
            values[field.name] = np.array(draw(st.lists(st.integers(max(int(info.min), -2**63),
                                                                    min(int(info.max), 2**63 - 1)),
                                                        min_size=n, max_size=n)), dtype=np.int64)
        else:
            wire = np.dtype(layout.fields[field.leaves[0]][1])
            floats = st.floats(allow_nan=False, width=32 if wire.itemsize == 4 else 64)
            size = n * field.width
            flat = np.array(draw(st.lists(floats, min_size=size, max_size=size)), dtype=np.float64)
            values[field.name] = flat.reshape((n,) if field.width == 1 else (n, field.width))
    return values


def _assert_columns_equal(got: dict, values: dict, table: F.MessageFields):
    for field in table.select():
        expected = np.asarray(values[field.name])
        assert got[field.name].shape == expected.shape, field.name
        assert np.array_equal(got[field.name], expected.astype(got[field.name].dtype)), field.name


@settings(max_examples=60, deadline=None)
@given(data=st.data(), table=st.sampled_from(list(F.TABLES.values())), layout_name=st.sampled_from(LAYOUTS),
       n=st.integers(1, 4), frame=st.text(st.sampled_from("abc_/0é"), max_size=9))
def test_every_table_round_trips_through_both_writers_and_the_reader(data, table, layout_name, n, frame):
    store = get_typestore(sbg_layout=layout_name)
    strings = {f.path: frame for f in table.fields if f.kind == F.STRING}
    layout = cdr.message_layout(store, table.msgtype, strings)
    values = _draw_values(data.draw, table, layout, n, frame)
    receive = np.arange(n, dtype=np.int64) + 5
    objects = M.build_messages(table, values, receive, "/t", store)
    raws = M.build_cdr(table, values, receive, "/t", store)
    assert [bytes(store.serialize_cdr(m.msg, m.msgtype)) for m in objects] == [m.msg for m in raws]
    assert [m.recv_ns for m in raws] == receive.tolist()
    bulk = columns.decode_messages(store, table, [m.msg for m in raws])
    _assert_columns_equal(bulk, values, table)
    one_by_one = columns._one_by_one(store, table, table.select(), [m.msg for m in raws], False, "")
    _assert_columns_equal(one_by_one, values, table)
    # the per-message path (rclpy's): fill a zero message from each row, read it back
    for i in range(n):
        msg = F.fill(M.default_message(table.msgtype, store), table, F.row(table, _Container(values), i))
        assert bytes(store.serialize_cdr(msg, table.msgtype)) == raws[i].msg
        row = F.read(msg, table)
        if "stamp_ns" in table:  # (cmd_vel's Twist has no header)
            assert row["stamp_ns"] == values["stamp_ns"][i]


class _Container:
    """Columns as attributes (like GpsSamples), strings one per container."""

    def __init__(self, values: dict):
        self.__dict__.update(values)


def _odometry(store, stamp_ns: int, velocity, yaw: float, frame: str):
    values = {"stamp_ns": [stamp_ns], "frame_id": frame, "child_frame_id": "base_link",
              "position": [1.0, 2.0, 0.0], "orientation": [0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)],
              "pose_covariance": 0.0, "linear_velocity": [velocity], "angular_velocity": [0.0, 0.0, 0.1],
              "twist_covariance": 0.0}
    return M.build_messages(F.ODOMETRY, values, [stamp_ns], "/odom", store)[0].msg


@settings(max_examples=25, deadline=None)
@given(frames=st.lists(st.sampled_from(["odom", "map", "o", "world_frame_x"]), min_size=1, max_size=6),
       uniform=st.booleans(), big_endian=st.booleans(), data=st.data())
def test_reader_matches_rosbags_for_uniform_mixed_and_big_endian_batches(frames, uniform, big_endian, data):
    store = get_typestore()
    if uniform:
        frames = [frames[0]] * len(frames)
    velocities = [data.draw(st.tuples(*[st.floats(-9, 9, allow_nan=False)] * 3)) for _ in frames]
    stamps = [1_700_000_000_000_000_000 + i * 1000 + 7 for i in range(len(frames))]
    raws = [bytes(store.serialize_cdr(_odometry(store, stamp, v, 0.3 * i, f), F.ODOMETRY.msgtype,
                                      little_endian=not big_endian))
            for i, (stamp, f, v) in enumerate(zip(stamps, frames, velocities))]
    got = columns.decode_messages(store, F.ODOMETRY, raws, ("stamp_ns", "linear_velocity", "orientation"))
    for i, raw in enumerate(raws):
        msg = store.deserialize_cdr(raw, F.ODOMETRY.msgtype)
        assert got["stamp_ns"][i] == msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        lin, q = msg.twist.twist.linear, msg.pose.pose.orientation
        assert tuple(got["linear_velocity"][i]) == (lin.x, lin.y, lin.z)
        assert tuple(got["orientation"][i]) == (q.x, q.y, q.z, q.w)


def test_read_topics_in_batches_with_receive_times_and_frame_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(columns, "BATCH", 3)
    store = get_typestore()
    stamps = 10**10 + np.arange(8, dtype=np.int64) * 10**8
    velocity = np.arange(24, dtype=float).reshape(8, 3)
    twist = [m for i in range(8) for m in M.build_cdr(F.TWIST_STAMPED, {
        "stamp_ns": stamps[i:i + 1], "frame_id": "base_link" if i < 5 else "b",
        "linear_velocity": velocity[i:i + 1], "angular_velocity": 0.0}, stamps[i:i + 1] + 7, "/twist")]
    vel = M.sbg_gps_vel_messages(_still_truth(), stamps_ns=stamps)
    bag = write_bag(tmp_path / "b", sorted(twist + vel, key=lambda m: (m.recv_ns, m.topic)), typestore=store)
    with open_bag(bag) as reader:
        got = columns.read_topics(reader, {"/twist": F.TWIST_STAMPED, "/sbg/gps_vel": F.SBG_GPS_VEL},
                                  {"/twist": ("stamp_ns", "linear_velocity")})
    assert got["/twist"]["receive_ns"].tolist() == (stamps + 7).tolist()
    assert got["/twist"]["stamp_ns"].tolist() == stamps.tolist()
    assert np.array_equal(got["/twist"]["linear_velocity"], velocity)
    assert set(got["/twist"]) == {"receive_ns", "stamp_ns", "linear_velocity"}
    assert got["/sbg/gps_vel"]["vel_type"].tolist() == [2] * 8
    assert got["/sbg/gps_vel"]["course_acc"].dtype == np.float64


def _still_truth():
    from sim2real_eval.truth import GroundTruth

    t = np.array([9.0, 12.0])
    return GroundTruth.from_kinematics(t, np.zeros((2, 3)), np.tile([0, 0, 0, 1.0], (2, 1)),
                                       np.tile([1.0, 0, 0], (2, 1)))


def test_read_topics_errors_name_the_bag_and_topic(tmp_path):
    store = get_typestore()
    stamps = np.array([10**10, 2 * 10**10], dtype=np.int64)
    twist = M.build_cdr(F.TWIST_STAMPED, {"stamp_ns": stamps, "frame_id": "b", "linear_velocity": 1.0,
                                          "angular_velocity": 0.0}, stamps, "/twist")
    damaged = [twist[0], M.BagMessage(twist[1].recv_ns, "/twist", twist[1].msgtype, twist[1].msg[:-9])]
    bag = write_bag(tmp_path / "b", damaged, typestore=store)
    with open_bag(bag) as reader:
        with pytest.raises(UserError, match=r"topic /twist has type geometry_msgs/msg/TwistStamped, expec"):
            columns.read_topic(reader, "/twist", F.ODOMETRY)
        with pytest.raises(UserError, match=r"topic /nope is not in the bag"):
            columns.read_topic(reader, "/nope", F.ODOMETRY)
        with pytest.raises(UserError, match=r"b: topic /twist: cannot decode geometry_msgs/msg/TwistStamped"):
            columns.read_topic(reader, "/twist", F.TWIST_STAMPED)


def test_ros1_bag_columns_equal_the_deserialised_messages(peer_bag):
    with open_bag(peer_bag) as reader:
        assert reader.is_ros1
        got = columns.read_topic(reader, "/husky_velocity_controller/odom", F.ODOMETRY)
        objects = list(reader.messages(["/husky_velocity_controller/odom"]))
    assert len(got["stamp_ns"]) == len(objects) > 10
    assert got["receive_ns"].tolist() == [m.recv_ns for m in objects]
    for i in (0, len(objects) // 2, len(objects) - 1):
        row = F.read(objects[i].msg, F.ODOMETRY)
        for name, value in row.items():
            assert np.array_equal(got[name][i], value), name
