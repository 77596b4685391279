"""Calibration math on plain arrays: hand-computed values, recovery on synthetic series, invariants."""
from __future__ import annotations

import numpy as np
import pytest
from fixtures.optional import requires
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.calibrate import gps, hdop, imu
from sim2real_eval.errors import UserError

NEEDS_ALLANTOOLS = requires("allantools", "all", "the IMU Allan deviation")


# ---------------------------------------------------------------- GPS
def test_second_difference_sigma_hand_value():
    # p = 0,1,0,1,0 at dt 0.5 s: Δ²p = −2, 2, −2; std(ddof 1) = √(16/3); / dt² = 4·√(16/3) = 16/√3.
    t = np.arange(5) * 0.5
    p = np.array([0.0, 1, 0, 1, 0])[:, None]
    assert gps.second_difference_sigma(t, p)[0] == pytest.approx(16 / np.sqrt(3), rel=1e-12)


def test_second_difference_skips_gapped_triplets():
    # A dropped fix (t = 1.0 missing): the triplets spanning the gap must not be used.
    t = np.array([0.0, 0.5, 1.5, 2.0, 2.5, 3.0, 3.5])
    p = np.array([0.0, 9, 1, 0, 1, 0, 1])[:, None]  # the outlier 9 is only in gapped triplets
    # Regular triplets are centred at indices 3, 4, 5: Δ² = 2, −2, 2 → std √(16/3), /0.25.
    assert gps.second_difference_sigma(t, p)[0] == pytest.approx(16 / np.sqrt(3), rel=1e-12)


@given(st.floats(-10, 10), st.floats(-5, 5), st.floats(0.05, 2))
def test_second_difference_of_a_line_is_zero(offset, slope, dt):
    t = np.arange(20) * dt
    p = np.stack([offset + slope * t] * 3, axis=1)
    assert np.all(gps.second_difference_sigma(t, p) < 1e-6 * (1 + abs(slope)) / dt)


def test_autocorrelation_hand_value():
    # x = 1,−1,1,−1 (mean 0): Σx² = 4, lag-1 sum = −3, lag-2 sum = 2.
    rho = gps.autocorrelation(np.array([1.0, -1, 1, -1]), 2)
    np.testing.assert_allclose(rho, [1.0, -0.75, 0.5], atol=1e-12)


def _gauss_markov_series(n, dt, tau, sigma_bias, sigma_white, rng):
    phi = np.exp(-dt / tau)
    drive = rng.normal(0, sigma_bias * np.sqrt(1 - phi**2), n)
    bias = np.empty(n)
    bias[0] = rng.normal(0, sigma_bias)
    for k in range(1, n):
        bias[k] = phi * bias[k - 1] + drive[k]
    return bias + rng.normal(0, sigma_white, n)


def test_gauss_markov_fit_recovers_tau_and_split():
    rng = np.random.default_rng(7)
    x = _gauss_markov_series(40000, 0.1, 2.0, 0.04, 0.02, rng)
    fit = gps.fit_gauss_markov(x, 0.1)
    assert fit.tau == pytest.approx(2.0, rel=0.15)
    assert fit.amplitude == pytest.approx(0.04**2 / (0.04**2 + 0.02**2), abs=0.05)
    assert fit.sigma_bias == pytest.approx(0.04, rel=0.1)
    assert fit.sigma_white == pytest.approx(0.02, rel=0.2)


def test_white_noise_has_no_correlation_time():
    x = np.random.default_rng(3).normal(0, 1, 5000)
    fit = gps.fit_gauss_markov(x, 0.1)
    assert fit.tau == 0.0 and fit.sigma_white == pytest.approx(np.std(x, ddof=1))


def test_gps_noise_stats_white_noise():
    rng = np.random.default_rng(11)
    t = 10.0 + np.arange(3000) * 0.1
    sigma = np.array([0.03, 0.02, 0.05])
    p = rng.normal(0, 1, (3000, 3)) * sigma + [5.0, -2.0, 260.0]
    stats = gps.gps_noise_stats(t, p)
    np.testing.assert_allclose(stats.std, sigma, rtol=0.05)
    # White noise: Δ²e has variance 6σ² → σ_a = √6·σ/dt².
    np.testing.assert_allclose(stats.second_difference_sigma, np.sqrt(6) * sigma / 0.01, rtol=0.05)
    np.testing.assert_allclose(stats.mean_position, [5.0, -2.0, 260.0], atol=0.01)
    assert np.all(stats.p_max >= 3 * sigma) and np.all(stats.p_max <= 6 * sigma)


def test_gps_noise_stats_rejects_short_series():
    with pytest.raises(UserError, match="need at least 20"):
        gps.gps_noise_stats(np.arange(5.0), np.zeros((5, 3)))


def test_windowed_speed_sees_creep_but_not_noise():
    rng = np.random.default_rng(5)
    t = np.arange(0, 60, 0.1)
    still = rng.normal(0, 0.03, (len(t), 3))
    assert gps.windowed_speed(t, still) < 0.01
    creeping = still + np.outer(t, [0.3, 0.4, 0.0])  # 0.5 m/s
    assert gps.windowed_speed(t, creeping) == pytest.approx(0.5, rel=0.05)


