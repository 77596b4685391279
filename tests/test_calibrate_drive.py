"""calibrate --truth: GPS error model (stamp grid, jitter, lag, bias, Gauss–Markov) and IMU residual
from a drive with ground truth (calibrate/drive.py, docs/calibration.md)."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from fixtures.drives import DATUM, car_drive, every

from sim2real_eval.calibrate.drive import (
    fit_gps_errors,
    fit_imu_residual,
    fit_lag,
    fit_stamp_grid,
    gps_error_preset,
    imu_residual_preset,
)
from sim2real_eval.errors import UserError
from sim2real_eval.geodesy import geodetic_to_enu
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed

GPS = {"rate": 10.0, "datum": list(DATUM), "stamp_lag": 0.08, "stamp_jitter": 0.01,
       "position_noise": {"model": "gauss_markov", "form": "gz", "offset": [-0.4, 0.3, 1.0],
                          "sigma": [0.02, 0.02, 0.05], "bias_sigma": [0.1, 0.1, 0.2], "tau": 5.0}}
IMU = {"rate": 100.0,
       "accelerometer": {"model": "chrono_drift", "sigma": [0.2, 0.3, 0.4], "b0": 0.0, "t_b": 0.1},
       "gyroscope": {"model": "chrono_drift", "sigma": [0.01, 0.01, 0.02], "b0": 0.0, "t_b": 0.1}}


@pytest.fixture(scope="module")
def drive():
    fine = car_drive(600.0)
    return fine, every(fine, 5)   # 100 Hz for the models, 20 Hz as a logged truth


# ------------------------------------------------------------------------------------ unit tests
def test_stamp_grid_by_hand():
    # epochs 0, 1, 2, 4 (one dropped) of a 0.1-s grid starting at 5.0, jitter +2, −1, 0, −1 ms
    t = np.array([5.002, 5.099, 5.2, 5.399])
    grid = fit_stamp_grid(t)
    assert list(grid.epoch) == [0, 1, 2, 4]
    # least squares of t on [1, n]: slope 0.09914285…, intercept 5.00142857…
    n = np.array([0, 1, 2, 4.0])
    slope = np.sum((n - n.mean()) * (t - t.mean())) / np.sum((n - n.mean()) ** 2)
    assert grid.period == pytest.approx(slope, abs=1e-12)
    assert grid.start == pytest.approx(t.mean() - slope * n.mean(), abs=1e-9)
    assert np.sum(grid.jitter) == pytest.approx(0.0, abs=1e-12)
    assert grid.jitter_half_width == pytest.approx(np.sqrt(3) * np.std(grid.jitter, ddof=1))


def test_stamp_grid_does_not_drift_when_the_median_step_is_off():
    # 1000 fixes at exactly 100.0 ms but every step jittered so the median differs from the period
    rng = np.random.default_rng(0)
    t = 100.0 + 0.1 * np.arange(1000) + rng.uniform(-0.02, 0.02, 1000)
    t = np.delete(t, [10, 500, 501])
    grid = fit_stamp_grid(t)
    assert grid.period == pytest.approx(0.1, abs=2e-6)
    assert np.abs(grid.jitter).max() < 0.023   # the ±20 ms jitter, about the fitted line


def test_lag_of_a_straight_line_at_constant_speed_plus_a_bend(drive):
    fine, truth = drive
    epochs = np.arange(fine.t[0] + 1.0, fine.t[-1] - 1.0, 0.1)
    positions = fine.interpolate(epochs).position
    lag, lags, costs = fit_lag(epochs + 0.123, positions, truth)
    assert lag == pytest.approx(0.123, abs=1e-3)
    assert costs.min() < 1e-4 and lags[0] == pytest.approx(-0.5)


def test_a_standstill_is_fitted_with_the_lag_not_observable(drive):
    """No speed is refused: at rest the errors are fitted and the lag has no bound (issue 29)."""
    fine, _truth = drive
    from sim2real_eval.truth import GroundTruth

    still = GroundTruth(fine.t, np.zeros_like(fine.position), fine.orientation, np.zeros_like(fine.velocity),
                        np.zeros_like(fine.angular_velocity), fine.specific_force)
    t = fine.t[::10]
    error = np.random.default_rng(0).normal(0.0, 0.3, (len(t), 3))
    fit = fit_gps_errors(t, error, still)
    assert not fit.observability.observable and fit.lag == 0.0
    assert fit.observability.report()["bound_s"] is None
    np.testing.assert_allclose(fit.stats.std, 0.3, rtol=0.1)


def test_fixes_on_another_clock_are_refused(drive):
    fine, truth = drive
    t = fine.t[::10] + 1e6   # stamps a million seconds after the truth
    with pytest.raises(UserError, match="no fix lies inside the truth's time span"):
        fit_gps_errors(t, np.zeros((len(t), 3)), truth)


# --------------------------------------------------------------------------- recovery (stated tolerances)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gps_error_model_is_recovered(drive, seed):
    fine, truth = drive
    fixes = load_gps_model(GPS, sensor_seed(seed, "gps")).sample(fine)
    enu = geodetic_to_enu(fixes.latitude, fixes.longitude, fixes.altitude, DATUM)
    fit = fit_gps_errors(fixes.stamp_ns * 1e-9, enu, truth)
    assert fit.lag == pytest.approx(0.08, abs=0.005)
    assert fit.grid.jitter_half_width == pytest.approx(0.01, rel=0.10)
    assert fit.grid.period == pytest.approx(0.1, abs=1e-6)
    np.testing.assert_allclose(fit.bias, [-0.4, 0.3, 1.0], atol=0.06)
    stationary = np.hypot(np.array([0.1, 0.1, 0.2]) * np.sqrt(5.0 / 2), [0.02, 0.02, 0.05])
    np.testing.assert_allclose(fit.stats.std, stationary, rtol=0.20)
    for axis in range(3):
        assert fit.stats.gauss_markov[axis].tau == pytest.approx(5.0, rel=0.40)
    preset = gps_error_preset(fit, DATUM, None, [0], 0, "synthetic")
    model = load_gps_model(yaml.safe_load(yaml.safe_dump(preset)))   # plain YAML, loadable
    assert model.stamp_lag == pytest.approx(fit.lag)
    assert preset["position_noise"]["model"] == "gauss_markov"
    assert preset["position_noise"]["tau"] == pytest.approx(5.0, rel=0.40)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_imu_residual_is_recovered(drive, seed):
    fine, _truth = drive
    imu = load_imu_model(IMU, sensor_seed(seed, "imu")).sample(fine)
    fit = fit_imu_residual(imu.stamp_ns * 1e-9, imu.linear_acceleration, imu.angular_velocity, fine)
    rate = fit.stats.rate
    np.testing.assert_allclose([f.noise_density * np.sqrt(rate) for f in fit.stats.accel], [0.2, 0.3, 0.4],
                               rtol=0.05)
    np.testing.assert_allclose([f.noise_density * np.sqrt(rate) for f in fit.stats.gyro], [0.01, 0.01, 0.02],
                               rtol=0.05)
    np.testing.assert_allclose(fit.accel_bias, 0.0, atol=0.01)
    preset = imu_residual_preset(fit, "synthetic", 0.1)
    model = load_imu_model(yaml.safe_load(yaml.safe_dump(preset)))
    assert model.parameters["accelerometer"]["sigma"] == pytest.approx([0.2, 0.3, 0.4], rel=0.05)


# ------------------------------------------------------------------------------------------ the CLI
def test_cli_on_an_imported_drive(tmp_path, capsys):
    """import → calibrate --truth on the shipped comma2k19 segment: the numbers docs/calibration.md gives."""
    from sim2real_eval.cli import main
    from sim2real_eval.importer import shipped_comma2k19

    assert main(["import", "comma2k19", str(shipped_comma2k19()), "--out", str(tmp_path / "drive"),
                 "--estimate-mounting"]) == 0
    out = tmp_path / "cal" / "params.yaml"
    assert main(["calibrate", "--truth", str(tmp_path / "drive" / "highway" / "run_00"), "--out", str(out),
                 "--plots", str(tmp_path / "cal")]) == 0
    report = yaml.safe_load(out.read_text())
    gps = report["measured"]["gps"]
    assert gps["stamp_lag_s"] == pytest.approx(0.0618, abs=0.002)
    assert gps["stamp_jitter_std_s"] == pytest.approx(0.0089, abs=0.0005)
    enu = ("east", "north", "up")
    assert [gps["bias_m"][k] for k in enu] == pytest.approx([-0.40, -0.33, 1.07], abs=0.01)
    assert [gps["std_m"][k] for k in enu] == pytest.approx([0.087, 0.158, 0.398], abs=0.002)
    assert report["variant"]["gps"]["position_noise"]["tau"] == pytest.approx(8.0, abs=0.1)
    for name in ("params_gps.yaml", "params_imu.yaml", "gps_error.png", "imu_residual_allan.png"):
        assert (tmp_path / "cal" / name).is_file()
    load_gps_model(str(tmp_path / "cal" / "params_gps.yaml"))
    load_imu_model(str(tmp_path / "cal" / "params_imu.yaml"))
    # a standstill option with --truth, and --truth-source without --truth, are refused
    bag = str(tmp_path / "drive" / "highway" / "run_00")
    assert main(["calibrate", bag, "--out", str(tmp_path / "x.yaml"),
                 "--truth-source", "odometry"]) == 2
    assert "--truth-source: only with --truth" in capsys.readouterr().err
