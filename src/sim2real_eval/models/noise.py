"""Stateful 3-axis noise processes shared by the GPS, IMU and magnetometer models.

Every process maps true values ``x`` (N, 3) and sample intervals ``dt`` (N,) seconds to measured
values (N, 3) and keeps its state between calls.  Two rules make streaming (N = 1 per call) and
batch (all N at once) bit-identical:

- each noise term draws from its own child random stream, and numpy's PCG64 draws are the same
  whether taken one row at a time or all at once;
- recursions are evaluated in the same order with the same operations: random walks use
  ``cumsum`` of ``[state, increments…]`` (sequential addition, exactly like ``state += inc``),
  non-linear or decaying recursions run one row at a time in both hosts.

``dt`` of a sample is the time since the previous sample (the model's nominal period for the first).
"""

from __future__ import annotations

import math
from typing import Dict, List, Sequence

import numpy as np

from .seeding import generator


def _vec(values) -> List[float]:
    return [float(v) for v in values]


def _cumsum_from(state: np.ndarray, increments: np.ndarray) -> np.ndarray:
    """[state + inc0, (state + inc0) + inc1, …] — sequential, so chunking never changes the bits.

    ``increments`` is consumed (overwritten).
    """
    if len(increments):
        increments[0] += state
    return np.cumsum(increments, axis=0, out=increments)


class NoiseProcess:
    """Base class: no noise.  ``apply`` advances the state; ``white_variance`` feeds covariances."""

    name = "none"

    def __init__(self):
        self.params: Dict = {"model": self.name}

    def apply(self, x: np.ndarray, dt: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=float)

    def white_variance(self, dt: float) -> np.ndarray:
        """Per-axis variance of the white part of the noise at sample interval ``dt``."""
        return np.zeros(3)

    def stationary_variance(self, dt: float):
        """Per-axis variance of the whole error this process adds, once stationary, at sample interval
        ``dt`` (the covariance an honest sensor reports: ``covariance: {model: noise}`` and
        ``reported_covariance: noise``), or None when there is none (a random walk grows without
        bound).  Constant offsets are not variance."""
        return self.white_variance(dt)


class GaussianNoise(NoiseProcess):
    """out = x + μ + σ·z, z ~ N(0, 1) independent per axis and sample, no state."""

    name = "gaussian"

    def __init__(self, sigma: Sequence[float], mean: Sequence[float], seq):
        super().__init__()
        self.sigma = np.array(sigma, dtype=float)
        self.mean = np.array(mean, dtype=float)
        self.rng = generator(seq, 0)
        self.params.update(sigma=_vec(sigma), mean=_vec(mean))

    def apply(self, x, dt):
        z = self.rng.standard_normal((len(dt), 3))
        return x + (self.mean + self.sigma * z)

    def white_variance(self, dt):
        return self.sigma**2


class ChronoDriftNoise(NoiseProcess):
    """Chrono ``ChNoiseNormalDrift`` (seed 001 eq. 5, seed 003 appendix).

    η_a ~ N(μ_a, σ_a) per axis; η_b ~ N(μ_b, b0·√(dt/t_b)) with dt = 1/rate a *constant* (as Chrono);
    b ← b + η_b (pure random walk from 0, no decay); out = x + η_a + b with the already-updated b.
    Var(b_n) = n·b0²·dt/t_b.  Chrono hard-codes μ_b = 0 (the paper writes μ_b): default 0.
    """

    name = "chrono_drift"

    def __init__(self, sigma, mean, b0, t_b, rate, bias_mean, seq):
        super().__init__()
        self.sigma = np.array(sigma, dtype=float)
        self.mean = np.array(mean, dtype=float)
        self.bias_mean = np.array(bias_mean, dtype=float)
        self.bias_step_std = float(b0) * math.sqrt((1.0 / rate) / t_b)
        self.bias = np.zeros(3)
        self.white_rng = generator(seq, 0)
        self.bias_rng = generator(seq, 1)
        self.params.update(
            sigma=_vec(sigma), mean=_vec(mean), b0=float(b0), t_b=float(t_b), bias_mean=_vec(bias_mean)
        )

    def apply(self, x, dt):
        n = len(dt)
        white = self.white_rng.standard_normal((n, 3))
        white *= self.sigma
        white += self.mean
        increments = self.bias_rng.standard_normal((n, 3))
        increments *= self.bias_step_std
        increments += self.bias_mean
        bias = _cumsum_from(self.bias, increments)
        if n:
            self.bias = bias[-1].copy()
        out = x + white
        out += bias
        return out

    def white_variance(self, dt):
        return self.sigma**2

    def stationary_variance(self, dt):
        walks = self.bias_step_std > 0 or self.bias_mean.any()
        return None if walks else self.white_variance(dt)


