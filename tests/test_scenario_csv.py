"""A scenario's drive as a field rover's CSV logs (importer.scenario_csv, `scenario --csv`), and its
round trip through `import csv` as docs/import.md documents it."""

import math

import numpy as np
import pytest
import yaml
from fixtures.benchmarks import load_benchmark

from sim2real_eval import rotations, scenarios
from sim2real_eval.cli import main
from sim2real_eval.geodesy import geodetic_to_enu
from sim2real_eval.importer.scenario_csv import RoverLogs, options, write_scenario_csv
from sim2real_eval.truth import GRAVITY


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rover") / "terrain_logs"
    assert main(["scenario", "terrain", "--csv", str(folder)]) == 0
    return folder


@pytest.fixture(scope="module")
def truth():
    return scenarios.generate("terrain", k=0, seed=0)


def table(path):
    with open(path) as stream:
        header = stream.readline().strip().split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1)


def test_files_headers_and_readme(logs):
    assert sorted(p.name for p in logs.iterdir()) == ["README.md", "gnss.csv", "imu.csv", "truth.csv"]
    assert table(logs / "gnss.csv")[0] == ["t", "lat", "lon", "alt"]  # no accuracy column
    assert table(logs / "imu.csv")[0] == ["t", "ax", "ay", "az", "wx", "wy", "wz"]
    assert table(logs / "truth.csv")[0] == ["t", "lat", "lon", "alt", "v_east", "v_north", "v_up",
                                            "qx", "qy", "qz", "qw"]
    readme = (logs / "README.md").read_text()
    assert "NOT real data" in readme and "--imu-axes frd" in readme


def test_gnss_rate_and_error(logs, truth):
    """20 Hz; fix − truth: std of the order of 0.6 / 0.7 m east / north (one 216-s drive of a τ = 10 s
    Gauss–Markov error: the sample std scatters by ~20 %)."""
    _, gnss = table(logs / "gnss.csv")
    np.testing.assert_allclose(np.diff(gnss[:, 0]), 0.05, atol=1e-6)
    error = geodetic_to_enu(gnss[:, 1], gnss[:, 2], gnss[:, 3], RoverLogs().datum) \
        - truth.interpolate(gnss[:, 0]).position
    std = error.std(axis=0)
    assert 0.35 < std[0] < 0.85 and 0.45 < std[1] < 1.0 and 0.8 < std[2] < 1.7


def test_imu_is_forward_right_down_and_mounted_at_yaw_minus_90(logs, truth):
    """200 Hz; at rest the accelerometer reads −g on its z (FRD: z down).  Mounted at yaw −90°, the
    IMU's FLU axes are x = base_link −y (right), y = base_link x; logged FRD (x, −y, −z), so the logged
    x is −(base_link y), the logged y is −(base_link x) and the logged z rate is −(the yaw rate)."""
    _, imu = table(logs / "imu.csv")
    np.testing.assert_allclose(np.diff(imu[:, 0]), 0.005, atol=1e-6)
    at_rest = imu[:, 0] < truth.t[0] + 2.5
    assert abs(imu[at_rest, 3].mean() + GRAVITY) < 0.3
    sample = truth.interpolate(imu[:, 0])
    body = sample.specific_force
    np.testing.assert_allclose(np.corrcoef(imu[:, 2], -body[:, 0])[0, 1], 1.0, atol=0.05)
    np.testing.assert_allclose(np.corrcoef(imu[:, 1], -body[:, 1])[0, 1], 1.0, atol=0.05)
    np.testing.assert_allclose(np.corrcoef(imu[:, 6], -sample.angular_velocity[:, 2])[0, 1], 1.0, atol=0.01)


def test_truth_is_a_jumpy_low_rate_pose_log(logs, truth):
    """~2.2 Hz, ~0.16 m between poses at the median speed, attitude within ~1° of the truth."""
    _, poses = table(logs / "truth.csv")
    t = poses[:, 0]
    assert abs((len(t) - 1) / (t[-1] - t[0]) - 2.2) < 0.01
    assert 0.4 < np.diff(t).min() and np.diff(t).max() < 0.51
    enu = geodetic_to_enu(poses[:, 1], poses[:, 2], poses[:, 3], RoverLogs().datum)
    steps = np.linalg.norm(np.diff(enu[:, :2], axis=0), axis=1)
    assert 0.13 < np.median(steps) < 0.2
    sample = truth.interpolate(t)
    assert 0.01 < np.std(enu - sample.position) < 0.03
    np.testing.assert_allclose(poses[:, 4:7], sample.velocity, atol=1e-6)
    relative = rotations.multiply(rotations.conjugate(sample.orientation), poses[:, 7:11])
    angle = 2 * np.degrees(np.arccos(np.clip(np.abs(relative[:, 3]), 0, 1)))
    assert np.median(angle) < 0.6 and angle.max() < 1.5


