"""The position covariance an imported /fix reports: the receiver-accuracy policy (docs/import.md).

robot_localization weighs every GPS fix by its covariance, so a receiver that reports none (a u-blox
fix logged without hAcc, a CSV without accuracy columns) must be given one — and the judged result
depends on it (on comma2k19 segment 40, 0.5× or 2× the σ moves the VEPD noticeably: the sensitivity
line, ``sensitivity_scales``).  The policy, first match wins:

1. ``--fix-covariance SIGMA`` (m): σ_e = σ_n = SIGMA, σ_u = 2·SIGMA; type APPROXIMATED.
2. Accuracy in the data (CSV ``sigma_h`` [, ``sigma_v``]): σ_e = σ_n = sigma_h, σ_u = sigma_v
   (default 2·sigma_h); type DIAGONAL_KNOWN — what a driver reporting hAcc/vAcc writes.
3. The receiver's own pseudorange σ (comma2k19 ``raw_gnss_ublox``): per epoch the inverse-variance
   RMS σ_R = √(n / Σ σ_i⁻²) over the satellites measured, reported through nmea_navsat_driver's GGA
   formula with σ_R as its epe and HDOP 1: σ_e = σ_n = σ_R, σ_u = 2·σ_R; type APPROXIMATED.
4. Nothing → an error naming the missing column and the option.

``--fix-covariance-scale K`` multiplies every σ (variances by K²): the sensitivity runs use 0.5 and 2.
The altitude factor 2 on the std is the project's ``hdop`` covariance default (docs/models.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError
from ..models import samples as S

TYPE_NAMES = {S.COVARIANCE_TYPE_APPROXIMATED: "approximated",
              S.COVARIANCE_TYPE_DIAGONAL_KNOWN: "diagonal_known"}
ALTITUDE_FACTOR = 2.0          # σ_up = 2·σ_horizontal (the hdop covariance model's default)
SENSITIVITY_SCALES = (0.5, 1.0, 2.0)


@dataclass(frozen=True)
class FixCovariance:
    """Per-fix 1-σ (N, 3) ENU metres, the NavSatFix covariance type, and where it came from."""

    sigma: np.ndarray
    covariance_type: int
    policy: str
    description: str
    scale: float = 1.0

    def variances(self) -> np.ndarray:
        """(N, 9) row-major ENU covariance: diag(σ²)·scale²."""
        cov = np.zeros((len(self.sigma), 9))
        cov[:, [0, 4, 8]] = (self.sigma * self.scale) ** 2
        return cov

    def record(self) -> dict:
        sigma = self.sigma * self.scale
        return {"policy": self.policy, "description": self.description, "scale": float(self.scale),
                "type": TYPE_NAMES.get(self.covariance_type, "unknown"),
                "sigma_m": {"median": [round(float(v), 4) for v in np.median(sigma, axis=0)],
                            "min": [round(float(v), 4) for v in np.min(sigma, axis=0)],
                            "max": [round(float(v), 4) for v in np.max(sigma, axis=0)]}}


def given_sigma(count: int, sigma: float) -> FixCovariance:
    if not (np.isfinite(sigma) and sigma > 0):
        raise UserError(f"--fix-covariance: expected a standard deviation > 0 m, got {sigma!r}")
    values = np.tile([sigma, sigma, ALTITUDE_FACTOR * sigma], (count, 1))
    return FixCovariance(values, S.COVARIANCE_TYPE_APPROXIMATED, "fix_covariance",
                         f"--fix-covariance {sigma:g} m (horizontal; vertical {ALTITUDE_FACTOR:g}x)")


def reported_sigma(sigma_h, sigma_v=None, where: str = "gnss") -> FixCovariance:
    sigma_h = np.asarray(sigma_h, dtype=float)
    sigma_v = ALTITUDE_FACTOR * sigma_h if sigma_v is None else np.asarray(sigma_v, dtype=float)
    for name, values in (("sigma_h", sigma_h), ("sigma_v", sigma_v)):
        bad = ~(np.isfinite(values) & (values > 0))
        if bad.any():
            raise UserError(f"{where}: column {name}: expected a standard deviation > 0 m, got "
                            f"{float(values[int(np.argmax(bad))])!r} at fix {int(np.argmax(bad))}")
    return FixCovariance(np.column_stack([sigma_h, sigma_h, sigma_v]), S.COVARIANCE_TYPE_DIAGONAL_KNOWN,
                         "reported", "the receiver's reported accuracy (sigma_h, sigma_v columns)")


def pseudorange_epochs(epoch_t, epoch_id, pseudorange_sigma):
    """(epoch times (M,), σ_R (M,)) from per-satellite rows: σ_R = √(n / Σ σ_i⁻²) per epoch (the σ of
    an equal-weight range that carries the same information as the n weighted ones).  Rows with a
    non-finite or non-positive σ are left out; epochs with no valid satellite are dropped."""
    epoch_t = np.asarray(epoch_t, dtype=float)
    sigma = np.asarray(pseudorange_sigma, dtype=float)
    valid = np.isfinite(sigma) & (sigma > 0) & np.isfinite(epoch_t)
    ids, inverse = np.unique(np.asarray(epoch_id)[valid], return_inverse=True)
    counts = np.bincount(inverse, minlength=len(ids))
    information = np.bincount(inverse, weights=sigma[valid] ** -2.0, minlength=len(ids))
    times = np.full(len(ids), np.inf)
    np.minimum.at(times, inverse, epoch_t[valid])
    order = np.argsort(times)
    return times[order], np.sqrt(counts / information)[order]


def from_pseudorange(fix_t, epoch_t, epoch_sigma, where: str = "raw_gnss_ublox",
                     max_age: float = 1.0) -> FixCovariance:
    """σ_R of the latest measurement epoch at or before each fix (within ``max_age`` s)."""
    fix_t = np.asarray(fix_t, dtype=float)
    if len(epoch_t) == 0:
        raise UserError(f"{where}: no pseudorange with a valid standard deviation")
    index = np.searchsorted(epoch_t, fix_t, side="right") - 1
    index_ok = np.clip(index, 0, len(epoch_t) - 1)
    age = fix_t - epoch_t[index_ok]
    # a fix before the first epoch takes the first one (a receiver reports the epoch it has)
    use_first = index < 0
    age[use_first] = epoch_t[0] - fix_t[use_first]
    stale = age > max_age
    if stale.any():
        i = int(np.argmax(stale))
        raise UserError(f"{where}: no pseudorange epoch within {max_age:g} s of the fix at "
                        f"t = {fix_t[i]:.3f} s")
    sigma = epoch_sigma[index_ok]
    values = np.column_stack([sigma, sigma, ALTITUDE_FACTOR * sigma])
    return FixCovariance(values, S.COVARIANCE_TYPE_APPROXIMATED, "pseudorange",
                         "per epoch sqrt(n / sum(sigma_i^-2)) of the u-blox pseudorange sigma, through "
                         "nmea_navsat_driver's formula with HDOP 1 (vertical 2x)")


def sensitivity_scales(base: float = 1.0) -> tuple:
    """The σ scales of the report's sensitivity line: 0.5×, 1× and 2× the policy's σ."""
    return tuple(base * s for s in SENSITIVITY_SCALES)
