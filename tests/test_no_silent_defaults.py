"""No silent defaults (issue 18 item 3): the IMU covariance lint, divergence as an error naming its
cause, and the ART static TFs applied only to bags in the ART layout (and said on stderr)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_pipeline_replay import ART_RPY, DATUM, T0, art_like_truth, make_art_bag

from sim2real_eval.cli import main
from sim2real_eval.errors import DataWarning, UserError
from sim2real_eval.judge import load_ekf_params, parse_static_tf
from sim2real_eval.judge.lint import InvalidCovariance, Unresolved, invalid_imu_covariances
from sim2real_eval.resources import config_path

EKF = str(config_path("ekf_art_iros2024.yaml"))
UNEVEN = np.diag([0.09, 0.09, 1e-4]).ravel()  # every Chrono preset's accelerometer: σ 0.3, 0.3, 0.01
TILTED = "base_link imu 0 0 0 3.1416 -1.5608 0"  # the ART mount with 0.01 rad of pitch (issue 18)
EXACT = "base_link imu 0 0 0 3.1416 -1.5708 0"


def accel_lint(tf: str, covariance=UNEVEN, ekf=None):
    ekf = ekf or load_ekf_params(EKF)
    return invalid_imu_covariances(
        ekf, [parse_static_tf(tf)], "imu", {"linear_acceleration_covariance": covariance}
    )


def by_hand(tf: str, covariance=UNEVEN) -> np.ndarray:
    """R·C·Rᵀ into base_link, then forceTwoD on az (variance 1e-6, cross terms kept): (ax, ay, az) block."""
    from sim2real_eval import rotations

    _p, _c, _x, _y, _z, yaw, pitch, roll = tf.split()
    rotation = rotations.to_matrix(rotations.from_rpy(float(roll), float(pitch), float(yaw)))
    fused = rotation @ covariance.reshape(3, 3) @ rotation.T
    fused[2, 2] = 1e-6
    return fused


def test_lint_finds_the_covariance_rotation_and_two_d_mode_make_invalid():
    found = accel_lint(TILTED)
    assert len(found) == 1 and isinstance(found[0], InvalidCovariance)
    item = found[0]
    assert (item.sensor, item.topic, item.part, item.pair) == (
        "imu0",
        "/imu",
        "linear_acceleration_covariance",
        (12, 14),
    )  # ax, az
    hand = by_hand(TILTED)
    assert item.values == pytest.approx((hand[0, 0], hand[2, 2], hand[0, 2]), rel=1e-6)
    assert item.min_eigenvalue == pytest.approx(np.linalg.eigvalsh(hand)[0], rel=1e-6)
    assert item.min_eigenvalue == pytest.approx(-8.45e-4, rel=1e-3) and hand[0, 2] == pytest.approx(
        -8.99e-4, rel=1e-3
    )
    text = item.describe("imu", "base_link", True)
    assert "ax–az covariance -0.000899" in text and "two_d_mode set the az variance to 1e-6" in text


@pytest.mark.parametrize(
    "tf, covariance, invalid",
    [
        (EXACT, UNEVEN, False),  # the exact ART mount: cross terms ~1e-7
        (TILTED, np.diag([0.09, 0.09, 0.09]).ravel(), False),  # isotropic: no rotation makes cross terms
        (TILTED, np.diag([1e-4, 1e-4, 0.09]).ravel(), True),
        ("base_link imu 0 0 0 0 0 0", UNEVEN, False),  # no rotation
    ],
)
def test_lint_cases(tf, covariance, invalid):
    assert bool(accel_lint(tf, covariance)) is invalid
    assert bool(np.linalg.eigvalsh(by_hand(tf, covariance))[0] < 0) is invalid


def test_lint_is_quiet_in_3d_and_names_a_frame_without_transform():
    import dataclasses

    three_d = dataclasses.replace(load_ekf_params(EKF), two_d_mode=False)
    assert accel_lint(TILTED, ekf=three_d) == []  # a rotated covariance stays a covariance
    found = invalid_imu_covariances(
        load_ekf_params(EKF), [], "imu", {"linear_acceleration_covariance": UNEVEN}
    )
    assert found == [Unresolved("imu0", "/imu", "imu")]


def test_judge_check_flags_the_imu_before_any_run(capsys):
    args = ["judge", "--check", EKF, "--imu", "chrono_paper_demo", "--static-tf", TILTED]
    assert main(args) == 0  # a warning: Humble runs it
    out = capsys.readouterr().out
    assert "warning: imu model chrono_paper_demo: imu0 (/imu): linear_acceleration_covariance" in out
    assert "is no covariance once fused" in out and "1 warning(s)" in out
    assert main(["judge", "--check", EKF, "--imu", "chrono_paper_demo", "--static-tf", EXACT]) == 0
    assert "no covariance" not in capsys.readouterr().out


def test_the_issue_case_diverges_and_names_its_cause(tmp_path, capsys, repo_root):
    """issue 18: the ART reference line, the Chrono IMU, pitch −1.5608: robot_localization's filtered speed
    reaches 51 m/s on a 1 m/s drive.  Now: a warning before any run, then exit 2 naming the mechanism,
    and the diverged run is not written."""
    out = tmp_path / "x"
    code = main(
        [
            "replay",
            str(repo_root / "bags/reference/line/run_00"),
            "--replace",
            "imu=chrono_paper_demo",
            "--static-tf",
            TILTED,
            "--static-tf",
            "base_link gps 0 0 0 0 0 0",
            "--out",
            str(out),
            "--workers",
            "1",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[0].startswith(
        "sim2real-eval replay: warning: imu model chrono_paper_demo: imu0 (/imu): "
        "linear_acceleration_covariance"
    )
    assert err[-1].startswith("sim2real-eval replay: error: ") and "the judge diverged" in err[-1]
    assert "51.5 m/s" in err[-1] and "10 × the ground truth's peak 1.09 m/s" in err[-1]
    assert "cause: imu model chrono_paper_demo" in err[-1] and "ax–az covariance" in err[-1]
    assert not (out / "sim").exists() or not any((out / "sim").rglob("run.yaml"))


def test_divergence_check_units():
    from types import SimpleNamespace

    from sim2real_eval.judge.findings import check_divergence

    class Filtered:
        def __init__(self, speeds):
            speeds = np.asarray(speeds, dtype=float)
            self.stamp_ns = np.arange(len(speeds)) * 100_000_000
            self.linear_velocity = np.stack([speeds, 0 * speeds, 0 * speeds], axis=1)

        def __len__(self):
            return len(self.stamp_ns)

    def result(speeds, gps_positions=None):
        """A JudgeResult-like object; ``gps_positions``: /odometry/gps x (m) at 10 Hz (None: no navsat)."""
        gps = None
        if gps_positions is not None:
            gps = Filtered(np.zeros(len(gps_positions)))
            x = np.asarray(gps_positions, dtype=float)
            gps.position = np.stack([x, 0 * x, 0 * x], axis=1)
        return SimpleNamespace(filtered=Filtered(speeds), gps_odometry=gps)

    truth = SimpleNamespace(velocity=np.array([[0.6, 0.8, 0.0], [0.0, 0.5, 0.0]]))  # peak 1.0 m/s
    check_divergence(result([0.0, 1.0, 9.9]), truth, "run")  # below 10 × 1 m/s: fine
    with pytest.raises(
        UserError,
        match=r"run: the judge diverged: .* reaches 12 m/s \(above 10 m/s from 0.20 s on\).* while its GPS "
        r"input implies at most 1 m/s.*cause: X$",
    ):
        check_divergence(result([0.0, 1.0, 12.0], [0.0, 0.1, 0.2]), truth, "run", lambda: ["X"])
    with pytest.raises(UserError, match=r"is not finite from 0.10 s on.*no invalid IMU covariance found"):
        check_divergence(result([0.0, math.nan, 1.0]), truth, "run", lambda: [])
    still = SimpleNamespace(velocity=np.zeros((2, 3)))  # a standstill run: the limit is 10 × 1 m/s
    check_divergence(result([0.0, 5.0]), still, "run")
    # A filter that follows its GPS input (fixes 1.5 m apart at 10 Hz: 15 m/s) has not diverged: its GPS
    # model is unusable, said in a warning, and the run is kept.
    with pytest.warns(DataWarning, match=r"run: .* reaches 12 m/s .* following its GPS input, whose "
                                         r"consecutive /odometry/gps positions imply up to 15 m/s"):
        check_divergence(result([0.0, 1.0, 12.0], [0.0, 1.5, 0.0]), truth, "run", lambda: ["X"])


# ---------------------------------------------------------------------------- the ART layout
def rotated_imu_bag(path, mounting_rpy):
    """An ART-like bag (frames imu/gps, sbg INS) whose IMU is mounted by ``mounting_rpy`` instead."""
    import test_pipeline_replay as replay_tests

    original = replay_tests.ART_RPY
    replay_tests.ART_RPY = list(mounting_rpy)
    try:
        return make_art_bag(path, art_like_truth(6.0))
    finally:
        replay_tests.ART_RPY = original


def test_an_art_frames_bag_with_another_mount_is_refused(tmp_path, capsys):
    """Frames 'imu'/'gps' and an sbg_driver INS, but the IMU's z axis up: not the ART mount, so the ART
    TFs are not applied silently; the error names the gravity direction and the option."""
    bag = rotated_imu_bag(tmp_path / "flu" / "run_00", [0.0, 0.0, 0.0])
    out = tmp_path / "out"
    assert main(["replay", str(bag), "--replace", "imu=chrono_paper_demo", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "points along +z" in err and '--static-tf "base_link imu' in err
    assert not out.exists()
    # Given its mount, it replays (and no ART note is printed).
    assert (
        main(
            [
                "replay",
                str(bag),
                "--replace",
                "imu=chrono_paper_demo",
                "--out",
                str(out),
                "--static-tf",
                "base_link imu 0 0 0 0 0 0",
                "--static-tf",
                "base_link gps 0 0 0 0 0 0",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    assert "ART layout" not in capsys.readouterr().err


def test_the_art_note_is_said_once_and_only_for_art_bags(tmp_path, capsys):
    bag = make_art_bag(tmp_path / "line" / "run_00", art_like_truth(6.0))
    out = tmp_path / "out"
    assert (
        main(["replay", str(bag), "--replace", "imu=chrono_paper_demo", "--out", str(out), "--workers", "1"])
        == 0
    )
    notes = [line for line in capsys.readouterr().err.splitlines() if ": note: " in line]
    assert len(notes) == 1 and "applied the ART static TFs" in notes[0] and str(bag) in notes[0]
    assert ART_RPY == [0.0, -1.5708, 3.1416] and T0 > 0 and len(DATUM) == 3


def test_evaluate_launch_decides_the_static_tfs_as_the_offline_replay(tmp_path):
    """evaluate.launch.py: the ART TFs for an ART-layout bag (said once), the replay node and the judge's
    TF publishers get the same list, static_tfs:= overrides it, and an ART-frames bag with another
    mount is refused before anything starts, naming the launch argument."""
    from sim2real_eval.art import ART_STATIC_TFS
    from sim2real_eval.node import launch_plan
    from sim2real_eval.node.params import parse_replay_params
    from sim2real_eval.replay.read_ahead import load_replay

    def tfs_of(plan):
        return [(n.arguments[-3], n.arguments[-1]) for n in plan.nodes if n.name.startswith("static_tf_")]

    notes = []
    art = make_art_bag(tmp_path / "line" / "run_00", art_like_truth(6.0))
    plan = launch_plan.evaluate_plan({"bag": str(art), "output": str(tmp_path / "o1")}, notice=notes.append)
    assert len(notes) == 1 and "applied the ART static TFs" in notes[0] and str(art) in notes[0]
    assert notes[0].startswith("evaluate.launch.py: ") and notes[0].endswith("(static_tfs:= overrides)")
    assert tfs_of(plan) == [("base_link", "imu"), ("base_link", "gps")]
    replay_params = plan.nodes[0].parameters[0]
    config = parse_replay_params(replay_params)
    assert config.static_tfs == ART_STATIC_TFS
    again = load_replay(config.bag, config.mode, config.gps_model, config.imu_model, config.seed,
                        static_tfs=config.static_tfs, notice=notes.append)
    assert again.info().to_dict()["judge"] == plan.run_record["judge"] and len(notes) == 1

    # static_tfs:=none: no TF at all, so the sensors' frames reach no base_link: refused up front.
    with pytest.raises(UserError, match=r"no static TF from 'imu' \(/imu\), 'gps' \(/fix\) .* static_tfs:="):
        launch_plan.evaluate_plan({"bag": str(art), "output": str(tmp_path / "o2"), "static_tfs": "none"},
                                  notice=notes.append)
    assert parse_replay_params({"bag": str(art), "static_tfs": "none"}).static_tfs == ()

    flu = rotated_imu_bag(tmp_path / "flu" / "run_00", [0.0, 0.0, 0.0])
    with pytest.raises(UserError, match="points along \\+z"):
        launch_plan.evaluate_plan({"bag": str(flu), "output": str(tmp_path / "o3")}, notice=notes.append)
    mounts = "base_link imu 0 0 0 0 0 0; base_link gps 0 0 0 0 0 0"
    plan = launch_plan.evaluate_plan({"bag": str(flu), "output": str(tmp_path / "o3"), "static_tfs": mounts},
                                     notice=notes.append)
    assert tfs_of(plan) == [("base_link", "imu"), ("base_link", "gps")] and len(notes) == 1
    with pytest.raises(UserError, match="no static TF from 'imu' .* static_tfs:=\"base_link imu x y z"):
        launch_plan.evaluate_plan({"bag": str(flu), "output": str(tmp_path / "o4"),
                                   "static_tfs": "base_link gps 0 0 0 0 0 0"}, notice=notes.append)


def test_a_bag_without_the_art_ins_gets_no_art_tfs(tmp_path, capsys):
    """Frames 'imu'/'gps' but its truth from a nav_msgs/Odometry topic (no sbg_driver INS): not the ART
    layout, so no TF is assumed, and the error names the frames and the option before any run."""
    from sim2real_eval.bags import messages as M
    from sim2real_eval.bags import open_bag, write_bag

    source = make_art_bag(tmp_path / "ins" / "run_00", art_like_truth(6.0))
    with open_bag(source) as reader:
        kept = [
            (m.recv_ns, m.topic, m.msgtype, m.msg)
            for m in reader.messages()
            if not m.topic.startswith("/sbg")
        ]
    truth = art_like_truth(6.0)
    kept += list(M.truth_odometry_messages(truth))
    bag = write_bag(tmp_path / "odom" / "run_00", sorted(kept, key=lambda r: r[0]))
    out = tmp_path / "out"
    assert (
        main(["replay", str(bag), "--replace", "imu=chrono_paper_demo", "--out", str(out), "--workers", "1"])
        == 2
    )
    err = capsys.readouterr().err
    assert ": note: " not in err  # no ART TFs applied
    assert len(err.strip().splitlines()) == 1
    assert "no static TF from 'imu' (/imu), 'gps' (/fix) to 'base_link'" in err
    assert '--static-tf "base_link imu x y z yaw pitch roll"' in err
