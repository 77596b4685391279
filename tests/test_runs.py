"""sim2real_eval.runs: the run layout (encode/decode), the naming of real bags, the run.yaml record
(build, validate, round trip, earlier versions' files), resume, and the ROS launch's run."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import runs
from sim2real_eval.art import ART_STATIC_TFS
from sim2real_eval.errors import UserError
from sim2real_eval.resources import config_path
from sim2real_eval.runs import RealBag, RunId, RunInfo

EKF, NAVSAT = str(config_path("ekf_art_iros2024.yaml")), str(config_path("navsat_art_iros2024.yaml"))
ART_RPY = [0.0, -1.5708, 3.1416]


def make_bag(path: Path) -> Path:
    """A directory the layout rules take for a rosbag2 bag (metadata.yaml); its content is not read."""
    path.mkdir(parents=True)
    (path / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    return path


# ------------------------------------------------------------------------------------ layout
_names = st.text("abcxyz019_.+-", min_size=1, max_size=8).filter(lambda s: s[0].isalnum())
_run_ids = st.builds(lambda side, variant, scenario, k: RunId(side, "real" if side == "real" else variant,
                                                               scenario, k),
                     st.sampled_from(runs.SIDES), _names.filter(lambda v: v != "real"), _names,
                     st.integers(0, 10**6))


@settings(max_examples=40, deadline=None)
@given(ids=st.sets(_run_ids, min_size=1, max_size=8))
def test_layout_encodes_and_decodes_every_run(tmp_path_factory, ids):
    root = tmp_path_factory.mktemp("layout")
    for run in ids:
        run.directory(root).mkdir(parents=True)
        assert run.directory(root) == root / run.label
    found = runs.find_runs(root)
    assert {run for run, _path in found} == ids
    assert all(path == run.directory(root) for run, path in found)
    assert [run for run, _path in found] == sorted(ids, key=lambda r: (r.side, r.variant, r.scenario,
                                                                         str(r.k)))


def test_find_runs_skips_temporaries_and_excluded_scenarios_and_names_bad_folders(tmp_path):
    RunId("sim", "a", "line", 0).directory(tmp_path).mkdir(parents=True)
    RunId("sim", "a", "rest", 0).directory(tmp_path).mkdir(parents=True)
    (tmp_path / "sim" / "a" / "line" / ".1.tmp-xyz").mkdir()  # an atomic write in progress
    assert [r.label for r, _ in runs.find_runs(tmp_path, ["rest"])] == ["sim/a/line/0"]
    (tmp_path / "sim" / "a" / "line" / "first").mkdir()
    with pytest.raises(UserError, match=r"line/first: run folder name must be the run number k"):
        runs.find_runs(tmp_path)
    with pytest.raises(UserError, match="no real/ or sim/ folder"):
        runs.find_runs(tmp_path / "sim")
    with pytest.raises(UserError, match="not a directory"):
        runs.find_runs(tmp_path / "absent")


def test_seed_keys_are_the_pipelines_run_key():
    assert RunId("sim", "ch_rw", "circle", 3).seed_keys == ("ch_rw", "circle", 3)


# ------------------------------------------------------------------------- real bag names
def test_a_bag_is_named_by_its_folder_and_its_place_there(tmp_path):
    bags = [make_bag(tmp_path / "my_bags" / "line" / name) for name in ("run2", "run1", "run10")]
    (tmp_path / "my_bags" / "line" / "notes").mkdir()          # not a bag: no place in the order
    (tmp_path / "my_bags" / "line" / ".run0.tmp-1").mkdir()    # hidden: neither
    assert runs.name_real_bag(bags[1]) == RealBag(str(bags[1]), "line", 0)
    assert runs.name_real_bag(bags[2]) == RealBag(str(bags[2]), "line", 1)   # run10 sorts before run2
    assert runs.name_real_bag(bags[0]) == RealBag(str(bags[0]), "line", 2)
    assert runs.name_real_bag(bags[0], scenario="lot17", k=7) == RealBag(str(bags[0]), "lot17", 7)
    data = bags[0] / "run2_0.db3"
    data.write_bytes(b"")
    assert runs.name_real_bag(data) == runs.name_real_bag(bags[0])  # a bag's data file names its bag
    relative = os.path.relpath(bags[1])
    assert runs.name_real_bag(relative).path == str(bags[1])


def test_a_symlinked_bag_keeps_the_names_of_where_it_is_linked(tmp_path):
    target = make_bag(tmp_path / "store" / "2024-02-01_a")
    (tmp_path / "mine" / "sine").mkdir(parents=True)
    link = tmp_path / "mine" / "sine" / "run_00"
    link.symlink_to(target)
    assert runs.name_real_bag(link) == RealBag(str(link), "sine", 0)


def test_bad_bag_names_say_what_to_do(tmp_path):
    bag = make_bag(tmp_path / "my bags" / "run1")
    with pytest.raises(UserError, match=r"its folder 'my bags' cannot name the scenario .* --scenario NAME"):
        runs.name_real_bag(bag)
    assert runs.name_real_bag(bag, scenario="line").scenario == "line"
    with pytest.raises(UserError, match=r"--scenario '\.\./x': use ASCII letters"):
        runs.name_real_bag(bag, scenario="../x")
    with pytest.raises(UserError, match="no such bag"):
        runs.name_real_bag(tmp_path / "absent")


def test_find_real_bags_takes_a_bag_a_scenario_folder_or_a_folder_of_them(tmp_path):
    root = tmp_path / "my_bags"
    for scenario, names in (("line", ["b", "a", "c"]), ("sine", ["x"])):
        for name in names:
            make_bag(root / scenario / name)
    (root / "sine" / "old.bag").write_bytes(b"")   # a ROS 1 bag file
    (root / "rest").mkdir()                         # no bags: no scenario

    def named(paths, **kw):
        return [(b.scenario, b.k, Path(b.path).name) for b in runs.find_real_bags(paths, **kw)]

    assert named([root]) == [("line", 0, "a"), ("line", 1, "b"), ("line", 2, "c"), ("sine", 0, "old.bag"),
                             ("sine", 1, "x")]
    assert named([root / "line"]) == [("line", 0, "a"), ("line", 1, "b"), ("line", 2, "c")]
    assert named([root / "line" / "c", root / "sine" / "x"]) == [("line", 2, "c"), ("sine", 1, "x")]
    assert named([root], limit=1) == [("line", 0, "a"), ("sine", 0, "old.bag")]
    assert named([root / "line", root / "line" / "b"]) == named([root / "line"])  # a bag given twice
    assert named([root / "line" / "a"], scenario="lot17") == [("lot17", 0, "a")]
    with pytest.raises(UserError, match="same scenario 'lot17' and k = 0"):
        runs.find_real_bags([root], scenario="lot17")
    with pytest.raises(UserError, match="rest: no bags found"):
        runs.find_real_bags([root / "rest"])
    with pytest.raises(UserError, match="^--real .*absent: no such bag"):
        runs.find_real_bags([root / "absent"], what="--real")


def test_sim_variant_names():
    assert runs.replay_variant({"imu": "chrono_paper_demo"}) == "sim_imu-chrono_paper_demo"
    assert runs.replay_variant({"imu": "/x/my_imu.yaml", "gps": "ch_rw"}) == "sim_gps-ch_rw_imu-my_imu"
    assert runs.bag_run_id(RealBag("b", "line", 2), {}) == RunId("real", "real", "line", 2)
    named = runs.bag_run_id(RealBag("b", "line", 2), {"gps": "ch_rw"}, "ch_rw")
    assert named == RunId("sim", "ch_rw", "line", 2)


# ------------------------------------------------------------------------------ the record
def replay_info(tmp_path, replace) -> RunInfo:
    bag = make_bag(tmp_path / "bags" / "line" / "run_00")
    run = runs.bag_run_id(runs.name_real_bag(bag), replace)
    imu = runs.model_parameters("imu", replace["imu"], mounting_rpy=ART_RPY) if "imu" in replace else "real"
    return runs.bag_run_info(run, bag, 3, runs.judge_record(EKF, NAVSAT, ART_STATIC_TFS), replace=replace,
                             imu=imu, window_ns=(10, 20), ground_truth_rate=50.0, ground_truth_source="auto",
                             storage="sqlite3", input_topics={"gps": "/fix", "imu": "/imu"})


def test_record_round_trips_through_run_yaml(tmp_path):
    for replace in ({}, {"imu": "chrono_paper_demo"}):
        info = replay_info(tmp_path / str(len(replace)), replace)
        text = info.to_yaml()
        again = RunInfo.from_dict(yaml.safe_load(text), "run.yaml")
        assert again == info and again.to_yaml() == text
    assert list(info.to_dict()) == ["side", "variant", "scenario", "k", "seed", "source", "replaced",
                                    "models", "gps", "imu", "window_ns", "judge", "ground_truth_rate",
                                    "ground_truth_source", "storage", "input_topics", "topics", "version"]
    assert info.to_dict()["imu"]["mounting_rpy"] == ART_RPY and info.to_dict()["gps"] == "real"


def test_scenario_params_are_written_for_scenario_runs_even_when_none():
    info = RunInfo(RunId("sim", "a", "line", 0), seed=1, source="line", from_scenario=True)
    assert info.to_dict()["scenario_params"] is None
    assert RunInfo.from_dict(info.to_dict(), "x") == info
    assert "scenario_params" not in RunInfo(RunId("sim", "a", "line", 0)).to_dict()


def test_unknown_keys_and_the_judge_outcome_are_kept():
    data = {"side": "sim", "variant": "a", "scenario": "line", "k": 0, "from_the_future": [1],
            "judge_outcome": {"published": 3}}
    info = RunInfo.from_dict(data, "x")
    assert info.extra == {"from_the_future": [1]} and info.to_dict() == data


def test_run_yaml_of_the_previous_ros_recorder_is_still_read():
    """The shape node_core.run_record wrote before the runs module (variant = launch mode, scenario = bag
    folder name, gps/imu as {model: ...}, no /odometry/gps topic)."""
    data = {"side": "sim", "variant": "sim_both", "scenario": "run_00", "k": 0, "seed": 0, "seed_keys": [],
            "source": "/data/art/line/run_00",
            "gps": {"model": "ch_gauss"}, "imu": {"model": "chrono_paper_demo", "mounting_rpy": ART_RPY},
            "judge": {"ekf": EKF, "ekf_sha256": runs.file_sha256(EKF), "navsat": NAVSAT,
                      "navsat_sha256": runs.file_sha256(NAVSAT), "static_tfs": list(ART_STATIC_TFS)},
            "topics": {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom", "gps": "/fix",
                       "imu": "/imu"},
            "recorded_by": "recorder_node (ros2 launch sim2real_eval evaluate.launch.py)", "version": "0.1.0"}
    info = RunInfo.from_dict(data, "run.yaml")
    assert info.topic("estimate") == "/odometry/filtered" and info.topic("gps_odometry") == "/odometry/gps"
    assert info.to_dict() == data


@pytest.mark.parametrize("change, message", [
    ({"side": "both"}, "side: unknown value 'both'"),
    ({"k": -1}, "k: must be >= 0"),
    ({"k": "0"}, "k: expected an integer"),
    ({"variant": "real"}, "variant: 'real' on side 'sim'"),
    ({"scenario": None}, "scenario: missing key"),
    ({"window_ns": [20, 10]}, "window_ns: expected [start, end]"),
    ({"gps": "simulated"}, "gps: expected 'real' or the model's parameters"),
    ({"judge": {"ekf": "e.yaml", "ekf_sha256": "abc"}}, "judge.ekf_sha256: expected a SHA-256"),
    ({"topics": {"estimate": "odometry/filtered"}}, "topics.estimate: expected an absolute topic name"),
    ({"topics": ["/odometry/filtered"]}, "topics must be a mapping"),
    ({"storage": "rosbag"}, "storage: unknown value 'rosbag'"),
    ({"replaced": ["lidar"]}, "replaced: expected sensors among gps, imu"),
])
def test_bad_records_name_the_file_and_key(change, message):
    data = {"side": "sim", "variant": "a", "scenario": "line", "k": 0, **change}
    with pytest.raises(UserError, match=f"^runs/x/run.yaml: {_escape(message)}"):
        RunInfo.from_dict(data, "runs/x/run.yaml")
    with pytest.raises(UserError, match="not a run description"):
        RunInfo.from_dict(["side"], "runs/x/run.yaml")


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_read_run_info_names_a_directory_without_run_yaml(tmp_path):
    with pytest.raises(UserError, match="no run.yaml"):
        runs.read_run_info(tmp_path)


def test_a_hand_written_run_yaml_takes_its_identity_from_the_directory(tmp_path):
    run = RunId("sim", "mine", "line", 4)
    path = run.directory(tmp_path)
    path.mkdir(parents=True)
    (path / "run.yaml").write_text("topics: {estimate: /odom/est, ground_truth: /odom/truth}\n")
    info = runs.read_run_info(path, run)
    assert info.run == run and info.topic("estimate") == "/odom/est" and info.topic("imu") == "/imu"
    with pytest.raises(UserError, match="run.yaml: side: missing key"):
        runs.read_run_info(path)


def test_existing_run_takes_the_typed_record(tmp_path):
    info = replay_info(tmp_path, {"imu": "chrono_paper_demo"})
    path = info.run.directory(tmp_path / "out")
    assert runs.existing_run(path, info) is False
    path.mkdir(parents=True)
    (path / "run.yaml").write_text(info.with_files(path).with_outcome(_Result()).to_yaml())
    assert runs.existing_run(path, info) is True  # the judge's outcome is an output, not compared
    other = RunInfo.from_dict(dict(info.to_dict(), seed=4), "x")
    with pytest.raises(UserError, match="differs from the requested one at 'seed'"):
        runs.existing_run(path, other)


class _Result:
    inputs, dropped, published, warnings = {"/imu": 5}, {}, 2, []


def test_file_sha256_follows_an_edited_file(tmp_path):
    import hashlib

    path = tmp_path / "ekf.yaml"
    path.write_text("a: 1\n")
    first = runs.file_sha256(path)
    assert first == hashlib.sha256(b"a: 1\n").hexdigest()
    path.write_text("a: 22\n")
    assert runs.file_sha256(path) == hashlib.sha256(b"a: 22\n").hexdigest() != first
    with pytest.raises(UserError, match="absent.yaml: cannot read"):
        runs.file_sha256(tmp_path / "absent.yaml")


# ------------------------------------------------------------------------------ ROS launch
