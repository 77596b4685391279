"""Per-run numbers: RMSE of the speed error and the Wiener-entropy difference (paper eqs. 1-3).

Inputs of one run are two speed series in m/s with times in seconds from one shared origin:
the state estimate (t_e, v_e) and the ground truth (t_g, v_g).  The reference preprocessing
(computeEPD.py) is the default; see ``ScoreOptions`` for the alternatives.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError
from .options import ScoreOptions

MIN_DURATION_S = 1.0
MAX_HOLD_S = 1.0  # a windowed run's estimate may stop this much before its truth (its last value is held)


@dataclass(frozen=True)
class RunScore:
    """One run's scores: E (RMSE, m/s), S_est and S_gt (Wiener entropies, unitless), D = |S_est - S_gt|."""

    rmse: float
    S_est: float
    S_gt: float
    D: float


def moving_average(x: np.ndarray, window: int) -> np.ndarray:
    """Mean over ``window`` consecutive samples, complete windows only: len(x) - window + 1 values."""
    kernel = np.ones(int(window)) / float(window)
    return np.convolve(x, kernel, "valid")


def common_timeline(t_est: np.ndarray, t_gt: np.ndarray, rate_hz: float,
                    end: float | None = None) -> np.ndarray:
    """t = 0, 1/rate, 2/rate, ... < min(t_gt[-1], t_est[-1]) (np.arange, as the reference), or < ``end``
    when the run has a time window (``metrics.inputs``: the truth's end inside it, so identical truth
    gives an identical timeline whatever the estimate).

    The last *written* times are used, not the maxima, as in the reference; inputs are checked to
    be non-decreasing before this is called.
    """
    return np.arange(0, min(t_gt[-1], t_est[-1]) if end is None else end, 1 / rate_hz)


def resample_run(t_est, v_est, t_gt, v_gt, options: ScoreOptions, end: float | None = None):
    """(t, v_est(t), v_gt(t)) on the common timeline (``end``: see ``common_timeline``), from
    ``options.warmup_s`` on (the warm-up's samples are left out; the others keep their times).

    v_gt is interpolated linearly; the estimate is first smoothed by a moving average of
    ``options.smoothing_window`` samples applied to *both* its speeds and its times (reference),
    then interpolated.  np.interp holds the end values outside a series (reference behaviour).
    """
    t = common_timeline(t_est, t_gt, options.rate_hz, end)
    if options.warmup_s:
        t = t[t >= options.warmup_s]
    v_gt_t = np.interp(t, t_gt, v_gt)
    if options.smoothing_window > 1:
        v_est = moving_average(v_est, options.smoothing_window)
        t_est = moving_average(t_est, options.smoothing_window)
    v_est_t = np.interp(t, t_est, v_est)
    return t, v_est_t, v_gt_t


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    """E = sqrt(mean((a - b)^2))  (eq. 1)."""
    return float(np.sqrt(np.square(np.subtract(a, b)).mean()))


def spectrum(x: np.ndarray, kind: str, rate_hz: float) -> np.ndarray:
    """The spectrum whose flatness is measured.

    full:      |FFT(x)| over all N bins (two-sided; reference; no window, no detrend)
    one_sided: |rFFT(x)|, bins 0 .. N/2
    welch:     Welch power spectral density (scipy defaults: Hann window, 50 % overlap,
               segments of min(256, N) samples, constant detrend), one-sided
    """
    if kind == "full":
        return np.abs(np.fft.fft(x))
    if kind == "one_sided":
        return np.abs(np.fft.rfft(x))
    if kind == "welch":
        from scipy import signal  # scipy.signal costs ~0.5 s to import; only Welch needs it

        return signal.welch(x, fs=rate_hz, nperseg=min(256, len(x)))[1]
    raise ValueError(f"unknown spectrum kind {kind!r}")


def wiener_entropy(x: np.ndarray, kind: str = "full", log_floor: float = 1e-10,
                   rate_hz: float = 15.0) -> float:
    """Spectral flatness S = exp(mean(log(F + floor))) / mean(F), F = spectrum(x)  (eq. 2).

    1 for a flat (white) spectrum, -> 0 for a peaky one.  A constant zero series has mean(F) = 0
    and gives NaN; callers reject NaN.
    """
    magnitude = spectrum(np.asarray(x, dtype=float), kind, rate_hz)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.exp(np.mean(np.log(magnitude + log_floor))) / np.mean(magnitude))


