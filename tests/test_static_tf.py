"""static_tf: the one parser of "PARENT CHILD x y z yaw pitch roll" (robot nodes, launch files, judge)."""
from __future__ import annotations

import pytest

from sim2real_eval.art import ART_STATIC_TFS, IMU_FRAME
from sim2real_eval.errors import UserError
from sim2real_eval.judge import parse_static_tf as judge_parse
from sim2real_eval.node.launch_plan import static_tf_nodes
from sim2real_eval.static_tf import mounting_rpy, parse_static_tf, valid_frame


def test_fields_in_static_transform_publisher_order():
    tf = parse_static_tf("base_link imu 0.1 -0.2 0.3 3.1416 -1.5708 0.5")
    assert (tf.parent, tf.child, tf.translation) == ("base_link", "imu", (0.1, -0.2, 0.3))
    assert (tf.yaw, tf.pitch, tf.roll) == (3.1416, -1.5708, 0.5)
    assert tf.rpy == [0.5, -1.5708, 3.1416]


@pytest.mark.parametrize("text, match", [
    ("base_link imu 0 0 0", "8 fields"),
    ("base_link imu 0 0 zero 0 0 0", "must be numbers"),
    ("base_link imu 0 0 nan 0 0 0", "must be finite"),
    ("base_link imu 0 0 0 inf 0 0", "must be finite"),
    ("base_link base_link 0 0 0 0 0 0", "same"),
    ("/base_link imu 0 0 0 0 0 0", "'/base_link' is not a valid tf2 frame id"),
    ("base_link /imu 0 0 0 0 0 0", "'/imu' is not a valid tf2 frame id"),
])
def test_bad_strings_fail_in_one_line_naming_the_string(text, match):
    with pytest.raises(UserError, match=match) as info:
        parse_static_tf(text)
    assert text in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("text", ["base_link imu 0 0 nan 0 0 0", "base_link base_link 0 0 0 0 0 0",
                                  "/base_link imu 0 0 0 0 0 0"])
def test_the_robot_and_the_judge_refuse_the_same_strings(text):
    """A launch argument that passes on the robot must not fail offline, and the other way round."""
    with pytest.raises(UserError) as robot:
        static_tf_nodes([text])
    with pytest.raises(UserError) as judge:
        judge_parse(text)
    assert str(robot.value) == str(judge.value)


def test_the_judge_reads_the_same_numbers():
    text = "base_link gps 0.25 0 0.5 0.1 0.2 0.3"
    tf, judged = parse_static_tf(text), judge_parse(text)
    assert (judged.parent, judged.child, judged.translation) == (tf.parent, tf.child, tf.translation)
    assert (judged.yaw, judged.pitch, judged.roll) == (tf.yaw, tf.pitch, tf.roll)


def test_mounting_rpy_of_the_art_imu():
    assert mounting_rpy(ART_STATIC_TFS, IMU_FRAME) == [0.0, -1.5708, 3.1416]
    assert mounting_rpy(ART_STATIC_TFS, "lidar") is None
    assert valid_frame("imu") and not valid_frame("") and not valid_frame("/imu")
