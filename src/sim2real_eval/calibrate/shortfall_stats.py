"""The statistics of ``calibrate.shortfall`` (why a model falls short of a real sensor; issue 31, item 2): the
real sensor's errors and a GPS + IMU model's errors on the same ground truth, side by side, and the split of
the VEPD that remains.

Input: real segments (``SensorSegment``: a truth, the real fixes in ENU at the truth's datum and the real
IMU in base_link, one clock; ``segments_from_bags`` reads imported runs) and a model pair (GPS and IMU
specs as ``models.load_gps_model`` / ``load_imu_model`` take them: a preset name, a YAML path or a dict).
The model is simulated on each segment's truth (``simulate_segment``): its fixes at the real receiver's
rate and datum, its IMU at the real IMU's stamps, mounted in base_link (the real IMU's frame), every
stream seeded ``models.sensor_seed(seed, "shortfall", segment index, sensor)``.  Both sides then go
through the same statistics:

- GPS error e = fix − truth(stamp) per ENU axis (m), the fixes as stamped (what the judge fuses), the
  mean of each segment removed (the bias is reported apart):
  - power spectral density: ``scipy.signal.welch`` (Hann window, 50 % overlap, constant detrend,
    one-sided density, m²/Hz) on segments of ``psd_segment_s`` (10 s; shortened to the shortest
    series), averaged over every Welch segment of every drive segment;
  - autocorrelation ρ(lag) (the biased estimator of ``calibrate.gps.autocorrelation``), pooled over
    segments as Σ acov / Σ var, lags up to ``max_lag_s`` (10 s; at most half the shortest segment);
    its correlation time is the first lag where ρ falls below 1/e (linear between lags; for
    ρ = e^{−lag/τ} it is τ; a white error gives less than one fix period); none when ρ stays above;
- IMU error r = IMU − truth (angular velocity rad/s, specific force m/s², base_link) per axis: the
  overlapping Allan deviation (``calibrate.imu.overlapping_adev``, allantools) pooled over segments —
  σ²(τ) = Σ terms·σ²_seg(τ) / Σ terms — at log-spaced τ from 1/rate to a quarter of the shortest
  segment.

``summary`` compares them per axis: ratios model/real of the std, of the correlation time, of the PSD
power below and above ``BAND_SPLIT_HZ``, of the Allan deviation at the shortest τ, at the τ nearest 1 s
and at the minimum, and the Allan slope of the first decade; a ratio outside [1/2, 2] (or a slope apart
by more than 0.25, or a correlation seen on one side only) is listed under ``differs``: what this model
family does not reproduce of this sensor.

``vepd_split`` reads a scored study (``metrics.StudyResult`` or a vepd.json document): VEPD = W1/2 + W2/2
(docs/scoring.md), W1 the Wasserstein distance of the per-run velocity RMSE E, W2 that of the
Wiener-entropy differences D; each half's share of the VEPD, and (from a StudyResult) the mean E and D
of each side, which says whether the simulated runs are too good or too bad.

``calibrate.shortfall`` turns the result into shortfall.png, shortfall.md, shortfall.json and the
report's section.
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field

import numpy as np

from ..errors import UserError
from ..geodesy import geodetic_to_enu
from ..metrics import REAL, separation
from ..stamps import ns_to_seconds, seconds_to_ns
from .imu import overlapping_adev

ENU_AXES = ("east", "north", "up")
IMU_AXES = ("gyro_x", "gyro_y", "gyro_z", "accel_x", "accel_y", "accel_z")
IMU_UNITS = ("rad/s",) * 3 + ("m/s²",) * 3
DEFAULT_PSD_SEGMENT_S = 10.0
DEFAULT_MAX_LAG_S = 10.0
ALLAN_FRACTION = 4          # largest τ = the shortest segment / this
ALLAN_POINTS_PER_DECADE = 8
BAND_SPLIT_HZ = 0.5         # GPS PSD: "slow" (≤) and "fast" (>) power
FACTOR = 2.0                # a ratio outside [1/FACTOR, FACTOR] differs
SLOPE_TOLERANCE = 0.25
MIN_GPS_FIXES = 8           # per segment: fewer cannot give a spectrum
MIN_IMU_SAMPLES = 20


# --------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class SensorSegment:
    """One stretch of a drive: its truth (``truth.GroundTruth``) and a GPS and IMU on the truth's clock —
    fixes as ENU (m) at ``datum`` (the truth's origin), IMU in base_link."""

    source: str
    truth: object
    datum: tuple            # (lat deg, lon deg, alt m)
    gps_t: np.ndarray       # (N,) s, header stamps
    gps_enu: np.ndarray     # (N, 3) m
    imu_t: np.ndarray       # (M,) s
    gyro: np.ndarray        # (M, 3) rad/s
    accel: np.ndarray       # (M, 3) m/s², specific force


def segment_from_bag(path, gps_topic: str = "/fix", imu_topic: str = "/imu", truth_source: str = "auto",
                     static_tfs=()) -> SensorSegment:
    """A real segment from a bag with /fix, /imu and a ground truth with its datum (an imported run;
    ``calibrate.drive.read_drive`` reads it, the IMU rotated into base_link with ``static_tfs``)."""
    from .drive import read_drive

    return segment_of_drive(*read_drive(path, gps_topic, imu_topic, truth_source, static_tfs), str(path))


def segment_of_drive(data, truth, datum, source: str) -> SensorSegment:
    """A real segment from what ``calibrate.drive.read_drive`` returns (sensor arrays, truth, datum)."""
    g = data.gps
    enu = geodetic_to_enu(g.latitude, g.longitude, g.altitude, datum)
    return SensorSegment(source, truth, tuple(float(v) for v in datum), np.asarray(g.t, dtype=float), enu,
                         np.asarray(data.imu.t, dtype=float), np.asarray(data.imu.gyro, dtype=float),
                         np.asarray(data.imu.accel, dtype=float))


def segments_from_bags(paths, **options) -> list:
    """``segment_from_bag`` of every path (the windows of one drive, the runs of an import)."""
    paths = list(paths)
    if not paths:
        raise UserError("shortfall: no real bag given")
    return [segment_from_bag(path, **options) for path in paths]


def _nominal_rate(t: np.ndarray, what: str) -> float:
    steps = np.diff(np.asarray(t, dtype=float))
    if len(steps) < 1 or not np.median(steps) > 0:
        raise UserError(f"{what}: stamps are not increasing; cannot tell its rate")
    return 1.0 / float(np.median(steps))


def simulate_segment(segment: SensorSegment, gps, imu, seed: int, index: int) -> SensorSegment:
    """The model pair on ``segment``'s truth: fixes at the real receiver's rate and datum (its own epoch
    ticks inside the truth span), the IMU at the real IMU's stamps, mounted in base_link."""
    from ..models import load_gps_model, load_imu_model, sensor_seed

    rate = _nominal_rate(segment.gps_t, f"{segment.source}: GPS")
    gps_model = load_gps_model(gps, sensor_seed(seed, "shortfall", index, "gps"), datum=list(segment.datum),
                               rate=rate)
    fixes = gps_model.sample(segment.truth)
    enu = geodetic_to_enu(fixes.latitude, fixes.longitude, fixes.altitude, segment.datum)
    imu_model = load_imu_model(imu, sensor_seed(seed, "shortfall", index, "imu"),
                               mounting_rpy=[0.0, 0.0, 0.0])
    t = segment.imu_t
    inside = (t >= segment.truth.t[0]) & (t <= segment.truth.t[-1])
    samples = imu_model.sample(segment.truth, stamps_ns=seconds_to_ns(t[inside]))
    return SensorSegment(f"{segment.source} (model)", segment.truth, segment.datum,
                         ns_to_seconds(fixes.stamp_ns), enu, ns_to_seconds(samples.stamp_ns),
                         np.asarray(samples.angular_velocity, dtype=float),
                         np.asarray(samples.linear_acceleration, dtype=float))


def gps_errors(segment: SensorSegment) -> tuple:
    """(t s, e (N, 3) m): fix − truth at the fix stamps inside the truth span, finite fixes only."""
    t, enu = segment.gps_t, segment.gps_enu
    keep = (t >= segment.truth.t[0]) & (t <= segment.truth.t[-1]) & np.isfinite(enu).all(axis=1)
    return t[keep], enu[keep] - segment.truth.interpolate(t[keep]).position


def imu_errors(segment: SensorSegment) -> tuple:
    """(t s, r (M, 6)): IMU − truth at the IMU stamps inside the truth span, columns ``IMU_AXES``."""
    t = segment.imu_t
    keep = (t >= segment.truth.t[0]) & (t <= segment.truth.t[-1])
    reference = segment.truth.interpolate(t[keep])
    residual = np.column_stack([segment.gyro[keep] - reference.angular_velocity,
                                segment.accel[keep] - reference.specific_force])
    return t[keep], residual


# ----------------------------------------------------------------------------------------- math
def welch_segments(n: int, nperseg: int) -> int:
    """How many Hann segments (50 % overlap) ``scipy.signal.welch`` averages over ``n`` samples."""
    step = nperseg - nperseg // 2
    return 1 + (n - nperseg) // step


def pooled_psd(series, rate: float, nperseg: int) -> tuple:
    """(f Hz, PSD unit²/Hz): Welch (Hann, 50 % overlap, constant detrend, one-sided density) of each
    series, averaged with the weight of its number of Welch segments (every Welch segment counts once)."""
    from scipy.signal import welch

    total, weights, freq = None, 0, None
    for x in series:
        x = np.asarray(x, dtype=float)
        if len(x) < nperseg:
            continue
        freq, psd = welch(x, fs=rate, window="hann", nperseg=nperseg, noverlap=nperseg // 2,
                          detrend="constant", scaling="density")
        count = welch_segments(len(x), nperseg)
        total = psd * count if total is None else total + psd * count
        weights += count
    if total is None:
        raise UserError(f"shortfall: no series has the {nperseg} samples of one spectrum segment")
    return freq, total / weights


def pooled_autocorrelation(series, max_lag: int) -> np.ndarray:
    """ρ(k), k = 0..max_lag, pooled over series: Σ_s acov_s(k) / Σ_s acov_s(0) with each series' own
    mean removed (the biased estimator of ``calibrate.gps.autocorrelation``)."""
    from .gps import autocorrelation

    total, energy = np.zeros(max_lag + 1), 0.0
    for x in series:
        x = np.asarray(x, dtype=float)
        if len(x) <= max_lag:
            continue
        variance = float(np.sum((x - x.mean()) ** 2))
        total += autocorrelation(x, max_lag) * variance
        energy += variance
    if energy <= 0:
        return np.zeros(max_lag + 1)
    return total / energy


def correlation_time(lags: np.ndarray, rho: np.ndarray) -> float | None:
    """The first lag (s) where ρ falls below 1/e, linear between lags; None when it stays above."""
    level = np.exp(-1.0)
    below = np.flatnonzero(np.asarray(rho) < level)
    if below.size == 0 or below[0] == 0:
        return None
    i = int(below[0])
    r0, r1 = rho[i - 1], rho[i]
    return float(lags[i - 1] + (lags[i] - lags[i - 1]) * (r0 - level) / (r0 - r1))


def allan_taus(rate: float, shortest_s: float) -> np.ndarray:
    """Log-spaced τ (multiples of 1/rate) from 1/rate to ``shortest_s``/ALLAN_FRACTION."""
    max_tau = shortest_s / ALLAN_FRACTION
    if max_tau < 2.0 / rate:
        raise UserError(f"shortfall: IMU segments of {shortest_s:.2f} s are too short for an Allan deviation")
    count = int(np.ceil(np.log10(max_tau * rate) * ALLAN_POINTS_PER_DECADE)) + 1
    return np.unique(np.round(np.logspace(0.0, np.log10(max_tau * rate), count))) / rate


def pooled_allan(series, rate: float, taus) -> np.ndarray:
    """Overlapping Allan deviation at ``taus`` pooled over series: √(Σ terms·σ²(τ) / Σ terms); NaN at a
    τ no series is long enough for."""
    taus = np.asarray(taus, dtype=float)
    weighted, terms = np.zeros(len(taus)), np.zeros(len(taus))
    for x in series:
        try:  # allantools prints a line before it raises: keep it off the user's console
            with contextlib.redirect_stdout(io.StringIO()):
                out_taus, adev, n = overlapping_adev(x, rate, taus)
        except UserWarning:  # no τ with two terms or more in this series
            continue
        index = np.searchsorted(np.round(taus * rate), np.round(out_taus * rate))
        weighted[index] += n * adev ** 2
        terms[index] += n
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(terms > 0, np.sqrt(weighted / np.where(terms > 0, terms, 1.0)), np.nan)


def log_slope(taus: np.ndarray, adev: np.ndarray, decades: float = 1.0) -> float | None:
    """Least-squares slope of log σ against log τ over the first ``decades`` of τ."""
    use = np.isfinite(adev) & (adev > 0) & (taus <= taus[0] * 10 ** decades)
    if use.sum() < 2:
        return None
    return float(np.polyfit(np.log10(taus[use]), np.log10(adev[use]), 1)[0])


# ----------------------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class Settings:
    gps_rate_hz: float
    imu_rate_hz: float
    psd_segment: int            # samples per Welch segment (the stated segment length × rate, capped)
    psd_segment_s: float
    max_lag: int                # autocorrelation lags 0..max_lag fix periods
    taus_s: np.ndarray

    def as_dict(self) -> dict:
        return {"gps_rate_hz": self.gps_rate_hz, "imu_rate_hz": self.imu_rate_hz,
                "psd": {"method": "scipy.signal.welch, Hann, 50 % overlap, constant detrend, "
                                  "one-sided density",
                        "segment_samples": self.psd_segment, "segment_s": self.psd_segment_s},
                "autocorrelation": {"max_lag_s": self.max_lag / self.gps_rate_hz,
                                    "estimator": "biased, pooled over segments (Σ acov / Σ var)"},
                "allan": {"method": "overlapping (allantools.oadev), pooled over segments by terms",
                          "tau_s": [float(v) for v in self.taus_s]}}


@dataclass(frozen=True)
class SideStatistics:
    """Error statistics of one side (the real sensor or the model), per axis."""

    gps_bias: np.ndarray        # (3,) m, mean of fix − truth
    gps_std: np.ndarray         # (3,) m, of the segment-demeaned error
    psd_f: np.ndarray           # (F,) Hz
    psd: np.ndarray             # (3, F) m²/Hz
    lags_s: np.ndarray          # (L,)
    rho: np.ndarray             # (3, L)
    correlation_time: tuple     # 3 × (s | None)
    imu_bias: np.ndarray        # (6,)
    imu_std: np.ndarray         # (6,)
    taus_s: np.ndarray          # (T,)
    adev: np.ndarray            # (6, T)

    def as_dict(self) -> dict:
        gps = {axis: {"bias_m": self.gps_bias[i], "std_m": self.gps_std[i],
                      "correlation_time_s": self.correlation_time[i], "psd_m2_per_hz": self.psd[i],
                      "autocorrelation": self.rho[i]} for i, axis in enumerate(ENU_AXES)}
        imu = {axis: {"bias": self.imu_bias[i], "std": self.imu_std[i], "unit": IMU_UNITS[i],
                      "allan_deviation": self.adev[i]} for i, axis in enumerate(IMU_AXES)}
        return {"gps": dict(gps, psd_frequency_hz=self.psd_f, lag_s=self.lags_s),
                "imu": dict(imu, tau_s=self.taus_s)}


def _demeaned_std(series) -> float:
    energy = sum(float(np.sum((x - x.mean()) ** 2)) for x in series)
    count = sum(len(x) - 1 for x in series)
    return float(np.sqrt(energy / count)) if count > 0 else float("nan")


def side_statistics(errors: list, settings: Settings) -> SideStatistics:
    """The statistics of one side from its per-segment errors [(gps e (N, 3), imu r (M, 6))]."""
    gps = [e for e, _ in errors]
    imu = [r for _, r in errors]
    psd_f, psd, rho = None, [], []
    for i in range(3):
        axis = [e[:, i] for e in gps]
        psd_f, p = pooled_psd(axis, settings.gps_rate_hz, settings.psd_segment)
        psd.append(p)
        rho.append(pooled_autocorrelation(axis, settings.max_lag))
    lags = np.arange(settings.max_lag + 1) / settings.gps_rate_hz
    adev = [pooled_allan([r[:, i] for r in imu], settings.imu_rate_hz, settings.taus_s) for i in range(6)]
    all_gps, all_imu = np.concatenate(gps), np.concatenate(imu)
    gps_std = np.array([_demeaned_std([e[:, i] for e in gps]) for i in range(3)])
    imu_std = np.array([_demeaned_std([r[:, i] for r in imu]) for i in range(6)])
    return SideStatistics(
        gps_bias=all_gps.mean(axis=0), gps_std=gps_std,
        psd_f=psd_f, psd=np.array(psd), lags_s=lags, rho=np.array(rho),
        correlation_time=tuple(correlation_time(lags, r) for r in rho),
        imu_bias=all_imu.mean(axis=0), imu_std=imu_std,
        taus_s=settings.taus_s, adev=np.array(adev))


def _settings(real: list, model: list, gps_rate: float, imu_rate: float, psd_segment_s: float,
              max_lag_s: float) -> Settings:
    shortest_gps = min(len(e) for e, _ in real + model)
    shortest_imu = min(len(r) for _, r in real + model)
    psd_segment = int(min(round(psd_segment_s * gps_rate), shortest_gps))
    max_lag = int(min(round(max_lag_s * gps_rate), shortest_gps // 2))
    if psd_segment < MIN_GPS_FIXES or max_lag < 2:
        raise UserError(f"shortfall: the shortest GPS segment has {shortest_gps} fixes; need at least "
                        f"{MIN_GPS_FIXES} for a spectrum")
    taus = allan_taus(imu_rate, shortest_imu / imu_rate)
    return Settings(gps_rate, imu_rate, psd_segment, psd_segment / gps_rate, max_lag, taus)


def _segment_errors(segment: SensorSegment) -> tuple:
    _t, e = gps_errors(segment)
    _t, r = imu_errors(segment)
    if len(e) < MIN_GPS_FIXES or len(r) < MIN_IMU_SAMPLES:
        raise UserError(f"{segment.source}: {len(e)} fixes and {len(r)} IMU samples inside the truth span; "
                        f"need at least {MIN_GPS_FIXES} and {MIN_IMU_SAMPLES}")
    return e, r


# -------------------------------------------------------------------------------------- summary
def _ratio(model, real) -> float | None:
    if model is None or real is None or not (np.isfinite(model) and np.isfinite(real)) or real == 0:
        return None
    return float(model / real)


def _entry(real, model) -> dict:
    real = None if real is None or not np.isfinite(real) else float(real)
    model = None if model is None or not np.isfinite(model) else float(model)
    return {"real": real, "model": model, "ratio": _ratio(model, real)}


def band_power(freq: np.ndarray, psd: np.ndarray, low: bool) -> float:
    """Σ PSD·Δf over 0 < f ≤ BAND_SPLIT_HZ (``low``) or f > BAND_SPLIT_HZ (the variance in that band);
    NaN when no bin lies there."""
    use = (freq > 0) & (freq <= BAND_SPLIT_HZ) if low else freq > BAND_SPLIT_HZ
    if not use.any():
        return float("nan")
    return float(np.sum(psd[use]) * (freq[1] - freq[0]))


def _gps_axis_summary(real: SideStatistics, model: SideStatistics, i: int) -> dict:
    entry = {"bias_m": _entry(real.gps_bias[i], model.gps_bias[i]),
             "std_m": _entry(real.gps_std[i], model.gps_std[i]),
             "correlation_time_s": _entry(real.correlation_time[i], model.correlation_time[i]),
             "power_slow_m2": _entry(band_power(real.psd_f, real.psd[i], True),
                                     band_power(model.psd_f, model.psd[i], True)),
             "power_fast_m2": _entry(band_power(real.psd_f, real.psd[i], False),
                                     band_power(model.psd_f, model.psd[i], False))}
    differs = [name for name in ("std_m", "power_slow_m2", "power_fast_m2", "correlation_time_s")
               if _outside(entry[name]["ratio"])]
    seen = (real.correlation_time[i] is None, model.correlation_time[i] is None)
    if seen[0] != seen[1]:
        differs.append("correlation_time_s")
    entry["differs"] = differs
    return entry


def _outside(ratio) -> bool:
    return ratio is not None and not 1.0 / FACTOR <= ratio <= FACTOR


def _nearest(taus: np.ndarray, adev: np.ndarray, tau: float) -> tuple:
    finite = np.flatnonzero(np.isfinite(adev))
    j = finite[int(np.argmin(np.abs(np.log(taus[finite] / tau))))]
    return float(taus[j]), float(adev[j])


def _imu_axis_summary(real: SideStatistics, model: SideStatistics, i: int) -> dict:
    taus = real.taus_s
    tau_1s, real_1s = _nearest(taus, real.adev[i], 1.0)
    _tau, model_1s = _nearest(taus, model.adev[i], 1.0)
    real_min, model_min = int(np.nanargmin(real.adev[i])), int(np.nanargmin(model.adev[i]))
    slopes = (log_slope(taus, real.adev[i]), log_slope(taus, model.adev[i]))
    entry = {"unit": IMU_UNITS[i], "bias": _entry(real.imu_bias[i], model.imu_bias[i]),
             "std": _entry(real.imu_std[i], model.imu_std[i]),
             "adev_shortest_tau": dict(_entry(real.adev[i][0], model.adev[i][0]), tau_s=float(taus[0])),
             "adev_near_1s": dict(_entry(real_1s, model_1s), tau_s=tau_1s),
             "adev_minimum": dict(_entry(real.adev[i][real_min], model.adev[i][model_min]),
                                  tau_s={"real": float(taus[real_min]), "model": float(taus[model_min])}),
             "slope_first_decade": {"real": slopes[0], "model": slopes[1]}}
    differs = [name for name in ("std", "adev_shortest_tau", "adev_near_1s", "adev_minimum")
               if _outside(entry[name]["ratio"])]
    if None not in slopes and abs(slopes[0] - slopes[1]) > SLOPE_TOLERANCE:
        differs.append("slope_first_decade")
    entry["differs"] = differs
    return entry


def vepd_split(study, variant: str) -> dict:
    """VEPD = W1/2 + W2/2 of ``variant`` in a scored study (``metrics.StudyResult`` or a vepd.json
    document): each half and its share; from a StudyResult also the mean per-run E (RMSE, m/s) and D
    (entropy difference) of the real and the simulated runs, and the judge-noise floor's upper end."""
    combined = study.combined if hasattr(study, "combined") else study.get("combined", {})
    if variant not in combined:
        raise UserError(f"shortfall: variant {variant!r} is not in the scored study "
                        f"(variants: {', '.join(sorted(combined)) or 'none'})")
    row = combined[variant]
    w1, w2, vepd = float(row["W1"]), float(row["W2"]), float(row["VEPD"])
    split = {"variant": variant, "VEPD": vepd, "W1": w1, "W2": w2, "W1_half": w1 / 2, "W2_half": w2 / 2,
             "W1_share": (w1 / 2) / vepd if vepd > 0 else None,
             "W2_share": (w2 / 2) / vepd if vepd > 0 else None}
    if hasattr(study, "runs"):
        real = [r.score for r in study.runs if r.side == REAL]
        sim = [r.score for r in study.runs if r.side != REAL and r.variant == variant]
        split["mean_rmse_m_s"] = {"real": float(np.mean([s.rmse for s in real])),
                                  "sim": float(np.mean([s.rmse for s in sim]))}
        split["mean_D"] = {"real": float(np.mean([s.D for s in real])),
                           "sim": float(np.mean([s.D for s in sim]))}
        split["floor_upper"] = separation.floor_threshold(study, variant)
    return split


@dataclass
class Shortfall:
    """``error_statistics``'s result: both sides' statistics, their comparison, the VEPD split."""

    gps_model: object
    imu_model: object
    seed: int
    sources: list
    settings: Settings
    real: SideStatistics
    model: SideStatistics
    summary: dict                       # {"gps": {axis: …}, "imu": {axis: …}}
    vepd: dict | None = None            # vepd_split, when a scored study was given
    notes: list = field(default_factory=list)

    def differing(self) -> dict:
        """{axis: [property, …]} of every axis where the model differs from the real sensor."""
        found = {}
        for group in ("gps", "imu"):
            for axis, entry in self.summary[group].items():
                if entry["differs"]:
                    found[axis] = list(entry["differs"])
        return found

    def as_dict(self) -> dict:
        return _plain({"gps_model": self.gps_model, "imu_model": self.imu_model, "seed": self.seed,
                       "sources": self.sources, "settings": self.settings.as_dict(),
                       "summary": self.summary, "differs": self.differing(), "vepd": self.vepd,
                       "real": self.real.as_dict(), "model": self.model.as_dict(), "notes": self.notes})


def _plain(value):
    """JSON-safe: numpy → Python, NaN/inf → None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def error_statistics(segments, gps, imu, seed: int = 0, study=None, variant: str | None = None,
                     psd_segment_s: float = DEFAULT_PSD_SEGMENT_S,
                     max_lag_s: float = DEFAULT_MAX_LAG_S) -> Shortfall:
    """The real sensor's and the model pair's errors on the same truth, side by side (module docstring).

    ``segments``: real ``SensorSegment``s (``segments_from_bags``); ``gps``/``imu``: model specs (preset
    name, YAML path or dict); ``seed``: the models' streams; ``study`` + ``variant``: a scored study
    (StudyResult or vepd.json document) whose VEPD of ``variant`` is split (``vepd_split``)."""
    segments = list(segments)
    if not segments:
        raise UserError("shortfall: no real segment given")
    if not psd_segment_s > 0 or not max_lag_s > 0:
        raise UserError(f"shortfall: psd_segment_s and max_lag_s must be > 0, got {psd_segment_s!r}, "
                        f"{max_lag_s!r}")
    real_errors = [_segment_errors(s) for s in segments]
    model_errors = [_segment_errors(simulate_segment(s, gps, imu, seed, k)) for k, s in enumerate(segments)]
    gps_rate = float(np.median([_nominal_rate(s.gps_t, f"{s.source}: GPS") for s in segments]))
    imu_rate = float(np.median([_nominal_rate(s.imu_t, f"{s.source}: IMU") for s in segments]))
    settings = _settings(real_errors, model_errors, gps_rate, imu_rate, psd_segment_s, max_lag_s)
    real, model = side_statistics(real_errors, settings), side_statistics(model_errors, settings)
    summary = {"gps": {axis: _gps_axis_summary(real, model, i) for i, axis in enumerate(ENU_AXES)},
               "imu": {axis: _imu_axis_summary(real, model, i) for i, axis in enumerate(IMU_AXES)}}
    notes = []
    if settings.psd_segment_s < psd_segment_s:
        notes.append(f"PSD segment shortened to {settings.psd_segment_s:.3g} s (the shortest series)")
    split = None
    if study is not None:
        if variant is None:
            raise UserError("shortfall: a scored study needs the variant whose VEPD is split")
        split = vepd_split(study, variant)
    return Shortfall(_spec_record(gps), _spec_record(imu), int(seed), [s.source for s in segments], settings,
                     real, model, summary, split, notes)


def _spec_record(spec):
    return spec if isinstance(spec, (str, dict)) else str(spec)


def spec_name(spec) -> str:
    """A model spec as a short name: the preset name or path, or a dict's ``description`` head."""
    if isinstance(spec, dict):
        return str(spec.get("name") or (str(spec.get("description", "")).split(" (")[0][:60] or "model"))
    return str(spec)


def closest_variant(study, exclude=()) -> str:
    """The variant of a scored study with the smallest VEPD, among those not in ``exclude``."""
    candidates = {v: row["VEPD"] for v, row in study.combined.items() if v not in exclude}
    if not candidates:
        raise UserError("shortfall: the scored study has no variant to compare")
    return min(candidates, key=lambda v: (candidates[v], v))
