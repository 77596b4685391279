"""IMU models (Chrono drift, AirSim, MAVS, magnetometer, mounting): equations, statistics, streaming."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import rotations
from sim2real_eval.errors import UserError
from sim2real_eval.models import ImuSamples, load_imu_model, sensor_seed
from sim2real_eval.models.noise import AirSimNoise, ChronoDriftNoise, MavsNoise, round_half_away
from sim2real_eval.models.seeding import generator
from sim2real_eval.truth import GRAVITY, GroundTruth

IMU_PRESETS = ["chrono_paper_demo", "chrono_paper_text", "airsim_imu", "mavs_mems", "ideal", "robot_ahrs_mti",
               "carla_leaderboard", "gz_imu"]
ART_MOUNTING = [0.0, -1.5708, 3.1416]  # base_link -> imu: roll 0, pitch −1.5708, yaw 3.1416


def still_truth(duration=5.0, yaw=0.0, rate=100.0) -> GroundTruth:
    t = 10.0 + np.arange(int(round(duration * rate)) + 1) / rate
    n = len(t)
    q = np.tile(rotations.from_yaw(yaw), (n, 1))
    return GroundTruth(
        t, np.zeros((n, 3)), q, np.zeros((n, 3)), np.zeros((n, 3)), np.tile([0.0, 0.0, GRAVITY], (n, 1))
    )


def turning_truth(duration=10.0) -> GroundTruth:
    t = 10.0 + np.arange(int(duration * 100) + 1) / 100.0
    yaw = 0.3 * (t - 10.0)
    pos = np.stack([np.sin(yaw), 1 - np.cos(yaw), np.zeros_like(t)], axis=-1) / 0.3
    vel = np.stack([np.cos(yaw), np.sin(yaw), np.zeros_like(t)], axis=-1)
    return GroundTruth.from_kinematics(t, pos, rotations.from_yaw(yaw), vel)


def stream(model, truth, stamps=None) -> ImuSamples:
    stamps = model.default_stamps(truth) if stamps is None else stamps
    return ImuSamples.concatenate([model.step(int(s), truth.interpolate([s / 1e9])) for s in stamps])


def assert_identical(a, b):
    da, db = a.as_dict(), b.as_dict()
    assert da.keys() == db.keys()
    for key in da:
        assert da[key].dtype == db[key].dtype, key
        assert np.array_equal(da[key], db[key]), key


# ---------------------------------------------------------------- contract


@pytest.mark.parametrize("mounting", [None, ART_MOUNTING])
@pytest.mark.parametrize("preset", IMU_PRESETS)
def test_streaming_equals_batch_bit_identical(preset, mounting):
    truth = turning_truth()
    overrides = {"mounting_rpy": mounting} if mounting else {}
    seed = sensor_seed(3, preset, "circle", 0, "imu")
    model = load_imu_model(preset, seed, **overrides)
    batch = model.sample(truth)
    streamed = stream(load_imu_model(preset, seed, **overrides), truth)
    assert len(batch) == int(round(10 * model.rate)) + 1  # 10 s of truth (CARLA's preset: 20 Hz)
    assert_identical(batch, streamed)


def test_streaming_equals_batch_irregular_stamps_all_channels():
    """A real bag's jittery stamps; Gauss–Markov, orientation noise and magnetometer all on."""
    truth = turning_truth()
    stamps = 10_000_000_000 + np.cumsum(np.random.default_rng(1).integers(5_000_000, 15_000_000, 900))
    stamps = stamps[stamps <= 20_000_000_000]
    spec = {
        "preset": "mavs_mems",
        "accelerometer": {"model": "gauss_markov", "sigma": 0.1, "bias_sigma": 0.01, "tau": 50.0},
        "gyroscope": {"model": "airsim", "noise_density": 1e-3, "bias_stability": 1e-4, "tau": 100.0},
        "orientation": {"sigma": [0.01, 0.01, 0.02]},
    }
    batch = load_imu_model(spec, 5).sample(truth, stamps)
    assert_identical(batch, stream(load_imu_model(spec, 5), truth, stamps))
    assert batch.stamp_ns.tolist() == stamps.tolist()


