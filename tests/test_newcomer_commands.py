"""Issue 13's small things, end to end: ``judge`` applies the ART static TFs to ART-layout bags and
names missing transforms; ``score --variant/--exclude-variant`` splits a run tree into its studies;
the replay progress counts every bag."""
from __future__ import annotations

import json

import numpy as np
import pytest
from test_score_bags import FAST, make_run, write_run_bag

from sim2real_eval.cli import main

CONFIGS = ["--config", "config/ekf_art_iros2024.yaml", "--navsat", "config/navsat_art_iros2024.yaml"]


@pytest.fixture(scope="module")
def art_bags(tmp_path_factory):
    """Two 4-s ART-layout bags (the small reference setup of test_demo_quick), and one whose IMU is
    in another frame ('imu_link')."""
    from test_demo_quick import small_demo_config

    from sim2real_eval import reference
    from sim2real_eval.bags import open_bag, write_bag

    tmp = tmp_path_factory.mktemp("art")
    small_demo_config(tmp)
    setup = reference.load_setup(tmp / "small_reference.yaml")
    bags = tmp / "bags"
    paths = [reference.write_reference_run(setup, bags, "line", k) for k in (0, 1, 2)]
    other = tmp / "imu_link"
    with open_bag(paths[0]) as reader:
        messages = []
        for message in reader.messages():
            if message.topic == "/imu":
                message.msg.header.frame_id = "imu_link"
            messages.append((message.recv_ns, message.topic, message.msgtype, message.msg))
    write_bag(other, messages)
    return tmp, paths, other


def judge(bag, out, *extra):
    return main(["judge", str(bag), *CONFIGS, "--output", str(out), "--no-progress", *extra])


def test_judge_applies_the_art_static_tfs_to_an_art_bag(art_bags, monkeypatch, capsys, repo_root):
    tmp, paths, _other = art_bags
    monkeypatch.chdir(repo_root)
    assert judge(paths[0], tmp / "judged") == 0
    captured = capsys.readouterr()
    assert "applied the ART static TFs" in captured.err
    assert '"base_link imu 0 0 0 3.1416 -1.5708 0"' in captured.err
    summary = json.loads((tmp / "judged" / "summary.json").read_text())
    assert summary["static_tfs"] == ["base_link imu 0 0 0 3.1416 -1.5708 0", "base_link gps 0 0 0 0 0 0"]
    assert summary["static_tfs_default"].startswith("ART layout")
    assert summary["frames_without_transform"] == {} and "tf_unavailable" not in summary["dropped"]
    # The same TFs given explicitly: the same estimate (the default is exactly replay's TFs).
    assert judge(paths[0], tmp / "explicit", "--static-tf", "base_link imu 0 0 0 3.1416 -1.5708 0",
                 "--static-tf", "base_link gps 0 0 0 0 0 0") == 0
    explicit = json.loads((tmp / "explicit" / "summary.json").read_text())
    assert explicit["final_position"] == summary["final_position"]
    assert explicit["static_tfs_default"] == "given"


def test_judge_names_the_frame_without_a_transform_and_the_option(art_bags, monkeypatch, capsys, repo_root):
    tmp, paths, other = art_bags
    monkeypatch.chdir(repo_root)
    # Given TFs replace the default: without base_link->imu every IMU message is dropped.
    assert judge(paths[0], tmp / "no_imu_tf", "--static-tf", "base_link gps 0 0 0 0 0 0") == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "never initialised" in err
    assert "no transform from 'imu' (/imu) to 'base_link'" in err and '--static-tf "base_link imu' in err
    assert not (tmp / "no_imu_tf").exists()
    # Another layout gets no default TFs; the error names its frame.
    assert judge(other, tmp / "other") == 2
    err = capsys.readouterr().err
    assert "'imu_link' (/imu)" in err and "--static-tf" in err and "applied the ART" not in err


