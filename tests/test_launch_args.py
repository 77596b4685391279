"""Launch argument → process / parameter / remap mapping of evaluate, sensors and judge launch files.

The launch files only turn node.launch_plan's plans into launch actions; the plans are tested here.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from sim2real_eval.errors import UserError
from sim2real_eval.node import launch_plan
from sim2real_eval.node import params as node_params

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def bag(tmp_path):
    path = tmp_path / "lot17_run1"
    path.mkdir()
    (path / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    return path


def plan(bag, tmp_path, **args):
    args.setdefault("output", str(tmp_path / "out" / "run"))
    return launch_plan.evaluate_plan(dict(bag=str(bag), **args))


def by_name(plan_):
    return {spec.name: spec for spec in plan_.nodes}


def test_sim_imu_hides_the_real_imu_and_starts_only_the_imu_node(bag, tmp_path):
    p = plan(bag, tmp_path, mode="sim_imu", imu_model="mavs_mems", seed="7", seed_keys="sim_imu,lot17,0",
             imu_rate="200")
    assert p.player.cmd == ["ros2", "bag", "play", str(bag), "--clock", "--rate", "1.0",
                            "--remap", "/imu:=/real/imu"]
    nodes = by_name(p)
    assert "gps_noise_node" not in nodes
    imu = nodes["imu_noise_node"]
    assert (imu.package, imu.executable) == ("sim2real_eval", "imu_noise_node")
    assert imu.parameters == [{"use_sim_time": True, "seed": 7, "rate": 200.0,
                               "truth_topic": "/ground_truth/odom", "twist_frame": "child",
                               "seed_keys": ["sim_imu", "lot17", "0"], "model": "mavs_mems",
                               # base_link→imu "0 0 0 3.1416 -1.5708 0" (yaw pitch roll) as roll, pitch, yaw
                               "model_params.mounting_rpy": [0.0, -1.5708, 3.1416],
                               # ticks: the hidden real IMU's header stamps, as the offline replay
                               "tick_topic": "/real/imu"}]
    # The node parses exactly what the launch passes (same keys, same validation).
    config = node_params.parse_noise_node_params("imu", imu.parameters[0])
    assert config.seed_keys == ["sim_imu", "lot17", 0] and config.tick_topic == "/real/imu"
    assert config.stream(config.load_model()).explicit_ticks
    assert config.model_spec == {"preset": "mavs_mems", "mounting_rpy": [0.0, -1.5708, 3.1416]}
    assert config.load_model().mounting_rpy == [0.0, -1.5708, 3.1416]
    assert p.run_record["imu"] == {"model": "mavs_mems", "mounting_rpy": [0.0, -1.5708, 3.1416]}


def test_imu_ticks_on_its_own_rate(bag, tmp_path):
    imu = by_name(plan(bag, tmp_path, mode="sim_imu", imu_ticks="rate"))["imu_noise_node"]
    assert "tick_topic" not in imu.parameters[0]
    assert not node_params.parse_noise_node_params("imu", imu.parameters[0]).tick_topic


def test_sim_both_and_real_modes(bag, tmp_path):
    both = plan(bag, tmp_path, mode="sim_both", rate="5")
    assert both.player.cmd[-3:] == ["--remap", "/fix:=/real/fix", "/imu:=/real/imu"]
    nodes = by_name(both)
    assert nodes["gps_noise_node"].parameters[0]["rate"] == 5.0
    assert nodes["gps_noise_node"].parameters[0]["model"] == "ch_gauss"  # documented default
    real = plan(bag, tmp_path, mode="real")
    assert "--remap" not in real.player.cmd
    assert not {"gps_noise_node", "imu_noise_node"} & set(by_name(real))
    assert real.run_record["side"] == "real" and real.run_record["variant"] == "real"
    assert both.run_record["side"] == "sim" and both.run_record["variant"] == "sim_both"


def test_judge_static_tfs_ground_truth_and_recorder(bag, tmp_path):
    p = plan(bag, tmp_path, mode="sim_gps", storage="mcap", truth_source="gps")
    nodes = by_name(p)
    ekf, navsat = nodes["ekf_filter_node"], nodes["navsat_transform"]
    assert (ekf.package, ekf.executable) == ("robot_localization", "ekf_node")
    assert ekf.parameters[0].endswith("config/ekf_art_iros2024.yaml") and Path(ekf.parameters[0]).is_file()
    assert ekf.parameters[1] == {"use_sim_time": True}
    assert navsat.executable == "navsat_transform_node"
    assert ("gps/fix", "/fix") in navsat.remappings and ("imu", "/imu") in navsat.remappings
    imu_tf = nodes["static_tf_base_link_to_imu"]
    assert imu_tf.arguments == ["--x", "0.0", "--y", "0.0", "--z", "0.0", "--yaw", "3.1416",
                                "--pitch", "-1.5708", "--roll", "0.0", "--frame-id", "base_link",
                                "--child-frame-id", "imu"]
    gps_tf = nodes["static_tf_base_link_to_gps"].arguments
    assert gps_tf[:12:2] == ["--x", "--y", "--z", "--yaw", "--pitch", "--roll"]
    assert nodes["ground_truth_node"].parameters == [{"use_sim_time": True, "source": "gps"}]
    recorder = nodes["recorder_node"].parameters[0]
    assert recorder["storage"] == "mcap" and recorder["output"] == str(tmp_path / "out" / "run")
    record = yaml.safe_load(recorder["run_yaml"])
    assert record["gps"] == {"model": "ch_gauss"} and record["imu"] == {"model": "real"}
    assert "model_params.mounting_rpy" not in nodes["gps_noise_node"].parameters[0]
    assert record["topics"] == {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom",
                                "gps": "/fix", "imu": "/imu"}
    assert len(record["judge"]["ekf_sha256"]) == 64 and record["scenario"] == "lot17_run1"
    # Every node runs on the bag's clock.
    for spec in p.nodes:
        assert any(isinstance(x, dict) and x.get("use_sim_time") is True for x in spec.parameters), spec.name
    # The recorder accepts what the launch passes.
    assert node_params.parse_recorder_params(recorder).storage == "mcap"


def test_default_output_is_under_runs_in_the_working_directory(bag, tmp_path):
    p = launch_plan.evaluate_plan({"bag": str(bag), "mode": "sim_gps"}, cwd=str(tmp_path))
    assert p.output == str(tmp_path / "runs" / "sim_gps_lot17_run1")


@pytest.mark.parametrize("args, match", [
    ({"mode": "sim"}, "mode:='sim'"),
    ({"rate": "0"}, "launch argument rate"),
    ({"imu_rate": "abc"}, "imu_rate"),
    ({"seed": "-3"}, "seed"),
    ({"storage": "bag"}, "storage"),
    ({"truth_source": "ins"}, "truth_source"),
    ({"imu_ticks": "bag"}, "imu_ticks"),
    ({"ekf_config": "/nonexistent/ekf.yaml"}, "ekf_config: /nonexistent/ekf.yaml does not exist"),
    ({"gps_modle": "x"}, "unknown argument.*gps_modle"),
])
def test_bad_arguments_fail_naming_the_argument(bag, tmp_path, args, match):
    with pytest.raises(UserError, match=match):
        plan(bag, tmp_path, **args)


def test_missing_bag_fails_immediately_naming_the_path(tmp_path):
    missing = tmp_path / "no_such_bag"
    with pytest.raises(UserError, match=f"bag: {missing} does not exist"):
        launch_plan.evaluate_plan({"bag": str(missing)})
    with pytest.raises(UserError, match="bag:= is required"):
        launch_plan.evaluate_plan({})


def test_existing_output_is_refused(bag, tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(UserError, match="already exists"):
        plan(bag, tmp_path, output=str(tmp_path / "taken"))


def test_sensors_and_judge_plans():
    nodes = launch_plan.sensors_plan({"sensors": "imu", "truth_topic": "/vehicle/odom",
                                      "twist_frame": "world", "use_sim_time": "false",
                                      "imu_model": "airsim_imu"})
    assert [n.name for n in nodes] == ["imu_noise_node"]
    assert nodes[0].parameters[0]["truth_topic"] == "/vehicle/odom"
    assert nodes[0].parameters[0]["use_sim_time"] is False
    assert nodes[0].parameters[0]["twist_frame"] == "world"
    assert len(launch_plan.sensors_plan({})) == 2
    with pytest.raises(UserError, match="sensors"):
        launch_plan.sensors_plan({"sensors": "lidar"})
    judge = launch_plan.judge_plan({"use_sim_time": "false"})
    assert [n.executable for n in judge] == ["ekf_node", "navsat_transform_node"]
    assert judge[0].parameters[1] == {"use_sim_time": False}


def launch_file(name):
    return (REPO / "launch" / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name, table, builder", [
    ("evaluate.launch.py", "EVALUATE_ARGUMENTS", "evaluate_plan"),
    ("sensors.launch.py", "SENSORS_ARGUMENTS", "sensors_plan"),
    ("judge.launch.py", "JUDGE_ARGUMENTS", "judge_plan"),
])
def test_launch_files_declare_the_launch_plan_tables(name, table, builder):
    """Each launch file declares its launch_plan argument table and builds from its launch_plan plan."""
    tree = ast.parse(launch_file(name))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "sim2real_eval.node.launch_plan" for alias in node.names}
    assert {table, builder} <= imported
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("table", ["EVALUATE_ARGUMENTS", "SENSORS_ARGUMENTS", "JUDGE_ARGUMENTS"])
def test_every_launch_argument_is_documented_with_an_example(table):
    docs = (REPO / "docs" / "ros.md").read_text(encoding="utf-8")
    for name in getattr(launch_plan, table):
        assert f"`{name}`" in docs, f"docs/ros.md does not document {name}"
        assert f"{name}:=" in docs, f"docs/ros.md has no example command line using {name}:="


def test_launch_descriptions_load_where_ros_is_installed():
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (no ROS 2 here)")
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    for name in ("evaluate.launch.py", "sensors.launch.py", "judge.launch.py"):
        description = PythonLaunchDescriptionSource(str(REPO / "launch" / name)).get_launch_description(None)
        declared = {a.name for a in description.get_launch_arguments()}
        assert declared, name
