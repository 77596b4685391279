"""Calibration figures (matplotlib, Agg): Allan deviation with the read lines, GPS error and
autocorrelation fits, HDOP decay fit.  Each function writes one PNG and returns its path."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .imu import BIAS_INSTABILITY_FACTOR  # noqa: E402

AXIS_NAMES = ("x", "y", "z")
ENU_NAMES = ("east", "north", "up")


def save_png(fig, path: Path) -> Path:
    """``fig`` written to ``path`` as a PNG (110 dpi) and closed; returns ``path``."""
    # The caller makes the file set atomic (core.write_calibration writes into temporaries).
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)
    return path


def allan_plot(imu_stats, path) -> Path:
    """Gyro and accelerometer ADEV per axis, with the N/√τ and K·√(τ/3) lines and the 0.664·B floor."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, fits, unit, title in ((axes[0], imu_stats.gyro, "rad/s", "gyroscope"),
                                  (axes[1], imu_stats.accel, "m/s²", "accelerometer")):
        for name, fit, colour in zip(AXIS_NAMES, fits, ("C0", "C1", "C2")):
            ax.loglog(fit.taus, fit.adev, "-", color=colour, label=f"{name}: N={fit.noise_density:.3g}")
            ax.loglog(fit.taus, fit.noise_density / np.sqrt(fit.taus), ":", color=colour, lw=1)
            if fit.rate_random_walk is not None:
                ax.loglog(fit.taus, fit.rate_random_walk * np.sqrt(fit.taus / 3.0), "--", color=colour, lw=1)
            ax.axhline(BIAS_INSTABILITY_FACTOR * fit.bias_instability, color=colour, lw=0.6, alpha=0.5)
        ax.set_xlabel("τ (s)")
        ax.set_ylabel(f"Allan deviation ({unit})")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Overlapping Allan deviation — dotted: N/√τ (−½ slope), dashed: K·√(τ/3) (+½ slope), "
                 "thin line: 0.664·B")
    fig.tight_layout()
    return save_png(fig, Path(path))


