"""How well a drive pins down the GPS stamp lag (plain arrays, no bags): ``calibrate --truth``.

The lag L is fitted (``calibrate.drive.fit_lag``) by minimising the summed variance of the horizontal
error e_k(L) = p_k − truth(g_k − L) over the fixes k (epochs g_k on the grid t = start + period·n_k).
With the fix at the true lag L₀, p_k = truth(g_k − L₀) + b + n_k (bias b, receiver error n_k), and to
first order truth(g − L) ≈ truth(g − L₀) − v_k·(L − L₀), so per horizontal axis a

    e_ak(L) = b_a + n_ak + v_ak·(L − L₀).

Minimising Σ_a var_k(e_ak) is least squares of the error on the velocity with a free mean per axis
(the bias), so only the velocity's variation about its mean, x_ak = v_ak − mean_k(v_ak), carries the
lag, and

    L̂ − L₀ = −Σ_a x_a·n_a / S,      S = Σ_a x_a·x_a,
    Var(L̂) = Σ_a x_aᵀ C_a x_a / S²  (exact for this linear model; C_a = Cov(n_a)).

A constant velocity (a straight line at constant speed) gives x = 0: the lag cannot be told from the
bias, whatever the speed.

Receiver error per axis: white σ_w plus a first-order Gauss–Markov part of stationary std σ_b and
correlation time τ (``calibrate.gps.fit_gauss_markov``), so for fixes at integer epochs n_i

    C_a[i, j] = σ_w²·δ_ij + σ_b²·ρ^|n_i − n_j|,    ρ = exp(−period/τ),

and xᵀCx = σ_w²·xᵀx + σ_b²·Q(x, ρ) with Q(x, ρ) = Σ_ij x_i x_j ρ^|n_i − n_j|, computed in O(N) by the
AR(1) recursion s_n = ρ·s_{n−1} + x_n over the epoch grid (missing epochs hold 0): Q = Σ_i x_i(2·s_i − x_i).

The standard error SE = √(Σ_a x_aᵀC_a x_a)/S is written as the walking-speed rule of thumb
SE = σ/(Δv·√N_eff) with σ² = the mean over the two axes of σ_w² + σ_b², Δv² = S/N (the RMS variation of
the horizontal velocity about its mean) and N_eff = σ²·N·S / Σ_a x_aᵀC_a x_a: N for white noise, about
N·(1 − ρ)/(1 + ρ) for a Gauss–Markov error whose τ is much longer than the fix period.

Observable: SE < period/4, i.e. the ±2 SE interval is narrower than one fix period — the data place
the fix epoch to within one epoch of the receiver, the resolution at which the model's stamp lag and
jitter (``models.gps``: stamp = epoch + lag + jitter·U[−1, 1], jitter < period/2) describe the timing.
Otherwise the lag is reported as not observable with its bound: lags smaller than 2·SE cannot be told
from 0 on this drive.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

# Observable when the standard error is below this fraction of the fix period: ±2 SE within one period.
OBSERVABLE_PERIOD_FRACTION = 0.25
BOUND_STANDARD_ERRORS = 2.0


def correlated_sum(epoch, x, rho: float) -> float:
    """Q = Σ_ij x_i·x_j·ρ^|n_i − n_j| for distinct integer epochs n (any order), in O(span)."""
    epoch = np.asarray(epoch, dtype=np.int64)
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return 0.0
    dense = np.zeros(int(epoch.max() - epoch.min()) + 1)
    dense[epoch - epoch.min()] = x
    running = lfilter([1.0], [1.0, -float(rho)], dense)  # s_n = ρ·s_{n−1} + x_n
    return float(np.sum(dense * (2.0 * running - dense)))


@dataclass(frozen=True)
class LagObservability:
    """The fitted lag with its standard error, and whether the drive makes it observable."""

    estimate: float             # s, the variance-minimising lag L̂
    standard_error: float       # s; inf when the horizontal velocity does not vary
    period: float               # s, the fix period
    fixes: int                  # N
    effective_fixes: float      # N_eff (nan when the velocity does not vary)
    velocity_variation: float   # m/s, Δv = RMS of the horizontal velocity about its mean
    sigma: float                # m, σ of the rule of thumb (RMS over east and north)

    @property
    def threshold(self) -> float:
        return OBSERVABLE_PERIOD_FRACTION * self.period

    @property
    def observable(self) -> bool:
        return bool(self.standard_error < self.threshold)

    @property
    def bound(self) -> float:
        """Lags below this (2 SE) cannot be told from 0 on this drive; inf when nothing bounds them."""
        return BOUND_STANDARD_ERRORS * self.standard_error

    @property
    def removed(self) -> float:
        """The lag the error model removes and the preset keeps: L̂ when observable, else 0."""
        return self.estimate if self.observable else 0.0

    def summary(self) -> str:
        """One sentence for the CLI, the report and the preset's description."""
        relation = "<" if self.observable else "≥"
        rule = f"standard error {relation} {self.threshold * 1e3:.1f} ms = fix period/4"
        if self.observable:
            return (f"stamp lag {self.estimate * 1e3:.1f} ± {self.standard_error * 1e3:.1f} ms: observable "
                    f"({rule})")
        if not np.isfinite(self.standard_error):
            return ("stamp lag not observable: the horizontal velocity does not vary, so a lag cannot be "
                    "told from a constant GPS bias; no bound; stamp_lag set to 0")
        return (f"stamp lag not observable at this speed ({self.estimate * 1e3:.0f} ± "
                f"{self.standard_error * 1e3:.0f} ms, {rule}): a lag below {self.bound * 1e3:.0f} ms "
                "(2 standard errors) cannot be told from 0 on this drive; stamp_lag set to 0")

    def report(self) -> dict:
        finite = bool(np.isfinite(self.standard_error))
        return {"observable": self.observable, "estimate_s": float(self.estimate),
                "standard_error_s": float(self.standard_error) if finite else None,
                "bound_s": float(self.bound) if finite else None,
                "threshold_s": float(self.threshold), "fixes": int(self.fixes),
                "effective_fixes": float(self.effective_fixes) if finite else None,
                "velocity_variation_m_s": float(self.velocity_variation), "sigma_m": float(self.sigma),
                "summary": self.summary()}


