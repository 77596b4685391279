"""The Madgwick step of the ROS side without ROS: judge.launch.py's plan (imu_orientation:=madgwick) and
madgwick_node's logic (node.madgwick) on real message objects, bit for bit the offline filter."""

import numpy as np
import pytest

from sim2real_eval import scenarios
from sim2real_eval.bags import get_typestore
from sim2real_eval.bags import messages as bm
from sim2real_eval.errors import UserError
from sim2real_eval.models import load_imu_model, madgwick, sensor_seed
from sim2real_eval.node import launch_plan
from sim2real_eval.node.madgwick import MadgwickRepublisher, parse_madgwick_params


def ament_prefix(tmp_path, package):
    marker = tmp_path / "share" / "ament_index" / "resource_index" / "packages" / package
    marker.parent.mkdir(parents=True)
    marker.write_text("")
    return {"AMENT_PREFIX_PATH": f"/nowhere:{tmp_path}"}


def test_no_orientation_step_by_default():
    names = [n.name for n in launch_plan.judge_plan({"static_tfs": "none"})]
    assert names == ["ekf_filter_node", "navsat_transform"]


def test_the_real_imu_filter_madgwick_where_installed(tmp_path):
    notes = []
    environ = ament_prefix(tmp_path, "imu_filter_madgwick")
    assert launch_plan.ros_package_installed("imu_filter_madgwick", environ)
    assert not launch_plan.ros_package_installed("imu_filter_madgwick", {"AMENT_PREFIX_PATH": "/nowhere"})
    args = {"static_tfs": "none", "imu_orientation": "madgwick", "madgwick_gain": "0.05",
            "use_sim_time": "false"}
    nodes = launch_plan.judge_plan(args, notice=notes.append, environ=environ)
    first = nodes[0]
    assert (first.package, first.executable) == ("imu_filter_madgwick", "imu_filter_madgwick_node")
    assert first.parameters == [{"use_sim_time": False, "use_mag": False, "world_frame": "enu",
                                 "publish_tf": False, "gain": 0.05, "zeta": 0.0,
                                 "orientation_stddev": madgwick.ORIENTATION_STDDEV}]
    assert first.remappings == [("imu/data_raw", "/imu/data_raw"), ("imu/data", "/imu")]
    assert [n.name for n in nodes[1:]] == ["ekf_filter_node", "navsat_transform"]
    assert notes == ["judge.launch.py: madgwick_node:=imu_filter_madgwick (imu_filter_madgwick is installed)"]


def test_ours_otherwise_with_parameters_it_accepts(tmp_path):
    notes = []
    nodes = launch_plan.judge_plan({"static_tfs": "none", "imu_orientation": "madgwick",
                                    "imu_raw_topic": "/rover/imu_raw", "orientation_stddev": "0.02"},
                                   notice=notes.append, environ={"AMENT_PREFIX_PATH": str(tmp_path)})
    ours = nodes[0]
    # not must_succeed (like ekf_node): the real imu_filter_madgwick_node ends with -2 on a terminal's Ctrl-C,
    # which made `ros2 launch` exit 1 (seen on a real Humble); a failure while running still fails it
    assert (ours.package, ours.executable) == ("sim2real_eval", "madgwick_node") and not ours.must_succeed
    assert ours.remappings[0] == ("imu/data_raw", "/rover/imu_raw")
    assert "not installed" in notes[0]
    config = parse_madgwick_params(ours.parameters[0])  # the node takes exactly what the plan gives
    assert (config.gain, config.zeta, config.world_frame) == (0.1, 0.0, "enu")
    assert config.orientation_stddev == 0.02
    forced = launch_plan.judge_plan({"static_tfs": "none", "imu_orientation": "madgwick",
                                     "madgwick_node": "sim2real_eval"},
                                    environ=ament_prefix(tmp_path, "imu_filter_madgwick"))
    assert forced[0].executable == "madgwick_node"


@pytest.mark.parametrize("args, match", [
    ({"imu_orientation": "ahrs"}, "imu_orientation"),
    ({"imu_orientation": "madgwick", "madgwick_node": "mine"}, "madgwick_node"),
    ({"imu_orientation": "madgwick", "madgwick_gain": "2"}, "madgwick_gain"),
    ({"imu_orientation": "madgwick", "madgwick_gain": "fast"}, "madgwick_gain"),
    ({"imu_orientation": "madgwick", "madgwick_zeta": "-3"}, "madgwick_zeta"),
    ({"imu_orientation": "madgwick", "orientation_stddev": "-0.1"}, "orientation_stddev"),
    ({"imu_orientation": "madgwick", "imu_raw_topic": "/imu"}, "imu_raw_topic"),
])
def test_bad_arguments_name_the_argument(args, match):
    with pytest.raises(UserError, match=f"launch argument {match}"):
        launch_plan.judge_plan(dict(args, static_tfs="none"))


def test_node_parameters_refuse_what_it_does_not_provide():
    for name in ("use_mag", "publish_tf", "stateless", "remove_gravity_vector"):
        with pytest.raises(UserError, match=f"parameter {name}: true is not provided"):
            parse_madgwick_params({name: True})
    with pytest.raises(UserError, match="world_frame"):
        parse_madgwick_params({"world_frame": "ned"})
    with pytest.raises(UserError, match="gain"):
        parse_madgwick_params({"gain": 1.5})
    with pytest.raises(UserError, match="unknown parameter"):
        parse_madgwick_params({"mag_bias_x": 0.1})


def test_the_node_logic_on_imu_messages_is_the_offline_filter():
    """Raw sensor_msgs/Imu messages (rosbags objects, as rclpy's have the same fields) through
    MadgwickRepublisher: the orientations are madgwick_orientation's, bit for bit, with σ² on the
    covariance diagonal."""
    truth = scenarios.generate("terrain", k=0, seed=0).slice(0, 4000)  # 20 s
    samples = load_imu_model("reference_mems", sensor_seed(0, "node"), rate=200.0).sample(truth)
    store = get_typestore()
    messages = [store.deserialize_cdr(record[3], "sensor_msgs/msg/Imu")
                for record in bm.imu_cdr(samples, "/imu/data_raw")]
    republisher = MadgwickRepublisher(parse_madgwick_params({}))
    assert all(republisher.on_imu(msg) for msg in messages)
    got = np.array([[m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w] for m in messages])
    offline = madgwick.madgwick_orientation(samples.stamp_ns / 1e9, samples.linear_acceleration,
                                            samples.angular_velocity)
    np.testing.assert_array_equal(got, offline)
    np.testing.assert_array_equal(messages[-1].orientation_covariance,
                                  madgwick.orientation_covariance(madgwick.ORIENTATION_STDDEV))
    falling = store.deserialize_cdr(bm.imu_cdr(samples, "/imu/data_raw")[0][3], "sensor_msgs/msg/Imu")
    falling.linear_acceleration.x = falling.linear_acceleration.y = falling.linear_acceleration.z = 0.0
    fresh = MadgwickRepublisher(parse_madgwick_params({}))
    assert not fresh.on_imu(falling) and fresh.waiting == 1
