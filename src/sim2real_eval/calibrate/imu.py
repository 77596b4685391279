"""IMU noise parameters from a standstill series by Allan deviation (plain arrays, no bags).

Overlapping Allan deviation σ(τ) (allantools.oadev on the rate samples, data_type "freq") of each axis
of the gyroscope (rad/s) and the accelerometer (m/s²).  For the usual noise terms (IEEE Std 952):

    σ²(τ) = N²/τ  +  (0.664·B)²  +  K²·τ/3        (white noise, bias instability, rate random walk)

- noise density N (unit/√Hz = unit·√s): the −1/2 slope line evaluated at τ = 1 s, N = σ(τ)·√τ,
  averaged (in log) over the taus whose local slope is within ±0.15 of −1/2;
- bias instability B (unit): the minimum of σ (the flat part) / 0.664, where 0.664 = √(2·ln2/π);
- rate random walk K (unit/√s): the +1/2 slope line evaluated at τ = 3 s, K = σ(τ)·√(3/τ), averaged
  over the taus whose slope is within ±0.15 of +1/2; None when the data are too short to show it.

Chrono drift equivalents (``ChNoiseNormalDrift``, per sample at rate f, dt = 1/f):
    out = true + η_a + b,  η_a ~ N(0, σ),  b ← b + η_b,  η_b ~ N(0, b0·√(dt/t_b)).
White part: σ(τ) of samples with std σ averaged over τ·f samples is σ/√(τ·f), so N = σ/√f and
    σ = N·√f.
Drift part: after n = t/dt samples b has variance n·b0²·dt/t_b = (b0²/t_b)·t, a random walk with
diffusion K² = b0²/t_b, i.e. strength K = b0/√t_b per √s — only the ratio is observable, so for a
chosen t_b (default 0.1 s, the paper text's value)
    b0 = K·√t_b.
AirSim equivalents: ARW = N, and the bias random walk increment (stability/√τ_bias)·√dt gives
K = stability/√τ_bias.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError

BIAS_INSTABILITY_FACTOR = 0.664  # √(2·ln 2/π): σ at the flicker floor = 0.664·B
SLOPE_TOLERANCE = 0.15
# Shortest standstill for a meaningful Allan analysis: τ up to 1/10 of the record must reach well past
# 1 s (where N is read) and show where the curve turns (bias).  Bias instability itself needs ≳ 30 min.
MIN_ALLAN_DURATION = 60.0


@dataclass(frozen=True)
class AllanParameters:
    """Allan-deviation reading of one axis; units of the sensor (rad/s or m/s²)."""

    taus: np.ndarray
    adev: np.ndarray
    noise_density: float             # N, unit·√s (= unit/√Hz)
    bias_instability: float          # B, unit
    bias_instability_tau: float      # s, where the minimum is
    rate_random_walk: float | None   # K, unit/√s; None when no +1/2 slope is visible

    def chrono_drift(self, rate: float, t_b: float = 0.1) -> tuple[float, float]:
        """(σ, b0) of Chrono's drift model at sample rate `rate` Hz: σ = N·√f, b0 = K·√t_b (0 if K unseen)."""
        return chrono_drift_equivalent(self.noise_density, self.rate_random_walk or 0.0, rate, t_b)


def chrono_drift_equivalent(noise_density: float, rate_random_walk: float, rate: float,
                            t_b: float = 0.1) -> tuple[float, float]:
    """σ = N·√f (white std per sample) and b0 = K·√t_b (drift scale for correlation time t_b)."""
    if not rate > 0 or not t_b > 0:
        raise UserError(f"rate and t_b must be > 0, got rate={rate!r}, t_b={t_b!r}")
    return float(noise_density * np.sqrt(rate)), float(rate_random_walk * np.sqrt(t_b))


def _allantools():
    """allantools (the ``[all]`` extra), imported when an Allan deviation is computed: the rest of the
    package (and a ROS install without the extra) does not need it."""
    try:
        import allantools
    except ImportError:
        raise UserError("the IMU Allan deviation needs allantools: pip install 'sim2real_eval[all]' "
                        "(or pip install allantools)") from None
    return allantools


def allan_deviation(samples: np.ndarray, rate: float, points_per_decade: int = 10):
    """Overlapping Allan deviation of a rate series: (taus s, adev) on log-spaced taus ≤ duration/10."""
    samples = np.asarray(samples, dtype=float)
    duration = len(samples) / rate
    max_tau = duration / 10.0
    min_tau = 1.0 / rate
    if max_tau <= min_tau:
        raise UserError(f"IMU series of {duration:.1f} s is too short for an Allan deviation")
    count = max(2, int(np.ceil(np.log10(max_tau / min_tau) * points_per_decade)) + 1)
    taus = np.unique(np.round(np.logspace(np.log10(min_tau), np.log10(max_tau), count) * rate)) / rate
    taus_out, adev, _n = overlapping_adev(samples, rate, taus)
    keep = adev > 0
    return taus_out[keep], adev[keep]