def test_art_layout_rule():
    from sim2real_eval.bags.layout import art_layout, art_mount_problem
    from sim2real_eval.service import frames_without_transform

    ins = ["sensor_msgs/msg/Imu", "sbg_driver/msg/SbgGpsVel"]
    assert art_layout({"imu": ["/imu"], "gps": ["/fix"]}, "base_link", ins)
    assert art_layout({"imu": ["/imu"], "base_link": ["/fix"]}, "base_link", ins)
    assert art_layout({"imu": ["/imu"], "gps": ["/fix"]}, "base_link", ["sbg_driver/msg/SbgEkfNav"])
    odometry_truth = ["nav_msgs/msg/Odometry"]  # no sbg_driver INS
    assert not art_layout({"imu": ["/imu"], "gps": ["/fix"]}, "base_link", odometry_truth)
    assert not art_layout({"imu": ["/imu"]}, "base_footprint", ins)              # another robot frame
    assert not art_layout({"imu_link": ["/imu"], "gps": ["/fix"]}, "base_link", ins)
    assert not art_layout({"base_link": ["/imu"], "": ["/fix"]}, "base_link", ins)  # nothing to mount
    # Rule 4: the ART IMU reads +g on its x axis; an IMU reading it on z is mounted otherwise.
    assert art_mount_problem([9.8, 0.1, 0.3]) == "" and art_mount_problem(None) == ""
    assert art_mount_problem([9.0, 0.0, 5.0]) == ""  # 29° off: a tilted drive, still x up
    assert "32°" in art_mount_problem([8.0, 0.0, 5.0])
    assert "points along +z" in art_mount_problem([0.1, 0.2, 9.8])
    assert "points along -x" in art_mount_problem([-9.8, 0.0, 0.0])
    from sim2real_eval.judge import parse_static_tf

    tfs = [parse_static_tf("base_link imu 0 0 0 3.1416 -1.5708 0")]
    frames = {"imu": ["/imu"], "gps": ["/fix"], "": ["/x"], "base_link": ["/y"]}
    assert frames_without_transform(frames, "base_link", tfs) == {"gps": ["/fix"]}


# ------------------------------------------------------------------------------ score filters
@pytest.fixture(scope="module")
def two_studies(tmp_path_factory):
    """A run tree like the demo's: real runs on line and circle, variant 'gauss' on both, the IMU-like
    variant 'sim_imu-x' on line only."""
    root = tmp_path_factory.mktemp("studies") / "runs"
    rng = np.random.default_rng(5)
    layout = [("real", "real", ("line", "circle"), 0.04), ("sim", "gauss", ("line", "circle"), 0.1),
              ("sim", "sim_imu-x", ("line",), 0.05)]
    for side, variant, scenarios, noise in layout:
        for scenario in scenarios:
            for k in (0, 1):
                info = {"side": side, "variant": variant, "scenario": scenario, "k": k, "seed": 0}
                write_run_bag(root / side / variant / scenario / str(k), make_run(rng, noise), run_yaml=info)
    return root


def score(capsys, root, out, *extra):
    code = main(["score", str(root), "--out", str(out), *FAST, "--workers", "1", *extra])
    return code, capsys.readouterr()


def test_score_refuses_mixed_studies_and_names_the_filters(two_studies, tmp_path, capsys):
    code, captured = score(capsys, two_studies, tmp_path / "all")
    err = captured.err.strip()
    assert code == 2 and "\n" not in err
    assert "gauss on circle, line; sim_imu-x on line" in err
    assert "--variant" in err and "--exclude-variant" in err


def test_score_variant_filters_split_the_tree(two_studies, tmp_path, capsys):
    code, captured = score(capsys, two_studies, tmp_path / "gps", "--exclude-variant", "sim_imu-*")
    assert code == 0 and "scored 8 runs" in captured.out
    gps = json.loads((tmp_path / "gps" / "vepd.json").read_text())
    assert list(gps["combined"]) == ["gauss"] and set(gps["per_scenario"]["gauss"]) == {"line", "circle"}
    # --variant: the real runs are those of the scenarios the chosen variants ran on (line).
    code, captured = score(capsys, two_studies, tmp_path / "imu", "--variant", "sim_imu-*")
    assert code == 0 and "scored 4 runs" in captured.out
    imu = json.loads((tmp_path / "imu" / "vepd.json").read_text())
    assert list(imu["combined"]) == ["sim_imu-x"] and list(imu["per_scenario"]["sim_imu-x"]) == ["line"]
    # The same study from the same runs whichever filter selects it.
    code, _ = score(capsys, two_studies, tmp_path / "gps2", "--variant", "g*")
    assert code == 0
    assert json.loads((tmp_path / "gps2" / "vepd.json").read_text())["combined"] == gps["combined"]


