"""Ground-truth manoeuvres from kinematic vehicle models (robot-side: Python 3.8, numpy only).

Two models, chosen by the scenario's ``model`` key: ``bicycle`` (default; a car on flat ground, below)
and ``unicycle`` (a skid-steer ground robot on a terrain height field: ``simulate_unicycle``).

Bicycle model (seed 004 eq. 1–2, reference point = rear axle, no slip):
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

MODELS = ("bicycle", "unicycle")
SCENARIO_KEYS = (
    "description",
    "model",
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
PHASE_SINE = ("_amplitude", "_period", "_phase")  # a sine on the turn command: A·sin(2πt/period + phase)
UNICYCLE_KEYS = (
    "description",
    "model",
    "rate",
    "start_time",
    "max_speed",
    "max_accel",
    "max_yaw_rate",
    "max_yaw_accel",
    "speed_time_constant",
    "yaw_rate_time_constant",
    "initial",
    "terrain",
    "phases",
    "variation",
)
UNICYCLE_VARIATION_KEYS = (
    "speed_scale_sigma",
    "yaw_rate_scale_sigma",
    "speed_noise_sigma",
    "yaw_rate_noise_sigma",
    "noise_tau",
)
WAVE_KEYS = ("amplitude", "wavelength", "direction", "phase")
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
    """Piecewise speed/turn commands of the phases, evaluated at any time since the start.  The turn
    command is the steering angle (``turn="steer"``, bicycle) or the yaw rate (``turn="yaw_rate"``)."""

    def __init__(self, sec: Section, turn: str = "steer"):
        raw = sec.data.get("phases")
        if not isinstance(raw, list) or not raw:
            raise sec.error("phases", "expected a non-empty list of phases")
        self.phases = []
        start = 0.0
        for i, item in enumerate(raw):
            phase = Section(item, sec.source, f"phases[{i}]")
            phase.unknown_keys(["duration", "speed", turn] + [turn + end for end in PHASE_SINE])
            duration = phase.number("duration", required=True, positive=True)
            self.phases.append(
                (
                    start,
                    start + duration,
                    phase.number("speed", 0.0, nonnegative=True),
                    phase.number(turn, 0.0),
                    phase.number(turn + "_amplitude", 0.0),
                    phase.number(turn + "_period", 1.0, positive=True),
                    phase.number(turn + "_phase", 0.0),
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


def _clock(sec: Section, source: str) -> tuple:
    """(rate, start_time) of every scenario model: the truth rate (>= 100 Hz: the IMU is sampled from
    it) and the first stamp (> 0: robot_localization drops stamp 0)."""
    rate = sec.number("rate", 200.0, positive=True)
    if rate < SCENARIO_RATE.low:
        raise sec.error("rate", f"must be >= 100 Hz (IMU truth), got {rate}")
    SCENARIO_RATE.check(rate, f"{source}: rate")
    return rate, sec.number("start_time", 10.0, positive=True)


def simulate(data: Dict, source: str, seed_sequence) -> GroundTruth:
    """Integrate the scenario's model for its parameters ``data`` (see module docstring)."""
    sec = Section(data, source)
    if sec.string("model", "bicycle", choices=MODELS) == "unicycle":
        return simulate_unicycle(data, source, seed_sequence)
    sec.unknown_keys(SCENARIO_KEYS)
    wheelbase = sec.number("wheelbase", 0.5, positive=True)
    rate, start_time = _clock(sec, source)
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


# ------------------------------------------------------------------- skid-steer robot on a terrain
class Terrain:
    """A smooth height field, a sum of plane waves: h(p) = Σ aᵢ·sin(kᵢ·p + φᵢ), kᵢ = 2π/λᵢ·(cos θᵢ, sin θᵢ)
    (amplitude aᵢ m, wavelength λᵢ m, direction θᵢ rad from east, phase φᵢ rad).  No waves: flat."""

    def __init__(self, sec: Section):
        raw = sec.data.get("terrain", [])
        if not isinstance(raw, list):
            raise sec.error("terrain", "expected a list of waves {amplitude, wavelength, direction, phase}")
        waves = []
        for i, item in enumerate(raw):
            wave = Section(item, sec.source, f"terrain[{i}]")
            wave.unknown_keys(WAVE_KEYS)
            number = 2.0 * math.pi / wave.number("wavelength", required=True, positive=True)
            direction = wave.number("direction", 0.0)
            waves.append((wave.number("amplitude", required=True), number * math.cos(direction),
                          number * math.sin(direction), wave.number("phase", 0.0)))
        self.waves = waves
        self.amplitude = np.array([w[0] for w in waves], dtype=float)
        self.k = np.array([[w[1], w[2]] for w in waves], dtype=float).reshape(-1, 2)
        self.phase = np.array([w[3] for w in waves], dtype=float)

    def gradient(self, x: float, y: float) -> Tuple[float, float]:
        """(∂h/∂x, ∂h/∂y) at one point, on Python floats (the integration loop's inner call)."""
        hx = hy = 0.0
        for amplitude, kx, ky, phase in self.waves:
            c = amplitude * math.cos(kx * x + ky * y + phase)
            hx += c * kx
            hy += c * ky
        return hx, hy

    def evaluate(self, x: np.ndarray, y: np.ndarray):
        """(h, h_x, h_y, h_xx, h_xy, h_yy) at arrays of points."""
        arg = np.outer(x, self.k[:, 0]) + np.outer(y, self.k[:, 1]) + self.phase
        sin, cos = self.amplitude * np.sin(arg), self.amplitude * np.cos(arg)
        kx, ky = self.k[:, 0], self.k[:, 1]
        return (sin.sum(axis=1), cos @ kx, cos @ ky, -sin @ (kx * kx), -sin @ (kx * ky), -sin @ (ky * ky))


