"""GPS model: ground truth -> NavSatFix content (robot-side: Python 3.8, numpy only).

Position noise and covariance model are independent choices (``position_noise``, ``covariance``);
the paper's five variants are presets in ``config/sensors/gps``.  Noise is added in metres in the
local ENU frame once per published sample (the random walk integrates on its own sub-step clock),
then converted to lat/lon/alt at the datum (WGS-84 by default, Chrono's sphere on request).

Parameters (YAML keys):
  rate (Hz, 10)  datum [lat, lon, alt] (the paper's sim reference 43.070, −89.400, 260 m)
  geodesy wgs84|chrono_sphere   frame_id "gps"   status fix|sbas_fix|gbas_fix   service gps|…
  latency (s, 0): receive_ns = stamp_ns + latency
  stamp_lag (s, 0), stamp_jitter (s, 0): header stamp = fix epoch + stamp_lag + stamp_jitter·u,
      u ~ U[−1, 1] per fix (a driver stamping at reception: the position is older than its stamp)
  position_noise {model: none|gaussian|random_walk|gauss_markov|gz_gaussian, …}   (see models.noise)
  noise_frame enu|geodetic (enu): enu adds the position noise in metres east/north/up before the
      conversion; geodetic adds its columns as (Δlatitude °, Δlongitude °, Δaltitude m) to the converted
      fix, as CARLA's GNSS and gz-sensors' NavSat do
  covariance {model: zeros|hdop|diagonal|nmea|ublox|noise, …}   (noise: the position noise's own
      stationary variance per axis, DIAGONAL_KNOWN: a receiver that reports its true accuracy)
  outages [[start, end], …] seconds since the first fix; outage_mode no_fix|drop
  dropout_probability (0): each fix is independently not published with this probability
  degradation: a GNSS degradation layer (outages, multipath jumps, degraded status/covariance): a name
      of config/degradation, a YAML path or a mapping (see models.degradation)
"""

from __future__ import annotations

import math
import warnings
from typing import Dict

import numpy as np

from ..errors import DataWarning, UserError
from ..geodesy import MODELS as EARTH_MODELS
from ..geodesy import PAPER_SIM_DATUM, as_datum, enu_to_geodetic, geodetic_to_enu
from ..stamps import period_ns
from ..truth import GroundTruth
from ..yamlio import Section
from . import samples as S
from .base import (
    SampleClock,
    SensorModel,
    model_rate,
    resolve_spec,
)
from .degradation import build_degradation
from .noise_config import DIVERGED_POSITION_ERROR_M, POSITION_MODELS, build_noise
from .seeding import as_seed_sequence, child, generator

STATUS = {
    "no_fix": S.STATUS_NO_FIX,
    "fix": S.STATUS_FIX,
    "sbas_fix": S.STATUS_SBAS_FIX,
    "gbas_fix": S.STATUS_GBAS_FIX,
}
SERVICE = {
    "gps": S.SERVICE_GPS,
    "glonass": S.SERVICE_GLONASS,
    "compass": S.SERVICE_COMPASS,
    "galileo": S.SERVICE_GALILEO,
}
COVARIANCE_TYPE = {
    "unknown": S.COVARIANCE_TYPE_UNKNOWN,
    "approximated": S.COVARIANCE_TYPE_APPROXIMATED,
    "diagonal_known": S.COVARIANCE_TYPE_DIAGONAL_KNOWN,
    "known": S.COVARIANCE_TYPE_KNOWN,
}
# nmea_navsat_driver default epe (m) per GGA fix quality.
NMEA_EPE = {"invalid": 1e6, "sps": 4.0, "dgps": 0.1, "rtk_fixed": 0.02, "rtk_float": 4.0, "waas": 3.0}
# AirSim HDOP low-pass parameter sets: (H0, H∞, τ s).
HDOP_PARAMETER_SETS = {"calibrated": (100.0, 0.85, 12.4), "default": (100.0, 0.1, 0.9)}


def lagged_stamps(epoch_ns: np.ndarray, lag: float, jitter: float, uniform: np.ndarray) -> np.ndarray:
    """Header stamps of fixes taken at ``epoch_ns`` and stamped when read: epoch + round((lag +
    jitter·u)·1e9) ns with u ∈ [−1, 1] per fix (``uniform``).  The position then refers to an instant
    ``lag ± jitter`` before its stamp.  The one implementation of this stamping: the GPS model and the
    reference generator (``reference._reference_gps``) both use it."""
    offset = lag + jitter * np.asarray(uniform, dtype=float)
    return np.asarray(epoch_ns, dtype=np.int64) + np.round(offset * 1e9).astype(np.int64)


