"""GPS noise statistics from a standstill position series (plain arrays, no bags).

Input: times t (s) and the receiver's ENU position (m) while the antenna does not move.  The error
series is e = p − mean(p) per axis (the true position of a standstill antenna is unknown; its mean is
the best estimate, which removes the constant offset every receiver has).

Statistics (all per axis E, N, U):
- std: sample standard deviation of e (ddof = 1).
- second-difference σ (the paper's random-walk σ_a): σ_a = std(Δ²e) / dt², Δ²e_k = e_{k+1} − 2e_k + e_{k−1},
  over triplets sampled at the nominal period dt (the median step; triplets with a gap are skipped).
- p_max: max |e| (the paper's "maximum position error" that bounds the random walk).
- Gauss–Markov fit of the normalised autocorrelation ρ(lag) ≈ A·exp(−lag/τ) for lag ≥ dt.  Lag 0 is
  excluded: white noise adds only to lag 0, so A = σ_b²/(σ_b² + σ_w²) separates a correlated bias
  (σ_b = √(A)·std) from white noise (σ_w = √(1 − A)·std).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import curve_fit

from ..errors import UserError

AXES = ("east", "north", "up")
# A step is "regular" when it is within this fraction of the nominal period (real receivers jitter).
_PERIOD_TOLERANCE = 0.1
# Autocorrelation below this is treated as zero: the fit stops at the first lag under it.
_RHO_FLOOR = 0.05


@dataclass(frozen=True)
class GaussMarkovFit:
    """ρ(lag) = amplitude·exp(−lag/tau) for lag > 0; tau = 0 means no correlation was found (white)."""

    tau: float          # s
    amplitude: float    # A in [0, 1], share of the variance that is correlated
    sigma_bias: float   # m, √A·std
    sigma_white: float  # m, √(1 − A)·std
    lags: np.ndarray    # s, lags used in the fit
    rho: np.ndarray     # measured autocorrelation at those lags


@dataclass(frozen=True)
class GpsNoiseStats:
    """Standstill GPS statistics; every (3,) array is ordered east, north, up."""

    duration: float            # s
    count: int
    period: float              # s, nominal (median) sample period
    mean_position: np.ndarray  # (3,) ENU m of the mean, relative to the series' own origin
    error: np.ndarray          # (N, 3) e = p − mean(p), m
    std: np.ndarray            # (3,) m
    second_difference_sigma: np.ndarray  # (3,) m/s², std(Δ²e)/dt²
    p_max: np.ndarray          # (3,) m, max |e|
    gauss_markov: tuple        # 3 × GaussMarkovFit

    @property
    def horizontal_std(self) -> float:
        """RMS of the east and north std (m): one number for an isotropic horizontal model."""
        return float(np.sqrt(np.mean(self.std[:2] ** 2)))

    @property
    def horizontal_second_difference_sigma(self) -> float:
        return float(np.sqrt(np.mean(self.second_difference_sigma[:2] ** 2)))

    @property
    def horizontal_p_max(self) -> float:
        return float(np.max(self.p_max[:2]))


def nominal_period(t: np.ndarray) -> float:
    """Median sample step (s): robust to the odd dropped or late message."""
    steps = np.diff(np.asarray(t, dtype=float))
    return float(np.median(steps))


def second_difference_sigma(t: np.ndarray, position: np.ndarray) -> np.ndarray:
    """std(Δ²p)/dt² per column (m/s²), using only triplets whose two steps both equal the period.

    Δ²p_k = p_{k+1} − 2p_k + p_{k−1}; a constant or linear trend has Δ²p = 0, so no detrending is needed.
    """
    t = np.asarray(t, dtype=float)
    position = np.asarray(position, dtype=float).reshape(len(t), -1)
    period = nominal_period(t)
    steps = np.diff(t)
    regular = np.abs(steps - period) <= _PERIOD_TOLERANCE * period
    triplet_ok = regular[:-1] & regular[1:]
    if triplet_ok.sum() < 3:
        raise UserError(f"need at least 3 regularly spaced sample triplets, got {int(triplet_ok.sum())}")
    second = position[2:] - 2.0 * position[1:-1] + position[:-2]
    return np.std(second[triplet_ok], axis=0, ddof=1) / period**2


def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Normalised autocorrelation ρ(k) = Σ x̃_i x̃_{i+k} / Σ x̃_i², k = 0..max_lag (x̃ = x − mean).

    The biased (1/N) estimator: it is positive semi-definite and has lower variance at long lags.
    Computed with a zero-padded FFT.
    """
    x = np.asarray(x, dtype=float)
    x = x - x.mean()
    n = len(x)
    size = 1 << int(np.ceil(np.log2(2 * n)))
    spectrum = np.fft.rfft(x, size)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), size)[: max_lag + 1]
    if acov[0] <= 0:
        return np.zeros(max_lag + 1)
    return acov / acov[0]