def test_fields_defaults_and_rate():
    imu = load_imu_model("chrono_paper_demo", 0).sample(still_truth(2.0))
    assert imu.frame_id == "imu" and len(imu) == 201
    assert (np.diff(imu.stamp_ns) == 10_000_000).all() and (imu.receive_ns == imu.stamp_ns).all()
    for name in ("orientation_covariance", "angular_velocity_covariance", "linear_acceleration_covariance"):
        assert getattr(imu, name).shape == (201, 9)
    assert imu.magnetic_field is None
    assert len(load_imu_model("ideal", 0, rate=250.0).sample(still_truth(2.0))) == 501


# ---------------------------------------------------------------- REP-145 frames


@settings(max_examples=20, deadline=None)
@given(yaw=st.floats(-math.pi, math.pi))
def test_ideal_imu_at_rest_reads_plus_g_on_z(yaw):
    imu = load_imu_model("ideal", 0).sample(still_truth(1.0, yaw))
    np.testing.assert_allclose(
        imu.linear_acceleration, np.tile([0.0, 0.0, GRAVITY], (len(imu), 1)), atol=1e-12
    )
    np.testing.assert_allclose(imu.angular_velocity, 0.0, atol=1e-12)
    np.testing.assert_allclose(rotations.yaw_of(imu.orientation), yaw, atol=1e-9)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), preset=st.sampled_from(["chrono_paper_text", "airsim_imu"]))
def test_noisy_imu_at_rest_reads_plus_g_on_z_on_average(seed, preset):
    imu = load_imu_model(preset, seed).sample(still_truth(20.0))
    mean = imu.linear_acceleration.mean(axis=0)
    assert mean == pytest.approx([0.0, 0.0, GRAVITY], abs=0.05)


def test_art_mounting_puts_gravity_on_sensor_x():
    """base_link→imu yaw π, pitch −π/2: the sensor x axis points up, so +g appears on x."""
    imu = load_imu_model("ideal", 0, mounting_rpy=ART_MOUNTING).sample(still_truth(1.0))
    np.testing.assert_allclose(imu.linear_acceleration[0], [GRAVITY, 0.0, 0.0], atol=1e-3)
    # Orientation is the SENSOR frame in ENU: its x axis is world up.
    np.testing.assert_allclose(rotations.rotate(imu.orientation[0], [1.0, 0.0, 0.0]), [0, 0, 1], atol=1e-4)
    # The sensor x axis is base_link z, so the car's yaw rate appears on sensor +x.
    truth = turning_truth(2.0)
    rates = load_imu_model("ideal", 0, mounting_rpy=ART_MOUNTING).sample(truth).angular_velocity
    np.testing.assert_allclose(rates[:, 0], 0.3, atol=1e-3)
    np.testing.assert_allclose(rates[:, 1:], 0.0, atol=1e-3)


def test_turning_specific_force_is_centripetal_in_body_frame():
    imu = load_imu_model("ideal", 0).sample(turning_truth())
    middle = imu.linear_acceleration[100:-100]
    np.testing.assert_allclose(middle[:, 1], 0.3, atol=1e-3)  # v²/R = v·ω = 1 · 0.3 to the left
    np.testing.assert_allclose(middle[:, 0], 0.0, atol=1e-3)


# ---------------------------------------------------------------- Chrono drift