class AirSimNoise(NoiseProcess):
    """AirSim IMU (AirLib ``ImuSimple``): with s = √max(dt, 1e-3),
    out = x + z₁·ARW/s + b (previous b); then b ← b + z₂·(stability/√τ)·s (unbounded random walk).
    ARW in units/√s (= units/√Hz), bias stability in units, τ in s.
    """

    name = "airsim"

    def __init__(self, noise_density, bias_stability, tau, seq):
        super().__init__()
        self.noise_density = np.array(noise_density, dtype=float)
        self.bias_gain = np.array(bias_stability, dtype=float) / math.sqrt(tau)
        self.bias = np.zeros(3)
        self.white_rng = generator(seq, 0)
        self.bias_rng = generator(seq, 1)
        self.params.update(
            noise_density=_vec(noise_density), bias_stability=_vec(bias_stability), tau=float(tau)
        )

    def apply(self, x, dt):
        n = len(dt)
        s = np.sqrt(np.maximum(dt, 1e-3))[:, None]
        white = self.white_rng.standard_normal((n, 3)) * self.noise_density / s
        updated = _cumsum_from(self.bias, self.bias_rng.standard_normal((n, 3)) * self.bias_gain * s)
        previous = np.vstack([self.bias[None, :], updated[:-1]])
        if n:
            self.bias = updated[-1].copy()
        return x + white + previous

    def white_variance(self, dt):
        return self.noise_density**2 / max(dt, 1e-3)

    def stationary_variance(self, dt):
        return None if self.bias_gain.any() else self.white_variance(dt)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C/C++ ``round``: halves go away from zero (numpy's ``round`` goes to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


class MavsNoise(NoiseProcess):
    """MAVS MEMS sensor as documented in seed 002 (not as the public MAVS source computes it).

    With w ~ U[−1, 1] drawn independently per axis, per sample and per term, σ the sample rate:
      b  = M·x + β_c,                   M = I + skew (row i off-diagonals = misalignment_i/100)
      β1 = F1(w·β_i),  F1(z) = 1 / (1 + (2/σ − 1)·z⁻¹)   (y_k = u_k − (2/σ − 1)·y_{k−1}; low-pass)
      β2 = w·√(σ/2)·n_d                  (white)
      β3 = F2(ρ_w·w/√(σ/2)), F2(z) = 1 / (1 − z⁻¹)        (y_k = y_{k−1} + u_k; random walk)
      δ_e = (T − 25)·β_t
      c = β1 + β2 + β3 + δ_e + b;  d = c ∘ (1 + (T − 25)/100·α_T)
      out = δ_r·round(clamp(d, ±R)/δ_r)   (C round: halves away from zero; δ_r = 0 disables)
    F1/F2 are the transfer functions of the MATLAB imuSensor model that MAVS follows; z⁻¹ is the
    one-sample delay (public MAVS evaluates them as functions of the sample value — not copied).
    """

    name = "mavs"

    def __init__(
        self,
        measurement_range,
        resolution,
        constant_bias,
        noise_density,
        bias_instability,
        axis_misalignment,
        random_walk,
        temperature_bias,
        temperature_scale_factor,
        temperature,
        rate,
        seq,
    ):
        super().__init__()
        self.range = float(measurement_range)
        self.resolution = float(resolution)
        self.constant_bias = np.array(constant_bias, dtype=float)
        self.noise_density = np.array(noise_density, dtype=float)
        self.bias_instability = np.array(bias_instability, dtype=float)
        self.random_walk = np.array(random_walk, dtype=float)
        self.temperature_bias = np.array(temperature_bias, dtype=float)
        self.temperature_scale_factor = np.array(temperature_scale_factor, dtype=float)
        self.temperature = float(temperature)
        self.rate = float(rate)
        m = np.array(axis_misalignment, dtype=float) / 100.0
        self.alignment = np.eye(3) + (np.ones((3, 3)) - np.eye(3)) * m[:, None]
        self.f1_pole = 2.0 / self.rate - 1.0
        self.beta1 = np.zeros(3)
        self.beta3 = np.zeros(3)
        self.rng_instability = generator(seq, 0)
        self.rng_white = generator(seq, 1)
        self.rng_walk = generator(seq, 2)
        self.params.update(
            measurement_range=self.range,
            resolution=self.resolution,
            constant_bias=_vec(constant_bias),
            noise_density=_vec(noise_density),
            bias_instability=_vec(bias_instability),
            axis_misalignment=_vec(axis_misalignment),
            random_walk=_vec(random_walk),
            temperature_bias=_vec(temperature_bias),
            temperature_scale_factor=_vec(temperature_scale_factor),
            temperature=self.temperature,
        )

    def apply(self, x, dt):
        n = len(dt)
        w1 = self.rng_instability.uniform(-1.0, 1.0, (n, 3))
        w2 = self.rng_white.uniform(-1.0, 1.0, (n, 3))
        w3 = self.rng_walk.uniform(-1.0, 1.0, (n, 3))
        half_rate = math.sqrt(self.rate / 2.0)
        if self.bias_instability.any():
            beta1 = np.empty((n, 3))
            state = self.beta1
            drive = w1 * self.bias_instability
            for k in range(n):  # IIR low-pass: row by row in both hosts
                state = drive[k] - self.f1_pole * state
                beta1[k] = state
            self.beta1 = state.copy() if n else self.beta1
        else:  # β_i = 0: the filter state stays exactly 0 (configuration decides, same in both hosts)
            beta1 = np.zeros((n, 3))
        beta2 = w2 * half_rate * self.noise_density
        beta3 = _cumsum_from(self.beta3, self.random_walk * w3 / half_rate)
        if n:
            self.beta3 = beta3[-1].copy()
        delta_e = (self.temperature - 25.0) * self.temperature_bias
        b = x @ self.alignment.T + self.constant_bias
        c = beta1 + beta2 + beta3 + delta_e + b
        d = c * (1.0 + (self.temperature - 25.0) / 100.0 * self.temperature_scale_factor)
        clamped = np.clip(d, -self.range, self.range)
        if self.resolution > 0:
            return self.resolution * round_half_away(clamped / self.resolution)
        return clamped

    def white_variance(self, dt):
        # Var(w) = 1/3 for w ~ U[−1, 1]; quantisation adds δ_r²/12.
        return self.rate / 2.0 * self.noise_density**2 / 3.0 + self.resolution**2 / 12.0

    def stationary_variance(self, dt):
        # Only white terms here (a bias instability or random walk: none given); the temperature scale
        # factor scales them.
        if self.bias_instability.any() or self.random_walk.any():
            return None
        scale = 1.0 + (self.temperature - 25.0) / 100.0 * self.temperature_scale_factor
        return scale**2 * self.rate / 2.0 * self.noise_density**2 / 3.0 + self.resolution**2 / 12.0


class GaussMarkovNoise(NoiseProcess):
    """White noise plus a first-order Gauss–Markov bias (gz-sensors / hector_gazebo style).

    gz:     b ← e^(−dt/τ)·b + σ_b·√((τ/2)(1 − e^(−2dt/τ)))·z   (stationary Var b = σ_b²·τ/2,
            autocorrelation e^(−|Δt|/τ))
    hector: d ← e^(−dt/τ)·d + dt·√(2/τ)·drift·z   (hector's frequency f = 1/τ; its dt, not √dt)
    out = x + offset + b + σ·z'.  The bias starts at 0 (``initial_bias`` overrides; ``stationary``
    draws it from the bias's stationary distribution at the nominal rate, so the error variance is the
    same from the first sample on).
    """

    name = "gauss_markov"

    def __init__(self, form, sigma, offset, bias_sigma, tau, initial_bias, seq, rate=None):
        super().__init__()
        self.form = form
        self.sigma = np.array(sigma, dtype=float)
        self.offset = np.array(offset, dtype=float)
        self.bias_sigma = np.array(bias_sigma, dtype=float)
        self.tau = float(tau)
        self.white_rng = generator(seq, 0)
        self.bias_rng = generator(seq, 1)
        if isinstance(initial_bias, str):  # "stationary": its own stream, drawn once
            std = np.sqrt(self.bias_variance(1.0 / float(rate)))
            self.bias = std * generator(seq, 2).standard_normal(3)
        else:
            self.bias = np.array(initial_bias, dtype=float)
        self.params.update(
            form=form,
            sigma=_vec(sigma),
            offset=_vec(offset),
            bias_sigma=_vec(bias_sigma),
            tau=self.tau,
            initial_bias=initial_bias if isinstance(initial_bias, str) else _vec(initial_bias),
        )

    def coefficients(self, dt: np.ndarray):
        """(decay, drive) per sample: b_k = decay_k·b_{k−1} + drive_k ∘ z_k."""
        decay = np.exp(-dt / self.tau)
        if self.form == "gz":
            scale = np.sqrt(self.tau / 2.0 * (1.0 - np.exp(-2.0 * dt / self.tau)))
        else:
            scale = dt * math.sqrt(2.0 / self.tau)
        return decay, scale[:, None] * self.bias_sigma

    def apply(self, x, dt):
        n = len(dt)
        white = self.sigma * self.white_rng.standard_normal((n, 3))
        drive = self.bias_rng.standard_normal((n, 3))
        decay, gain = self.coefficients(dt)
        drive = drive * gain
        # b_k = decay_k·b_{k−1} + drive_k per axis on Python floats (the same products and sums as the
        # per-sample vector form, without ~3 numpy calls per sample)
        bias = np.empty((n, 3))
        decays = decay.tolist()
        for axis in range(3):
            state = float(self.bias[axis])
            column = []
            for d, w in zip(decays, drive[:, axis].tolist()):
                state = d * state + w
                column.append(state)
            bias[:, axis] = column
        if n:
            self.bias = bias[-1].copy()
        return x + self.offset + bias + white

    def white_variance(self, dt):
        return self.sigma**2

    def bias_variance(self, dt: float) -> np.ndarray:
        """Stationary variance of the bias at a constant sample interval ``dt``: drive²/(1 − decay²)
        (gz: σ_b²·τ/2 at any dt; hector: its dt-dependent value)."""
        decay, gain = self.coefficients(np.array([float(dt)]))
        return gain[0] ** 2 / (1.0 - decay[0] ** 2)

    def stationary_variance(self, dt):
        return self.white_variance(dt) + self.bias_variance(dt)


class GzGaussianNoise(NoiseProcess):
    """gz-sensors ``GaussianNoiseModel`` (SDF ``<noise type="gaussian">``), one independent model per
    axis as gz builds one per SDF axis element.

    At construction, per axis: b = bias_mean + bias_stddev·z (b = bias_mean when bias_stddev = 0), then
    b ← −b with probability ½ (u ~ U[0, 1) < ½).  Per sample, with w = mean + stddev·z':
      if dynamic_bias_stddev σ_b > 0 and correlation time τ > 0 and dt > 0:
          b ← e^(−dt/τ)·b + √(σ_b²·(τ/2)·(1 − e^(−2dt/τ)))·z''   (so the drawn bias decays too)
      out = x + b + w;  with precision p > 0: out = p·round(out/p) (C round, halves away from zero).
    ``shared_xy``: axes 0 and 1 are ONE model applied to x then y on every sample (gz NavSat's single
    horizontal-position noise for latitude then longitude): one bias and sign, and the dynamic bias
    advances twice per sample (x, then y); the parser requires axis 1's parameters to equal axis 0's.
    """

    name = "gz_gaussian"

    def __init__(self, mean, stddev, bias_mean, bias_stddev, dynamic_bias_stddev,
                 dynamic_bias_correlation_time, precision, shared_xy, seq):
        super().__init__()
        self.mean = np.array(mean, dtype=float)
        self.stddev = np.array(stddev, dtype=float)
        self.dynamic_sigma = np.array(dynamic_bias_stddev, dtype=float)
        self.tau = np.array(dynamic_bias_correlation_time, dtype=float)
        self.precision = np.array(precision, dtype=float)
        self.shared_xy = bool(shared_xy)
        self.dynamic = (self.dynamic_sigma > 0) & (self.tau > 0)
        setup = generator(seq, 2)  # the once-per-sensor bias and its sign: their own stream
        draw = setup.standard_normal(3)
        sign = np.where(setup.random(3) < 0.5, -1.0, 1.0)
        bias_stddev = np.array(bias_stddev, dtype=float)
        initial = np.where(bias_stddev > 0, np.array(bias_mean, dtype=float) + bias_stddev * draw,
                           np.array(bias_mean, dtype=float))
        self.bias = initial * sign
        if self.shared_xy:
            self.bias[1] = self.bias[0]
        self.white_rng = generator(seq, 0)
        self.bias_rng = generator(seq, 1)
        self.params.update(
            mean=_vec(mean), stddev=_vec(stddev), bias_mean=_vec(bias_mean), bias_stddev=_vec(bias_stddev),
            dynamic_bias_stddev=_vec(dynamic_bias_stddev),
            dynamic_bias_correlation_time=_vec(dynamic_bias_correlation_time), precision=_vec(precision),
            shared_xy=self.shared_xy,
        )

    def _drive(self, dt: np.ndarray, axis: int):
        """(decay, drive std) per sample of one axis's dynamic bias (zeros when it has none)."""
        if not self.dynamic[axis]:
            return np.ones(len(dt)), np.zeros(len(dt))
        tau, sigma = float(self.tau[axis]), float(self.dynamic_sigma[axis])
        positive = dt > 0
        decay = np.where(positive, np.exp(-dt / tau), 1.0)
        std = np.where(positive, np.sqrt(-sigma * sigma * tau / 2.0 * np.expm1(-2.0 * dt / tau)), 0.0)
        return decay, std

    def apply(self, x, dt):
        n = len(dt)
        white = self.mean + self.stddev * self.white_rng.standard_normal((n, 3))
        z = self.bias_rng.standard_normal((n, 3))
        bias = np.empty((n, 3))
        for axis in (0, 2) if self.shared_xy else (0, 1, 2):
            decay, std = self._drive(dt, axis)
            state = float(self.bias[axis])
            if self.shared_xy and axis == 0:
                for k, (d, s) in enumerate(zip(decay.tolist(), std.tolist())):
                    state = d * state + s * float(z[k, 0])
                    bias[k, 0] = state
                    state = d * state + s * float(z[k, 1])
                    bias[k, 1] = state
                self.bias[1] = state
            else:
                for k, (d, s) in enumerate(zip(decay.tolist(), std.tolist())):
                    state = d * state + s * float(z[k, axis])
                    bias[k, axis] = state
            self.bias[axis] = state
        out = x + bias + white
        quantised = self.precision > 0
        if quantised.any():
            step = np.where(quantised, self.precision, 1.0)
            out = np.where(quantised, step * round_half_away(out / step), out)
        return out

    def white_variance(self, dt):
        return self.stddev**2

    def stationary_variance(self, dt):
        # white + the bias: with a dynamic bias its stationary σ_b²·τ/2 (the drawn bias decays away);
        # without, the drawn bias, whose random sign makes it a zero-mean variable across sensors of
        # variance bias_mean² + bias_stddev²
        drawn = np.array(self.params["bias_mean"]) ** 2 + np.array(self.params["bias_stddev"]) ** 2
        return self.stddev**2 + np.where(self.dynamic, self.dynamic_sigma**2 * self.tau / 2.0, drawn)


class ChronoRandomWalkNoise(NoiseProcess):
    """Chrono ``ChNoiseRandomWalks`` GPS error (what produced the paper's data).

    State error position p and velocity v (3-vectors from 0).  For each sample, integrate its interval
    in sub-steps h = min(1/noise_rate, remaining):  μ = −gain·σ·p/(1 m);  a_i ~ N(μ_i, σ) clipped to
    ±a_max;  v ← v + a·h;  if |v| > v_max: v ← v·v_max/|v| (Euclidean);  p ← p + v·h (new v).
    out = x + p.  Chrono has no p_max and ignores its ``mean`` argument; gain = 0.2 there.
    """

    name = "random_walk"

    def __init__(self, sigma, noise_rate, v_max, a_max, gain, seq):
        super().__init__()
        self.sigma = float(sigma)
        self.h_max = 1.0 / float(noise_rate)
        self.v_max = float(v_max)
        self.a_max = float(a_max)
        self.gain = float(gain)
        self.p = [0.0, 0.0, 0.0]
        self.v = [0.0, 0.0, 0.0]
        self.rng = generator(seq, 0)
        self.params.update(
            formulation="chrono",
            sigma=self.sigma,
            noise_rate=float(noise_rate),
            v_max=self.v_max,
            a_max=self.a_max,
            mean_gain=self.gain,
        )

    def substeps(self, interval: float) -> List[float]:
        steps = []
        remaining = float(interval)
        while remaining > 1e-12:
            h = min(self.h_max, remaining)
            steps.append(h)
            remaining -= h
        return steps

    def stationary_variance(self, dt):
        return None  # a walk: its variance depends on how long it has run

    def apply(self, x, dt):
        # the intervals repeat (a fixed rate): each distinct one is split into sub-steps once
        intervals = np.asarray(dt, dtype=float).tolist()
        split = {d: self.substeps(d) for d in set(intervals)}
        schedules = [split[d] for d in intervals]
        total = sum(len(s) for s in schedules)
        # σ·z for every sub-step at once (the same products as one by one)
        z = (self.sigma * self.rng.standard_normal((total, 3))).tolist()
        out = np.empty((len(dt), 3))
        p, v = self.p, self.v
        a_max, v_max, mean_factor = self.a_max, self.v_max, -self.gain * self.sigma
        j = 0
        # per axis on scalars (same operations as the vector form; clamps as conditional expressions)
        p0, p1, p2 = p
        v0, v1, v2 = v
        low = -a_max
        for k, schedule in enumerate(schedules):
            for h in schedule:
                z0, z1, z2 = z[j]
                j += 1
                a0 = mean_factor * p0 + z0
                a1 = mean_factor * p1 + z1
                a2 = mean_factor * p2 + z2
                a0 = a_max if a0 > a_max else (low if a0 < low else a0)
                a1 = a_max if a1 > a_max else (low if a1 < low else a1)
                a2 = a_max if a2 > a_max else (low if a2 < low else a2)
                v0, v1, v2 = v0 + a0 * h, v1 + a1 * h, v2 + a2 * h
                speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
                if speed > v_max:
                    v0, v1, v2 = v0 * v_max / speed, v1 * v_max / speed, v2 * v_max / speed
                p0, p1, p2 = p0 + v0 * h, p1 + v1 * h, p2 + v2 * h
            out[k] = (p0, p1, p2)
        self.p, self.v = [p0, p1, p2], [v0, v1, v2]
        return x + out


class PaperRandomWalkNoise(NoiseProcess):
    """The paper's random walk (seed 003 appendix, seed 004 eq. 7, TR-2022-02), once per sample.

    m = −p/p_max;  a ~ N(m, σ_a) per axis;  then
      kinematic: p ← p + v·dt + ½·a·dt²;  v ← v + a·dt       (seed 003)
      unit_step: v ← v + a;  p ← p + v                        (seed 004: p_t + v_t + a_{t+1})
    out = x + p.
    """

    name = "random_walk"

    def __init__(self, sigma_a, p_max, integration, seq):
        super().__init__()
        self.sigma_a = float(sigma_a)
        self.p_max = float(p_max)
        self.integration = integration
        self.p = np.zeros(3)
        self.v = np.zeros(3)
        self.rng = generator(seq, 0)
        self.params.update(
            formulation="paper", sigma_a=self.sigma_a, p_max=self.p_max, integration=integration
        )

    @staticmethod
    def growth_per_sample(p_max: float, integration: str, dt: float) -> float:
        """Spectral radius of the noise-free recursion (p, v) → (p', v'): > 1 means |p| grows
        exponentially, whatever σ_a.  kinematic: [[1 − dt²/(2·p_max), dt], [−dt/p_max, 1]] (det
        1 + dt²/(2·p_max) > 1: always unstable, slowly for large p_max); unit_step: [[1 − 1/p_max, 1],
        [−1/p_max, 1]] (det 1, stable only while 1/p_max ≤ 4, i.e. p_max ≥ 0.25 m)."""
        if integration == "kinematic":
            matrix = [[1.0 - dt * dt / (2.0 * p_max), dt], [-dt / p_max, 1.0]]
        else:
            matrix = [[1.0 - 1.0 / p_max, 1.0], [-1.0 / p_max, 1.0]]
        return float(np.max(np.abs(np.linalg.eigvals(np.array(matrix)))))

    def stationary_variance(self, dt):
        return None  # a walk (unstable as discretised: growth_per_sample)

    def apply(self, x, dt):
        n = len(dt)
        z = self.rng.standard_normal((n, 3))
        out = np.empty((n, 3))
        p, v = self.p, self.v
        for k in range(n):
            a = -p / self.p_max + self.sigma_a * z[k]
            if self.integration == "kinematic":
                p = p + v * dt[k] + 0.5 * a * dt[k] * dt[k]
                v = v + a * dt[k]
            else:
                v = v + a
                p = p + v
            out[k] = p
        self.p, self.v = p, v
        return x + out

