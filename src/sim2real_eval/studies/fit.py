"""``sim2real-eval fit``: a GPS model and an IMU model fitted together to a real drive, by cross-validation
over its windows (docs/calibration.md, "Fitting a GPS + IMU pair: fit").

The drive is a sequence of runs (the windows ``import --window`` cuts, in order).  They are split into
``folds`` contiguous blocks (blocked folds: neighbouring windows share the receiver's slowly varying error,
so a window next to a validation window would leak it; whole blocks keep that leak to the block edges).
For fold f:

1. **Start** — ``calibrate --truth`` (``calibrate.drive``) on the fit windows (every block but f, their
   data joined in time order): the GPS error (white σ, Gauss–Markov σ and τ, bias, stamp lag and jitter,
   the receiver's covariance) and the IMU − truth residual (Chrono drift σ, b0, t_b, constant bias).
   These are the initial values; the search ranges are set around them (``start_point``), then widened
   to hold every compared preset mapped into the searched families (``preset_point``, ``with_points``).
2. **Search** — Optuna TPE (``studies.tune.search``: ask/tell, SQLite storage, local processes or Ray)
   over the searched parameters; one trial replays every fit window with the candidate pair driven by
   the window's ground truth, judged like the real window, ``seeds`` times with fixed independent noise
   streams (common random numbers: the same streams in every trial, so trials differ by their parameters,
   not by their draw), and its objective is the mean VEPD over those seeds.  Trials 0 … n are enqueued:
   the calibrated start, then every preset (so no search ends worse than any of them on its fit runs).
3. **Validation** — the fold's best pair, the calibrated start and every preset of the demo file's GPS
   study are replayed on the fold's own block (never seen by 1–2) with the real runs judged again with
   random judge timing (the judge-noise floor); VEPD with its bootstrap interval, each preset against
   the fitted pair paired by window.

The held-out VEPD of all folds together (every window judged with the pair fitted without it) is the
cross-validated estimate.

4. **The fitted pair** — a final search (1–2) on every run given: cross-validation only estimates the
   held-out error of this procedure and tells which parameters the data identifies (``DESIGN``).
5. **Shortfall** — ``calibrate.shortfall`` of the fitted pair on every run (``fitted_shortfall``): what
   its families miss, with the cross-validated VEPD split.

A parameter whose fold values spread over more than ``SPREAD_LIMIT`` of its search range (in the range's
own scale: log10 for log ranges) is "not identified by this data" (``identified``): for a parameter the
data does not constrain, each fold's value is an arbitrary point of the range, and two such points fall
within 15 % of the range of each other with probability 1 − 0.85² = 28 % (3 folds: 6 %, 4 folds: 1 %);
a parameter the data pins down lands in the same place.

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
import csv
import dataclasses
import io
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from .tune import (
    OBJECTIVE_COMBINED,
    TUNE_VARIANT,
    ReplayTrials,
    TrialContext,
    check_storage,
    search,
)
from .tune_params import ParamRange

COMMAND = "fit"
OUTPUT_FILES = ("fit_gps.yaml", "fit_imu.yaml", "fit.yaml", "trials.csv", "shortfall.png", "shortfall.md",
                "shortfall.json")
FITTED, START = "fitted", "calibrated"
DEFAULT_BUDGET = 40      # trials per fold (docs/calibration.md: ~1 min per fold on the shipped segment)
DEFAULT_SEEDS = 3        # noise draws averaged per trial
DEFAULT_FOLDS = 2
SPREAD_LIMIT = 0.15      # fold spread / search range above which a parameter is not identified
MIN_RUNS_PER_BLOCK = 2   # W1/W2 need two runs on each side
COVARIANCE_MODELS = ("diagonal", "zeros")
NONE_SIGMA = 1e-3        # m: a GPS error part a preset does not have, on the log ranges (1 mm: nothing at
                         # the 0.1–1 m a car receiver errs by)
DESIGN = ("cross-validation estimates the held-out VEPD and tells which parameters this data identifies "
          "(each fold searched on its fit blocks, judged on its own block); the fitted pair is a final "
          "search on every run given, started like each fold's from calibrate --truth, the calibrated start "
          "and every compared preset enqueued as its first trials")
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


# ------------------------------------------------------------------------------------ folds
def blocked_folds(n: int, folds: int) -> list:
    """[(fit indices, validation indices)] of ``n`` runs in ``folds`` contiguous blocks (sizes differ by
    at most one, the larger first); each block and each fit set has at least two runs."""
    if folds < 2:
        raise UserError(f"--folds must be >= 2, got {folds}")
    if n < folds * MIN_RUNS_PER_BLOCK:
        raise UserError(f"{n} runs cannot make {folds} blocked folds of at least {MIN_RUNS_PER_BLOCK} runs "
                        f"each (W1/W2 need two runs a side): give more windows or fewer --folds")
    sizes = [n // folds + (1 if f < n % folds else 0) for f in range(folds)]
    edges = np.concatenate([[0], np.cumsum(sizes)])
    out = []
    for f in range(folds):
        val = list(range(int(edges[f]), int(edges[f + 1])))
        out.append(([i for i in range(n) if i not in val], val))
    return out


# ------------------------------------------------------------------------------------ the real side
@dataclass(frozen=True)
class FitSetup:
    """How the runs are judged and what the fitted pair is compared with (from a demo file)."""

    judge: Any                   # judge.config.JudgeConfig
    ground_truth_rate: float
    static_tfs_by_layout: bool
    presets: tuple               # ((name, gps spec, imu spec), ...): the compared presets
    seed: int = 0                # the runs' seed (judge timing, the validation draw)
    floor_draws: int = 4
    bootstrap: int = 1000
    permutations: int = 1000
    score_seed: int = 0
    t_b: float = 0.1             # calibrate --t-b of the start


def setup_from_demo(config) -> FitSetup:
    """A ``FitSetup`` of a ``demo.DemoConfig``: its judge, and its GPS study's presets with its IMU."""
    presets = tuple((name, name, config.gps_study_imu) for name in config.gps_variants)
    t_b = config.real_sample.t_b if config.real_sample is not None else 0.1
    return FitSetup(config.judge, config.ground_truth_rate, config.static_tfs_by_layout, presets, config.seed,
                    config.noise_floor_draws, config.bootstrap, config.permutations, config.score_seed, t_b)


