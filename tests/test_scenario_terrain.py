"""The terrain scenario: a skid-steer robot (unicycle model) on a height field, with 3-D attitude truth."""

import math
import re

import numpy as np
import pytest
import yaml

from sim2real_eval import rotations, scenarios
from sim2real_eval.errors import UserError
from sim2real_eval.models import sensor_seed
from sim2real_eval.truth import GRAVITY, GroundTruth, body_rates_from_orientation


@pytest.fixture(scope="module")
def drives():
    return [scenarios.generate("terrain", k=k, seed=0) for k in range(3)]


def speed(truth):
    return np.linalg.norm(truth.velocity, axis=1)


def test_clock_length_and_rest_at_both_ends(drives):
    for truth in drives:
        truth.validate("terrain")
        assert truth.t[0] == 10.0 and np.allclose(np.diff(truth.t), 0.005)
        assert 180.0 <= truth.duration <= 240.0  # 30-s windows: >= 6 runs
        assert speed(truth)[0] == 0.0 and speed(truth)[-1] < 1e-3
        assert np.abs(truth.angular_velocity[-1]).max() < 1e-3
        np.testing.assert_array_equal(truth.position[0], [0.0, 0.0, 0.0])


def test_slow_rover_speeds_and_skid_steer_yaw_rates(drives):
    """Median ~0.35 m/s, 5-95 % ~0.2-0.9 m/s while moving; yaw rates up to ~0.8 rad/s, including
    turns on the spot (yaw rate without speed)."""
    for truth in drives:
        v = speed(truth)
        p5, p50, p95 = np.percentile(v[v > 0.05], [5, 50, 95])
        assert 0.3 <= p50 <= 0.42 and 0.12 <= p5 <= 0.25 and 0.8 <= p95 <= 1.0
        yaw_rate = np.abs(truth.angular_velocity[:, 2])
        assert 0.7 <= yaw_rate.max() <= 1.0
        on_the_spot = (v < 0.01) & (yaw_rate > 0.5)
        assert on_the_spot.sum() * 0.005 > 4.0  # seconds spent turning on the spot


def test_pitch_and_roll_follow_the_terrain(drives):
    """Pitch and roll reach about +-8 deg (5-95 %) and stay within +-13 deg; z moves by ~1 m."""
    for truth in drives:
        roll, pitch, _ = np.degrees(rotations.to_rpy(truth.orientation)).T
        for angle in (roll, pitch):
            low, high = np.percentile(angle, [5, 95])
            assert -10.0 <= low <= -4.0 and 4.0 <= high <= 10.0
            assert np.abs(angle).max() < 13.0
        assert 0.5 < np.ptp(truth.position[:, 2]) < 3.0


def test_rates_are_the_attitude_derivative(drives):
    """Body rates (exact, from the Hessian of h) = 2·vec(q*⊗q̇) of the attitude series, numerically."""
    truth = drives[0]
    numeric = body_rates_from_orientation(truth.t, truth.orientation)
    error = np.abs(numeric - truth.angular_velocity).max(axis=1)
    assert np.percentile(error, 99) < 1e-4  # rad/s; larger only at the yaw-rate command switches
    assert error.max() < 5e-3