def test_chrono_drift_hand_computed():
    seq = np.random.SeedSequence(21)
    noise = ChronoDriftNoise([0.3, 0.3, 0.01], [0.1, 0.0, 0.0], 0.1, 0.1, 100.0, [0.0] * 3, seq)
    za = generator(seq, 0).standard_normal((2, 3))
    zb = generator(seq, 1).standard_normal((2, 3))
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = noise.apply(x, np.full(2, 0.01))
    step = 0.1 * math.sqrt(0.01 / 0.1)  # b0·√(dt/t_b), dt = 1/rate
    b1 = step * zb[0]
    b2 = b1 + step * zb[1]
    np.testing.assert_allclose(out[0], x[0] + [0.1, 0.0, 0.0] + [0.3, 0.3, 0.01] * za[0] + b1, rtol=1e-12)
    np.testing.assert_allclose(out[1], x[1] + [0.1, 0.0, 0.0] + [0.3, 0.3, 0.01] * za[1] + b2, rtol=1e-12)
    # dt is the constant 1/rate, whatever the actual sample interval (Chrono).
    other = ChronoDriftNoise([0.3, 0.3, 0.01], [0.1, 0.0, 0.0], 0.1, 0.1, 100.0, [0.0] * 3, seq)
    np.testing.assert_array_equal(other.apply(x, np.array([0.5, 0.02])), out)


