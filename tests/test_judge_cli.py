"""`sim2real-eval judge` end to end on a small bag written with the project's bag writer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim2real_eval.bags import open_bag, write_bag
from sim2real_eval.bags.messages import imu_messages, navsatfix_messages
from sim2real_eval.cli import main
from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_samples, art_like_stream
from sim2real_eval.resources import config_path

ART_TFS = ["base_link gps 0 0 0 0 0 0", "base_link imu 0 0 0 3.1416 -1.5708 0"]
KW = dict(duration=6.0, seed=3)


@pytest.fixture(scope="module")
def art_bag(tmp_path_factory):
    imu, gps = art_like_samples(**KW)
    messages = sorted(list(imu_messages(imu)) + list(navsatfix_messages(gps)), key=lambda m: m[0])
    return write_bag(tmp_path_factory.mktemp("bags") / "art", messages)


def judge_args(bag, out, *extra):
    args = [
        "judge",
        str(bag),
        "--config",
        str(config_path("ekf_art_iros2024.yaml")),
        "--navsat",
        str(config_path("navsat_art_iros2024.yaml")),
        "--output",
        str(out),
        "--no-progress",
    ]
    for tf in ART_TFS:
        args += ["--static-tf", tf]
    return args + list(extra)


def test_cli_writes_bag_and_summary_matching_the_library(art_bag, tmp_path):
    out = tmp_path / "judged"
    assert main(judge_args(art_bag, out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    library = Judge(
        load_ekf_params(config_path("ekf_art_iros2024.yaml")),
        load_navsat_params(config_path("navsat_art_iros2024.yaml")),
        ART_STATIC_TFS,
    ).run(art_like_stream(**KW))
    np.testing.assert_allclose(summary["final_position"], library.final_position, rtol=0, atol=1e-9)
    assert summary["published"] == library.published > 0
    assert summary["inputs"] == {"/imu": 601, "/fix": 61}
    assert summary["gps_odometry_published"] == len(library.gps_odometry) > 0
    with open_bag(out) as bag:
        assert bag.topics["/odometry/filtered"].count == library.published
        assert bag.topics["/odometry/gps"].count == len(library.gps_odometry)
        last = list(bag.messages(["/odometry/filtered"]))[-1].msg
        assert last.pose.pose.position.x == pytest.approx(library.final_position[0])
        assert last.header.frame_id == "odom" and last.child_frame_id == "base_link"
    # deterministic: same input → same bytes of summary
    out2 = tmp_path / "again"
    assert main(judge_args(art_bag, out2)) == 0
    assert (out2 / "summary.json").read_text().replace("again", "judged") == (
        out / "summary.json"
    ).read_text()


def test_config_warnings_are_kept_in_the_summary(art_bag, tmp_path, capsys):
    # A typo'd key changes nothing in the estimate but must not vanish with the console output.
    config = tmp_path / "ekf_typo.yaml"
    config.write_text(config_path("ekf_art_iros2024.yaml").read_text().replace(
        "    frequency:", "    print_diagnostic: true\n    frequency:", 1))
    out = tmp_path / "judged"
    args = judge_args(art_bag, out)
    args[args.index("--config") + 1] = str(config)
    assert main(args) == 0
    assert "print_diagnostic: robot_localization 3.5.2 does not read this key" in capsys.readouterr().err
    warnings = json.loads((out / "summary.json").read_text())["config_warnings"]
    assert len(warnings) == 1 and "print_diagnostic" in warnings[0] and "print_diagnostics" in warnings[0]


def test_missing_topic_names_topic_and_bag(art_bag, tmp_path, capsys):
    out = tmp_path / "o"
    code = main(judge_args(art_bag, out, "--remap", "/imu:=/imu/data"))
    err = capsys.readouterr().err
    assert (
        code == 2 and "/imu/data" in err and str(art_bag) in err and "\n" == err[-1] and err.count("\n") == 1
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "extra, text",
    [
        (["--static-tf", "base_link imu 0 0"], "8 fields"),
        (["--remap", "/imu"], "expected /from:=/to"),
    ],
)
def test_bad_arguments_exit_2_without_output(art_bag, tmp_path, capsys, extra, text):
    out = tmp_path / "o"
    assert main(judge_args(art_bag, out, *extra)) == 2
    assert text in capsys.readouterr().err
    assert not out.exists()


def test_wrong_message_type_and_empty_bag(art_bag, tmp_path, capsys):
    out = tmp_path / "o"
    # /fix is NavSatFix, but remapping the IMU input onto it is a type mismatch
    assert main(judge_args(art_bag, out, "--remap", "/imu:=/fix")) == 2
    assert "sensor_msgs/msg/Imu" in capsys.readouterr().err
    empty = write_bag(tmp_path / "empty", [])
    assert main(judge_args(empty, out)) == 2
    assert "empty" in capsys.readouterr().err
    assert not out.exists()
    existing = tmp_path / "exists"
    existing.mkdir()
    (existing / "mine.txt").write_text("x")  # an empty folder is written; one holding anything is refused
    assert main(judge_args(art_bag, existing)) == 2
    assert "holds mine.txt" in capsys.readouterr().err and (existing / "mine.txt").read_text() == "x"
