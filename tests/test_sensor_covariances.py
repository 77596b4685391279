"""Presets that claim a covariance publish the variance of the error they add (within 10 %, per axis).

A preset *claims* a covariance when a consumer such as robot_localization is told to trust it:
- GPS: ``position_covariance_type`` KNOWN or DIAGONAL_KNOWN.  APPROXIMATED (HDOP / NMEA driver formulas,
  the paper's AirSim variants) and UNKNOWN (all zero: Chrono's) say the covariance is not the error's;
- IMU: a non-zero covariance on a channel (sensor_msgs/Imu: all zeros = "unknown", −1 = not provided).

Every preset file in config/sensors is checked (a new one is included by its file alone).  The error
is measured empirically, at rest: many seeded runs of 60 s (a run's length), variance of
(measured − true) per axis, pooled — so a covariance formula that is wrong fails here.
``REPRODUCED`` lists presets that reproduce another tool's published behaviour, including its dishonest
covariance; each of them is checked to be off, so the list cannot hide an honest preset or outlive a
fix.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from sim2real_eval import rotations
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.models import samples as S
from sim2real_eval.models.base import available_presets
from sim2real_eval.truth import GRAVITY, GroundTruth

TOLERANCE = 0.10
KNOWN_TYPES = (S.COVARIANCE_TYPE_KNOWN, S.COVARIANCE_TYPE_DIAGONAL_KNOWN)
REPRODUCED = {
    ("gps", "hector"): "hector_gazebo publishes drift² + noise² as DIAGONAL_KNOWN, while its drift (a "
                       "1 h Gauss-Markov process started at 0) adds almost nothing within a run",
    ("imu", "chrono_paper_demo"): "the paper's demo: the covariance is the white part only, and Chrono's "
                                  "accelerometer drift is a random walk (1.7 m/s² after 30 s)",
    ("imu", "car_mems"): "the car template's counterpart of chrono_paper_demo, with Chrono's drift model: "
                         "its covariance is the white part only, and the bias drift (b0 over t_b) adds "
                         "about 20 % on the gyroscope within a minute",
}
SECONDS = 60.0
# Runs per preset: a 10 s Gauss-Markov GPS error needs many; IMU noise is mostly white, but a bias random
# walk (reference_mems: 7 % of its error after a minute, expected) varies much from run to run.
RUNS = {"gps": 400, "imu": 40}


def at_rest(seconds: float, rate: float) -> GroundTruth:
    n = int(seconds * rate) + 2
    t = 10.0 + np.arange(n) / rate
    zeros = np.zeros((n, 3))
    return GroundTruth(t, zeros, np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), zeros, zeros,
                       np.tile([0.0, 0.0, GRAVITY], (n, 1)))


def measured_gps(name: str, runs: int, seconds: float = SECONDS):
    """({"position": (error variance per axis, published variance per axis)}, covariance type)."""
    errors = []
    for k in range(runs):
        model = load_gps_model(name, sensor_seed(7, name, k, "gps"))
        fixes = model.sample(at_rest(seconds, model.rate))
        ok = fixes.status != S.STATUS_NO_FIX
        errors.append(fixes.enu_error[ok])
    published = fixes.position_covariance[-1][[0, 4, 8]]
    return {"position": (np.var(np.concatenate(errors), axis=0), published)}, \
        int(fixes.position_covariance_type[-1])


def measured_imu(name: str, runs: int, seconds: float = SECONDS):
    """{channel: (error variance per axis, published variance per axis)}; only channels with a
    covariance (not −1)."""
    errors = {"linear_acceleration": [], "angular_velocity": [], "orientation": []}
    for k in range(runs):
        model = load_imu_model(name, sensor_seed(7, name, k, "imu"))
        truth = at_rest(seconds, model.rate)
        samples = model.sample(truth)
        true_q, true_w, true_f = model.sensor_frame(truth.interpolate(samples.stamp_ns * 1e-9))
        errors["linear_acceleration"].append(samples.linear_acceleration - true_f)
        errors["angular_velocity"].append(samples.angular_velocity - true_w)
        turn = rotations.multiply(rotations.conjugate(true_q), samples.orientation)
        errors["orientation"].append(rotations.to_rpy(turn))
    out = {}
    for channel, parts in errors.items():
        row = getattr(samples, f"{channel}_covariance")[-1]
        if row[0] != -1.0:
            out[channel] = (np.var(np.concatenate(parts), axis=0), row[[0, 4, 8]])
    return out


@functools.lru_cache(maxsize=None)
def claimed(kind: str, name: str):
    """{channel: (error variance, published variance)} of the channels whose covariance is a claim."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # paper_rw announces its instability
        if kind == "gps":
            channels, cov_type = measured_gps(name, RUNS["gps"] if name in CLAIMS_GPS else 2)
            return channels if cov_type in KNOWN_TYPES else {}
        return {channel: pair for channel, pair in measured_imu(name, RUNS["imu"]).items() if pair[1].any()}


