"""Parameter files read like Humble's ekf_node / navsat_transform_node (judge.md §2-§5, §10 item 14).

The facts (robot_localization 3.5.2, humble-devel): every parameter is declared with a static type, so a
value of another type aborts the node (InvalidParameterTypeException); keys it never declares are ignored;
control lists of the wrong size switch control off or set the gains to 1; a wrong-size initial_state is
ignored; the datum is read only with wait_for_datum.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.judge import load_ekf_params, load_navsat_params
from sim2real_eval.judge.params import (
    DEFAULT_PROCESS_NOISE_DIAGONAL,
    check_filter,
    check_navsat,
    check_params_file,
    ekf_params_from_dict,
)
from sim2real_eval.resources import config_path

UPSTREAM = Path(__file__).parent / "data" / "robot_localization_humble"
ODOM_CONFIG = "[" + ", ".join(["true"] * 2 + ["false"] * 13) + "]"
IMU_CONFIG = "[" + ", ".join(["false"] * 3 + ["true"] * 3 + ["false"] * 3 + ["true"] * 6) + "]"
HEAD = f"ekf:\n  ros__parameters:\n    odom0: /a\n    odom0_config: {ODOM_CONFIG}\n"


def write(tmp_path, text, name="ekf.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def ekf_file(tmp_path, body, name="ekf.yaml"):
    return write(tmp_path, HEAD + body, name)


def findings(params, kind="ekf"):
    if kind == "navsat":
        return check_navsat(params, "n")[1]
    return check_filter(params, "n", kind)[1]


def messages(params, level, kind="ekf"):
    return {f.key: f.message for f in findings(params, kind) if f.level == level}


def test_defaults_for_absent_keys(tmp_path):
    p = load_ekf_params(write(tmp_path, "ekf:\n  ros__parameters:\n    odom0: /odom\n"))
    assert p.frequency == 30.0 and p.sensor_timeout == pytest.approx(1 / 30)
    assert p.world_frame == "odom" and p.base_link_frame_output == "base_link"
    assert not p.print_diagnostics  # humble's default is false
    np.testing.assert_array_equal(np.diag(p.process_noise_covariance), DEFAULT_PROCESS_NOISE_DIAGONAL)
    np.testing.assert_array_equal(p.initial_estimate_covariance, np.eye(15) * 1e-9)
    s = p.sensors[0]
    assert s.config == (False,) * 15 and s.queue_size == 10 and s.pose_threshold == math.inf
    assert p.control_timeout == 0.0 and not p.use_control


def test_differential_wins_over_relative_and_numbering_stops_at_gap(tmp_path, capsys):
    p = load_ekf_params(
        write(
            tmp_path,
            f"""ekf:
  ros__parameters:
    odom0: /a
    odom0_config: {ODOM_CONFIG}
    odom0_differential: true
    odom0_relative: true
    odom2: /never_read
    imu0: /imu
    imu0_config: {IMU_CONFIG}
    imu0_pose_rejection_threshold: 0.8
