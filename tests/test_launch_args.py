"""Launch argument → process / parameter / remap mapping of evaluate, sensors and judge launch files.

The launch files only turn node.launch_plan's plans into launch actions; the plans are tested here.
evaluate's plan reads the bag (the offline replay's reader), so it runs on the reference bags.
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import yaml

from sim2real_eval.errors import UserError
from sim2real_eval.node import launch_plan
from sim2real_eval.node import params as node_params

pytest.importorskip("sim2real_eval.bags")  # evaluate's plan reads the bag (Python >= 3.10)

REPO = Path(__file__).resolve().parents[1]
LINE = REPO / "bags" / "reference" / "line" / "run_00"


@pytest.fixture()
def bag(tmp_path):
    """The reference line bag at DIR/line/run_00 (its path names scenario and k)."""
    path = tmp_path / "art" / "line" / "run_00"
    shutil.copytree(LINE, path)
    return path


def plan(bag, tmp_path, **args):
    args.setdefault("output", str(tmp_path / "out" / "run"))
    return launch_plan.evaluate_plan(dict(bag=str(bag), **args))


def by_name(plan_):
    return {spec.name: spec for spec in plan_.nodes}


def test_sim_imu_replays_the_offline_streams_on_the_players_clock(bag, tmp_path):
    p = plan(bag, tmp_path, mode="sim_imu", imu_model="mavs_mems", seed="7")
    assert p.player.cmd == ["ros2", "bag", "play", str(bag), "--clock", "40.0", "--rate", "1.0",
                            "--start-paused", "--disable-keyboard-controls", "--topics", "/fix", "/imu",
                            "--remap", "/fix:=/real/fix", "/imu:=/real/imu"]
    nodes = by_name(p)
    assert not {"gps_noise_node", "imu_noise_node", "ground_truth_node"} & set(nodes)
    replay = nodes["replay_node"]
    assert (replay.package, replay.executable, replay.must_succeed) == ("sim2real_eval", "replay_node", True)
    parameters = replay.parameters[0]
    assert {k: parameters[k] for k in ("mode", "imu_model", "seed", "scenario", "k", "truth_source")} == {
        "mode": "sim_imu", "imu_model": "mavs_mems", "seed": 7, "scenario": "line", "k": 0,
        "truth_source": "auto"}
    assert parameters["resume_service"] == "/rosbag2_player/resume"
    # The node parses exactly what the launch passes (same names, same validation).
    config = node_params.parse_replay_params(parameters)
    assert config.wait_for == [("/fix", 2), ("/imu", 2), ("/odometry/filtered", 2), ("/ground_truth/odom", 1)]
    # run.yaml is the offline replay's record of the same run (scored like an offline run).
    record = p.run_record
    assert (record["side"], record["variant"], record["scenario"], record["k"]) == (
        "sim", "sim_imu-mavs_mems", "line", 0)
    assert record["imu"]["mounting_rpy"] == [0.0, -1.5708, 3.1416] and record["gps"] == "real"
    assert len(record["window_ns"]) == 2 and record["recorded_by"].startswith("recorder_node")


def test_the_sim_clock_steps_25_ms_at_every_play_rate(bag, tmp_path):
    cmd = plan(bag, tmp_path, mode="real", play_rate="2.0").player.cmd
    assert cmd[cmd.index("--clock") + 1] == "80.0" and cmd[cmd.index("--rate") + 1] == "2.0"


def test_default_output_is_the_offline_run_layout_under_runs(bag, tmp_path):
    """Two scenarios' run_00 no longer collide: ./runs/<side>/<variant>/<scenario>/<k>."""
    p = launch_plan.evaluate_plan({"bag": str(bag), "mode": "sim_gps"}, cwd=str(tmp_path))
    assert p.output == str(tmp_path / "runs" / "sim" / "sim_gps-ch_gauss" / "line" / "0")
    real = launch_plan.evaluate_plan({"bag": str(bag), "mode": "real", "k": "4", "scenario": "lot17"},
                                     cwd=str(tmp_path))
    assert real.output == str(tmp_path / "runs" / "real" / "real" / "lot17" / "4")


