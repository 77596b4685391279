"""A scenario's drive written as the generic CSV layout (docs/import.md): "a rover's logs" without real
data, for tests, docs and trying the import route.

``write_scenario_csv("terrain", "rover_logs")`` writes ``gnss.csv``, ``imu.csv`` and ``truth.csv`` of
repeat k of a scenario, degraded the way a field rover logs them (defaults: ``RoverLogs``):

- ``gnss.csv`` ``t, lat, lon, alt``: 20 Hz fixes, **no accuracy column**; error = white noise + a
  first-order Gauss–Markov bias (the GPS model's ``gauss_markov`` noise, gz form, bias drawn from its
  stationary distribution), stationary std 0.6 / 0.7 / 1.2 m east / north / up, τ = 10 s.
- ``imu.csv`` ``t, ax, ay, az, wx, wy, wz``: 200 Hz, the ``reference_mems`` IMU model (MEMS noise,
  small constant biases, misalignment), **mounted at yaw −90°** in base_link and **logged
  forward-right-down** (import with ``--imu-axes frd --estimate-mounting``).
- ``truth.csv`` ``t, lat, lon, alt`` (or ``east, north, up`` at ``datum``) ``+ qx, qy, qz, qw``: poses at
  2.2 Hz, like a lidar-SLAM pose log — steps of ~0.16 m at 0.35 m/s, white position noise of 2 cm and
  attitude noise of 0.2° per axis, stamps jittered by ±20 ms.  With ``truth_velocity`` (default) also
  ``v_east, v_north, v_up``: the true velocity at the pose's time; without, the poses only.  The
  attitude is base_link's in the datum's ENU frame (within 1e-5 rad of the local one over a drive's
  few hundred metres).
- ``README.md``: what made the folder, and that it is synthetic.

Every stream is seeded by ``sensor_seed(seed, "scenario_csv", scenario, k, <stream>)``: the same
arguments give the same bytes (fixed number formats).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple

import numpy as np

from .. import rotations
from ..atomic import atomic_directory
from ..errors import UserError
from ..geodesy import enu_to_geodetic
from ..models import load_gps_model, load_imu_model, sensor_seed
from ..models.seeding import generator
from ..scenarios import generate, load_scenario

TRUTH_FRAMES = ("lla", "enu")
DEFAULT_DATUM = (43.07236, -89.41189, 263.0)  # the reference setup's site (config/sensors/gps/reference_rtk)


@dataclass(frozen=True)
class RoverLogs:
    """How a field rover's logs are degraded (``write_scenario_csv``).  Angles in radians."""

    gnss_rate: float = 20.0
    gnss_sigma: Tuple[float, float, float] = (0.6, 0.7, 1.2)        # m, stationary std E/N/U (white + GM)
    gnss_white_sigma: Tuple[float, float, float] = (0.2, 0.25, 0.4)  # m, its white part
    gnss_tau: float = 10.0                                           # s, Gauss–Markov correlation time
    imu_model: str = "reference_mems"
    imu_rate: float = 200.0
    imu_mounting_rpy: Tuple[float, float, float] = (0.0, 0.0, -math.pi / 2)  # IMU in base_link (FLU)
    imu_axes: str = "frd"
    truth_rate: float = 2.2
    truth_stamp_jitter: float = 0.02      # s, uniform ±
    truth_position_sigma: float = 0.02    # m, white, per axis
    truth_attitude_sigma: float = math.radians(0.2)  # rad, white, per axis
    truth_frame: str = "lla"
    truth_velocity: bool = True
    datum: Tuple[float, float, float] = DEFAULT_DATUM

    def check(self) -> None:
        if self.truth_frame not in TRUTH_FRAMES:
            raise UserError(f"truth frame: expected one of {', '.join(TRUTH_FRAMES)}, "
                            f"got {self.truth_frame!r}")
        if self.imu_axes not in ("flu", "frd"):
            raise UserError(f"IMU axes: expected flu or frd, got {self.imu_axes!r}")
        if any(w > s for w, s in zip(self.gnss_white_sigma, self.gnss_sigma)):
            raise UserError(f"GNSS: white sigma {self.gnss_white_sigma} exceeds the total {self.gnss_sigma}")
        if 2.0 * self.truth_stamp_jitter >= 1.0 / self.truth_rate:
            raise UserError(f"truth stamp jitter {self.truth_stamp_jitter} s: must be below half the pose "
                            f"period ({0.5 / self.truth_rate:g} s)")


