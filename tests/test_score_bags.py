"""Scoring real rosbag2 bags (written with bags.write_bag): run directories, manifests, ROS 1 bags.

The CDR column decoding the scorer reads with is tested in tests/test_bags_columns.py.
"""
from __future__ import annotations

import csv
import json
import math
import shutil

import numpy as np
import pytest
import yaml

from sim2real_eval.bags import get_typestore, write_bag
from sim2real_eval.cli import main
from sim2real_eval.metrics import ScoreOptions, score_run

ODOM, TWIST = "nav_msgs/msg/Odometry", "geometry_msgs/msg/TwistStamped"
T0_NS = 1_700_000_000_000_000_000      # absolute epoch stamps, as on a robot
FAST = ["--bootstrap", "20", "--permutations", "20"]


def odometry(stamp_ns, vel, yaw=0.0, frame="odom", child="base_link"):
    t = get_typestore().types
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    return t[ODOM](
        t["std_msgs/msg/Header"](t["builtin_interfaces/msg/Time"](sec, nsec), frame), child,
        t["geometry_msgs/msg/PoseWithCovariance"](
            t["geometry_msgs/msg/Pose"](t["geometry_msgs/msg/Point"](1.0, 2.0, 0.0),
                                        t["geometry_msgs/msg/Quaternion"](0.0, 0.0, math.sin(yaw / 2),
                                                                          math.cos(yaw / 2))),
            np.zeros(36)),
        t["geometry_msgs/msg/TwistWithCovariance"](
            t["geometry_msgs/msg/Twist"](t["geometry_msgs/msg/Vector3"](*vel),
                                         t["geometry_msgs/msg/Vector3"](0.0, 0.0, 0.1)),
            np.zeros(36)))


def twist_stamped(stamp_ns, vel, frame="base_link"):
    t = get_typestore().types
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    return t[TWIST](t["std_msgs/msg/Header"](t["builtin_interfaces/msg/Time"](sec, nsec), frame),
                    t["geometry_msgs/msg/Twist"](t["geometry_msgs/msg/Vector3"](*vel),
                                                 t["geometry_msgs/msg/Vector3"](0.0, 0.0, 0.0)))


def make_run(rng, noise, duration=6.0):
    """(est stamps, est velocities, gt stamps, gt velocities): truth 50 Hz, estimate 30 Hz, heading 30°."""
    gt_ns = T0_NS + np.arange(0, int(duration * 50)) * 20_000_000
    t = (gt_ns - T0_NS) * 1e-9
    speed = 1.5 * (1 - np.exp(-t)) + 0.2 * np.sin(t)
    heading = math.radians(30)
    gt_vel = np.stack([speed * math.cos(heading), speed * math.sin(heading), 0 * t], axis=1)
    est_ns = T0_NS + 7_000_000 + np.arange(0, int(duration * 30)) * 33_333_333
    te = (est_ns - T0_NS) * 1e-9
    est_speed = np.interp(te, t, speed) + noise * rng.standard_normal(len(te))
    est_vel = np.stack([est_speed * math.cos(heading), est_speed * math.sin(heading), 0 * te], axis=1)
    return est_ns, est_vel, gt_ns, gt_vel


def write_run_bag(path, run, est_topic="/odometry/filtered", gt_topic="/ground_truth/odom", gt_type=ODOM,
                  run_yaml=None, storage="sqlite3"):
    est_ns, est_vel, gt_ns, gt_vel = run
    items = [(int(s), est_topic, ODOM, odometry(s, v)) for s, v in zip(est_ns, est_vel)]
    build = odometry if gt_type == ODOM else twist_stamped
    items += [(int(s), gt_topic, gt_type, build(s, v)) for s, v in zip(gt_ns, gt_vel)]
    items.sort(key=lambda item: item[0])
    extra = {"run.yaml": yaml.safe_dump(run_yaml)} if run_yaml else None
    write_bag(path, items, storage=storage, extra_files=extra)


def expected_score(run, options=None):
    est_ns, est_vel, gt_ns, gt_vel = run
    origin = min(est_ns[0], gt_ns[0])
    return score_run("x", (est_ns - origin) * 1e-9, np.hypot(est_vel[:, 0], est_vel[:, 1]),
                     (gt_ns - origin) * 1e-9, np.hypot(gt_vel[:, 0], gt_vel[:, 1]), options or ScoreOptions())


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "OUT"
    rng = np.random.default_rng(11)
    runs = {}
    for side, variant, noise in (("real", "real", 0.04), ("sim", "gauss", 0.1), ("sim", "walk", 0.05)):
        for scenario in ("line", "circle"):
            for k in (1, 2, 3):
                run = make_run(rng, noise)
                topics = {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom",
                          "gps": "/fix", "imu": "/imu"}
                info = {"side": side, "variant": variant, "scenario": scenario, "k": k, "seed": 0,
                        "topics": topics}
                storage = "mcap" if (variant, k) == ("walk", 3) else "sqlite3"
                write_run_bag(root / side / variant / scenario / str(k), run, run_yaml=info, storage=storage)
                runs[(side, variant, scenario, k)] = run
    # an atomic-write leftover must be ignored
    (root / "sim" / "gauss" / "line" / ".4.tmp-abc").mkdir()
    return root, runs