def test_judge_static_tfs_and_recorder(bag, tmp_path):
    p = plan(bag, tmp_path, mode="sim_both", storage="mcap", truth_source="sbg_gps")
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
    recorder = nodes["recorder_node"].parameters[0]
    assert recorder["storage"] == "mcap" and recorder["output"] == str(tmp_path / "out" / "run")
    assert recorder["required_topics"] == ["/odometry/filtered", "/ground_truth/odom", "/fix", "/imu"]
    record = yaml.safe_load(recorder["run_yaml"])
    assert read_run_info_text(recorder["run_yaml"]).run.variant == "sim_gps-ch_gauss_imu-chrono_paper_demo"
    assert record["ground_truth_source"] == "sbg_gps"
    assert len(record["judge"]["ekf_sha256"]) == 64
    for spec in p.nodes:  # every node runs on the bag's clock
        assert any(isinstance(x, dict) and x.get("use_sim_time") is True for x in spec.parameters), spec.name
    assert node_params.parse_recorder_params(recorder).storage == "mcap"  # the recorder accepts it


def read_run_info_text(text):
    """The recorder's run.yaml text read by the runs module, as the scorer reads it."""
    from sim2real_eval.runs import RunInfo
    return RunInfo.from_dict(yaml.safe_load(text), "run.yaml")


def test_real_mode_replays_the_cropped_real_streams(bag, tmp_path):
    p = plan(bag, tmp_path, mode="real")
    assert p.run_record["side"] == "real" and p.run_record["gps"] == "real" and p.run_record["imu"] == "real"
    assert by_name(p)["replay_node"].parameters[0]["mode"] == "real"


@pytest.mark.parametrize("args, match", [
    ({"mode": "sim"}, "mode:='sim'"),
    ({"play_rate": "0"}, "launch argument play_rate"),
    ({"seed": "-3"}, "seed"),
    ({"k": "x"}, "launch argument k"),
    ({"storage": "bag"}, "storage"),
    ({"truth_source": "ins"}, "unknown ground-truth source 'ins'"),
    ({"truth_source": "sbg_ekf"}, "evaluate.launch.py: .*"),   # the line bag has no SbgEkfNav
    ({"imu_model": "no_such_preset", "mode": "sim_imu"}, "no_such_preset"),
    ({"ekf_config": "/nonexistent/ekf.yaml"}, "ekf_config: /nonexistent/ekf.yaml does not exist"),
    ({"gps_modle": "x"}, "unknown argument.*gps_modle"),
    ({"imu_rate": "200"}, "unknown argument.*imu_rate"),
])
def test_bad_arguments_fail_naming_the_argument(bag, tmp_path, args, match):
    with pytest.raises(UserError, match=match) as info:
        plan(bag, tmp_path, **args)
    assert "\n" not in str(info.value)


def test_missing_bag_fails_immediately_naming_the_path(tmp_path):
    missing = tmp_path / "no_such_bag"
    with pytest.raises(UserError, match=f"bag: {missing} does not exist"):
        launch_plan.evaluate_plan({"bag": str(missing)})
    with pytest.raises(UserError, match="bag:= is required"):
        launch_plan.evaluate_plan({})


def test_evaluate_on_the_robots_python_says_where_it_runs(bag, tmp_path, monkeypatch):
    # The Jetson (L4T r35) has Python 3.8 and no offline stack: one line, not an import traceback.
    monkeypatch.setattr(launch_plan.sys, "version_info", (3, 8, 10, "final", 0))
    with pytest.raises(UserError, match=r"Python >= 3.10.*sensors.launch.py \(this is Python 3.8\)"):
        plan(bag, tmp_path)
    monkeypatch.undo()
    monkeypatch.setitem(__import__("sys").modules, "sim2real_eval.replay.read_ahead", None)
    with pytest.raises(UserError, match=r"sensors.launch.py \(import of sim2real_eval.replay.read_ahead"):
        plan(bag, tmp_path)


