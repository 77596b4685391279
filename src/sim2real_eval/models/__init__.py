"""Sensor noise models (robot-side: Python 3.8, numpy only).

    from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed, GpsSamples, ImuSamples

    gps = load_gps_model("ch_rw", sensor_seed(3, "ch_rw", "circle", 0, "gps"), datum=[lat, lon, alt])
    fixes = gps.sample(truth)                      # batch, default 10 Hz ticks on the data clock
    fix = gps.step(stamp_ns, truth_at_stamp)       # streaming, 0 or 1 fix, same numbers as batch

Specs: a preset name (``config/sensors/{gps,imu}/<name>.yaml``), a YAML path, or a dict.
See docs/models.md for every model's equations and the paper-vs-code differences.
"""

from __future__ import annotations

from ..stamps import period_ns  # re-exported: the models' tick period
from .base import available_presets, default_stamps
from .gps import GpsModel, load_gps_model
from .imu import ImuModel, load_imu_model
from .samples import GpsSamples, ImuSamples
from .seeding import sensor_seed

__all__ = [
    "GpsModel",
    "GpsSamples",
    "ImuModel",
    "ImuSamples",
    "available_presets",
    "default_stamps",
    "load_gps_model",
    "load_imu_model",
    "period_ns",
    "sensor_seed",
]
