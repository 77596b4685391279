"""GPS stamp lag and jitter (models.gps: stamp = epoch + lag + jitter·U[−1, 1]): hand-computed values,
statistics (hypothesis), streaming == batch, the reference generator's use of the same function, and
the car presets."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_models_gps import assert_identical, moving_truth, stream

from sim2real_eval.errors import UserError
from sim2real_eval.models import load_gps_model, sensor_seed
from sim2real_eval.models.gps import lagged_stamps


def test_lagged_stamps_by_hand():
    # docs/models.md: epoch 20.0 s, lag 0.08 s, jitter 0.01 s, u = 0.5 → 20.085 s
    assert lagged_stamps(np.array([20_000_000_000]), 0.08, 0.01, np.array([0.5]))[0] == 20_085_000_000
    # u = −1 and +1 are the extremes; no jitter → the lag alone; rounding to the nearest ns
    out = lagged_stamps(np.array([1, 2, 3]) * 1_000_000_000, 0.05, 0.002, np.array([-1.0, 1.0, 0.0]))
    assert list(out) == [1_048_000_000, 2_052_000_000, 3_050_000_000]
    assert lagged_stamps(np.array([7]), 1e-9 * 0.6, 0.0, np.array([0.3]))[0] == 8


def test_model_stamps_and_positions():
    truth = moving_truth()
    plain = load_gps_model("ch_gauss", sensor_seed(1, "gps")).sample(truth)
    lagged_model = load_gps_model("ch_gauss", sensor_seed(1, "gps"), stamp_lag=0.08, stamp_jitter=0.01)
    lagged = lagged_model.sample(truth)
    # same fixes (positions: the truth at the epoch + the same noise draws), later stamps
    assert np.array_equal(plain.latitude, lagged.latitude) and np.array_equal(plain.altitude, lagged.altitude)
    offset = (lagged.stamp_ns - plain.stamp_ns) / 1e9
    assert np.all(offset >= 0.07 - 1e-9) and np.all(offset <= 0.09 + 1e-9)
    assert np.array_equal(lagged.receive_ns, lagged.stamp_ns)  # latency 0
    assert lagged_model.parameters["stamp_lag"] == 0.08 and lagged_model.parameters["stamp_jitter"] == 0.01
    # absent when both are 0: earlier run.yaml files keep their content
    assert "stamp_lag" not in load_gps_model("ch_gauss").parameters


def test_streaming_equals_batch_with_jitter():
    truth = moving_truth()
    spec = {"preset": "ch_rw", "stamp_lag": 0.08, "stamp_jitter": 0.02, "latency": 0.005,
            "dropout_probability": 0.2}
    batch = load_gps_model(spec, sensor_seed(5, "gps")).sample(truth)
    streamed = stream(load_gps_model(spec, sensor_seed(5, "gps")), truth)
    assert len(batch) > 100
    assert_identical(batch, streamed)


def test_jitter_does_not_change_the_other_streams():
    truth = moving_truth()
    spec = {"preset": "ch_gauss", "dropout_probability": 0.3}
    a = load_gps_model(spec, sensor_seed(2, "gps")).sample(truth)
    b = load_gps_model({"preset": "ch_gauss", "dropout_probability": 0.3, "stamp_jitter": 0.03},
                       sensor_seed(2, "gps")).sample(truth)
    assert np.array_equal(a.latitude, b.latitude) and len(a) == len(b)


@pytest.mark.parametrize("key, value, message", [
    ("stamp_jitter", 0.05, "below half the fix period"),
    ("stamp_lag", -0.1, "stamp_lag"),
    ("stamp_jitter", float("nan"), "stamp_jitter"),
])
def test_bad_values_are_one_line_errors(key, value, message):
    with pytest.raises(UserError, match=message):
        load_gps_model("ch_gauss", **{key: value})


@settings(max_examples=25, deadline=None)
@given(lag=st.floats(0.0, 0.3), jitter=st.floats(0.0, 0.045), seed=st.integers(0, 2**32 - 1))
def test_stamp_offset_statistics(lag, jitter, seed):
    """stamp − epoch ~ U[lag − jitter, lag + jitter]: bounds, mean and std within sampling error;
    stamps strictly increase."""
    truth = moving_truth(60.0)
    epochs = load_gps_model("ideal").sample(truth).stamp_ns
    model = load_gps_model("ideal", sensor_seed(seed, "gps"), stamp_lag=lag, stamp_jitter=jitter)
    fixes = model.sample(truth)
    offset = (fixes.stamp_ns - epochs) / 1e9
    n = len(offset)
    assert np.all(offset >= lag - jitter - 1e-9) and np.all(offset <= lag + jitter + 1e-9)
    assert np.all(np.diff(fixes.stamp_ns) > 0)
    # mean of n uniforms: std jitter/√(3n); 5 σ (+ 1 ns rounding)
    assert abs(offset.mean() - lag) <= 5 * jitter / np.sqrt(3 * n) + 1e-9
    if jitter > 0.001:
        assert offset.std() == pytest.approx(jitter / np.sqrt(3), rel=0.2)


def test_reference_generator_uses_the_model_stamping():
    """reference._reference_gps stamps with models.gps.lagged_stamps (one implementation); the shipped
    bytes are checked by test_reference_generator."""
    import inspect

    from sim2real_eval import reference

    source = inspect.getsource(reference._reference_gps)
    assert "lagged_stamps(" in source and "np.round(latency" not in source


@pytest.mark.parametrize("preset", ["car_gauss", "car_rw", "car_airsim", "car_gauss_airsim", "car_rw_airsim"])
def test_car_presets_load_and_stream(preset):
    truth = moving_truth()
    batch = load_gps_model(preset, sensor_seed(3, preset, "gps")).sample(truth)
    assert len(batch) == len(load_gps_model(preset).default_stamps(truth))   # published from the first fix
    assert_identical(batch, stream(load_gps_model(preset, sensor_seed(3, preset, "gps")), truth))


def test_car_airsim_reports_a_constant_converged_covariance():
    fixes = load_gps_model("car_airsim").sample(moving_truth())
    sigma = np.sqrt(fixes.position_covariance[:, 0])
    assert np.allclose(sigma, 0.85 * 3.0)          # H∞·epe from the first fix: no decay from 100


def test_car_rw_moves_faster_than_ch_rw():
    truth = moving_truth(30.0)
    speeds = {}
    for preset in ("ch_rw", "car_rw"):
        error = load_gps_model(preset, sensor_seed(0, "gps")).sample(truth).enu_error
        speeds[preset] = np.abs(np.diff(error, axis=0) / 0.1).max()
    assert speeds["ch_rw"] <= 0.016 + 1e-9 < speeds["car_rw"] <= 0.1 + 1e-9