def test_same_seed_same_bytes_and_options(logs, tmp_path):
    again = tmp_path / "again"
    write_scenario_csv("terrain", again)
    for name in ("gnss.csv", "imu.csv", "truth.csv", "README.md"):
        assert (again / name).read_bytes() == (logs / name).read_bytes()
    other = tmp_path / "k1"
    write_scenario_csv("terrain", other, k=1)
    assert (other / "imu.csv").read_bytes() != (logs / "imu.csv").read_bytes()
    enu = tmp_path / "enu"
    assert main(["scenario", "terrain", "--csv", str(enu), "--csv-truth-frame", "enu",
                 "--csv-no-velocity"]) == 0
    header, poses = table(enu / "truth.csv")
    assert header == ["t", "east", "north", "up", "qx", "qy", "qz", "qw"]
    assert "--datum 43.0724 -89.4119 263" in (enu / "README.md").read_text()
    # the same pose stream, in the other frame
    _, lla = table(logs / "truth.csv")
    np.testing.assert_allclose(poses[:, 0], lla[:, 0])
    enu_of_lla = geodetic_to_enu(lla[:, 1], lla[:, 2], lla[:, 3], RoverLogs().datum)
    np.testing.assert_allclose(poses[:, 1:4], enu_of_lla, atol=2e-3)