def check_series(name: str, t_est, v_est, t_gt, v_gt) -> None:
    """Per-run defects, as one-line UserErrors naming the run ``name``."""
    for label, values in (("estimate time", t_est), ("estimate speed", v_est),
                          ("ground-truth time", t_gt), ("ground-truth speed", v_gt)):
        if len(values) == 0:
            raise UserError(f"{name}: no {label} samples")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise UserError(f"{name}: {label} is NaN/inf at sample {int(bad[0])}")
    for label, t, v in (("estimate", t_est, v_est), ("ground truth", t_gt, v_gt)):
        if len(t) != len(v):
            raise UserError(f"{name}: {label} has {len(t)} times but {len(v)} speeds")
        back = np.flatnonzero(np.diff(t) < 0)
        if back.size:
            raise UserError(f"{name}: {label} time goes backwards at sample {int(back[0]) + 1}")
    if max(t_est[0], t_gt[0]) >= min(t_est[-1], t_gt[-1]):
        raise UserError(f"{name}: estimate [{t_est[0]:.3f}, {t_est[-1]:.3f}] s and ground truth "
                        f"[{t_gt[0]:.3f}, {t_gt[-1]:.3f}] s do not overlap")
    overlap = min(t_est[-1], t_gt[-1]) - max(t_est[0], t_gt[0])
    if overlap < MIN_DURATION_S:
        raise UserError(f"{name}: estimate and ground truth overlap for only {overlap:.3f} s "
                        f"(need >= {MIN_DURATION_S:g} s)")


def score_run(name: str, t_est, v_est, t_gt, v_gt, options: ScoreOptions,
              end: float | None = None) -> RunScore:
    """E, S_est, S_gt and D of one run (eqs. 1-3) after checking it; ``name`` appears in errors.
    ``end``: the timeline's end of a windowed run (``common_timeline``)."""
    t_est, v_est, t_gt, v_gt = (np.asarray(a, dtype=float) for a in (t_est, v_est, t_gt, v_gt))
    check_series(name, t_est, v_est, t_gt, v_gt)
    if end is not None and end - t_est[-1] > MAX_HOLD_S:
        raise UserError(f"{name}: the estimate stops {end - t_est[-1]:.3f} s before the ground truth of the "
                        f"run's window ends (at most {MAX_HOLD_S:g} s)")
    if options.warmup_s:
        span = (min(t_est[-1], t_gt[-1]) if end is None else end) - options.warmup_s
        if span < MIN_DURATION_S:
            raise UserError(f"{name}: the warm-up of {options.warmup_s:g} s leaves {max(span, 0.0):.3f} s to "
                            f"score (need >= {MIN_DURATION_S:g} s)")
    if len(t_est) < options.smoothing_window + 1:
        raise UserError(f"{name}: only {len(t_est)} estimate samples (smoothing window "
                        f"{options.smoothing_window} needs more)")
    # Overflow (speeds near 1e308) is detected below and named; numpy's warnings would only confuse.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        _, v_est_t, v_gt_t = resample_run(t_est, v_est, t_gt, v_gt, options, end)
        s_est = wiener_entropy(v_est_t, options.spectrum, options.log_floor, options.rate_hz)
        s_gt = wiener_entropy(v_gt_t, options.spectrum, options.log_floor, options.rate_hz)
        error = rmse(v_gt_t, v_est_t)
    for label, value, resampled, speeds in (("estimate", s_est, v_est_t, v_est),
                                            ("ground truth", s_gt, v_gt_t, v_gt)):
        if not np.isfinite(value):
            if not np.any(resampled):
                raise UserError(f"{name}: Wiener entropy of the {label} speed is undefined "
                                "(speed identically 0)")
            raise _overflow(name, label, speeds)
    if not np.isfinite(error):
        label, speeds = max((("estimate", v_est), ("ground truth", v_gt)),
                            key=lambda item: float(np.max(np.abs(item[1]))))
        raise _overflow(name, label, speeds)
    return RunScore(rmse=error, S_est=s_est, S_gt=s_gt, D=abs(s_est - s_gt))


def _overflow(name: str, label: str, speeds: np.ndarray) -> UserError:
    peak = float(np.max(np.abs(speeds)))
    return UserError(f"{name}: the {label} speed reaches {peak:.3g} m/s, too large to score (the "
                     "arithmetic overflows float64); not a vehicle speed")
