"""A small ART-like message stream (IMU + GPS) for judge tests and benchmarks.

The vehicle drives on flat ground with heading ψ(t) = heading_rate·t from rest, speed
v(t) = min(accel·t, top_speed).  IMU frame ``imu`` is mounted as ART's base_link→imu TF
(yaw π, pitch −π/2): readings are R(base←imu)ᵀ·(body quantity); its orientation is the sensor attitude
in ENU.  GPS frame ``gps`` sits at base_link; positions become lat/lon on a local sphere around the datum.
Messages are duck-typed ROS messages (SimpleNamespace) in receive order.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import List, Tuple

import numpy as np

from .tf import StaticTransform, quaternion_from_matrix

ART_STATIC_TFS = (StaticTransform("base_link", "gps", (0.0, 0.0, 0.0), 0.0, 0.0, 0.0),
                  StaticTransform("base_link", "imu", (0.0, 0.0, 0.0), 3.1416, -1.5708, 0.0))
EARTH_RADIUS = 6378137.0
GRAVITY = 9.80665


def _stamp(ns: int):
    sec, nanosec = divmod(int(ns), 1_000_000_000)
    return SimpleNamespace(sec=sec, nanosec=nanosec)


def _vec(v):
    return SimpleNamespace(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def _quat(q):
    return SimpleNamespace(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3]))


def art_like_stream(duration: float = 30.0, imu_rate: float = 100.0, gps_rate: float = 10.0,
                    start: float = 10.0, accel: float = 0.5, top_speed: float = 3.0,
                    heading_rate: float = 0.0, seed: int = 0, datum=(43.070, -89.400, 260.0),
                    gyro_sigma: float = 0.01, accel_sigma: float = 0.05, gps_sigma: float = 0.5,
                    imu_latency: float = 0.0, gps_latency: float = 0.05) -> List[Tuple[int, str, object]]:
    """(recv_ns, topic, msg) for /imu and /fix over ``duration`` s starting at ``start`` s."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    mount = ART_STATIC_TFS[1].transform.rotation
    out = []

    # Planar path integrated on a 1 ms grid (trapezoid), sampled by interpolation.
    grid = np.arange(0.0, duration + 1.0, 1e-3)
    speed_grid = np.minimum(accel * grid, top_speed)
    yaw_grid = heading_rate * grid
    ve, vn = speed_grid * np.cos(yaw_grid), speed_grid * np.sin(yaw_grid)
    east_grid = np.concatenate([[0.0], np.cumsum(0.5 * (ve[1:] + ve[:-1]) * 1e-3)])
    north_grid = np.concatenate([[0.0], np.cumsum(0.5 * (vn[1:] + vn[:-1]) * 1e-3)])

    def kinematics(t):
        tau = t - start
        speed = min(accel * tau, top_speed)
        a_long = accel if accel * tau < top_speed else 0.0
        return (float(np.interp(tau, grid, east_grid)), float(np.interp(tau, grid, north_grid)),
                heading_rate * tau, speed, a_long)

    imu_period = int(round(1e9 / imu_rate))
    gps_period = int(round(1e9 / gps_rate))
    t0 = int(round(start * 1e9))
    t1 = int(round((start + duration) * 1e9))
    events = []
    for k in range(-(-t0 // imu_period), t1 // imu_period + 1):
        events.append((k * imu_period, "/imu"))
    for k in range(-(-t0 // gps_period), t1 // gps_period + 1):
        events.append((k * gps_period, "/fix"))
    events.sort(key=lambda e: (e[0], e[1]))
    lat0, lon0, alt0 = datum
    for stamp, topic in events:
        t = stamp * 1e-9
        east, north, yaw, speed, a_long = kinematics(t)
        if topic == "/imu":
            body_to_enu = np.array([[math.cos(yaw), -math.sin(yaw), 0.0], [math.sin(yaw), math.cos(yaw), 0.0],
                                    [0.0, 0.0, 1.0]])
            specific_force = np.array([a_long, speed * heading_rate, GRAVITY])
            omega = np.array([0.0, 0.0, heading_rate])
            accel_s = mount.T @ specific_force + rng.normal(0.0, accel_sigma, 3)
            gyro_s = mount.T @ omega + rng.normal(0.0, gyro_sigma, 3)
            q_sensor = quaternion_from_matrix(body_to_enu @ mount)
            msg = SimpleNamespace(
                header=SimpleNamespace(stamp=_stamp(stamp), frame_id="imu"),
                orientation=_quat(q_sensor), orientation_covariance=[1e-3, 0, 0, 0, 1e-3, 0, 0, 0, 1e-3],
                angular_velocity=_vec(gyro_s),
                angular_velocity_covariance=[gyro_sigma ** 2, 0, 0, 0, gyro_sigma ** 2, 0, 0, 0, gyro_sigma ** 2],
                linear_acceleration=_vec(accel_s),
                linear_acceleration_covariance=[accel_sigma ** 2, 0, 0, 0, accel_sigma ** 2, 0, 0, 0,
                                                accel_sigma ** 2])
            recv = stamp + int(round(imu_latency * 1e9))
        else:
            noisy_e, noisy_n = east + rng.normal(0.0, gps_sigma), north + rng.normal(0.0, gps_sigma)
            lat = lat0 + math.degrees(noisy_n / EARTH_RADIUS)
            lon = lon0 + math.degrees(noisy_e / (EARTH_RADIUS * math.cos(math.radians(lat0))))
            var = gps_sigma ** 2
            msg = SimpleNamespace(
                header=SimpleNamespace(stamp=_stamp(stamp), frame_id="gps"),
                status=SimpleNamespace(status=0, service=1), latitude=lat, longitude=lon, altitude=alt0,
                position_covariance=[var, 0, 0, 0, var, 0, 0, 0, 4 * var], position_covariance_type=2)
            recv = stamp + int(round(gps_latency * 1e9))
        out.append((recv, topic, msg))
    out.sort(key=lambda item: item[0])
    return out