def test_runs_dir_scores_match_the_arrays(runs_dir, tmp_path):
    root, runs = runs_dir
    out = tmp_path / "rep"
    assert main(["score", str(root), "--out", str(out), *FAST]) == 0
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert len(rows) == len(runs) == 18
    for row in rows:
        expected = expected_score(runs[(row["side"], row["variant"], row["scenario"], int(row["k"]))])
        assert float(row["rmse"]) == pytest.approx(expected.rmse, abs=1e-12)
        assert float(row["D"]) == pytest.approx(expected.D, abs=1e-12)
    doc = json.loads((out / "vepd.json").read_text())
    assert sorted(doc["per_scenario"]) == ["gauss", "walk"]
    assert doc["options"]["input"] == "runs_dir"
    assert doc["combined"]["gauss"]["VEPD"] > doc["combined"]["walk"]["VEPD"]


def test_missing_topic_names_the_run_and_topic(runs_dir, tmp_path, capsys):
    root, runs = runs_dir
    run_dir = root / "sim" / "walk" / "circle" / "2"
    info = yaml.safe_load((run_dir / "run.yaml").read_text())
    info["topics"]["ground_truth"] = "/odom/truth"
    copy = tmp_path / "OUT"
    shutil.copytree(root, copy)
    (copy / "sim" / "walk" / "circle" / "2" / "run.yaml").write_text(yaml.safe_dump(info))
    code = main(["score", str(copy), "--out", str(tmp_path / "rep"), *FAST])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert str(copy / "sim" / "walk" / "circle" / "2") in err[0] and "/odom/truth is missing" in err[0]
    assert not (tmp_path / "rep").exists()
    assert main(["score", str(copy), "--out", str(tmp_path / "rep"), "--skip-bad-runs", *FAST]) == 0
    skipped = json.loads((tmp_path / "rep" / "vepd.json").read_text())["options"]["skipped_runs"]
    assert len(skipped) == 1 and "/odom/truth" in skipped[0]["reason"]


def test_manifest_with_twist_truth_custom_topics_and_speed_override(tmp_path):
    rng = np.random.default_rng(5)
    entries = []
    runs = {}
    for side, variant, noise in (("real", None, 0.03), ("sim", "chrono", 0.08)):
        for k in (1, 2):
            run = make_run(rng, noise)
            name = f"{side}_{k}"
            write_run_bag(tmp_path / "bags" / name, run, est_topic="/ekf/odom", gt_topic="/truth/twist",
                          gt_type=TWIST)
            entry = {"path": f"bags/{name}", "side": side, "scenario": "line"}
            if variant:
                entry["variant"] = variant
            entries.append(entry)
            runs[(side, k)] = run
    # speed override on one entry: |y| for both series (a single-axis definition)
    entries[0]["speed"] = {"estimate": "abs_y", "truth": "abs_y"}
    manifest = tmp_path / "runs.yaml"
    manifest.write_text(yaml.safe_dump({
        "defaults": {"topics": {"estimate": "/ekf/odom", "ground_truth": "/truth/twist"}},
        "runs": entries}))
    out = tmp_path / "rep"
    assert main(["score", "--manifest", str(manifest), "--out", str(out), *FAST]) == 0
    rows = {(r["side"], int(r["k"])): r for r in csv.DictReader(open(out / "runs.csv"))}
    assert float(rows[("sim", 2)]["rmse"]) == pytest.approx(expected_score(runs[("sim", 2)]).rmse, abs=1e-12)
    # abs_y = speed * sin(30 deg): the RMSE scales by exactly 0.5
    assert float(rows[("real", 1)]["rmse"]) == pytest.approx(0.5 * expected_score(runs[("real", 1)]).rmse,
                                                             rel=1e-9)


def test_manifest_errors_name_the_key(tmp_path, capsys):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump({"runs": [{"path": "x", "side": "robot", "scenario": "line"}]}))
    assert main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert "runs[0].side" in err and str(manifest) in err


def test_ros1_bag_is_read_and_a_wrong_truth_type_is_named(peer_bag, tmp_path):
    from sim2real_eval.errors import UserError
    from sim2real_eval.metrics.inputs import RunSpec, read_bag_speeds

    spec = RunSpec("real", "real", "line", 1, str(peer_bag), "bag",
                   estimate_topic="/husky_velocity_controller/odom", truth_topic="/imu/data")
    expected = r"test1\.bag: ground truth topic /imu/data has type sensor_msgs/msg/Imu"
    with pytest.raises(UserError, match=expected):
        read_bag_speeds(spec)
