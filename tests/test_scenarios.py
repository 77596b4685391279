"""Scenarios: kinematic bicycle consistency, start/stop, seeding, bad YAML."""

import math

import numpy as np
import pytest
import yaml

from sim2real_eval import rotations, scenarios
from sim2real_eval.errors import UserError
from sim2real_eval.models import sensor_seed
from sim2real_eval.truth import GRAVITY, GroundTruth

NAMES = ["line", "sine", "circle", "rest"]


@pytest.fixture(scope="module")
def generated():
    return {name: scenarios.generate(name, k=0, seed=0) for name in NAMES}


def nominal(name, **changes):
    """The scenario's parameters with the per-repeat variation switched off."""
    data, source, _ = scenarios.load_scenario(name)
    data.pop("variation", None)
    data.update(changes)
    return scenarios.simulate(data, source, sensor_seed(0, "test"))


@pytest.mark.parametrize("name", NAMES)
def test_shape_clock_planar_start_and_stop(generated, name):
    truth = generated[name]
    assert isinstance(truth, GroundTruth)
    truth.validate(name)
    assert truth.t[0] == 10.0
    assert np.diff(truth.t).max() <= 0.01 + 1e-12  # ≥ 100 Hz
    assert 29.0 <= truth.duration <= 32.0
    speed = np.hypot(truth.velocity[:, 0], truth.velocity[:, 1])
    assert speed[0] == 0.0 and speed[-1] < 2e-3  # starts at rest, ends (practically) stopped
    assert (truth.position[:, 2] == 0).all() and (truth.velocity[:, 2] == 0).all()
    rpy = rotations.to_rpy(truth.orientation)
    assert np.abs(rpy[:, :2]).max() < 1e-12
    assert (truth.specific_force[:, 2] == GRAVITY).all()
    assert (truth.angular_velocity[:, :2] == 0).all()
    if name != "rest":
        assert 0.8 < speed.max() < 1.3  # ~1 m/s, 1/6-scale car


@pytest.mark.parametrize("name", ["line", "sine", "circle"])
def test_truth_is_kinematically_consistent(generated, name):
    """Velocity = d(position)/dt, yaw rate = dψ/dt, specific force = R_bwᵀ·(dv/dt + g) away from switches."""
    truth = generated[name]
    dt = truth.t[1] - truth.t[0]
    mid_velocity = np.diff(truth.position, axis=0) / dt
    np.testing.assert_allclose(mid_velocity, 0.5 * (truth.velocity[1:] + truth.velocity[:-1]), atol=2e-4)
    yaw = np.unwrap(rotations.yaw_of(truth.orientation))
    mid_rate = np.diff(yaw) / dt
    np.testing.assert_allclose(
        mid_rate, 0.5 * (truth.angular_velocity[1:, 2] + truth.angular_velocity[:-1, 2]), atol=2e-3
    )
    numeric = GroundTruth.from_kinematics(truth.t, truth.position, truth.orientation, truth.velocity)
    diff = np.abs(numeric.specific_force - truth.specific_force).max(axis=1)
    # Actuator commands switch a few times (acceleration steps): a handful of samples differ there.
    assert np.percentile(diff, 99) < 5e-3
    assert (diff > 0.05).sum() < 20


def test_bicycle_equations_in_steady_turn():
    """Circle without variation: ψ̇ = v/L·tan δ with tan δ = L/R = 0.2, so R = v/ψ̇ = 2.5 m."""
    truth = nominal("circle")
    cruise = (truth.t > 20.0) & (truth.t < 35.0)
    v = np.hypot(truth.velocity[cruise, 0], truth.velocity[cruise, 1])
    radius = v / truth.angular_velocity[cruise, 2]
    np.testing.assert_allclose(radius, 2.5, rtol=1e-6)
    np.testing.assert_allclose(v, 1.0, atol=1e-6)
    np.testing.assert_allclose(truth.specific_force[cruise, 1], v**2 / 2.5, rtol=1e-6)  # centripetal
    centre = truth.position[cruise, :2] + 2.5 * np.stack(
        [
            -np.sin(rotations.yaw_of(truth.orientation[cruise])),
            np.cos(rotations.yaw_of(truth.orientation[cruise])),
        ],
        axis=-1,
    )
    assert np.ptp(centre, axis=0).max() < 1e-3  # one fixed centre: a true circle


def test_line_without_variation_is_straight_and_sine_is_a_hump():
    line = nominal("line")
    assert np.abs(line.position[:, 1]).max() == 0.0
    # 25 s at 1 m/s; the speed lag (τ_v·v ≈ 0.5 m) lost when starting is regained when stopping.
    assert line.position[-1, 0] == pytest.approx(25.0, abs=0.2)
    sine = nominal("sine")
    y = sine.position[:, 1]
    assert y.max() > 1.0  # the hump
    assert abs(y[-1]) < 0.15 * y.max()  # back near the start line: heading returned to 0
    assert abs(rotations.yaw_of(sine.orientation[-1])) < 0.05


def test_speed_and_steering_limits():
    truth = nominal("circle", max_speed=0.6, max_steer=0.1)
    speed = np.hypot(truth.velocity[:, 0], truth.velocity[:, 1])
    assert speed.max() <= 0.6 + 1e-12
    assert (truth.angular_velocity[:, 2] <= speed / 0.5 * math.tan(0.1) + 1e-9).all()
    accel = np.diff(speed) / 0.005
    assert np.abs(accel).max() <= 1.0 + 1e-6  # max_accel


def test_repeats_are_seeded():
    a = scenarios.generate("circle", k=0, seed=0)
    b = scenarios.generate("circle", k=0, seed=0)
    c = scenarios.generate("circle", k=1, seed=0)
    d = scenarios.generate("circle", k=0, seed=1)
    assert np.array_equal(a.position, b.position)
    assert not np.array_equal(a.position, c.position)
    assert not np.array_equal(a.position, d.position)
    # Small perturbations: the repeats stay the same manoeuvre.
    assert np.abs(a.position - c.position).max() < 3.0


def test_rest_is_exactly_still(generated):
    rest = generated["rest"]
    assert (rest.position == 0).all() and (rest.velocity == 0).all() and (rest.angular_velocity == 0).all()
    assert (rest.specific_force == [0.0, 0.0, GRAVITY]).all()


def test_yaml_path_and_bad_inputs(tmp_path):
    data, _, _ = scenarios.load_scenario("line")
    good = tmp_path / "mine.yaml"
    good.write_text(yaml.safe_dump(data))
    assert len(scenarios.generate(str(good))) == len(scenarios.generate("line"))
    with pytest.raises(UserError, match="unknown scenario 'figure8'"):
        scenarios.generate("figure8")
    cases = [
        ({"rate": 50.0}, "rate: must be >= 100"),
        ({"wheelbase": -0.5}, "wheelbase: must be > 0"),
        ({"phases": []}, "phases: expected a non-empty list"),
        ({"phases": [{"duration": -1.0}]}, "phases[0].duration: must be > 0"),
        ({"phases": [{"duration": 1.0, "spede": 1.0}]}, "phases[0]: unknown key(s) spede"),
        ({"variation": {"speed_scale_sigma": "big"}}, "variation.speed_scale_sigma: expected a number"),
        ({"colour": "red"}, "unknown key(s) colour"),
    ]
    for change, message in cases:
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({**data, **change}))
        with pytest.raises(UserError) as info:
            scenarios.generate(str(bad))
        assert message in str(info.value) and "bad.yaml" in str(info.value)