""",
        )
    )
    assert [s.topic for s in p.sensors] == ["/a", "/imu"]
    assert p.sensors[0].differential and not p.sensors[0].relative
    assert p.sensors[1].pose_threshold == 0.8 and p.sensors[1].twist_threshold == math.inf
    err = capsys.readouterr().err
    assert "ekf.yaml:7: ekf.odom2: ignored: odom1 is missing and the numbering stops there" in err


@pytest.mark.parametrize(
    "body, message",
    [
        ("    pose0: /p\n    pose0_config: [true, false]", "pose0_config: expected 15 true/false, got 2"),
        ("    process_noise_covariance: [1.0, 2.0]", "process_noise_covariance: expected 225 numbers"),
        ("    frequency: fast", "frequency: string 'fast', but robot_localization declares it double"),
        ("    two_d_mode: 1", "two_d_mode: integer 1, but robot_localization declares it bool"),
        ("    filter_type: pf", "filter_type: unknown filter type"),
        ("    frequency: -30.0", "frequency: must be > 0"),
        ("    frequency: .nan", "frequency: nan is not a finite number"),
        ("    map_frame: odom", "map_frame, odom_frame and base_link_frame must all differ"),
        ("    odom0_pose_rejection_threshold: -1.0", "odom0_pose_rejection_threshold: must be >= 0"),
    ],
)
def test_malformed_parameters_name_file_line_and_key(tmp_path, body, message):
    path = write(tmp_path, f"{HEAD}{body}\n")
    with pytest.raises(UserError, match=message) as info:
        load_ekf_params(path)
    line = 4 + body.count("\n") + 1  # the body's last line
    assert str(info.value).startswith(f"{path}:{line}: ekf.")


def test_no_input_is_refused_by_the_judge(tmp_path):
    with pytest.raises(UserError, match="no odomN/poseN/twistN/imuN input"):
        load_ekf_params(write(tmp_path, "ekf:\n  ros__parameters:\n    frequency: 30.0\n"))


# --- static types: what Humble's declare_parameter accepts -----------------------------------------

@pytest.mark.parametrize(
    "key, value, declared, hint",
    [
        ("frequency", "30", "double", "write 30.0"),
        ("sensor_timeout", "1", "double", "write 1.0"),
        ("odom0_queue_size", "10.0", "integer", "write 10"),
        ("odom0_differential", "'true'", "bool", "write true or false without quotes"),
        ("two_d_mode", "1", "bool", ""),
        ("map_frame", "1", "string", ""),
        ("odom0_pose_rejection_threshold", "5", "double", "write 5.0"),
        ("process_noise_covariance", "[" + ", ".join(["1"] * 225) + "]", "double_array",
         "write every number with a decimal point"),
        ("initial_state", "[" + ", ".join(["0"] * 15) + "]", "double_array", ""),
        ("odom0_relative", "[true]", "bool", ""),
        ("use_sim_time", "'true'", "bool", ""),
        ("gravitational_acceleration", "'9.81'", "double", "remove the quotes"),
    ],
)
def test_a_value_of_another_type_aborts_like_humble(tmp_path, key, value, declared, hint):
    path = ekf_file(tmp_path, f"    {key}: {value}\n")
    with pytest.raises(UserError) as info:
        load_ekf_params(path)
    text = str(info.value)
    assert text.startswith(f"{path}:") and f": ekf.{key}: " in text
    assert f"robot_localization declares it {declared}: Humble's ekf_node aborts with " \
           "InvalidParameterTypeException" in text
    assert hint in text


def test_issue_examples_integer_frequency_and_exponent_doubles(tmp_path):
    with pytest.raises(UserError, match=r"ekf\.yaml:5: ekf\.frequency: integer 30, but robot_localization "
                                        r"declares it double: Humble's ekf_node aborts"):
        load_ekf_params(ekf_file(tmp_path, "    frequency: 30\n"))
    diagonal = ", ".join("1e-9" if i % 16 == 0 else "0.0" for i in range(225))
    p = load_ekf_params(ekf_file(tmp_path, f"    initial_estimate_covariance: [{diagonal}]\n", "e.yaml"))
    np.testing.assert_array_equal(p.initial_estimate_covariance, np.eye(15) * 1e-9)


def test_undeclared_keys_are_not_type_checked():
    # imu0 is absent, so Humble never declares imu0_*: an integer there is merely ignored.
    assert messages({"odom0": "/a", "imu0_pose_rejection_threshold": 5}, "error") == {}
    assert messages({"odom0": "/a", "use_control": False, "acceleration_limits": [1, 2]}, "warning") == {
        "acceleration_limits": "ignored: read only when use_control is true",
        "odom0": "no odom variable of odom0_config is true: Humble never subscribes to /a",
    }


def test_unknown_keys_warn_with_the_closest_known_key():
    found = messages({"odom0": "/a", "odom0_config": [True] * 15, "frequncy": 30.0, "odom0_confg": [True],
                      "imu0_remove_gravitational_acceleratoin": True, "twist0": "/t",
                      "twist0_config": [False] * 6 + [True] + [False] * 8, "twist0_differential": True,
                      "completely_unrelated": 1}, "warning")
    assert found["frequncy"] == "robot_localization 3.5.2 does not read this key (did you mean 'frequency'?)"
    assert "did you mean 'odom0_config'?" in found["odom0_confg"]
    assert "did you mean 'imu0_remove_gravitational_acceleration'?" in found[
        "imu0_remove_gravitational_acceleratoin"]
    assert found["twist0_differential"] == "robot_localization does not read differential for twist inputs"
    assert found["completely_unrelated"] == "robot_localization 3.5.2 does not read this key"


def test_keys_of_other_versions_and_extensions():
    notes = messages({"odom0": "/a", "stamped_control": False, "clear_params": True, "odom0_nodelay": True,
                      "filter_type": "ekf"}, "note")
    assert "not read by robot_localization 3.5.2" in notes["stamped_control"]
    assert "roslaunch" in notes["clear_params"] and "ROS 1 subscriber option" in notes["odom0_nodelay"]
    assert "embedded judge" in notes["filter_type"]
    assert "stamped_control" in messages({"odom0": "/a", "stamped_control": True}, "warning")


def test_negative_variances_and_bad_matrices_are_errors():
    q = [0.0] * 225
    q[16 * 5] = -0.01  # yaw
    errors = messages({"odom0": "/a", "process_noise_covariance": q}, "error")
    assert errors == {"process_noise_covariance": "negative variance on the diagonal: yaw (-0.01)"}
    p0 = [0.0] * 225
    p0[0] = math.nan
    assert "finite" in messages({"odom0": "/a", "initial_estimate_covariance": p0}, "error")[
        "initial_estimate_covariance"]


def test_control_rules_follow_humble():
    base = {"odom0": "/a", "use_control": True, "control_config": [True, False, False, False, False, True],
            "acceleration_limits": [1.3, 0.0, 0.0, 0.0, 0.0, 3.4]}
    p = ekf_params_from_dict({**base, "acceleration_gains": [0.8, 0.9], "odom0_config": [True] * 15})
    assert p.use_control
    assert p.deceleration_limits == p.acceleration_limits  # missing → copy of the acceleration limits
    assert p.acceleration_gains == (1.0,) * 6  # wrong size → fill_n(…, 1.0) + resize: all six are 1
    assert p.deceleration_gains == p.acceleration_gains
    assert p.warnings == [
        "<dict>: acceleration_gains: expected 6 numbers, got 2: Humble sets all 6 gains to 1"]
    short_limits = {**base, "acceleration_limits": [1.0] * 5, "acceleration_gains": [1.0] * 6}
    assert not ekf_params_from_dict(short_limits).use_control  # wrong size → no control term
    assert not ekf_params_from_dict({"odom0": "/a", "use_control": True, "control_config": [True, False]}
                                    ).use_control
    with pytest.raises(UserError, match="acceleration_gains is missing: Humble keeps an empty gain list"):
        ekf_params_from_dict(base)
    int_config = {**base, "control_config": [1, 0, 0, 0, 0, 1], "acceleration_gains": [1.0] * 6}
    errors = messages(int_config, "error")
    assert errors["control_config"].startswith("integer_array [1, 0, 0, 0, 0, 1], but robot_localization "
                                               "declares it bool_array")


def test_initial_state_of_the_wrong_size_is_ignored_like_humble():
    p = ekf_params_from_dict({"odom0": "/a", "odom0_config": [True] * 15, "initial_state": [1.0, 2.0]})
    np.testing.assert_array_equal(p.initial_state, np.zeros(15))
    assert p.warnings == [
        "<dict>: initial_state: expected 15 numbers, got 2: Humble ignores the initial state"]


def test_tf_prefix_only_strips_leading_slashes_in_3_5_2():
    p = ekf_params_from_dict(
        {"odom0": "/a", "tf_prefix": "robot1", "map_frame": "/map", "odom_frame": "/odom"})
    assert (p.map_frame, p.odom_frame, p.world_frame) == ("map", "odom", "odom")


# --- navsat ---------------------------------------------------------------------------------------

def test_navsat_datum_is_validated_like_gps_presets(tmp_path):
    nav = "nav:\n  ros__parameters:\n    wait_for_datum: true\n    datum: "
    bad = write(tmp_path, nav + "[143.0, -389.0, 0.0]\n", "nav.yaml")
    with pytest.raises(UserError, match=r"nav\.yaml:4: nav\.datum: \[lat, lon, yaw\]: latitude/longitude out "
                                        r"of range.*GeographicLib"):
        load_navsat_params(bad)
    def datum_error(datum):
        return messages({"wait_for_datum": True, "datum": datum}, "error", "navsat")["datum"]

    assert "out of range" in datum_error([43.0, -389.0, 0.0])
    assert "(0, 0, 0)" in datum_error([43.0, -89.0])
    assert "integer_array" in datum_error([43, -89, 0])
    good = write(tmp_path, nav + "[43.07, -89.4, 0.5]\n", "good.yaml")
    assert load_navsat_params(good).datum == (43.07, -89.4, 0.5)
    # Without wait_for_datum Humble never declares datum: an out-of-range one is only ignored.
    assert messages({"datum": [143.0, 0.0, 0.0]}, "warning", "navsat") == {
        "datum": "ignored: read only when wait_for_datum is true"}


def test_navsat_types_and_deprecated_keys():
    assert "declares it double" in messages({"frequency": 10}, "error", "navsat")["frequency"]
    p, found = check_navsat({"broadcast_utm_transform": True, "broadcast_cartesian_transform": False}, "n")
    assert p.broadcast_cartesian_transform
    assert {f.key: f.level for f in found} == {"broadcast_utm_transform": "note",
                                               "broadcast_cartesian_transform": "warning"}


# --- sections --------------------------------------------------------------------------------------

def test_multi_section_files(tmp_path):
    text = f"""ekf_a:
  ros__parameters:
    frequency: 20.0
    odom0: /a
    odom0_config: {ODOM_CONFIG}