def honest(error: np.ndarray, published: np.ndarray) -> bool:
    return bool(np.all(np.abs(published - error) <= TOLERANCE * error))


def gps_claims() -> set:
    out = set()
    for name in available_presets("gps"):
        fixes = load_gps_model(name, 0).sample(at_rest(2.0, 10.0))
        if len(fixes) and int(fixes.position_covariance_type[-1]) in KNOWN_TYPES:
            out.add(name)
    return out


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    CLAIMS_GPS = gps_claims()
PRESETS = [("gps", name) for name in available_presets("gps")] + \
          [("imu", name) for name in available_presets("imu")]


@pytest.mark.parametrize("kind, name", PRESETS, ids=[f"{k}/{n}" for k, n in PRESETS])
def test_a_claimed_covariance_is_the_error_variance(kind, name):
    channels = claimed(kind, name)
    if (kind, name) in REPRODUCED:
        assert channels, f"{kind}/{name} claims no covariance any more: remove it from REPRODUCED"
        off = [c for c, (error, published) in channels.items() if not honest(error, published)]
        assert off, f"{kind}/{name} is honest now: remove it from REPRODUCED"
        return
    for channel, (error, published) in channels.items():
        ratio = published / np.where(error > 0, error, np.nan)
        assert honest(error, published), (
            f"{kind}/{name} {channel}: published variance {published} vs measured error variance {error} "
            f"(ratio {ratio}): a covariance that does not match the noise misleads the judge")


def test_the_robot_defaults_claim_honest_covariances_on_every_channel():
    """What sensors.launch.py starts with no arguments: NavSatFix DIAGONAL_KNOWN, Imu with a covariance
    on acceleration, rates and orientation — all non-zero and all the error's variance."""
    from sim2real_eval.node.launch_plan import SENSORS_ARGUMENTS

    gps, imu = SENSORS_ARGUMENTS["gps_model"][0], SENSORS_ARGUMENTS["imu_model"][0]
    gps_channels = claimed("gps", gps)
    imu_channels = claimed("imu", imu)
    assert set(gps_channels) == {"position"}
    assert set(imu_channels) == {"linear_acceleration", "angular_velocity", "orientation"}
    for error, published in (*gps_channels.values(), *imu_channels.values()):
        assert (published > 0).all() and honest(error, published)


def test_the_paper_demo_presets_stay_one_argument_away():
    """The paper's demo pair is still there (gps_model:=ch_gauss imu_model:=chrono_paper_demo) and
    unchanged: zero GPS covariance of type UNKNOWN, white-only accelerometer covariance."""
    fixes = load_gps_model("ch_gauss", 0).sample(at_rest(2.0, 10.0))
    assert (fixes.position_covariance == 0).all()
    assert (fixes.position_covariance_type == S.COVARIANCE_TYPE_UNKNOWN).all()
    imu = load_imu_model("chrono_paper_demo", 0).sample(at_rest(1.0, 100.0))
    assert imu.linear_acceleration_covariance[0][[0, 4, 8]].tolist() == pytest.approx([0.09, 0.09, 1e-4])
    assert (imu.angular_velocity_covariance == 0).all() and (imu.orientation_covariance == 0).all()