def test_existing_output_is_refused(bag, tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(UserError, match="already exists"):
        plan(bag, tmp_path, output=str(tmp_path / "taken"))


def test_sensors_and_judge_plans():
    nodes = launch_plan.sensors_plan({"sensors": "imu", "truth_topic": "/vehicle/odom",
                                      "twist_frame": "world", "use_sim_time": "false",
                                      "imu_model": "airsim_imu", "imu_rate": "200", "seed_keys": "a,b,0"})
    assert [n.name for n in nodes] == ["imu_noise_node"]
    parameters = nodes[0].parameters[0]
    assert parameters == {"use_sim_time": False, "seed": 0, "imu_rate": 200.0, "truth_topic": "/vehicle/odom",
                          "twist_frame": "world", "imu_model": "airsim_imu", "seed_keys": ["a", "b", "0"]}
    assert node_params.parse_noise_node_params("imu", parameters).rate_hz == 200.0  # the node accepts it
    assert nodes[0].must_succeed
    both = launch_plan.sensors_plan({"gps_rate": "5"})
    assert [n.name for n in both] == ["gps_noise_node", "imu_noise_node"]
    assert both[0].parameters[0]["gps_rate"] == 5.0 and both[0].parameters[0]["gps_model"] == "robot_rtk_f9p"
    assert both[1].parameters[0]["imu_model"] == "robot_ahrs_mti"  # realistic robot defaults
    with pytest.raises(UserError, match="sensors"):
        launch_plan.sensors_plan({"sensors": "lidar"})
    notes = []
    judge = launch_plan.judge_plan({"use_sim_time": "false"}, notice=notes.append)
    publishers = 2 * ["static_transform_publisher"]  # the ART vehicle's base_link->imu, base_link->gps
    assert [n.executable for n in judge] == ["ekf_node", "navsat_transform_node"] + publishers
    assert judge[0].parameters[1] == {"use_sim_time": False}
    assert len(notes) == 1 and "applied the ART static TFs" in notes[0] and "static_tfs:=" in notes[0]
    own = launch_plan.judge_plan({"static_tfs": "base_link imu_link 0.1 0 0 0 0 0"}, notice=notes.append)
    assert [n.name for n in own[2:]] == ["static_tf_base_link_to_imu_link"] and len(notes) == 1
    assert len(launch_plan.judge_plan({"static_tfs": "none"}, notice=notes.append)) == 2 and len(notes) == 1
    with pytest.raises(UserError, match="launch argument static_tfs: static TF 'base_link imu 0 0'"):
        launch_plan.judge_plan({"static_tfs": "base_link imu 0 0"})


def test_unknown_command_line_arguments_are_refused_when_the_file_is_launched_directly():
    declared = list(launch_plan.SENSORS_ARGUMENTS)
    argv = ["/opt/ros/humble/bin/ros2", "launch", "sim2real_eval", "sensors.launch.py", "gps_modle:=x"]
    share = "/ws/install/sim2real_eval/share/sim2real_eval/launch/sensors.launch.py"
    with pytest.raises(UserError, match=r"sensors.launch.py: unknown argument\(s\) gps_modle; expected"):
        launch_plan.check_arguments(share, ["gps_modle:=x", "seed:=3"], declared, argv)
    launch_plan.check_arguments(share, ["seed:=3", "launch-prefix:=gdb"], declared, argv)
    by_path = ["ros2", "launch", share, "gps_modle:=x"]
    with pytest.raises(UserError, match="gps_modle"):
        launch_plan.check_arguments(share, ["gps_modle:=x"], declared, by_path)
    # Included by another launch file: the command line is that file's, not ours.
    parent = ["ros2", "launch", "my_pkg", "sim.launch.py", "world:=lot17"]
    launch_plan.check_arguments(share, ["world:=lot17"], declared, parent)


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


@pytest.mark.parametrize("name, table", [
    ("evaluate.launch.py", "EVALUATE_ARGUMENTS"),
    ("sensors.launch.py", "SENSORS_ARGUMENTS"),
    ("judge.launch.py", "JUDGE_ARGUMENTS"),
])
def test_launch_descriptions_load_where_ros_is_installed(name, table):
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (no ROS 2 here)")
    from launch import LaunchContext
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    source = PythonLaunchDescriptionSource(str(REPO / "launch" / name))
    description = source.get_launch_description(LaunchContext())
    declared = {a.name for a in description.get_launch_arguments()}
    assert declared == set(getattr(launch_plan, table)), name


def test_sensors_show_args_say_what_each_default_models():
    """`ros2 launch sim2real_eval sensors.launch.py --show-args` prints these descriptions: each default
    model is named with what it models (numbers checked against the preset) and the paper's demo preset
    one argument away."""
    import math

    from sim2real_eval.models import load_gps_model

    args = launch_plan.SENSORS_ARGUMENTS
    gps_default, gps_text = args["gps_model"]
    imu_default, imu_text = args["imu_model"]
    assert gps_text.count(gps_default) == 1 and "gps_model:=ch_gauss" in gps_text
    assert imu_text.count(imu_default) == 1 and "imu_model:=chrono_paper_demo" in imu_text
    assert "ZED-F9P" in gps_text and "MTi" in imu_text
    cov = load_gps_model(gps_default, 0).covariance.variances
    assert f"{100 * math.sqrt(cov[0]):.2f} cm per horizontal axis" in gps_text
    assert f"{100 * math.sqrt(cov[2]):.2f} cm vertical" in gps_text
    for name, (_default, text) in args.items():
        assert text.strip(), name  # every argument says what it is