def test_score_variant_filter_errors(two_studies, tmp_path, capsys):
    code, captured = score(capsys, two_studies, tmp_path / "x", "--variant", "nothing*")
    assert code == 2
    assert "--variant 'nothing*' matches no sim variant (have: gauss, sim_imu-x)" in captured.err
    code, captured = score(capsys, two_studies, tmp_path / "y", "--variant", "gauss",
                           "--exclude-variant", "g*")
    assert code == 2 and "no sim variant left" in captured.err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


# ------------------------------------------------------------------------------ replay progress
def test_replay_progress_counts_every_bag(art_bags, tmp_path, capsys):
    """Three bags on two workers: the first is judged before the workers fork, and the bar still
    counts it (3/3, not 2/2)."""
    from sim2real_eval.judge.config import JudgeConfig
    from sim2real_eval.replay.real_bag import Replacement
    from sim2real_eval.resources import config_path
    from sim2real_eval.runs import find_real_bags
    from sim2real_eval.service import plan_replays, replay_bags

    _tmp, paths, _other = art_bags
    judge_config = JudgeConfig(str(config_path("ekf_art_iros2024.yaml")),
                               str(config_path("navsat_art_iros2024.yaml")))
    tasks = plan_replays(find_real_bags([str(paths[0].parent)]), [Replacement({"imu": "chrono_paper_demo"})],
                         judge_config)
    done = replay_bags(tasks, tmp_path / "runs", workers=2, progress=True, description="judging 3 real bags")
    done.raise_on_failure()
    out = capsys.readouterr().out
    assert "judging 3 real bags" in out and "3/3" in out and "2/2" not in out
    assert done.report.written == 3 and len(done.runs) == 6 and not any(run.skipped for run in done.runs)


# ------------------------------------------------------------------- issue 30 item 6: the next step
def test_calibrate_given_a_folder_of_runs_names_one_of_them(repo_root, tmp_path, capsys):
    """A scenario folder of runs was "not a rosbag2 directory (… `ros2 bag reindex` can rebuild it)"."""
    from fixtures.hostile import refused

    folder = repo_root / "bags" / "reference" / "line"
    assert main(["calibrate", str(folder), "--out", str(tmp_path / "p.yaml")]) == 2
    err = refused(capsys, "calibrate", "a folder of 3 bag(s) (run_00, run_01, run_02)", "give one of them",
                  str(folder / "run_00"))
    assert "reindex" not in err and not (tmp_path / "p.yaml").exists()
    assert main(["calibrate", str(folder.parent), "--out", str(tmp_path / "p.yaml")]) == 2
    refused(capsys, "calibrate", "a folder of scenario folders with 9 bag(s)", str(folder.parent / "circle"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["calibrate", str(empty), "--out", str(tmp_path / "p.yaml")]) == 2
    refused(capsys, "calibrate", "no metadata.yaml and no .db3/.mcap storage file")
    (empty / "x_0.db3").write_bytes(b"SQLite format 3\x00")
    assert main(["calibrate", str(empty), "--out", str(tmp_path / "p.yaml")]) == 2
    refused(capsys, "calibrate", "`ros2 bag reindex` can rebuild it")


def test_score_of_simulated_runs_alone_gives_the_next_step_and_it_works(repo_root, tmp_path, capsys,
                                                                       monkeypatch):
    """`score simulated` (a `simulate` output: no real side) ended without a next step.  The step it
    names — replay the shipped reference runs into the same tree — then scores; `score` takes
    --no-progress like every command that shows progress."""
    from fixtures.hostile import refused

    monkeypatch.chdir(repo_root)
    runs = tmp_path / "runs"
    assert main(["simulate", "config/studies/tiny.yaml", "--out", str(runs), "--workers", "1",
                 "--no-progress"]) == 0
    capsys.readouterr()
    report = tmp_path / "report"
    score = ["score", str(runs), "--out", str(report), "--no-progress", "--bootstrap", "0",
             "--permutations", "0", "--no-noise-floor"]
    assert main(score) == 2
    err = refused(capsys, "score", "only simulated runs (scenarios line)", "no real runs")
    step = err[err.index("`") + 1:err.index("`", err.index("`") + 1)].split()
    assert step[:2] == ["sim2real-eval", "replay"] and step[-1] == str(runs)
    assert main(step[1:] + ["--no-progress"]) == 0
    capsys.readouterr()
    assert main(score) == 0
    assert (report / "tables.md").is_file()
