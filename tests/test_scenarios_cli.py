"""End-to-end CLI: `sim2real-eval scenario` and `sim2real-eval sensors` on small data."""

import numpy as np
import yaml

from sim2real_eval.cli import main
from sim2real_eval.truth import GroundTruth


def test_scenario_cli_writes_truth_and_plot(tmp_path, capsys):
    out = tmp_path / "circle.npz"
    png = tmp_path / "circle.png"
    assert main(["scenario", "circle", "--k", "2", "--seed", "1", "--out", str(out), "--plot", str(png)]) == 0
    truth = GroundTruth.load_npz(out)
    assert truth.t[0] == 10.0 and len(truth) > 3000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "circle.npz" in capsys.readouterr().out


def test_scenario_cli_bad_name_exit_2_nothing_written(tmp_path, capsys):
    out = tmp_path / "x.npz"
    assert main(["scenario", "figure8", "--out", str(out)]) == 2
    assert "unknown scenario 'figure8'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_sensors_cli_end_to_end(tmp_path):
    out = tmp_path / "run"
    args = [
        "sensors",
        "--scenario",
        "line",
        "--gps",
        "ch_rw",
        "--imu",
        "chrono_paper_demo",
        "--seed",
        "3",
        "--out",
        str(out),
        "--plot",
    ]
    assert main(args) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "gps.csv",
        "gps.npz",
        "imu.csv",
        "imu.npz",
        "sensors.png",
        "sensors.yaml",
        "truth.csv",
        "truth.npz",
    ]
    description = yaml.safe_load((out / "sensors.yaml").read_text())
    assert description["gps"]["position_noise"]["formulation"] == "chrono"
    assert description["seed_keys"]["gps"] == [3, "line", 0, "gps"]
    with np.load(out / "gps.npz") as gps, np.load(out / "imu.npz") as imu:
        assert gps["stamp_ns"].dtype == np.int64 and len(gps["stamp_ns"]) == description["counts"]["gps"]
        assert imu["linear_acceleration"].shape == (description["counts"]["imu"], 3)
        assert str(gps["frame_id"]) == "gps"
        gps_stamps = gps["stamp_ns"]
    csv = np.genfromtxt(out / "gps.csv", delimiter=",", names=True)
    assert len(csv) == len(gps_stamps)
    assert np.allclose(csv["enu_e"] - csv["error_e"], np.interp(gps_stamps / 1e9, *_truth_x(out)), atol=1e-6)
    # Same seed, same bytes.
    again = tmp_path / "again"
    assert main(args[:-3] + ["--out", str(again)]) == 0
    assert (out / "gps.npz").read_bytes() == (again / "gps.npz").read_bytes()
    assert (out / "imu.npz").read_bytes() == (again / "imu.npz").read_bytes()


def _truth_x(out):
    with np.load(out / "truth.npz") as truth:
        return truth["t"], truth["position"][:, 0]


def test_sensors_cli_from_truth_file_with_overrides(tmp_path):
    truth_file = tmp_path / "rest.npz"
    assert main(["scenario", "rest", "--out", str(truth_file)]) == 0
    out = tmp_path / "s"
    assert (
        main(
            [
                "sensors",
                "--truth",
                str(truth_file),
                "--imu",
                "ideal",
                "--gps",
                "ideal",
                "--mounting-rpy",
                "0",
                "-1.5708",
                "3.1416",
                "--datum",
                "40",
                "-80",
                "10",
                "--format",
                "npz",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with np.load(out / "imu.npz") as imu:
        assert np.allclose(imu["linear_acceleration"][:, 0], 9.80665, atol=1e-3)  # +g on sensor x
    with np.load(out / "gps.npz") as gps:
        assert np.allclose(gps["latitude"], 40.0) and np.allclose(gps["altitude"], 10.0)
    assert not (out / "gps.csv").exists()


def test_sensors_cli_bad_inputs_exit_2_nothing_written(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("position_noise:\n  model: gaussian\n  sigma: -1\n")
    cases = [
        (["--gps", "nope"], "unknown preset 'nope'"),
        (["--gps", str(bad)], "bad.yaml: position_noise.sigma: must be >= 0"),
        (["--imu", "chrono_paper_demo", "--k", "-1"], "argument --k: must be >= 0, got '-1'"),
    ]
    for extra, message in cases:
        out = tmp_path / "never"
        try:
            code = main(["sensors", "--scenario", "rest", "--out", str(out)] + extra)
        except SystemExit as stop:  # a value refused while parsing (cli.validators): argparse exits 2
            code = stop.code
        assert code == 2
        assert message in capsys.readouterr().err
        assert not out.exists()
    existing = tmp_path / "exists"
    existing.mkdir()
    (existing / "mine.txt").write_text("x")
    assert main(["sensors", "--scenario", "rest", "--out", str(existing)]) == 2
    assert "holds mine.txt" in capsys.readouterr().err and (existing / "mine.txt").read_text() == "x"
