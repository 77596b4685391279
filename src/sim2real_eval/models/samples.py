"""Containers of simulated sensor output: exactly the content of the ROS messages, as arrays.

Bag writers and ROS nodes only copy these arrays into sensor_msgs/NavSatFix, sensor_msgs/Imu and
sensor_msgs/MagneticField; every content decision (status, covariance type, −1 = not provided)
is made by the models.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import List, Optional

import numpy as np

# sensor_msgs/NavSatStatus and NavSatFix constants.
STATUS_NO_FIX = -1
STATUS_FIX = 0
STATUS_SBAS_FIX = 1
STATUS_GBAS_FIX = 2
SERVICE_GPS = 1
SERVICE_GLONASS = 2
SERVICE_COMPASS = 4
SERVICE_GALILEO = 8
COVARIANCE_TYPE_UNKNOWN = 0
COVARIANCE_TYPE_APPROXIMATED = 1
COVARIANCE_TYPE_DIAGONAL_KNOWN = 2
COVARIANCE_TYPE_KNOWN = 3

_GPS_DTYPES = {
    "stamp_ns": np.int64,
    "receive_ns": np.int64,
    "latitude": np.float64,
    "longitude": np.float64,
    "altitude": np.float64,
    "status": np.int8,
    "service": np.uint16,
    "position_covariance": np.float64,
    "position_covariance_type": np.uint8,
    "enu_error": np.float64,
}
_IMU_DTYPES = {
    "stamp_ns": np.int64,
    "receive_ns": np.int64,
    "orientation": np.float64,
    "orientation_covariance": np.float64,
    "angular_velocity": np.float64,
    "angular_velocity_covariance": np.float64,
    "linear_acceleration": np.float64,
    "linear_acceleration_covariance": np.float64,
    "magnetic_field": np.float64,
    "magnetic_field_covariance": np.float64,
}


class _Series:
    """Shared behaviour: length, row selection, concatenation, plain-dict export."""

    _dtypes: dict = {}

    def __post_init__(self):
        for name, dtype in self._dtypes.items():
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, np.ascontiguousarray(value, dtype=dtype))

    def __len__(self) -> int:
        return int(self.stamp_ns.shape[0])

    def _arrays(self):
        return [f.name for f in fields(self) if f.name != "frame_id" and getattr(self, f.name) is not None]

    def select(self, rows):
        """A new container with the rows selected by a boolean mask or an index array."""
        kwargs = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in self._arrays():
            kwargs[name] = kwargs[name][rows]
        return type(self)(**kwargs)

    @classmethod
    def concatenate(cls, parts: List) -> _Series:
        """Join series (e.g. the outputs of successive ``step`` calls) in order."""
        if not parts:
            raise ValueError("concatenate needs at least one part")
        first = parts[0]
        kwargs = {f.name: getattr(first, f.name) for f in fields(first)}
        for name in first._arrays():
            kwargs[name] = np.concatenate([getattr(p, name) for p in parts], axis=0)
        return cls(**kwargs)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self._arrays()}


@dataclass(frozen=True)
class GpsSamples(_Series):
    """NavSatFix content, N fixes.

    stamp_ns (N,) int64 header stamp (measurement time, data clock); receive_ns (N,) int64 time the
    message leaves the receiver (stamp + latency).  latitude/longitude degrees, altitude m (WGS-84
    ellipsoid, or the Chrono sphere when selected).  status (N,) int8 NavSatStatus; service (N,)
    uint16.  position_covariance (N, 9) ENU m², row-major; position_covariance_type (N,) uint8.
    enu_error (N, 3): the position error added in the local ENU frame, metres (diagnostics).
    """

    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    latitude: np.ndarray
    longitude: np.ndarray
    altitude: np.ndarray
    status: np.ndarray
    service: np.ndarray
    position_covariance: np.ndarray
    position_covariance_type: np.ndarray
    enu_error: np.ndarray
    frame_id: str = "gps"

    _dtypes = _GPS_DTYPES


@dataclass(frozen=True)
class ImuSamples(_Series):
    """sensor_msgs/Imu content (REP-145), N samples, all in the IMU (sensor) frame.

    orientation (N, 4) xyzw: attitude of the sensor frame in ENU (yaw 0 = x facing east).
    angular_velocity (N, 3) rad/s body rates; linear_acceleration (N, 3) m/s² specific force
    (+9.80665 on the up-pointing axis at rest).  Covariances (N, 9) row-major; element 0 = −1 means
    "not provided".  magnetic_field (N, 3) tesla in the sensor frame (+ covariance) when the
    magnetometer is on, else None.
    """

    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    orientation: np.ndarray
    orientation_covariance: np.ndarray
    angular_velocity: np.ndarray
    angular_velocity_covariance: np.ndarray
    linear_acceleration: np.ndarray
    linear_acceleration_covariance: np.ndarray
    frame_id: str = "imu"
    magnetic_field: Optional[np.ndarray] = None
    magnetic_field_covariance: Optional[np.ndarray] = None

    _dtypes = _IMU_DTYPES