def gnss_rows(truth, logs: RoverLogs, seed) -> np.ndarray:
    """(N, 4) t, lat, lon, alt of the receiver's fixes."""
    white = np.array(logs.gnss_white_sigma, dtype=float)
    bias_std = np.sqrt(np.array(logs.gnss_sigma, dtype=float) ** 2 - white ** 2)
    spec = {"rate": logs.gnss_rate, "datum": list(logs.datum), "status": "fix",
            "position_noise": {"model": "gauss_markov", "form": "gz", "sigma": white.tolist(),
                               # gz form: stationary std = bias_sigma·√(τ/2)
                               "bias_sigma": (bias_std * math.sqrt(2.0 / logs.gnss_tau)).tolist(),
                               "tau": logs.gnss_tau, "initial_bias": "stationary"},
            "covariance": {"model": "zeros"}}
    fixes = load_gps_model(spec, seed("gnss")).sample(truth)
    return np.column_stack([fixes.stamp_ns / 1e9, fixes.latitude, fixes.longitude, fixes.altitude])


def imu_rows(truth, logs: RoverLogs, seed) -> np.ndarray:
    """(N, 7) t, ax, ay, az, wx, wy, wz in the IMU's logged axes (FRD: y and z of its FLU negated)."""
    model = load_imu_model(logs.imu_model, seed("imu"), rate=logs.imu_rate,
                           mounting_rpy=list(logs.imu_mounting_rpy))
    samples = model.sample(truth)
    flip = np.array([1.0, -1.0, -1.0]) if logs.imu_axes == "frd" else np.ones(3)
    return np.column_stack([samples.stamp_ns / 1e9, samples.linear_acceleration * flip,
                            samples.angular_velocity * flip])


def truth_rows(truth, logs: RoverLogs, seed) -> Tuple[np.ndarray, Tuple[str, ...]]:
    """(rows, header) of the pose log: jittered ~2.2 Hz stamps, noisy position and attitude."""
    rng = generator(seed("truth"), 0)
    period = 1.0 / logs.truth_rate
    nominal = np.arange(truth.t[0] + logs.truth_stamp_jitter, truth.t[-1] - logs.truth_stamp_jitter, period)
    t = nominal + rng.uniform(-logs.truth_stamp_jitter, logs.truth_stamp_jitter, len(nominal))
    t = np.round(t, 6)  # a logger's µs stamps
    pose = truth.interpolate(t)
    position = pose.position + logs.truth_position_sigma * rng.standard_normal((len(t), 3))
    tilt = logs.truth_attitude_sigma * rng.standard_normal((len(t), 3))
    attitude = rotations.multiply(pose.orientation, rotations.from_rpy(tilt[:, 0], tilt[:, 1], tilt[:, 2]))
    attitude = np.where(attitude[:, 3:] < 0, -attitude, attitude)  # w >= 0: one sign per attitude
    if logs.truth_frame == "lla":
        lat, lon, alt = enu_to_geodetic(position, logs.datum)
        columns, header = [t, lat, lon, alt], ("t", "lat", "lon", "alt")
    else:
        columns, header = [t, position[:, 0], position[:, 1], position[:, 2]], ("t", "east", "north", "up")
    if logs.truth_velocity:
        columns += [pose.velocity[:, 0], pose.velocity[:, 1], pose.velocity[:, 2]]
        header += ("v_east", "v_north", "v_up")
    return np.column_stack(columns + [attitude]), header + ("qx", "qy", "qz", "qw")


def _formats(header) -> list:
    """Fixed number formats per column, so equal values give equal bytes."""
    table = {"t": "%.6f", "lat": "%.10f", "lon": "%.10f"}
    return [table.get(name, "%.4f" if name in ("alt", "east", "north", "up") else "%.6f") for name in header]