def drive_runs(path, runs: str | None = None) -> list:
    """The runs (``runs.RealBag``) of an imported drive (or any folder of bags of one scenario), in order;
    ``runs`` "A:B" keeps runs A … B−1 (Python slice)."""
    from ..runs import find_real_bags

    bags = sorted(find_real_bags([path], what="DRIVE"), key=lambda b: (b.scenario, b.k))
    scenarios = sorted({b.scenario for b in bags})
    if len(scenarios) != 1:
        raise UserError(f"DRIVE {path}: runs of {len(scenarios)} scenarios ({', '.join(scenarios)}); "
                        "fit takes the windows of one drive (one scenario folder)")
    if runs:
        try:
            start, _, stop = runs.partition(":")
            chosen = bags[slice(int(start) if start else None, int(stop) if stop else None)]
        except ValueError:
            raise UserError(f"--runs {runs!r}: expected A:B (run indices, Python slice), e.g. 0:5") from None
        if not chosen:
            raise UserError(f"--runs {runs}: selects none of the {len(bags)} runs of {path}")
        bags = chosen
    return [dataclasses.replace(b, k=i) for i, b in enumerate(bags)]


def _joined(parts: list):
    """(data, truth, datum) of several windows of one drive joined in time order (calibrate --truth on
    them as on one recording; the gaps between non-adjacent blocks hold no samples)."""
    from ..calibrate.standstill import GpsSeries, ImuSeries, StandstillData
    from ..geodesy import enu_to_geodetic, geodetic_to_enu
    from ..truth import FIELDS, GroundTruth

    parts = sorted(parts, key=lambda p: float(p[1].t[0]))
    datum = parts[0][2]
    moved = []
    for data, truth, own in parts:  # separate runs: each truth's ENU re-expressed at the first's datum
        if not np.allclose(own, datum, rtol=0, atol=1e-9):
            lat, lon, alt = enu_to_geodetic(truth.position, own)
            if float(np.max(np.abs(geodetic_to_enu(lat, lon, alt, datum)[:, :2]))) > 5e3:
                raise UserError(f"{data.source}: more than 5 km from the first run: fit takes runs of one "
                                "place (the ENU frames of runs far apart differ by a rotation)")
            truth = dataclasses.replace(truth, position=geodetic_to_enu(lat, lon, alt, datum))
        moved.append((data, truth, datum))
    parts = moved

    def cat(objects, name):
        return np.concatenate([getattr(o, name) for o in objects])

    truths = [p[1] for p in parts]
    t = cat(truths, "t")
    keep = np.concatenate([[True], np.diff(t) > 0])  # a window's first sample may repeat the last one
    truth = GroundTruth(**{name: cat(truths, name)[keep] for name in FIELDS})
    gps = [p[0].gps for p in parts]
    imu = [p[0].imu for p in parts]
    g = GpsSeries(*(cat(gps, n) for n in ("t", "latitude", "longitude", "altitude", "status", "covariance",
                                          "covariance_type")), sum(x.dropped for x in gps))
    i = ImuSeries(cat(imu, "t"), cat(imu, "gyro"), cat(imu, "accel"))
    first = parts[0][0]
    data = StandstillData(f"{Path(first.source).parent} ({len(parts)} runs)", first.gps_topic,
                          first.imu_topic, g, i, None, None, None)
    return data, truth, parts[0][2]


