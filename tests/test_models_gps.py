"""GPS models: hand-computed equations, statistics (hypothesis), streaming == batch, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import geodesy
from sim2real_eval.errors import UserError
from sim2real_eval.models import GpsSamples, load_gps_model, sensor_seed
from sim2real_eval.models import samples as S
from sim2real_eval.models.noise import ChronoRandomWalkNoise, GaussMarkovNoise, PaperRandomWalkNoise
from sim2real_eval.models.seeding import generator
from sim2real_eval.truth import GroundTruth

GPS_PRESETS = [
    "ch_gauss",
    "ch_rw",
    "airsim",
    "ch_gauss_airsim",
    "ch_rw_airsim",
    "paper_rw",
    "airsim_default",
    "hector",
    "ideal",
    "robot_rtk_f9p",
    "carla_leaderboard",
    "gz_navsat",
]


def still_truth(duration=30.0, start=10.0, rate=100.0) -> GroundTruth:
    t = start + np.arange(int(round(duration * rate)) + 1) / rate
    n = len(t)
    return GroundTruth(
        t,
        np.zeros((n, 3)),
        np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)),
        np.zeros((n, 3)),
        np.zeros((n, 3)),
        np.tile([0.0, 0.0, 9.80665], (n, 1)),
    )


def moving_truth(duration=20.0) -> GroundTruth:
    t = 10.0 + np.arange(int(duration * 100) + 1) / 100.0
    pos = np.stack([np.cos(t), np.sin(t), 0.1 * t], axis=-1)
    vel = np.stack([-np.sin(t), np.cos(t), np.full_like(t, 0.1)], axis=-1)
    from sim2real_eval import rotations

    return GroundTruth.from_kinematics(t, pos, rotations.from_yaw(t + np.pi / 2), vel)


def stream(model, truth, stamps=None) -> GpsSamples:
    stamps = model.default_stamps(truth) if stamps is None else stamps
    parts = [model.step(int(s), truth.interpolate([s / 1e9])) for s in stamps]
    return GpsSamples.concatenate(parts)


def assert_identical(a, b):
    da, db = a.as_dict(), b.as_dict()
    assert da.keys() == db.keys()
    for key in da:
        assert da[key].dtype == db[key].dtype, key
        assert np.array_equal(da[key], db[key]), key
    assert a.frame_id == b.frame_id


# ---------------------------------------------------------------- contract


@pytest.mark.parametrize("preset", GPS_PRESETS)
def test_streaming_equals_batch_bit_identical(preset):
    truth = moving_truth()
    batch = load_gps_model(preset, sensor_seed(3, preset, "circle", 0, "gps")).sample(truth)
    streamed = stream(load_gps_model(preset, sensor_seed(3, preset, "circle", 0, "gps")), truth)
    assert len(batch) > 0
    assert_identical(batch, streamed)


def test_streaming_equals_batch_with_irregular_stamps_and_outages():
    truth = moving_truth()
    stamps = np.cumsum(np.random.default_rng(0).integers(50_000_000, 150_000_000, 150)) + 10_000_000_000
    stamps = stamps[stamps <= 29_000_000_000]
    spec = {"preset": "ch_rw_airsim", "outages": [[2.0, 3.5]], "dropout_probability": 0.2, "latency": 0.05}
    batch = load_gps_model(spec, 7).sample(truth, stamps)
    streamed = stream(load_gps_model(spec, 7), truth, stamps)
    assert_identical(batch, streamed)
    assert 0 < len(batch) < len(stamps)


def test_fields_dtypes_defaults():
    fixes = load_gps_model("ch_gauss", 1).sample(still_truth(5.0))
    assert fixes.frame_id == "gps"
    assert fixes.stamp_ns.dtype == np.int64 and fixes.receive_ns.dtype == np.int64
    assert fixes.status.dtype == np.int8 and fixes.service.dtype == np.uint16
    assert fixes.position_covariance.shape == (len(fixes), 9)
    assert fixes.position_covariance_type.dtype == np.uint8
    assert (fixes.status == S.STATUS_FIX).all() and (fixes.service == S.SERVICE_GPS).all()
    assert np.isfinite(fixes.altitude).all()


def test_default_ticks_are_period_multiples_inside_span():
    truth = still_truth(3.0, start=10.03)
    fixes = load_gps_model("ideal", 0).sample(truth)
    assert (fixes.stamp_ns % 100_000_000 == 0).all()
    assert fixes.stamp_ns[0] == 10_100_000_000 and fixes.stamp_ns[-1] == 13_000_000_000
    assert len(fixes) == 30
    fixes = load_gps_model("ideal", 0, rate=3.0).sample(truth)
    assert (fixes.stamp_ns % 333_333_333 == 0).all()


def test_explicit_stamps_and_their_errors():
    truth = still_truth(3.0)
    model = load_gps_model("ideal", 0)
    fixes = model.sample(truth, np.array([10_000_000_001, 10_500_000_000, 12_999_999_999]))
    assert fixes.stamp_ns.tolist() == [10_000_000_001, 10_500_000_000, 12_999_999_999]
    with pytest.raises(UserError, match="outside the truth span"):
        load_gps_model("ideal", 0).sample(truth, np.array([9_000_000_000]))
    with pytest.raises(UserError, match="not strictly increasing"):
        load_gps_model("ideal", 0).sample(truth, np.array([11_000_000_000, 11_000_000_000]))
    with pytest.raises(UserError, match="integer nanoseconds"):
        load_gps_model("ideal", 0).sample(truth, np.array([11.0]))
    model = load_gps_model("ideal", 0)
    model.step(11_000_000_000, truth.interpolate([11.0]))
    with pytest.raises(UserError, match="not after the previous sample"):
        model.step(11_000_000_000, truth.interpolate([11.0]))


def test_ideal_gps_reports_truth_through_geodesy_and_datum_override():
    truth = moving_truth(5.0)
    datum = [40.0, -80.0, 100.0]
    fixes = load_gps_model("ideal", 0, datum=datum).sample(truth)
    enu = geodesy.geodetic_to_enu(fixes.latitude, fixes.longitude, fixes.altitude, datum)
    np.testing.assert_allclose(enu, truth.interpolate(fixes.stamp_ns / 1e9).position, atol=1e-6)
    sphere = load_gps_model("ideal", 0, datum=datum, geodesy="chrono_sphere").sample(truth)
    enu = geodesy.geodetic_to_enu(sphere.latitude, sphere.longitude, sphere.altitude, datum, "chrono_sphere")
    np.testing.assert_allclose(enu, truth.interpolate(sphere.stamp_ns / 1e9).position, atol=1e-6)


def test_same_seed_same_bytes_different_seed_differs():
    truth = still_truth(5.0)
    a = load_gps_model("ch_rw", sensor_seed(1, "x")).sample(truth)
    b = load_gps_model("ch_rw", sensor_seed(1, "x")).sample(truth)
    c = load_gps_model("ch_rw", sensor_seed(2, "x")).sample(truth)
    assert_identical(a, b)
    assert not np.array_equal(a.enu_error, c.enu_error)


# ---------------------------------------------------------------- Gaussian


@settings(max_examples=15, deadline=None)
@given(sigma=st.floats(0.001, 2.0), seed=st.integers(0, 2**32 - 1))
def test_gaussian_sigma_recovered(sigma, seed):
    spec = {"position_noise": {"model": "gaussian", "sigma": sigma}, "rate": 100.0}
    fixes = load_gps_model(spec, seed).sample(still_truth(40.0))  # 4001 fixes × 3 axes
    std = fixes.enu_error.std(axis=0)
    # std of a 4001-sample std estimate is σ/√8000 ≈ 1.1 % of σ: 6 % is > 5 standard errors.
    np.testing.assert_allclose(std, sigma, rtol=0.06)
    assert np.abs(fixes.enu_error.mean(axis=0)).max() < 6 * sigma / math.sqrt(4001)
    assert (fixes.position_covariance == 0).all()
    assert (fixes.position_covariance_type == S.COVARIANCE_TYPE_UNKNOWN).all()


# ---------------------------------------------------------------- Chrono random walk


def test_chrono_random_walk_clip_and_clamp_hand_computed():
    """σ huge: every a_i is clipped to ±a_max; |v| = a_max·h·√3 > v_max, so v is scaled to v_max."""
    seq = np.random.SeedSequence(11)
    noise = ChronoRandomWalkNoise(sigma=1e6, noise_rate=100.0, v_max=0.001, a_max=0.5, gain=0.2, seq=seq)
    z = generator(seq, 0).standard_normal((1, 3))[0]
    out = noise.apply(np.zeros((1, 3)), np.array([0.01]))  # one sub-step, h = 0.01
    # a = ±0.5 → v = ±0.005 per axis, |v| = 0.00866 > 0.001 → v = ±0.001/√3; p = v·h.
    expected = np.sign(z) * 0.001 / math.sqrt(3.0) * 0.01
    np.testing.assert_allclose(out[0], expected, rtol=1e-12)


def test_chrono_random_walk_mean_reversion_and_substeps_hand_computed():
    seq = np.random.SeedSequence(5)
    noise = ChronoRandomWalkNoise(sigma=0.047, noise_rate=100.0, v_max=10.0, a_max=10.0, gain=0.2, seq=seq)
    assert noise.substeps(0.1) == pytest.approx([0.01] * 10)
    assert noise.substeps(0.025) == pytest.approx([0.01, 0.01, 0.005])
    z = generator(seq, 0).standard_normal((3, 3))
    out = noise.apply(np.zeros((1, 3)), np.array([0.025]))
    p = np.zeros(3)
    v = np.zeros(3)
    for zj, h in zip(z, [0.01, 0.01, 0.005]):
        a = -0.2 * 0.047 * p + 0.047 * zj  # μ = −0.2·σ·p
        v = v + a * h
        p = p + v * h
    np.testing.assert_allclose(out[0], p, rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(
    v_max=st.floats(0.001, 0.1),
    a_max=st.floats(0.001, 1.0),
    sigma=st.floats(0.001, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_chrono_random_walk_bounded_by_v_max_kinematics(v_max, a_max, sigma, seed):
    spec = {
        "position_noise": {
            "model": "random_walk",
            "formulation": "chrono",
            "sigma": sigma,
            "noise_rate": 100.0,
            "v_max": v_max,
            "a_max": a_max,
        }
    }
    fixes = load_gps_model(spec, seed).sample(still_truth(20.0))
    err = fixes.enu_error
    steps = np.linalg.norm(np.diff(err, axis=0), axis=1)
    assert steps.max() <= v_max * 0.1 * (1 + 1e-9)  # |Δp| ≤ v_max·Δt between fixes
    elapsed = (fixes.stamp_ns - fixes.stamp_ns[0]) / 1e9 + 0.1  # the walk starts one period earlier
    assert (np.linalg.norm(err, axis=1) <= v_max * elapsed * (1 + 1e-9)).all()


# ---------------------------------------------------------------- paper random walk


@pytest.mark.parametrize("integration", ["kinematic", "unit_step"])
def test_paper_random_walk_hand_computed(integration):
    seq = np.random.SeedSequence(9)
    noise = PaperRandomWalkNoise(sigma_a=0.05, p_max=0.06, integration=integration, seq=seq)
    z = generator(seq, 0).standard_normal((3, 3))
    dts = np.array([0.1, 0.1, 0.2])
    out = noise.apply(np.zeros((3, 3)), dts)
    p, v = np.zeros(3), np.zeros(3)
    for k in range(3):
        a = -p / 0.06 + 0.05 * z[k]
        if integration == "kinematic":
            p, v = p + v * dts[k] + 0.5 * a * dts[k] ** 2, v + a * dts[k]
        else:
            p, v = p + v + a, v + a
        np.testing.assert_allclose(out[k], p, rtol=1e-12)


# ---------------------------------------------------------------- Gauss–Markov


def test_gauss_markov_hand_computed_both_forms():
    seq = np.random.SeedSequence(4)
    dt = np.array([0.1, 0.1])
    for form in ("gz", "hector"):
        noise = GaussMarkovNoise(form, [0.0] * 3, [0.5, 0.0, 0.0], [0.2] * 3, 10.0, [1.0, 1.0, 1.0], seq)
        z = generator(seq, 1).standard_normal((2, 3))
        out = noise.apply(np.zeros((2, 3)), dt)
        alpha = math.exp(-0.1 / 10.0)
        drive = 0.2 * (math.sqrt(5.0 * (1 - math.exp(-0.02))) if form == "gz" else 0.1 * math.sqrt(0.2))
        b1 = alpha * 1.0 + drive * z[0]
        b2 = alpha * b1 + drive * z[1]
        np.testing.assert_allclose(out, np.array([b1, b2]) + [0.5, 0.0, 0.0], rtol=1e-12)


@settings(max_examples=8, deadline=None)
@given(tau=st.floats(0.5, 5.0), seed=st.integers(0, 2**32 - 1))
def test_gauss_markov_autocorrelation_and_variance(tau, seed):
    noise = GaussMarkovNoise(
        "gz", [0.0] * 3, [0.0] * 3, [1.0] * 3, tau, [0.0] * 3, np.random.SeedSequence(seed)
    )
    n, dt = 20000, 0.1
    bias = noise.apply(np.zeros((n, 3)), np.full(n, dt))[1000:]  # past the start-up transient
    rho = np.mean([np.corrcoef(bias[:-1, i], bias[1:, i])[0, 1] for i in range(3)])
    assert rho == pytest.approx(math.exp(-dt / tau), abs=0.02)
    # Stationary variance σ_b²·τ/2 (effective sample size is small for long τ: loose bound).
    assert bias.var(axis=0).mean() == pytest.approx(tau / 2.0, rel=0.3)


# ---------------------------------------------------------------- HDOP covariance


def test_hdop_paper_timing_after_n_steps():
    fixes = load_gps_model("airsim", 0).sample(still_truth(60.0))
    alpha = math.exp(-0.1 / 12.4)
    n = np.arange(1, len(fixes) + 1)  # the first fix is one step (one period) after H0
    hdop = 0.85 + (100.0 - 0.85) * alpha**n
    np.testing.assert_allclose(fixes.position_covariance[:, 0], (0.02 * hdop) ** 2, rtol=1e-9)
    np.testing.assert_allclose(fixes.position_covariance[:, 4], (0.02 * hdop) ** 2, rtol=1e-9)
    np.testing.assert_allclose(fixes.position_covariance[:, 8], (2 * 0.02 * hdop) ** 2, rtol=1e-9)
    assert (fixes.position_covariance[:, [1, 2, 3, 5, 6, 7]] == 0).all()
    assert (fixes.position_covariance_type == S.COVARIANCE_TYPE_APPROXIMATED).all()
    # The spec's worked number: √cov_h(20 s) ≈ 0.02·(0.85 + 99.15·e^(−20/12.4)) ≈ 0.41 m.
    assert math.sqrt(fixes.position_covariance[199, 0]) == pytest.approx(0.4122, abs=5e-4)
    assert np.array_equal(fixes.enu_error, np.zeros_like(fixes.enu_error))  # AirSim: position not perturbed
    late = load_gps_model("airsim", 0).sample(still_truth(400.0, rate=20.0))
    assert math.sqrt(late.position_covariance[-1, 0]) == pytest.approx(0.017, abs=1e-6)  # floor 0.02·0.85


def test_hdop_airsim_timing_latency_and_startup():
    fixes = load_gps_model("airsim_default", 0).sample(still_truth(5.0))
    assert fixes.stamp_ns[0] == 11_000_000_000  # nothing during the 1 s start-up delay
    # At 1.5 s after the first fix: n = ⌊(1.5 − 0.2)·50⌋ = 65 physics steps of τ = 0.9 s.
    row = int(np.flatnonzero(fixes.stamp_ns == 11_500_000_000)[0])
    hdop = 0.1 + (100.0 - 0.1) * math.exp(-65 / (50.0 * 0.9))
    assert fixes.position_covariance[row, 0] == pytest.approx((0.02 * hdop) ** 2, rel=1e-12)


def test_nmea_and_ublox_covariances():
    fixes = load_gps_model({"covariance": {"model": "nmea", "fix_quality": "sps", "hdop": 1.5}}, 0).sample(
        still_truth(1.0)
    )
    assert fixes.position_covariance[0, [0, 4, 8]] == pytest.approx(
        [36.0, 36.0, 576.0]
    )  # (1.5·4)², (2·1.5·2·4)²
    assert fixes.position_covariance_type[0] == S.COVARIANCE_TYPE_APPROXIMATED
    fixes = load_gps_model({"covariance": {"model": "ublox", "h_acc": 0.014, "v_acc": 0.02}}, 0).sample(
        still_truth(1.0)
    )
    assert fixes.position_covariance[0, [0, 4, 8]] == pytest.approx([0.014**2, 0.014**2, 0.02**2])
    assert fixes.position_covariance_type[0] == S.COVARIANCE_TYPE_DIAGONAL_KNOWN


# ---------------------------------------------------------------- outages, dropouts, latency


def test_outages_dropouts_latency():
    truth = still_truth(10.0)
    fixes = load_gps_model({"outages": [[2.0, 3.0]], "latency": 0.25}, 0).sample(truth)
    since = (fixes.stamp_ns - fixes.stamp_ns[0]) / 1e9
    inside = (since >= 2.0) & (since < 3.0)
    assert inside.sum() == 10
    assert (fixes.status[inside] == S.STATUS_NO_FIX).all() and (fixes.status[~inside] == S.STATUS_FIX).all()
    assert (fixes.receive_ns - fixes.stamp_ns == 250_000_000).all()
    dropped = load_gps_model({"outages": [[2.0, 3.0]], "outage_mode": "drop"}, 0).sample(truth)
    assert len(dropped) == len(fixes) - 10
    assert len(load_gps_model({"dropout_probability": 1.0}, 0).sample(truth)) == 0
    half = load_gps_model({"dropout_probability": 0.5, "rate": 100.0}, 0).sample(still_truth(40.0))
    assert 0.45 * 4001 < len(half) < 0.55 * 4001
    model = load_gps_model({"dropout_probability": 1.0}, 0)
    assert len(model.step(10_000_000_000, truth.interpolate([10.0]))) == 0


# ---------------------------------------------------------------- presets, specs, bad input


def test_five_paper_variants_compose_noise_and_covariance():
    expect = {
        "ch_gauss": ("gaussian", "zeros"),
        "ch_rw": ("random_walk", "zeros"),
        "airsim": ("none", "hdop"),
        "ch_gauss_airsim": ("gaussian", "hdop"),
        "ch_rw_airsim": ("random_walk", "hdop"),
    }
    for name, (noise, covariance) in expect.items():
        params = load_gps_model(name, 0).parameters
        assert params["position_noise"]["model"] == noise
        assert params["covariance"]["model"] == covariance
        assert params["datum"] == [43.070, -89.400, 260.0]
    rw = load_gps_model("ch_rw", 0).parameters["position_noise"]
    assert (rw["formulation"], rw["sigma"], rw["noise_rate"], rw["v_max"], rw["a_max"]) == (
        "chrono",
        0.047,
        100.0,
        0.016,
        0.152,
    )
    hdop = load_gps_model("airsim", 0).parameters["covariance"]
    assert (hdop["h0"], hdop["h_inf"], hdop["tau"], hdop["timing"]) == (100.0, 0.85, 12.4, "paper")


def test_overrides_tweak_or_replace():
    tweaked = load_gps_model("ch_gauss", 0, position_noise={"sigma": 0.5}).parameters["position_noise"]
    assert tweaked == {"model": "gaussian", "sigma": [0.5] * 3, "mean": [0.0] * 3}
    replaced = load_gps_model("ch_rw", 0, position_noise={"model": "none"}).parameters["position_noise"]
    assert replaced == {"model": "none"}


def test_yaml_path_spec(tmp_path):
    path = tmp_path / "my_gps.yaml"
    path.write_text("preset: ch_gauss\nrate: 5\n")
    assert load_gps_model(str(path), 0).rate == 5.0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_preset", "unknown preset 'no_such_preset'"),
        ({"position_noise": {"model": "gaussian", "sigma": -0.1}}, "position_noise.sigma: must be >= 0"),
        (
            {"position_noise": {"model": "gaussian", "sigma": float("nan")}},
            "position_noise.sigma: expected finite",
        ),
        ({"position_noise": {"model": "gaussian"}}, "position_noise.sigma: missing key"),
        (
            {"position_noise": {"model": "gauss_markov", "bias_sigma": 1.0, "tau": 0.0}},
            "position_noise.tau: must be > 0",
        ),
        ({"rate": 0}, "rate: must be > 0"),
        ({"rate": "fast"}, "rate: expected a number"),
        ({"covariance": {"model": "hdop", "tau": -1}}, "covariance.tau: must be > 0"),
        ({"position_noise": {"model": "brownian"}}, "position_noise.model: unknown value 'brownian'"),
        ({"sigma": 0.1}, "unknown key"),
        ({"outages": [[3.0, 2.0]]}, "outages[0]"),
        ({"dropout_probability": 2.0}, "dropout_probability: must be <= 1"),
        ({"datum": [1.0, 2.0]}, "datum"),
        ({"status": "great"}, "status: unknown value"),
    ],
)
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(UserError) as info:
        load_gps_model(spec, 0)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_yaml_file_names_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("position_noise:\n  model: gaussian\n  sigma: -1\n")
    with pytest.raises(UserError, match=r"bad\.yaml: position_noise\.sigma: must be >= 0"):
        load_gps_model(str(path), 0)


def test_bad_truth_names_first_index():
    truth = still_truth(2.0)
    t = truth.t.copy()
    t[50] = t[49]
    bad = GroundTruth(
        t, truth.position, truth.orientation, truth.velocity, truth.angular_velocity, truth.specific_force
    )
    with pytest.raises(UserError, match="index 50"):
        load_gps_model("ideal", 0).sample(bad)


def test_sensor_seed_is_stable_and_key_sensitive():
    a = sensor_seed(3, "ch_rw", "circle", 0, "gps").generate_state(2)
    assert np.array_equal(a, sensor_seed(3, "ch_rw", "circle", 0, "gps").generate_state(2))
    assert not np.array_equal(a, sensor_seed(3, "ch_rw", "circle", 1, "gps").generate_state(2))
    assert not np.array_equal(a, sensor_seed(3, "ch_rw", "circle", "0", "gps").generate_state(2))
    assert not np.array_equal(a, sensor_seed(3, "ch_rw", "circle", 0, "imu").generate_state(2))
    # Pinned value: strings are hashed with SHA-256, never the per-process salted hash().
    assert sensor_seed(3, "ch_rw", "circle", 0, "gps").entropy[:8] == [
        1,
        1,
        3,
        2,
        3120413115,
        2852178621,
        206136800,
        2681775586,
    ]
    with pytest.raises(UserError):
        sensor_seed(3, 1.5)