def _unicycle_commands(sec: Section, n: int, dt: float, seed_sequence, v_max: float, yaw_rate_max: float):
    """(speed, yaw-rate) commands on the integration grid, with the per-repeat variation: a scale per
    run ~ N(1, σ) and slow Gauss–Markov disturbances (speed on moving phases, yaw rate on moving or
    turning ones); still phases stay perfectly still."""
    commands = _Commands(sec, "yaw_rate")
    SCENARIO_DURATION.check(commands.duration, f"{sec.source}: phases: total duration")
    variation = sec.section("variation")
    variation.unknown_keys(UNICYCLE_VARIATION_KEYS)
    rng = generator(seed_sequence, 0)
    speed_scale = 1.0 + variation.number("speed_scale_sigma", 0.0, nonnegative=True) * rng.standard_normal()
    turn_scale = 1.0 + variation.number("yaw_rate_scale_sigma", 0.0, nonnegative=True) * rng.standard_normal()
    disturbance = GaussMarkovNoise(
        "gz", [0.0] * 3, [0.0] * 3,
        [variation.number("speed_noise_sigma", 0.0, nonnegative=True),
         variation.number("yaw_rate_noise_sigma", 0.0, nonnegative=True), 0.0],
        variation.number("noise_tau", 2.0, positive=True), [0.0] * 3, child(seed_sequence, 1),
    )
    disturbance.bias_sigma = disturbance.bias_sigma * math.sqrt(2.0 / disturbance.tau)  # σ is the std
    disturb = disturbance.apply(np.zeros((n, 3)), np.full(n, dt))
    speed_cmd = np.zeros(n)
    turn_cmd = np.zeros(n)
    for i in range(n):
        speed, turn = commands.at(i * dt)
        if speed > 0.0:
            speed = speed * speed_scale + disturb[i, 0]
        if speed > 0.0 or turn != 0.0:
            turn = turn * turn_scale + disturb[i, 1]
        speed_cmd[i] = min(max(speed, 0.0), v_max)
        turn_cmd[i] = min(max(turn, -yaw_rate_max), yaw_rate_max)
    return speed_cmd.tolist(), turn_cmd.tolist(), commands.duration


