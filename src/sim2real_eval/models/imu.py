"""IMU model: ground truth -> sensor_msgs/Imu content per REP-145 (robot-side: Python 3.8, numpy only).

Frames: truth gives the base_link attitude q_wb (ENU), body rates ω_b and specific force f_b
(+g on z at rest).  The IMU is mounted with rotation R_bs (sensor frame in base_link,
``mounting_rpy`` = [roll, pitch, yaw], R = Rz·Ry·Rx as tf2); it reports in its own frame:
  f_s = R_bsᵀ·f_b,  ω_s = R_bsᵀ·ω_b,  q_ws = q_wb ⊗ q_bs  (attitude of the SENSOR frame in ENU).
(No lever arm: the sensor sits at the base_link origin.)  Accelerometer, gyroscope and magnetometer
noise are independent 3-axis processes (``models.noise``): none, gaussian, chrono_drift, airsim,
mavs, gauss_markov.

Parameters (YAML keys):
  rate (Hz, 100)  frame_id "imu"  mounting_rpy [0, 0, 0] rad  latency (s, 0)
  accelerometer {model: …} (m/s²)   gyroscope {model: …} (rad/s)
  orientation {sigma: [r, p, y] rad}: small-angle noise q ⊗ q(σ·z) (default exact)
  magnetometer {enabled, field µT ENU, noise {…} µT}
  reported_covariance {linear_acceleration, angular_velocity, orientation, magnetic_field}:
      auto (diag of the model's white-noise variance at the nominal rate; orientation: σ²),
      noise (diag of the channel's whole stationary error variance: white + bias processes — what an
      honest driver reports; refused for a channel whose bias is a random walk),
      not_provided (element 0 = −1), or three variances.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from .. import rotations
from ..errors import UserError
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
from .magnetometer import Magnetometer
from .noise_config import CHANNEL_MODELS, build_noise
from .seeding import as_seed_sequence, child, generator

REPORTED = ("linear_acceleration", "angular_velocity", "orientation", "magnetic_field")


def _covariance_row(sec: Section, key: str, auto_variance: np.ndarray, noise_variance=None):
    """Reported 3×3 covariance (9,) row-major, or [−1, 0, …] for "not provided"; plus its YAML form.

    ``noise_variance``: the channel's stationary error variance (None: it has none)."""
    value = sec.data.get(key, "auto")
    row = np.zeros(9)
    if value == "not_provided":
        row[0] = -1.0
        return row, value
    if value == "auto":
        row[[0, 4, 8]] = auto_variance
        return row, value
    if value == "noise":
        if noise_variance is None:
            raise sec.error(key, "noise: this channel's bias is a random walk, so its error has no "
                                 "stationary variance; give auto or three variances")
        row[[0, 4, 8]] = noise_variance
        return row, value
    variances = sec.vector(key, 3, nonnegative=True)
    row[[0, 4, 8]] = variances
    return row, variances


