"""Calibration from a drive with ground truth (``calibrate --truth``): the sensors' errors are the
sensor minus the truth, so the vehicle may move — which is what makes a stamp lag observable.

GPS (fixes at header stamps t_k, positions p_k in ENU at the truth's datum):

1. Stamp grid: the receiver computes fixes on a regular epoch grid; t_k = a + b·n_k + j_k with n_k the
   epoch number (rounded from the median step, so dropped fixes keep their place), fitted by least
   squares.  Period = b; stamp jitter j_k = residual, reported as its std and as the half-width
   √3·std of the uniform jitter the GPS model draws (``models.gps``: stamp + lag + jitter·U[−1, 1]).
2. Lag L: the fix position is the truth at an earlier instant, p_k ≈ truth(g_k − L) + bias + noise
   with g_k = a + b·n_k.  L̂ minimises the summed variance of the horizontal error e_k(L) =
   p_k − truth(g_k − L) (a grid of 5 ms over ±``max_lag``, refined by a parabola through the best
   three points).  Along the track e changes by v·L, so L is observable only while the velocity varies
   (speed or heading: a constant velocity cannot be told from the bias), and only as well as the
   receiver's noise allows: its standard error SE = σ/(Δv·√N_eff) (``calibrate.lag``, with the
   Gauss–Markov correlation of the error in N_eff).  Observable when SE < period/4; otherwise the lag
   is reported as not observable with the bound 2·SE, and 0 is used below.  Any speed is accepted.
3. With e_k = p_k − truth(g_k − L) (L = L̂ when observable, else 0): bias = mean e, and the standstill
   statistics of e − bias (``calibrate.gps``: std, Gauss–Markov A·exp(−lag/τ) fit splitting a
   correlated part σ_b from a white part σ_w).
Preset: ``gauss_markov`` (gz) with offset = bias, sigma = σ_w, bias_sigma = σ_b·√(2/τ), τ (mean of
east and north) when east and north are clearly correlated, else ``gaussian`` (mean = bias, σ = std);
stamp_lag = L (0 when not observable; the description gives the bound), stamp_jitter = √3·std(j); the
bag's covariance as a constant diagonal (median σ).

IMU (in base_link; an IMU in another frame is rotated with its static TF): the residual
r = IMU − truth at the IMU stamps (truth specific force and rates, 5 Hz zero-phase smoothing), then
the standstill Allan analysis of r (``calibrate.imu``): noise density N and rate random walk K →
Chrono drift σ = N·√f, b0 = K·√t_b, with mean = the residual's mean (the bias).  The residual also
holds vibration and what the truth's smoothing removes: for the judge, that is part of the noise.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import rotations
from ..atomic import atomic_files
from ..bags import open_bag
from ..errors import UserError
from ..geodesy import geodetic_to_enu
from ..static_tf import mounting_rpy
from ..truth.bag import truth_from_bag
from . import gps as gps_math
from . import imu as imu_math
from .core import chrono_drift_channel, output_paths, plain_values
from .lag import LagObservability, lag_observability
from .standstill import ImuSeries, StandstillData, read_standstill_bag

DEFAULT_MAX_LAG = 0.5         # s: lags searched in ±this
LAG_GRID = 0.005              # s
DEFAULT_MIN_IMU_DURATION = 30.0
STATUS_NAMES = {0: "fix", 1: "sbas_fix", 2: "gbas_fix"}
COVARIANCE_TYPE_NAMES = {0: "unknown", 1: "approximated", 2: "diagonal_known", 3: "known"}


@dataclass(frozen=True)
class StampGrid:
    """t_k = start + period·epoch_k + jitter_k (least squares)."""

    start: float
    period: float
    epoch: np.ndarray          # (N,) integer epoch numbers
    jitter: np.ndarray         # (N,) s, residual

    @property
    def grid(self) -> np.ndarray:
        return self.start + self.period * self.epoch

    @property
    def jitter_std(self) -> float:
        return float(np.std(self.jitter, ddof=1)) if len(self.jitter) > 1 else 0.0

    @property
    def jitter_half_width(self) -> float:
        """Half-width of the uniform jitter with this std: √3·std."""
        return float(np.sqrt(3.0) * self.jitter_std)


def fit_stamp_grid(t) -> StampGrid:
    """The regular epoch grid behind stamps ``t`` (s); dropped epochs keep their number."""
    t = np.asarray(t, dtype=float)
    if len(t) < 3:
        raise UserError(f"GPS: {len(t)} fixes are too few to fit the epoch grid")
    step = float(np.median(np.diff(t)))
    # Number the epochs step by step (a step of ~2 periods is a dropped fix), so a median step a little
    # off the true period does not accumulate; then renumber against the fitted grid until it settles.
    epoch = np.concatenate([[0], np.cumsum(np.maximum(1, np.rint(np.diff(t) / step)))]).astype(np.int64)
    for _ in range(5):
        design = np.column_stack([np.ones(len(t)), epoch.astype(float)])
        (start, period), *_ = np.linalg.lstsq(design, t - t[0], rcond=None)
        renumbered = np.rint((t - t[0] - start) / period).astype(np.int64)
        if (np.diff(renumbered) <= 0).any() or np.array_equal(renumbered, epoch):
            break
        epoch = renumbered
    start += t[0]
    return StampGrid(float(start), float(period), epoch, t - (start + period * epoch))


def _lag_cost(lag: float, grid: np.ndarray, enu: np.ndarray, truth) -> float:
    reference = truth.interpolate(grid - lag).position
    error = enu[:, :2] - reference[:, :2]
    return float(np.sum(np.var(error, axis=0)))


def fit_lag(grid, enu, truth, max_lag: float = DEFAULT_MAX_LAG) -> tuple:
    """(L, lags searched, cost at each): the lag minimising the horizontal error variance."""
    grid = np.asarray(grid, dtype=float)
    inside = (grid - max_lag >= truth.t[0]) & (grid + max_lag <= truth.t[-1])
    if inside.sum() < 20:
        raise UserError(f"GPS: only {int(inside.sum())} fixes lie {max_lag:g} s inside the truth span; "
                        "need at least 20 to fit the stamp lag")
    grid, enu = grid[inside], np.asarray(enu, dtype=float)[inside]
    lags = np.arange(-max_lag, max_lag + LAG_GRID / 2, LAG_GRID)
    costs = np.array([_lag_cost(lag, grid, enu, truth) for lag in lags])
    best = int(np.argmin(costs))
    lag = float(lags[best])
    if 0 < best < len(lags) - 1:  # parabola through the three best points
        c0, c1, c2 = costs[best - 1: best + 2]
        curvature = c0 - 2 * c1 + c2
        if curvature > 0:
            lag += 0.5 * LAG_GRID * (c0 - c2) / curvature
    return lag, lags, costs


@dataclass(frozen=True)
class DriveGpsFit:
    grid: StampGrid
    lag: float                         # s, the lag removed: L̂ when observable, else 0
    lags: np.ndarray
    lag_costs: np.ndarray
    stats: gps_math.GpsNoiseStats      # of e = p − truth(g − lag); mean_position = the bias
    t: np.ndarray                      # epoch times g − lag of the fixes used (s)
    observability: LagObservability    # L̂, its standard error, observable or not
    speed_percentiles: tuple           # m/s: 5 %, 50 %, 95 % of the truth's horizontal speed at the fixes
    speed_range: tuple

    @property
    def bias(self) -> np.ndarray:
        return self.stats.mean_position


def _errors_at(lag: float, grid: StampGrid, enu: np.ndarray, truth) -> tuple:
    """(statistics of e = p − truth(g − lag), the epoch times g − lag used, their epoch numbers)."""
    epochs = grid.grid - lag
    keep = (epochs >= truth.t[0]) & (epochs <= truth.t[-1])
    error = enu[keep] - truth.interpolate(epochs[keep]).position
    return gps_math.gps_noise_stats(epochs[keep], error), epochs[keep], grid.epoch[keep]


def fit_gps_errors(t, enu, truth, max_lag: float = DEFAULT_MAX_LAG) -> DriveGpsFit:
    """Stamp grid, lag with its observability, bias and noise statistics of fixes (stamps ``t`` s, ENU
    ``enu`` m) against ``truth`` (same clock, same ENU frame), at any speed (module docstring)."""
    t = np.asarray(t, dtype=float)
    enu = np.asarray(enu, dtype=float)
    grid = fit_stamp_grid(t)
    inside = (grid.grid >= truth.t[0]) & (grid.grid <= truth.t[-1])
    if not inside.any():
        raise UserError("GPS: no fix lies inside the truth's time span: the fixes and the truth are "
                        "probably on different clocks")
    speed = np.linalg.norm(truth.interpolate(grid.grid[inside]).velocity[:, :2], axis=1)
    estimate, lags, costs = fit_lag(grid.grid, enu, truth, max_lag)
    stats, epochs, numbers = _errors_at(estimate, grid, enu, truth)
    noise = [(f.sigma_white, f.sigma_bias, f.tau) for f in stats.gauss_markov[:2]]
    observability = lag_observability(estimate, numbers, grid.period, truth.interpolate(epochs).velocity,
                                      noise)
    if observability.observable and abs(estimate) >= max_lag - LAG_GRID:
        raise UserError(f"GPS: the best stamp lag lies at the edge of the search (±{max_lag:g} s): "
                        "the fixes and the truth are probably on different clocks")
    if not observability.observable:  # the lag cannot be told from 0: the fixes as stamped
        stats, epochs, _numbers = _errors_at(0.0, grid, enu, truth)
    percentiles = tuple(float(v) for v in np.percentile(speed, [5, 50, 95]))
    return DriveGpsFit(grid, observability.removed, lags, costs, stats, epochs, observability, percentiles,
                       (float(speed.min()), float(speed.max())))


def gps_error_preset(fit: DriveGpsFit, datum, covariance, covariance_type, status, source: str) -> dict:
    """A GPS model preset (``models.load_gps_model``) reproducing the fitted errors."""
    stats = fit.stats
    east, north = stats.gauss_markov[0], stats.gauss_markov[1]
    correlated = all(f.amplitude >= 0.5 and f.tau >= 2 * stats.period for f in (east, north))
    bias = [float(b) for b in fit.bias]
    if correlated:
        tau = 0.5 * (east.tau + north.tau)
        position = {"model": "gauss_markov", "form": "gz", "offset": bias,
                    "sigma": [float(f.sigma_white) for f in stats.gauss_markov],
                    "bias_sigma": [float(f.sigma_bias * np.sqrt(2.0 / tau)) for f in stats.gauss_markov],
                    "tau": float(tau)}
    else:
        position = {"model": "gaussian", "mean": bias, "sigma": [float(s) for s in stats.std]}
    if covariance is None or np.all(covariance[:, [0, 4, 8]] == 0):
        cov_model = {"model": "zeros"}
    else:
        kind = Counter(int(c) for c in covariance_type).most_common(1)[0][0]
        cov_model = {"model": "diagonal",
                     "sigma": [float(s) for s in np.sqrt(np.median(covariance[:, [0, 4, 8]], axis=0))],
                     "type": COVARIANCE_TYPE_NAMES.get(kind, "approximated") if kind else "approximated"}
    period = fit.grid.period
    jitter = min(fit.grid.jitter_half_width, 0.499 * period)  # the model needs 2·jitter < period
    preset = {
        "description": f"Calibrated from the drive {source} ({stats.duration:.0f} s, {stats.count} fixes, "
                       f"fix minus truth) by sim2real-eval calibrate --truth; {fit.observability.summary()}",
        "rate": float(round(1.0 / period, 6)),
        "datum": [float(d) for d in datum],
        "geodesy": "wgs84",
        "status": STATUS_NAMES.get(int(status), "fix"),
        "stamp_lag": float(max(fit.lag, 0.0)),
        "stamp_jitter": float(jitter),
        "position_noise": position,
        "covariance": cov_model,
    }
    return preset


@dataclass(frozen=True)
class ImuResidual:
    stats: imu_math.ImuNoiseStats       # Allan readings of the residual
    accel_bias: np.ndarray
    gyro_bias: np.ndarray
    accel_std: np.ndarray
    gyro_std: np.ndarray


def fit_imu_residual(t, accel, gyro, truth, min_duration: float = DEFAULT_MIN_IMU_DURATION) -> ImuResidual:
    """Allan analysis of IMU − truth (base_link; truth specific force and rates at the IMU stamps)."""
    t = np.asarray(t, dtype=float)
    inside = (t >= truth.t[0]) & (t <= truth.t[-1])
    if inside.sum() < 10:
        raise UserError("IMU: fewer than 10 samples inside the truth span")
    reference = truth.interpolate(t[inside])
    accel_res = np.asarray(accel, dtype=float)[inside] - reference.specific_force
    gyro_res = np.asarray(gyro, dtype=float)[inside] - reference.angular_velocity
    stats = imu_math.imu_noise_stats(t[inside], gyro_res, accel_res, min_duration,
                                     "drive (import it without --window for one run)")
    return ImuResidual(stats, accel_res.mean(axis=0), gyro_res.mean(axis=0), accel_res.std(axis=0, ddof=1),
                       gyro_res.std(axis=0, ddof=1))


def imu_residual_preset(fit: ImuResidual, source: str, t_b: float) -> dict:
    """Chrono drift preset of the residual: σ = N·√f, b0 = K·√t_b, mean = the residual's mean."""
    accel = chrono_drift_channel(fit.stats.accel, fit.stats.rate, t_b)
    gyro = chrono_drift_channel(fit.stats.gyro, fit.stats.rate, t_b)
    accel["mean"] = [float(v) for v in fit.accel_bias]
    gyro["mean"] = [float(v) for v in fit.gyro_bias]
    return {"description": f"Calibrated from the drive {source} ({fit.stats.duration:.0f} s at "
                           f"{fit.stats.rate:.1f} Hz, IMU minus truth, Allan deviation) by sim2real-eval "
                           "calibrate --truth",
            "rate": float(round(fit.stats.rate, 6)), "frame_id": "base_link",
            "accelerometer": accel, "gyroscope": gyro}


