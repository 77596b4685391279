"""Moving starts (issue 18 item 2): ekf_node's initial_state from the truth, and the scorer's warm-up.

Unit tests of the state's frames against hand-computed values, the warm-up in the scorer, the run.yaml
record, and end to end: a real bag that starts while the car drives, replayed with and without
``--initial-state truth``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from test_pipeline_replay import T0, make_art_bag

from sim2real_eval import rotations
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.metrics import ScoreOptions, score_run
from sim2real_eval.metrics.inputs import RunSpec, warmup_of_runs
from sim2real_eval.runs import RunId, RunInfo, existing_run
from sim2real_eval.runs.start import check_warmup, initial_state_from_truth
from sim2real_eval.truth import GRAVITY, GroundTruth


def steady_turn(heading: float, speed: float = 2.0, yaw_rate: float = 0.1, accel: float = 0.3,
                pitch: float = 0.0, duration: float = 2.0) -> GroundTruth:
    """A body moving forward (body x) at ``speed`` + accel·t, turning at ``yaw_rate``, nose pitched by
    ``pitch`` (rad, positive = nose down in ENU's right-handed y rotation)."""
    t = np.arange(0.0, duration, 0.01)
    yaw = heading + yaw_rate * t
    q = rotations.from_rpy(np.zeros_like(t), np.full_like(t, pitch), yaw)
    forward = speed + accel * t
    velocity = rotations.rotate(q, np.stack([forward, 0 * t, 0 * t], axis=1))
    position = np.cumsum(velocity, axis=0) * 0.01
    return GroundTruth.from_kinematics(t + 10.0, position, q, velocity)


def test_planar_initial_state_is_in_odom_and_base_link():
    """two_d_mode: heading-only frame; a car heading north at 2 m/s: yaw π/2, vx = 2, vy = 0 (body),
    vyaw = yaw rate, ax = forward acceleration (gravity removed), out-of-plane entries 0."""
    truth = steady_turn(math.pi / 2)
    stamp = 11_000_000_000  # t = 1 s into the truth
    x = initial_state_from_truth(truth, stamp, two_d_mode=True)
    at = truth.interpolate([11.0])
    assert x[0:2] == pytest.approx(at.position[0, :2], abs=1e-12) and x[2] == 0.0
    assert x[3] == x[4] == 0.0 and x[5] == pytest.approx(math.pi / 2 + 0.1, abs=1e-9)
    assert x[6] == pytest.approx(2.3, abs=1e-3) and x[7] == pytest.approx(0.0, abs=1e-3)  # body frame
    assert x[8] == x[9] == x[10] == 0.0 and x[11] == pytest.approx(0.1, abs=1e-3)
    # forward acceleration 0.3 and centripetal v·ω = 0.23 to the left (body +y), gravity removed
    assert x[12] == pytest.approx(0.3, abs=0.02) and x[13] == pytest.approx(2.3 * 0.1, abs=0.02)
    assert x[14] == 0.0


def test_3d_initial_state_keeps_attitude_and_body_frames():
    """two_d_mode off: roll/pitch/yaw as the truth's, the velocity R(q)ᵀ·v (all forward), the body
    rates as given, the acceleration with gravity removed in the body frame."""
    truth = steady_turn(0.4, yaw_rate=0.0, accel=0.0, pitch=-0.2)  # climbing
    x = initial_state_from_truth(truth, 10_500_000_000, two_d_mode=False)
    assert x[3:6] == pytest.approx([0.0, -0.2, 0.4], abs=1e-9)
    assert x[6:9] == pytest.approx([2.0, 0.0, 0.0], abs=1e-6)
    assert x[9:12] == pytest.approx([0.0, 0.0, 0.0], abs=1e-6)
    assert x[12:15] == pytest.approx([0.0, 0.0, 0.0], abs=1e-3)  # constant velocity: no acceleration
    at = truth.interpolate([10.5])
    assert x[0:3] == pytest.approx(at.position[0], abs=1e-12)
    assert GRAVITY > 9  # (the specific force's +g was removed above)


def test_warmup_skips_the_start_of_every_run():
    """The scorer's warm-up drops the common-timeline samples before it; the rest keep their times.
    Here the estimate is 1 m/s off for the first second and exact after: E with a 1 s warm-up is 0."""
    t = np.arange(0.0, 5.0, 0.02)
    truth_speed = 1.0 + 0.1 * np.sin(t)
    estimate = truth_speed + np.where(t < 1.0, 1.0, 0.0)
    plain = ScoreOptions(smoothing_window=1, bootstrap=0, permutations=0).validate()
    warm = ScoreOptions(smoothing_window=1, bootstrap=0, permutations=0, warmup_s=1.0).validate()
    timeline = np.arange(0, t[-1], 1 / 15.0)
    error = np.interp(timeline, t, estimate) - np.interp(timeline, t, truth_speed)
    expected = np.sqrt(np.mean(error ** 2))
    assert score_run("r", t, estimate, t, truth_speed, plain).rmse == pytest.approx(expected)
    assert np.sqrt(np.mean(error ** 2)) > 0.4
    assert score_run("r", t, estimate, t, truth_speed, warm).rmse == pytest.approx(0.0, abs=1e-12)
    # S_gt is computed on the same samples as S_est: the truth's spectrum after the warm-up only
    kept = np.interp(timeline[timeline >= 1.0], t, truth_speed)
    from sim2real_eval.metrics import wiener_entropy

    assert score_run("r", t, estimate, t, truth_speed, warm).S_gt == pytest.approx(wiener_entropy(kept))
    with pytest.raises(UserError, match=r"r: the warm-up of 4.5 s leaves 0.480 s to score"):
        score_run("r", t, estimate, t, truth_speed, ScoreOptions(warmup_s=4.5).validate())
    with pytest.raises(UserError, match="--warmup"):
        ScoreOptions(warmup_s=-1.0).validate()
    assert check_warmup("2.5", "--warmup") == 2.5
    for bad in (-1, float("nan"), "x", True):
        with pytest.raises(UserError, match="--warmup"):
            check_warmup(bad, "--warmup")


def test_warmup_of_runs_comes_from_run_yaml_unless_given():
    def spec(source, warmup):
        return RunSpec("sim", "v", "line", 0, source, "bag", warmup_s=warmup)

    assert warmup_of_runs([spec("a", None), spec("b", None)]) == 0.0
    assert warmup_of_runs([spec("a", 1.5), spec("b", 1.5)]) == 1.5
    assert warmup_of_runs([spec("a", 1.5), spec("b", None)], given=0.5) == 0.5
    with pytest.raises(UserError, match=r"different warm-ups \(b: 0 s, a: 1.5 s\).*--warmup"):
        warmup_of_runs([spec("a", 1.5), spec("b", None)])


def test_run_yaml_records_the_start_and_reads_old_files(tmp_path):
    run = RunId("real", "real", "line", 0)
    info = RunInfo(run, seed=1, timing=None, initial_state={"source": "truth"}, warmup_s=1.5,
                   ground_truth_rate=50.0).with_initial_state(123, range(15))
    data = info.to_dict()
    assert list(data) == ["side", "variant", "scenario", "k", "seed", "initial_state", "warmup_s",
                          "ground_truth_rate"]
    assert data["initial_state"] == {"source": "truth", "stamp_ns": 123,
                                     "state": [float(v) for v in range(15)]}
    assert RunInfo.from_dict(data, "x") == info
    old = {"side": "real", "variant": "real", "scenario": "line", "k": 0, "seed": 1}
    assert RunInfo.from_dict(old, "x").initial_state is None and RunInfo.from_dict(old, "x").warmup_s is None
    for bad, key in (({"initial_state": {"source": "zero"}}, "initial_state.source"),
                     ({"initial_state": {"source": "truth", "state": [1, 2]}}, "initial_state.state"),
                     ({"warmup_s": -1}, "warmup_s")):
        with pytest.raises(UserError, match=key):
            RunInfo.from_dict({**old, **bad}, "x")
    # Resume compares where the start came from, not its values (they are the run's truth there).
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.yaml").write_text(info.with_files(tmp_path / "run").to_yaml())  # as written
    requested = RunInfo(run, seed=1, initial_state={"source": "truth"}, warmup_s=1.5, ground_truth_rate=50.0)
    assert existing_run(tmp_path / "run", requested)
    with pytest.raises(UserError, match="'initial_state'"):
        existing_run(tmp_path / "run", RunInfo(run, seed=1, warmup_s=1.5, ground_truth_rate=50.0))


def test_study_file_start_keys(tmp_path, repo_root):
    from sim2real_eval.pipeline.study import load_study

    text = (repo_root / "config" / "studies" / "tiny.yaml").read_text()
    study = tmp_path / "s.yaml"
    keys = "  initial_state: truth\n  warmup_s: 0.5\n"
    navsat = "  navsat: navsat_art_iros2024.yaml\n"
    study.write_text(text.replace(navsat, navsat + keys))
    loaded = load_study(study)
    assert (loaded.judge.initial_state, loaded.judge.warmup_s) == ("truth", 0.5)
    record = loaded.runs()[0].info().to_dict()
    assert record["initial_state"] == {"source": "truth"} and record["warmup_s"] == 0.5
    study.write_text(text.replace("  navsat: navsat_art_iros2024.yaml\n",
                                  "  navsat: navsat_art_iros2024.yaml\n  initial_state: zero\n"))
    with pytest.raises(UserError, match=r"s\.yaml.*judge\.initial_state"):
        load_study(study)


# ------------------------------------------------------------------------- end to end
def moving_truth(heading_deg: float = 60.0, duration: float = 8.0) -> GroundTruth:
    """A drive already under way: about 1.2 m/s heading ``heading_deg`` from the first instant, a gentle
    left arc."""
    t = np.arange(0.0, duration, 0.005)
    speed = 1.2 + 0.1 * np.sin(0.8 * t)
    yaw = math.radians(heading_deg) + 0.05 * t
    velocity = np.stack([speed * np.cos(yaw), speed * np.sin(yaw), np.zeros_like(t)], axis=1)
    position = np.cumsum(velocity, axis=0) * 0.005
    return GroundTruth.from_kinematics(T0 + t, position, rotations.from_yaw(yaw), velocity).validate()


def first_speeds(run, seconds: float = 0.5):
    """(estimate, truth) horizontal speeds of /odometry/filtered over the run's first ``seconds``."""
    from sim2real_eval import message_fields as F
    from sim2real_eval.bags import open_bag
    from sim2real_eval.bags.columns import read_topics

    with open_bag(run) as reader:
        columns = read_topics(reader, {"/odometry/filtered": F.ODOMETRY, "/ground_truth/odom": F.ODOMETRY})
    est, gt = columns["/odometry/filtered"], columns["/ground_truth/odom"]
    start = int(yaml.safe_load((run / "run.yaml").read_text())["window_ns"][0])
    keep = est["stamp_ns"] < start + int(seconds * 1e9)
    speed = np.hypot(est["linear_velocity"][keep, 0], est["linear_velocity"][keep, 1])
    truth = np.interp(est["stamp_ns"][keep], gt["stamp_ns"], np.hypot(gt["linear_velocity"][:, 0],
                                                                       gt["linear_velocity"][:, 1]))
    return speed, truth


@pytest.fixture(scope="module")
def moving_runs(tmp_path_factory):
    """Two bags of a drive under way (headings 60° and −30°), replayed from the config's state and from the
    truth, both with a 0.5 s warm-up."""
    root = tmp_path_factory.mktemp("moving")
    (root / "drive").mkdir()
    bags = [make_art_bag(root / "drive" / f"run_0{k}", moving_truth(heading))
            for k, heading in enumerate((60, -30))]
    out = {}
    for start in ("config", "truth"):
        out[start] = root / f"out_{start}"
        assert main(["replay", str(root / "drive"), "--replace", "imu=chrono_paper_demo", "--out",
                     str(out[start]), "--initial-state", start, "--warmup", "0.5", "--no-progress",
                     "--workers", "1"]) == 0
    return bags, out


def test_a_moving_start_judged_from_the_truth(moving_runs):
    """The bag starts at 1.2 m/s: from the config's zero state the estimate starts at 0 and needs the
    first fixes to catch up; started from the truth it is right from the first output (measured on this
    bag: first 0.5 s speed RMS error 0.9 m/s → below 0.05 m/s), on the real run and the simulated one."""
    _bags, out = moving_runs
    for side, k in (("real/real", 0), ("sim/sim_imu-chrono_paper_demo", 0), ("real/real", 1)):
        cold, truth = first_speeds(out["config"] / side / "drive" / str(k))
        warm, truth_warm = first_speeds(out["truth"] / side / "drive" / str(k))
        cold_error = float(np.sqrt(np.mean((cold - truth) ** 2)))
        warm_error = float(np.sqrt(np.mean((warm - truth_warm) ** 2)))
        assert cold[0] < 0.1 and cold_error > 0.5, (side, cold_error)
        assert abs(warm[0] - truth_warm[0]) < 0.05 and warm_error < 0.1, (side, warm_error)
        record = yaml.safe_load((out["truth"] / side / "drive" / str(k) / "run.yaml").read_text())
        assert record["initial_state"]["source"] == "truth" and record["warmup_s"] == 0.5
        assert record["initial_state"]["stamp_ns"] == record["window_ns"][0]
        state = record["initial_state"]["state"]
        since = record["window_ns"][0] * 1e-9 - T0  # the truth at the window's start (the INS starts later)
        heading = math.radians((60, -30)[k]) + 0.05 * since
        assert state[5] == pytest.approx(heading, abs=1e-3)   # the ENU heading: odom is ENU-aligned
        speed = 1.2 + 0.1 * math.sin(0.8 * since)
        assert state[6] == pytest.approx(speed, abs=1e-3) and abs(state[7]) < 1e-3  # base_link: all forward
        assert "initial_state" not in yaml.safe_load(
            (out["config"] / side / "drive" / str(k) / "run.yaml").read_text())


def test_score_reads_the_warmup_of_the_runs(moving_runs, tmp_path):
    """``score`` skips the warm-up the runs record (0.5 s here) unless --warmup says otherwise, and
    reports it; the zero-state start-up is what it leaves out."""
    import json

    _bags, out = moving_runs
    scores = {}
    for name, extra in (("recorded", []), ("none", ["--warmup", "0"])):
        report = tmp_path / name
        assert main(["score", str(out["config"]), "--out", str(report), "--bootstrap", "0", "--permutations",
                     "0", *extra]) == 0
        doc = json.loads((report / "vepd.json").read_text())
        assert doc["options"]["warmup_s"] == (0.5 if name == "recorded" else 0.0)
        with (report / "runs.csv").open() as handle:
            import csv

            scores[name] = {(row["side"], row["k"]): float(row["rmse"]) for row in csv.DictReader(handle)}
    for key, e_all in scores["none"].items():
        assert scores["recorded"][key] < e_all, key


def test_replay_rejects_a_bad_start(tmp_path, capsys, moving_runs):
    bags, _out = moving_runs
    assert main(["replay", str(bags[0]), "--replace", "imu=chrono_paper_demo", "--out", str(tmp_path / "o"),
                 "--warmup", "-1"]) == 2
    assert "--warmup: expected seconds" in capsys.readouterr().err