def _static_tfs(bag, setup: FitSetup) -> tuple:
    """The judge's static TFs for ``bag``: the demo file's, or (no static_tfs there) the bag's default as
    every replay gets it (the ART ones for a bag in the ART layout)."""
    if not setup.static_tfs_by_layout:
        return tuple(setup.judge.static_tfs)
    from ..service import plan_replays

    task = plan_replays([bag], (), setup.judge, real=False, static_tfs_by_layout=True)[0]
    return tuple(task.spec.judge.static_tfs)


def calibrate_runs(bags: list, setup: FitSetup):
    """``calibrate --truth`` on the windows ``bags`` joined (``_joined``)."""
    from ..calibrate.drive import DEFAULT_MIN_IMU_DURATION, calibrate_drive, read_drive

    parts = [read_drive(bag.path, static_tfs=_static_tfs(bag, setup)) for bag in bags]
    data, truth, datum = _joined(parts)
    imu_span = float(data.imu.t[-1] - data.imu.t[0]) if len(data.imu.t) else 0.0
    # the Allan analysis reads what the span allows; a fit window set is shorter than a standstill log
    return calibrate_drive(data, truth, datum, t_b=setup.t_b,
                           min_imu_duration=min(DEFAULT_MIN_IMU_DURATION, 0.5 * imu_span))


# ------------------------------------------------------------------------------------ trials
@dataclass(frozen=True)
class _Averaged:
    """What ``tune._evaluate`` reads of a scored study: the seeds' mean VEPD, W1, W2 as variant "tuned"."""

    combined: dict
    per_scenario: dict


@dataclass(frozen=True)
class FoldTrials(ReplayTrials):
    """``tune.ReplayTrials`` whose candidate is a point of ``PARAMS`` (``models["fit"]``) turned into a
    pair by ``build_pair``, replayed ``seeds`` times (variants ``fit_s<i>``: fixed streams, the same in
    every trial) and scored as the mean over the seeds."""

    start: FitStart = None
    seeds: int = DEFAULT_SEEDS
    static_tfs_by_layout: bool = False

    def _replay(self, replacements, real: bool, options) -> list:
        from ..service import plan_replays, replay_bags

        tasks = plan_replays(self.bags, replacements, self.judge, real=real, scoring=options, write=False,
                             seed=self.seed, ground_truth_rate=self.ground_truth_rate,
                             static_tfs_by_layout=self.static_tfs_by_layout)
        with tempfile.TemporaryDirectory(prefix="sim2real-tune-") as tmp:
            replayed = replay_bags(tasks, tmp, workers=1, progress=False, warn_health=False)
        replayed.raise_on_failure()
        return [run.record for run in replayed.scored]

    def score(self, models: dict, real_records, options):
        from ..metrics import score_study
        from ..replay.real_bag import Replacement

        pair = build_pair(self.start, models["fit"])
        names = [f"fit_s{i}" for i in range(self.seeds)]
        sims = self._replay(tuple(Replacement(dict(pair), name=n) for n in names), False, options)
        result = score_study(list(real_records) + sims, options)
        cells = [result.combined[n] for n in names]
        mean = {key: float(np.mean([c[key] for c in cells])) for key in ("VEPD", "W1", "W2")}
        per = {s: {"VEPD": float(np.mean([result.per_scenario[n][s]["VEPD"] for n in names]))}
               for s in result.per_scenario[names[0]]}
        return _Averaged({TUNE_VARIANT: mean}, {TUNE_VARIANT: per})


# ------------------------------------------------------------------------------------ validation
def _score_options(setup: FitSetup):
    from ..metrics.options import ScoreOptions

    return ScoreOptions(bootstrap=setup.bootstrap, permutations=setup.permutations, seed=setup.score_seed,
                        warmup_s=setup.judge.warmup_s, exclude_scenarios=()).validate()


def replay_pairs(bags: list, pairs: dict, setup: FitSetup, workers: int = 1) -> tuple:
    """(scored records, noise-floor draws) of ``pairs`` ({variant: {"gps": spec, "imu": spec}}) replayed
    on ``bags`` with their real runs, and the real runs judged ``setup.floor_draws`` more times with random
    judge timing (the judge-noise floor)."""
    from ..replay.real_bag import Replacement
    from ..service import plan_replays, replay_bags

    replacements = tuple(Replacement(dict(pair), name=name) for name, pair in pairs.items())
    tasks = plan_replays(bags, replacements, setup.judge, scoring=_score_options(setup), write=False,
                         floor_draws=setup.floor_draws, seed=setup.seed,
                         ground_truth_rate=setup.ground_truth_rate,
                         static_tfs_by_layout=setup.static_tfs_by_layout)
    with tempfile.TemporaryDirectory(prefix="sim2real-fit-") as tmp:
        replayed = replay_bags(tasks, tmp, workers=workers, progress=False, warn_health=False)
    replayed.raise_on_failure()
    return [run.record for run in replayed.scored], replayed.noise_floor_draws()