def _diagonal(variances: np.ndarray) -> np.ndarray:
    """(N, 3) variances -> (N, 9) row-major diagonal covariance."""
    cov = np.zeros((variances.shape[0], 9))
    cov[:, [0, 4, 8]] = variances
    return cov


class Covariance:
    """Reported covariance: all zeros, type UNKNOWN (Chrono's and the paper's "zero matrix")."""

    name = "zeros"

    def __init__(self):
        self.params: Dict = {"model": self.name}

    def apply(self, dt: np.ndarray, since_first: np.ndarray):
        """(covariance (N, 9), type (N,), published (N,) bool)."""
        n = len(dt)
        return (
            np.zeros((n, 9)),
            np.full(n, S.COVARIANCE_TYPE_UNKNOWN, dtype=np.uint8),
            np.ones(n, dtype=bool),
        )


class FixedCovariance(Covariance):
    """A constant diagonal: diagonal (σ given), nmea (driver formula) or ublox (hAcc/vAcc)."""

    def __init__(self, name: str, variances, cov_type: int, params: Dict):
        super().__init__()
        self.name = name
        self.variances = np.asarray(variances, dtype=float)
        self.cov_type = cov_type
        self.params = {"model": name, **params}

    def apply(self, dt, since_first):
        n = len(dt)
        return (
            _diagonal(np.tile(self.variances, (n, 1))),
            np.full(n, self.cov_type, dtype=np.uint8),
            np.ones(n, dtype=bool),
        )


class HdopCovariance(Covariance):
    """AirSim-style HDOP low-pass, reported through nmea_navsat_driver's GGA formula.

    paper timing (default): at each published sample, α = e^(−dt/τ), H ← α·H + (1 − α)·H∞, H from H0.
    airsim timing: H is filtered every physics step (physics_rate, 50 Hz) from the first fix, read with
    ``latency`` (0.2 s) delay, and nothing is published during the first ``startup_delay`` (1 s):
    H(t) = H∞ + (H0 − H∞)·e^(−n/(physics_rate·τ)), n = ⌊(t − latency)·physics_rate⌋ ≥ 0.
    Covariance diag: (epe·H)², (epe·H)², (altitude_factor·epe·H)², type APPROXIMATED.  epe = 0.02 m
    (RTK fixed) and altitude_factor = 2 are the paper's Chrono handler; the driver itself uses 4.
    (The paper text writes σ = (0.02·H)²; the code's std is 0.02·H, i.e. variance (0.02·H)².)
    """

    name = "hdop"

    def __init__(
        self,
        h0,
        h_inf,
        tau,
        epe,
        altitude_factor,
        timing,
        physics_rate,
        latency,
        startup_delay,
        parameter_set,
    ):
        super().__init__()
        self.h0, self.h_inf, self.tau = float(h0), float(h_inf), float(tau)
        self.epe, self.altitude_factor = float(epe), float(altitude_factor)
        self.timing = timing
        self.physics_rate, self.latency, self.startup_delay = (
            float(physics_rate),
            float(latency),
            float(startup_delay),
        )
        self.hdop = self.h0
        self.params.update(
            parameter_set=parameter_set,
            h0=self.h0,
            h_inf=self.h_inf,
            tau=self.tau,
            epe=self.epe,
            altitude_factor=self.altitude_factor,
            timing=timing,
        )
        if timing == "airsim":
            self.params.update(
                physics_rate=self.physics_rate, latency=self.latency, startup_delay=self.startup_delay
            )

    def hdop_values(self, dt, since_first) -> np.ndarray:
        n = len(dt)
        if self.timing == "airsim":
            steps = np.maximum(np.floor((since_first - self.latency) * self.physics_rate + 1e-9), 0.0)
            return self.h_inf + (self.h0 - self.h_inf) * np.exp(-steps / (self.physics_rate * self.tau))
        out = np.empty(n)
        h = self.hdop
        for k in range(n):
            alpha = math.exp(-dt[k] / self.tau)
            h = alpha * h + (1.0 - alpha) * self.h_inf
            out[k] = h
        self.hdop = h
        return out

    def apply(self, dt, since_first):
        hdop = self.hdop_values(dt, since_first)
        std_h = self.epe * hdop
        variances = np.stack([std_h**2, std_h**2, (self.altitude_factor * std_h) ** 2], axis=-1)
        published = np.ones(len(dt), dtype=bool)
        if self.timing == "airsim":
            published = since_first >= self.startup_delay - 1e-9
        return (
            _diagonal(variances),
            np.full(len(dt), S.COVARIANCE_TYPE_APPROXIMATED, dtype=np.uint8),
            published,
        )


