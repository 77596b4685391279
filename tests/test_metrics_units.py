"""Equations against hand-computed values, and statistical invariants (hypothesis)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim2real_eval.errors import UserError
from sim2real_eval.metrics import (
    RunRecord,
    RunScore,
    ScoreOptions,
    average_ranks,
    bootstrap_intervals,
    common_timeline,
    moving_average,
    permutation_pvalues,
    resolve_speed,
    rmse,
    score_run,
    score_study,
    speed_from_velocity,
    vepd,
    wasserstein,
    wiener_entropy,
)

FLOOR = 1e-10


# --- per run -------------------------------------------------------------------------------------

def test_moving_average_window_two_is_pairwise_mean():
    assert moving_average(np.array([1.0, 2.0, 4.0, 8.0]), 2).tolist() == [1.5, 3.0, 6.0]
    assert moving_average(np.array([1.0, 2.0, 6.0]), 3).tolist() == [3.0]


def test_common_timeline_stops_before_the_shorter_series():
    t = common_timeline(np.array([0.0, 1.0]), np.array([0.0, 0.5]), 4.0)
    assert t.tolist() == [0.0, 0.25]          # 0.5 itself is excluded (np.arange)
    # the last *written* time decides, as in the reference
    assert len(common_timeline(np.array([0.0, 2.0]), np.array([0.0, 1.0]), 15.0)) == 15


def test_rmse_hand_value():
    assert rmse(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == pytest.approx(math.sqrt(2.0))


def test_wiener_entropy_hand_values():
    # impulse: |FFT| = [1, 1, 1, 1], flat -> S = (1 + floor) / 1
    assert wiener_entropy(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(1.0 + FLOOR, rel=1e-12)
    # [1, 2]: FFT = [3, -1] -> |F| = [3, 1]; S = sqrt((3 + f)(1 + f)) / 2
    expected = math.sqrt((3 + FLOOR) * (1 + FLOOR)) / 2
    assert wiener_entropy(np.array([1.0, 2.0])) == pytest.approx(expected, rel=1e-12)
    # constant: |F| = [4, 0, 0, 0] -> S = ((4 + f) f^3)^(1/4) / 1, the floor matters
    expected = ((4 + FLOOR) * FLOOR**3) ** 0.25
    assert wiener_entropy(np.ones(4)) == pytest.approx(expected, rel=1e-9)
    # one-sided: rFFT of an impulse of length 4 has 3 bins of magnitude 1
    assert wiener_entropy(np.array([1.0, 0.0, 0.0, 0.0]), kind="one_sided") == pytest.approx(1 + FLOOR)


def test_wiener_entropy_of_white_noise_is_high_and_of_a_sine_low():
    rng = np.random.default_rng(1)
    noise = wiener_entropy(rng.standard_normal(2048))
    sine = wiener_entropy(np.sin(2 * np.pi * 100 / 2048 * np.arange(2048)))   # bin-centred: 2 peaks
    assert noise > 0.7 > 0.1 > sine
    assert 0.0 < wiener_entropy(rng.standard_normal(600), kind="welch") <= 1.0


def test_score_run_constant_offset_on_linear_series_gives_offset_rmse():
    # linear truth, estimate = truth + 0.3 m/s; a linear series survives smoothing and interpolation
    t = np.arange(-1.0, 10.0, 0.03)
    score = score_run("run", t, 0.5 * t + 1.3, t, 0.5 * t + 1.0, ScoreOptions())
    assert score.rmse == pytest.approx(0.3, abs=1e-12)
    assert score.D == pytest.approx(abs(score.S_est - score.S_gt))


@pytest.mark.parametrize("mutate, message", [
    (lambda a: a.update(v_est=np.where(np.arange(len(a["v_est"])) == 5, np.nan, a["v_est"])), "NaN"),
    (lambda a: a.update(t_est=a["t_est"] * 0.05, t_gt=a["t_gt"] * 0.05), "overlap for only"),
    (lambda a: a.update(t_est=a["t_est"] + 4.5), "overlap for only 0.450 s"),
    (lambda a: a.update(t_est=a["t_est"] + 100.0), "do not overlap"),
    (lambda a: a.update(v_gt=a["v_gt"][:-3]), "times but"),
    (lambda a: a.update(t_gt=a["t_gt"][::-1].copy()), "backwards"),
])
def test_score_run_rejects_defects_with_the_run_name(mutate, message):
    t = np.arange(0.0, 5.0, 0.05)
    arrays = {"t_est": t.copy(), "v_est": 1 + 0.1 * np.sin(t), "t_gt": t.copy(), "v_gt": 1 + 0 * t}
    mutate(arrays)
    with pytest.raises(UserError, match=message) as info:
        score_run("Sim/x/line_3.csv", arrays["t_est"], arrays["v_est"], arrays["t_gt"], arrays["v_gt"],
                  ScoreOptions())
    assert "Sim/x/line_3.csv" in str(info.value) and "\n" not in str(info.value)


def test_speed_definitions():
    v = np.array([[3.0, -4.0, 1.0]])
    assert speed_from_velocity(v, "horizontal").tolist() == [5.0]
    assert speed_from_velocity(v, "neg_x").tolist() == [-3.0]
    assert speed_from_velocity(v, "abs_y").tolist() == [4.0]
    yaw90 = np.array([[0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]])
    # body +y rotated by +90 deg yaw points to world -x
    assert speed_from_velocity(np.array([[0.0, 1.0, 0.0]]), "world_x", yaw90)[0] == pytest.approx(-1.0)
    with pytest.raises(UserError, match="Odometry"):
        speed_from_velocity(v, "world_x", None, "bag")
    assert resolve_speed("paper", "real", "x") == ("abs_y", "abs_x")
    assert resolve_speed("paper", "sim", "x") == ("neg_x", "world_x")
    with pytest.raises(UserError, match="unknown speed"):
        resolve_speed("diagonal", "sim", "manifest.yaml: runs[0].speed")


# --- study ---------------------------------------------------------------------------------------

def test_wasserstein_vepd_and_ranks_hand_values():
    assert wasserstein([0.0, 1.0], [1.0, 2.0]) == pytest.approx(1.0)
    assert wasserstein([0.0], [0.0, 3.0]) == pytest.approx(1.5)
    assert vepd(0.2, 0.4) == pytest.approx(0.3)
    assert vepd(3.0, 5.0) == 4.0                       # unbounded: never clipped to 1
    assert average_ranks([0.3, 0.1, 0.3, 0.2]).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert average_ranks([0.5, 0.5, 0.5]).tolist() == [2.0, 2.0, 2.0]


def test_average_ranks_match_scipy_rankdata():
    """average_ranks is numpy only (no scipy.stats import in the score stage); same ranks as scipy's,
    ties and NaN included."""
    from scipy import stats

    rng = np.random.default_rng(3)
    for trial in range(500):
        values = rng.integers(0, 4, rng.integers(0, 9)) * 0.1 if trial % 2 else rng.random(rng.integers(0, 9))
        if trial % 5 == 0 and len(values):
            values[rng.integers(0, len(values))] = np.nan
        expected = stats.rankdata(values, method="average")
        assert np.array_equal(average_ranks(values), expected, equal_nan=True)


def _records(real_e, real_d, sims, scenario_of=lambda i: ("line", "sine")[i % 2]):
    """RunRecords: real runs, then {variant: (E list, D list)}."""
    out = []
    for i, (e, d) in enumerate(zip(real_e, real_d)):
        out.append(RunRecord("real", "real", scenario_of(i), i, f"r{i}", RunScore(e, 0.5, 0.5, d)))
    for variant, (es, ds) in sims.items():
        for i, (e, d) in enumerate(zip(es, ds)):
            score = RunScore(e, 0.5, 0.5, d)
            out.append(RunRecord("sim", variant, scenario_of(i), i, f"{variant}{i}", score))
    return out


samples = st.lists(st.floats(0.0, 5.0, allow_nan=False), min_size=4, max_size=16)


@given(a=samples, b=samples)
def test_wasserstein_is_zero_on_itself_and_symmetric(a, b):
    assert wasserstein(a, a) == 0.0
    assert wasserstein(a, b) == pytest.approx(wasserstein(b, a), abs=1e-12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=samples, d=samples, shift=st.floats(-2.0, 2.0), data=st.data())
def test_vepd_invariant_to_run_order_and_shift_gives_abs_c(e, d, shift, data):
    n = min(len(e), len(d))
    e, d = e[:n], d[:n]
    options = ScoreOptions(bootstrap=0, permutations=0)
    # real E = sim E + c, D equal: W1 = |c|, W2 = 0
    records = _records([x + shift for x in e], d, {"v": (e, d)})
    result = score_study(records, options)
    assert result.combined["v"]["W1"] == pytest.approx(abs(shift), abs=1e-9)
    assert result.combined["v"]["W2"] == pytest.approx(0.0, abs=1e-12)
    assert result.combined["v"]["VEPD"] == pytest.approx(abs(shift) / 2, abs=1e-9)
    shuffled = data.draw(st.permutations(records))
    again = score_study(shuffled, options)
    assert again.combined == result.combined
    assert again.per_scenario == result.per_scenario


def test_bootstrap_and_permutation_are_seeded_and_sane():
    rng = np.random.default_rng(3)
    real = [rng.normal(1.0, 0.1, (8, 2))]
    sim = [rng.normal(1.4, 0.1, (8, 2))]
    seq = np.random.SeedSequence(5)
    ci = bootstrap_intervals(real, sim, 200, seq)
    assert ci == bootstrap_intervals(real, sim, 200, np.random.SeedSequence(5))
    assert ci != bootstrap_intervals(real, sim, 200, np.random.SeedSequence(6))
    for lo, hi in ci.values():
        assert lo <= hi
    p = permutation_pvalues(real, sim, 200, seq)
    assert p["p_W1"] < 0.02                          # clearly different means
    same = permutation_pvalues(real, [real[0].copy()], 100, seq)
    assert same == {"p_W1": 1.0, "p_W2": 1.0, "p_VEPD": 1.0}   # observed distance 0: every shuffle >= it


def test_study_statistics_do_not_depend_on_other_variants():
    rng = np.random.default_rng(4)
    base = _records(rng.random(8), rng.random(8), {"a": (rng.random(8), rng.random(8))})
    extra = _records([], [], {"b": (rng.random(8), rng.random(8))})
    options = ScoreOptions(bootstrap=50, permutations=50, seed=9)
    one = score_study(base, options)
    two = score_study(base + extra, options)
    assert one.statistics["combined"]["a"] == two.statistics["combined"]["a"]
    assert one.combined["a"] == two.combined["a"]


@pytest.mark.parametrize("build, message", [
    (lambda: _records([1, 2, 3, 4], [1, 2, 3, 4], {"v": ([1, 2], [1, 2])},
                      scenario_of=lambda i: ("line", "line", "sine", "sine")[i]), "scenario sets differ"),
    (lambda: _records([1, 2, 3], [1, 2, 3], {"v": ([1, 2, 3], [1, 2, 3])}), "only 1 run"),
    (lambda: _records([], [], {"v": ([1, 2, 3, 4], [1, 2, 3, 4])}), "no real runs"),
    (lambda: _records([1, 2, 3, 4], [1, 2, 3, 4], {}), "no sim runs"),
])
def test_study_shape_errors(build, message):
    with pytest.raises(UserError, match=message):
        score_study(build(), ScoreOptions(bootstrap=0, permutations=0))


def test_excluded_scenarios_are_not_scored():
    records = _records([1, 2, 3, 4], [1, 2, 3, 4], {"v": ([1, 2, 3, 4], [1, 2, 3, 4])},
                       scenario_of=lambda i: ("line", "rest")[i % 2])
    result = score_study(records, ScoreOptions(bootstrap=0, permutations=0))
    assert result.scenarios == ["line"]
    assert result.combined["v"]["n_real"] == 2


def test_parallel_statistics_equal_serial():
    rng = np.random.default_rng(8)
    records = _records(rng.random(8), rng.random(8), {"a": (rng.random(8), rng.random(8)),
                                                      "b": (rng.random(8), rng.random(8))})
    options = ScoreOptions(bootstrap=40, permutations=40, seed=3)
    serial = score_study(records, options)
    parallel = score_study(records, options, workers=2)
    assert parallel.statistics == serial.statistics
    assert parallel.combined == serial.combined and parallel.per_scenario == serial.per_scenario