def score_pairs(records: list, draws: list, setup: FitSetup, fitted: str = FITTED):
    """The ``metrics.StudyResult`` of ``replay_pairs``'s records: intervals, permutation p, ``fitted``
    compared with every other variant (paired by window) and the judge-noise floor of these real runs."""
    from ..metrics import score_study
    from ..noise_floor.compute import judge_noise_floor

    names = sorted({r.variant for r in records if r.side != "real"})
    result = score_study(records, _score_options(setup), pairs=[(fitted, n) for n in names if n != fitted])
    if len(draws) >= 2:
        result.judge_noise_floor = judge_noise_floor(draws, result.variants, result.scenarios)
    return result


def result_table(result, fitted: str = FITTED) -> dict:
    """{"k", "floor": {VEPD, interval}, "variants": {name: {VEPD, VEPD_ci95, p, fitted_minus,
    fitted_minus_ci95, fitted_minus_p}}} of a ``score_pairs`` result (fitted − other, paired by window)."""
    from ..metrics import separation

    floor = None
    if getattr(result, "judge_noise_floor", None):
        cell = next(iter(result.judge_noise_floor["combined"].values()))
        floor = {"VEPD": float(cell["VEPD"]), "interval": _floats(cell["VEPD_interval"])}
    variants = {}
    for name in result.variants:
        row = result.combined[name]
        stats = result.statistics.get("combined", {}).get(name, {})
        entry = {"VEPD": float(row["VEPD"]), "VEPD_ci95": _floats(row.get("VEPD_ci95")),
                 "p": stats.get("p_VEPD")}
        pair = separation.comparison(result, fitted, name) if name != fitted else None
        if pair is not None:
            difference, interval = float(pair["difference"]), _floats(pair.get("difference_ci95"))
            if pair["better"] == fitted:  # the entry holds worse − better ≥ 0; here fitted − other
                difference = -difference
                interval = None if interval is None else [-interval[1], -interval[0]]
            entry.update(fitted_minus=difference, fitted_minus_ci95=interval, fitted_minus_p=pair.get("p"))
        variants[name] = entry
    k = int(next(iter(result.combined.values())).get("n_real", 0) or 0) if result.combined else 0
    return {"k": k, "floor": floor, "variants": variants}


def _floats(values):
    return None if values is None else [float(v) for v in values]


# ------------------------------------------------------------------------------------ the fit
@dataclass
class FoldResult:
    index: int
    fit_runs: list
    validation_runs: list
    start: FitStart
    search: Any              # tune.TuneResult
    values: dict             # the fold's best parameter values (all PARAMS)
    validation: dict         # result_table of its block
    records: list = field(default_factory=list)   # its block's scored runs (metrics.RunRecord)
    draws: list = field(default_factory=list)     # its block's noise-floor draws
    points: dict = field(default_factory=dict)    # the enqueued first trials ({name: values}, in order)


@dataclass
class FitResult:
    drive: str
    runs: list               # run paths, in order
    folds: list              # FoldResult
    parameters: list         # per parameter: name, unit, fold values, fitted value, spread, identified
    pair: dict               # the fitted pair {"gps", "imu"}
    pooled: dict             # result_table of every window judged with the pair fitted without it
    budget: int
    seeds: int
    seed: int
    wall_seconds: float
    executor: str
    trials: list = field(default_factory=list)   # (fold, TrialResult)
    final: Any = None        # FoldResult of the refit on every run (no validation block)
    shortfall: Any = None    # calibrate.shortfall.Shortfall of the fitted pair on every run


def _agreed(params: list, values: list):
    """The folds' common value of a parameter: the median (geometric on log ranges), on a categorical one
    the most frequent choice (the first fold's on a tie)."""
    if params[0].choices:
        return max(values, key=lambda v: (values.count(v), -values.index(v)))
    if params[0].log:
        return float(np.exp(np.median(np.log(values))))
    return float(np.median(values))


def summarise_parameters(folds: list, final=None) -> tuple:
    """(per-parameter rows, fitted values): the fold values, their median (geometric on log ranges; the
    most frequent choice on a categorical one), the spread (max − min) as a fraction of the search range,
    identified = spread ≤ ``SPREAD_LIMIT``.  The fitted value is ``final``'s (the refit on every run)
    when given, else the median."""
    rows, fitted = [], {}
    for i, name in enumerate(PARAMS):
        params = [fold.start.params[i] for fold in folds]
        values = [fold.values[name] if params[0].choices else float(fold.values[name]) for fold in folds]
        median = _agreed(params, values)
        positions = [p.position(v) for p, v in zip(params, values)]
        spread = float(max(positions) - min(positions))
        value = median if final is None else final.values[name]
        fitted[name] = value
        row = {"name": name, "unit": params[0].unit, "folds": values, "median_over_folds": median,
               "fitted": value, "start": [p.start for p in params],
               "range": [list(p.choices) if p.choices else [p.low, p.high] for p in params],
               "scale": "categorical" if params[0].choices else "log" if params[0].log else "linear",
               "spread_of_range": spread, "identified": spread <= SPREAD_LIMIT}
        if final is not None:
            p = final.start.params[i]
            row.update(refit_start=p.start, refit_range=list(p.choices) if p.choices else [p.low, p.high])
        rows.append(row)
    return rows, fitted


