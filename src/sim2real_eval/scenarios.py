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
from .limits import SCENARIO_DURATION, SCENARIO_RATE
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
    if rate < SCENARIO_RATE.low:
        raise sec.error("rate", f"must be >= 100 Hz (IMU truth), got {rate}")
    SCENARIO_RATE.check(rate, f"{source}: rate")
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
    SCENARIO_DURATION.check(commands.duration, f"{source}: phases: total duration")
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

    # Commands on the integration grid (held over each step), as plain floats: the RK4 loop below runs
    # on Python floats and ``math`` (numpy scalars cost ~10x more per operation there).
    speed_noise = disturb[:, 0].tolist()
    steer_noise = disturb[:, 1].tolist()
    speed_cmd: List[float] = []
    steer_cmd: List[float] = []
    for i in range(n):
        speed, steer = commands.at(i * dt)
        if speed > 0.0:  # standstill phases stay perfectly still
            speed = speed * speed_scale + speed_noise[i]
            steer = steer * steer_scale + steer_noise[i]
        speed_cmd.append(float(min(max(speed, 0.0), v_max)))
        steer_cmd.append(float(min(max(steer, -steer_max), steer_max)))

    def rates(yaw: float, v: float, steer: float, i: int) -> Tuple[float, float, float, float, float]:
        """(ẋ, ẏ, ψ̇, v̇, δ̇) under the commands of step i."""
        # Clamps as conditional expressions: same results as min(max(·)), without two calls each.
        accel = (speed_cmd[i] - v) / tau_v
        accel = -a_max if accel < -a_max else (a_max if accel > a_max else accel)
        if v <= 0.0 and accel < 0.0:
            accel = 0.0
        steer_rate = (steer_cmd[i] - steer) / tau_s
        steer_rate = (-steer_rate_max if steer_rate < -steer_rate_max
                      else (steer_rate_max if steer_rate > steer_rate_max else steer_rate))
        return v * math.cos(yaw), v * math.sin(yaw), v / wheelbase * math.tan(steer), accel, steer_rate

    # Classical RK4; the operation order matches the former numpy-vector form bit for bit
    # (s + (dt/2)·k, s + (dt/6)·(((k1 + 2k2) + 2k3) + k4)), so the reference bags keep their bytes.
    half = 0.5 * dt
    sixth = dt / 6.0
    x, y = float(initial.number("x", 0.0)), float(initial.number("y", 0.0))
    yaw, v, steer = float(initial.number("yaw", 0.0)), 0.0, 0.0
    xs, ys, yaws, vs, steers = [x], [y], [yaw], [v], [steer]
    accel = [0.0] * n
    for i in range(n - 1):
        a1, b1, c1, d1, e1 = rates(yaw, v, steer, i)
        a2, b2, c2, d2, e2 = rates(yaw + half * c1, v + half * d1, steer + half * e1, i)
        a3, b3, c3, d3, e3 = rates(yaw + half * c2, v + half * d2, steer + half * e2, i)
        a4, b4, c4, d4, e4 = rates(yaw + dt * c3, v + dt * d3, steer + dt * e3, i)
        x = x + sixth * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        y = y + sixth * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
        yaw = yaw + sixth * (c1 + 2.0 * c2 + 2.0 * c3 + c4)
        v = v + sixth * (d1 + 2.0 * d2 + 2.0 * d3 + d4)
        v = 0.0 if v < 0.0 else (v_max if v > v_max else v)
        steer = steer + sixth * (e1 + 2.0 * e2 + 2.0 * e3 + e4)
        steer = -steer_max if steer < -steer_max else (steer_max if steer > steer_max else steer)
        xs.append(x)
        ys.append(y)
        yaws.append(yaw)
        vs.append(v)
        steers.append(steer)
        accel[i] = d1
    accel[-1] = rates(yaw, v, steer, n - 1)[3]
    x, y, yaw, v, steer = (np.array(series, dtype=float) for series in (xs, ys, yaws, vs, steers))
    accel = np.array(accel, dtype=float)
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