class ImuModel(SensorModel):
    """One simulated IMU; ``sample`` (batch) and ``step`` (streaming) give identical numbers."""

    TOP_KEYS = (
        "rate",
        "frame_id",
        "mounting_rpy",
        "latency",
        "accelerometer",
        "gyroscope",
        "orientation",
        "magnetometer",
        "reported_covariance",
    )

    def __init__(self, params: Dict, source: str, seed_sequence):
        sec = Section(params, source)
        sec.unknown_keys(self.TOP_KEYS)
        self.source = source
        self.rate = model_rate(sec, "imu", 100.0)
        self.period_ns = period_ns(self.rate)
        self.frame_id = sec.string("frame_id", "imu")
        self.mounting_rpy = sec.vector("mounting_rpy", 3, [0.0, 0.0, 0.0])
        self.mounting = rotations.from_rpy(*self.mounting_rpy)
        self.identity_mounting = not any(self.mounting_rpy)
        self.latency_ns = int(round(sec.number("latency", 0.0, nonnegative=True) * 1e9))
        seq = as_seed_sequence(seed_sequence, f"{source}: seed")
        self.accelerometer = build_noise(
            sec.section("accelerometer"), child(seq, 0), self.rate, CHANNEL_MODELS
        )
        self.gyroscope = build_noise(sec.section("gyroscope"), child(seq, 1), self.rate, CHANNEL_MODELS)
        orientation = sec.section("orientation")
        orientation.unknown_keys(["sigma"])
        self.orientation_sigma = np.array(orientation.vector("sigma", 3, [0.0] * 3, nonnegative=True))
        self.orientation_rng = generator(seq, 2)
        self.magnetometer = Magnetometer(sec.section("magnetometer"), child(seq, 3), self.rate)
        reported = sec.section("reported_covariance")
        reported.unknown_keys(REPORTED)
        dt = 1.0 / self.rate
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
            self.accel_cov, accel_yaml = _covariance_row(
                reported, "linear_acceleration", self.accelerometer.white_variance(dt),
                self.accelerometer.stationary_variance(dt)
            )
            self.gyro_cov, gyro_yaml = _covariance_row(
                reported, "angular_velocity", self.gyroscope.white_variance(dt),
                self.gyroscope.stationary_variance(dt)
            )
            self.orientation_cov, orientation_yaml = _covariance_row(
                reported, "orientation", self.orientation_sigma**2, self.orientation_sigma**2
            )
            self.mag_cov, mag_yaml = _covariance_row(
                reported, "magnetic_field", self.magnetometer.variance_tesla2(dt),
                self.magnetometer.stationary_variance_tesla2(dt)
            )
        for key, row in zip(REPORTED, (self.accel_cov, self.gyro_cov, self.orientation_cov, self.mag_cov)):
            if not np.isfinite(row).all():
                raise reported.error(key, "the variance overflows float64 (noise parameters too large)")
        self.reported_yaml = {
            "linear_acceleration": accel_yaml,
            "angular_velocity": gyro_yaml,
            "orientation": orientation_yaml,
            "magnetic_field": mag_yaml,
        }
        self.clock = SampleClock(self.period_ns, source)

    @property
    def parameters(self) -> Dict:
        """The effective parameters as plain YAML-friendly data (for run.yaml)."""
        return {
            "rate": self.rate,
            "frame_id": self.frame_id,
            "mounting_rpy": list(self.mounting_rpy),
            "latency": self.latency_ns / 1e9,
            "accelerometer": dict(self.accelerometer.params),
            "gyroscope": dict(self.gyroscope.params),
            "orientation": {"sigma": self.orientation_sigma.tolist()},
            "magnetometer": self.magnetometer.params,
            "reported_covariance": dict(self.reported_yaml),
        }

    def sensor_frame(self, truth: GroundTruth):
        """True (orientation q_ws, angular velocity ω_s, specific force f_s) in the sensor frame."""
        if self.identity_mounting:
            return truth.orientation, truth.angular_velocity, truth.specific_force
        return (
            rotations.multiply(truth.orientation, self.mounting),
            rotations.rotate_inverse(self.mounting, truth.angular_velocity),
            rotations.rotate_inverse(self.mounting, truth.specific_force),
        )

    def measure(self, stamps: np.ndarray, truth: GroundTruth) -> S.ImuSamples:
        """The samples at int64 ``stamps`` given the truth already at those stamps (one row each).

        ``sample`` and ``step`` both end here; call it directly when the truth is already on the ticks.
        Stamps must be later than every stamp measured before (the model's state moves forward).
        """
        n = len(stamps)
        dt, _ = self.clock.advance(stamps)
        orientation, rates, force = self.sensor_frame(truth)
        with np.errstate(over="ignore", invalid="ignore"):  # checked below, by channel
            accel = self.accelerometer.apply(force, dt)
            gyro = self.gyroscope.apply(rates, dt)
            if self.orientation_sigma.any():  # configuration decides: both hosts draw or both skip
                tilt = self.orientation_rng.standard_normal((n, 3)) * self.orientation_sigma
                orientation = rotations.multiply(
                    orientation, rotations.from_rpy(tilt[:, 0], tilt[:, 1], tilt[:, 2])
                )
            magnetic_field = magnetic_cov = None
            if self.magnetometer.enabled:
                magnetic_field = self.magnetometer.measure(orientation, dt)
                magnetic_cov = np.tile(self.mag_cov, (n, 1))
        for channel, values in (("accelerometer", accel), ("gyroscope", gyro), ("orientation", orientation),
                                ("magnetometer", magnetic_field)):
            if values is not None and not np.isfinite(values).all():
                row = int(np.argmin(np.isfinite(values).all(axis=1)))
                raise UserError(f"{self.source}: {channel}: the model produced a non-finite value at stamp "
                                f"{int(stamps[row]) / 1e9:.3f} s (parameters too large for float64?)")
        return S.ImuSamples(
            stamp_ns=stamps,
            receive_ns=stamps + self.latency_ns,
            orientation=orientation,
            orientation_covariance=np.tile(self.orientation_cov, (n, 1)),
            angular_velocity=gyro,
            angular_velocity_covariance=np.tile(self.gyro_cov, (n, 1)),
            linear_acceleration=accel,
            linear_acceleration_covariance=np.tile(self.accel_cov, (n, 1)),
            frame_id=self.frame_id,
            magnetic_field=magnetic_field,
            magnetic_field_covariance=magnetic_cov,
        )


def load_imu_model(spec, seed_sequence=None, **overrides) -> ImuModel:
    """An IMU model from a preset name, YAML path or dict (+ keyword overrides of top-level keys)."""
    params, source = resolve_spec(spec, "imu", overrides)
    return ImuModel(params, source, seed_sequence)
