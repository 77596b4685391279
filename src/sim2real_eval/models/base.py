"""What the GPS and IMU models share: tick schedules, the sample clock, and spec loading.

A model spec is a preset name (``config/sensors/<kind>/<name>.yaml``), a YAML path, or a dict with
the same keys.  A spec may name a ``preset:`` to start from; its other keys replace the preset's, and
so do the ``overrides`` given by callers.  A mapping without ``model`` (e.g. ``position_noise: {sigma:
0.05}``) tweaks the preset's parameters; a mapping naming a ``model`` replaces the preset's whole.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import UserError
from ..limits import GPS_RATE, IMU_RATE
from ..resources import config_path
from ..stamps import ns_to_seconds as stamps_to_seconds  # the one ns -> s conversion every host uses
from ..truth import GroundTruth
from ..yamlio import load_yaml

# Highest sample rate a model accepts, Hz: the fastest GNSS receivers publish at 100 Hz, the fastest
# MEMS/tactical IMUs at a few kHz.  Above that a typo (rate: 1000000) would only make millions of
# samples and minutes of work.  (The bounds table: limits.py, docs/limits.md.)
MAX_RATE_HZ = {"gps": GPS_RATE.high, "imu": IMU_RATE.high}


def model_rate(sec, kind: str, default: float) -> float:
    """The ``rate`` key of a model mapping: > 0 and at most ``MAX_RATE_HZ[kind]`` (errors name the key)."""
    rate = sec.number("rate", default, positive=True)
    if rate > MAX_RATE_HZ[kind]:
        raise sec.error("rate", f"{rate:g} Hz is above the {MAX_RATE_HZ[kind]:g} Hz limit for {kind.upper()} "
                                "models (no real sensor of this kind publishes faster)")
    return rate


def default_stamps(truth: GroundTruth, period: int) -> np.ndarray:
    """Ticks k·period (int64 ns) for every k whose time lies inside [truth.t[0], truth.t[-1]]."""
    first = int(np.ceil(truth.t[0] * 1e9 / period)) - 1
    last = int(np.floor(truth.t[-1] * 1e9 / period)) + 1
    stamps = np.arange(first, last + 1, dtype=np.int64) * np.int64(period)
    seconds = stamps_to_seconds(stamps)
    stamps = stamps[(seconds >= truth.t[0]) & (seconds <= truth.t[-1]) & (stamps > 0)]
    return stamps


def check_stamps(stamps_ns, truth: GroundTruth, source: str) -> np.ndarray:
    """Explicit stamps: 1-D int64, strictly increasing, positive, inside the truth span."""
    stamps = np.asarray(stamps_ns)
    if stamps.ndim != 1:
        raise UserError(f"{source}: stamps_ns must be 1-D, got shape {stamps.shape}")
    if stamps.size and not np.issubdtype(stamps.dtype, np.integer):
        raise UserError(f"{source}: stamps_ns must be integer nanoseconds, got dtype {stamps.dtype}")
    stamps = stamps.astype(np.int64)
    if stamps.size and (np.diff(stamps) <= 0).any():
        i = int(np.argmax(np.diff(stamps) <= 0)) + 1
        raise UserError(f"{source}: stamps_ns not strictly increasing at index {i}")
    if stamps.size and stamps[0] <= 0:
        raise UserError(f"{source}: stamps_ns must be > 0 (stamp 0 is dropped by robot_localization)")
    seconds = stamps_to_seconds(stamps)
    if stamps.size and (seconds[0] < truth.t[0] or seconds[-1] > truth.t[-1]):
        raise UserError(
            f"{source}: stamps_ns span {seconds[0]:.9f}..{seconds[-1]:.9f} s lies outside the "
            f"truth span {truth.t[0]:.9f}..{truth.t[-1]:.9f} s"
        )
    return stamps


class SampleClock:
    """Per-sample intervals and times since the first sample, identical for batch and streaming."""

    def __init__(self, period: int, source: str):
        self.period = period
        self.source = source
        self.first_ns: Optional[int] = None
        self.last_ns: Optional[int] = None

    def advance(self, stamps: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(dt seconds since the previous sample, seconds since the first sample) for ``stamps``."""
        if not stamps.size:
            return np.zeros(0), np.zeros(0)
        if self.last_ns is not None and stamps[0] <= self.last_ns:
            raise UserError(
                f"{self.source}: stamp {int(stamps[0])} ns is not after the previous sample {self.last_ns} ns"
            )
        if self.first_ns is None:
            self.first_ns = int(stamps[0])
            previous = self.first_ns - self.period
        else:
            previous = self.last_ns
        dt = np.diff(np.concatenate([[previous], stamps])) / 1e9
        since_first = (stamps - self.first_ns) / 1e9
        self.last_ns = int(stamps[-1])
        return dt, since_first


