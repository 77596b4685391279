"""The parameter space ``fit`` searches (``studies.fit``; docs/calibration.md, "fit"): each searched
parameter with its start value and range (``FitParam``, ``PARAMS``), the calibrated start around which the
ranges are set (``start_point``), the GPS + IMU pair of a point (``build_pair``), and the compared presets
mapped into the searched families (``preset_point``) with the ranges widened to hold them
(``with_points``, ``clipped``); the search's default size (``DEFAULT_BUDGET``, ``DEFAULT_SEEDS``,
``DEFAULT_FOLDS``).

Searched (``PARAMS``): GPS white σ and Gauss–Markov σ (horizontal, east and north equal), τ (one for
every axis: the model has one), stamp lag and jitter, reported covariance (``diagonal`` or ``zeros``,
categorical) and its horizontal σ; IMU accelerometer white σ (x and y) and gyroscope white σ (every
axis), bias instability b0 of both and their drift time t_b, constant accelerometer x and gyroscope z
bias. Kept at the calibrated values: the vertical (the car and ART judges run in 2-D mode: nothing
vertical reaches the VEPD), the east and north offsets, the other constant biases and the accelerometer z
σ (their effect on a 2-D judge is a rotation away from the searched ones).
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# The search's size (cli/fit.py reads these for its options and --help, which then loads no more than
# this module: studies.fit loads the judge and the scorer).
DEFAULT_BUDGET = 40      # trials per fold (docs/calibration.md: ~1 min per fold on the shipped segment)
DEFAULT_SEEDS = 3        # noise draws averaged per trial
DEFAULT_FOLDS = 2
COVARIANCE_MODELS = ("diagonal", "zeros")
NONE_SIGMA = 1e-3        # m: a GPS error part a preset does not have, on the log ranges (1 mm: nothing at
                         # the 0.1–1 m a car receiver errs by)
PRESET_DRAW_S = 2000.0   # s of a preset's GPS error drawn to map it into the searched families


# ------------------------------------------------------------------------------------ parameters
@dataclass(frozen=True)
class FitParam:
    """One searched parameter: its start value (calibrate --truth) and its search range."""

    name: str
    unit: str
    start: Any              # a number, or one of ``choices``
    low: float
    high: float
    log: bool
    choices: tuple = ()     # a categorical parameter: its values (low/high unused)

    def position(self, value) -> float:
        """``value`` as a fraction of the range (log10 scale on log ranges; a choice's index over the
        last index on a categorical one)."""
        if self.choices:
            return self.choices.index(value) / max(1, len(self.choices) - 1)
        if self.log:
            return (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return (value - self.low) / (self.high - self.low)


PARAMS = ("gps_white_sigma_h", "gps_gm_sigma_h", "gps_gm_tau", "gps_stamp_lag", "gps_stamp_jitter",
          "gps_covariance_sigma_h", "gps_covariance_model", "imu_accel_sigma_xy", "imu_gyro_sigma",
          "imu_accel_b0", "imu_gyro_b0", "imu_t_b", "imu_accel_bias_x", "imu_gyro_bias_z")


def _log_range(name: str, unit: str, start: float, floor: float, factor: float = 10.0,
               limits: tuple = (0.0, math.inf), reach: float = 0.0) -> FitParam:
    """Log range ×/÷ ``factor`` around the start value (at least ``floor``: a calibrated 1e-9 m says
    "none", and a log range needs a scale), up to ``reach`` at least, clipped to ``limits``."""
    centre = max(float(start), floor)
    low, high = max(centre / factor, limits[0]), min(max(centre * factor, reach), limits[1])
    return FitParam(name, unit, float(min(max(start, low), high)), low, high, True)


def _linear_range(name: str, unit: str, start: float, low: float, high: float) -> FitParam:
    return FitParam(name, unit, float(min(max(start, low), high)), float(low), float(high), False)


@dataclass(frozen=True)
class FitStart:
    """The calibrated pair in the fitted families (GPS gauss_markov gz, IMU chrono_drift) and the searched
    parameters around it."""

    gps: dict
    imu: dict
    params: tuple           # FitParam
    vertical_gm_sigma: float
    covariance_ratio: float  # reported vertical σ / horizontal σ (kept)

    @property
    def values(self) -> dict:
        return {p.name: p.start for p in self.params}


def _mean(values, axes=(0, 1)) -> float:
    return float(np.mean([float(values[i]) for i in axes]))


def start_point(calibration) -> FitStart:
    """``FitStart`` of a ``calibrate.drive.DriveCalibration`` (module docstring, "Searched")."""
    gps_preset, imu_preset = calibration.gps_preset, calibration.imu_preset
    noise = gps_preset["position_noise"]
    if noise["model"] == "gauss_markov":
        tau = float(noise["tau"])
        white = [float(s) for s in noise["sigma"]]
        stationary = [float(b) * math.sqrt(tau / 2.0) for b in noise["bias_sigma"]]
        offset = [float(v) for v in noise["offset"]]
    else:  # all of the error looked white: a small correlated part to start from
        tau = 10.0
        white = [float(s) for s in noise["sigma"]]
        stationary = [0.0, 0.0, 0.0]
        offset = [float(v) for v in noise["mean"]]
    period = 1.0 / float(gps_preset["rate"])
    cov = gps_preset["covariance"]
    stats = calibration.gps.stats
    if cov.get("model") == "diagonal":
        cov_h, ratio = _mean(cov["sigma"]), float(cov["sigma"][2]) / max(_mean(cov["sigma"]), 1e-9)
    else:  # the receiver reported none: start from the measured scatter, vertical twice horizontal
        cov_h, ratio = _mean(stats.std), 2.0
    accel, gyro = imu_preset["accelerometer"], imu_preset["gyroscope"]
    params = (
        # either part may carry the whole measured scatter: the judge may respond to a correlated error
        # as to a white one of another size (tune's README example: white mm for a cm Gauss–Markov error)
        _log_range("gps_white_sigma_h", "m", _mean(white), 0.01, reach=3.0 * _mean(stats.std)),
        _log_range("gps_gm_sigma_h", "m", _mean(stationary), 0.01, reach=3.0 * _mean(stats.std)),
        _log_range("gps_gm_tau", "s", tau, 1.0, limits=(2.0 * period, 1000.0)),
        _linear_range("gps_stamp_lag", "s", float(gps_preset["stamp_lag"]), 0.0,
                      max(0.25, 2.0 * float(gps_preset["stamp_lag"]))),
        _linear_range("gps_stamp_jitter", "s", float(gps_preset["stamp_jitter"]), 0.0, 0.45 * period),
        _log_range("gps_covariance_sigma_h", "m", cov_h, 0.01),
        # reported covariance: the receiver's σ (diagonal) or none (zeros, type UNKNOWN, as car_gauss)
        FitParam("gps_covariance_model", "", "diagonal", 0.0, 1.0, False, COVARIANCE_MODELS),
        _log_range("imu_accel_sigma_xy", "m/s²", _mean(accel["sigma"]), 1e-3),
        _log_range("imu_gyro_sigma", "rad/s", float(gyro["sigma"][2]), 1e-4),
        _log_range("imu_accel_b0", "m/s²", float(accel["b0"]), 1e-3),
        _log_range("imu_gyro_b0", "rad/s", float(gyro["b0"]), 1e-4),
        _log_range("imu_t_b", "s", float(accel["t_b"]), 0.1, factor=30.0, limits=(0.01, 100.0)),
        _linear_range("imu_accel_bias_x", "m/s²", float(accel["mean"][0]), float(accel["mean"][0]) - 0.3,
                      float(accel["mean"][0]) + 0.3),
        _linear_range("imu_gyro_bias_z", "rad/s", float(gyro["mean"][2]), float(gyro["mean"][2]) - 0.01,
                      float(gyro["mean"][2]) + 0.01),
    )
    gps = {key: copy.deepcopy(value) for key, value in gps_preset.items() if key != "description"}
    gps["position_noise"] = {"model": "gauss_markov", "form": "gz", "offset": offset, "sigma": white,
                             "bias_sigma": [0.0, 0.0, 0.0], "tau": tau, "initial_bias": "stationary"}
    imu = {key: copy.deepcopy(value) for key, value in imu_preset.items() if key != "description"}
    return FitStart(gps, imu, params, stationary[2], ratio)


def build_pair(start: FitStart, values: dict) -> dict:
    """{"gps": spec, "imu": spec} of the searched ``values`` (by ``PARAMS`` name) on the calibrated
    rest of ``start``."""
    v = {p.name: p.start for p in start.params}
    v.update({name: value if isinstance(value, str) else float(value) for name, value in values.items()})
    gps, imu = copy.deepcopy(start.gps), copy.deepcopy(start.imu)
    tau = v["gps_gm_tau"]
    noise = gps["position_noise"]
    noise["sigma"] = [v["gps_white_sigma_h"], v["gps_white_sigma_h"], noise["sigma"][2]]
    gm = [v["gps_gm_sigma_h"], v["gps_gm_sigma_h"], start.vertical_gm_sigma]
    noise["bias_sigma"] = [s * math.sqrt(2.0 / tau) for s in gm]  # gz form: stationary std σ_b·√(τ/2)
    noise["tau"] = tau
    gps["stamp_lag"] = v["gps_stamp_lag"]
    gps["stamp_jitter"] = v["gps_stamp_jitter"]
    h = v["gps_covariance_sigma_h"]
    if v.get("gps_covariance_model", "diagonal") == "zeros":
        gps["covariance"] = {"model": "zeros"}
    else:
        gps["covariance"] = {"model": "diagonal", "sigma": [h, h, h * start.covariance_ratio],
                             "type": (start.gps.get("covariance") or {}).get("type", "approximated")}
    accel, gyro = imu["accelerometer"], imu["gyroscope"]
    accel["sigma"] = [v["imu_accel_sigma_xy"], v["imu_accel_sigma_xy"], float(accel["sigma"][2])]
    gyro["sigma"] = [v["imu_gyro_sigma"]] * 3
    accel["b0"], gyro["b0"] = v["imu_accel_b0"], v["imu_gyro_b0"]
    accel["t_b"] = gyro["t_b"] = v["imu_t_b"]
    accel["mean"] = [v["imu_accel_bias_x"], *[float(m) for m in accel["mean"][1:]]]
    gyro["mean"] = [*[float(m) for m in gyro["mean"][:2]], v["imu_gyro_bias_z"]]
    return {"gps": gps, "imu": imu}


# ------------------------------------------------------------------------------------ presets as points
def _white_plus_markov(error: np.ndarray, dt: float) -> tuple:
    """(white σ, Gauss–Markov stationary σ, τ) of a white + first-order Gauss–Markov process with the
    lag-0, 1 and 2 autocovariance of ``error`` (samples, axes; averaged over the axes): c_k = g²·φ^k for
    k ≥ 1, so φ = c2/c1, g² = c1/φ, white² = c0 − g², τ = −dt/ln φ; (σ, None, None) when the error is
    white (ρ(1) < 0.05)."""
    e = error - error.mean(axis=0)
    c = [float(np.mean(e[k:] * e[:len(e) - k])) for k in range(3)]
    if c[0] <= 0.0 or c[1] < 0.05 * c[0] or c[2] <= 0.0:
        return math.sqrt(max(c[0], 0.0)), None, None
    phi = min(c[2] / c[1], 0.9999)
    markov = min(c[1] / phi, c[0])
    return math.sqrt(c[0] - markov), math.sqrt(markov), -dt / math.log(phi)


def preset_point(gps_spec, imu_spec, start: FitStart) -> dict:
    """A preset pair as a point of ``PARAMS`` (the searched families, around ``start``'s kept values):
    the GPS error of any position-noise model as white + Gauss–Markov with the same first three
    autocovariances (``_white_plus_markov`` of ``PRESET_DRAW_S`` s drawn at the preset's rate with a
    fixed stream: exact for gaussian and gauss_markov, the nearest such process for a random walk), a part
    it lacks at ``NONE_SIGMA``; its stamp lag and jitter; its reported covariance's horizontal σ once
    settled (an HDOP model: epe·H∞), or ``zeros``; an IMU of the chrono_drift family as it is (another
    family keeps ``start``'s IMU values)."""
    from ..models.base import resolve_spec
    from ..models.gps import load_gps_model

    gps = load_gps_model(gps_spec, np.random.SeedSequence(0))
    dt = 1.0 / float(gps.rate)
    n = int(PRESET_DRAW_S / dt)
    error = gps.noise.apply(np.zeros((n, 3)), np.full(n, dt))[:, :2]
    white, markov, tau = _white_plus_markov(error, dt)
    values = dict(start.values)
    values.update(gps_white_sigma_h=max(white, NONE_SIGMA), gps_gm_sigma_h=max(markov or 0.0, NONE_SIGMA),
                  gps_stamp_lag=float(gps.stamp_lag), gps_stamp_jitter=float(gps.stamp_jitter))
    if tau is not None:
        values["gps_gm_tau"] = tau
    steps = 600  # a minute at 10 Hz: an HDOP low-pass has settled
    cov = gps.covariance.apply(np.full(steps, dt), np.arange(steps) * dt)[0][-1]
    sigma = math.sqrt(0.5 * (float(cov[0]) + float(cov[4])))
    values["gps_covariance_model"] = "diagonal" if sigma > 0.0 else "zeros"
    if sigma > 0.0:
        values["gps_covariance_sigma_h"] = sigma
    imu, _source = resolve_spec(imu_spec, "imu", {})
    accel, gyro = imu.get("accelerometer") or {}, imu.get("gyroscope") or {}
    if accel.get("model") == "chrono_drift" and gyro.get("model") == "chrono_drift":
        values.update(imu_accel_sigma_xy=_mean(accel["sigma"]), imu_gyro_sigma=float(gyro["sigma"][2]),
                      imu_accel_b0=float(accel.get("b0", 0.0)), imu_gyro_b0=float(gyro.get("b0", 0.0)),
                      imu_t_b=float(accel.get("t_b", values["imu_t_b"])),
                      imu_accel_bias_x=float((accel.get("mean") or [0.0])[0]),
                      imu_gyro_bias_z=float((gyro.get("mean") or [0.0, 0.0, 0.0])[2]))
    return values


def with_points(start: FitStart, points: list) -> FitStart:
    """``start`` with every numeric range widened to hold ``points`` (the presets: the search can then
    start from each of them); a log range's zero values are lifted to its low end."""
    params = []
    for p in start.params:
        if p.choices:
            params.append(p)
            continue
        values = [float(point[p.name]) for point in points]
        if p.log:
            values = [v for v in values if v > 0.0]
        low, high = min([p.low, *values]), max([p.high, *values])
        params.append(dataclasses.replace(p, low=low, high=high))
    return dataclasses.replace(start, params=tuple(params))


def clipped(start: FitStart, values: dict) -> dict:
    """``values`` inside ``start``'s ranges (a log range's 0 → its low end)."""
    out = dict(values)
    for p in start.params:
        if not p.choices:
            out[p.name] = float(min(max(float(values[p.name]), p.low), p.high))
    return out