def gps_plot(gps_stats, t, path) -> Path:
    """ENU error over time, and the autocorrelation with its fitted A·exp(−lag/τ)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    rel = np.asarray(t) - t[0]
    for i, name in enumerate(ENU_NAMES):
        axes[0].plot(rel, gps_stats.error[:, i], lw=0.8,
                     label=f"{name}: std {gps_stats.std[i]:.3g} m, p_max {gps_stats.p_max[i]:.3g} m")
    axes[0].set_xlabel("time (s)")
    axes[0].set_ylabel("position − mean (m)")
    axes[0].set_title("GPS standstill error (ENU)")
    axes[0].legend(fontsize=8)
    for i, (name, fit) in enumerate(zip(ENU_NAMES, gps_stats.gauss_markov)):
        if len(fit.lags):
            axes[1].plot(fit.lags, fit.rho, ".", color=f"C{i}", ms=3)
            label = f"{name}: τ {fit.tau:.3g} s, A {fit.amplitude:.2f}" if fit.tau > 0 else f"{name}: white"
            model = fit.amplitude * np.exp(-fit.lags / fit.tau)
            axes[1].plot(fit.lags, model, "-", color=f"C{i}", label=label)
        else:
            axes[1].plot([], [], color=f"C{i}", label=f"{name}: white (no correlation)")
    axes[1].set_xlabel("lag (s)")
    axes[1].set_ylabel("autocorrelation ρ")
    axes[1].set_title("Gauss–Markov fit ρ = A·exp(−lag/τ)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return save_png(fig, Path(path))


def hdop_plot(fit, path) -> Path:
    """Recovered HDOP and the fitted first-order decay."""
    from .hdop import first_order_decay

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(fit.t, fit.hdop, ".", ms=3, label=f"HDOP from covariance (epe {fit.epe:g} m)")
    ax.plot(fit.t, first_order_decay(fit.t, fit.h0, fit.h_inf, fit.tau), "-",
            label=f"fit: H0 {fit.h0:.3g}, H∞ {fit.h_inf:.3g}, τ {fit.tau:.3g} s")
    ax.set_xlabel("time since filter start (s)")
    ax.set_ylabel("HDOP")
    ax.set_title("HDOP decay H(t) = H∞ + (H0 − H∞)·exp(−t/τ)")
    ax.legend()
    fig.tight_layout()
    return save_png(fig, Path(path))


def drive_gps_plot(fit, path) -> Path:
    """calibrate --truth: fix − truth (ENU, lag removed), the lag search, and the Gauss–Markov fits."""
    stats = fit.stats
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    rel = np.asarray(fit.t) - fit.t[0]
    for i, name in enumerate(ENU_NAMES):
        axes[0].plot(rel, stats.error[:, i] + fit.bias[i], lw=0.8,
                     label=f"{name}: bias {fit.bias[i]:+.3g} m, std {stats.std[i]:.3g} m")
    axes[0].set_xlabel("time (s)")
    axes[0].set_ylabel("fix − truth (m)")
    lag = fit.observability
    removed = (f"stamp lag {fit.lag * 1e3:.0f} ms removed" if lag.observable
               else "stamp lag not observable: as stamped")
    axes[0].set_title(f"GPS error on the drive ({removed})")
    axes[0].legend(fontsize=8)
    axes[1].plot(np.asarray(fit.lags) * 1e3, fit.lag_costs, "-", lw=1)
    if np.isfinite(lag.standard_error):  # the ±2 SE interval, clipped to the search
        axes[1].axvspan(max(lag.estimate - lag.bound, fit.lags[0]) * 1e3,
                        min(lag.estimate + lag.bound, fit.lags[-1]) * 1e3, color="C3", alpha=0.15,
                        label="±2 standard errors")
    axes[1].axvline(lag.estimate * 1e3, color="C3", lw=1,
                    label=f"lag {lag.estimate * 1e3:.1f} ± {lag.standard_error * 1e3:.1f} ms")
    axes[1].set_xlabel("lag L (ms)")
    axes[1].set_ylabel("Σ var(fix − truth(t − L)) horizontal (m²)")
    verdict = "observable" if lag.observable else "not observable"
    axes[1].set_title(f"stamp lag {verdict}; jitter std {fit.grid.jitter_std * 1e3:.1f} ms")
    axes[1].legend(fontsize=8)
    for i, (name, gm) in enumerate(zip(ENU_NAMES, stats.gauss_markov)):
        if len(gm.lags):
            axes[2].plot(gm.lags, gm.rho, ".", color=f"C{i}", ms=3)
            label = f"{name}: τ {gm.tau:.3g} s, A {gm.amplitude:.2f}" if gm.tau > 0 else f"{name}: white"
            axes[2].plot(gm.lags, gm.amplitude * np.exp(-gm.lags / max(gm.tau, 1e-9)), "-", color=f"C{i}",
                         label=label)
        else:
            axes[2].plot([], [], color=f"C{i}", label=f"{name}: white (no correlation)")
    axes[2].set_xlabel("lag (s)")
    axes[2].set_ylabel("autocorrelation ρ")
    axes[2].set_title("Gauss–Markov fit ρ = A·exp(−lag/τ)")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return save_png(fig, Path(path))


def receiver_sigma_plot(t, error, covariance, honesty, path) -> Path:
    """A GNSS-only standstill per axis: the error over time inside ±1 reported σ (the receiver's
    claim) and ±1 measured RMS (what it does), titled with the verdict."""
    fig, axes = plt.subplots(3, 1, figsize=(12, 8), sharex=True)
    rel = np.asarray(t) - t[0]
    reported = np.sqrt(np.clip(np.asarray(covariance)[:, [0, 4, 8]], 0.0, None))
    for i, (ax, name) in enumerate(zip(axes, ENU_NAMES)):
        check = honesty[name]
        ax.plot(rel, error[:, i], lw=0.6, color="C0", label="error")
        ax.fill_between(rel, -reported[:, i], reported[:, i], color="C1", alpha=0.3, step="mid",
                        label="±1 reported σ")
        ax.axhline(check["error_rms_m"], color="C3", lw=1, ls="--", label="±1 measured RMS")
        ax.axhline(-check["error_rms_m"], color="C3", lw=1, ls="--")
        ax.set_ylabel(f"{name} (m)")
        ax.set_title(check["verdict"], fontsize=9)
    axes[0].legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Reported σ against the measured scatter")
    fig.tight_layout()
    return save_png(fig, Path(path))
