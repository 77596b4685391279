"""A small ART-like message stream (IMU + GPS) for judge tests and benchmarks.

The vehicle drives on flat ground with heading ψ(t) = heading_rate·t from rest, speed
v(t) = min(accel·t, top_speed).  IMU frame ``imu`` is mounted as ART's base_link→imu TF
(yaw π, pitch −π/2): readings are R(base←imu)ᵀ·(body quantity); its orientation is the sensor attitude
in ENU.  GPS frame ``gps`` sits at base_link; positions become lat/lon on a local sphere around the datum.
``art_like_samples`` gives the model containers (ImuSamples, GpsSamples); ``art_like_stream`` the
rosbags messages built from them (bags.messages), in receive order.
"""

from __future__ import annotations

import math
from typing import List, Tuple

import numpy as np

from .. import art
from ..bags import messages as bag_messages
from ..models.samples import GpsSamples, ImuSamples
from .tf import parse_static_tf, quaternion_from_matrix

# The ART launch's static TFs (art.py), parsed; gps first, imu second (callers index them).
ART_STATIC_TFS = tuple(sorted((parse_static_tf(text) for text in art.ART_STATIC_TFS),
                              key=lambda tf: tf.child))
EARTH_RADIUS = 6378137.0
GRAVITY = 9.80665


def art_like_samples(
    duration: float = 30.0,
    imu_rate: float = 100.0,
    gps_rate: float = 10.0,
    start: float = 10.0,
    accel: float = 0.5,
    top_speed: float = 3.0,
    heading_rate: float = 0.0,
    seed: int = 0,
    datum=(43.070, -89.400, 260.0),
    gyro_sigma: float = 0.01,
    accel_sigma: float = 0.05,
    gps_sigma: float = 0.5,
    imu_latency: float = 0.0,
    gps_latency: float = 0.05,
):
    """(ImuSamples, GpsSamples) of the synthetic drive over ``duration`` s starting at ``start`` s."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    mount = ART_STATIC_TFS[1].transform.rotation
    # Planar path integrated on a 1 ms grid (trapezoid), sampled by interpolation.
    grid = np.arange(0.0, duration + 1.0, 1e-3)
    speed_grid = np.minimum(accel * grid, top_speed)
    yaw_grid = heading_rate * grid
    ve, vn = speed_grid * np.cos(yaw_grid), speed_grid * np.sin(yaw_grid)
    east_grid = np.concatenate([[0.0], np.cumsum(0.5 * (ve[1:] + ve[:-1]) * 1e-3)])
    north_grid = np.concatenate([[0.0], np.cumsum(0.5 * (vn[1:] + vn[:-1]) * 1e-3)])

    def ticks(rate):
        period = int(round(1e9 / rate))
        t0, t1 = int(round(start * 1e9)), int(round((start + duration) * 1e9))
        return np.arange(-(-t0 // period), t1 // period + 1, dtype=np.int64) * period

    imu_stamps = ticks(imu_rate)
    tau = imu_stamps * 1e-9 - start
    speed = np.minimum(accel * tau, top_speed)
    a_long = np.where(accel * tau < top_speed, accel, 0.0)
    yaw = heading_rate * tau
    specific_force = np.stack([a_long, speed * heading_rate, np.full_like(tau, GRAVITY)], axis=1)
    omega = np.zeros((len(tau), 3))
    omega[:, 2] = heading_rate
    accel_s = specific_force @ mount + rng.normal(0.0, accel_sigma, (len(tau), 3))  # rows: mountᵀ·f
    gyro_s = omega @ mount + rng.normal(0.0, gyro_sigma, (len(tau), 3))
    orientation = np.array(
        [
            quaternion_from_matrix(
                np.array([[math.cos(y), -math.sin(y), 0.0], [math.sin(y), math.cos(y), 0.0], [0.0, 0.0, 1.0]])
                @ mount
            )
            for y in yaw
        ]
    )
    n = len(tau)

    def diag(var):
        return np.tile(np.diag(var).reshape(9), (n, 1))

    imu = ImuSamples(
        imu_stamps,
        imu_stamps + int(round(imu_latency * 1e9)),
        orientation,
        diag([1e-3] * 3),
        gyro_s,
        diag([gyro_sigma**2] * 3),
        accel_s,
        diag([accel_sigma**2] * 3),
        frame_id=art.IMU_FRAME,
    )

    gps_stamps = ticks(gps_rate)
    tau = gps_stamps * 1e-9 - start
    m = len(tau)
    east = np.interp(tau, grid, east_grid) + rng.normal(0.0, gps_sigma, m)
    north = np.interp(tau, grid, north_grid) + rng.normal(0.0, gps_sigma, m)
    lat0, lon0, alt0 = datum
    latitude = lat0 + np.degrees(north / EARTH_RADIUS)
    longitude = lon0 + np.degrees(east / (EARTH_RADIUS * math.cos(math.radians(lat0))))
    var = gps_sigma**2
    gps = GpsSamples(
        gps_stamps,
        gps_stamps + int(round(gps_latency * 1e9)),
        latitude,
        longitude,
        np.full(m, alt0),
        np.zeros(m, np.int8),
        np.ones(m, np.uint16),
        np.tile([var, 0, 0, 0, var, 0, 0, 0, 4 * var], (m, 1)),
        np.full(m, 2, np.uint8),
        np.zeros((m, 3)),
        frame_id=art.GPS_FRAME,
    )
    return imu, gps


def art_like_stream(**kwargs) -> List[Tuple[int, str, object]]:
    """(recv_ns, topic, msg) for /imu and /fix in receive order (arguments as art_like_samples); the
    messages are rosbags sensor_msgs/Imu and NavSatFix (IMU before GPS at equal receive times)."""
    imu, gps = art_like_samples(**kwargs)
    messages = bag_messages.imu_messages(imu, art.TOPICS["imu"])
    messages += bag_messages.navsatfix_messages(gps, art.TOPICS["gps"])
    out = [(recv, topic, msg) for recv, topic, _type, msg in messages]
    out.sort(key=lambda item: item[0])  # stable: IMU before GPS at equal receive times
    return out


def art_like_records(**kwargs) -> list:
    """The same stream as CDR records (recv_ns, topic, msgtype, bytes): what a bag holds."""
    imu, gps = art_like_samples(**kwargs)
    out = list(bag_messages.imu_cdr(imu, art.TOPICS["imu"]))
    out += bag_messages.navsatfix_cdr(gps, art.TOPICS["gps"])
    out.sort(key=lambda item: item[0])
    return out
