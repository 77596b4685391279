"""Standstill calibration: bag arrays → statistics → model presets (GPS and IMU) + a report.

Presets written (loadable by ``models.load_gps_model(path)`` / ``load_imu_model(path)``):

GPS
- position_noise: ``gauss_markov`` (gz form) when the horizontal error is clearly correlated
  (fitted A ≥ 0.5 and τ ≥ 2 periods on east and north), else ``gaussian`` with the per-axis std.
  gz parametrisation: stationary Var(b) = bias_sigma²·τ/2, so bias_sigma = σ_b·√(2/τ); τ is the mean
  of the east and north fits (the model has one τ); sigma = the white part σ_w per axis.
- covariance: ``zeros`` when the bag's covariances are all zero; ``hdop`` (paper timing) with the
  fitted H0, H∞, τ and the assumed epe when the recovered HDOP decays; otherwise ``diagonal`` with the
  median reported std per axis.
- rate = 1/median fix period; datum = mean fix; status = the most common fix status.
IMU
- accelerometer and gyroscope: ``chrono_drift`` with σ = N·√f per axis and b0 = K·√t_b (RMS of the
  axes where K was observed; 0 if the record is too short to show a +1/2 slope), t_b chosen (0.1 s).
The report also carries the paper random walk (σ_a = std(Δ²p)/dt², p_max) and an AirSim IMU
equivalent (ARW = N, bias stability = B, τ = (B/K)² so that stability/√τ = K) as alternatives.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_files
from ..errors import UserError
from ..geodesy import geodetic_to_enu
from . import gps as gps_math
from . import hdop as hdop_math
from . import imu as imu_math
from .standstill import DEFAULT_MAX_SPEED, GpsSeries, ImuSeries, StandstillData, check_standstill

DEFAULT_EPE = 0.02   # m: RTK fixed, the paper's "0.02 from the GPS driver code"
DEFAULT_T_B = 0.1    # s: the paper text's Chrono drift correlation time
STATUS_NAMES = {0: "fix", 1: "sbas_fix", 2: "gbas_fix"}
COVARIANCE_TYPE_NAMES = {0: "unknown", 1: "approximated", 2: "diagonal_known", 3: "known"}


@dataclass
class Calibration:
    data: StandstillData
    datum: tuple                 # (lat, lon, alt) of the mean fix
    enu: np.ndarray              # (N, 3) fix positions in ENU at the datum, m
    speeds: dict                 # measured standstill speeds, m/s
    gps: gps_math.GpsNoiseStats
    hdop: hdop_math.HdopFit | None
    hdop_note: str
    imu: imu_math.ImuNoiseStats
    t_b: float
    gps_preset: dict
    imu_preset: dict
    report: dict


def data_from_samples(gps_samples, imu_samples, source: str = "samples") -> StandstillData:
    """StandstillData from model outputs (GpsSamples, ImuSamples): the bag-free path for tests/tools."""
    fix = (np.asarray(gps_samples.status) >= 0) & np.isfinite(gps_samples.latitude) \
        & np.isfinite(gps_samples.longitude) & np.isfinite(gps_samples.altitude)
    gps = GpsSeries(
        t=gps_samples.stamp_ns[fix] * 1e-9, latitude=gps_samples.latitude[fix],
        longitude=gps_samples.longitude[fix], altitude=gps_samples.altitude[fix],
        status=gps_samples.status[fix].astype(int), covariance=gps_samples.position_covariance[fix],
        covariance_type=gps_samples.position_covariance_type[fix].astype(int), dropped=int((~fix).sum()),
    )
    imu = ImuSeries(imu_samples.stamp_ns * 1e-9, imu_samples.angular_velocity,
                    imu_samples.linear_acceleration)
    return StandstillData(source, "/fix", "/imu", gps, imu, None, None, None)


def hdop_fit(data: StandstillData, epe) -> tuple:
    """(HdopFit or None, note): fit only when the bag reports a non-zero covariance."""
    cov = data.gps.covariance
    if np.all(cov[:, [0, 4]] == 0) or np.all(data.gps.covariance_type == 0):
        return None, f"{data.gps_topic}: covariance is zero/UNKNOWN, no HDOP to recover"
    use = (cov[:, 0] > 0) & (cov[:, 4] > 0)
    where = f"{data.source}: {data.gps_topic}"
    if epe == "status":
        values = hdop_math.hdop_from_covariance(cov[use], data.gps.status[use], where=where)
        epe_value = float("nan")
    else:
        values = hdop_math.hdop_from_covariance(cov[use], data.gps.status[use], float(epe), where)
        epe_value = float(epe)
    fit = hdop_math.fit_hdop_decay(data.gps.t[use], values, epe_value, where)
    how = "per-fix driver epe by status" if epe == "status" else f"epe {epe_value:g} m"
    return fit, (f"HDOP = sqrt((cov_xx + cov_yy)/2)/epe ({how}; nmea_navsat_driver var_h = (hdop*epe)^2)")


def gps_preset(stats: gps_math.GpsNoiseStats, fit, data: StandstillData, datum) -> dict:
    east, north = stats.gauss_markov[0], stats.gauss_markov[1]
    correlated = all(f.amplitude >= 0.5 and f.tau >= 2 * stats.period for f in (east, north))
    if correlated:
        tau = 0.5 * (east.tau + north.tau)
        position = {
            "model": "gauss_markov", "form": "gz",
            "sigma": [float(f.sigma_white) for f in stats.gauss_markov],
            "bias_sigma": [float(f.sigma_bias * np.sqrt(2.0 / tau)) for f in stats.gauss_markov],
            "tau": float(tau),
        }
    else:
        position = {"model": "gaussian", "sigma": [float(s) for s in stats.std]}
    cov = data.gps.covariance
    if fit is None:
        covariance = {"model": "zeros"}
    elif fit.decaying:
        covariance = {"model": "hdop", "h0": fit.h0, "h_inf": fit.h_inf, "tau": fit.tau,
                      "epe": fit.epe if np.isfinite(fit.epe) else DEFAULT_EPE, "timing": "paper"}
    else:
        sigma = np.sqrt(np.median(cov[:, [0, 4, 8]], axis=0))
        kind = Counter(int(c) for c in data.gps.covariance_type).most_common(1)[0][0]
        covariance = {"model": "diagonal", "sigma": [float(s) for s in sigma],
                      "type": COVARIANCE_TYPE_NAMES.get(kind, "approximated") if kind else "approximated"}
    status = Counter(int(s) for s in data.gps.status).most_common(1)[0][0]
    return {
        "description": f"Calibrated from the standstill bag {data.source} ({stats.duration:.0f} s, "
                       f"{stats.count} fixes) by sim2real-eval calibrate",
        "rate": float(round(1.0 / stats.period, 6)),
        "datum": [float(d) for d in datum],
        "geodesy": "wgs84",
        "status": STATUS_NAMES.get(status, "fix"),
        "position_noise": position,
        "covariance": covariance,
    }


def chrono_drift_channel(fits, rate: float, t_b: float) -> dict:
    """One IMU channel (gyro or accelerometer) of a ``chrono_drift`` preset from its three axes' Allan fits at
    ``rate`` Hz: white-noise sigma per axis, the bias random walk's b0 over ``t_b`` seconds."""
    sigma = [float(f.noise_density * np.sqrt(rate)) for f in fits]
    walks = [f.rate_random_walk for f in fits if f.rate_random_walk is not None]
    k = float(np.sqrt(np.mean(np.square(walks)))) if walks else 0.0
    return {"model": "chrono_drift", "sigma": sigma, "b0": float(k * np.sqrt(t_b)), "t_b": float(t_b)}