def _write(path: Path, header, rows: np.ndarray) -> None:
    np.savetxt(path, rows, delimiter=",", header=",".join(header), comments="", fmt=_formats(header))


README = """# Synthetic rover logs (NOT real data)

Written by `sim2real-eval scenario {scenario} --k {k} --seed {seed} --csv DIR`
(`sim2real_eval.importer.scenario_csv.write_scenario_csv`) in the generic CSV layout of docs/import.md:
repeat {k} of the scenario `{scenario}`, {duration:.0f} s, degraded like a field rover's logs:

- gnss.csv: {gnss_rate:g} Hz, no accuracy column; error std {gnss_sigma} m (E/N/U; white {gnss_white} m
  + Gauss-Markov, tau {gnss_tau:g} s).
- imu.csv: {imu_rate:g} Hz, IMU model `{imu_model}`, mounted at roll/pitch/yaw {mounting} deg in
  base_link, logged in {axes} axes.
- truth.csv: poses at {truth_rate:g} Hz ({truth_frame}{velocity}), position noise {pos_sigma:g} m,
  attitude noise {att_sigma:.2f} deg, stamps jittered by +-{jitter:g} s.

Datum (ellipsoidal): {datum}.  Import it, e.g.:

    sim2real-eval import csv DIR --out rover --window 30 --imu-axes {axes} --estimate-mounting \\
        --fix-covariance 0.7{datum_option}
"""


def write_scenario_csv(scenario, out, k: int = 0, seed: int = 0, logs: RoverLogs = RoverLogs(),
                       overwrite: bool = False) -> Path:
    """Write repeat ``k`` of ``scenario`` (a name or YAML path) as gnss.csv, imu.csv, truth.csv and
    README.md in the folder ``out`` (atomic: complete or absent; an existing ``out`` is refused unless
    ``overwrite``).  Returns ``out``."""
    logs.check()
    if k < 0 or seed < 0:
        raise UserError(f"k and seed must be >= 0, got k={k}, seed={seed}")
    name = load_scenario(scenario)[2]
    truth = generate(scenario, k=k, seed=seed)

    def seed_of(stream: str):
        return sensor_seed(seed, "scenario_csv", name, k, stream)

    gnss = gnss_rows(truth, logs, seed_of)
    imu = imu_rows(truth, logs, seed_of)
    poses, header = truth_rows(truth, logs, seed_of)
    mounting = ", ".join(f"{math.degrees(a):g}" for a in logs.imu_mounting_rpy)
    text = README.format(
        scenario=name, k=k, seed=seed, duration=truth.duration, gnss_rate=logs.gnss_rate,
        gnss_sigma=list(logs.gnss_sigma), gnss_white=list(logs.gnss_white_sigma), gnss_tau=logs.gnss_tau,
        imu_rate=logs.imu_rate, imu_model=logs.imu_model, mounting=mounting, axes=logs.imu_axes,
        truth_rate=logs.truth_rate, truth_frame=logs.truth_frame,
        velocity=", with velocity columns" if logs.truth_velocity else ", no velocity columns",
        pos_sigma=logs.truth_position_sigma, att_sigma=math.degrees(logs.truth_attitude_sigma),
        jitter=logs.truth_stamp_jitter, datum=list(logs.datum),
        datum_option=(" --datum " + " ".join(f"{v:g}" for v in logs.datum)) if logs.truth_frame == "enu"
        else "")
    out = Path(out)
    with atomic_directory(out, overwrite=overwrite, empty=False) as temp:
        _write(temp / "gnss.csv", ("t", "lat", "lon", "alt"), gnss)
        _write(temp / "imu.csv", ("t", "ax", "ay", "az", "wx", "wy", "wz"), imu)
        _write(temp / "truth.csv", header, poses)
        (temp / "README.md").write_text(text, encoding="utf-8")
    return out


def options(**changes) -> RoverLogs:
    """``RoverLogs`` with some fields changed (unknown names are a UserError)."""
    known = {field.name for field in dataclasses.fields(RoverLogs)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise UserError(f"rover logs: unknown option(s) {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(known))}")
    return dataclasses.replace(RoverLogs(), **changes)