def test_refusals_write_nothing(logs, tmp_path, capsys):
    before = (logs / "imu.csv").stat().st_mtime_ns
    assert main(["scenario", "terrain", "--csv", str(logs)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (logs / "imu.csv").stat().st_mtime_ns == before
    assert main(["scenario", "terrain"]) == 2
    assert "--out FILE.npz" in capsys.readouterr().err
    with pytest.raises(Exception, match="unknown option"):
        options(gnss_hz=5)
    with pytest.raises(Exception, match="truth frame"):
        write_scenario_csv("terrain", tmp_path / "x", logs=options(truth_frame="utm"))
    assert not (tmp_path / "x").exists()


def test_import_round_trip_finds_the_mounting(logs, tmp_path, capsys):
    """The documented import of a rover's logs: 7 windows of 30 s, the −90° mounting found."""
    out = tmp_path / "imported"
    assert main(["import", "csv", str(logs), "--out", str(out), "--imu-axes", "frd", "--estimate-mounting",
                 "--fix-covariance", "0.7", "--window", "30"]) == 0
    record = yaml.safe_load((out / "import.yaml").read_text())
    runs = sorted((out / "terrain_logs").glob("run_*"))
    assert len(runs) == 7
    text = yaml.safe_dump(record)
    assert "rpy_deg" in text
    mounting = next(run for run in _find(record, "mounting"))
    roll, pitch, yaw = mounting["rpy_deg"]
    assert abs(yaw + 90.0) < 1.0 and abs(roll) < 1.5 and abs(pitch) < 1.5
    assert math.isclose(mounting["angle_deg"], 90.0, abs_tol=1.5)


def _find(node, key):
    """Every value under ``key`` anywhere in a nested YAML record."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key:
                yield value
            yield from _find(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from _find(value, key)


def test_import_with_a_madgwick_orientation_on_imu(logs, tmp_path, capsys):
    """`import --imu-orientation madgwick`: /imu carries imu_filter_madgwick's attitude of base_link with
    σ² on the covariance diagonal; import.yaml records the filter and its roll/pitch error (<= 1°)."""
    from sim2real_eval import message_fields as F
    from sim2real_eval.bags import open_bag
    from sim2real_eval.bags.columns import read_topics
    from sim2real_eval.models.madgwick import ORIENTATION_STDDEV

    out = tmp_path / "with_orientation"
    assert main(["import", "csv", str(logs), "--out", str(out), "--imu-axes", "frd", "--estimate-mounting",
                 "--fix-covariance", "0.7", "--window", "30", "--imu-orientation", "madgwick"]) == 0
    record = next(_find(yaml.safe_load((out / "import.yaml").read_text()), "orientation"))
    assert record["gain"] == 0.1 and record["world_frame"] == "enu"
    assert all(0.0 < v <= 1.0 for v in record["roll_pitch_minus_truth_rms_deg"])
    with open_bag(out / "terrain_logs" / "run_03") as reader:
        columns = read_topics(reader, {"/imu": F.IMU, "/ground_truth/odom": F.ODOMETRY})
    imu, odom = columns["/imu"], columns["/ground_truth/odom"]
    cov = imu["orientation_covariance"]
    np.testing.assert_allclose(cov[:, [0, 4, 8]], ORIENTATION_STDDEV ** 2)
    assert (cov[:, [1, 2, 3, 5, 6, 7]] == 0).all()
    # roll/pitch of /imu against the truth odometry's (nearest pose, 2.2 Hz)
    nearest = np.searchsorted(odom["stamp_ns"], imu["stamp_ns"]).clip(0, len(odom["stamp_ns"]) - 1)
    error = np.degrees(rotations.to_rpy(imu["orientation"])[:, :2]
                       - rotations.to_rpy(odom["orientation"][nearest])[:, :2])
    assert (np.sqrt(np.mean(error ** 2, axis=0)) < 1.5).all()
    # without the option: not provided
    plain = tmp_path / "plain"
    assert main(["import", "csv", str(logs), "--out", str(plain), "--imu-axes", "frd", "--fix-covariance",
                 "0.7", "--window", "100"]) == 0
    with open_bag(plain / "terrain_logs" / "run_00") as reader:
        assert (read_topics(reader, {"/imu": F.IMU})["/imu"]["orientation_covariance"][:, 0] == -1).all()
    assert main(["import", "csv", str(logs), "--out", str(tmp_path / "x"), "--fix-covariance", "0.7",
                 "--madgwick-gain", "0.05"]) == 2
    assert "--madgwick-gain: only with --imu-orientation madgwick" in capsys.readouterr().err
    assert main(["import", "csv", str(logs), "--out", str(tmp_path / "x"), "--fix-covariance", "0.7",
                 "--imu-orientation", "madgwick", "--madgwick-gain", "5"]) == 2
    assert "gain" in capsys.readouterr().err and not (tmp_path / "x").exists()


def real_speed_rmse(run) -> float:
    """RMSE of the judged horizontal speed against the truth's (first second left out): the one
    benchmarks/madgwick_error.py measures the table of docs/models.md with."""
    return load_benchmark("madgwick_error").judged_speed_rmse(run)


@pytest.mark.slow
def test_the_car_template_leaks_gravity_on_terrain_unless_the_imu_has_an_orientation(logs, tmp_path):
    """Issue 29's symptom on the synthetic rover: the car template (two_d_mode, accelerations fused,
    gravity removed along the IMU's orientation) judges the 0.35 m/s rover with a speed error of
    ~1 m/s when /imu has no orientation (gravity removed along a level z: g·sin(pitch) leaks in); with
    the Madgwick orientation on /imu the same judge tracks it (robot_localization's
    imu0_remove_gravitational_acceleration uses the message's orientation)."""
    from sim2real_eval.resources import config_path

    rmse = {}
    for option in ("none", "madgwick"):
        imported = tmp_path / f"import_{option}"
        assert main(["import", "csv", str(logs), "--out", str(imported), "--imu-axes", "frd",
                     "--estimate-mounting", "--fix-covariance", "0.7", "--window", "30",
                     "--imu-orientation", option]) == 0
        runs = tmp_path / f"runs_{option}"
        assert main(["replay", str(imported / "terrain_logs" / "run_03"), "--replace", "gps=car_gauss",
                     "--out", str(runs), "--config", str(config_path("ekf_car.yaml")),
                     "--navsat", str(config_path("navsat_car.yaml")),
                     "--static-tf", "base_link imu 0 0 0 0 0 0", "--static-tf", "base_link gps 0 0 0 0 0 0",
                     "--initial-state", "truth", "--warmup", "1", "--no-progress"]) == 0
        rmse[option] = real_speed_rmse(runs / "real" / "real" / "terrain_logs" / "3")
    assert rmse["none"] > 0.6, rmse      # measured 1.22 m/s on this window
    assert rmse["madgwick"] < 0.3, rmse  # measured 0.13 m/s