def imu_preset(stats: imu_math.ImuNoiseStats, source: str, t_b: float) -> dict:
    return {
        "description": f"Calibrated from the standstill bag {source} ({stats.duration:.0f} s at "
                       f"{stats.rate:.1f} Hz, Allan deviation) by sim2real-eval calibrate",
        "rate": float(round(stats.rate, 6)),
        "accelerometer": chrono_drift_channel(stats.accel, stats.rate, t_b),
        "gyroscope": chrono_drift_channel(stats.gyro, stats.rate, t_b),
    }


def _allan_report(fits, rate: float, t_b: float) -> dict:
    rows = {}
    for axis, f in zip("xyz", fits):
        sigma, b0 = f.chrono_drift(rate, t_b)
        rows[axis] = {
            "noise_density": f.noise_density, "bias_instability": f.bias_instability,
            "bias_instability_tau_s": f.bias_instability_tau, "rate_random_walk": f.rate_random_walk,
            "chrono_sigma": sigma, "chrono_b0": b0 if f.rate_random_walk is not None else None,
        }
    return rows


def _airsim_alternative(fits) -> dict:
    n = [f.noise_density for f in fits]
    b = [f.bias_instability for f in fits]
    walks = [f.rate_random_walk for f in fits if f.rate_random_walk is not None]
    if not walks:
        return {"model": "airsim", "noise_density": n, "bias_stability": b, "tau": 1e9,
                "note": "no +1/2 slope observed: bias random walk below detection, tau set very long"}
    k = float(np.sqrt(np.mean(np.square(walks))))
    tau = float(np.mean(np.square(b)) / k**2)
    return {"model": "airsim", "noise_density": n, "bias_stability": b, "tau": tau}