@dataclass
class DriveCalibration:
    source: str
    gps: DriveGpsFit
    imu: ImuResidual
    gps_preset: dict
    imu_preset: dict
    report: dict
    t_b: float


def read_drive(path, gps_topic: str = "/fix", imu_topic: str = "/imu", truth_source: str = "auto",
               static_tfs=()):
    """(StandstillData-like arrays, GroundTruth, datum) of a bag with sensors and ground truth; the IMU
    rotated into base_link when its frame is another (``static_tfs``: "PARENT CHILD x y z yaw pitch
    roll" strings)."""
    data = read_standstill_bag(path, gps_topic, imu_topic)
    with open_bag(path) as reader:
        truth, datum = truth_from_bag(reader, source=truth_source)
        first = next(iter(reader.messages([imu_topic])))
        frame = str(first.msg.header.frame_id)
    if datum is None:
        raise UserError(f"{path}: the ground truth has no geodetic origin (an Odometry truth without the "
                        "import.yaml datum of sim2real-eval import): cannot compare it with the fixes")
    if frame and frame != "base_link":
        rpy = mounting_rpy(list(static_tfs), frame)
        if rpy is None:
            raise UserError(f"{path}: {imu_topic} is in frame {frame!r}; give its mounting with --static-tf "
                            f"'base_link {frame} x y z yaw pitch roll'")
        q = rotations.from_rpy(*rpy)
        imu = data.imu
        data = StandstillData(data.source, data.gps_topic, data.imu_topic, data.gps,
                              ImuSeries(imu.t, rotations.rotate(q, imu.gyro), rotations.rotate(q, imu.accel)),
                              data.velocity_topic, data.velocity_t, data.velocity)
    return data, truth, datum


