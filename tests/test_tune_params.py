"""tune: parameter names, ranges and application (pure functions, no runs)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim2real_eval.errors import UserError
from sim2real_eval.studies.tune_params import apply_params, parse_params, tunable_names

MODELS = {
    "gps": {"rate": 10.0, "datum": [43.07, -89.4, 260.0], "geodesy": "wgs84",
            "position_noise": {"model": "gaussian", "sigma": 0.03},
            "covariance": {"model": "hdop", "h0": 100.0, "tau": 12.4}},
    "imu": {"rate": 100.0, "accelerometer": {"model": "chrono_drift", "sigma": [0.3, 0.3, 0.01], "b0": 0.1},
            "gyroscope": {"model": "none", "enabled": True}},
}


def test_tunable_names_are_numeric_leaves():
    names = tunable_names(MODELS)
    assert "gps.position_noise.sigma" in names and "imu.accelerometer.sigma" in names
    assert "gps.datum" in names and "gps.covariance.tau" in names
    assert "gps.geodesy" not in names and "imu.gyroscope.enabled" not in names  # strings, booleans


def test_suffix_names_and_log_ranges():
    ranges = parse_params("gps.sigma=0.01:0.1, imu.b0=1e-4:1:log", MODELS)
    assert [(r.full_name, r.low, r.high, r.log) for r in ranges] == [
        ("gps.position_noise.sigma", 0.01, 0.1, False), ("imu.accelerometer.b0", 1e-4, 1.0, True)]


@pytest.mark.parametrize("text, message", [
    ("gps.v_max=0.005:0.05", "unknown parameter 'gps.v_max'; valid names: gps.rate"),
    ("gps.sigma=0.1:0.1", "empty range 0.1:0.1"),
    ("gps.sigma=0.2:0.1", "empty range 0.2:0.1"),
    ("gps.tau=1:2", "unknown parameter"),            # checked against a GPS model with no parameters
    ("gps.sigma", "not NAME=LOW:HIGH"),
    ("gps.sigma=a:1", "'a' is not a number"),
    ("imu.b0=0:1:log", "log range needs LOW > 0"),
    ("", "give at least one"),
    ("gps.sigma=0:1,gps.position_noise.sigma=0:2", "given twice"),
    ("imu.sigma=0:1", "ambiguous"),
])
def test_bad_params_are_one_line_errors_listing_valid_names(text, message):
    models = MODELS
    if text == "gps.tau=1:2":
        models = {"gps": {}, "imu": MODELS["imu"]}
    elif text == "imu.sigma=0:1":
        models = {"gps": MODELS["gps"],
                  "imu": {"accelerometer": {"sigma": 1.0}, "gyroscope": {"sigma": 2.0}}}
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_params(text, models)
    assert "\n" not in str(info.value)


@given(st.floats(1e-3, 10.0), st.floats(1e-3, 10.0))
def test_apply_sets_every_axis_and_leaves_the_input_alone(sigma, b0):
    ranges = parse_params("gps.sigma=1e-3:10,imu.accelerometer.sigma=1e-3:10,imu.b0=1e-3:10", MODELS)
    out = apply_params(MODELS, ranges, {"gps.position_noise.sigma": sigma, "imu.accelerometer.sigma": sigma,
                                        "imu.accelerometer.b0": b0})
    assert out["gps"]["position_noise"]["sigma"] == sigma
    assert out["imu"]["accelerometer"]["sigma"] == [sigma] * 3
    assert out["imu"]["accelerometer"]["b0"] == b0
    assert MODELS["imu"]["accelerometer"]["sigma"] == [0.3, 0.3, 0.01]


def test_tune_without_optuna_is_one_line(monkeypatch, tmp_path, capsys):
    """Without the [all] extra, tune says what to install (was: a ModuleNotFoundError traceback)."""
    import sys

    from sim2real_eval.cli import main

    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` raises ImportError
    code = main(["tune", "--study", "tiny.yaml", "--real", str(tmp_path), "--params", "gps.sigma=0.01:0.1",
                 "--out", str(tmp_path / "tuned")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "pip install 'sim2real_eval[all]'" in err, err
    assert not (tmp_path / "tuned").exists()


def test_a_categorical_range_sets_its_choice_and_searches_as_optuna_categorical():
    """``fit``'s reported-covariance model: a choice, not a number (apply_params keeps the string; the
    search's distribution is Optuna's categorical one over the choices)."""
    from optuna.distributions import CategoricalDistribution

    from sim2real_eval.studies.tune import _distributions
    from sim2real_eval.studies.tune_params import ParamRange

    choice = ParamRange("cov", ("gps", "covariance", "model"), 0.0, 1.0, choices=("diagonal", "zeros"))
    models = {"gps": {"covariance": {"model": "diagonal"}}, "imu": {}}
    assert apply_params(models, [choice], {"gps.covariance.model": "zeros"})["gps"]["covariance"] == {
        "model": "zeros"}
    assert models["gps"]["covariance"]["model"] == "diagonal"  # a copy
    expected = CategoricalDistribution(["diagonal", "zeros"])
    assert _distributions([choice]) == {"gps.covariance.model": expected}