def overlapping_adev(samples: np.ndarray, rate: float, taus) -> tuple:
    """(taus s, adev, terms) of a rate series at the given taus (multiples of 1/rate; allantools keeps
    those the series is long enough for): σ²(τ) = ½·mean over the ``terms`` overlapping pairs of
    (ȳ_{k+m} − ȳ_k)², ȳ the means over m = τ·rate samples."""
    taus_out, adev, _err, terms = _allantools().oadev(np.asarray(samples, dtype=float), rate=rate,
                                                      data_type="freq", taus=np.asarray(taus, dtype=float))
    return np.asarray(taus_out, dtype=float), np.asarray(adev, dtype=float), np.asarray(terms, dtype=float)


def read_allan(taus: np.ndarray, adev: np.ndarray) -> AllanParameters:
    """N, B, K from an Allan-deviation curve by the slope method (module docstring)."""
    taus = np.asarray(taus, dtype=float)
    adev = np.asarray(adev, dtype=float)
    if len(taus) < 3:
        raise UserError("Allan deviation has fewer than 3 points; record a longer standstill")
    log_tau, log_adev = np.log(taus), np.log(adev)
    slope = np.gradient(log_adev, log_tau)
    i_min = int(np.argmin(adev))

    white = np.abs(slope + 0.5) <= SLOPE_TOLERANCE
    white[i_min + 1:] = False
    if not white.any():  # no clean −1/2 region: take the point whose slope is closest to −1/2
        white = np.zeros_like(white)
        white[int(np.argmin(np.abs(slope[: i_min + 1] + 0.5)))] = True
    noise_density = float(np.exp(np.mean(log_adev[white] + 0.5 * log_tau[white])))

    walk = np.abs(slope - 0.5) <= SLOPE_TOLERANCE
    walk[: i_min + 1] = False
    rate_random_walk = None
    if walk.any():
        rate_random_walk = float(np.exp(np.mean(log_adev[walk] - 0.5 * log_tau[walk] + 0.5 * np.log(3.0))))

    return AllanParameters(
        taus=taus, adev=adev, noise_density=noise_density,
        bias_instability=float(adev[i_min] / BIAS_INSTABILITY_FACTOR),
        bias_instability_tau=float(taus[i_min]), rate_random_walk=rate_random_walk,
    )


@dataclass(frozen=True)
class ImuNoiseStats:
    """Per-axis Allan readings of a standstill IMU record."""

    duration: float
    rate: float                 # Hz, nominal
    gyro: tuple                 # 3 × AllanParameters (x, y, z), rad/s
    accel: tuple                # 3 × AllanParameters, m/s²
    gyro_mean: np.ndarray       # (3,) rad/s: constant bias (plus Earth rate)
    accel_mean: np.ndarray      # (3,) m/s²: constant bias plus gravity


def imu_noise_stats(t: np.ndarray, gyro: np.ndarray, accel: np.ndarray,
                    min_duration: float = MIN_ALLAN_DURATION, what: str = "standstill") -> ImuNoiseStats:
    """Allan analysis of (N, 3) gyro and accelerometer series sampled at times t (s).

    The series is treated as uniformly sampled at the nominal rate 1/median(step); a few dropped
    messages only shorten the effective record.
    """
    t = np.asarray(t, dtype=float)
    gyro = np.asarray(gyro, dtype=float)
    accel = np.asarray(accel, dtype=float)
    if gyro.shape != (len(t), 3) or accel.shape != (len(t), 3):
        raise UserError(f"IMU series must be (N, 3) for {len(t)} stamps, got {gyro.shape} and {accel.shape}")
    if len(t) < 10:
        raise UserError(f"IMU: {len(t)} samples are too few for an Allan analysis")
    duration = float(t[-1] - t[0])
    if duration < min_duration:
        raise UserError(
            f"IMU: {duration:.1f} s of {what} is too short for the Allan analysis; "
            f"need at least {min_duration:g} s (bias instability needs about 30 min)"
        )
    if not (np.isfinite(gyro).all() and np.isfinite(accel).all()):
        raise UserError("IMU: angular_velocity or linear_acceleration contains NaN/inf")
    rate = 1.0 / float(np.median(np.diff(t)))
    gyro_fits = tuple(read_allan(*allan_deviation(gyro[:, i], rate)) for i in range(3))
    accel_fits = tuple(read_allan(*allan_deviation(accel[:, i], rate)) for i in range(3))
    return ImuNoiseStats(duration, rate, gyro_fits, accel_fits, gyro.mean(axis=0), accel.mean(axis=0))