def calibrate_drive(data, truth, datum, t_b: float = 0.1, min_imu_duration: float = DEFAULT_MIN_IMU_DURATION,
                    max_lag: float = DEFAULT_MAX_LAG) -> DriveCalibration:
    """Every fit and both presets from a drive (module docstring)."""
    if not t_b > 0:
        raise UserError(f"--t-b must be > 0 s, got {t_b!r}")
    g = data.gps
    enu = geodetic_to_enu(g.latitude, g.longitude, g.altitude, datum)
    gps_fit = fit_gps_errors(g.t, enu, truth, max_lag)
    imu_fit = fit_imu_residual(data.imu.t, data.imu.accel, data.imu.gyro, truth, min_imu_duration)
    status = Counter(int(s) for s in g.status).most_common(1)[0][0]
    gps_p = gps_error_preset(gps_fit, datum, g.covariance, g.covariance_type, status, data.source)
    imu_p = imu_residual_preset(imu_fit, data.source, t_b)
    axes, xyz = ("east", "north", "up"), ("x", "y", "z")
    s = gps_fit.stats
    inside = (g.t >= truth.t[0]) & (g.t <= truth.t[-1])  # the error the filter sees: fixes as stamped
    as_stamped = enu[inside] - truth.interpolate(g.t[inside]).position
    report = {
        "source": data.source, "datum": [float(d) for d in datum],
        "topics": {"gps": data.gps_topic, "imu": data.imu_topic},
        "gps": {
            "fixes": s.count, "duration_s": s.duration, "period_s": gps_fit.grid.period,
            "speed_m_s": dict(zip(("p5", "median", "p95"), gps_fit.speed_percentiles)),
            "speed_range_m_s": list(gps_fit.speed_range),
            "stamp_lag_s": gps_fit.lag,
            "stamp_lag": gps_fit.observability.report(),
            "stamp_jitter_std_s": gps_fit.grid.jitter_std,
            "stamp_jitter_half_width_s": gps_fit.grid.jitter_half_width,
            "bias_m": dict(zip(axes, map(float, gps_fit.bias))),
            "std_m": dict(zip(axes, map(float, s.std))),
            "std_as_stamped_m": dict(zip(axes, map(float, np.std(as_stamped, axis=0, ddof=1)))),
            "horizontal_rms_m": float(np.sqrt(np.mean(np.sum((s.error[:, :2] + gps_fit.bias[:2]) ** 2,
                                                             axis=1)))),
            "gauss_markov": {a: {"tau_s": f.tau, "amplitude": f.amplitude, "sigma_bias_m": f.sigma_bias,
                                 "sigma_white_m": f.sigma_white} for a, f in zip(axes, s.gauss_markov)},
        },
        "imu": {
            "samples": int(len(data.imu.t)), "duration_s": imu_fit.stats.duration,
            "rate_hz": imu_fit.stats.rate,
            "t_b_s": float(t_b),
            "accel_bias_m_s2": dict(zip(xyz, map(float, imu_fit.accel_bias))),
            "accel_residual_std_m_s2": dict(zip(xyz, map(float, imu_fit.accel_std))),
            "gyro_bias_rad_s": dict(zip(xyz, map(float, imu_fit.gyro_bias))),
            "gyro_residual_std_rad_s": dict(zip(xyz, map(float, imu_fit.gyro_std))),
            "accelerometer_noise_density": [float(f.noise_density) for f in imu_fit.stats.accel],
            "gyroscope_noise_density": [float(f.noise_density) for f in imu_fit.stats.gyro],
        },
    }
    return DriveCalibration(data.source, gps_fit, imu_fit, gps_p, imu_p, report, t_b)