def calibrate_standstill(data: StandstillData, epe=DEFAULT_EPE, t_b: float = DEFAULT_T_B,
                         max_speed: float = DEFAULT_MAX_SPEED,
                         min_imu_duration: float = imu_math.MIN_ALLAN_DURATION) -> Calibration:
    """Every statistic and both presets from a standstill record (see the module docstring)."""
    if not t_b > 0:
        raise UserError(f"--t-b must be > 0 s, got {t_b!r}")
    g = data.gps
    datum = (float(np.mean(g.latitude)), float(np.mean(g.longitude)), float(np.mean(g.altitude)))
    enu = geodetic_to_enu(g.latitude, g.longitude, g.altitude, datum)
    speeds = check_standstill(data, enu, max_speed)
    stats = gps_math.gps_noise_stats(g.t, enu)
    fit, note = hdop_fit(data, epe)
    imu_stats = imu_math.imu_noise_stats(data.imu.t, data.imu.gyro, data.imu.accel, min_imu_duration)
    gps_p = gps_preset(stats, fit, data, datum)
    imu_p = imu_preset(imu_stats, data.source, t_b)
    axes = ("east", "north", "up")
    report = {
        "source": data.source,
        "topics": {"gps": data.gps_topic, "imu": data.imu_topic, "velocity": data.velocity_topic},
        "standstill_speed_m_s": {k: float(v) for k, v in speeds.items()},
        "max_speed_m_s": float(max_speed),
        "gps": {
            "fixes": stats.count, "dropped_fixes": g.dropped, "duration_s": stats.duration,
            "period_s": stats.period,
            "std_m": dict(zip(axes, map(float, stats.std))),
            "second_difference_sigma_m_s2": dict(zip(axes, map(float, stats.second_difference_sigma))),
            "p_max_m": dict(zip(axes, map(float, stats.p_max))),
            "gauss_markov": {a: {"tau_s": f.tau, "amplitude": f.amplitude, "sigma_bias_m": f.sigma_bias,
                                 "sigma_white_m": f.sigma_white} for a, f in zip(axes, stats.gauss_markov)},
            "hdop": None if fit is None else {"h0": fit.h0, "h_inf": fit.h_inf, "tau_s": fit.tau,
                                              "rmse": fit.rmse, "decaying": fit.decaying,
                                              "epe_m": fit.epe if np.isfinite(fit.epe) else "by status"},
            "hdop_note": note,
        },
        "imu": {
            "samples": int(len(data.imu.t)), "duration_s": imu_stats.duration, "rate_hz": imu_stats.rate,
            "t_b_s": float(t_b),
            "gyroscope_rad_s": _allan_report(imu_stats.gyro, imu_stats.rate, t_b),
            "accelerometer_m_s2": _allan_report(imu_stats.accel, imu_stats.rate, t_b),
            "gyro_mean_rad_s": [float(v) for v in imu_stats.gyro_mean],
            "accel_mean_m_s2": [float(v) for v in imu_stats.accel_mean],
        },
        "alternatives": {
            "gps_paper_random_walk": {
                "model": "random_walk", "formulation": "paper", "integration": "kinematic",
                "sigma_a": stats.horizontal_second_difference_sigma, "p_max": stats.horizontal_p_max},
            "imu_airsim_accelerometer": _airsim_alternative(imu_stats.accel),
            "imu_airsim_gyroscope": _airsim_alternative(imu_stats.gyro),
        },
    }
    return Calibration(data, datum, enu, speeds, stats, fit, note, imu_stats, t_b, gps_p, imu_p, report)