def lag_observability(estimate: float, epoch, period: float, velocity, noise) -> LagObservability:
    """Standard error of the lag fitted from fixes at integer ``epoch`` numbers (grid ``period`` s) with
    the truth's horizontal ``velocity`` (N, 2) m/s there, and the receiver error per horizontal axis
    ``noise`` = [(σ_w, σ_b, τ) east, (σ_w, σ_b, τ) north] (m, m, s; τ = 0: white).  Module docstring."""
    epoch = np.asarray(epoch, dtype=np.int64)
    velocity = np.asarray(velocity, dtype=float)[:, :2]
    x = velocity - velocity.mean(axis=0)
    s = float(np.sum(x * x))
    quadratic = 0.0
    for axis, (sigma_white, sigma_bias, tau) in enumerate(noise[:2]):
        quadratic += sigma_white**2 * float(x[:, axis] @ x[:, axis])
        if sigma_bias > 0 and tau > 0:
            quadratic += sigma_bias**2 * correlated_sum(epoch, x[:, axis], np.exp(-period / tau))
    n = len(epoch)
    sigma = float(np.sqrt(np.mean([w**2 + b**2 for w, b, _tau in noise[:2]])))
    variation = float(np.sqrt(s / n)) if n else 0.0
    if s <= 0:
        return LagObservability(float(estimate), float("inf"), float(period), n, float("nan"), variation,
                                sigma)
    effective = sigma**2 * n * s / quadratic if quadratic > 0 else float(n)  # noise-free: every fix counts
    return LagObservability(float(estimate), float(np.sqrt(quadratic) / s), float(period), n, effective,
                            variation, sigma)