def drive_output_files(out, plots_dir=None) -> dict:
    paths = output_paths(out)
    files = {"gps": paths["gps"], "imu": paths["imu"]}
    if plots_dir is not None:
        files["gps_plot"] = Path(plots_dir) / "gps_error.png"
        files["allan_plot"] = Path(plots_dir) / "imu_residual_allan.png"
    files["report"] = paths["report"]
    return files


def write_drive_calibration(cal: DriveCalibration, out, plots_dir=None, overwrite: bool = True,
                            extra=None) -> dict:
    """The two presets, the report (presets inline) and plots, all or nothing (``atomic.atomic_files``);
    ``extra``: {path: write(temporary path)} of more files in the same set (``shortfall_writers``)."""
    from ..yamlio import dump_yaml
    from . import plots

    files = drive_output_files(out, plots_dir)
    paths = output_paths(out)
    document = {"variant": {"gps": cal.gps_preset, "imu": cal.imu_preset}, "measured": cal.report,
                "presets": {"gps": str(paths["gps"]), "imu": str(paths["imu"])}}
    extra = dict(extra or {})
    with atomic_files(list(files.values()) + list(extra), overwrite=overwrite) as temps:
        temp = dict(zip(files, temps))
        for write, path in zip(extra.values(), temps[len(files):]):
            write(path)
        temp["gps"].write_text(dump_yaml(plain_values(cal.gps_preset)), encoding="utf-8")
        temp["imu"].write_text(dump_yaml(plain_values(cal.imu_preset)), encoding="utf-8")
        if "gps_plot" in temp:
            plots.drive_gps_plot(cal.gps, temp["gps_plot"])
            plots.allan_plot(cal.imu.stats, temp["allan_plot"])
        temp["report"].write_text(dump_yaml(plain_values(document)), encoding="utf-8")
    return dict(files, **{Path(path).name: Path(path) for path in extra})
