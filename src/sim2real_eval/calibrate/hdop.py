"""HDOP recovered from NavSatFix covariances, and the first-order decay fit of the AirSim HDOP model.

Assumed driver formula (nmea_navsat_driver, default parameters, GGA sentences; see
shared/spec/noise_models.md "Real GPS driver covariances"):

    var_east = var_north = (hdop·epe)²,  var_up = (2·hdop·2·epe)²,  type APPROXIMATED (1)

so  hdop = √(var_h)/epe  with var_h the mean of the east and north variances (the altitude term is not
used: our AirSim model and the driver disagree on its factor).  The epe (estimated position error, m)
depends on the GGA fix quality, which the NavSatFix only keeps coarsely in ``status.status``:

    status −1 NO_FIX → fix rejected;  0 FIX (SPS) → 4.0;  1 SBAS_FIX (DGPS) → 0.1;
    2 GBAS_FIX → 0.02 (RTK fixed — the paper's "0.02 from the GPS driver code")

GBAS_FIX is ambiguous in the driver (RTK fixed 0.02, RTK float 4.0, WAAS 3.0): we assume RTK fixed,
and ``epe`` overrides the table for receivers known to be different.  For a DIAGONAL_KNOWN (ublox)
covariance the same inversion gives an "HDOP-equivalent" hAcc/epe, still a valid input to the fit.

Decay model (the AirSim HDOP filter, continuous form): H(t) = H∞ + (H0 − H∞)·exp(−t/τ), t from the
filter start.  The model filters once per published fix, H_k = α·H_{k−1} + (1 − α)·H∞ with
α = exp(−dt/τ), starting from H0 one period before the first fix, which is exactly the continuous
curve sampled at t_k = t_fix,k − t_fix,0 + dt.  We fit with that time origin so H0 means the model's H0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import curve_fit

from ..errors import UserError

# NavSatStatus.status -> epe (m) under the driver's default parameters.
EPE_BY_STATUS = {0: 4.0, 1: 0.1, 2: 0.02}
COVARIANCE_UNKNOWN = 0


@dataclass(frozen=True)
class HdopFit:
    """H(t) = h_inf + (h0 − h_inf)·exp(−t/tau); t (s) from one period before the first fix."""

    h0: float
    h_inf: float
    tau: float      # s
    rmse: float     # rms residual of the fit (HDOP units)
    t: np.ndarray   # fit abscissa, s
    hdop: np.ndarray
    epe: float      # m, the epe assumed for the inversion
    decaying: bool  # False when the series is flat (H0 ≈ H∞): τ then means nothing


def hdop_from_covariance(covariance: np.ndarray, status: np.ndarray, epe: float | None = None,
                         where: str = "NavSatFix") -> np.ndarray:
    """HDOP per fix from (N, 9) row-major ENU covariances (m²): √((c[0] + c[4])/2)/epe.

    epe: one value for every fix, or None to take it per fix from status (EPE_BY_STATUS).
    """
    covariance = np.asarray(covariance, dtype=float).reshape(-1, 9)
    status = np.asarray(status).reshape(-1)
    if epe is None:
        unknown = sorted({int(s) for s in status} - set(EPE_BY_STATUS))
        if unknown:
            raise UserError(f"{where}: NavSatFix status {unknown} has no driver epe; pass --epe to give one")
        epe_per_fix = np.array([EPE_BY_STATUS[int(s)] for s in status], dtype=float)
    else:
        if not epe > 0:
            raise UserError(f"--epe must be > 0, got {epe!r}")
        epe_per_fix = np.full(len(status), float(epe))
    var_h = 0.5 * (covariance[:, 0] + covariance[:, 4])
    return np.sqrt(np.clip(var_h, 0.0, None)) / epe_per_fix


def first_order_decay(t, h0, h_inf, tau):
    """H(t) = H∞ + (H0 − H∞)·exp(−t/τ)."""
    return h_inf + (h0 - h_inf) * np.exp(-np.asarray(t, dtype=float) / tau)


def fit_hdop_decay(stamps: np.ndarray, hdop: np.ndarray, epe: float = float("nan"),
                   where: str = "HDOP") -> HdopFit:
    """Least-squares fit of the first-order decay (scipy curve_fit) to an HDOP series.

    stamps: fix times (s); the time origin is one nominal period before the first fix (module doc).
    where: what errors name (e.g. "bag: /fix").
    Bounds: H0, H∞ ≥ 0; τ in [period/10, 100·duration].  A flat series (no decay visible, e.g. a
    receiver that had already converged) gives decaying = False, H0 = H∞ = mean and τ = the period.
    """
    stamps = np.asarray(stamps, dtype=float)
    hdop = np.asarray(hdop, dtype=float)
    if len(stamps) < 5:
        raise UserError(f"{where}: HDOP fit needs at least 5 fixes, got {len(stamps)}")
    bad = ~(np.isfinite(stamps) & np.isfinite(hdop))
    if bad.any():
        raise UserError(f"{where}: HDOP from the covariance is NaN/inf at {int(bad.sum())} fix(es), "
                        f"the first at t = {stamps[int(np.argmax(bad))]:.3f} s")
    period = float(np.median(np.diff(stamps)))
    t = stamps - stamps[0] + period
    duration = float(t[-1])
    h_first, h_last = float(np.median(hdop[:3])), float(np.median(hdop[-max(3, len(hdop) // 10):]))
    spread = float(np.ptp(hdop))
    if spread <= 1e-9 * max(1.0, abs(h_last)):
        return HdopFit(h_last, h_last, period, 0.0, t, hdop, epe, False)
    # First guess: τ where the curve has covered 63 % of its way down.
    target = h_last + (h_first - h_last) / np.e
    crossed = np.nonzero((hdop - target) * np.sign(h_first - h_last) <= 0)[0]
    tau0 = float(t[crossed[0]]) if crossed.size else duration / 3
    tau0 = min(max(tau0, period), 50 * duration)
    try:
        (h0, h_inf, tau), _ = curve_fit(
            first_order_decay, t, hdop, p0=(max(h_first, 0.0), max(h_last, 0.0), tau0),
            bounds=([0.0, 0.0, period / 10.0], [np.inf, np.inf, 100.0 * duration]), maxfev=20000,
        )
    except (RuntimeError, ValueError) as exc:
        raise UserError(f"{where}: HDOP decay fit failed ({exc})") from None
    rmse = float(np.sqrt(np.mean((first_order_decay(t, h0, h_inf, tau) - hdop) ** 2)))
    # The decay is "visible" if it explains clearly more than the residual noise.
    decaying = abs(h0 - h_inf) > 3.0 * max(rmse, 1e-12) and tau < 10.0 * duration
    return HdopFit(float(h0), float(h_inf), float(tau), rmse, t, hdop, epe, bool(decaying))