def single_truth(truth_at_stamp: GroundTruth, stamp_ns: int, source: str) -> GroundTruth:
    """The one-row truth a streaming ``step`` consumes (interpolated if given a longer series)."""
    if not isinstance(truth_at_stamp, GroundTruth):
        raise UserError(f"{source}: step() needs a GroundTruth, got {type(truth_at_stamp).__name__}")
    if len(truth_at_stamp) == 1:
        return truth_at_stamp
    return truth_at_stamp.interpolate(stamps_to_seconds([stamp_ns]))


class SensorModel:
    """The two hosts of every sensor model: batch ``sample`` (offline) and streaming ``step`` (ROS
    node).  Both end in the subclass's ``measure(stamps, truth_at_stamps)``, so they give the same
    numbers for the same seed.  Subclasses set ``period_ns`` and ``source`` and define ``measure``."""

    period_ns: int
    source: str

    def default_stamps(self, truth: GroundTruth) -> np.ndarray:
        return default_stamps(truth, self.period_ns)

    def sample(self, truth: GroundTruth, stamps_ns: Optional[np.ndarray] = None):
        """Batch: samples at ``stamps_ns`` (default: every period tick inside the truth span)."""
        truth.validate(f"{self.source}: ground truth")
        stamps = (
            self.default_stamps(truth) if stamps_ns is None else check_stamps(stamps_ns, truth, self.source)
        )
        return self.measure(stamps, truth.interpolate(stamps_to_seconds(stamps)))

    def step(self, stamp_ns: int, truth_at_stamp: GroundTruth):
        """Streaming: the sample at one stamp (length 0 when dropped), state kept in the model."""
        stamps = np.array([int(stamp_ns)], dtype=np.int64)
        return self.measure(stamps, single_truth(truth_at_stamp, int(stamp_ns), self.source))


def available_presets(kind: str) -> List[str]:
    folder = config_path("sensors", kind)
    return sorted(p.stem for p in Path(folder).glob("*.yaml")) if Path(folder).is_dir() else []


def _merge(base: Dict, extra: Dict) -> Dict:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and "model" not in value:
            merged[key] = {**merged[key], **value}  # tweak some parameters of the same model
        else:  # a mapping naming its model replaces the old one whole: old parameters may not apply
            merged[key] = value
    return merged


def resolve_spec(spec, kind: str, overrides: Dict, depth: int = 0) -> Tuple[Dict, str]:
    """(parameters, source) for a preset name, YAML path or dict; overrides merged last."""
    if depth > 5:
        raise UserError(f"{kind} model: preset chain too deep (a preset naming itself?)")
    if isinstance(spec, dict):
        data, source = dict(spec), f"{kind} model spec"
    elif isinstance(spec, (str, os.PathLike)):
        text = str(spec)
        looks_like_path = text.endswith((".yaml", ".yml")) or os.sep in text or Path(text).is_file()
        path = Path(text) if looks_like_path else config_path("sensors", kind, text + ".yaml")
        if looks_like_path and not path.is_file() and os.sep not in text:
            path = config_path("sensors", kind, text)  # a bare preset file name (ch_rw.yaml): from any cwd
        if not looks_like_path and not path.is_file():
            names = ", ".join(available_presets(kind)) or "none installed"
            raise UserError(f"{kind} model: unknown preset {text!r}; expected one of {names} or a YAML path")
        data = load_yaml(path)
        source = str(path)
        if not isinstance(data, dict):
            raise UserError(f"{source}: top level must be a mapping of model parameters")
    else:
        raise UserError(f"{kind} model: spec must be a preset name, a YAML path or a mapping, got {spec!r}")
    base_name = data.pop("preset", None)
    if base_name is not None:
        if not isinstance(base_name, str):
            raise UserError(f"{source}: preset: expected a preset name, got {base_name!r}")
        base, _ = resolve_spec(base_name, kind, {}, depth + 1)
        data = _merge(base, data)
    data.pop("description", None)
    if overrides:
        data = _merge(data, overrides)
    return data, source