def simulate_unicycle(data: Dict, source: str, seed_sequence) -> GroundTruth:
    """A skid-steer robot driving over a terrain height field h(x, y) (``model: unicycle``).

    Unicycle kinematics with lagged actuators (speed v along the body x axis, i.e. along the ground;
    heading ψ of the horizontal projection of the body x axis; yaw rate ω = ψ̇):
        v̇ = clip((v_cmd − v)/τ_v, ±a_max),  ω̇ = clip((ω_cmd − ω)/τ_ω, ±α_max),
        ẋ = v·cos ψ/√(1 + s²),  ẏ = v·sin ψ/√(1 + s²),  s = h_x cos ψ + h_y sin ψ (slope along ψ),
    0 ≤ v ≤ v_max, |ω| ≤ ω_max, classical RK4 at ``rate`` Hz; z = h(x, y) − h(start).  The body sits on
    the ground: z_b = the surface normal (−h_x, −h_y, 1)/‖·‖, x_b = (cos ψ, sin ψ, s)/‖·‖ (tangent along
    the heading), y_b = z_b × x_b — pitch and roll follow the terrain's gradient along and across the
    heading.  Exact outputs (chain rule through h's Hessian, no numerical differentiation): world
    velocity v·x_b; body rates from Rᵀ·Ṙ (ω_x = z_b·ẏ_b, ω_y = x_b·ż_b, ω_z = y_b·ẋ_b); specific force
    Rᵀ·(v̇·x_b + v·ẋ_b + g·ẑ) (REP-145: +g up at rest).
    """
    sec = Section(data, source)
    sec.unknown_keys(UNICYCLE_KEYS)
    rate, start_time = _clock(sec, source)
    v_max = sec.number("max_speed", 1.0, positive=True)
    a_max = sec.number("max_accel", 0.5, positive=True)
    yaw_rate_max = sec.number("max_yaw_rate", 1.0, positive=True)
    yaw_accel_max = sec.number("max_yaw_accel", 2.0, positive=True)
    tau_v = sec.number("speed_time_constant", 0.4, positive=True)
    tau_w = sec.number("yaw_rate_time_constant", 0.2, positive=True)
    initial = sec.section("initial")
    initial.unknown_keys(["x", "y", "yaw"])
    terrain = Terrain(sec)
    duration = _Commands(sec, "yaw_rate").duration
    dt = 1.0 / rate
    n = int(round(duration * rate)) + 1
    speed_cmd, turn_cmd, _ = _unicycle_commands(sec, n, dt, seed_sequence, v_max, yaw_rate_max)

    def clip(value: float, low: float, high: float) -> float:
        return low if value < low else (high if value > high else value)

    def rates(x: float, y: float, yaw: float, v: float, w: float, i: int):
        """(ẋ, ẏ, ψ̇, v̇, ω̇) under the commands of step i."""
        accel = clip((speed_cmd[i] - v) / tau_v, -a_max, a_max)
        if v <= 0.0 and accel < 0.0:
            accel = 0.0
        hx, hy = terrain.gradient(x, y)
        c, s = math.cos(yaw), math.sin(yaw)
        horizontal = v / math.sqrt(1.0 + (hx * c + hy * s) ** 2)
        return horizontal * c, horizontal * s, w, accel, clip((turn_cmd[i] - w) / tau_w, -yaw_accel_max,
                                                              yaw_accel_max)

    state = [float(initial.number("x", 0.0)), float(initial.number("y", 0.0)),
             float(initial.number("yaw", 0.0)), 0.0, 0.0]
    states = [list(state)]
    accel = [0.0] * n
    for i in range(n - 1):
        k1 = rates(*state, i)
        k2 = rates(*[s + 0.5 * dt * k for s, k in zip(state, k1)], i)
        k3 = rates(*[s + 0.5 * dt * k for s, k in zip(state, k2)], i)
        k4 = rates(*[s + dt * k for s, k in zip(state, k3)], i)
        state = [s + dt / 6.0 * (a + 2.0 * b + 2.0 * c + d) for s, a, b, c, d in zip(state, k1, k2, k3, k4)]
        state[3] = clip(state[3], 0.0, v_max)
        state[4] = clip(state[4], -yaw_rate_max, yaw_rate_max)
        states.append(list(state))
        accel[i] = k1[3]
    accel[-1] = rates(*state, n - 1)[3]
    x, y, yaw, v, w = np.array(states, dtype=float).T
    return _on_terrain(terrain, start_time + np.arange(n) * dt, x, y, yaw, v, w,
                       np.array(accel, dtype=float)).validate(source)


def _unit_and_rate(u: np.ndarray, u_dot: np.ndarray):
    """(e, ė) of e = u/‖u‖ for rows u with derivative u̇: ė = (u̇ − e·(e·u̇))/‖u‖."""
    norm = np.linalg.norm(u, axis=1)[:, None]
    e = u / norm
    return e, (u_dot - e * np.einsum("ij,ij->i", e, u_dot)[:, None]) / norm


def _on_terrain(terrain: Terrain, t, x, y, yaw, v, yaw_rate, accel) -> GroundTruth:
    """The GroundTruth of a unicycle path (x, y, ψ, v, ω, v̇ per sample) lying on ``terrain``
    (``simulate_unicycle``'s frame and derivative equations)."""
    h, hx, hy, hxx, hxy, hyy = terrain.evaluate(x, y)
    c, s = np.cos(yaw), np.sin(yaw)
    slope = hx * c + hy * s
    zeros, ones = np.zeros_like(x), np.ones_like(x)
    u_x = np.stack([c, s, slope], axis=-1)
    horizontal = v / np.linalg.norm(u_x, axis=1)
    x_dot, y_dot = horizontal * c, horizontal * s
    hx_dot, hy_dot = hxx * x_dot + hxy * y_dot, hxy * x_dot + hyy * y_dot
    slope_dot = hx_dot * c + hy_dot * s + (hy * c - hx * s) * yaw_rate
    e_x, e_x_dot = _unit_and_rate(u_x, np.stack([-s * yaw_rate, c * yaw_rate, slope_dot], axis=-1))
    e_z, e_z_dot = _unit_and_rate(np.stack([-hx, -hy, ones], axis=-1),
                                  np.stack([-hx_dot, -hy_dot, zeros], axis=-1))
    e_y = np.cross(e_z, e_x)
    e_y_dot = np.cross(e_z_dot, e_x) + np.cross(e_z, e_x_dot)

    def dot(a, b):
        return np.einsum("ij,ij->i", a, b)

    velocity = v[:, None] * e_x
    reaction = accel[:, None] * e_x + v[:, None] * e_x_dot + np.array([0.0, 0.0, GRAVITY])
    return GroundTruth(
        t=t,
        position=np.stack([x, y, h - h[0]], axis=-1),
        orientation=rotations.from_matrix(np.stack([e_x, e_y, e_z], axis=-1)),
        velocity=velocity,
        angular_velocity=np.stack([dot(e_z, e_y_dot), dot(e_x, e_z_dot), dot(e_y, e_x_dot)], axis=-1),
        specific_force=np.stack([dot(e_x, reaction), dot(e_y, reaction), dot(e_z, reaction)], axis=-1),
    )
