"""Ground-truth adapters: recover a known trajectory from synthetic bags of every supported source."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.bags import merge_by_time, sbg_ekf_nav_messages, sbg_ekf_quat_messages
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import message_fields, rotations
from sim2real_eval.bags import get_typestore, open_bag, write_bag
from sim2real_eval.bags import messages as M
from sim2real_eval.errors import UserError
from sim2real_eval.models.samples import GpsSamples
from sim2real_eval.stamps import seconds_to_ns
from sim2real_eval.truth import GRAVITY, GroundTruth
from sim2real_eval.truth.bag import smooth_derivative, truth_from_bag, zero_phase_lowpass

DATUM = (43.0700, -89.4000, 260.0)
RADIUS, SPEED = 5.0, 1.0  # ART-scale circle: yaw rate 0.2 rad/s, centripetal 0.2 m/s²
T0 = 1_708_000_000.0      # epoch seconds, as in a real bag


def circle_truth(duration=40.0, dt=0.005, pitch=0.0, roll=0.0) -> GroundTruth:
    """Analytic circle, counter-clockwise, starting at the origin heading east."""
    t = T0 + np.arange(0.0, duration, dt)
    w = SPEED / RADIUS
    th = w * (t - T0)
    pos = np.stack([RADIUS * np.sin(th), RADIUS * (1 - np.cos(th)), 0 * t], 1)
    vel = np.stack([SPEED * np.cos(th), SPEED * np.sin(th), 0 * t], 1)
    acc = np.stack([-SPEED * w * np.sin(th), SPEED * w * np.cos(th), 0 * t], 1)
    q = rotations.from_rpy(np.full_like(t, roll), np.full_like(t, pitch), th)
    # Constant roll/pitch about the yawing frame: body rates = R_bwᵀ·(0, 0, w).
    rates = rotations.rotate_inverse(q, np.tile([0.0, 0.0, w], (len(t), 1)))
    return GroundTruth.from_kinematics(t, pos, q, vel, angular_velocity=rates, world_acceleration=acc)


def _fix_stream(truth):
    """A /fix topic beside the INS topics, as in the ART bags (1 Hz); the adapters must ignore it."""
    stamps = M.tick_stamps_ns(truth, 1.0)
    n = len(stamps)
    return M.navsatfix_messages(GpsSamples(
        stamp_ns=stamps, receive_ns=stamps, latitude=np.full(n, DATUM[0]), longitude=np.full(n, DATUM[1]),
        altitude=np.full(n, DATUM[2]), status=np.zeros(n), service=np.ones(n),
        position_covariance=np.zeros((n, 9)), position_covariance_type=np.zeros(n),
        enu_error=np.zeros((n, 3))))


def _errors(recovered: GroundTruth, reference: GroundTruth, edge_s=2.0):
    ref = reference.interpolate(recovered.t)
    inner = (recovered.t > recovered.t[0] + edge_s) & (recovered.t < recovered.t[-1] - edge_s)
    dyaw = np.angle(np.exp(1j * (rotations.yaw_of(recovered.orientation) -
                                 rotations.yaw_of(ref.orientation))))
    return {
        "position": np.abs(recovered.position - ref.position).max(),
        "velocity": np.abs(recovered.velocity - ref.velocity).max(),
        "yaw": np.abs(dyaw).max(),
        "specific_force": np.abs(recovered.specific_force - ref.specific_force)[inner].max(),
        "rates": np.abs(recovered.angular_velocity - ref.angular_velocity)[inner].max(),
    }


@pytest.fixture(scope="module")
def art_bag(tmp_path_factory):
    """ART Feb-2024 layout with sbg_driver 3.1.0: /fix, /sbg/gps_pos, /sbg/gps_vel at 5 Hz (NED)."""
    truth = circle_truth()
    bag = write_bag(tmp_path_factory.mktemp("art") / "art", merge_by_time(
        _fix_stream(truth), M.sbg_gps_pos_messages(truth, DATUM, undulation=-33.5),
        M.sbg_gps_vel_messages(truth)), typestore=get_typestore(sbg_layout="3.1"))
    return truth, bag


def test_art_gps_vel_and_pos_recover_the_trajectory(art_bag):
    truth, bag = art_bag
    with open_bag(bag) as reader:
        recovered, datum = truth_from_bag(reader)  # auto -> sbg_gps
    assert len(recovered) == 200  # 40 s at 5 Hz
    assert datum == pytest.approx(DATUM, abs=1e-9)
    err = _errors(recovered, truth)
    assert err["position"] < 1e-3       # geodesy round trip incl. undulation (MSL altitude)
    assert err["velocity"] < 1e-9       # NED -> ENU is exact
    assert err["yaw"] < 1e-9            # heading of the velocity (sideslip-free truth)
    # Derivatives at 5 Hz through the zero-phase smoother: centripetal 0.2 m/s², yaw rate 0.2 rad/s.
    assert err["specific_force"] < 5e-3
    assert err["rates"] < 5e-3
    assert np.allclose(recovered.specific_force[:, 2], GRAVITY)


def test_gps_vel_alone_integrates_position(tmp_path):
    truth = circle_truth(duration=20.0)
    bag = write_bag(tmp_path / "b", M.sbg_gps_vel_messages(truth))
    with open_bag(bag) as reader:
        recovered, datum = truth_from_bag(reader, source="sbg_gps")
    assert datum is None
    err = _errors(recovered, truth)
    # Trapezoid rule bound: N·Δt³/12·max|v''| = 100 · 0.2³/12 · (1 · 0.2²) = 2.7 mm after 20 s.
    assert err["position"] < 100 * 0.2**3 / 12 * SPEED * (SPEED / RADIUS) ** 2
    assert err["velocity"] < 1e-9


@pytest.mark.parametrize("layout", ["3.1", "3.2"])
def test_ekf_nav_and_quat_recover_3d_attitude(tmp_path, layout):
    truth = circle_truth(duration=20.0, roll=0.05, pitch=-0.1)
    store = get_typestore(sbg_layout=layout)
    bag = write_bag(tmp_path / "b", merge_by_time(
        sbg_ekf_nav_messages(truth, DATUM, rate_hz=50.0, typestore=store),
        sbg_ekf_quat_messages(truth, rate_hz=50.0, typestore=store)), typestore=store)
    with open_bag(bag) as reader:
        recovered, datum = truth_from_bag(reader)  # auto -> sbg_ekf
    ref = truth.interpolate(recovered.t)
    angle = 2 * np.arccos(np.clip(np.abs(np.sum(recovered.orientation * ref.orientation, axis=1)), 0, 1))
    assert angle.max() < 1e-9
    err = _errors(recovered, truth, edge_s=1.0)
    assert err["position"] < 1e-3 and err["velocity"] < 1e-9
    assert err["rates"] < 2e-3 and err["specific_force"] < 2e-3
    assert datum == pytest.approx(DATUM, abs=1e-9)


def test_enu_mode_bag(tmp_path):
    """Driver with use_enu: velocities already (E, N, U) — same truth when told so."""
    truth = circle_truth(duration=10.0)
    store = get_typestore()

    def to_enu(stream):
        for m in stream:
            v = m.msg.velocity
            m.msg.velocity = store.types["geometry_msgs/msg/Vector3"](v.y, v.x, -v.z)
            yield m

    bag = write_bag(tmp_path / "b", to_enu(M.sbg_gps_vel_messages(truth)))
    with open_bag(bag) as reader:
        recovered, _ = truth_from_bag(reader, enu_mode=True)
        wrong, _ = truth_from_bag(reader, enu_mode=False)
    assert _errors(recovered, truth)["velocity"] < 1e-9
    assert _errors(wrong, truth)["velocity"] > 0.5


def test_odometry_source_round_trip(tmp_path):
    truth = circle_truth(duration=10.0, dt=0.01, roll=0.02)
    bag = write_bag(tmp_path / "b", M.truth_odometry_messages(truth))
    with open_bag(bag) as reader:
        recovered, datum = truth_from_bag(reader)
    assert datum is None
    np.testing.assert_allclose(recovered.position, truth.position, atol=1e-12)
    np.testing.assert_allclose(recovered.velocity, truth.velocity, atol=1e-12)  # body twist -> world
    np.testing.assert_allclose(recovered.angular_velocity, truth.angular_velocity, atol=1e-12)
    err = _errors(recovered, truth, edge_s=1.0)
    assert err["specific_force"] < 1e-3


def test_twist_source_integrates(tmp_path):
    truth = circle_truth(duration=10.0, dt=0.02)
    stamps = seconds_to_ns(truth.t)
    msgs = M.build_messages(message_fields.TWIST_STAMPED, {
        "stamp_ns": stamps, "frame_id": "base_link", "linear_velocity": [SPEED, 0, 0],
        "angular_velocity": [0, 0, SPEED / RADIUS]}, stamps, "/ground_truth/twist")
    bag = write_bag(tmp_path / "b", msgs)
    with open_bag(bag) as reader:
        recovered, _ = truth_from_bag(reader)
    err = _errors(recovered, truth, edge_s=1.0)
    assert err["position"] < 1e-3 and err["yaw"] < 1e-9 and err["velocity"] < 1e-9
    assert err["specific_force"] < 2e-3


# --- bad input ----------------------------------------------------------------------------------

def test_ins_topic_absent(art_bag):
    _truth, bag = art_bag
    with open_bag(bag) as reader:
        with pytest.raises(UserError, match="no sbg_driver/msg/SbgEkfNav topic"):
            truth_from_bag(reader, source="sbg_ekf")
        with pytest.raises(UserError, match=r"topic /ins/nav \(gps_vel\) is not in the bag"):
            truth_from_bag(reader, source="sbg_gps", topics={"gps_vel": "/ins/nav"})
        with pytest.raises(UserError, match="has type sensor_msgs/msg/NavSatFix"):
            truth_from_bag(reader, topics={"gps_vel": "/fix"})
        with pytest.raises(UserError, match="source"):
            truth_from_bag(reader, source="gnss")


def test_no_truth_topic_at_all(tmp_path):
    store = get_typestore()
    bag = write_bag(tmp_path / "b", [(1, "/odometry/filtered", "nav_msgs/msg/Odometry",
                                      M.default_message("nav_msgs/msg/Odometry", store))])
    with open_bag(bag) as reader, pytest.raises(UserError, match="no ground-truth topic found"):
        truth_from_bag(reader)


def test_timestamps_going_backwards(tmp_path):
    truth = circle_truth(duration=5.0)
    msgs = list(M.sbg_gps_vel_messages(truth))
    msgs[10].msg.header.stamp = msgs[8].msg.header.stamp
    bag = write_bag(tmp_path / "b", msgs)
    with open_bag(bag) as reader, pytest.raises(UserError, match=r"/sbg/gps_vel: timestamps go backwards"):
        truth_from_bag(reader)


def test_never_moving_without_attitude(tmp_path):
    truth = GroundTruth.from_kinematics(T0 + np.arange(0, 5, 0.01), np.zeros((500, 3)),
                                        np.tile([0, 0, 0, 1.0], (500, 1)), np.zeros((500, 3)))
    bag = write_bag(tmp_path / "b", M.sbg_gps_vel_messages(truth))
    with open_bag(bag) as reader, pytest.raises(UserError, match="heading is unknown"):
        truth_from_bag(reader)


# --- the differentiator ---------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.floats(-10, 10), st.floats(-5, 5), st.floats(1.0, 200.0), st.integers(20, 400))
def test_smooth_derivative_is_exact_on_lines(offset, slope, rate, n):
    """Zero phase, unit DC gain, odd-extension padding: a straight line keeps its slope everywhere."""
    t = 100.0 + np.arange(n) / rate
    d = smooth_derivative(t, offset + slope * (t - 100.0))
    np.testing.assert_allclose(d, slope, atol=1e-6 * (1 + abs(slope)))


def test_smooth_derivative_adds_no_lag():
    """Below the cut-off a sine comes through in phase: the derivative of sin(ωt) peaks with cos(ωt)."""
    rate, f = 50.0, 0.5
    t = np.arange(0, 20, 1 / rate)
    d = smooth_derivative(t, np.sin(2 * np.pi * f * t), cutoff_hz=5.0)
    expected = 2 * np.pi * f * np.cos(2 * np.pi * f * t)
    inner = slice(100, -100)
    lag = np.argmax(np.correlate(d[inner], expected[inner], "full")) - (len(expected[inner]) - 1)
    assert lag == 0
    assert np.abs(d - expected)[inner].max() < 0.01 * 2 * np.pi * f


def test_lowpass_removes_noise_and_short_series_pass_through():
    rng = np.random.default_rng(0)
    t = np.arange(0, 10, 0.01)
    noisy = np.sin(t) + rng.normal(0, 0.1, t.size)
    assert np.std(zero_phase_lowpass(t, noisy, 2.0) - np.sin(t)) < 0.04
    short = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(zero_phase_lowpass(np.arange(3.0), short), short)


def test_uneven_stamps_and_receive_clock(tmp_path):
    """Real 5 Hz stamps jitter: the differentiator works on the true stamps; clock="receive" uses the
    bag's receive times instead of header stamps."""
    truth = circle_truth(duration=30.0)
    rng = np.random.default_rng(3)
    stamps = M.tick_stamps_ns(truth, 5.0)[1:-1] + rng.integers(-10_000_000, 10_000_000, 148)
    delay = 3_000_000

    def delayed(stream):
        for m in stream:
            yield m._replace(recv_ns=m.recv_ns + delay)

    bag = write_bag(tmp_path / "b", merge_by_time(
        delayed(M.sbg_gps_vel_messages(truth, stamps_ns=stamps)),
        delayed(M.sbg_gps_pos_messages(truth, DATUM, stamps_ns=stamps))))
    with open_bag(bag) as reader:
        # The first fix is 0.2 s into the circle: anchor the ENU frame at the truth's own datum.
        recovered, datum = truth_from_bag(reader, datum=DATUM)
        received, _ = truth_from_bag(reader, clock="receive")
    assert datum == DATUM
    # float64 seconds at epoch scale (1.7e9 s) resolve 238 ns: compare to within one ulp.
    np.testing.assert_allclose(seconds_to_ns(recovered.t), stamps, rtol=0, atol=240)
    np.testing.assert_allclose(seconds_to_ns(received.t), stamps + delay, rtol=0, atol=240)
    err = _errors(recovered, truth)
    assert err["position"] < 1e-3 and err["velocity"] < 1e-9 and err["yaw"] < 1e-9
    assert err["specific_force"] < 5e-3 and err["rates"] < 5e-3