def test_velocity_and_specific_force_are_the_position_derivatives(drives):
    """v = ṗ; f = Rᵀ·(dv/dt + g·ẑ) by the numerical derivative.  Without the per-repeat variation the
    two agree to 1e-4 except at the few command switches; with it, the commands' Gauss–Markov
    disturbance steps v̇ a little at every sample, which the numerical derivative smears (~5e-3)."""
    data, source, _ = scenarios.load_scenario("terrain")
    data.pop("variation")
    nominal = scenarios.simulate(data, source, sensor_seed(0, "test"))
    for truth, typical in ((nominal, 1e-4), (drives[0], 2e-2)):
        dt = 0.005
        np.testing.assert_allclose(np.diff(truth.position, axis=0) / dt,
                                   0.5 * (truth.velocity[1:] + truth.velocity[:-1]), atol=2e-4)
        numeric = GroundTruth.from_kinematics(truth.t, truth.position, truth.orientation, truth.velocity)
        diff = np.abs(numeric.specific_force - truth.specific_force).max(axis=1)
        assert np.percentile(diff, 99) < typical
        assert (diff > 0.05).sum() < 40  # speed command switches (acceleration steps)
    truth = drives[0]
    # the body frame lies on the ground: velocity along body x, none along body y or z
    body_velocity = rotations.rotate_inverse(truth.orientation, truth.velocity)
    assert np.abs(body_velocity[:, 1:]).max() < 1e-12


def test_at_rest_the_accelerometer_reads_g_up_in_the_tilted_body(drives):
    """Standstill on a slope: f = Rᵀ·(0, 0, g), |f| = g, tilted by the attitude (REP-145)."""
    truth = drives[0]
    still = (speed(truth) == 0.0) & (np.abs(truth.angular_velocity).max(axis=1) < 1e-9)
    still[:-1] &= still[1:]  # not the sample a start accelerates from (v = 0, v̇ > 0)
    assert still.sum() > 100
    expected = rotations.rotate_inverse(truth.orientation[still], [0.0, 0.0, GRAVITY])
    np.testing.assert_allclose(truth.specific_force[still], expected, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(truth.specific_force[still], axis=1), GRAVITY, atol=1e-9)


def one_wave(amplitude=0.2, wavelength=10.0):
    waves = [{"amplitude": amplitude, "wavelength": wavelength}]
    return scenarios.Terrain(scenarios.Section({"terrain": waves}, "test"))


def at(terrain, x, y, yaw, v, yaw_rate, accel):
    args = [np.array([value], dtype=float) for value in (x, y, yaw, v, yaw_rate, accel)]
    return scenarios._on_terrain(terrain, np.array([0.0]), *args)


