"""What ``import`` measures of the vehicle and its truth, and which judge template fits it (docs/rover.md).

- ``pose_velocity``: a truth given as poses only (no velocity columns) gets its velocity from the
  poses by the truth readers' one smoothing differentiator (``truth.bag.smooth_derivative``: a
  zero-phase 2nd-order Butterworth low-pass, then centred differences) at ``POSE_CUTOFF_HZ``; the
  positions are the low-passed ones, so position and velocity agree.
- ``white_noise``: the noise of a sampled series, from its residual about that low-pass
  (r = x − L·x has variance σ²·Σ(δ − h)² for white noise of σ, h the filter's impulse response).
- ``measure`` → the ``vehicle:`` and ``truth:`` blocks of OUT/import.yaml.
- ``choose_template``: the study template (``config/studies``) by the rules below; ``recorded_template``
  reads it back for ``demo --real DIR`` and ``replay``.

Template rules (measured on a slow tilted drive: docs/rover.md).  The car template fuses the IMU's
accelerations in two_d_mode with no orientation, so robot_localization removes gravity along a level
z axis: on a slope of θ, g·sin θ leaks into the "horizontal" acceleration.  It fits only while that
leak, over one second, stays small against the vehicle's own speed:

    leak = g · sin(θ95),  θ95 = the larger of |roll| and |pitch| at their 5th/95th percentiles
           (TILT_UNKNOWN_DEG when the truth has no attitude)
    car      if leak · 1 s ≤ LEAK_FRACTION × median speed
    car      also if the IMU gives an orientation (``import --imu-orientation madgwick``) whose roll and
             pitch error against the truth's attitude is at most ORIENTATION_OK_DEG RMS: robot_localization
             then removes gravity along that orientation, and only its error leaks
    terrain  otherwise (a 2-D judge fusing the yaw rate and the GPS positions, no accelerations)

The ART template (config/studies/demo.yaml) is never chosen for an import: its simulated sensors sit in
the ART frames (IMU mounted x-up), which no transform of an imported bag (sensors in base_link)
connects; it is the default for bags in the ART layout only.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from .. import rotations
from ..errors import UserError
from ..truth.bag import smooth_derivative, zero_phase_lowpass
from ..yamlio import load_yaml

POSE_CUTOFF_HZ = 0.2       # Hz: velocity of a pose-only truth (docs/rover.md, "Low-rate truths": measured)
COLUMN_NOISE_CUTOFF_HZ = 1.0  # Hz: the noise of given velocity columns is what lies above 1 Hz (a ground
                              # vehicle's speed hardly changes faster)
LEAK_FRACTION = 0.25       # the car template fits while g·sin(θ95)·1 s ≤ 25 % of the median speed
TILT_UNKNOWN_DEG = 5.0     # a truth without attitude: assume slopes up to 5° (a road's grade and bank)
ORIENTATION_OK_DEG = 0.5   # an IMU orientation this good (RMS) lets the car template track a tilted drive
GRAVITY = 9.80665
SUMMARY = "import.yaml"    # OUT/import.yaml (importer.drive writes it)
TEMPLATES = {"car": "demo_car.yaml", "terrain": "demo_terrain.yaml"}


def _impulse_response(rate_hz: float, cutoff_hz: float, derivative: bool) -> np.ndarray:
    """The low-pass's (or the differentiator's) weights on one sample, on a uniform grid at ``rate_hz``:
    the response to a unit impulse in the middle of a series long enough for the filter to die out."""
    n = 2 * int(np.ceil(20.0 * rate_hz / min(cutoff_hz, 0.4 * rate_hz))) + 1
    t = np.arange(n) / rate_hz
    impulse = np.zeros(n)
    impulse[n // 2] = 1.0
    if derivative:
        return smooth_derivative(t, impulse, cutoff_hz)
    return zero_phase_lowpass(t, impulse, cutoff_hz)


def white_noise(t, values, cutoff_hz: float = POSE_CUTOFF_HZ) -> float:
    """σ of the white noise on ``values`` (N,) or (N, k) (RMS over the k columns), from the residual about
    the zero-phase low-pass at ``cutoff_hz``: std(r) / sqrt(Σ(δ − h)²).  Content above the cut-off that
    is motion, not noise, counts as noise: an upper bound for a vehicle that changes speed faster."""
    t = np.asarray(t, dtype=float)
    x = np.asarray(values, dtype=float).reshape(len(t), -1)
    rate = 1.0 / float(np.median(np.diff(t)))
    h = _impulse_response(rate, cutoff_hz, derivative=False)
    h[len(h) // 2] -= 1.0
    residual = x - zero_phase_lowpass(t, x, cutoff_hz)
    return float(np.sqrt(np.mean(np.var(residual, axis=0)) / np.sum(h ** 2)))


def pose_velocity(t, position, cutoff_hz: float = POSE_CUTOFF_HZ) -> tuple:
    """(low-passed positions (N, 3), velocity (N, 3), velocity noise m/s) of a pose-only truth.

    Velocity noise: the positions' horizontal white noise (``white_noise``) times the differentiator's
    noise gain sqrt(Σ d²) at the series' median rate — the σ per horizontal axis the smoothed velocity
    keeps from the pose noise."""
    t = np.asarray(t, dtype=float)
    position = np.asarray(position, dtype=float)
    rate = 1.0 / float(np.median(np.diff(t)))
    gain = float(np.sqrt(np.sum(_impulse_response(rate, cutoff_hz, derivative=True) ** 2)))
    noise = white_noise(t, position[:, :2], cutoff_hz) * gain
    return zero_phase_lowpass(t, position, cutoff_hz), smooth_derivative(t, position, cutoff_hz), noise


def _percentiles(values, which=(5, 50, 95)) -> dict:
    return {f"p{p}": round(float(v), 3) for p, v in zip(which, np.percentile(values, which))}


def measure(drives) -> tuple:
    """(vehicle block, truth block) of OUT/import.yaml from the imported ``drives`` (importer.drive.Drive),
    each over the span where truth, fixes and IMU overlap."""
    speeds, rolls, pitches, rates, noises, sources = [], [], [], [], [], []
    attitude_known = True
    orientation = True
    orientation_errors = []   # the IMU orientation's roll/pitch RMS error against the truth, per drive
    for drive in drives:
        start, end = drive.overlap()
        inside = (drive.truth.t >= start) & (drive.truth.t <= end)
        speeds.append(np.hypot(drive.truth.velocity[inside, 0], drive.truth.velocity[inside, 1]))
        measured = drive.record.get("truth", {}).get("measured", {})
        if measured.get("attitude_given"):
            rpy = np.degrees(rotations.to_rpy(drive.truth.orientation[inside]))
            rolls.append(rpy[:, 0])
            pitches.append(rpy[:, 1])
        else:
            attitude_known = False
        orientation = orientation and drive.imu.orientation is not None
        error = drive.record.get("imu", {}).get("orientation", {}).get("roll_pitch_minus_truth_rms_deg")
        orientation_errors.append(max(error) if error else None)
        rates.append((len(drive.truth) - 1) / max(drive.truth.duration, 1e-9))
        noises.append(measured.get("velocity_noise_mps", float("nan")))
        sources.append(measured.get("velocity_source", "columns"))
    vehicle = {"speed_mps": _percentiles(np.concatenate(speeds))}
    if attitude_known:
        vehicle["roll_deg"] = _percentiles(np.concatenate(rolls), (5, 95))
        vehicle["pitch_deg"] = _percentiles(np.concatenate(pitches), (5, 95))
    vehicle["imu_orientation"] = bool(orientation)
    if orientation and None not in orientation_errors:
        vehicle["imu_orientation_error_deg"] = round(float(max(orientation_errors)), 3)
    vehicle["template"], vehicle["template_reason"] = choose_template(vehicle)
    truth = {"rate_hz": round(float(np.median(rates)), 3),
             "velocity_noise_mps": round(float(np.nanmax(noises)), 4) if np.isfinite(noises).any() else None,
             "velocity_source": "smoothed poses" if "smoothed poses" in sources else "columns"}
    return vehicle, truth


def choose_template(vehicle: dict) -> tuple:
    """(study file name, reason) by the rules of the module docstring."""
    median = vehicle["speed_mps"]["p50"]
    if "roll_deg" in vehicle:
        tilt = max(abs(v) for part in ("roll_deg", "pitch_deg") for v in vehicle[part].values())
        where = f"roll and pitch reach {tilt:.1f} deg (5-95 %)"
    else:
        tilt = TILT_UNKNOWN_DEG
        where = f"the truth has no attitude, so slopes up to {TILT_UNKNOWN_DEG:g} deg are assumed"
    leak = GRAVITY * math.sin(math.radians(tilt))
    ratio = leak * 1.0 / max(median, 1e-3)
    if ratio <= LEAK_FRACTION:
        return TEMPLATES["car"], (
            f"{where}: gravity would leak at most {leak:.2f} m/s^2 into a 2-D judge's accelerations, "
            f"{ratio:.2f} x the median speed {median:.2f} m/s per second (car template up to "
            f"{LEAK_FRACTION:g})")
    error = vehicle.get("imu_orientation_error_deg")
    if vehicle.get("imu_orientation") and error is not None and error <= ORIENTATION_OK_DEG:
        return TEMPLATES["car"], (
            f"{where}, but the IMU's orientation (roll/pitch {error:.2f} deg RMS off the truth, at most "
            f"{ORIENTATION_OK_DEG:g}) lets robot_localization remove gravity along it: the car template, "
            "accelerations fused")
    known = ""
    if vehicle.get("imu_orientation"):
        known = (f" (the IMU's orientation is {error:.2f} deg RMS off the truth's: above "
                 f"{ORIENTATION_OK_DEG:g})" if error is not None else
                 " (the IMU's orientation is unchecked: the truth has no attitude)")
    return TEMPLATES["terrain"], (
        f"{where}: gravity would leak up to {leak:.2f} m/s^2 into a 2-D judge's accelerations, "
        f"{ratio:.1f} x the median speed {median:.2f} m/s per second (above {LEAK_FRACTION:g}){known}; the "
        "terrain template fuses the yaw rate and the GPS positions, no accelerations")


def template_line(vehicle: dict) -> str:
    """The one line ``import`` prints about the template it recorded."""
    return (f"template: {vehicle['template']} (recorded in import.yaml; demo --real and replay use it): "
            f"{vehicle['template_reason']}")


def truth_line(truth: dict) -> str:
    noise = truth["velocity_noise_mps"]
    noise_text = "unknown" if noise is None else f"{noise:.3f} m/s"
    how = ("velocity from the smoothed poses, zero-phase low-pass at "
           f"{POSE_CUTOFF_HZ:g} Hz" if truth["velocity_source"] == "smoothed poses" else
           "velocity from its columns")
    return (f"truth: {truth['rate_hz']:.3g} Hz, {how}; its own velocity noise {noise_text} (1 sigma per "
            "horizontal axis): real runs' speed errors this small are the truth's, not the judge's")


def import_summary(directory) -> Optional[dict]:
    """OUT/import.yaml of an imported DIR (or of the DIR above a scenario folder or a run), else None."""
    path = Path(directory)
    for folder in (path, path.parent, path.parent.parent):
        summary = folder / SUMMARY
        if summary.is_file():
            data = load_yaml(summary)
            # a bag's own sidecar (run/import.yaml) has no "runs"; OUT/import.yaml has
            if isinstance(data, dict) and isinstance(data.get("runs"), list):
                return data
    return None


def recorded_template(directory) -> Optional[tuple]:
    """(study file name, reason) recorded by ``import`` for ``directory`` (an imported DIR, one of its
    scenario folders or runs), or None when it is not an import.  An import written before templates
    were recorded gets the car template, which imports documented then."""
    summary = import_summary(directory)
    if summary is None:
        return None
    vehicle = summary.get("vehicle")
    if not isinstance(vehicle, dict) or not isinstance(vehicle.get("template"), str):
        return TEMPLATES["car"], ("an import without a recorded template (written before they were): "
                                  "the car one")
    if vehicle["template"] not in TEMPLATES.values():
        raise UserError(f"{directory}: import.yaml: vehicle.template {vehicle['template']!r} is not one of "
                        f"{', '.join(TEMPLATES.values())}")
    return vehicle["template"], str(vehicle.get("template_reason", ""))


__all__ = ["LEAK_FRACTION", "POSE_CUTOFF_HZ", "TEMPLATES", "choose_template", "import_summary", "measure",
           "pose_velocity", "recorded_template", "template_line", "truth_line", "white_noise"]