def build_covariance(sec: Section, noise, rate: float) -> Covariance:
    """The reported covariance; ``noise`` (the position noise process) for ``model: noise``."""
    model = sec.string("model", "zeros", choices=("zeros", "hdop", "diagonal", "nmea", "ublox", "noise"))
    if model == "zeros":
        sec.unknown_keys(["model"])
        return Covariance()
    if model == "noise":
        sec.unknown_keys(["model"])
        variances = noise.stationary_variance(1.0 / rate)
        if variances is None:
            raise sec.error("model", f"noise: position_noise {noise.name!r} has no stationary variance "
                                     "(its error grows with time); give the covariance (diagonal, nmea, "
                                     "ublox, hdop)")
        return FixedCovariance("noise", variances, S.COVARIANCE_TYPE_DIAGONAL_KNOWN, {})
    if model == "diagonal":
        sec.unknown_keys(["model", "sigma", "type"])
        sigma = sec.vector("sigma", 3, required=True, nonnegative=True)
        type_name = sec.string("type", "diagonal_known", choices=COVARIANCE_TYPE)
        return FixedCovariance(
            "diagonal", np.square(sigma), COVARIANCE_TYPE[type_name], {"sigma": sigma, "type": type_name}
        )
    if model == "nmea":
        sec.unknown_keys(["model", "fix_quality", "hdop", "epe"])
        quality = sec.string("fix_quality", "rtk_fixed", choices=NMEA_EPE)
        hdop = sec.number("hdop", 1.0, positive=True)
        epe = sec.number("epe", NMEA_EPE[quality], positive=True)
        std = hdop * epe
        return FixedCovariance(
            "nmea",
            [std**2, std**2, (2.0 * hdop * 2.0 * epe) ** 2],
            S.COVARIANCE_TYPE_APPROXIMATED,
            {"fix_quality": quality, "hdop": hdop, "epe": epe},
        )
    if model == "ublox":
        sec.unknown_keys(["model", "h_acc", "v_acc"])
        h_acc = sec.number("h_acc", required=True, nonnegative=True)
        v_acc = sec.number("v_acc", required=True, nonnegative=True)
        return FixedCovariance(
            "ublox",
            [h_acc**2, h_acc**2, v_acc**2],
            S.COVARIANCE_TYPE_DIAGONAL_KNOWN,
            {"h_acc": h_acc, "v_acc": v_acc},
        )
    sec.unknown_keys(
        [
            "model",
            "parameter_set",
            "h0",
            "h_inf",
            "tau",
            "epe",
            "altitude_factor",
            "timing",
            "physics_rate",
            "latency",
            "startup_delay",
        ]
    )
    parameter_set = sec.string("parameter_set", "calibrated", choices=HDOP_PARAMETER_SETS)
    h0, h_inf, tau = HDOP_PARAMETER_SETS[parameter_set]
    return HdopCovariance(
        sec.number("h0", h0, positive=True),
        sec.number("h_inf", h_inf, positive=True),
        sec.number("tau", tau, positive=True),
        sec.number("epe", 0.02, positive=True),
        sec.number("altitude_factor", 2.0, positive=True),
        sec.string("timing", "paper", choices=("paper", "airsim")),
        sec.number("physics_rate", 50.0, positive=True),
        sec.number("latency", 0.2, nonnegative=True),
        sec.number("startup_delay", 1.0, nonnegative=True),
        parameter_set,
    )


def _named_int(sec: Section, key: str, table: Dict[str, int], default: str) -> int:
    value = sec.data.get(key, default)
    if isinstance(value, int) and not isinstance(value, bool) and value in table.values():
        return value
    return table[sec.string(key, default, choices=table)]