def _param_ranges(start: FitStart) -> tuple:
    return tuple(ParamRange(p.name, ("fit", p.name), p.low, p.high, p.log, p.choices) for p in start.params)


@dataclass
class Searched:
    """One search (a fold's fit runs, or every run for the final pair): its start, the points enqueued
    first, the search and its best values."""

    start: FitStart
    points: dict             # {START or preset name: values}, enqueued as trials 0 … n−1 in this order
    search: Any              # tune.TuneResult
    values: dict             # the best values (all PARAMS)


def search_runs(name: str, fit_bags: list, setup: FitSetup, budget: int, seeds: int, seed: int,
                storage: str | None, ray_address: str | None, workers: int, progress: bool,
                progress_label: str) -> Searched:
    """Calibrate on ``fit_bags``, map the presets into the searched families, widen the ranges to hold them,
    enqueue the start and the presets as the first trials, search (module docstring, 1–2)."""
    from ..metrics.options import ScoreOptions

    start = start_point(calibrate_runs(fit_bags, setup))
    mapped = {preset: preset_point(gps, imu, start) for preset, gps, imu in setup.presets}
    start = with_points(start, list(mapped.values()))
    points = {START: start.values, **{preset: clipped(start, v) for preset, v in mapped.items()}}
    options = ScoreOptions(bootstrap=0, permutations=0, warmup_s=setup.judge.warmup_s,
                           exclude_scenarios=()).validate()
    trials = FoldTrials(name, tuple(fit_bags), setup.judge, setup.seed, setup.ground_truth_rate,
                        start=start, seeds=seeds, static_tfs_by_layout=setup.static_tfs_by_layout)
    models = {"gps": start.gps, "imu": start.imu, "fit": start.values}
    context = TrialContext(trials, trials.scenarios, models, _param_ranges(start),
                           trials.real_records(options), OBJECTIVE_COMBINED, options)
    initial = tuple({f"fit.{k}": v for k, v in point.items()} for point in points.values())
    found = search(context, name, START, budget, storage=storage, ray_address=ray_address, workers=workers,
                   seed=seed, progress=progress, real_label=", ".join(b.path for b in fit_bags),
                   progress_label=progress_label, initial=initial)
    values = dict(start.values)
    values.update({key.split(".", 1)[1]: v if isinstance(v, str) else float(v)
                   for key, v in found.best.values.items()})
    return Searched(start, points, found, values)


def fit_fold(index: int, bags: list, fit_idx: list, val_idx: list, setup: FitSetup, budget: int, seeds: int,
             seed: int, storage: str | None, ray_address: str | None, workers: int,
             progress: bool) -> FoldResult:
    """One fold: calibrate on its fit runs, search there, validate on its block (module docstring)."""
    fit_bags = [bags[i] for i in fit_idx]
    found = search_runs(f"fit-fold{index}", fit_bags, setup, budget, seeds, seed + index, storage,
                        ray_address, workers, progress, f"fit, fold {index + 1}")
    pairs = compared_pairs(found.start, found.values, setup)
    records, draws = replay_pairs([bags[i] for i in val_idx], pairs, setup, workers)
    return FoldResult(index, [bags[i].path for i in fit_idx], [bags[i].path for i in val_idx], found.start,
                      found.search, found.values, result_table(score_pairs(records, draws, setup)), records,
                      draws, found.points)


def refit_all(bags: list, setup: FitSetup, budget: int, seeds: int, seed: int, storage: str | None,
              ray_address: str | None, workers: int, progress: bool, index: int) -> FoldResult:
    """The final search on every run given (module docstring, 4): no block is left to validate on."""
    found = search_runs("fit-all", list(bags), setup, budget, seeds, seed + index, storage, ray_address,
                        workers, progress, "fit, all runs")
    return FoldResult(index, [b.path for b in bags], [], found.start, found.search, found.values, {},
                      points=found.points)


def compared_pairs(start: FitStart, values: dict, setup: FitSetup) -> dict:
    """{variant: pair}: the fitted pair, the calibrated start and the presets compared with them."""
    pairs = {FITTED: build_pair(start, values), START: build_pair(start, start.values)}
    pairs.update({name: {"gps": gps, "imu": imu} for name, gps, imu in setup.presets})
    return pairs


def check_inputs(budget: int, seeds: int, seed: int, workers: int, storage) -> None:
    for value, name, low in ((budget, "--budget", 1), (seeds, "--seeds", 1), (seed, "--seed", 0),
                             (workers, "--workers", 1)):
        if value < low:
            raise UserError(f"{name} must be >= {low}, got {value}")
    if storage:
        check_storage(storage)