def test_hand_computed_states_on_one_wave():
    """h = a·sin(kx), a = 0.2 m, k = 2π/10 m: slope a·k at x = 0, a crest at x = 2.5 m."""
    a, k = 0.2, 2 * math.pi / 10.0
    terrain = one_wave()
    s = a * k
    n = math.sqrt(1 + s * s)
    # Driving east up the slope at 1 m/s, steady: no rates (h_xx = 0 there), f = g·(s/n, 0, 1/n);
    # pitch = −atan(s) (nose up is negative pitch about y-left).
    truth = at(terrain, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    np.testing.assert_allclose(truth.specific_force[0], [GRAVITY * s / n, 0.0, GRAVITY / n], atol=1e-12)
    np.testing.assert_allclose(truth.angular_velocity[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(truth.velocity[0], [1 / n, 0.0, s / n], atol=1e-12)
    np.testing.assert_allclose(rotations.to_rpy(truth.orientation)[0], [0.0, -math.atan(s), 0.0], atol=1e-12)
    # Heading north on the same slope: it rises to the right, roll = −atan(s); f_y = −g·s/n.
    truth = at(terrain, 0.0, 0.0, math.pi / 2, 0.0, 0.0, 0.0)
    np.testing.assert_allclose(truth.specific_force[0], [0.0, -GRAVITY * s / n, GRAVITY / n], atol=1e-12)
    np.testing.assert_allclose(rotations.to_rpy(truth.orientation)[0], [-math.atan(s), 0.0, math.pi / 2],
                               atol=1e-12)
    # Over the crest (x = 2.5 m, h_xx = −a·k²) at v = 0.8 m/s, braking at 0.3 m/s²: the nose drops at
    # ω_y = a·k²·v, the path curves down (a_z = −a·k²·v²): f = (−0.3, 0, g − a·k²·v²).
    v = 0.8
    truth = at(terrain, 2.5, 0.0, 0.0, v, 0.0, -0.3)
    np.testing.assert_allclose(truth.angular_velocity[0], [0.0, a * k * k * v, 0.0], atol=1e-12)
    np.testing.assert_allclose(truth.specific_force[0], [-0.3, 0.0, GRAVITY - a * k * k * v * v], atol=1e-12)
    # Turning on the spot on flat ground: ω_z only.
    flat = scenarios.Terrain(scenarios.Section({}, "test"))
    truth = at(flat, 1.0, 2.0, 0.3, 0.0, 0.7, 0.0)
    np.testing.assert_allclose(truth.angular_velocity[0], [0.0, 0.0, 0.7], atol=1e-12)
    np.testing.assert_allclose(truth.specific_force[0], [0.0, 0.0, GRAVITY], atol=1e-12)
    # Turning at speed on flat ground: centripetal v·ω to the left.
    truth = at(flat, 0.0, 0.0, 0.0, 0.5, 0.6, 0.0)
    np.testing.assert_allclose(truth.specific_force[0], [0.0, 0.5 * 0.6, GRAVITY], atol=1e-12)


def test_flat_terrain_is_the_planar_unicycle():
    """Without terrain waves: z = 0, roll = pitch = 0, f_z = g, and a constant-rate turn is a circle
    of radius v/ω."""
    data = {"model": "unicycle", "phases": [{"duration": 30.0, "speed": 0.5, "yaw_rate": 0.25}]}
    truth = scenarios.simulate(data, "test", sensor_seed(0, "test"))
    assert np.abs(truth.position[:, 2]).max() == 0.0
    assert np.abs(rotations.to_rpy(truth.orientation)[:, :2]).max() < 1e-12
    np.testing.assert_allclose(truth.specific_force[:, 2], GRAVITY, atol=1e-12)
    late = truth.t > 25.0  # steady: v = 0.5 m/s, ω = 0.25 rad/s → R = 2 m
    centre_offset = truth.velocity[late, :2][:, ::-1] * [-1, 1] / 0.25  # left normal · R
    centres = truth.position[late, :2] + centre_offset
    assert np.ptp(centres, axis=0).max() < 1e-3


def test_repeats_are_seeded_and_differ():
    a = scenarios.generate("terrain", k=1, seed=3)
    b = scenarios.generate("terrain", k=1, seed=3)
    c = scenarios.generate("terrain", k=2, seed=3)
    for name in ("position", "orientation", "specific_force"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert np.abs(a.position - c.position).max() > 0.5


def test_bad_terrain_yaml_names_the_key(tmp_path):
    base = yaml.safe_load(open(scenarios.load_scenario("terrain")[1]))
    cases = [({"terrain": [{"amplitude": 0.1}]}, "terrain[0].wavelength"),
             ({"terrain": {"amplitude": 0.1}}, "terrain"),
             ({"steer": 0.1}, "steer"),
             ({"model": "tank"}, "model"),
             ({"phases": [{"duration": 3.0, "steer": 0.1}]}, "phases[0]: unknown key(s) steer")]
    for change, key in cases:
        data = dict(base, **change)
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(UserError, match=re.escape(key)):
            scenarios.generate(path)


def test_the_reference_generator_takes_the_terrain_scenario():
    """`make-reference --scenario terrain`: the reference setup's sensors on the terrain drive (a run
    outside the study, recorded before it on the epoch clock)."""
    from sim2real_eval import reference

    setup = reference.load_setup()
    records, truth = reference.reference_messages(setup, "terrain", 0)
    assert truth.t[0] < setup.start_time and 200 < truth.duration < 240
    topics = {}
    for record in records:
        topics[record[1]] = topics.get(record[1], 0) + 1
    assert topics["/fix"] > 2000 and topics["/imu"] > 20000
    assert np.ptp(rotations.to_rpy(truth.orientation)[:, 1]) > math.radians(10)
