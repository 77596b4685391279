"""CARLA and gz-sim sensor presets: gz-sensors' Gaussian noise model (hand-computed and statistics), noise
added in degrees (CARLA GNSS, gz NavSat), and the shipped presets' documented statistics (seeded)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.errors import UserError
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.models.noise import GzGaussianNoise
from sim2real_eval.models.seeding import generator
from sim2real_eval.truth import GroundTruth

DATUM = [37.4, -122.1, 10.0]


def still_truth(duration=60.0, rate=100.0) -> GroundTruth:
    t = 10.0 + np.arange(int(round(duration * rate)) + 1) / rate
    n = len(t)
    return GroundTruth(t, np.zeros((n, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), np.zeros((n, 3)),
                       np.zeros((n, 3)), np.tile([0.0, 0.0, 9.80665], (n, 1)))


def gz(seed=0, **kw):
    values = dict(mean=[0.0] * 3, stddev=[0.0] * 3, bias_mean=[0.0] * 3, bias_stddev=[0.0] * 3,
                  dynamic_bias_stddev=[0.0] * 3, dynamic_bias_correlation_time=[0.0] * 3,
                  precision=[0.0] * 3, shared_xy=False)
    values.update(kw)
    return GzGaussianNoise(seq=sensor_seed(seed, "gz"), **values)


def test_gz_static_bias_signed_and_constant_hand_computed():
    seq = sensor_seed(5, "gz")
    noise = gz(5, bias_mean=[0.1, 0.2, 0.3], bias_stddev=[0.0, 0.01, 0.0])
    setup = generator(seq, 2)
    z, u = setup.standard_normal(3), setup.random(3)
    sign = np.where(u < 0.5, -1.0, 1.0)
    expected = np.array([0.1, 0.2 + 0.01 * z[1], 0.3]) * sign
    out = noise.apply(np.ones((4, 3)), np.full(4, 0.01))
    np.testing.assert_array_equal(out, np.tile(1.0 + expected, (4, 1)))  # no dynamic bias: never decays
    # the signed bias is zero-mean across sensors: its variance counts, bias_mean² + bias_stddev²
    np.testing.assert_allclose(noise.stationary_variance(0.01), [0.01, 0.04 + 1e-4, 0.09], rtol=1e-12)


def test_gz_dynamic_bias_recursion_and_precision_hand_computed():
    noise = gz(1, mean=[0.5, 0.0, 0.0], stddev=[0.2, 0.0, 0.0], bias_mean=[1.0, 0.0, 0.0],
               dynamic_bias_stddev=[0.3, 0.0, 0.0], dynamic_bias_correlation_time=[2.0, 0.0, 0.0],
               precision=[0.0, 0.0, 0.25])
    b0 = float(noise.bias[0])
    assert abs(b0) == 1.0
    seq = sensor_seed(1, "gz")
    white, drive = generator(seq, 0).standard_normal((2, 3)), generator(seq, 1).standard_normal((2, 3))
    dt = np.array([0.1, 0.3])
    x = np.array([[0.0, 0.0, 0.37], [0.0, 0.0, -0.125]])
    out = noise.apply(x, dt)
    b = b0
    for k in range(2):  # b <- e^(-dt/tau) b + sqrt(sigma^2 tau/2 (1 - e^(-2dt/tau))) z
        b = math.exp(-dt[k] / 2.0) * b + math.sqrt(0.09 * 1.0 * (1.0 - math.exp(-dt[k]))) * drive[k, 0]
        assert out[k, 0] == pytest.approx(b + 0.5 + 0.2 * white[k, 0], abs=1e-14)
    np.testing.assert_array_equal(out[:, 2], [0.25 * round(0.37 / 0.25), -0.25])  # -0.5 halves away: -0.25
    assert out[1, 1] == 0.0


def test_gz_shared_xy_one_model_twice_per_sample():
    noise = gz(2, bias_mean=[0.4, 0.4, 0.0], dynamic_bias_stddev=[0.2, 0.2, 0.0],
               dynamic_bias_correlation_time=[1.0, 1.0, 0.0], shared_xy=True)
    assert noise.bias[0] == noise.bias[1]
    start = float(noise.bias[0])
    drive = generator(sensor_seed(2, "gz"), 1).standard_normal((3, 3))
    out = noise.apply(np.zeros((3, 3)), np.full(3, 0.5))
    b = start
    decay, std = math.exp(-0.5), math.sqrt(0.04 * 0.5 * (1.0 - math.exp(-1.0)))
    for k in range(3):  # latitude (x) then longitude (y): two steps of the same state per sample
        b = decay * b + std * drive[k, 0]
        assert out[k, 0] == pytest.approx(b, abs=1e-15)
        b = decay * b + std * drive[k, 1]
        assert out[k, 1] == pytest.approx(b, abs=1e-15)


def test_gz_bias_sign_is_a_fair_coin_over_sensors():
    signs = [np.sign(gz(seed, bias_mean=[1.0] * 3).bias) for seed in range(400)]
    negative = float(np.mean(np.array(signs) < 0))
    assert 0.44 < negative < 0.56  # 1200 fair draws: 4.2 sigma either side


@settings(max_examples=8, deadline=None)
@given(tau=st.floats(0.2, 2.0), sigma_b=st.floats(0.05, 1.0), seed=st.integers(0, 2**32 - 1))
def test_gz_dynamic_bias_stationary_variance_and_autocorrelation(tau, sigma_b, seed):
    dt = 0.05
    n = 60_000
    noise = gz(seed, dynamic_bias_stddev=[sigma_b] * 3, dynamic_bias_correlation_time=[tau] * 3)
    out = noise.apply(np.zeros((n, 3)), np.full(n, dt))[2000:]  # drop the start (bias from 0)
    stationary = sigma_b**2 * tau / 2.0
    samples = n * dt / tau  # independent stretches, roughly
    assert out.var(axis=0) == pytest.approx(np.full(3, stationary), rel=4.0 / math.sqrt(samples / 2.0))
    lag = max(1, int(round(tau / dt / 2.0)))
    rho = np.mean([np.corrcoef(out[:-lag, a], out[lag:, a])[0, 1] for a in range(3)])
    assert rho == pytest.approx(math.exp(-lag * dt / tau), abs=0.12)
    np.testing.assert_allclose(noise.stationary_variance(dt), stationary)


@settings(max_examples=10, deadline=None)
@given(mean=st.floats(-1.0, 1.0), stddev=st.floats(0.01, 2.0), seed=st.integers(0, 2**32 - 1))
def test_gz_white_part_mean_and_std(mean, stddev, seed):
    n = 20_000
    out = gz(seed, mean=[mean] * 3, stddev=[stddev] * 3).apply(np.zeros((n, 3)), np.full(n, 0.01))
    np.testing.assert_allclose(out.mean(axis=0), mean, atol=5 * stddev / math.sqrt(n))
    np.testing.assert_allclose(out.std(axis=0), stddev, rtol=0.04)


def gps_errors_deg(preset, seed, **overrides):
    model = load_gps_model(preset, sensor_seed(seed, preset), datum=DATUM, **overrides)
    truth = still_truth()
    fixes = model.sample(truth)
    return fixes, np.stack([fixes.latitude - DATUM[0], fixes.longitude - DATUM[1],
                            fixes.altitude - DATUM[2]], axis=-1)


def test_geodetic_noise_frame_adds_degrees_hand_computed():
    bias = {"model": "gaussian", "sigma": [0.0, 0.0, 0.0], "mean": [1e-5, -2e-5, 0.7]}
    fixes, err = gps_errors_deg("carla_leaderboard", 0, position_noise=bias)
    np.testing.assert_allclose(err, np.tile([1e-5, -2e-5, 0.7], (len(err), 1)), atol=1e-9)
    # the ENU error is that offset in metres: 1e-5 deg of latitude is M*pi/180*1e-5 = 1.109 m here
    np.testing.assert_allclose(fixes.enu_error[0, 1], 1.1094, atol=1e-3)
    np.testing.assert_allclose(fixes.enu_error[0, 0], -2e-5 * math.pi / 180 * 6386651.0 * math.cos(
        math.radians(37.4)), rtol=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_carla_leaderboard_gnss_statistics(seed):
    fixes, err = gps_errors_deg("carla_leaderboard", seed)
    assert len(err) == 60 * 20 + 1  # 20 Hz (every leaderboard tick), both ends of the span
    np.testing.assert_allclose(err.std(axis=0), 5e-6, rtol=0.07)  # degrees, degrees, metres
    np.testing.assert_allclose(err.mean(axis=0), 0.0, atol=5 * 5e-6 / math.sqrt(len(err)))
    lag1 = [np.corrcoef(err[:-1, a], err[1:, a])[0, 1] for a in range(3)]
    assert max(abs(r) for r in lag1) < 0.12  # white


def test_gz_navsat_latitude_and_longitude_share_one_process():
    fixes, err = gps_errors_deg("gz_navsat", 4, position_noise={"stddev": [0.0, 0.0, 0.5]})
    white_free = err[:, :2]
    # one Gauss-Markov state stepped twice per fix: consecutive lat, lon values are one step apart
    assert np.corrcoef(white_free[:, 0], white_free[:, 1])[0, 1] > 0.99
    assert err[:, 2].std() == pytest.approx(0.5, rel=0.07)


def test_gz_navsat_stationary_horizontal_std_in_degrees():
    stds = []
    for seed in range(6):
        _, err = gps_errors_deg("gz_navsat", seed, position_noise={"stddev": [0.0, 0.0, 0.5]})
        stds.append(err[:, 0])
    pooled = np.concatenate(stds)
    # bias from 0 with tau 30 s over 60 s: below the stationary 5e-6 deg, well above the white 2.5e-6
    assert 1.5e-6 < pooled.std() < 5.5e-6


@pytest.mark.parametrize("seed", [0, 1])
def test_carla_leaderboard_imu_statistics(seed):
    model = load_imu_model("carla_leaderboard", sensor_seed(seed, "carla_imu"))
    imu = model.sample(still_truth())
    accel = imu.linear_acceleration - [0.0, 0.0, 9.80665]
    np.testing.assert_allclose(accel.std(axis=0), [0.001, 0.001, 0.015], rtol=0.07)
    np.testing.assert_allclose(imu.angular_velocity.std(axis=0), 0.001, rtol=0.07)
    np.testing.assert_allclose(imu.angular_velocity.mean(axis=0), 0.0, atol=2e-4)


def test_carla_gyro_bias_is_constant_mean():
    model = load_imu_model("carla_leaderboard", sensor_seed(0, "carla_imu"),
                           gyroscope={"mean": [0.01, -0.02, 0.03]})
    gyro = model.sample(still_truth()).angular_velocity
    np.testing.assert_allclose(gyro.mean(axis=0), [0.01, -0.02, 0.03], atol=5e-5)
    half = len(gyro) // 2
    np.testing.assert_allclose(gyro[:half].mean(axis=0), gyro[half:].mean(axis=0), atol=3e-4)  # 5 sigma


def test_gz_imu_bias_magnitude_and_noise():
    biases = []
    for seed in range(20):
        imu = load_imu_model("gz_imu", sensor_seed(seed, "gz_imu")).sample(still_truth(duration=10.0))
        accel = imu.linear_acceleration - [0.0, 0.0, 9.80665]
        assert accel.std(axis=0) == pytest.approx(np.full(3, 0.017), rel=0.1)
        assert imu.angular_velocity.std(axis=0) == pytest.approx(np.full(3, 2e-4), rel=0.1)
        biases.append(accel.mean(axis=0))
    biases = np.abs(np.array(biases))
    np.testing.assert_allclose(biases, 0.1, atol=0.006)  # |N(0.1, 0.001)| + mean of 1000 white samples


def test_bad_gz_and_geodetic_specs_name_the_key():
    with pytest.raises(UserError, match="shared_xy"):
        load_gps_model("gz_navsat", 0, position_noise={"stddev": [1e-6, 2e-6, 0.5]})
    with pytest.raises(UserError, match="noise_frame"):
        load_gps_model("carla_leaderboard", 0, noise_frame="ecef")
    with pytest.raises(UserError, match="covariance.model"):
        load_gps_model("carla_leaderboard", 0, covariance={"model": "noise"})
    with pytest.raises(UserError, match="dynamic_bias_stddev"):
        load_imu_model("gz_imu", 0, gyroscope={"dynamic_bias_stddev": -1.0})