def fit(bags: list, setup: FitSetup, folds: int = DEFAULT_FOLDS, budget: int = DEFAULT_BUDGET,
        seeds: int = DEFAULT_SEEDS, seed: int = 0, storage: str | None = None, ray_address: str | None = None,
        workers: int = 1, progress: bool = True, drive: str = "") -> FitResult:
    """The cross-validated fit of ``bags`` (the drive's windows in order; module docstring)."""
    check_inputs(budget, seeds, seed, workers, storage)
    plan = blocked_folds(len(bags), folds)
    begin = time.perf_counter()
    results = []
    for index, (fit_idx, val_idx) in enumerate(plan):
        if progress:
            from rich.console import Console

            Console(stderr=True).print(f"fold {index + 1}/{len(plan)}: fit on runs {_spans(fit_idx)}, "
                                       f"validate on runs {_spans(val_idx)}")
        results.append(fit_fold(index, bags, fit_idx, val_idx, setup, budget, seeds, seed, storage,
                                ray_address, workers, progress))
    if progress:
        from rich.console import Console

        Console(stderr=True).print(f"final pair: fit on every run ({_spans(list(range(len(bags))))})")
    final = refit_all(bags, setup, budget, seeds, seed, storage, ray_address, workers, progress, len(plan))
    rows, fitted = summarise_parameters(results, final)
    pair = build_pair(final.start, fitted)
    pooled, pooled_study = _pooled(results, setup)
    gap = fitted_shortfall(bags, setup, pair, pooled_study, seed)
    trials = [(fold.index, t) for fold in results + [final] for t in fold.search.trials]
    return FitResult(drive, [b.path for b in bags], results, rows, pair, pooled, budget, seeds, seed,
                     time.perf_counter() - begin, results[0].search.executor, trials, final, gap)


def fitted_shortfall(bags: list, setup: FitSetup, pair: dict, pooled_study, seed: int):
    """``calibrate.shortfall`` of the fitted pair on every run given: the real sensors' error statistics
    against the pair's on the same truth, and the split of the cross-validated held-out VEPD (each run
    judged with the pair fitted without it)."""
    from ..calibrate.shortfall import error_statistics, segment_from_bag

    segments = [segment_from_bag(bag.path, static_tfs=_static_tfs(bag, setup)) for bag in bags]
    return error_statistics(segments, *described(pair), seed=seed, study=pooled_study, variant=FITTED)


def described(pair: dict) -> tuple:
    """(GPS spec, IMU spec) of the fitted pair, each with a description naming it (the shortfall's
    headings read a dict model's name from its description)."""
    return tuple({**pair[kind], "description": f"fitted {kind.upper()} (sim2real-eval fit)"}
                 for kind in ("gps", "imu"))


def _spans(indices: list) -> str:
    """[0, 1, 2, 5, 6] → "0–2, 5–6"."""
    parts, begin = [], None
    for i, value in enumerate(indices):
        if begin is None:
            begin = value
        if i == len(indices) - 1 or indices[i + 1] != value + 1:
            parts.append(f"{begin}" if begin == value else f"{begin}–{value}")
            begin = None
    return ", ".join(parts)


def _pooled(folds: list, setup: FitSetup) -> dict:
    """Every window judged with the pair its fold fitted without it (and the other variants), scored
    together: the cross-validated held-out VEPD, its interval, the presets paired, the floor (the
    table, and the scored study)."""
    records = [r for fold in folds for r in fold.records]
    draws = [[r for fold in folds for r in fold.draws[d]] for d in range(min(len(f.draws) for f in folds))]
    study = score_pairs(records, draws, setup)
    return result_table(study), study


