"""A GNSS receiver at standstill without IMU or truth (a tripod log, e.g. ``import nmea``):
``calibrate BAG --out params.yaml [--surveyed LAT LON ALT]`` on a bag with a NavSatFix topic and no
sensor_msgs/Imu topic (docs/calibration.md, "A receiver at standstill without truth").

- Truth: the surveyed antenna position when given; else the mean fix — then a constant bias cannot
  be measured (the mean absorbs it) and the scatter is about the receiver's own mean.
- Per axis (E, N, U): bias (surveyed only), std and RMS of the error, the Gauss–Markov σ/τ of the
  autocorrelation fit (``gps.fit_gauss_markov``) and of the Allan deviation (``imu.allan_deviation``
  of the error series, fitted with the white + Gauss–Markov curve below; the preset takes this one,
  whose τ is the steadier of the two); τ is called identified when the log is at least ``MIN_TAUS``
  τ long.
- The receiver's honesty: per fix the error divided by the σ the fix reports (√ of the covariance's
  diagonal); its RMS per axis is the ratio measured/reported (1 for an honest receiver).  > 1.2: the
  receiver understates its error by that factor; < 1/1.2: it overstates it; else it matches.
- The GPS preset is ``core.gps_preset``'s (what gps_noise_node loads): Gauss–Markov or Gaussian
  position noise, the covariance the receiver reports (diagonal median, or the HDOP decay).

Allan variance of a first-order Gauss–Markov process (variance σ², correlation time τ) averaged over
T: with V(T) = 2σ²τ²/T²·(T/τ − 1 + e^(−T/τ)) the variance of one T-average,
AVAR(T) = 2·V(T) − 2·V(2T) (adjacent averages ȳ1, ȳ2: ½Var(ȳ1 − ȳ2) = V(T) − Cov, Cov = 2V(2T) − V(T)).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from .. import message_fields as F
from ..atomic import atomic_files
from ..bags import open_bag
from ..bags.columns import read_topics
from ..errors import UserError
from ..geodesy import as_datum, geodetic_to_enu
from ..stamps import ns_to_stamp_seconds
from . import gps as gps_math
from . import imu as imu_math
from .core import gps_preset, hdop_fit, output_paths, plain_values
from .standstill import (
    GpsSeries,
    ImuSeries,
    StandstillData,
    check_standstill,
    refuse_non_finite,
    sorted_unique,
)

AXES = ("east", "north", "up")
HONEST_BAND = 1.2   # measured/reported within [1/1.2, 1.2]: the receiver's σ matches its scatter
MIN_TAUS = 20.0     # a log shorter than 20 τ leaves τ (and the correlated σ) poorly determined


def gauss_markov_avar(taus, sigma: float, tau: float) -> np.ndarray:
    """Allan variance of a Gauss–Markov process at averaging times ``taus`` (module docstring)."""
    taus = np.asarray(taus, dtype=float)

    def average_variance(t):
        x = t / tau
        return 2.0 * sigma**2 / x**2 * (x - 1.0 + np.exp(-x))

    return 2.0 * average_variance(taus) - 2.0 * average_variance(2.0 * taus)


def white_gauss_markov_avar(taus, sigma: float, tau: float, white: float, period: float) -> np.ndarray:
    """Allan variance of white noise (σ_w per sample, sample period ``period``: σ_w²·period/T) plus a
    Gauss–Markov process."""
    return gauss_markov_avar(taus, sigma, tau) + white**2 * period / np.asarray(taus, dtype=float)


def fit_allan_gauss_markov(taus, adev, period: float) -> tuple:
    """(σ_b, τ, σ_w) of the white + Gauss–Markov curve closest to a measured Allan deviation (least
    squares on log σ)."""
    taus, adev = np.asarray(taus, dtype=float), np.asarray(adev, dtype=float)
    peak = float(taus[int(np.argmax(adev))])

    def residual(p):
        model = white_gauss_markov_avar(taus, np.exp(p[0]), np.exp(p[1]), np.exp(p[2]), period)
        return 0.5 * np.log(model) - np.log(adev)

    top = float(adev.max())
    start = np.log([top / 0.6, max(peak / 1.9, taus[0]), max(float(adev[0]) / 2.0, 1e-9)])
    bounds = (np.log([1e-12, taus[0] / 10, 1e-12]), np.log([1e6, taus[-1] * 100, 1e6]))
    fit = least_squares(residual, start, bounds=bounds)
    return tuple(float(v) for v in np.exp(fit.x))


def bag_has_imu(path, imu_topic: str) -> bool:
    """True when the bag has ``imu_topic`` or any sensor_msgs/Imu topic (then it is no GNSS-only log)."""
    with open_bag(Path(path)) as reader:
        topics = reader.topics
    return imu_topic in topics or any(info.msgtype == "sensor_msgs/msg/Imu" for info in topics.values())


def read_fix_bag(path, gps_topic: str = "/fix") -> StandstillData:
    """The NavSatFix series of a GNSS-only bag (NO_FIX and NaN fixes dropped), as StandstillData with
    an empty IMU series."""
    names = ("stamp_ns", "latitude", "longitude", "altitude", "status", "position_covariance_type",
             "position_covariance")
    with open_bag(Path(path)) as reader:
        fix = read_topics(reader, {gps_topic: F.NAVSATFIX}, {gps_topic: names})[gps_topic]
    table = np.column_stack([ns_to_stamp_seconds(fix["stamp_ns"]), fix["latitude"], fix["longitude"],
                             fix["altitude"], fix["status"], fix["position_covariance_type"],
                             fix["position_covariance"]]).astype(float)
    valid = (table[:, 4] >= 0) & np.isfinite(table[:, 1:4]).all(axis=1)
    if valid.sum() == 0:
        raise UserError(f"{path}: {gps_topic}: every fix is NO_FIX or NaN")
    refuse_non_finite(path, gps_topic, "position_covariance", table[:, 6:15], valid)
    dropped = int((~valid).sum())
    table = table[valid]
    table = table[sorted_unique(table[:, 0], gps_topic, str(path))]
    gps = GpsSeries(table[:, 0], table[:, 1], table[:, 2], table[:, 3], table[:, 4].astype(int),
                    table[:, 6:15], table[:, 5].astype(int), dropped)
    empty = ImuSeries(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)))
    return StandstillData(str(path), gps_topic, "", gps, empty, None, None, None)


@dataclass
class ReceiverCalibration:
    data: StandstillData
    datum: tuple
    truth: str                  # "surveyed" or "mean"
    error: np.ndarray           # (N, 3) fix − truth, ENU m
    gps: gps_math.GpsNoiseStats
    hdop: object
    gps_preset: dict
    report: dict
    lines: list                 # what the CLI prints


def verdict(axis: str, ratio: float) -> str:
    if not np.isfinite(ratio):
        return f"{axis}: no reported sigma to compare"
    if ratio > HONEST_BAND:
        return f"the receiver understates its error by {ratio:.1f}x {axis}"
    if ratio < 1.0 / HONEST_BAND:
        return f"the receiver overstates its error by {1.0 / ratio:.1f}x {axis}"
    return f"the receiver's sigma matches its scatter {axis} (ratio {ratio:.2f})"


def honesty(error: np.ndarray, covariance: np.ndarray) -> dict:
    """Per axis: RMS of the error, RMS of the reported σ, and the RMS of error/σ (the ratio)."""
    reported = np.sqrt(np.clip(np.asarray(covariance)[:, [0, 4, 8]], 0.0, None))
    out = {}
    for i, axis in enumerate(AXES):
        use = reported[:, i] > 0
        ratio = float(np.sqrt(np.mean((error[use, i] / reported[use, i]) ** 2))) if use.any() \
            else float("nan")
        out[axis] = {"error_rms_m": float(np.sqrt(np.mean(error[:, i] ** 2))),
                     "reported_sigma_rms_m": float(np.sqrt(np.mean(reported[use, i] ** 2))) if use.any()
                     else None,
                     "ratio_measured_to_reported": ratio, "fixes_compared": int(use.sum()),
                     "verdict": verdict(axis, ratio)}
    return out


def _allan_stats(stats: gps_math.GpsNoiseStats, allan: dict) -> gps_math.GpsNoiseStats:
    """The statistics the preset is made of: the Gauss–Markov fits of the Allan deviation where every
    axis has one (on tripod logs its τ scatters half as much as the autocorrelation fit's: the
    acceptance test's docstring gives the numbers), else the autocorrelation fits."""
    if not all("tau_s" in allan[axis] for axis in AXES):
        return stats
    fits = []
    for axis in AXES:
        sigma, white = allan[axis]["sigma_m"], allan[axis]["white_sigma_m"]
        share = sigma**2 / (sigma**2 + white**2)
        fits.append(gps_math.GaussMarkovFit(tau=allan[axis]["tau_s"], amplitude=share, sigma_bias=sigma,
                                            sigma_white=white, lags=np.zeros(0), rho=np.zeros(0)))
    return replace(stats, gauss_markov=tuple(fits))


def _allan(error: np.ndarray, period: float) -> dict:
    out = {}
    for i, axis in enumerate(AXES):
        try:
            taus, adev = imu_math.allan_deviation(error[:, i], 1.0 / period)
        except UserError as exc:
            out[axis] = {"note": str(exc).replace("IMU", "GPS")}
            continue
        if len(taus) < 4:
            out[axis] = {"note": "too few averaging times for a fit"}
            continue
        sigma, tau, white = fit_allan_gauss_markov(taus, adev, period)
        out[axis] = {"sigma_m": sigma, "tau_s": tau, "white_sigma_m": white, "taus_s": taus.tolist(),
                     "adev_m": adev.tolist()}
    return out


def calibrate_receiver(data: StandstillData, surveyed=None, epe=0.02,
                       max_speed: float = 0.1) -> ReceiverCalibration:
    """Every statistic, the preset and the printed lines of a GNSS-only standstill (module docstring)."""
    g = data.gps
    mean = (float(np.mean(g.latitude)), float(np.mean(g.longitude)), float(np.mean(g.altitude)))
    datum = tuple(float(v) for v in as_datum(surveyed, "--surveyed")) if surveyed is not None else mean
    enu = geodetic_to_enu(g.latitude, g.longitude, g.altitude, datum)
    check_standstill(data, enu, max_speed)
    stats = gps_math.gps_noise_stats(g.t, enu)
    error = enu if surveyed is not None else stats.error
    truth = "surveyed" if surveyed is not None else "mean"
    fit, note = hdop_fit(data, epe)
    if fit is not None and fit.decaying and fit.tau < 2.0 * stats.period:
        # a step between RTK fixed and float σ, not a convergence: report the median covariance instead
        fit = replace(fit, decaying=False)
        note += "; no decay (the reported sigma steps, e.g. RTK fixed/float): covariance = its median"
    allan = _allan(stats.error, stats.period)
    preset = gps_preset(_allan_stats(stats, allan), fit, data, datum)
    preset["description"] = (f"Calibrated from the GNSS-only standstill {data.source} "
                             f"({stats.duration:.0f} s, {stats.count} fixes; truth: {truth} position) by "
                             "sim2real-eval calibrate")
    identified = {a: bool(f.tau > 0 and stats.duration >= MIN_TAUS * max(f.tau, allan[a].get("tau_s", 0.0)))
                  for a, f in zip(AXES, stats.gauss_markov)}
    checks = honesty(error, g.covariance)
    truth_note = (f"truth: the surveyed point {', '.join(f'{v:.9g}' for v in datum)}"
                  if surveyed is not None else
                  "truth: the mean position (no --surveyed point): a constant bias cannot be measured, "
                  "the error is the scatter about the receiver's own mean")
    report = {
        "source": data.source, "topics": {"gps": data.gps_topic, "imu": None},
        "what": "GNSS-only standstill: no IMU, no truth",
        "truth": {"kind": truth, "position": list(datum), "note": truth_note},
        "gps": {
            "fixes": stats.count, "dropped_fixes": g.dropped, "duration_s": stats.duration,
            "period_s": stats.period,
            "bias_m": ({a: float(v) for a, v in zip(AXES, enu.mean(axis=0))} if surveyed is not None
                       else "not measurable: the truth is the mean position"),
            "std_m": dict(zip(AXES, map(float, stats.std))),
            "gauss_markov": {a: {"tau_s": f.tau, "amplitude": f.amplitude, "sigma_bias_m": f.sigma_bias,
                                 "sigma_white_m": f.sigma_white, "identified": identified[a],
                                 "note": "identified" if identified[a] else
                                 f"the log ({stats.duration:.0f} s) is shorter than {MIN_TAUS:g} tau"}
                             for a, f in zip(AXES, stats.gauss_markov)},
            "allan_gauss_markov": allan,
            "reported_vs_measured": checks,
            "hdop_note": note,
        },
    }
    lines = [f"GPS only (no IMU topic): {stats.count} fixes over {stats.duration:.0f} s; {truth_note}"]
    if surveyed is not None:
        lines.append("bias " + ", ".join(f"{a} {v:+.4g}" for a, v in zip(AXES, enu.mean(axis=0))) + " m")
    lines.append("std " + ", ".join(f"{a} {v:.4g}" for a, v in zip(AXES, stats.std)) + " m")
    for axis, f in zip(AXES, stats.gauss_markov):
        line = f"{axis}: autocorrelation fit: Gauss-Markov sigma {f.sigma_bias:.4g} m, tau {f.tau:.3g} s"
        if "tau_s" in allan[axis]:
            line = (f"{axis}: Allan fit: Gauss-Markov sigma {allan[axis]['sigma_m']:.4g} m, tau "
                    f"{allan[axis]['tau_s']:.3g} s, white {allan[axis]['white_sigma_m']:.3g} m ("
                    + line.split(": ", 1)[1] + ")")
        short = f"; log shorter than {MIN_TAUS:g} tau: not identified"
        lines.append(line + ("" if identified[axis] else short))
    for axis in AXES:
        c = checks[axis]
        if c["reported_sigma_rms_m"] is not None:
            lines.append(f"{c['verdict']}: error RMS {c['error_rms_m']:.4g} m, reported sigma RMS "
                         f"{c['reported_sigma_rms_m']:.4g} m, RMS(error/sigma) "
                         f"{c['ratio_measured_to_reported']:.2f}")
        else:
            lines.append(c["verdict"])
    return ReceiverCalibration(data, datum, truth, error, stats, fit, preset, report, lines)


def output_files(out, plots_dir=None, with_hdop: bool = True) -> dict:
    paths = output_paths(out)
    files = {"gps": paths["gps"]}
    if plots_dir is not None:
        files["gps_plot"] = Path(plots_dir) / "gps_fit.png"
        files["sigma_plot"] = Path(plots_dir) / "receiver_sigma.png"
        if with_hdop:
            files["hdop_plot"] = Path(plots_dir) / "hdop_fit.png"
    files["report"] = paths["report"]
    return files


def write_receiver_calibration(cal: ReceiverCalibration, out, plots_dir=None, overwrite: bool = True) -> dict:
    """The GPS preset and the report (preset inline), plots: all or nothing (``atomic.atomic_files``)."""
    from ..yamlio import dump_yaml
    from . import plots

    files = output_files(out, plots_dir, cal.hdop is not None)
    document = {"variant": {"gps": cal.gps_preset}, "measured": cal.report,
                "presets": {"gps": str(output_paths(out)["gps"])}}
    with atomic_files(list(files.values()), overwrite=overwrite) as temps:
        temp = dict(zip(files, temps))
        temp["gps"].write_text(dump_yaml(cal.gps_preset), encoding="utf-8")
        if "gps_plot" in temp:
            plots.gps_plot(cal.gps, cal.data.gps.t, temp["gps_plot"])
            plots.receiver_sigma_plot(cal.data.gps.t, cal.error, cal.data.gps.covariance,
                                      cal.report["gps"]["reported_vs_measured"], temp["sigma_plot"])
        if "hdop_plot" in temp:
            plots.hdop_plot(cal.hdop, temp["hdop_plot"])
        temp["report"].write_text(dump_yaml(plain_values(document)), encoding="utf-8")
    return files


__all__ = ["bag_has_imu", "calibrate_receiver", "fit_allan_gauss_markov", "gauss_markov_avar", "honesty",
           "read_fix_bag", "verdict", "write_receiver_calibration"]
