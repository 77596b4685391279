"""calibrate on standstill data generated with OUR models and known parameters: recovery within
stated tolerances (array level and through a real rosbag2 bag + the CLI), and bad input."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from fixtures.bags import merge_by_time
from fixtures.optional import requires

from sim2real_eval.bags import messages as bag_messages
from sim2real_eval.bags import write_bag
from sim2real_eval.calibrate.core import calibrate_standstill, data_from_samples
from sim2real_eval.cli import main
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.truth import GRAVITY, GroundTruth

NEEDS_ALLANTOOLS = requires("allantools", "all", "the IMU Allan deviation")

# Known parameters of the synthetic receiver and IMU.
GPS_SIGMA = 0.03                      # m, Gaussian per axis
HDOP = {"h0": 100.0, "h_inf": 0.85, "tau": 12.4}   # the paper's calibrated AirSim set
ACCEL = {"model": "chrono_drift", "sigma": [0.3, 0.3, 0.1], "b0": 0.05, "t_b": 0.1}
GYRO = {"model": "chrono_drift", "sigma": [0.05, 0.05, 0.05], "b0": 1e-3, "t_b": 0.1}
# Tolerances (relative), set from the estimators' spread over seeds for a 300 s record:
TOL_STD = 0.05        # GPS std (3000 samples: sampling error ~1.3 %)
TOL_HDOP = 1e-6       # the HDOP filter is deterministic: the fit is exact
TOL_SIGMA = 0.05      # IMU white std via N at the -1/2 slope
TOL_B0 = 0.35         # drift via K at the +1/2 slope (few independent long clusters)


def standstill_truth(duration: float, rate: float = 100.0, velocity=(0.0, 0.0, 0.0)) -> GroundTruth:
    t = 10.0 + np.arange(int(round(duration * rate)) + 1) / rate
    n = len(t)
    v = np.tile(np.asarray(velocity, dtype=float), (n, 1))
    position = (t - t[0])[:, None] * v
    return GroundTruth(t, position, np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), v, np.zeros((n, 3)),
                       np.tile([0.0, 0.0, GRAVITY], (n, 1)))


def gps_spec():
    return {"preset": "ch_gauss", "position_noise": {"model": "gaussian", "sigma": GPS_SIGMA},
            "covariance": {"model": "hdop", **HDOP, "epe": 0.02}}


def imu_spec():
    return {"preset": "chrono_paper_text", "accelerometer": ACCEL, "gyroscope": GYRO}


def sample(truth, seed):
    gps = load_gps_model(gps_spec(), sensor_seed(seed, "gps")).sample(truth)
    imu = load_imu_model(imu_spec(), sensor_seed(seed, "imu")).sample(truth)
    return gps, imu


def write_standstill_bag(path, truth, seed=1, with_ins=True):
    gps, imu = sample(truth, seed)
    streams = [bag_messages.navsatfix_messages(gps), bag_messages.imu_messages(imu)]
    if with_ins:
        streams.append(bag_messages.sbg_gps_vel_messages(truth))
    write_bag(path, merge_by_time(*streams))
    return path


def check_recovery(cal, check_b0=True):
    gps_p, imu_p = cal.gps_preset, cal.imu_preset
    assert gps_p["position_noise"]["model"] == "gaussian"
    np.testing.assert_allclose(gps_p["position_noise"]["sigma"], GPS_SIGMA, rtol=TOL_STD)
    cov = gps_p["covariance"]
    assert cov["model"] == "hdop"
    assert (cov["h0"], cov["h_inf"], cov["tau"]) == pytest.approx(
        (HDOP["h0"], HDOP["h_inf"], HDOP["tau"]), rel=TOL_HDOP)
    assert gps_p["rate"] == pytest.approx(10.0)
    for channel, truth_params in (("accelerometer", ACCEL), ("gyroscope", GYRO)):
        got = imu_p[channel]
        np.testing.assert_allclose(got["sigma"], truth_params["sigma"], rtol=TOL_SIGMA)
        if check_b0:
            assert got["b0"] == pytest.approx(truth_params["b0"], rel=TOL_B0)
        assert got["t_b"] == truth_params["t_b"]


@NEEDS_ALLANTOOLS
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_recovers_known_parameters_from_model_samples(seed):
    gps, imu = sample(standstill_truth(300.0), seed)
    check_recovery(calibrate_standstill(data_from_samples(gps, imu)))


@NEEDS_ALLANTOOLS
def test_presets_load_in_the_models_and_reproduce_the_statistics():
    gps, imu = sample(standstill_truth(300.0), 4)
    cal = calibrate_standstill(data_from_samples(gps, imu))
    truth = standstill_truth(300.0)
    gps2 = load_gps_model(cal.gps_preset, sensor_seed(9, "gps")).sample(truth)
    imu2 = load_imu_model(cal.imu_preset, sensor_seed(9, "imu")).sample(truth)
    again = calibrate_standstill(data_from_samples(gps2, imu2))
    np.testing.assert_allclose(again.gps.std, GPS_SIGMA, rtol=2 * TOL_STD)
    np.testing.assert_allclose(again.imu_preset["gyroscope"]["sigma"], GYRO["sigma"], rtol=2 * TOL_SIGMA)


@NEEDS_ALLANTOOLS
def test_gauss_markov_receiver_is_recognised():
    # gz form: stationary bias std = bias_sigma*sqrt(tau/2); white sigma on top.
    truth = standstill_truth(600.0, rate=10.0)
    spec = {"preset": "ch_gauss", "position_noise": {"model": "gauss_markov", "form": "gz", "sigma": 0.005,
                                                      "bias_sigma": 0.02, "tau": 5.0}}
    gps = load_gps_model(spec, sensor_seed(5, "gps")).sample(truth)
    imu = load_imu_model(imu_spec(), sensor_seed(5, "imu")).sample(standstill_truth(61.0))
    cal = calibrate_standstill(data_from_samples(gps, imu))
    position = cal.gps_preset["position_noise"]
    assert position["model"] == "gauss_markov" and position["form"] == "gz"
    assert position["tau"] == pytest.approx(5.0, rel=0.35)
    assert np.sqrt(np.mean(np.square(position["bias_sigma"]))) == pytest.approx(0.02, rel=0.3)


@NEEDS_ALLANTOOLS
def test_cli_end_to_end_on_a_real_bag(tmp_path):
    # 120 s keeps the test quick; the drift (b0) needs the longer records of the array-level tests.
    bag = write_standstill_bag(tmp_path / "standstill", standstill_truth(120.0))
    before = sorted(p.name for p in bag.iterdir())
    out = tmp_path / "cal" / "params.yaml"
    assert main(["calibrate", str(bag), "--out", str(out), "--plots", str(tmp_path / "plots")]) == 0
    assert sorted(p.name for p in bag.iterdir()) == before  # input untouched
    report = yaml.safe_load(out.read_text())
    assert report["measured"]["topics"]["velocity"] == "/sbg/gps_vel"
    assert report["measured"]["standstill_speed_m_s"]["ins_velocity"] == pytest.approx(0.0, abs=1e-9)
    gps_preset = out.with_name("params_gps.yaml")
    imu_preset = out.with_name("params_imu.yaml")
    # The presets are usable directly by the models.
    gps_model = load_gps_model(str(gps_preset), sensor_seed(1, "gps"))
    imu_model = load_imu_model(str(imu_preset), sensor_seed(1, "imu"))
    assert len(gps_model.sample(standstill_truth(5.0))) == 51
    assert len(imu_model.sample(standstill_truth(5.0))) == 501
    cal_like = type("C", (), {"gps_preset": yaml.safe_load(gps_preset.read_text()),
                              "imu_preset": yaml.safe_load(imu_preset.read_text())})
    check_recovery(cal_like, check_b0=False)
    for name in ("allan_deviation.png", "gps_fit.png", "hdop_fit.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_moving_bag_is_refused_with_the_measured_speed(tmp_path, capsys):
    bag = write_standstill_bag(tmp_path / "moving", standstill_truth(80.0, velocity=(0.3, 0.4, 0.0)))
    out = tmp_path / "params.yaml"
    assert main(["calibrate", str(bag), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not a standstill" in err and "0.50" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not out.with_name("params_gps.yaml").exists()


def test_creeping_gps_without_ins_is_refused(tmp_path, capsys):
    bag = write_standstill_bag(tmp_path / "creep", standstill_truth(80.0, velocity=(0.2, 0.0, 0.0)),
                               with_ins=False)
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err
    assert "/fix shows the vehicle moving at 0.2" in err


def test_too_short_for_allan_names_the_minimum(tmp_path, capsys):
    bag = write_standstill_bag(tmp_path / "short", standstill_truth(30.0))
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml")]) == 2
    err = capsys.readouterr().err
    assert "too short for the Allan analysis; need at least 60 s" in err


def test_missing_topic_is_named(tmp_path, capsys):
    bag = write_standstill_bag(tmp_path / "bag", standstill_truth(70.0))
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml"), "--imu-topic", "/imu/data"]) == 2
    err = capsys.readouterr().err
    assert "missing topic(s) /imu/data" in err and "/fix (sensor_msgs/msg/NavSatFix)" in err


@NEEDS_ALLANTOOLS
def test_same_input_same_bytes(tmp_path):
    bag = write_standstill_bag(tmp_path / "bag", standstill_truth(70.0))
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name / "params.yaml"
        assert main(["calibrate", str(bag), "--out", str(out)]) == 0
        outputs.append(tuple(out.with_name(f"params_{kind}.yaml").read_bytes() for kind in ("gps", "imu")))
    assert outputs[0] == outputs[1]


@NEEDS_ALLANTOOLS
def test_constant_driver_covariance_becomes_a_diagonal_preset():
    # nmea_navsat_driver at HDOP 1.2, RTK fixed: var_h = (1.2*0.02)^2, var_v = (2*1.2*2*0.02)^2.
    truth = standstill_truth(61.0)
    spec = {"preset": "ch_gauss", "covariance": {"model": "nmea", "fix_quality": "rtk_fixed", "hdop": 1.2}}
    gps = load_gps_model(spec, sensor_seed(6, "gps")).sample(truth)
    imu = load_imu_model(imu_spec(), sensor_seed(6, "imu")).sample(truth)
    cal = calibrate_standstill(data_from_samples(gps, imu))
    assert not cal.hdop.decaying
    assert np.median(cal.hdop.hdop) == pytest.approx(1.2, rel=1e-12)
    cov = cal.gps_preset["covariance"]
    assert cov["model"] == "diagonal" and cov["type"] == "approximated"
    assert cov["sigma"] == pytest.approx([0.024, 0.024, 0.096], rel=1e-12)
    again = load_gps_model(cal.gps_preset, sensor_seed(7, "gps")).sample(truth)
    np.testing.assert_allclose(again.position_covariance[0], gps.position_covariance[0], rtol=1e-12)


@NEEDS_ALLANTOOLS
def test_zero_covariance_is_kept_zero():
    truth = standstill_truth(61.0)
    gps = load_gps_model("ch_gauss", sensor_seed(8, "gps")).sample(truth)
    imu = load_imu_model(imu_spec(), sensor_seed(8, "imu")).sample(truth)
    cal = calibrate_standstill(data_from_samples(gps, imu))
    assert cal.hdop is None and cal.gps_preset["covariance"] == {"model": "zeros"}
    assert "UNKNOWN" in cal.hdop_note