# ------------------------------------------------------------------------------------ outputs
def provenance(result: FitResult) -> dict:
    """Where the fitted pair comes from: drive, runs, folds, budget, seeds, seed, software, date."""
    import datetime

    from ..report.provenance import software

    return {"command": "sim2real-eval fit", "drive": result.drive, "runs": list(result.runs),
            "folds": [{"fit": fold.fit_runs, "validation": fold.validation_runs} for fold in result.folds],
            "budget_per_fold": result.budget, "seeds_per_trial": result.seeds, "sampler_seed": result.seed,
            "software": software(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _preset_text(kind: str, pair: dict, record: dict, result: FitResult) -> str:
    """A preset file gps_noise_node / imu_noise_node / sensors.launch.py load as it is, provenance in
    its description and in a comment header."""
    from ..yamlio import dump_yaml

    software = record["software"]
    held = result.pooled["variants"].get(FITTED, {})
    description = (f"{kind.upper()} half of the pair fitted by sim2real-eval fit to {result.drive} "
                   f"({len(result.runs)} runs, {len(result.folds)} blocked folds, {result.budget} trials per "
                   f"fold, {result.seeds} seeds per trial, sampler seed {result.seed}; cross-validated "
                   f"held-out VEPD {held.get('VEPD', float('nan')):.4f}); sim2real-eval {software['version']}"
                   f"{' commit ' + software['commit'][:12] if software.get('commit') else ''}, "
                   f"{record['date_utc']}")
    spec = {"description": description, **pair[kind]}
    header = [f"# Fitted by sim2real-eval fit ({record['date_utc']}): {result.drive}",
              f"# runs: {len(result.runs)}; folds: {len(result.folds)} (blocked); budget: {result.budget} "
              f"trials per fold; seeds per trial: {result.seeds}; sampler seed: {result.seed}",
              f"# sim2real-eval {software['version']}, commit {software.get('commit') or 'unknown'}; "
              "the whole record is in fit.yaml beside this file"]
    return "\n".join(header) + "\n" + dump_yaml(_plain(spec))


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def record(result: FitResult, record_provenance: dict | None = None) -> dict:
    """fit.yaml: provenance, the parameters (per fold, fitted, spread, identified), the held-out VEPD per
    fold and pooled against the presets and the floor, the fitted pair."""
    return _plain({
        "provenance": record_provenance or provenance(result),
        "design": DESIGN,
        "identification_rule": (f"a parameter is not identified by this data when its fold values spread "
                                f"over more than {SPREAD_LIMIT:g} of its search range (log10 scale on log "
                                "ranges; a categorical one: the folds chose differently)"),
        "parameters": result.parameters,
        "initial_trials": list(result.folds[0].points),
        "folds": [{"fold": fold.index + 1, "fit_runs": fold.fit_runs, "validation_runs": fold.validation_runs,
                   "search": _search_record(fold.search),
                   "values": fold.values, "held_out": fold.validation} for fold in result.folds],
        "held_out_pooled": result.pooled,
        "refit": None if result.final is None else {
            "fit_runs": result.final.fit_runs, "search": _search_record(result.final.search),
            "values": result.final.values},
        "shortfall": None if result.shortfall is None else shortfall_record(result.shortfall),
        "wall_seconds": round(result.wall_seconds, 1), "executor": result.executor,
        "pair": result.pair,
    })


def _search_record(found) -> dict:
    return {"start_vepd": found.baseline.vepd, "best_vepd": found.best.vepd, "trials": len(found.trials),
            "best_trial": "start" if found.best_is_baseline else found.best.number}


def trials_csv(result: FitResult) -> str:
    """fold, trial, state, VEPD (mean over the seeds), W1, W2, parameters, seconds, error."""

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["fold", "trial", "state", "vepd", "w1", "w2", *PARAMS, "seconds", "enqueued", "error"])

    def fmt(value):
        return "" if value is None else value if isinstance(value, str) else repr(float(value))

    searches = list(result.folds) + ([result.final] if result.final is not None else [])
    for fold in searches:
        label = "all" if fold is result.final else fold.index + 1
        base = fold.search.baseline
        enqueued = list(fold.points)
        writer.writerow([label, "start", "complete", fmt(base.vepd), fmt(base.w1), fmt(base.w2),
                         *(fmt(fold.start.values[n]) for n in PARAMS), fmt(base.seconds), "", ""])
        for t in sorted(fold.search.trials, key=lambda t: t.number):
            values = {k.split(".", 1)[1]: v for k, v in t.values.items()}
            state = "complete" if t.vepd is not None else "failed"
            writer.writerow([label, t.number, state, fmt(t.vepd), fmt(t.w1), fmt(t.w2),
                             *(fmt(values.get(n)) for n in PARAMS), fmt(t.seconds),
                             enqueued[t.number] if t.number < len(enqueued) else "",
                             (t.error or "").replace("\n", " ")])
    return buffer.getvalue()


def write_outputs(result: FitResult, out, overwrite: bool = False) -> Path:
    """OUT/: fit_gps.yaml, fit_imu.yaml (presets), fit.yaml (the record), trials.csv, shortfall.png/.md/.json
    (the fitted pair's error statistics against the real sensors) — built in a temporary sibling and
    renamed on success, with fit's marker."""
    from ..atomic import atomic_directory
    from ..outputs import file_record, write_marker
    from ..yamlio import dump_yaml

    prov = provenance(result)
    with atomic_directory(out, overwrite=overwrite) as tmp:
        tmp.mkdir()
        (tmp / "fit_gps.yaml").write_text(_preset_text("gps", result.pair, prov, result), encoding="utf-8")
        (tmp / "fit_imu.yaml").write_text(_preset_text("imu", result.pair, prov, result), encoding="utf-8")
        (tmp / "fit.yaml").write_text(dump_yaml(record(result, prov)), encoding="utf-8")
        (tmp / "trials.csv").write_text(trials_csv(result), encoding="utf-8")
        if result.shortfall is not None:
            from ..calibrate.shortfall import shortfall_writers

            for path, write in shortfall_writers(result.shortfall, tmp).items():
                write(tmp / path.name)
        write_marker(tmp, COMMAND, {name: file_record(tmp / name) for name in OUTPUT_FILES
                                    if (tmp / name).exists()})
    return Path(out)


def _ci(interval) -> str:
    return "–" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]"