def output_paths(out) -> dict:
    """params.yaml → {report: params.yaml, gps: params_gps.yaml, imu: params_imu.yaml}."""
    out = Path(out)
    if out.suffix not in (".yaml", ".yml"):
        raise UserError(f"--out {out}: expected a .yaml file name")
    return {"report": out, "gps": out.with_name(out.stem + "_gps" + out.suffix),
            "imu": out.with_name(out.stem + "_imu" + out.suffix)}


def output_files(out, plots_dir=None, with_hdop: bool = True) -> dict:
    """{name: path} of everything ``write_calibration`` writes (the CLI checks them before the work)."""
    files = {"gps": output_paths(out)["gps"], "imu": output_paths(out)["imu"]}
    if plots_dir is not None:
        files["allan_plot"] = Path(plots_dir) / "allan_deviation.png"
        files["gps_plot"] = Path(plots_dir) / "gps_fit.png"
        if with_hdop:
            files["hdop_plot"] = Path(plots_dir) / "hdop_fit.png"
    files["report"] = output_paths(out)["report"]
    return files


def write_calibration(cal: Calibration, out, plots_dir=None, overwrite: bool = True) -> dict:
    """Write the two presets, the report (with the presets inline, ready for a study variant), plots.

    All or nothing: every file is rendered into a temporary sibling first, then all are renamed into
    place together (``atomic.atomic_files``): a failure, a full disk or Ctrl-C leaves none of them (and
    the previous versions, if any).  ``overwrite=False`` refuses existing files.
    """
    from ..yamlio import dump_yaml
    from . import plots

    files = output_files(out, plots_dir, cal.hdop is not None)
    paths = output_paths(out)
    document = {"variant": {"gps": cal.gps_preset, "imu": cal.imu_preset}, "measured": cal.report,
                "presets": {"gps": str(paths["gps"]), "imu": str(paths["imu"])}}
    with atomic_files(list(files.values()), overwrite=overwrite) as temps:
        temp = dict(zip(files, temps))
        temp["gps"].write_text(dump_yaml(cal.gps_preset), encoding="utf-8")
        temp["imu"].write_text(dump_yaml(cal.imu_preset), encoding="utf-8")
        if "allan_plot" in temp:
            plots.allan_plot(cal.imu, temp["allan_plot"])
            plots.gps_plot(cal.gps, cal.data.gps.t, temp["gps_plot"])
        if "hdop_plot" in temp:
            plots.hdop_plot(cal.hdop, temp["hdop_plot"])
        temp["report"].write_text(dump_yaml(plain_values(document)), encoding="utf-8")
    return files


def plain_values(value):
    """numpy scalars/arrays → Python floats/lists so the YAML is plain."""
    if isinstance(value, dict):
        return {k: plain_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_values(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain_values(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value
