"""Magnetometer (sensor_msgs/MagneticField content): the earth field in ENU, rotated into the sensor frame.

B_sensor = R_wsᵀ·B_enu (µT), passed through a 3-axis noise process whose parameters are in µT
(e.g. MAVS's magnetometer defaults), then reported in tesla.  Default field: MAVS's
[27.5550, −2.4169, −16.0849] µT (ENU).  Robot-side: Python 3.8, numpy only.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from .. import rotations
from ..yamlio import Section
from .noise_config import CHANNEL_MODELS, build_noise

DEFAULT_FIELD_UT = (27.5550, -2.4169, -16.0849)
TESLA_PER_MICROTESLA = 1e-6


class Magnetometer:
    def __init__(self, sec: Section, seq, rate: float):
        sec.unknown_keys(["enabled", "field", "noise"])
        self.enabled = bool(sec.boolean("enabled", False))
        self.field_ut = np.array(sec.vector("field", 3, list(DEFAULT_FIELD_UT)), dtype=float)
        self.noise = build_noise(sec.section("noise"), seq, rate, CHANNEL_MODELS)

    @property
    def params(self) -> Dict:
        return {"enabled": self.enabled, "field": self.field_ut.tolist(), "noise": dict(self.noise.params)}

    def measure(self, sensor_orientation: np.ndarray, dt: np.ndarray) -> np.ndarray:
        """(N, 3) tesla in the sensor frame for sensor attitudes (N, 4) xyzw in ENU."""
        true_ut = rotations.rotate_inverse(sensor_orientation, self.field_ut)
        return self.noise.apply(true_ut, dt) * TESLA_PER_MICROTESLA

    def variance_tesla2(self, dt: float) -> np.ndarray:
        return self.noise.white_variance(dt) * TESLA_PER_MICROTESLA**2

    def stationary_variance_tesla2(self, dt: float):
        variance = self.noise.stationary_variance(dt)
        return None if variance is None else variance * TESLA_PER_MICROTESLA**2