def table_lines(table: dict, indent: str = "  ") -> list:
    lines = []
    floor = table.get("floor")
    if floor:
        lines.append(f"{indent}judge-noise floor {floor['VEPD']:.4f} [{floor['interval'][0]:.4f}, "
                     f"{floor['interval'][1]:.4f}] (mean [range] over pairs of timing draws)")
    ordered = sorted(table["variants"].items(), key=lambda item: (item[0] != FITTED, item[1]["VEPD"]))
    for name, cell in ordered:
        line = f"{indent}{name:<18} VEPD {cell['VEPD']:.4f} {_ci(cell['VEPD_ci95'])}"
        if "fitted_minus" in cell:
            p = cell.get("fitted_minus_p")
            line += (f"   fitted − this {cell['fitted_minus']:+.4f} {_ci(cell['fitted_minus_ci95'])}"
                     f"{'' if p is None else f' p {p:.3g}'}")
        lines.append(line)
    return lines


def summary_lines(result: FitResult) -> list:
    """What ``fit`` prints: the folds' held-out VEPD against the presets and the floor, the pooled
    (cross-validated) one, each parameter with its spread and whether the folds agree on it."""
    lines = [f"fit: {len(result.runs)} runs of {result.drive}, {len(result.folds)} blocked folds, "
             f"{result.budget} trials per fold, {result.seeds} seeds per trial, seed {result.seed} "
             f"({result.wall_seconds:.0f} s, {result.executor})"]
    for fold in result.folds:
        search = fold.search
        lines.append(f"fold {fold.index + 1}: validate on {len(fold.validation_runs)} runs (search on "
                     f"{len(fold.fit_runs)}: start {search.baseline.vepd:.4f} → best {search.best.vepd:.4f})")
        lines += table_lines(fold.validation)
    lines.append(f"held out, every fold (K = {result.pooled['k']}: each run judged with the pair fitted "
                 "without it):")
    lines += table_lines(result.pooled)
    if result.final is not None:
        search = result.final.search
        lines.append(f"final pair: searched on all {len(result.final.fit_runs)} runs (start "
                     f"{search.baseline.vepd:.4f} → best {search.best.vepd:.4f}, in-sample; the held-out "
                     "estimate is the table above)")
    lines.append(f"parameters (fitted: the final search's; spread = fold max − min as a fraction of the "
                 f"search range; > {SPREAD_LIMIT:g}: not identified by this data):")
    for row in result.parameters:
        folds = ", ".join(_value(v) for v in row["folds"])
        verdict = "identified" if row["identified"] else "not identified by this data"
        lines.append(f"  {row['name']:<24} {_value(row['fitted'])} {row['unit']}  folds [{folds}]  spread "
                     f"{row['spread_of_range']:.2f}  {verdict}")
    if result.shortfall is not None:
        lines += shortfall_lines(result.shortfall)
    return lines


def _value(value) -> str:
    return value if isinstance(value, str) else f"{value:.4g}"


def shortfall_record(gap) -> dict:
    """fit.yaml's "shortfall": what the fitted families miss, per axis, and the held-out VEPD split."""
    from ..calibrate.shortfall import verdict_lines

    return {"files": ["shortfall.md", "shortfall.json", "shortfall.png"], "vepd": gap.vepd,
            "differs": gap.differing(), "verdict": verdict_lines(gap), "gps": gap.summary["gps"],
            "imu": gap.summary["imu"]}


def shortfall_lines(gap) -> list:
    """What ``fit`` prints of the shortfall: the held-out VEPD split and each axis the pair misses."""
    from ..calibrate.shortfall import verdict_lines

    split = gap.vepd or {}
    lines = []
    if split:
        rmse = split.get("mean_rmse_m_s") or {}
        lines.append(f"what the fitted families miss (shortfall.md; held-out VEPD {split['VEPD']:.4f} = W1/2 "
                     f"{split['W1_half']:.4f} + W2/2 {split['W2_half']:.4f}"
                     + (f"; mean per-run speed RMSE real {rmse['real']:.3f} vs fitted {rmse['sim']:.3f} m/s"
                        if rmse else "") + "):")
    verdicts = [f"  {line}" for line in verdict_lines(gap)] or ["  nothing beyond the stated factor"]
    return lines + verdicts


# ------------------------------------------------------------------------------------ the demo's hook
def fitted_variant(bags: list, demo_config, budget: int = DEFAULT_BUDGET, seeds: int = DEFAULT_SEEDS,
                   folds: int = DEFAULT_FOLDS, seed: int = 0, progress: bool = True):
    """The demo's real sample: the pair ``fit`` makes of the held-out windows ``bags`` (the demo file's
    ``real_sample.fit``), as the GPS study's variant ``fitted`` (``replay.offline.Replacement``)."""
    from ..replay.real_bag import Replacement

    result = fit(bags, setup_from_demo(demo_config), folds=folds, budget=budget, seeds=seeds, seed=seed,
                 progress=progress, drive="held-out windows")
    return Replacement(dict(result.pair), name=FITTED)
