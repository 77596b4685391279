"""GNSS degradation layer of the GPS model: outages, multipath jumps, degraded status and covariance
(robot-side: Python 3.8, numpy + PyYAML only).

A GPS model's ``degradation`` key (a name of ``config/degradation/<name>.yaml``, a YAML path, or a
mapping) adds, on top of its position noise and covariance model, what a receiver does in an urban
canyon (docs/models.md, "GNSS degradation"):

  schedule: [{start: s, end: s, kind: outage|multipath|degraded, offset: [e, n, u] m}, …]
      windows in seconds since the model's first fix (the same drive gives the same windows to the
      real side and to every simulated variant that names the block: degradation at a time/place)
  outages:   {rate: onsets/s, duration: [min, max] s}     random outages, log-uniform duration
  multipath: {rate: onsets/s, duration: [min, max] s, magnitude: [min, max] m, vertical: factor,
              reported: true}   random step offsets: horizontal size uniform in [min, max], direction
              uniform, up = vertical·size·v with v ~ U[−1, 1]; held for the episode's duration
  outage_mode: no_fix|drop   no_fix: the fix is published with status NO_FIX (what nmea_navsat_driver
      and the u-blox driver publish for a GGA quality 0 / an invalid PVT); drop: nothing is published
      (a driver filtering on a valid solution)
  reporting: {status: fix|sbas_fix|gbas_fix, std_scale: k, reacquisition: s}
      during a degraded fix (a reported multipath episode, a scheduled ``degraded`` window, and the
      ``reacquisition`` seconds after each outage) the status drops to ``status`` and the reported
      standard deviations grow ``std_scale``-fold (variances ×k²): a model that reports no covariance
      (zeros) still reports none

Random events: a Poisson onset per fix, probability 1 − e^(−rate·dt), tested only while no event of
that kind is under way (an alternating renewal process).  Random streams: child 0 the onset draws (two
per fix, always drawn), child 1 the outage durations, child 2 the multipath draws (four per onset), so
``sample`` and ``step`` give identical bytes and a block without random events draws nothing.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import UserError
from ..resources import config_path
from ..yamlio import Section, load_yaml
from .seeding import generator

KINDS = ("outage", "multipath", "degraded")
OUTAGE_MODES = ("no_fix", "drop")
TOP_KEYS = ("description", "schedule", "outages", "multipath", "outage_mode", "reporting")


class Effect:
    """What the degradation does to N fixes: ENU ``offset`` (N, 3) m, ``outage`` and ``degraded`` (N,)."""

    def __init__(self, offset: np.ndarray, outage: np.ndarray, degraded: np.ndarray):
        self.offset = offset
        self.outage = outage
        self.degraded = degraded


def log_uniform(u: float, low: float, high: float) -> float:
    """A draw of the log-uniform distribution on [low, high] from u ∈ [0, 1)."""
    return math.exp(math.log(low) + u * (math.log(high) - math.log(low)))


def log_uniform_mean(low: float, high: float) -> float:
    """E[D] of the log-uniform distribution on [low, high]: (high − low)/ln(high/low) (low when equal)."""
    return low if high == low else (high - low) / math.log(high / low)


def onset_probability(rate: float, dt: np.ndarray) -> np.ndarray:
    """Probability of a Poisson onset within each interval ``dt``: 1 − e^(−rate·dt)."""
    return -np.expm1(-rate * np.asarray(dt, dtype=float))


def multipath_offset(draws, magnitude: Tuple[float, float], vertical: float) -> Tuple[float, np.ndarray]:
    """(duration u, ENU offset) of one multipath onset from its four uniforms (u_dur, u_mag, u_dir, u_up)."""
    u_duration, u_size, u_direction, u_up = draws
    size = magnitude[0] + u_size * (magnitude[1] - magnitude[0])
    angle = 2.0 * math.pi * u_direction
    up = vertical * size * (2.0 * u_up - 1.0)
    offset = np.array([size * math.cos(angle), size * math.sin(angle), up])
    return u_duration, offset


class Degradation:
    """The degradation state machine of one receiver (state kept between calls)."""

    def __init__(self, sec: Section, seq):
        sec.unknown_keys(TOP_KEYS)
        self.source = sec.source
        self.schedule = _parse_schedule(sec)
        self.outage_rate, self.outage_duration = _events(sec, "outages", ("rate", "duration"))
        mp = sec.section("multipath")
        self.multipath_rate, self.multipath_duration = _events(
            sec, "multipath", ("rate", "duration", "magnitude", "vertical", "reported"))
        self.magnitude = _range(mp, "magnitude", (0.0, 0.0), allow_zero=True)
        self.vertical = mp.number("vertical", 0.0, nonnegative=True)
        self.multipath_reported = mp.boolean("reported", True)
        self.outage_mode = sec.string("outage_mode", "no_fix", choices=OUTAGE_MODES)
        rep = sec.section("reporting")
        rep.unknown_keys(("status", "std_scale", "reacquisition"))
        self.status_name = rep.string("status", "fix", choices=("fix", "sbas_fix", "gbas_fix"))
        self.std_scale = rep.number("std_scale", 1.0, positive=True)
        self.reacquisition = rep.number("reacquisition", 0.0, nonnegative=True)
        self.onset_rng = generator(seq, 0)
        self.outage_rng = generator(seq, 1)
        self.multipath_rng = generator(seq, 2)
        self.outage_end = -math.inf     # s since the first fix: the random outage under way ends here
        self.multipath_end = -math.inf
        self.offset = np.zeros(3)       # the random multipath episode's offset

    @property
    def params(self) -> Dict:
        """The effective parameters (run.yaml)."""
        return {
            "schedule": [{"start": s, "end": e, "kind": k,
                          **({"offset": [float(v) for v in o]} if k == "multipath" else {})}
                         for s, e, k, o in self.schedule],
            "outages": {"rate": self.outage_rate, "duration": list(self.outage_duration)},
            "multipath": {"rate": self.multipath_rate, "duration": list(self.multipath_duration),
                          "magnitude": list(self.magnitude), "vertical": self.vertical,
                          "reported": self.multipath_reported},
            "outage_mode": self.outage_mode,
            "reporting": {"status": self.status_name, "std_scale": self.std_scale,
                          "reacquisition": self.reacquisition},
        }

    def _scheduled(self, t: float) -> Tuple[bool, bool, np.ndarray]:
        """(outage, degraded, offset) of the schedule at ``t`` s since the first fix."""
        outage, degraded, offset = False, False, np.zeros(3)
        for start, end, kind, window_offset in self.schedule:
            if kind == "outage":
                outage |= start <= t < end
                degraded |= end <= t < end + self.reacquisition
            elif start <= t < end:
                if kind == "multipath":
                    offset = offset + window_offset
                    degraded |= self.multipath_reported
                else:
                    degraded = True
        return outage, degraded, offset

    def apply(self, dt: np.ndarray, since_first: np.ndarray) -> Effect:
        """The effect on fixes at ``since_first`` s (intervals ``dt`` s since the previous fix)."""
        n = len(dt)
        onsets = self.onset_rng.random((n, 2))
        p_outage = onset_probability(self.outage_rate, dt)
        p_multipath = onset_probability(self.multipath_rate, dt)
        offset = np.zeros((n, 3))
        outage = np.zeros(n, dtype=bool)
        degraded = np.zeros(n, dtype=bool)
        for k in range(n):  # a state machine: row by row in both hosts
            t = float(since_first[k])
            if t >= self.outage_end and onsets[k, 0] < p_outage[k]:
                self.outage_end = t + log_uniform(self.outage_rng.random(), *self.outage_duration)
            if t >= self.multipath_end and onsets[k, 1] < p_multipath[k]:
                u_duration, self.offset = multipath_offset(self.multipath_rng.random(4), self.magnitude,
                                                           self.vertical)
                self.multipath_end = t + log_uniform(u_duration, *self.multipath_duration)
            in_multipath = t < self.multipath_end
            scheduled_outage, scheduled_degraded, scheduled_offset = self._scheduled(t)
            outage[k] = scheduled_outage or t < self.outage_end
            reacquiring = self.outage_end <= t < self.outage_end + self.reacquisition
            degraded[k] = scheduled_degraded or reacquiring or (in_multipath and self.multipath_reported)
            offset[k] = scheduled_offset + (self.offset if in_multipath else 0.0)
        return Effect(offset, outage, degraded & ~outage)


def _range(sec: Section, key: str, default, allow_zero: bool = False) -> Tuple[float, float]:
    """A [min, max] pair: min ≤ max, both > 0 (≥ 0 with ``allow_zero``)."""
    value = sec.data.get(key, list(default))
    numbers = isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    ok = numbers and len(value) == 2
    low_ok = ok and (value[0] >= 0 if allow_zero else value[0] > 0)
    if not low_ok or value[1] < value[0]:
        bound = ">= 0" if allow_zero else "> 0"
        raise sec.error(key, f"expected [min, max] with {bound} min <= max, got {value!r}")
    return float(value[0]), float(value[1])


def _events(sec: Section, key: str, allowed) -> Tuple[float, Tuple[float, float]]:
    """(rate, duration range) of a random-event block; rate 0 (the default) turns it off."""
    block = sec.section(key)
    block.unknown_keys(allowed)
    rate = block.number("rate", 0.0, nonnegative=True)
    if rate and not block.has("duration"):
        raise block.error("duration", "missing key ([min, max] seconds of each event)")
    return rate, _range(block, "duration", (1.0, 1.0))


def _parse_schedule(sec: Section) -> List[Tuple[float, float, str, np.ndarray]]:
    raw = sec.data.get("schedule") or []
    if not isinstance(raw, list):
        raise sec.error("schedule", f"expected a list of {{start, end, kind}} windows, got {raw!r}")
    windows = []
    for i, item in enumerate(raw):
        window = Section(item, sec.source, sec.name(f"schedule[{i}]"))
        window.unknown_keys(("start", "end", "kind", "offset"))
        start = window.number("start", required=True, nonnegative=True)
        end = window.number("end", required=True, nonnegative=True)
        if end <= start:
            raise window.error("end", f"must be after start ({start:g} s), got {end:g}")
        kind = window.string("kind", required=True, choices=KINDS)
        if kind != "multipath" and window.has("offset"):
            raise window.error("offset", f"only a multipath window has an offset (this one is {kind})")
        offset = window.vector("offset", 3, [0.0] * 3 if kind != "multipath" else None,
                               required=kind == "multipath")
        windows.append((start, end, kind, np.array(offset, dtype=float)))
    return windows


def resolve_block(spec, source: str) -> Tuple[Dict, str]:
    """(mapping, source) of a ``degradation`` value: a name of config/degradation, a YAML path, a mapping."""
    if isinstance(spec, dict):
        return dict(spec), f"{source}: degradation"
    if not isinstance(spec, (str, os.PathLike)) or not str(spec):
        raise UserError(f"{source}: degradation: expected a name of config/degradation, a YAML path or a "
                        f"mapping, got {spec!r}")
    text = str(spec)
    path = Path(text)
    if not (text.endswith((".yaml", ".yml")) or os.sep in text):
        path = config_path("degradation", text + ".yaml")
        if not path.is_file():
            folder = config_path("degradation")
            names = sorted(p.stem for p in Path(folder).glob("*.yaml")) if Path(folder).is_dir() else []
            raise UserError(f"{source}: degradation: unknown block {text!r}; expected one of "
                            f"{', '.join(names) or 'none installed'} or a YAML path")
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: top level must be a mapping of degradation parameters")
    return data, str(path)


def build_degradation(spec, source: str, seq) -> Optional[Degradation]:
    """The degradation layer of a GPS model (None when ``spec`` is None)."""
    if spec is None:
        return None
    data, where = resolve_block(spec, source)
    return Degradation(Section(data, where), seq)