navsat:
  ros__parameters:
    zero_altitude: true
ekf_b:
  ros__parameters:
    imu0: /imu
"""
    path = write(tmp_path, text)
    with pytest.raises(UserError, match="--node NAME from: ekf_a, navsat, ekf_b"):
        load_ekf_params(path)
    assert load_ekf_params(path, node="ekf_b").sensors[0].topic == "/imu"
    assert load_navsat_params(path).zero_altitude
    with pytest.raises(UserError, match="no section for node 'missing'"):
        load_ekf_params(path, node="missing")
    single = write(
        tmp_path,
        f"ekf_a:\n  ros__parameters:\n    odom0: /a\n    odom0_config: {ODOM_CONFIG}\n"
        "nav:\n  ros__parameters:\n    use_odometry_yaw: true\n",
        "two.yaml",
    )
    assert load_ekf_params(single).node == "ekf_a"


def test_wildcard_sections_apply_like_rclcpp(tmp_path):
    path = write(tmp_path, f"""/**:
  ros__parameters:
    use_sim_time: true
    two_d_mode: true
robots:
  ekf_filter_node:
    ros__parameters:
      odom0: /a
      odom0_config: {ODOM_CONFIG}
      two_d_mode: false
""")
    p = load_ekf_params(path)
    assert p.node == "robots/ekf_filter_node" and not p.two_d_mode  # the later, specific section wins
    assert load_ekf_params(path, node="ekf_filter_node").node == "robots/ekf_filter_node"
    with pytest.raises(UserError, match=r":3: /\*\*\.use_sim_time: integer 1, but"):
        load_ekf_params(write(tmp_path, path.read_text().replace("use_sim_time: true", "use_sim_time: 1"),
                              "w.yaml"))


def test_duplicate_keys_are_errors(tmp_path):
    with pytest.raises(UserError, match=r"ekf\.yaml:6: ekf: frequency: given twice \(first at line 5\)"):
        load_ekf_params(ekf_file(tmp_path, "    frequency: 30.0\n    frequency: 50.0\n"))


def test_shipped_art_presets_load_without_warnings(capsys):
    ekf = load_ekf_params(config_path("ekf_art_iros2024.yaml"))
    assert ekf.frequency == 35.0 and ekf.two_d_mode and ekf.use_control
    odom0, imu0 = ekf.sensors
    assert odom0.topic == "/odometry/gps" and odom0.differential and not odom0.relative
    assert imu0.pose_threshold == imu0.twist_threshold == imu0.acceleration_threshold == 0.8
    nav = load_navsat_params(config_path("navsat_art_iros2024.yaml"))
    assert nav.use_odometry_yaw and nav.zero_altitude and nav.publish_filtered_gps
    absolute = load_ekf_params(config_path("ekf_art_absolute_gps.yaml"))
    assert not absolute.use_control and not absolute.sensors[0].differential
    for name in ("ekf_bag1.yaml", "ukf_bag1.yaml"):
        load_ekf_params(config_path("judge", name))
    assert capsys.readouterr().err == ""
    assert ekf.warnings == nav.warnings == absolute.warnings == []


# --- upstream's own configs (tests/data/robot_localization_humble, humble-devel 3.5.2) ----------------

def test_upstream_bag2_test_config_loads_verbatim(capsys):
    p = load_ekf_params(UPSTREAM / "test_ekf_localization_node_bag2.yaml")
    assert p.node == "test_ekf_localization_node_bag2_ekf" and p.frequency == 50.0
    np.testing.assert_array_equal(p.initial_estimate_covariance, np.eye(15) * 1e-9)
    assert [s.name for s in p.sensors] == ["odom0", "imu0"] and p.sensors[1].remove_gravitational_acceleration
    assert capsys.readouterr().err == ""  # clear_params and filter_type are notes: no effect anywhere


def test_upstream_templates_load():
    ekf = load_ekf_params(UPSTREAM / "ekf.yaml")
    assert [s.name for s in ekf.sensors] == ["odom0", "odom1", "pose0", "twist0", "imu0"]
    assert ekf.use_control and ekf.acceleration_gains == (0.8, 0.0, 0.0, 0.0, 0.0, 0.9)
    assert ekf.initial_estimate_covariance[14, 14] == 1e-9
    nav = load_navsat_params(UPSTREAM / "navsat_transform.yaml")
    assert nav.frequency == 30.0 and nav.delay == 3.0 and nav.datum is None  # wait_for_datum is false


def test_check_lints_upstream_configs_as_humble_treats_them():
    expected = {  # file -> (errors, warnings, summary)
        "test_ekf_localization_node_bag2.yaml": (0, 0, "checked test_ekf_localization_node_bag2_ekf (ekf)"),
        "ekf.yaml": (0, 0, "checked ekf_filter_node (ekf)"),
        "navsat_transform.yaml": (0, 1, "checked navsat_transform_node (navsat)"),
    }
    for name, (errors, warnings, summary) in expected.items():
        result = check_params_file(UPSTREAM / name)
        assert (result.errors, result.warnings, result.summary) == (errors, warnings, summary), result.lines
    lines = [text for _, text in check_params_file(UPSTREAM / "navsat_transform.yaml").lines]
    assert any("broadcast_utm_transform_as_parent_frame: note: never read: 3.5.2 declares it as "
               "'broadcast_utm_transform_as_parent_frame_'" in line for line in lines)
    assert any(line.endswith("navsat_transform_node.datum: warning: ignored: read only when "
                             "wait_for_datum is true") for line in lines)


def test_check_cli_one_line_per_problem_and_exit_codes(tmp_path, capsys):
    good = UPSTREAM / "ekf.yaml"
    assert main(["judge", "--check", str(good), str(config_path("navsat_art_iros2024.yaml"))]) == 0
    out = capsys.readouterr().out
    assert f"{good}: checked ekf_filter_node (ekf): 0 error(s), 0 warning(s)" in out
    bad = write(tmp_path, f"""ekf_filter_node:
  ros__parameters:
    frequency: 30
    odom0: /odom
    odom0_config: {ODOM_CONFIG}
    odom0_confg: [true]
    process_noise_covariance: [-1.0, 0.0]
navsat_transform:
  ros__parameters:
    wait_for_datum: true
    datum: [143.0, -389.0, 0.0]
""")
    assert main(["judge", "--check", str(bad)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{bad}:3: ekf_filter_node.frequency: error: integer 30, but robot_localization declares it double: "
        "Humble's ekf_node aborts with InvalidParameterTypeException; write 30.0",
        f"{bad}:6: ekf_filter_node.odom0_confg: warning: robot_localization 3.5.2 does not read this key "
        "(did you mean 'odom0_config'?)",
        f"{bad}:7: ekf_filter_node.process_noise_covariance: error: expected 225 numbers (15 x 15, row by "
        "row), got 2: Humble reads past the end of the list (undefined behaviour)",
        f"{bad}:11: navsat_transform.datum: error: [lat, lon, yaw]: latitude/longitude out of range: "
        "[143.0, -389.0, 0.0] (the rule of the GPS presets' datum); Humble's navsat_transform_node stops "
        "with a GeographicLib error at its first tick",
        f"{bad}: checked ekf_filter_node (ekf), navsat_transform (navsat): 3 error(s), 1 warning(s)",
    ]


def test_check_cli_reports_unreadable_files_and_rcl_refusals(tmp_path, capsys):
    mixed = write(tmp_path, "ekf:\n  ros__parameters:\n    odom0: /a\n    datum: [1.0, 2, 3.0]\n",
                  "mixed.yaml")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"ekf:\n  ros__parameters:\n    # heading 90\xb0\n    frequency: 30.0\n")
    assert main(["judge", "--check", str(mixed), str(latin1), str(tmp_path / "absent.yaml")]) == 2
    out = capsys.readouterr().out
    assert f"{mixed}:4: ekf.datum: a list mixing double and integer ('2'): rcl refuses the file" in out
    assert f"{latin1}: line 3 column 17: byte 0xB0 is not UTF-8" in out
    assert f"{tmp_path / 'absent.yaml'}: file not found" in out


def test_judge_needs_bag_config_output_unless_check(capsys):
    assert main(["judge", "--config", "x.yaml"]) == 2
    assert "missing BAG, --output (needed unless --check)" in capsys.readouterr().err


def test_judge_runs_upstream_bag2_config_verbatim(peer_bag, tmp_path, capsys):
    """Upstream's bag2 test config, unmodified, drives the judge (its odometry topic remapped onto the
    bag1 data we have): exit 0 instead of the old "expected finite numbers, got ['1e-9', ...]"."""
    out = tmp_path / "judged"
    code = main(["judge", str(peer_bag), "--config", str(UPSTREAM / "test_ekf_localization_node_bag2.yaml"),
                 "--remap", "/jackal_velocity_controller/odom:=/husky_velocity_controller/odom",
                 "--static-tf", "base_link imu_link 0 -0.3 0.52 -1.570796327 0 1.570796327",
                 "--output", str(out), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert (out / "summary.json").is_file()


def test_check_warns_where_humble_runs_but_the_judge_refuses(tmp_path):
    path = write(tmp_path, "nav:\n  ros__parameters:\n    use_local_cartesian: true\n"
                           "ekf:\n  ros__parameters:\n    frequency: 30.0\n    smooth_lagged_data: true\n")
    result = check_params_file(path)
    assert result.errors == 0 and [text for _, text in result.lines] == [
        f"{path}:3: nav.use_local_cartesian: warning: not implemented by the embedded judge (Humble runs it; "
        "the judge refuses it)",
        f"{path}:5: ekf: warning: no odomN/poseN/twistN/imuN input is configured (Humble's filter never "
        "publishes; the judge refuses it)",
        f"{path}:7: ekf.smooth_lagged_data: warning: lagged-data smoothing is not implemented by the "
        "embedded judge (Humble runs it; the judge refuses it)",
    ]


def test_docs_list_every_declared_parameter(repo_root):
    from sim2real_eval.judge import params

    docs = (repo_root / "docs" / "judge.md").read_text()
    table = docs[docs.index("| node | double |"):docs.index("Only declared parameters are checked")]
    names = {**params.FILTER_PARAM_TYPES, **params.UKF_TYPES, **params.NAVSAT_TYPES, **params.NODE_TYPES,
             **params.DIAGNOSTIC_TYPES}
    missing = [name for name in names if name not in table]
    assert not missing
    for kind, suffixes in params.SENSOR_SUFFIX_TYPES.items():
        assert all(suffix.split("_")[-1] in table for suffix in suffixes if suffix), kind
