"""sim2real_eval.node: the rclpy-free logic of the ROS nodes (ticks, truth streams, parameters, sbg truth)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import rotations
from sim2real_eval.errors import UserError
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
from sim2real_eval.models.base import available_presets, stamps_to_seconds
from sim2real_eval.node import params as node_params
from sim2real_eval.node import sbg_truth, sensor_stream, ticks
from sim2real_eval.truth import GRAVITY, GroundTruth, time_derivative
from sim2real_eval.truth import stream as truth_stream

S = 1_000_000_000


# ------------------------------------------------------------------------------------------ time
def test_period_ns_is_validated():
    assert ticks.checked_period_ns(10) == 100_000_000
    assert ticks.checked_period_ns(3) == 333_333_333  # round(1e9 / 3)
    for bad in (0, -5, float("nan"), True, "10"):
        with pytest.raises(UserError, match="rate"):
            ticks.checked_period_ns(bad)


def test_ticks_are_exact_multiples_inside_the_interval():
    p = ticks.checked_period_ns(10)
    assert ticks.ticks_ns(10 * S, 10 * S + 300_000_000, p, False).tolist() == [
        10 * S, 10 * S + p, 10 * S + 2 * p]
    assert ticks.ticks_ns(10 * S, 10 * S + 300_000_000, p, True).tolist()[-1] == 10 * S + 3 * p
    assert ticks.ticks_ns(10 * S + 1, 10 * S + p, p, False).size == 0
    assert ticks.ticks_ns(-p, p, p, True).tolist() == [-p, p]  # stamp 0 is never produced
    epoch = 1_707_000_000 * S + 123  # absolute epoch stamps keep every nanosecond
    epoch_ticks = ticks.ticks_ns(epoch, epoch + S, p, False)
    assert epoch_ticks[0] == 1_707_000_000 * S + p and len(epoch_ticks) == 10 and (epoch_ticks % p == 0).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**12), st.integers(0, 500), st.integers(0, 10**9), st.integers(1, 10**9))
def test_ticks_partition_property(start, periods, extra, period):
    """Half-open segments laid end to end produce each tick once, in order (no gap, no repeat)."""
    length = periods * period + extra % period
    mid = start + length // 2
    end = start + length
    joined = np.concatenate([ticks.ticks_ns(start, mid, period, False),
                             ticks.ticks_ns(mid, end, period, True)])
    whole = ticks.ticks_ns(start, end, period, True)
    assert joined.tolist() == whole.tolist()
    assert all(start <= t <= end and t % period == 0 for t in whole.tolist())


def test_throttled_warning_counts_suppressed_messages():
    throttle = ticks.ThrottledWarning(5.0)
    assert throttle.message("late", 0.0) == "late"
    assert throttle.message("late", 1.0) is None
    assert throttle.message("late", 4.9) is None
    assert throttle.message("late", 5.0) == "late (2 more since the last warning)"


def test_tick_rate_check_warns_once_when_explicit_ticks_run_at_another_rate():
    """imu_rate:=200 on a 100 Hz tick stream: the noise would be scaled for 5 ms, the ticks are 10 ms."""
    check = ticks.TickRateCheck(200.0, min_ticks=50)
    warnings = [check.check(10 * S + k * 10_000_000, "/real/imu") for k in range(60)]
    found = [w for w in warnings if w]
    assert len(found) == 1 and "100.00 Hz" in found[0] and "200 Hz" in found[0]
    same = ticks.TickRateCheck(100.0, min_ticks=50)
    assert not any(same.check(10 * S + k * 10_000_000 + (k % 3) * 1_000_000, "/real/imu") for k in range(60))


# ---------------------------------------------------------------------------------- truth stream
def kinematic_series(stamps_ns, seed=0):
    """A smooth turning drive: ENU position, yaw, body-forward speed; world velocity and rates."""
    t = stamps_to_seconds(stamps_ns)
    rng = np.random.default_rng(seed)
    speed = 3.0 + 0.5 * np.sin(0.7 * t)
    yaw = 0.2 * t + 0.1 * np.sin(t)
    yaw_rate = 0.2 + 0.1 * np.cos(t)
    pitch = 0.02 * np.sin(0.3 * t)
    q = rotations.from_rpy(np.zeros_like(t), pitch, yaw)
    v = np.stack([speed * np.cos(yaw), speed * np.sin(yaw), 0.1 * np.sin(t)], axis=1)
    p = np.cumsum(v, axis=0) * 0.2 + rng.normal(0, 1e-3, (len(t), 3))
    w = np.stack([np.zeros_like(t), 0.3 * 0.02 * np.cos(0.3 * t), yaw_rate], axis=1)
    return p, q, v, w


def jittery_stamps(n, rate, start_s=10.0, jitter=0.3, seed=1):
    rng = np.random.default_rng(seed)
    step = S / rate
    base = start_s * S + np.arange(n) * step
    return (base + rng.uniform(-jitter, jitter, n) * step).astype(np.int64)


def even_stamps(n, rate, start_s=10.0):
    """Stamps exactly 1/rate apart in ns (a simulator's clock): in float seconds most 3-sample windows
    are evenly spaced but the whole series is not, the case np.gradient treated differently."""
    return (int(start_s * S) + np.arange(n) * (S // int(rate))).astype(np.int64)


SPACINGS = {"jittered": lambda n, rate: jittery_stamps(n, rate), "even": even_stamps}


def test_time_derivative_hand_values_and_np_gradient_on_uneven_stamps():
    # f = t² on t = 0, 1, 3: the three-point formula is exact for a quadratic inside (f'(1) = 2); the
    # ends are one-sided differences, 1/1 and 8/2
    assert time_derivative([0.0, 1.0, 3.0], [0.0, 1.0, 9.0]).tolist() == [1.0, 2.0, 4.0]
    assert time_derivative([0.0, 2.0], [[1.0, 2.0], [5.0, 0.0]]).tolist() == [[2.0, -1.0], [2.0, -1.0]]
    rng = np.random.default_rng(7)
    for n in (3, 4, 50):
        t = 1.7e9 + np.cumsum(rng.uniform(0.01, 0.2, n))
        values = rng.normal(size=(n, 3))
        assert np.array_equal(time_derivative(t, values), np.gradient(values, t, axis=0))  # its values
    with pytest.raises(ValueError, match="2 samples"):
        time_derivative([1.0], [[0.0, 0.0, 0.0]])


def stream_truth(stamps_ns, p, q, v, w):
    stream = truth_stream.TruthStream()
    segments = []
    for i, stamp in enumerate(stamps_ns):
        assert stream.push(int(stamp), p[i], q[i], v[i], w[i], segments)
    stream.finish(segments)
    return segments


@pytest.mark.parametrize("spacing, rate", [("jittered", 5.0), ("even", 20.0), ("even", 5.0)])
def test_truth_stream_rows_equal_the_offline_derivation_bit_for_bit(spacing, rate):
    stamps = SPACINGS[spacing](40, rate)
    p, q, v, w = kinematic_series(stamps)
    offline = GroundTruth.from_kinematics(stamps_to_seconds(stamps), p, q, v, angular_velocity=w)
    segments = stream_truth(stamps, p, q, v, w)
    assert len(segments) == len(stamps) - 1
    assert [s.include_end for s in segments] == [False] * (len(stamps) - 2) + [True]
    for i, segment in enumerate(segments):
        assert (segment.start_ns, segment.end_ns) == (stamps[i], stamps[i + 1])
        for name in ("t", "position", "orientation", "velocity", "angular_velocity", "specific_force"):
            assert np.array_equal(getattr(segment.truth, name), getattr(offline, name)[i:i + 2]), name


def test_truth_stream_specific_force_at_rest_and_in_a_turn():
    """Hand values: level at rest reads +g on z; a constant-speed circle adds v·ω to the left (+y)."""
    stamps = np.arange(1, 6, dtype=np.int64) * 100_000_000 + 10 * S
    t = stamps_to_seconds(stamps)
    still = stream_truth(stamps, np.zeros((5, 3)), np.tile([0, 0, 0, 1.0], (5, 1)), np.zeros((5, 3)),
                         np.zeros((5, 3)))
    assert np.allclose(still[1].truth.specific_force, [[0, 0, GRAVITY]] * 2, atol=1e-12)
    speed, rate = 2.0, 0.5  # circle: yaw = rate·t, centripetal acceleration speed·rate to the left
    yaw = rate * t
    v = np.stack([speed * np.cos(yaw), speed * np.sin(yaw), np.zeros(5)], axis=1)
    circle = stream_truth(stamps, np.zeros((5, 3)), rotations.from_yaw(yaw), v, np.tile([0, 0, rate], (5, 1)))
    # Central difference of a rotating vector shrinks its magnitude by sinc(rate·h) (h = 0.1 s).
    expected_lateral = speed * rate * math.sin(rate * 0.1) / (rate * 0.1)
    assert circle[1].truth.specific_force[1] == pytest.approx([0, expected_lateral, GRAVITY], abs=1e-9)


def test_truth_stream_drops_non_increasing_and_non_finite_samples():
    stream = truth_stream.TruthStream()
    segments = []
    ident = [0, 0, 0, 1.0]
    assert stream.push(10 * S, [0, 0, 0], ident, [0, 0, 0], [0, 0, 0], segments)
    assert stream.push(11 * S, [1, 0, 0], ident, [1, 0, 0], [0, 0, 0], segments)
    assert not stream.push(11 * S, [2, 0, 0], ident, [1, 0, 0], [0, 0, 0], segments)   # equal stamp
    assert not stream.push(10 * S, [2, 0, 0], ident, [1, 0, 0], [0, 0, 0], segments)   # older
    assert not stream.push(12 * S, [np.nan, 0, 0], ident, [1, 0, 0], [0, 0, 0], segments)
    assert not stream.push(12 * S, [2, 0, 0], [0, 0, 0, 0], [1, 0, 0], [0, 0, 0], segments)  # unset quat
    assert stream.dropped == 4 and stream.accepted == 2 and stream.last_stamp_ns == 11 * S
    assert stream.push(12 * S, [2, 0, 0], ident, [1, 0, 0], [0, 0, 0], segments)
    assert [(s.start_ns, s.end_ns) for s in segments] == [(10 * S, 11 * S)]


def test_odometry_twist_frames():
    """Yaw 90°: body-forward 1 m/s is world north; a world-frame twist is taken as is."""
    q90 = rotations.from_yaw(math.pi / 2)
    _, q, v_world, w_body = truth_stream.odometry_to_truth_sample([1, 2, 3], q90, [1, 0, 0], [0, 0, 0.3])
    assert np.allclose(v_world, [0, 1, 0]) and np.allclose(w_body, [0, 0, 0.3]) and np.allclose(q, q90)
    _, _, v_world, w_body = truth_stream.odometry_to_truth_sample([0, 0, 0], q90, [0, 1, 0], [0.3, 0, 0],
                                                               twist_frame="world")
    assert np.allclose(v_world, [0, 1, 0]) and np.allclose(w_body, [0, -0.3, 0])  # world x = body −y
    with pytest.raises(UserError, match="twist_frame"):
        truth_stream.odometry_to_truth_sample([0, 0, 0], q90, [0, 0, 0], [0, 0, 0], twist_frame="odom")


# ------------------------------------------------------------------ node path == offline path
def node_and_offline(sensor, spec, rate, truth_rate=5.0, n=30, keys=("sim_both", "lot17", 0),
                     spacing="jittered"):
    stamps = SPACINGS[spacing](n, truth_rate)
    p, q, v, w = kinematic_series(stamps)
    loader = load_gps_model if sensor == "gps" else load_imu_model
    stream = sensor_stream.SensorStream(loader(spec, sensor_seed(2024, *keys, sensor)), rate)
    parts = []
    for i, stamp in enumerate(stamps):
        ready, accepted = stream.push_truth(int(stamp), p[i], q[i], v[i], w[i])
        assert accepted
        parts += ready
    parts += stream.finish()
    node = type(parts[0]).concatenate(parts)
    truth = GroundTruth.from_kinematics(stamps_to_seconds(stamps), p, q, v, angular_velocity=w)
    # Every tick of the truth span (not node.stamp_ns: a model may publish fewer, e.g. AirSim's start-up)
    tick_ns = ticks.ticks_ns(int(stamps[0]), int(stamps[-1]), ticks.checked_period_ns(rate), True)
    offline = loader(spec, sensor_seed(2024, *keys, sensor)).sample(truth, tick_ns)
    return node, offline, stamps


@pytest.mark.parametrize("spec", ["ch_gauss", "ch_rw_airsim", "hector", "robot_rtk_f9p"])
def test_gps_node_path_equals_offline_sample(spec):
    node, offline, stamps = node_and_offline("gps", spec, 10.0)
    period = ticks.checked_period_ns(10.0)
    expected_ticks = ticks.ticks_ns(int(stamps[0]), int(stamps[-1]), period, True)
    assert node.stamp_ns.tolist() == expected_ticks.tolist()  # every tick inside the truth span
    for name, value in offline.as_dict().items():
        assert np.array_equal(getattr(node, name), value), name


@pytest.mark.parametrize("spec", ["chrono_paper_demo", "mavs_mems", "robot_ahrs_mti"])
def test_imu_node_path_equals_offline_sample(spec):
    node, offline, _ = node_and_offline("imu", spec, 100.0)
    assert len(node) > 500
    for name, value in offline.as_dict().items():
        assert np.array_equal(getattr(node, name), value), name


@pytest.mark.parametrize("spacing, truth_rate, n", [("jittered", 5.0, 30), ("even", 20.0, 61)])
@pytest.mark.parametrize("sensor, spec", [("gps", name) for name in available_presets("gps")]
                         + [("imu", name) for name in available_presets("imu")])
def test_every_preset_node_path_equals_offline_sample_for_any_spacing(sensor, spec, spacing, truth_rate, n):
    """Streaming == batch bit for bit, every message field, on jittered and on evenly spaced truth stamps."""
    node, offline, _ = node_and_offline(sensor, spec, 10.0 if sensor == "gps" else 100.0, truth_rate, n,
                                        spacing=spacing)
    assert len(node) > (10 if sensor == "gps" else 100)
    for name, value in offline.as_dict().items():
        assert np.array_equal(getattr(node, name), value), name


def test_imu_node_on_real_imu_stamps_equals_offline_replay_sampling():
    """tick_topic: the replaced real IMU's jittery header stamps are the ticks, as the offline replay
    samples ``model.sample(truth, stamps_ns=real_stamps_inside_the_truth_span)``."""
    truth_stamps = jittery_stamps(30, 5.0)
    p, q, v, w = kinematic_series(truth_stamps)
    real_imu = jittery_stamps(700, 100.0, start_s=9.9, jitter=0.2, seed=4)  # starts before the truth
    seed = sensor_seed(3, "sim_imu-mavs_mems", "lot17", 0, "imu")
    stream = sensor_stream.SensorStream(load_imu_model("mavs_mems", seed), 100.0, explicit_ticks=True)
    parts, k = [], 0
    for i, stamp in enumerate(truth_stamps):  # messages arrive in stamp order, as the player sends them
        while k < len(real_imu) and real_imu[k] <= stamp:
            assert stream.add_tick(int(real_imu[k])) or real_imu[k] < truth_stamps[0]
            k += 1
        parts += stream.push_truth(int(stamp), p[i], q[i], v[i], w[i])[0]
    parts += stream.finish()
    node = type(parts[0]).concatenate(parts)
    truth = GroundTruth.from_kinematics(stamps_to_seconds(truth_stamps), p, q, v, angular_velocity=w)
    inside = real_imu[(real_imu >= truth_stamps[0]) & (real_imu <= truth_stamps[-1])]
    offline = load_imu_model("mavs_mems", seed).sample(truth, stamps_ns=inside)
    assert node.stamp_ns.tolist() == inside.tolist()
    for name, value in offline.as_dict().items():
        assert np.array_equal(getattr(node, name), value), name
    assert stream.dropped_ticks == int((real_imu < truth_stamps[0]).sum())


def test_late_or_unordered_explicit_ticks_are_dropped():
    class Steps:
        stamps: list = []

        def step(self, stamp_ns, truth):
            self.stamps.append(stamp_ns)

    model = Steps()
    stream = sensor_stream.SensorStream(model, 100.0, explicit_ticks=True)
    ident = [0, 0, 0, 1.0]
    assert stream.add_tick(10 * S + 50_000_000)
    assert not stream.add_tick(10 * S + 50_000_000)  # repeated stamp
    for k in range(4):  # truth at 10.0, 10.1, 10.2, 10.3 s: segment [10.0, 10.1) is finished at 10.2
        stream.push_truth(10 * S + k * 100_000_000, [0, 0, 0], ident, [0, 0, 0], [0, 0, 0])
    assert not stream.add_tick(10 * S + 150_000_000)  # its segment [10.1, 10.2) is already done
    assert stream.add_tick(10 * S + 250_000_000)
    stream.finish()
    assert model.stamps == [10 * S + 50_000_000, 10 * S + 250_000_000]
    assert stream.dropped_ticks == 2
    with pytest.raises(RuntimeError, match="explicit_ticks"):
        sensor_stream.SensorStream(model, 100.0).add_tick(1)


def test_hold_mode_uses_the_earlier_truth_sample_and_gaps_are_skipped():
    class Recorder:
        def __init__(self):
            self.calls = []

        def step(self, stamp_ns, truth):
            self.calls.append((stamp_ns, truth.position[0].copy()))
            return None

    model = Recorder()
    stream = sensor_stream.SensorStream(model, 10.0, truth_mode="hold", max_truth_gap_s=0.5)
    ident = [0, 0, 0, 1.0]
    for k, x in ((0, 0.0), (2, 2.0), (4, 4.0), (14, 14.0), (16, 16.0)):  # truth at 5 Hz, gap 0.4..1.4 s
        stream.push_truth(10 * S + k * 100_000_000, [x, 0, 0], ident, [10, 0, 0], [0, 0, 0])
    stream.finish()
    got = {(stamp - 10 * S) // 100_000_000: pos[0] for stamp, pos in model.calls}
    assert got == {0: 0.0, 1: 0.0, 2: 2.0, 3: 2.0, 14: 14.0, 15: 14.0, 16: 16.0}
    assert stream.skipped_ticks == 10  # ticks 4..13 lie in the 1 s truth gap
    with pytest.raises(UserError, match="truth_mode"):
        sensor_stream.SensorStream(model, 10.0, truth_mode="extrapolate")


# -------------------------------------------------------------------------------- parameters
def test_noise_node_parameters_defaults_and_preset_overrides():
    config = node_params.parse_noise_node_params("gps", {"use_sim_time": True})
    assert (config.model_spec, config.rate_hz, config.frame_id, config.output_topic, config.truth_topic) == (
        "robot_rtk_f9p", 10.0, "gps", "/fix", "/ground_truth/odom")  # the realistic robot default
    config = node_params.parse_noise_node_params("imu", {
        "imu_model": "chrono_paper_demo", "seed": 7, "seed_keys": ["sim_imu", "lot17", "0"], "imu_rate": 200,
        "model_params.accelerometer.sigma": [0.1, 0.1, 0.02],
        "model_params.mounting_rpy": [0.0, -1.5708, 3.1416]})
    assert config.model_spec == {"preset": "chrono_paper_demo", "accelerometer": {"sigma": [0.1, 0.1, 0.02]},
                                 "mounting_rpy": [0.0, -1.5708, 3.1416]}
    assert config.seed_keys == ["sim_imu", "lot17", 0] and config.rate_hz == 200.0
    assert config.seed_sequence().entropy == sensor_seed(7, "sim_imu", "lot17", 0, "imu").entropy
    model = config.load_model()  # the overrides reach the model through the preset's own keys
    assert model.period_ns == 5_000_000  # the node's rate, 200 Hz
    assert model.mounting_rpy == [0.0, -1.5708, 3.1416]


def test_node_parameters_are_named_as_the_launch_arguments():
    """One vocabulary: every sensors.launch.py argument a noise node takes is that node's parameter."""
    from sim2real_eval.node.launch_plan import SENSORS_ARGUMENTS
    for sensor in ("gps", "imu"):
        declared = set(node_params.noise_node_defaults(sensor))
        for name in (f"{sensor}_model", f"{sensor}_rate", "seed", "seed_keys", "truth_topic", "twist_frame"):
            assert name in SENSORS_ARGUMENTS and name in declared, (sensor, name)
    assert "truth_source" in node_params.GROUND_TRUTH_DEFAULTS


def test_a_list_parameter_given_without_a_value_is_the_empty_list():
    """``seed_keys: []`` (YAML) or ``-p seed_keys:=[]``: rcl stores NOT_SET, the node sees None."""
    config = node_params.parse_noise_node_params("gps", {"seed_keys": None})
    assert config.seed_keys == []
    assert node_params.parse_ground_truth_params({"datum": None}).datum is None
    with pytest.raises(UserError, match="parameter gps_rate: given without a value"):
        node_params.parse_noise_node_params("gps", {"gps_rate": None})


@pytest.mark.parametrize("params, match", [
    ({"gps_rate": 0.0}, "parameter gps_rate"),
    ({"gps_rate": "fast"}, "parameter gps_rate"),
    ({"seed": -1}, "parameter seed"),
    ({"seed_keys": "a,b"}, "parameter seed_keys"),
    ({"truth_mode": "extrapolate"}, "parameter truth_mode"),
    ({"max_truth_gap": 0.0}, "parameter max_truth_gap"),
    ({"twist_frame": "odom"}, "parameter twist_frame"),
    ({"gps_model": ""}, "parameter gps_model"),
    ({"frame_id": 3}, "parameter frame_id"),
    ({"truth_topic": "1x"}, "parameter truth_topic"),
    ({"imu_rate": 5.0}, "unknown parameter.*imu_rate"),
    ({"model": "ch_rw"}, "unknown parameter.*model;"),
    ({"model_params.sigma": None}, "parameter model_params.sigma: given without a value"),
])
def test_noise_node_parameter_errors_name_the_parameter(params, match):
    with pytest.raises(UserError, match=match) as info:
        node_params.parse_noise_node_params("gps", params)
    assert "\n" not in str(info.value)


def test_unknown_model_fails_at_start_up_with_one_line():
    config = node_params.parse_noise_node_params("gps", {"gps_model": "no_such_preset"})
    with pytest.raises(UserError, match="unknown preset 'no_such_preset'") as info:
        config.load_model()
    assert "\n" not in str(info.value)


def test_recorder_parameters(tmp_path):
    config = node_params.parse_recorder_params({"output": str(tmp_path / "run"), "storage": "mcap",
                                                "required_topics": ["/fix"]})
    assert config.storage == "mcap" and "/odometry/filtered" in config.topics
    assert config.required_topics == ["/fix"]
    assert node_params.missing_topics({"/fix": 3, "/imu": 0}, ["/fix", "/imu", "/odometry/filtered"]) == [
        "/imu", "/odometry/filtered"]
    with pytest.raises(UserError, match="parameter output: .* already exists"):
        node_params.parse_recorder_params({"output": str(tmp_path)})
    with pytest.raises(UserError, match="parameter storage"):
        node_params.parse_recorder_params({"output": str(tmp_path / "x"), "storage": "rosbag1"})
    with pytest.raises(UserError, match="parameter output"):
        node_params.parse_recorder_params({})
    with pytest.raises(UserError, match="required_topics: /tf not in topics"):
        node_params.parse_recorder_params({"output": str(tmp_path / "y"), "required_topics": ["/tf"]})


def test_replay_parameters():
    config = node_params.parse_replay_params({"bag": "/data/line/run_00", "mode": "real", "k": 3,
                                              "wait_for": ["/fix=2", "/imu=3"], "play_rate": 2})
    assert (config.mode, config.k, config.play_rate, config.scenario) == ("real", 3, 2.0, "")
    assert config.wait_for == [("/fix", 2), ("/imu", 3)]
    for params, match in (({}, "parameter bag"), ({"bag": "b", "mode": "sim"}, "parameter mode"),
                          ({"bag": "b", "wait_for": ["/fix"]}, "parameter wait_for"),
                          ({"bag": "b", "play_rate": 0}, "parameter play_rate"),
                          ({"bag": "b", "k": -2}, "parameter k")):
        with pytest.raises(UserError, match=match):
            node_params.parse_replay_params(params)


# ------------------------------------------------------------------------- sbg ground truth
def test_sbg_ekf_pair_in_ned_becomes_enu_odometry():
    """Driver default NED: identity attitude = facing north (ENU yaw 90°); velocity N 2 m/s."""
    config = node_params.parse_ground_truth_params({"truth_source": "sbg_ekf"})
    assembler = sbg_truth.SbgTruthAssembler(config)
    assert assembler.on_ekf_nav(10 * S, [2, 0, 0], 43.07, -89.4, 260.0, -33.0) is None  # no attitude yet
    first = assembler.on_ekf_quat(10 * S, [0, 0, 0, 1.0])  # completes the pair
    assert np.allclose(first.position, 0, atol=1e-9)  # datum = first fix (ellipsoidal height 227 m)
    assert assembler.datum == [43.07, -89.4, 227.0]
    assert rotations.yaw_of(first.orientation) == pytest.approx(math.pi / 2)
    assert np.allclose(first.linear_velocity_body, [2, 0, 0], atol=1e-12)
    assert np.allclose(first.angular_velocity_body, 0)
    # 0.5 s later, yawed 0.1 rad to the east (NED yaw +0.1 = clockwise = ENU yaw −0.1).
    assembler.on_ekf_quat(10 * S + S // 2 - 30_000_000, [0, 0, 0, 1.0])  # older partner, 30 ms off
    assert assembler.on_ekf_nav(10 * S + S // 2, [2.0, 0.0, 0.0], 43.07 + 1e-5, -89.4, 260.0, -33.0) is None
    second = assembler.on_ekf_quat(10 * S + S // 2 + 1_000_000, [0, 0, math.sin(0.05), math.cos(0.05)])
    assert second.position[1] == pytest.approx(1.11, abs=0.01)  # 1e-5 deg of latitude ≈ 1.11 m north
    assert second.stamp_ns == 10 * S + S // 2  # the position message's stamp, the closer attitude
    assert second.angular_velocity_body[2] == pytest.approx(-0.2, rel=1e-3)
    assembler.on_ekf_quat(10 * S, [0, 0, 0, 1.0])
    assert assembler.on_ekf_nav(10 * S, [2, 0, 0], 43.07, -89.4, 260.0, -33.0) is None  # stamp went back
    assert assembler.dropped == 1


def test_sbg_gps_pair_uses_course_and_holds_yaw_when_slow():
    assembler = sbg_truth.SbgTruthAssembler(node_params.parse_ground_truth_params({}))  # auto
    assembler.on_gps_vel(10 * S, [0.0, 3.0, 0.0], 90.0)    # NED: 3 m/s east, course 90°
    out = assembler.on_gps_pos(10 * S, 43.0, -89.0, 300.0, 0.0)
    assert assembler.active == "sbg_gps"
    assert rotations.yaw_of(out.orientation) == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(out.linear_velocity_body, [3, 0, 0], atol=1e-12)
    assembler.on_gps_vel(10 * S + S // 5, [0.1, 0.0, 0.0], 0.0)  # crawling north: course is noise
    out = assembler.on_gps_pos(10 * S + S // 5, 43.0, -89.0, 300.0, 0.0)
    assert rotations.yaw_of(out.orientation) == pytest.approx(0.0, abs=1e-12)
    assembler.on_ekf_quat(11 * S, [0, 0, 0, 1.0])
    assert assembler.on_ekf_nav(11 * S, [1, 0, 0], 43, -89, 300, 0) is None  # auto stuck to gps


@pytest.mark.parametrize("params, match", [
    ({"truth_source": "ekf"}, "parameter truth_source"), ({"datum": [91.0, 0.0, 0.0]}, "parameter datum"),
    ({"sbg_enu": "yes"}, "parameter sbg_enu"), ({"min_course_speed": -1.0}, "min_course_speed"),
    ({"use_enu": True}, "unknown parameter"),
])
def test_ground_truth_parameter_errors(params, match):
    with pytest.raises(UserError, match=match):
        node_params.parse_ground_truth_params(params)