# ------------------------------------------------------------------- the math behind "noise"
def test_gauss_markov_stationary_variance_hand_values():
    """gz: σ² + σ_b²·τ/2 at any rate; hector: σ² + (dt·√(2/τ)·σ_b)² / (1 − e^(−2dt/τ))."""
    from sim2real_eval.models.noise import GaussMarkovNoise

    gz = GaussMarkovNoise("gz", [0.003] * 3, [0.0] * 3, [0.0053666] * 3, 10.0, [0.0] * 3, sensor_seed(1))
    assert gz.stationary_variance(0.1) == pytest.approx([0.003**2 + 0.0053666**2 * 5.0] * 3, rel=1e-12)
    assert gz.stationary_variance(0.01) == pytest.approx(gz.stationary_variance(0.1), rel=1e-9)
    hector = GaussMarkovNoise("hector", [0.01] * 3, [0.0] * 3, [0.1] * 3, 3600.0, [0.0] * 3, sensor_seed(1))
    dt = 0.25
    expected = 0.01**2 + (dt * np.sqrt(2 / 3600.0) * 0.1) ** 2 / (1 - np.exp(-2 * dt / 3600.0))
    assert hector.stationary_variance(dt) == pytest.approx([expected] * 3, rel=1e-9)


def test_the_robot_gps_publishes_the_hand_computed_variance():
    fixes = load_gps_model("robot_rtk_f9p", 0).sample(at_rest(1.0, 10.0))
    horizontal, vertical = 0.003**2 + 0.0053666**2 * 5.0, 0.006**2 + 0.0107331**2 * 5.0
    assert fixes.position_covariance[0].tolist() == pytest.approx(
        [horizontal, 0, 0, 0, horizontal, 0, 0, 0, vertical], rel=1e-12)
    assert (fixes.position_covariance_type == S.COVARIANCE_TYPE_DIAGONAL_KNOWN).all()
    assert (fixes.status == S.STATUS_GBAS_FIX).all()


def test_a_stationary_start_is_honest_from_the_first_fix():
    from sim2real_eval.models.base import resolve_spec

    zero = np.zeros((1, 3))
    one = GroundTruth(np.array([10.0]), zero, np.array([[0.0, 0.0, 0.0, 1.0]]), zero, zero, zero)
    stamp = np.array([10_000_000_000], dtype=np.int64)

    def first_error(spec, k):  # the first fix of a run (measure: the truth is already at the stamp)
        return load_gps_model(spec, sensor_seed(1, k)).measure(stamp, one).enu_error[0]

    params, _source = resolve_spec("robot_rtk_f9p", "gps", {})
    first = np.array([first_error(params, k) for k in range(1500)])
    stationary = np.array([0.012**2, 0.012**2, 0.024**2])  # the bias alone (white noise adds 6 %)
    assert np.var(first, axis=0) == pytest.approx(stationary + [0.003**2, 0.003**2, 0.006**2], rel=0.1)
    still = {**params, "position_noise": {**params["position_noise"], "initial_bias": [0.0, 0.0, 0.0]}}
    zero_start = np.array([first_error(still, k) for k in range(300)])
    assert (np.var(zero_start, axis=0) < 0.2 * stationary).all()  # started at 0: far from stationary


@pytest.mark.parametrize("kind, spec, where", [
    ("gps", {"preset": "ch_rw", "covariance": {"model": "noise"}},
     "covariance.model: noise: position_noise 'random_walk' has no stationary variance"),
    ("imu", {"preset": "chrono_paper_demo", "reported_covariance": {"linear_acceleration": "noise"}},
     "reported_covariance.linear_acceleration: noise: this channel's bias is a random walk"),
    ("gps", {"preset": "robot_rtk_f9p", "position_noise": {"initial_bias": "random"}},
     "position_noise.initial_bias: unknown value 'random'"),
])
def test_noise_covariance_without_a_stationary_variance_is_refused(kind, spec, where):
    from sim2real_eval.errors import UserError

    load = load_gps_model if kind == "gps" else load_imu_model
    with pytest.raises(UserError, match=where.replace("(", r"\(").replace(")", r"\)")):
        load(spec, 0)