class GpsModel(SensorModel):
    """One simulated receiver; ``sample`` (batch) and ``step`` (streaming) give identical numbers."""

    TOP_KEYS = (
        "rate",
        "datum",
        "geodesy",
        "frame_id",
        "status",
        "service",
        "latency",
        "stamp_lag",
        "stamp_jitter",
        "position_noise",
        "noise_frame",
        "covariance",
        "outages",
        "outage_mode",
        "dropout_probability",
        "degradation",
    )

    def __init__(self, params: Dict, source: str, seed_sequence):
        sec = Section(params, source)
        sec.unknown_keys(self.TOP_KEYS)
        self.source = source
        self.rate = model_rate(sec, "gps", 10.0)
        self.period_ns = period_ns(self.rate)
        self.datum = as_datum(sec.data.get("datum", PAPER_SIM_DATUM), f"{source}: datum")
        self.geodesy = sec.string("geodesy", "wgs84", choices=EARTH_MODELS)
        self.frame_id = sec.string("frame_id", "gps")
        self.status = _named_int(sec, "status", STATUS, "fix")
        self.service = _named_int(sec, "service", SERVICE, "gps")
        self.latency_ns = int(round(sec.number("latency", 0.0, nonnegative=True) * 1e9))
        self.stamp_lag = sec.number("stamp_lag", 0.0, nonnegative=True)
        self.stamp_jitter = sec.number("stamp_jitter", 0.0, nonnegative=True)
        if 2.0 * self.stamp_jitter * 1e9 >= self.period_ns:
            raise sec.error("stamp_jitter", f"must be below half the fix period ({self.period_ns / 2e9:g} s) "
                                            f"so stamps stay in order, got {self.stamp_jitter}")
        self.dropout_probability = sec.number("dropout_probability", 0.0, nonnegative=True)
        if self.dropout_probability > 1.0:
            raise sec.error("dropout_probability", f"must be <= 1, got {self.dropout_probability}")
        self.outage_mode = sec.string("outage_mode", "no_fix", choices=("no_fix", "drop"))
        self.outages = self._parse_outages(sec)
        self.noise_frame = sec.string("noise_frame", "enu", choices=("enu", "geodetic"))
        seq = as_seed_sequence(seed_sequence, f"{source}: seed")
        self.noise = build_noise(sec.section("position_noise"), child(seq, 0), self.rate, POSITION_MODELS)
        if self.noise_frame == "geodetic" and sec.section("covariance").data.get("model") == "noise":
            raise sec.error("covariance.model", "noise: the position noise is in degrees (noise_frame: "
                                                "geodetic), not metres; give the covariance (diagonal, …)")
        with np.errstate(over="ignore"):  # an overflowing covariance is refused when it is used
            self.covariance = build_covariance(sec.section("covariance"), self.noise, self.rate)
        self.dropout_rng = generator(seq, 1)
        self.stamp_rng = generator(seq, 2)  # its own stream: other draws do not depend on the jitter
        self.clock = SampleClock(self.period_ns, source)
        # its own child stream (3): without a degradation no draw changes (same bytes as before)
        self.degradation = build_degradation(sec.data.get("degradation"), source, child(seq, 3))
        self.diverged_fixes = 0  # fixes published as NO_FIX because the noise process diverged

    def _noisy_fix(self, position: np.ndarray, error: np.ndarray, diverged: np.ndarray):
        """(lat, lon, alt, ENU error in metres) of the true ``position`` with the noise ``error`` added in
        the model's ``noise_frame`` (geodetic: degrees, degrees, metres, added after the conversion)."""
        if self.noise_frame == "enu":
            lat, lon, alt = enu_to_geodetic(position + np.where(diverged[:, None], np.nan, error), self.datum,
                                            self.geodesy)
            return lat, lon, alt, error
        lat, lon, alt = enu_to_geodetic(position, self.datum, self.geodesy)
        error = np.where(diverged[:, None], np.nan, error)
        lat, lon, alt = lat + error[:, 0], lon + error[:, 1], alt + error[:, 2]
        return lat, lon, alt, geodetic_to_enu(lat, lon, alt, self.datum, self.geodesy) - position

    def _report_divergence(self, stamps: np.ndarray, errors: np.ndarray) -> None:
        """Count diverged fixes; warn once per model (the first one's time and size)."""
        self.diverged_fixes += len(stamps)
        if self.diverged_fixes != len(stamps):
            return
        with np.errstate(over="ignore", invalid="ignore"):
            size = float(np.linalg.norm(errors[0]))
        warnings.warn(
            f"{self.source}: position_noise diverged at stamp {int(stamps[0]) / 1e9:.3f} s (error "
            f"{size:.3g} m > {DIVERGED_POSITION_ERROR_M:g} m): this fix and every later diverged one are "
            "published as NO_FIX with NaN latitude/longitude/altitude",
            DataWarning, stacklevel=3)

    def _degrade(self, effect, status: np.ndarray, covariance: np.ndarray, published: np.ndarray):
        """(status, covariance, published) with the degradation layer's outages and degraded reporting."""
        covariance = covariance.copy()
        covariance[effect.degraded] *= self.degradation.std_scale ** 2
        status = status.copy()
        status[effect.degraded] = STATUS[self.degradation.status_name]
        if self.degradation.outage_mode == "drop":
            published = published & ~effect.outage
        else:
            status[effect.outage] = S.STATUS_NO_FIX
        return status, covariance, published

    @staticmethod
    def _parse_outages(sec: Section):
        raw = sec.data.get("outages") or []
        if not isinstance(raw, list):
            raise sec.error("outages", f"expected a list of [start, end] seconds, got {raw!r}")
        windows = []
        for i, item in enumerate(raw):
            ok = (
                isinstance(item, (list, tuple))
                and len(item) == 2
                and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in item
                )
            )
            if not ok or item[1] <= item[0]:
                raise sec.error(f"outages[{i}]", f"expected [start, end] with end > start, got {item!r}")
            windows.append((float(item[0]), float(item[1])))
        return windows

    @property
    def parameters(self) -> Dict:
        """The effective parameters as plain YAML-friendly data (for run.yaml)."""
        return {
            "rate": self.rate,
            "datum": list(self.datum),
            "geodesy": self.geodesy,
            "frame_id": self.frame_id,
            "status": self.status,
            "service": self.service,
            "latency": self.latency_ns / 1e9,
            **({"stamp_lag": self.stamp_lag, "stamp_jitter": self.stamp_jitter}
               if self.stamp_lag or self.stamp_jitter else {}),  # absent when 0: earlier run.yaml stay equal
            "position_noise": dict(self.noise.params),
            # absent for enu: earlier run.yaml stay equal
            **({"noise_frame": self.noise_frame} if self.noise_frame != "enu" else {}),
            "covariance": dict(self.covariance.params),
            "outages": [list(w) for w in self.outages],
            "outage_mode": self.outage_mode,
            "dropout_probability": self.dropout_probability,
            # absent without one: earlier run.yaml stay equal
            **({"degradation": self.degradation.params} if self.degradation is not None else {}),
        }

    def measure(self, stamps: np.ndarray, truth: GroundTruth) -> S.GpsSamples:
        """The fixes at int64 ``stamps`` (fix epochs) given the truth already at those stamps (one row
        each).  The header stamps are the epochs, or later with ``stamp_lag``/``stamp_jitter``.

        ``sample`` and ``step`` both end here; call it directly when the truth is already on the ticks.
        Stamps must be later than every stamp measured before (the model's state moves forward).
        """
        n = len(stamps)
        dt, since_first = self.clock.advance(stamps)
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging process: handled just below
            error = self.noise.apply(np.zeros((n, 3)), dt)
            diverged = ~(np.linalg.norm(error, axis=1) <= DIVERGED_POSITION_ERROR_M)  # NaN counts too
        dropout_draw = self.dropout_rng.random(n)
        with np.errstate(over="ignore"):
            covariance, cov_type, published = self.covariance.apply(dt, since_first)
        if not np.isfinite(covariance).all():
            raise UserError(f"{self.source}: covariance: the reported covariance overflows float64 "
                            "(parameters too large)")
        position = truth.position
        effect = self.degradation.apply(dt, since_first) if self.degradation is not None else None
        if effect is not None:
            position = position + effect.offset  # a multipath jump: the receiver's solution moves
        lat, lon, alt, error = self._noisy_fix(position, error, diverged)
        status = np.full(n, self.status, dtype=np.int8)
        if effect is not None:
            error = error + effect.offset
            status, covariance, published = self._degrade(effect, status, covariance, published)
        if diverged.any():
            status[diverged] = S.STATUS_NO_FIX  # robot_localization's navsat ignores NO_FIX and NaN
            self._report_divergence(stamps[diverged], error[diverged])
        for start, end in self.outages:
            inside = (since_first >= start) & (since_first < end)
            if self.outage_mode == "drop":
                published &= ~inside
            else:
                status[inside] = S.STATUS_NO_FIX
        published &= dropout_draw >= self.dropout_probability
        header = stamps
        if self.stamp_lag or self.stamp_jitter:
            uniform = self.stamp_rng.uniform(-1.0, 1.0, n) if self.stamp_jitter else np.zeros(n)
            header = lagged_stamps(stamps, self.stamp_lag, self.stamp_jitter, uniform)
        fixes = S.GpsSamples(
            stamp_ns=header,
            receive_ns=header + self.latency_ns,
            latitude=lat,
            longitude=lon,
            altitude=alt,
            status=status,
            service=np.full(n, self.service, dtype=np.uint16),
            position_covariance=covariance,
            position_covariance_type=cov_type,
            enu_error=error,
            frame_id=self.frame_id,
        )
        return fixes if published.all() else fixes.select(published)


def load_gps_model(spec, seed_sequence=None, **overrides) -> GpsModel:
    """A GPS model from a preset name, YAML path or dict (+ keyword overrides of top-level keys)."""
    params, source = resolve_spec(spec, "gps", overrides)
    return GpsModel(params, source, seed_sequence)