# ---------------------------------------------------------------- HDOP
def test_hdop_inversion_uses_driver_epe():
    cov = np.zeros((3, 9))
    cov[:, 0] = cov[:, 4] = [(0.02 * 3) ** 2, (4.0 * 1.5) ** 2, (0.1 * 2) ** 2]
    np.testing.assert_allclose(hdop.hdop_from_covariance(cov, np.array([2, 0, 1])), [3.0, 1.5, 2.0])
    np.testing.assert_allclose(hdop.hdop_from_covariance(cov[:1], [2], epe=0.06), [1.0])
    with pytest.raises(UserError, match="status \\[-1\\]"):
        hdop.hdop_from_covariance(cov[:1], [-1])


def test_hdop_decay_fit_recovers_discrete_filter_exactly():
    # The AirSim filter per 10 Hz fix: H ← αH + (1 − α)H∞ from H0 (the paper's calibrated values).
    h0, h_inf, tau, dt = 100.0, 0.85, 12.4, 0.1
    alpha = np.exp(-dt / tau)
    h, series = h0, []
    for _ in range(1200):
        h = alpha * h + (1 - alpha) * h_inf
        series.append(h)
    stamps = 10.0 + np.arange(1200) * dt
    fit = hdop.fit_hdop_decay(stamps, np.array(series))
    assert (fit.h0, fit.h_inf, fit.tau) == pytest.approx((h0, h_inf, tau), rel=1e-6)
    assert fit.decaying and fit.rmse < 1e-6
    # Hand value of the curve: H(20 s) = 0.85 + 99.15·e^(−20/12.4) ≈ 20.7 (√cov 0.41 m at epe 0.02).
    assert 0.02 * hdop.first_order_decay(20.0, h0, h_inf, tau) == pytest.approx(0.41, abs=0.005)


def test_flat_hdop_is_not_a_decay():
    fit = hdop.fit_hdop_decay(np.arange(50.0), np.full(50, 0.9))
    assert not fit.decaying and fit.h_inf == pytest.approx(0.9)


# ---------------------------------------------------------------- IMU
def test_chrono_drift_equivalent_hand_values():
    sigma, b0 = imu.chrono_drift_equivalent(0.01, 0.1, 100.0, 0.1)
    assert sigma == pytest.approx(0.1) and b0 == pytest.approx(0.1 * np.sqrt(0.1))


def test_read_allan_on_analytic_curve():
    n_density, k_walk = 0.01, 1e-4
    taus = np.logspace(-2, 4, 80)
    adev = np.sqrt(n_density**2 / taus + k_walk**2 * taus / 3)
    params = imu.read_allan(taus, adev)
    assert params.noise_density == pytest.approx(n_density, rel=0.02)
    assert params.rate_random_walk == pytest.approx(k_walk, rel=0.1)
    # Minimum of √(N²/τ + K²τ/3) is at τ* = √3·N/K with σ² = 2NK/√3.
    assert params.bias_instability_tau == pytest.approx(np.sqrt(3) * n_density / k_walk, rel=0.1)
    expected_b = np.sqrt(2 * n_density * k_walk / np.sqrt(3)) / 0.664
    assert params.bias_instability == pytest.approx(expected_b, rel=0.01)


@NEEDS_ALLANTOOLS
def test_chrono_drift_recovered_from_samples():
    rng = np.random.default_rng(2)
    rate, n, sigma, b0, t_b = 100.0, 60000, 0.05, 1e-3, 0.1
    drift = np.cumsum(rng.normal(0, b0 * np.sqrt(1 / rate / t_b), n))
    x = rng.normal(0, sigma, n) + drift
    params = imu.read_allan(*imu.allan_deviation(x, rate))
    est_sigma, est_b0 = params.chrono_drift(rate, t_b)
    assert est_sigma == pytest.approx(sigma, rel=0.05)
    assert est_b0 == pytest.approx(b0, rel=0.35)


@NEEDS_ALLANTOOLS
@settings(max_examples=15, deadline=None)
@given(st.floats(1e-3, 1e3), st.integers(0, 2**32 - 1))
def test_allan_reading_scales_with_the_signal(scale, seed):
    x = np.random.default_rng(seed).normal(0, 1, 4000)
    base = imu.read_allan(*imu.allan_deviation(x, 50.0))
    scaled = imu.read_allan(*imu.allan_deviation(scale * x + 3.0, 50.0))
    assert scaled.noise_density == pytest.approx(scale * base.noise_density, rel=1e-9)
    assert scaled.bias_instability == pytest.approx(scale * base.bias_instability, rel=1e-9)


def test_imu_too_short_names_minimum():
    t = np.arange(0, 20, 0.01)
    with pytest.raises(UserError, match="need at least 60 s"):
        imu.imu_noise_stats(t, np.zeros((len(t), 3)), np.zeros((len(t), 3)))