@settings(max_examples=5, deadline=None)
@given(
    b0=st.floats(1e-4, 1.0),
    t_b=st.floats(0.01, 10.0),
    rate=st.sampled_from([50.0, 100.0, 200.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_chrono_drift_bias_variance_grows_linearly(b0, t_b, rate, seed):
    runs, n = 300, 100
    biases = np.empty((runs, n, 3))
    root = np.random.SeedSequence(seed)
    for r, seq in enumerate(root.spawn(runs)):
        noise = ChronoDriftNoise([0.0] * 3, [0.0] * 3, b0, t_b, rate, [0.0] * 3, seq)
        biases[r] = noise.apply(np.zeros((n, 3)), np.full(n, 1.0 / rate))
    per_step = b0**2 * (1.0 / rate) / t_b
    for steps in (10, 50, 100):
        variance = biases[:, steps - 1, :].var()  # 900 values: relative SE ≈ √(2/900) ≈ 5 %
        assert variance == pytest.approx(steps * per_step, rel=0.25)


def test_chrono_paper_presets():
    demo = load_imu_model("chrono_paper_demo", 0).parameters
    assert demo["accelerometer"] == {
        "model": "chrono_drift",
        "sigma": [0.3, 0.3, 0.01],
        "mean": [0.0] * 3,
        "b0": 0.1,
        "t_b": 0.1,
        "bias_mean": [0.0] * 3,
    }
    assert demo["gyroscope"] == {"model": "none"}
    text = load_imu_model("chrono_paper_text", 0).parameters
    assert (text["accelerometer"]["b0"], text["accelerometer"]["t_b"]) == (1e-4, 0.1)
    imu = load_imu_model("chrono_paper_demo", 0).sample(still_truth(1.0))
    assert imu.linear_acceleration_covariance[0, [0, 4, 8]] == pytest.approx([0.09, 0.09, 1e-4])
    assert (imu.angular_velocity_covariance == 0).all()


# ---------------------------------------------------------------- AirSim


def test_airsim_hand_computed_previous_bias():
    seq = np.random.SeedSequence(8)
    noise = AirSimNoise([2.354e-3] * 3, [3.530e-4] * 3, 800.0, seq)
    z1 = generator(seq, 0).standard_normal((3, 3))
    z2 = generator(seq, 1).standard_normal((3, 3))
    dt = np.array([0.01, 0.0005, 0.02])
    out = noise.apply(np.zeros((3, 3)), dt)
    b = np.zeros(3)
    for k in range(3):
        s = math.sqrt(max(dt[k], 1e-3))
        np.testing.assert_allclose(out[k], z1[k] * 2.354e-3 / s + b, rtol=1e-12)  # previous b
        b = b + z2[k] * 3.530e-4 / math.sqrt(800.0) * s


# ---------------------------------------------------------------- MAVS


def mavs(seq=None, **kw):
    params = dict(
        measurement_range=19.6,
        resolution=0.598e-3,
        constant_bias=[0.49] * 3,
        noise_density=[0.0] * 3,
        bias_instability=[0.0] * 3,
        axis_misalignment=[0.0] * 3,
        random_walk=[0.0] * 3,
        temperature_bias=[0.294] * 3,
        temperature_scale_factor=[0.02] * 3,
        temperature=25.0,
        rate=100.0,
    )
    params.update(kw)
    return MavsNoise(seq=seq or np.random.SeedSequence(0), **params)


def test_mavs_deterministic_chain_hand_computed():
    """Bias, temperature bias, temperature scale, saturation and quantisation with the noise off."""
    out = mavs(temperature=35.0).apply(np.array([[1.0, 30.0, -0.3]]), np.array([0.01]))[0]
    # c = x + 0.49 + (35−25)·0.294 = [4.43, 33.43, 3.13]; scale 1 + 10/100·0.02 = 1.002
    # d = [4.43886, 33.49686, 3.13626]; clamp ±19.6 → [4.43886, 19.6, 3.13626]
    # quantise by 0.598e-3: round(7422.84) = 7423, round(32775.92) = 32776, round(5244.58) = 5245
    np.testing.assert_allclose(out, [7423 * 0.598e-3, 32776 * 0.598e-3, 5245 * 0.598e-3], rtol=1e-12)
    low = mavs(temperature=25.0).apply(np.array([[-30.0, 0.0, 0.0]]), np.array([0.01]))[0]
    assert low[0] == pytest.approx(-32776 * 0.598e-3)  # −29.51 clamps to −19.6, then quantised


def test_mavs_misalignment_matrix():
    out = mavs(
        temperature_bias=[0.0] * 3, constant_bias=[0.0] * 3, resolution=0.0, axis_misalignment=[1.0, 2.0, 3.0]
    )
    got = out.apply(np.array([[1.0, 2.0, 3.0]]), np.array([0.01]))[0]
    # row i off-diagonals = m_i/100: [1 + 0.01·5, 2 + 0.02·4, 3 + 0.03·3]
    np.testing.assert_allclose(got, [1.05, 2.08, 3.09], rtol=1e-12)


def test_round_half_away_from_zero():
    np.testing.assert_array_equal(round_half_away(np.array([2.5, -2.5, 0.5, 1.4, -1.6])), [3, -3, 1, 1, -2])


def test_mavs_filters_hand_computed():
    seq = np.random.SeedSequence(13)
    model = mavs(
        seq,
        constant_bias=[0.0] * 3,
        temperature_bias=[0.0] * 3,
        resolution=0.0,
        bias_instability=[0.2] * 3,
        random_walk=[0.05] * 3,
        noise_density=[0.01] * 3,
    )
    w1 = generator(seq, 0).uniform(-1, 1, (3, 3))
    w2 = generator(seq, 1).uniform(-1, 1, (3, 3))
    w3 = generator(seq, 2).uniform(-1, 1, (3, 3))
    out = model.apply(np.zeros((3, 3)), np.full(3, 0.01))
    pole = 2.0 / 100.0 - 1.0
    beta1 = beta3 = np.zeros(3)
    for k in range(3):
        beta1 = w1[k] * 0.2 - pole * beta1  # F1: low-pass of the bias instability
        beta2 = w2[k] * math.sqrt(50.0) * 0.01  # white
        beta3 = beta3 + 0.05 * w3[k] / math.sqrt(50.0)  # F2: random walk
        np.testing.assert_allclose(out[k], beta1 + beta2 + beta3, rtol=1e-12, atol=1e-15)


@settings(max_examples=8, deadline=None)
@given(density=st.floats(1e-3, 0.1), seed=st.integers(0, 2**32 - 1))
def test_mavs_white_noise_variance(density, seed):
    model = mavs(
        np.random.SeedSequence(seed),
        constant_bias=[0.0] * 3,
        temperature_bias=[0.0] * 3,
        resolution=0.0,
        noise_density=[density] * 3,
    )
    out = model.apply(np.zeros((20000, 3)), np.full(20000, 0.01))
    assert out.var(axis=0) == pytest.approx([50.0 * density**2 / 3.0] * 3, rel=0.05)  # (σ/2)·n_d²·Var(U)


def test_mavs_preset_and_magnetometer():
    imu = load_imu_model("mavs_mems", 0).sample(still_truth(1.0, yaw=math.pi / 2))
    assert imu.magnetic_field is not None and imu.magnetic_field_covariance.shape == (len(imu), 9)
    # Facing north (yaw 90°): sensor x = north, y = west, z = up.  Field ENU [27.555, −2.4169, −16.0849] µT,
    # plus MAVS's constant bias 1 µT, noise density [0.06, 0.06, 0.09] µT/√Hz (≈ 0.24 µT std).
    expected = (np.array([-2.4169, -27.5550, -16.0849]) + 1.0) * 1e-6
    np.testing.assert_allclose(imu.magnetic_field.mean(axis=0), expected, atol=0.1e-6)
    # Accelerometer at rest: 9.80665 + 0.49 constant bias on z, quantised by 0.598e-3.
    assert imu.linear_acceleration[:, 2].mean() == pytest.approx(GRAVITY + 0.49, abs=0.01)
    assert np.allclose(imu.linear_acceleration / 0.598e-3, np.round(imu.linear_acceleration / 0.598e-3))


def test_magnetometer_exact_rotation():
    spec = {"preset": "ideal", "magnetometer": {"enabled": True, "field": [20.0, 5.0, -40.0]}}
    imu = load_imu_model(spec, 0).sample(still_truth(0.5, yaw=math.pi / 2))
    np.testing.assert_allclose(imu.magnetic_field[0], [5e-6, -20e-6, -40e-6], atol=1e-15)


# ---------------------------------------------------------------- covariances, bad input


def test_reported_covariance_options():
    spec = {
        "preset": "airsim_imu",
        "orientation": {"sigma": [0.01, 0.02, 0.03]},
        "reported_covariance": {"orientation": "not_provided", "angular_velocity": [1e-4, 2e-4, 3e-4]},
    }
    imu = load_imu_model(spec, 0).sample(still_truth(0.5))
    assert imu.orientation_covariance[0].tolist() == [-1.0] + [0.0] * 8
    assert imu.angular_velocity_covariance[0, [0, 4, 8]].tolist() == [1e-4, 2e-4, 3e-4]
    assert imu.linear_acceleration_covariance[0, 0] == pytest.approx(2.354e-3**2 / 0.01)  # ARW²/dt
    auto = load_imu_model({"preset": "ideal", "orientation": {"sigma": [0.01, 0.02, 0.03]}}, 0).sample(
        still_truth(0.5)
    )
    assert auto.orientation_covariance[0, [0, 4, 8]] == pytest.approx([1e-4, 4e-4, 9e-4])


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nope", "unknown preset 'nope'"),
        (
            {"accelerometer": {"model": "chrono_drift", "sigma": 0.1, "b0": 0.1, "t_b": 0.0}},
            "accelerometer.t_b: must be > 0",
        ),
        (
            {"accelerometer": {"model": "chrono_drift", "sigma": -0.1, "b0": 0.1, "t_b": 1}},
            "accelerometer.sigma: must be",
        ),
        (
            {"gyroscope": {"model": "airsim", "noise_density": 1e-3, "bias_stability": 1e-4}},
            "gyroscope.tau: missing key",
        ),
        ({"gyroscope": {"model": "mavs"}}, "gyroscope.measurement_range: missing key"),
        ({"rate": -100}, "rate: must be > 0"),
        ({"mounting_rpy": [0, 1]}, "mounting_rpy: expected a number or a list of 3"),
        ({"reported_covariance": {"orientation": "sometimes"}}, "reported_covariance.orientation"),
        ({"magnetometer": {"enabled": "yes"}}, "magnetometer.enabled: expected true/false"),
        ({"accelerometer": {"model": "gaussian", "sigma": 1, "tau": 3}}, "unknown key(s) tau"),
    ],
)
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(UserError) as info:
        load_imu_model(spec, 0)
    assert message in str(info.value)
