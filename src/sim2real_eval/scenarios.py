"""Ground-truth manoeuvres from a kinematic bicycle model (robot-side: Python 3.8, numpy only).

Model (seed 004 eq. 1–2, reference point = rear axle, no slip):
    ẋ = v·cos ψ,  ẏ = v·sin ψ,  ψ̇ = v/L·tan δ,  v̇ = a
with actuators that track piecewise commands:
    a = clip((v_cmd − v)/τ_v, −a_max, a_max),   δ̇ = clip((δ_cmd − δ)/τ_δ, −δ̇_max, δ̇_max),
|δ| ≤ δ_max, 0 ≤ v ≤ v_max.  Integrated with classical RK4 at ``rate`` Hz (≥ 100).

Outputs are exact for this model, not differentiated: world velocity (v cos ψ, v sin ψ, 0), body rates
(0, 0, ψ̇), body specific force (v̇, v·ψ̇, g) — the rear-axle point moves along the heading, so its
acceleration in the body frame is v̇ forward and v·ψ̇ (centripetal) to the left.  Planar: z = 0,
roll = pitch = 0.  Time starts at ``start_time`` (10 s: robot_localization drops stamp 0).

A scenario YAML (``config/scenarios/<name>.yaml``) holds the vehicle, the actuator limits, the
``phases`` (duration, speed, steer, optional steering sine) and the ``variation`` between repeats:
per run a speed scale and a steering scale ~ N(1, σ), plus slowly varying Gauss–Markov speed and
steering disturbances, all drawn from ``sensor_seed(seed, "scenario", name, k)``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from . import rotations
from .errors import UserError
from .models.noise import GaussMarkovNoise
from .models.seeding import child, generator, sensor_seed
from .resources import config_path
from .truth import GRAVITY, GroundTruth
from .yamlio import Section, load_yaml

SCENARIO_KEYS = (
    "description",
    "wheelbase",
    "rate",
    "start_time",
    "max_speed",
    "max_accel",
    "max_steer",
    "max_steer_rate",
    "speed_time_constant",
    "steer_time_constant",
    "initial",
    "phases",
    "variation",
)
PHASE_KEYS = ("duration", "speed", "steer", "steer_amplitude", "steer_period", "steer_phase")
VARIATION_KEYS = (
    "speed_scale_sigma",
    "steer_scale_sigma",
    "speed_noise_sigma",
    "steer_noise_sigma",
    "noise_tau",
)


def available_scenarios() -> List[str]:
    folder = config_path("scenarios")
    return sorted(p.stem for p in Path(folder).glob("*.yaml")) if Path(folder).is_dir() else []


def load_scenario(name_or_path) -> Tuple[Dict, str, str]:
    """(parameters, source, name) for a scenario name (config/scenarios) or a YAML path."""
    text = str(name_or_path)
    looks_like_path = text.endswith((".yaml", ".yml")) or os.sep in text or Path(text).is_file()
    path = Path(text) if looks_like_path else config_path("scenarios", text + ".yaml")
    if not looks_like_path and not path.is_file():
        names = ", ".join(available_scenarios()) or "none installed"
        raise UserError(f"scenario: unknown scenario {text!r}; expected one of {names} or a YAML path")
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: top level must be a mapping of scenario parameters")
    return data, str(path), path.stem


class _Commands:
    """Piecewise speed/steering commands of the phases, evaluated at any time since the start."""

    def __init__(self, sec: Section):
        raw = sec.data.get("phases")
        if not isinstance(raw, list) or not raw:
            raise sec.error("phases", "expected a non-empty list of phases")
        self.phases = []
        start = 0.0
        for i, item in enumerate(raw):
            phase = Section(item, sec.source, f"phases[{i}]")
            phase.unknown_keys(PHASE_KEYS)
            duration = phase.number("duration", required=True, positive=True)
            self.phases.append(
                (
                    start,
                    start + duration,
                    phase.number("speed", 0.0, nonnegative=True),
                    phase.number("steer", 0.0),
                    phase.number("steer_amplitude", 0.0),
                    phase.number("steer_period", 1.0, positive=True),
                    phase.number("steer_phase", 0.0),
                )
            )
            start += duration
        self.duration = start

    def at(self, t: float) -> Tuple[float, float]:
        for start, end, speed, steer, amplitude, period, phase in self.phases:
            if t < end or end == self.duration:
                return speed, steer + amplitude * math.sin(2.0 * math.pi * (t - start) / period + phase)
        return 0.0, 0.0  # pragma: no cover


def generate(name_or_path, k: int = 0, seed: int = 0) -> GroundTruth:
    """Ground truth of repeat ``k`` of a scenario (name or YAML path) with study seed ``seed``."""
    data, source, name = load_scenario(name_or_path)
    return simulate(data, source, sensor_seed(seed, "scenario", name, k))


def simulate(data: Dict, source: str, seed_sequence) -> GroundTruth:
    """Integrate the bicycle model for the scenario parameters ``data`` (see module docstring)."""
    sec = Section(data, source)
    sec.unknown_keys(SCENARIO_KEYS)
    wheelbase = sec.number("wheelbase", 0.5, positive=True)
    rate = sec.number("rate", 200.0, positive=True)
    if rate < 100.0:
        raise sec.error("rate", f"must be >= 100 Hz (IMU truth), got {rate}")
    start_time = sec.number("start_time", 10.0, positive=True)
    v_max = sec.number("max_speed", 2.0, positive=True)
    a_max = sec.number("max_accel", 1.0, positive=True)
    steer_max = sec.number("max_steer", 0.5, positive=True)
    steer_rate_max = sec.number("max_steer_rate", 1.0, positive=True)
    tau_v = sec.number("speed_time_constant", 0.5, positive=True)
    tau_s = sec.number("steer_time_constant", 0.2, positive=True)
    initial = sec.section("initial")
    initial.unknown_keys(["x", "y", "yaw"])
    commands = _Commands(sec)
    variation = sec.section("variation")
    variation.unknown_keys(VARIATION_KEYS)
    rng = generator(seed_sequence, 0)
    speed_scale = 1.0 + variation.number("speed_scale_sigma", 0.0, nonnegative=True) * rng.standard_normal()
    steer_scale = 1.0 + variation.number("steer_scale_sigma", 0.0, nonnegative=True) * rng.standard_normal()

    dt = 1.0 / rate
    n = int(round(commands.duration * rate)) + 1
    # Slow disturbances on the command grid: Gauss–Markov, column 0 speed (m/s), column 1 steer (rad).
    disturbance = GaussMarkovNoise(
        "gz",
        [0.0] * 3,
        [0.0] * 3,
        [
            variation.number("speed_noise_sigma", 0.0, nonnegative=True),
            variation.number("steer_noise_sigma", 0.0, nonnegative=True),
            0.0,
        ],
        variation.number("noise_tau", 2.0, positive=True),
        [0.0] * 3,
        child(seed_sequence, 1),
    )
    # gz's σ_b is a density; scale so the stationary std is the given sigma: σ_b = σ·√(2/τ).
    disturbance.bias_sigma = disturbance.bias_sigma * math.sqrt(2.0 / disturbance.tau)
    disturb = disturbance.apply(np.zeros((n, 3)), np.full(n, dt))

    def command(i: int, t: float) -> Tuple[float, float]:
        speed, steer = commands.at(t)
        if speed > 0.0:  # standstill phases stay perfectly still
            speed = speed * speed_scale + disturb[i, 0]
            steer = steer * steer_scale + disturb[i, 1]
        return min(max(speed, 0.0), v_max), min(max(steer, -steer_max), steer_max)

    def derivative(state, cmd):
        _x, _y, yaw, v, steer = state
        accel = min(max((cmd[0] - v) / tau_v, -a_max), a_max)
        if v <= 0.0 and accel < 0.0:
            accel = 0.0
        steer_rate = min(max((cmd[1] - steer) / tau_s, -steer_rate_max), steer_rate_max)
        yaw_rate = v / wheelbase * math.tan(steer)
        return np.array([v * math.cos(yaw), v * math.sin(yaw), yaw_rate, accel, steer_rate])

    states = np.zeros((n, 5))
    states[0] = [initial.number("x", 0.0), initial.number("y", 0.0), initial.number("yaw", 0.0), 0.0, 0.0]
    accel = np.zeros(n)
    for i in range(n - 1):
        cmd = command(i, i * dt)
        s = states[i]
        k1 = derivative(s, cmd)
        k2 = derivative(s + 0.5 * dt * k1, cmd)
        k3 = derivative(s + 0.5 * dt * k2, cmd)
        k4 = derivative(s + dt * k3, cmd)
        nxt = s + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        nxt[3] = min(max(nxt[3], 0.0), v_max)
        nxt[4] = min(max(nxt[4], -steer_max), steer_max)
        states[i + 1] = nxt
        accel[i] = k1[3]
    accel[-1] = derivative(states[-1], command(n - 1, (n - 1) * dt))[3]

    x, y, yaw, v, steer = states.T
    yaw_rate = v / wheelbase * np.tan(steer)
    zeros = np.zeros(n)
    return GroundTruth(
        t=start_time + np.arange(n) * dt,
        position=np.stack([x, y, zeros], axis=-1),
        orientation=rotations.from_yaw(yaw),
        velocity=np.stack([v * np.cos(yaw), v * np.sin(yaw), zeros], axis=-1),
        angular_velocity=np.stack([zeros, zeros, yaw_rate], axis=-1),
        specific_force=np.stack([accel, v * yaw_rate, np.full(n, GRAVITY)], axis=-1),
    ).validate(source)