def _exp_decay(lag, amplitude, tau):
    return amplitude * np.exp(-lag / tau)


def fit_gauss_markov(x: np.ndarray, period: float, max_lag: int | None = None) -> GaussMarkovFit:
    """Fit ρ(lag) = A·exp(−lag/τ) to the autocorrelation of x for lags period, 2·period, … .

    Lags are used up to the first one whose ρ falls below 0.05 (beyond it the estimate is noise),
    at most max_lag (default N/4).  When ρ(period) itself is below 0.05 the series is white: τ = 0.
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    std = float(np.std(x, ddof=1)) if n > 1 else 0.0
    max_lag = max(2, n // 4) if max_lag is None else max_lag
    rho = autocorrelation(x, max_lag)
    below = np.nonzero(rho[1:] < _RHO_FLOOR)[0]
    last = int(below[0]) if below.size else max_lag  # lags 1..last are above the floor
    lags_index = np.arange(1, last + 1)
    if last < 1:
        return GaussMarkovFit(0.0, 0.0, 0.0, std, np.zeros(0), np.zeros(0))
    lags = lags_index * period
    values = rho[lags_index]
    duration = n * period
    if len(lags) == 1:
        # One usable lag: the exponential through it with A = 1 (cannot separate A and τ).
        tau = float(-lags[0] / np.log(values[0]))
        amplitude = 1.0
    else:
        first_guess_tau = float(lags[-1] / max(-np.log(max(values[-1], _RHO_FLOOR)), 1e-3))
        try:
            (amplitude, tau), _ = curve_fit(
                _exp_decay, lags, values, p0=(min(values[0], 1.0), first_guess_tau),
                bounds=([0.0, period / 10.0], [1.0, 10.0 * duration]),
            )
        except (RuntimeError, ValueError) as exc:
            raise UserError(f"Gauss-Markov fit of the GPS autocorrelation failed ({exc})") from None
    return GaussMarkovFit(
        tau=float(tau), amplitude=float(amplitude), sigma_bias=float(np.sqrt(amplitude) * std),
        sigma_white=float(np.sqrt(max(1.0 - amplitude, 0.0)) * std), lags=lags, rho=values,
    )


def gps_noise_stats(t: np.ndarray, position: np.ndarray, min_samples: int = 20) -> GpsNoiseStats:
    """All standstill statistics of an (N, 3) ENU position series sampled at times t (s)."""
    t = np.asarray(t, dtype=float)
    position = np.asarray(position, dtype=float)
    if position.ndim != 2 or position.shape[1] != 3 or position.shape[0] != t.shape[0]:
        raise UserError(f"GPS position must be (N, 3) matching {t.shape[0]} times, got {position.shape}")
    if len(t) < min_samples:
        raise UserError(f"GPS: {len(t)} fixes are too few for the noise statistics; "
                        f"need at least {min_samples}")
    if not np.all(np.diff(t) > 0):
        raise UserError("GPS: fix stamps are not strictly increasing")
    if not np.all(np.isfinite(position)):
        raise UserError("GPS: position contains NaN/inf")
    period = nominal_period(t)
    mean = position.mean(axis=0)
    error = position - mean
    fits = tuple(fit_gauss_markov(error[:, i], period) for i in range(3))
    return GpsNoiseStats(
        duration=float(t[-1] - t[0]), count=len(t), period=period, mean_position=mean, error=error,
        std=np.std(error, axis=0, ddof=1), second_difference_sigma=second_difference_sigma(t, error),
        p_max=np.max(np.abs(error), axis=0), gauss_markov=fits,
    )


def windowed_speed(t: np.ndarray, position: np.ndarray, window: float = 10.0) -> float:
    """Largest horizontal speed (m/s) between the mean positions of consecutive windows of `window` s.

    Averaging over a window suppresses the receiver noise (a 3 cm white noise at 10 Hz would otherwise
    look like 0.5 m/s between single fixes) while a vehicle that creeps still shows up.  With less than
    two windows of data, the whole series is split into two halves.
    """
    t = np.asarray(t, dtype=float)
    position = np.asarray(position, dtype=float)
    duration = t[-1] - t[0]
    if duration < 2 * window:
        window = duration / 2.0
    if window <= 0:
        return 0.0
    index = np.floor((t - t[0]) / window).astype(int)
    speeds = []
    centres = []
    means = []
    for k in np.unique(index):
        mask = index == k
        if mask.sum() < 2 and len(t) > 4:
            continue
        centres.append(t[mask].mean())
        means.append(position[mask, :2].mean(axis=0))
    for i in range(1, len(means)):
        dt = centres[i] - centres[i - 1]
        if dt > 0:
            speeds.append(float(np.linalg.norm(means[i] - means[i - 1]) / dt))
    return max(speeds) if speeds else 0.0
