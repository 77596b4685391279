"""The EKF core against hand-computed values (judge.md §1-§4, §10 items 1-5, 10)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.judge.filter import Ekf, Measurement, clamp_rotation, control_acceleration, transition
from sim2real_eval.judge.params import DEFAULT_PROCESS_NOISE_DIAGONAL, EkfParams

S = 1_000_000_000


def measurement(stamp_ns, values: dict, variances: dict, threshold=math.inf):
    z = np.zeros(15)
    cov = np.zeros((15, 15))
    update = np.zeros(15, dtype=bool)
    for i, v in values.items():
        z[i] = v
        update[i] = True
    for i, v in variances.items():
        cov[i, i] = v
    return Measurement(stamp_ns, "test", z, cov, update, threshold)


def initialised(params=None, state=None, covariance=None, stamp_ns=S):
    ekf = Ekf(params or EkfParams())
    ekf.initialized = True
    ekf.last_measurement_ns = stamp_ns
    if state is not None:
        ekf.state = np.array(state, dtype=float)
    if covariance is not None:
        ekf.covariance = np.array(covariance, dtype=float)
    return ekf


def test_transition_moves_along_body_axes_rotated_by_yaw():
    x = np.zeros(15)
    x[5] = math.pi / 2  # facing +y
    x[6] = 2.0  # vx body
    x[12] = 1.0  # ax body
    f, j = transition(x, 0.5)
    new = f @ x
    # p⁺ = p + R(v·Δ + ½aΔ²) = (0, 2·0.5 + 0.5·1·0.25, 0)
    assert new[0] == pytest.approx(0.0, abs=1e-12)
    assert new[1] == pytest.approx(1.125)
    assert new[6] == pytest.approx(2.5)  # v⁺ = v + aΔ
    # ∂x⁺/∂ψ = −sinψ·cosθ·(vxΔ + ½axΔ²) = −1.125
    assert j[0, 5] == pytest.approx(-1.125)
    assert j[1, 5] == pytest.approx(0.0, abs=1e-12)


def _f(x, delta):
    f, _ = transition(x, delta)
    return f @ x


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1.2, 1.2), min_size=15, max_size=15), st.floats(0.001, 0.2))
def test_jacobian_matches_finite_differences_of_the_transition(values, delta):
    x = np.array(values)
    _, j = transition(x, delta)
    numeric = np.zeros((15, 15))
    h = 1e-6
    for k in range(15):
        dx = np.zeros(15)
        dx[k] = h
        numeric[:, k] = (_f(x + dx, delta) - _f(x - dx, delta)) / (2 * h)
    # J overwrites only the angle partials of position and Euler-angle rows; for the other columns
    # J = F, which omits ∂F/∂(angle) terms only where upstream also omits them (none remain).
    np.testing.assert_allclose(j, numeric, atol=1e-6)


def test_predict_covariance_is_jpjt_plus_delta_q():
    ekf = initialised()
    delta = 0.5
    ekf.predict(S + int(delta * S), int(delta * S))
    q = np.array(DEFAULT_PROCESS_NOISE_DIAGONAL)
    # zero state: J = F; P0 = 1e-9·I → P[0,0] = 1e-9·(1 + Δ² + (Δ²/2)²) + Δ·q_x
    assert ekf.covariance[0, 0] == pytest.approx(
        1e-9 * (1 + delta**2 + (delta**2 / 2) ** 2) + delta * q[0], rel=1e-12
    )
    assert ekf.covariance[11, 11] == pytest.approx(1e-9 + delta * q[11], rel=1e-12)
    # cross term x–vx: 1e-9·(Δ + ½Δ²·Δ) from F rows x and vx
    assert ekf.covariance[0, 6] == pytest.approx(1e-9 * (delta + 0.5 * delta**2 * delta), rel=1e-12)


def test_dynamic_process_noise_scales_pose_block_by_speed_squared():
    params = EkfParams(dynamic_process_noise_covariance=True)
    state = np.zeros(15)
    state[6], state[11] = 3.0, 4.0  # ‖(vx..vyaw)‖² = 25
    ekf = initialised(params, state, np.zeros((15, 15)))
    ekf.predict(2 * S, S // 10)
    q = np.array(DEFAULT_PROCESS_NOISE_DIAGONAL)
    assert ekf.covariance[5, 5] == pytest.approx(0.1 * 25 * q[5], rel=1e-9)
    assert ekf.covariance[6, 6] == pytest.approx(0.1 * q[6], rel=1e-9)


def test_zero_measurement_variance_is_floored_to_1e9():
    p = np.zeros((15, 15))
    p[6, 6] = 1.0
    ekf = initialised(covariance=p)
    ekf.correct(measurement(S, {6: 1.0}, {6: 0.0}))
    assert ekf.state[6] == pytest.approx(1.0 / (1.0 + 1e-9), rel=1e-15)
    # Joseph form: (1−K)²·1 + K²·1e-9 with K = 1/(1+1e-9)
    k = 1.0 / (1.0 + 1e-9)
    assert ekf.covariance[6, 6] == pytest.approx((1 - k) ** 2 + k * k * 1e-9, rel=1e-9)


def test_negative_variance_uses_absolute_value_and_joseph_form():
    p = np.zeros((15, 15))
    p[0, 0] = 1.0
    ekf = initialised(covariance=p)
    ekf.correct(measurement(S, {0: 2.0}, {0: -1.0}))
    assert ekf.state[0] == pytest.approx(1.0)  # K = 1/(1+1)
    assert ekf.covariance[0, 0] == pytest.approx(0.5)  # (½)²·1 + (½)²·1


def test_nan_and_inf_entries_are_excluded_from_the_update():
    p = np.eye(15)
    ekf = initialised(covariance=p)
    ekf.correct(measurement(S, {0: float("nan"), 1: 2.0, 2: float("inf")}, {0: 1.0, 1: 1.0, 2: 1.0}))
    assert ekf.state[0] == 0.0 and ekf.state[2] == 0.0
    assert ekf.state[1] == pytest.approx(1.0)


def test_mahalanobis_gate_rejects_when_d2_reaches_threshold_squared():
    p = np.zeros((15, 15))
    p[11, 11] = 0.5
    # innovation 1, S = 0.5 + 0.5 → d² = 1
    ekf = initialised(covariance=p)
    assert not ekf.correct(measurement(S, {11: 1.0}, {11: 0.5}, threshold=1.0))
    assert ekf.state[11] == 0.0 and ekf.covariance[11, 11] == 0.5
    assert ekf.correct(measurement(S, {11: 1.0}, {11: 0.5}, threshold=1.0 + 1e-9))
    assert ekf.state[11] == pytest.approx(0.5)


def test_angle_innovation_is_wrapped_and_state_wrapped_after_update():
    p = np.zeros((15, 15))
    p[5, 5] = 1.0
    ekf = initialised(covariance=p, state=np.r_[0, 0, 0, 0, 0, 3.1, np.zeros(9)])
    ekf.correct(measurement(S, {5: -3.1}, {5: 1.0}))
    # ν = −3.1 − 3.1 + 2π = 0.0831853; yaw = 3.1 + ν/2 = 3.14159... (< π, no wrap)
    nu = -6.2 + 2 * math.pi
    assert ekf.state[5] == pytest.approx(3.1 + nu / 2)
    ekf.state[5] = 3.2
    ekf.wrap_state_angles()
    assert ekf.state[5] == pytest.approx(3.2 - 2 * math.pi)


def test_clamp_rotation_leaves_plus_minus_pi_unchanged():
    assert clamp_rotation(math.pi) == math.pi
    assert clamp_rotation(-math.pi) == -math.pi
    assert clamp_rotation(3 * math.pi + 0.5) == pytest.approx(math.pi + 0.5 - 2 * math.pi)


def test_first_measurement_initialises_from_raw_covariance_without_floor():
    ekf = Ekf(EkfParams())
    m = measurement(5 * S, {0: 1.5, 6: 2.0}, {0: 0.0, 6: 0.25})
    m.covariance[0, 6] = m.covariance[6, 0] = 0.01
    m.covariance[1, 1] = 7.0  # not flagged: not copied
    assert ekf.process_measurement(m) == "init"
    assert ekf.state[0] == 1.5 and ekf.state[6] == 2.0
    assert ekf.covariance[0, 0] == 0.0  # raw zero kept (no 1e-9 floor at init)
    assert ekf.covariance[0, 6] == 0.01 and ekf.covariance[6, 6] == 0.25
    assert ekf.covariance[1, 1] == 1e-9
    assert ekf.last_measurement_ns == 5 * S


def test_out_of_order_measurement_corrects_without_predict_and_keeps_time():
    ekf = initialised(covariance=np.eye(15), stamp_ns=2 * S)
    before = ekf.covariance.copy()
    outcome = ekf.process_measurement(measurement(1 * S, {0: 1.0}, {0: 1.0}))
    assert outcome == "accepted"
    assert ekf.last_measurement_ns == 2 * S
    assert ekf.state[0] == pytest.approx(0.5)  # no predict: P stayed 1 → K = ½
    assert ekf.covariance[1, 1] == before[1, 1]


def test_equal_stamp_corrects_only():
    ekf = initialised(covariance=np.eye(15), stamp_ns=2 * S)
    ekf.process_measurement(measurement(2 * S, {0: 1.0}, {0: 1.0}))
    assert ekf.covariance[1, 1] == 1.0  # no Δ·Q added
    assert ekf.last_measurement_ns == 2 * S


def test_control_decays_yaw_rate_without_cmd_vel():
    params = EkfParams(
        use_control=True,
        control_config=(False,) * 5 + (True,),
        control_timeout=0.2,
        deceleration_limits=(1.3, 0, 0, 0, 0, 4.5),
        deceleration_gains=(1.0, 0, 0, 0, 0, 1.0),
        acceleration_limits=(1.3, 0, 0, 0, 0, 3.4),
        acceleration_gains=(0.8, 0, 0, 0, 0, 0.9),
    )
    state = np.zeros(15)
    state[11] = 1.0
    ekf = initialised(params, state, np.zeros((15, 15)))
    ekf.predict(S + S // 10, S // 10)
    # no cmd_vel: timed out, u = 0 → decelerating: a = clamp(1.0·(0 − 1), ±4.5) = −1; vyaw += aΔ
    assert ekf.state[11] == pytest.approx(0.9)
    state[11] = 10.0
    ekf = initialised(params, state, np.zeros((15, 15)))
    ekf.predict(S + S // 10, S // 10)
    assert ekf.state[11] == pytest.approx(10.0 - 4.5 * 0.1)  # clamped at the deceleration limit


def test_control_acceleration_rules():
    # accelerating towards the set-point uses the acceleration gain/limit
    assert control_acceleration(0.0, 1.0, 1.3, 0.8, 1.3, 1.0) == pytest.approx(0.8)
    # opposite sign: set-point 0, decelerating, limited
    assert control_acceleration(2.0, -1.0, 1.3, 0.8, 1.3, 1.0) == pytest.approx(-1.3)


def test_control_replaces_acceleration_state_for_enabled_linear_axes():
    params = EkfParams(use_control=True, control_config=(True,) + (False,) * 5, control_timeout=10.0)
    state = np.zeros(15)
    state[12] = 5.0
    ekf = initialised(params, state, np.zeros((15, 15)))
    ekf.set_control([1.0, 0, 0, 0, 0, 0], S)
    ekf.predict(S + S // 10, S // 10)
    assert ekf.state[12] == pytest.approx(1.0)  # gain 1 × error 1, limit 1
    assert ekf.state[6] == pytest.approx(0.1)  # v⁺ = v + aΔ with the replaced a


# --- UKF ------------------------------------------------------------------------------------------------


def test_llt_lower_matches_cholesky_and_stops_like_eigen_on_indefinite_input():
    from sim2real_eval.judge.kernels import llt_lower

    rng = np.random.default_rng(3)
    a = rng.normal(size=(15, 15))
    spd = a @ a.T + np.eye(15)
    np.testing.assert_allclose(llt_lower(spd), np.linalg.cholesky(spd), rtol=1e-12, atol=1e-12)
    bad = np.diag([4.0, -1.0, 9.0])
    bad[2, 0] = 2.0
    out = llt_lower(bad)
    # column 0 done (√4, 2/2), column 1 fails: it and later columns keep the input's lower triangle
    np.testing.assert_allclose(out, [[2.0, 0, 0], [0.0, -1.0, 0], [1.0, 0.0, 9.0]])


def test_ukf_weights_hand_computed():
    from sim2real_eval.judge.kernels import ukf_weights

    lam, wm, wc = ukf_weights(0.001, 0.0, 2.0)
    assert lam == pytest.approx(1e-6 * 15 - 15)
    assert wm[0] == pytest.approx(lam / (15 + lam))
    assert wc[0] == pytest.approx(wm[0] + 1 - 1e-6 + 2)
    assert wm[1] == pytest.approx(1 / (2 * (15 + lam)))
    assert wm.sum() == pytest.approx(1.0)


def test_ukf_correct_equals_kalman_update_for_a_selection_measurement():
    from sim2real_eval.judge.filter import Ukf

    rng = np.random.default_rng(4)
    a = rng.normal(size=(15, 15)) * 0.1
    p = a @ a.T + np.eye(15) * 0.01
    state = rng.normal(size=15) * 0.1
    ukf = Ukf(EkfParams(filter_type="ukf", ukf_alpha=0.5))
    ukf.initialized, ukf.state, ukf.covariance = True, state.copy(), p.copy()
    ukf.uncorrected = False  # regenerate sigma points from (x, P)
    m = measurement(S, {0: 1.0, 6: -0.5}, {0: 0.2, 6: 0.3})
    assert ukf.correct(m)
    idx = [0, 6]
    s = p[np.ix_(idx, idx)] + np.diag([0.2, 0.3])
    k = p[:, idx] @ np.linalg.inv(s)
    # the unscented transform is exact for a linear (selection) measurement: same K, P − K·P_zz·Kᵀ
    np.testing.assert_allclose(ukf.state, state + k @ (np.array([1.0, -0.5]) - state[idx]), atol=1e-9)
    np.testing.assert_allclose(ukf.covariance, p - k @ p[np.ix_(idx, idx)] @ k.T, atol=1e-9)


def test_ukf_uses_zero_sigma_points_before_the_first_predict():
    from sim2real_eval.judge.filter import Ukf

    ukf = Ukf(EkfParams(filter_type="ukf"))
    ukf.process_measurement(measurement(S, {0: 1.0}, {0: 1.0}))  # initialisation
    ukf.process_measurement(
        measurement(S, {0: 3.0}, {0: 1.0})
    )  # Δ = 0: correct with the initial sigma points
    # zero sigma points: ẑ = 0, P_zz = 0, P_xz = Σc(0 − x)(0)ᵀ = 0 → K = 0: the state does not move
    assert ukf.state[0] == 1.0


def _inverted(matrix):
    from sim2real_eval.judge.kernels import invert

    n = len(matrix)
    a, out = np.zeros((15, 15)), np.zeros((15, 15))
    a[:n, :n] = matrix
    invert(a, out, n, np.zeros(15, np.int64), np.zeros(15, np.int64))
    return out[:n, :n]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 15), st.integers(0, 2**32 - 1))
def test_invert_matches_numpy_with_pivoting(n, seed):
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, n)) + np.diag(rng.uniform(0.1, 2.0, n))
    matrix = matrix[rng.permutation(n)]  # rows out of order: partial pivoting swaps them back
    assert np.allclose(_inverted(matrix) @ matrix, np.eye(n), atol=1e-9)


def test_invert_of_a_singular_matrix_is_not_finite_like_the_full_elimination():
    assert not np.isfinite(_inverted(np.array([[1.0, 2.0], [2.0, 4.0]]))).all()


def test_clearly_outside_gate_by_one_component_and_its_margin():
    from sim2real_eval.judge.kernels import GATE_MARGIN, clearly_outside_gate

    s = np.diag([0.5, 2.0])
    assert clearly_outside_gate(s, np.array([1.0, 0.0]), 2, 1.0)  # 1²/0.5 = 2 ≥ 1
    assert not clearly_outside_gate(s, np.array([0.0, 1.0]), 2, 1.0)  # 1²/2 = 0.5 < 1
    at = math.sqrt(0.5)  # ν₁²/S₁₁ = 1 exactly: within the margin, so the inverse decides
    assert not clearly_outside_gate(s, np.array([at, 0.0]), 2, 1.0)
    assert clearly_outside_gate(s, np.array([at * (1 + GATE_MARGIN), 0.0]), 2, 1.0)
    assert not clearly_outside_gate(s, np.array([10.0, 0.0]), 2, math.inf)  # no gate
    # d² = 2 from the correlation alone: no single component shows it, so the inverse decides
    correlated = np.array([[1.0, 0.9], [0.9, 1.0]])
    assert not clearly_outside_gate(correlated, np.array([0.6, -0.6]), 2, 1.0)
    # indefinite S (a covariance that is none once rotated): d² = νᵀS⁻¹ν = -1.5 passes upstream's gate,
    # though ν₁²/S₁₁ = 4 — the bound needs S positive definite, so the inverse decides
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert np.array([2.0, 0.0]) @ np.linalg.solve(indefinite, np.array([2.0, 0.0])) < 0
    assert not clearly_outside_gate(indefinite, np.array([2.0, 0.0]), 2, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(0, 2**32 - 1), st.floats(0.1, 3.0))
def test_clearly_outside_gate_implies_the_inverse_rejects(m, seed, threshold):
    from sim2real_eval.judge.kernels import clearly_outside_gate

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, m)) * rng.uniform(0.0, 1.0)
    s = a @ a.T + np.diag(rng.uniform(1e-6, 1.0, m))
    if rng.uniform() < 0.3:  # symmetric, not necessarily positive definite
        s = s - np.diag(rng.uniform(0.0, 2.0, m))
    innovation = rng.standard_normal(m) * rng.uniform(0.1, 5.0)
    if clearly_outside_gate(s, innovation, m, threshold):
        assert np.linalg.eigvalsh(s).min() > 0
        assert innovation @ np.linalg.solve(s, innovation) >= threshold**2
