"""Models never emit a non-finite value silently, and refuse rates no sensor has (issue 15, items 4, 13)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from sim2real_eval.errors import DataWarning, UserError
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.models.base import MAX_RATE_HZ
from sim2real_eval.models.noise import PaperRandomWalkNoise
from sim2real_eval.models.noise_config import DIVERGED_POSITION_ERROR_M
from sim2real_eval.models.samples import STATUS_NO_FIX
from sim2real_eval.truth import GroundTruth

UNIT_STEP = {"preset": "paper_rw", "position_noise": {"integration": "unit_step"}}


def still_truth(duration: float, start: float = 10.0, rate: float = 50.0) -> GroundTruth:
    t = start + np.arange(int(round(duration * rate)) + 1) / rate
    n = len(t)
    return GroundTruth(t, np.zeros((n, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), np.zeros((n, 3)),
                       np.zeros((n, 3)), np.tile([0.0, 0.0, 9.80665], (n, 1)))


def test_unit_step_paper_walk_that_diverges_is_refused_by_name():
    with pytest.raises(UserError, match=r"position_noise\.p_max: 0\.06 m .*diverge.*x14\.6.*p_max >= 0\.25"):
        load_gps_model(UNIT_STEP, sensor_seed(0, "x", 0, "gps"))
    # at the stability limit it is accepted and stays finite over a long run
    model = load_gps_model({"preset": "paper_rw", "position_noise": {"integration": "unit_step",
                                                                     "p_max": 0.25}}, 0)
    fixes = model.sample(still_truth(60.0))
    assert np.isfinite(fixes.latitude).all() and (fixes.status != STATUS_NO_FIX).all()


def test_growth_per_sample_matches_the_hand_computed_eigenvalues():
    # kinematic: det = 1 + dt²/(2 p_max), complex pair → |λ| = √det
    growth = PaperRandomWalkNoise.growth_per_sample(0.06, "kinematic", 0.1)
    assert growth == pytest.approx(np.sqrt(1 + 0.01 / 0.12))
    # unit_step: λ² − (2 − 1/p_max)λ + 1 = 0; trace −14.67 → |λ| = (14.67 + √(14.67² − 4))/2
    trace = 2 - 1 / 0.06
    assert PaperRandomWalkNoise.growth_per_sample(0.06, "unit_step", 0.1) == pytest.approx(
        (abs(trace) + np.sqrt(trace**2 - 4)) / 2)
    assert PaperRandomWalkNoise.growth_per_sample(0.25, "unit_step", 0.1) == pytest.approx(1.0)


def test_diverging_kinematic_walk_warns_and_publishes_no_fix_not_nan_fixes():
    truth = still_truth(90.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_gps_model("paper_rw", sensor_seed(0, "paper_rw", "rest", 0, "gps"))
        fixes = model.sample(truth)
    messages = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert any("unstable" in m and "e-fold every 2.5 s" in m for m in messages)  # at load time
    assert any("paper_rw.yaml: position_noise diverged at stamp" in m for m in messages)  # at run time
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]  # no raw numpy noise
    finite = np.isfinite(fixes.latitude) & np.isfinite(fixes.longitude) & np.isfinite(fixes.altitude)
    error = np.linalg.norm(fixes.enu_error, axis=1)
    # every fix is either a finite fix within the limit, or NO_FIX (NaN position, as navsat expects)
    assert (finite == (fixes.status != STATUS_NO_FIX)).all()
    assert (error[finite] <= DIVERGED_POSITION_ERROR_M).all()
    assert model.diverged_fixes == int((~finite).sum()) > 0
    assert finite[0] and not finite[-1]


def test_divergence_is_the_same_streaming_and_batch():
    truth = still_truth(80.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        batch = load_gps_model("paper_rw", 5).sample(truth)
        stream = load_gps_model("paper_rw", 5)
        rows = [stream.step(int(s), truth.interpolate(np.array([s * 1e-9]))) for s in batch.stamp_ns]
    assert np.array_equal(np.concatenate([r.latitude for r in rows]), batch.latitude, equal_nan=True)
    assert np.array_equal(np.concatenate([r.status for r in rows]), batch.status)
    assert stream.diverged_fixes == int((batch.status == STATUS_NO_FIX).sum()) > 0


@pytest.mark.parametrize("kind, load", [("gps", load_gps_model), ("imu", load_imu_model)])
def test_rates_above_the_limit_are_refused_with_the_limit(kind, load):
    limit = MAX_RATE_HZ[kind]
    with pytest.raises(UserError, match=rf"rate: 1e\+06 Hz is above the {limit:g} Hz limit"):
        load({"rate": 1000000.0}, 0)
    assert load({"rate": limit}, 0).rate == limit


def test_chrono_walk_substep_rate_is_bounded():
    with pytest.raises(UserError, match="noise_rate: 1e\\+09 Hz is above the 10000 Hz limit"):
        load_gps_model({"preset": "ch_rw", "position_noise": {"noise_rate": 1e9}}, 0)


def test_imu_overflowing_parameters_are_refused_by_name():
    for sigma in (1e160, 1e308):
        with pytest.raises(UserError, match="linear_acceleration: the variance overflows"):
            load_imu_model({"accelerometer": {"model": "gaussian", "sigma": sigma}}, 0)
    spec = {"accelerometer": {"model": "gaussian", "sigma": 1e308},
            "reported_covariance": {"linear_acceleration": "not_provided"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(UserError, match="accelerometer: the model produced a non-finite value at stamp"):
            load_imu_model(spec, 0).sample(still_truth(2.0))


def test_gps_overflowing_covariance_is_refused_by_name():
    spec = {"covariance": {"model": "diagonal", "sigma": 1e200}}
    with pytest.raises(UserError, match="covariance: the reported covariance overflows"):
        load_gps_model(spec, 0).sample(still_truth(2.0))
