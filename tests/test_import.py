"""sim2real-eval import: comma2k19 (the shipped segment) and the generic CSV layout → real bags
DIR/<scenario>/run_<kk>/ (importer/, docs/import.md)."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from fixtures.drives import DATUM, car_drive, every

from sim2real_eval import geodesy, rotations
from sim2real_eval import message_fields as F
from sim2real_eval.bags import open_bag
from sim2real_eval.bags.columns import read_topics
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.importer import covariance as cov
from sim2real_eval.importer import import_comma2k19, import_csv, sensitivity_imports, shipped_comma2k19
from sim2real_eval.importer.drive import windows
from sim2real_eval.importer.frames import wahba
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.truth.bag import truth_from_bag


def read_run(path):
    with open_bag(path) as reader:
        columns = read_topics(reader, {"/fix": F.NAVSATFIX, "/imu": F.IMU, "/ground_truth/odom": F.ODOMETRY})
        truth, datum = truth_from_bag(reader)
        frames = {m.topic: m.msg.header.frame_id for m in reader.messages(["/fix", "/imu"])}
    return columns, truth, datum, frames


# ------------------------------------------------------------------------------------------ comma2k19
@pytest.fixture(scope="module")
def comma(tmp_path_factory):
    out = tmp_path_factory.mktemp("comma") / "comma"
    started = time.perf_counter()
    result = import_comma2k19(shipped_comma2k19(), out, window=10, estimate_mounting=True)
    return result, time.perf_counter() - started


def test_comma2k19_layout_and_content(comma):
    result, seconds = comma
    assert seconds < 30                       # a hang guard; docs/import.md gives the measured time
    assert [Path(r.path).name for r in result.runs] == [f"run_{k:02d}" for k in range(5)]
    summary = yaml.safe_load((Path(result.out) / "import.yaml").read_text())
    assert summary["scenario"] == "highway" and len(summary["runs"]) == 5
    columns, truth, datum, frames = read_run(result.runs[1].path)
    sidecar = yaml.safe_load((Path(result.runs[1].path) / "import.yaml").read_text())
    assert frames == {"/fix": "base_link", "/imu": "base_link"}
    # the datum of import.yaml is the truth's ENU origin: the first pose (WGS-84, ellipsoidal height)
    assert datum == pytest.approx(sidecar["datum"]) and datum[0] == pytest.approx(37.721, abs=1e-3)
    fix, imu = columns["/fix"], columns["/imu"]
    assert 90 <= len(fix["stamp_ns"]) <= 101 and 1000 <= len(imu["stamp_ns"]) <= 1050
    # UTC epoch stamps: the route started 2018-08-02 08:34:47 PDT = 15:34:47 UTC (1533224087 s); this is
    # segment 40 (+40 min) and run 1 starts 10 s into it; header = receive
    assert fix["stamp_ns"][0] / 1e9 == pytest.approx(1533224087 + 40 * 60 + 10, abs=30)
    assert np.array_equal(fix["stamp_ns"], fix["receive_ns"])
    # pseudorange policy: σ_R per axis, vertical 2×, APPROXIMATED
    sigma = np.sqrt(fix["position_covariance"][:, [0, 4, 8]])
    assert np.all((sigma[:, 0] > 6) & (sigma[:, 0] < 16)) and np.allclose(sigma[:, 2], 2 * sigma[:, 0])
    assert set(fix["position_covariance_type"]) == {1}
    # IMU in base_link FLU: +g up, orientation not provided, residual covariance
    assert np.mean(imu["linear_acceleration"][:, 2]) == pytest.approx(9.8, abs=0.2)
    assert np.all(imu["orientation_covariance"][:, 0] == -1.0)
    assert np.all(imu["linear_acceleration_covariance"][:, 0] > 0.05)
    # the vehicle frame: the car moves along x (no sideways or vertical speed in base_link)
    speed = np.linalg.norm(truth.velocity, axis=1)
    body = rotations.rotate_inverse(truth.orientation, truth.velocity)
    assert 7 < speed.min() and speed.max() < 21
    assert np.abs(body[:, 1]).max() < 0.05 * speed.max() and np.abs(body[:, 2]).mean() < 0.02 * speed.mean()
    # the device's mounting in the car (comma2k19's notes: pitch ≈ 3.8°, yaw ≈ 0.8°)
    rpy = sidecar["frames"]["mounting"]["rpy_deg"]
    assert rpy == pytest.approx([1.25, 3.75, 0.90], abs=0.05)


def test_truth_readers_take_the_imported_bag(comma):
    result, _ = comma
    with open_bag(result.runs[0].path) as reader:
        auto, datum_auto = truth_from_bag(reader)
        odom, datum_odom = truth_from_bag(reader, source="odometry")
    assert np.array_equal(auto.position, odom.position) and datum_auto == datum_odom
    start = result.runs[0].start_s + 1533180079.8495   # boot time + the offset to UTC
    assert start - 1e-3 <= auto.t[0] <= start + 0.05      # the first 20-Hz pose in the window


def test_windows_and_stride():
    assert windows(0.0, 60.0, None, None) == [(0.0, 60.0)]
    assert windows(0.0, 35.0, 10.0, None) == [(0.0, 10.0), (10.0, 20.0), (20.0, 30.0)]
    assert windows(0.0, 20.0, 10.0, 5.0) == [(0.0, 10.0), (5.0, 15.0), (10.0, 20.0)]
    for args, message in (((0.0, 60.0, None, 5.0), "--stride needs --window"),
                          ((0.0, 60.0, 1.0, None), "at least 2 s"),
                          ((0.0, 60.0, 90.0, None), "longer than the drive"),
                          ((0.0, 60.0, 10.0, 0.0), "--stride")):
        with pytest.raises(UserError, match=message):
            windows(*args)


def test_overlapping_windows_say_so(tmp_path, capsys):
    assert main(["import", "comma2k19", str(shipped_comma2k19()), "--out", str(tmp_path / "o"),
                 "--window", "20", "--stride", "10", "--fix-covariance", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "OVERLAP by 10 s" in out and "optimistic" in out
    assert len(list((tmp_path / "o" / "highway").iterdir())) == 4
    fix = read_run(tmp_path / "o" / "highway" / "run_00")[0]["/fix"]
    assert np.allclose(np.sqrt(fix["position_covariance"][:, [0, 4, 8]]), [0.5, 0.5, 1.0])


def test_without_mounting_the_device_tilt_is_warned(tmp_path, capsys):
    assert main(["import", "comma2k19", str(shipped_comma2k19()), "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "consider --estimate-mounting" in err


def test_sensitivity_imports(tmp_path):
    results = sensitivity_imports(import_comma2k19, shipped_comma2k19(), tmp_path / "sens", window=30,
                                  estimate_mounting=True)
    assert sorted(results) == [0.5, 1.0, 2.0]
    sigmas = {}
    for scale, result in results.items():
        assert Path(result.out).name == f"fix_sigma_x{scale:g}"
        fix = read_run(result.runs[0].path)[0]["/fix"]
        sigmas[scale] = np.sqrt(fix["position_covariance"][:, 0])
    assert np.allclose(sigmas[0.5] * 2, sigmas[1.0]) and np.allclose(sigmas[2.0], 2 * sigmas[1.0])


def test_comma2k19_bad_input(tmp_path, capsys):
    import shutil

    segment = tmp_path / "seg"
    shutil.copytree(shipped_comma2k19(), segment)
    (segment / "global_pose" / "frame_velocities").unlink()
    assert main(["import", "comma2k19", str(segment), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "frame_velocities: missing" in err
    assert not (tmp_path / "o").exists()
    shutil.copy(shipped_comma2k19() / "global_pose" / "frame_velocities", segment / "global_pose")
    t = np.load(segment / "processed_log/IMU/accelerometer/t")
    t[100] = t[99]
    with open(segment / "processed_log/IMU/accelerometer/t", "wb") as stream:
        np.save(stream, t)
    assert main(["import", "comma2k19", str(segment), "--out", str(tmp_path / "o")]) == 2
    assert "accelerometer/t: column t: not strictly increasing at row 100" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_existing_output_is_refused_and_overwrite_replaces(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["import", "comma2k19", str(shipped_comma2k19()), "--out", str(out), "--window", "20"]) == 2
    assert "--overwrite" in capsys.readouterr().err and (out / "keep.txt").exists()
    assert main(["import", "comma2k19", str(shipped_comma2k19()), "--out", str(out), "--window", "20",
                 "--overwrite"]) == 0
    assert not (out / "keep.txt").exists() and (out / "highway" / "run_01").is_dir()
    inside = str(shipped_comma2k19() / "x")
    assert main(["import", "comma2k19", str(shipped_comma2k19()), "--out", inside]) == 2
    assert "overlap an input" in capsys.readouterr().err


# -------------------------------------------------------------------------------------- CSV layout
MOUNT_RPY = [0.03, -0.05, 0.08]   # rad: an IMU mounted tilted and turned


def save(path, header, *columns):
    np.savetxt(path, np.column_stack(columns), delimiter=",", header=header, comments="", fmt="%.12g")


def write_csv_drive(folder, family="ecef", attitude=False, rates=False, mount=None, frd=False,
                    sigma=False, seed=0, duration=60.0):
    """A synthetic car drive written in the CSV layout; returns the 100 Hz truth (ENU at DATUM)."""
    folder.mkdir(parents=True)
    fine = car_drive(duration)
    truth = every(fine, 5)
    gps = load_gps_model({"preset": "ch_gauss", "datum": list(DATUM)}, sensor_seed(seed, "gps"))
    fixes = gps.sample(fine)
    gnss = [fixes.stamp_ns / 1e9, fixes.latitude, fixes.longitude, fixes.altitude]
    header = "t,lat,lon,alt"
    if sigma:
        gnss += [np.full(len(fixes), 0.4), np.full(len(fixes), 0.9)]
        header += ",sigma_h,sigma_v"
    save(folder / "gnss.csv", header, *gnss)
    imu = load_imu_model({"preset": "ideal", "mounting_rpy": mount or [0.0, 0.0, 0.0]}).sample(fine)
    accel, gyro = imu.linear_acceleration, imu.angular_velocity
    rng = np.random.default_rng(seed)
    accel = accel + 0.05 * rng.standard_normal(accel.shape)
    gyro = gyro + 0.002 * rng.standard_normal(gyro.shape)
    if frd:
        accel, gyro = accel * [1, -1, -1], gyro * [1, -1, -1]
    save(folder / "imu.csv", "t,ax,ay,az,wx,wy,wz", imu.stamp_ns / 1e9, accel, gyro)
    q = truth.orientation
    if family == "ecef":
        origin = geodesy.geodetic_to_ecef(*DATUM)
        axes = geodesy.enu_rotation(geodesy.as_datum(DATUM))
        position = origin + truth.position @ axes
        velocity = truth.velocity @ axes
        q = rotations.multiply(rotations.from_matrix(axes.T), q)
        names = "x_ecef,y_ecef,z_ecef,vx_ecef,vy_ecef,vz_ecef"
    elif family == "lla":
        from sim2real_eval.importer.frames import local_enu_to_ecef_quaternions

        lat, lon, alt = geodesy.enu_to_geodetic(truth.position, DATUM)
        position = np.column_stack([lat, lon, alt])
        axes = geodesy.enu_rotation(geodesy.as_datum(DATUM))
        # velocity and attitude in the local ENU frame of each point:
        # q_local←datum = q_local←ecef ⊗ q_ecef←datum
        q_local_datum = rotations.multiply(rotations.conjugate(local_enu_to_ecef_quaternions(lat, lon)),
                                           rotations.from_matrix(axes.T))
        velocity = rotations.rotate(q_local_datum, truth.velocity)
        q = rotations.multiply(q_local_datum, q)
        names = "lat,lon,alt,v_east,v_north,v_up"
    else:
        position, velocity = truth.position, truth.velocity
        names = "east,north,up,v_east,v_north,v_up"
    columns = [truth.t, position, velocity]
    if attitude:
        columns.append(q)
        names += ",qx,qy,qz,qw"
    if rates:
        columns.append(truth.angular_velocity)
        names += ",wx,wy,wz"
    save(folder / "truth.csv", "t," + names, *columns)
    return fine


@pytest.mark.parametrize("family, attitude, rates", [("ecef", True, True), ("ecef", False, False),
                                                     ("lla", True, False), ("enu", False, False)])
def test_csv_truth_families(tmp_path, family, attitude, rates):
    fine = write_csv_drive(tmp_path / "drive", family, attitude, rates)
    datum = list(DATUM) if family == "enu" else None
    result = import_csv(tmp_path / "drive", tmp_path / "out", fix_covariance=0.3, datum=datum)
    assert result.scenario == "drive" and len(result.runs) == 1
    columns, truth, got_datum, _frames = read_run(result.runs[0].path)
    assert got_datum[:2] == pytest.approx(DATUM[:2], abs=1e-9)   # deg; ECEF written to 12 digits: 10 µm
    assert got_datum[2] == pytest.approx(DATUM[2], abs=1e-4)
    reference = fine.interpolate(truth.t)
    inner = slice(40, -40)   # the derivative's 2-s edges
    assert np.abs(truth.position - reference.position).max() < 0.01
    assert np.abs(truth.velocity - reference.velocity).max() < 1e-6
    relative = rotations.multiply(rotations.conjugate(reference.orientation), truth.orientation)
    yaw_error = rotations.yaw_of(relative)
    assert np.abs(yaw_error).max() < 2e-3
    assert np.abs(truth.angular_velocity - reference.angular_velocity)[inner].max() < 0.01
    assert np.abs(truth.specific_force - reference.specific_force)[inner].max() < 0.05
    assert np.mean(columns["/imu"]["linear_acceleration"][:, 2]) == pytest.approx(9.80665, abs=0.01)


def test_csv_imu_axes_and_mounting_estimate(tmp_path):
    write_csv_drive(tmp_path / "drive", "ecef", True, True, mount=MOUNT_RPY, frd=True)
    result = import_csv(tmp_path / "drive", tmp_path / "out", fix_covariance=0.3, imu_axes="frd",
                        estimate_mounting=True)
    sidecar = yaml.safe_load((Path(result.runs[0].path) / "import.yaml").read_text())
    assert sidecar["frames"]["mounting"]["rpy_rad"] == pytest.approx(MOUNT_RPY, abs=0.003)
    columns, truth, _datum, _frames = read_run(result.runs[0].path)
    imu = columns["/imu"]
    reference = truth.interpolate(imu["stamp_ns"] * 1e-9)
    residual = imu["linear_acceleration"] - reference.specific_force
    assert np.abs(residual.mean(axis=0)).max() < 0.03           # the IMU now reads in base_link
    accel_sigma = np.sqrt(imu["linear_acceleration_covariance"][0, [0, 4, 8]])
    assert accel_sigma == pytest.approx([0.05, 0.05, 0.05], rel=0.3)


def test_wahba_by_hand():
    r = rotations.to_matrix(rotations.from_rpy(0.1, -0.2, 0.3))
    sensor = np.random.default_rng(1).standard_normal((20, 3))
    assert np.allclose(wahba(sensor, sensor @ r.T), r)
    # a reflection is never returned
    assert np.linalg.det(wahba(sensor, -sensor)) == pytest.approx(1.0)


def test_covariance_policies(tmp_path):
    write_csv_drive(tmp_path / "d1", sigma=True)
    fix = read_run(import_csv(tmp_path / "d1", tmp_path / "o1").runs[0].path)[0]["/fix"]
    assert np.allclose(fix["position_covariance"][:, [0, 4, 8]], [0.16, 0.16, 0.81])
    assert set(fix["position_covariance_type"]) == {2}
    # --fix-covariance wins over the columns; the scale multiplies σ
    fix = read_run(import_csv(tmp_path / "d1", tmp_path / "o2", fix_covariance=0.2,
                              fix_covariance_scale=2.0).runs[0].path)[0]["/fix"]
    assert np.allclose(fix["position_covariance"][:, [0, 4, 8]], [0.16, 0.16, 0.64])
    # pseudorange: σ_R = √(n / Σ σ⁻²): σ 5 and 10 m → √40 m; the latest epoch at or before each fix
    times, sigma = cov.pseudorange_epochs([1.0, 1.0, 2.0, 2.0, 2.0], [7, 7, 8, 8, 8], [5, 10, 4, 4, np.nan])
    assert list(times) == [1.0, 2.0] and sigma == pytest.approx([np.sqrt(40.0), 4.0])
    policy = cov.from_pseudorange([1.05, 1.99, 2.5], times, sigma)
    assert policy.sigma[:, 0] == pytest.approx([np.sqrt(40.0), np.sqrt(40.0), 4.0])
    assert policy.sigma[:, 2] == pytest.approx(2 * policy.sigma[:, 0])
    with pytest.raises(UserError, match="no pseudorange epoch within 1 s"):
        cov.from_pseudorange([5.0], times, sigma)


def test_csv_bad_input_names_file_column_and_line(tmp_path, capsys):
    write_csv_drive(tmp_path / "good")
    cases = []

    def case(name, edit, message, extra=()):
        import shutil

        folder = tmp_path / name
        shutil.copytree(tmp_path / "good", folder)
        edit(folder)
        cases.append((folder, message, extra))

    def replace_line(file, number, text):
        def edit(folder):
            lines = (folder / file).read_text().splitlines()
            lines[number - 1] = text(lines[number - 1])
            (folder / file).write_text("\n".join(lines) + "\n")
        return edit

    case("no_alt", lambda f: (f / "gnss.csv").write_text(
        (f / "gnss.csv").read_text().replace("alt", "height", 1)),
         "gnss.csv: missing column(s) alt")
    case("nan", replace_line("imu.csv", 7, lambda line: line.replace(line.split(",")[3], "nan", 1)),
         "imu.csv: column az: 'nan' at line 7")
    case("text", replace_line("gnss.csv", 3, lambda line: "x" + line),
         "gnss.csv: column t: not a number at line 3")
    case("backwards", replace_line("truth.csv", 10, lambda line: "1000.0" + line[line.index(","):]),
         "truth.csv: column t: not strictly increasing at line 10")
    case("short_truth", lambda f: (f / "truth.csv").write_text(
        "\n".join((f / "truth.csv").read_text().splitlines()[:3]) + "\n"),
        "truth.csv: column t: the truth")
    case("no_sigma", lambda f: None, "missing column sigma_h")
    case("enu", lambda f: None, "need --datum", ())
    case("zero_time", lambda f: None, "header stamps must be > 0", ("--time-offset", "-2000"))
    for folder, message, extra in cases:
        args = ["import", "csv", str(folder), "--out", str(tmp_path / "out")]
        if folder.name not in ("no_sigma",):
            args += ["--fix-covariance", "0.3"]
        if folder.name == "enu":
            lines = (folder / "truth.csv").read_text().replace("x_ecef,y_ecef,z_ecef,vx_ecef,vy_ecef,vz_ecef",
                                                                  "east,north,up,v_east,v_north,v_up", 1)
            (folder / "truth.csv").write_text(lines)
        assert main(args + list(extra)) == 2, folder.name
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err, (folder.name, err)
        assert not (tmp_path / "out").exists()


def test_mounting_estimates_agree_between_the_formats(comma, tmp_path):
    """The docs/import.md worked example: the comma2k19 arrays as CSV (planar truth, FRD IMU) give the
    device's mounting within 1.5° of the comma2k19 reader's vehicle frame."""
    seg = shipped_comma2k19()
    folder = tmp_path / "my_drive"
    folder.mkdir()

    def load(name):
        return np.load(seg / name)

    fix = load("processed_log/GNSS/live_gnss_ublox/value")
    save(folder / "gnss.csv", "t,lat,lon,alt", load("processed_log/GNSS/live_gnss_ublox/t"), fix[:, 0],
         fix[:, 1],
         fix[:, 4])
    save(folder / "imu.csv", "t,ax,ay,az,wx,wy,wz", load("processed_log/IMU/accelerometer/t"),
         load("processed_log/IMU/accelerometer/value"), load("processed_log/IMU/gyro/value"))
    save(folder / "truth.csv", "t,x_ecef,y_ecef,z_ecef,vx_ecef,vy_ecef,vz_ecef",
         load("global_pose/frame_times"),
         load("global_pose/frame_positions"), load("global_pose/frame_velocities"))
    result = import_csv(folder, tmp_path / "out", window=10, imu_axes="frd", estimate_mounting=True,
                        fix_covariance=0.5)
    csv_mount = yaml.safe_load((Path(result.runs[0].path) / "import.yaml").read_text())["frames"]["mounting"]
    comma_sidecar = Path(comma[0].runs[0].path) / "import.yaml"
    comma_mount = yaml.safe_load(comma_sidecar.read_text())["frames"]["mounting"]
    a = rotations.from_rpy(*csv_mount["rpy_rad"])
    b = rotations.from_rpy(*comma_mount["rpy_rad"])
    angle = np.degrees(2 * np.arccos(min(1.0, abs(float(np.sum(a * b))))))
    assert angle < 1.5
    assert csv_mount["rpy_deg"][:2] == pytest.approx(comma_mount["rpy_deg"][:2], abs=0.5)


# ---------------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_import_replay_score_end_to_end(comma, tmp_path):
    """import comma2k19 → replay --replace gps=car_gauss with the car template → score."""
    result, _ = comma
    runs, report = tmp_path / "runs", tmp_path / "report"
    repo = Path(__file__).resolve().parents[1]
    assert main(["replay", result.scenario_dir, "--replace", "gps=car_gauss", "--out", str(runs),
                 "--config", str(repo / "config" / "ekf_car.yaml"),
                 "--navsat", str(repo / "config" / "navsat_car.yaml"),
                 "--static-tf", "base_link imu 0 0 0 0 0 0", "--static-tf", "base_link gps 0 0 0 0 0 0",
                 "--workers", "1", "--no-progress"]) == 0
    assert main(["score", str(runs), "--out", str(report)]) == 0
    rows = (report / "runs.csv").read_text().splitlines()[1:]
    assert sum(row.startswith("real,real,highway") for row in rows) == 5
    assert sum(row.startswith("sim,sim_gps-car_gauss,highway") for row in rows) == 5
    import json

    combined = json.loads((report / "vepd.json").read_text())["combined"]["sim_gps-car_gauss"]
    assert combined["n_real"] == combined["n_sim"] == 5
    assert 0 < combined["VEPD"] < 20 and combined["VEPD_ci95"][0] <= combined["VEPD_ci95"][1]
    run_yaml = yaml.safe_load((runs / "sim" / "sim_gps-car_gauss" / "highway" / "0" / "run.yaml").read_text())
    assert run_yaml["gps"]["datum"] == pytest.approx(
        yaml.safe_load((Path(result.runs[0].path) / "import.yaml").read_text())["datum"])


def test_a_truth_covering_part_of_the_sensors_is_cropped_with_a_warning(tmp_path, capsys):
    write_csv_drive(tmp_path / "drive")
    lines = (tmp_path / "drive" / "truth.csv").read_text().splitlines()
    (tmp_path / "drive" / "truth.csv").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    assert main(["import", "csv", str(tmp_path / "drive"), "--out", str(tmp_path / "o"),
                 "--fix-covariance", "0.3"]) == 0
    err = capsys.readouterr().err
    assert "overlap for 30.0 s of the sensors' 60.0 s" in err
    _columns, truth, _datum, _frames = read_run(tmp_path / "o" / "drive" / "run_00")
    assert truth.duration == pytest.approx(29.95, abs=0.06)
