"""Read a standstill bag into plain arrays for the calibration math, and refuse bags that move.

Topics (message fields read by name, so rosbags and rclpy messages both work):
- GPS: sensor_msgs/NavSatFix — header stamp, latitude, longitude, altitude, status.status,
  position_covariance, position_covariance_type.  NO_FIX fixes and NaN positions are dropped.
- IMU: sensor_msgs/Imu — header stamp, angular_velocity, linear_acceleration.
- INS velocity (optional, for the motion check): sbg_driver SbgGpsVel / SbgEkfNav (``velocity``),
  nav_msgs/Odometry (``twist.twist.linear``) or geometry_msgs/TwistStamped (``twist.linear``).
Times are header stamps (data clock), in seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError
from . import gps as gps_stats

NAVSATFIX = "sensor_msgs/msg/NavSatFix"
IMU = "sensor_msgs/msg/Imu"
VELOCITY_TYPES = {
    "sbg_driver/msg/SbgGpsVel": lambda m: m.velocity,
    "sbg_driver/msg/SbgEkfNav": lambda m: m.velocity,
    "nav_msgs/msg/Odometry": lambda m: m.twist.twist.linear,
    "geometry_msgs/msg/TwistStamped": lambda m: m.twist.linear,
}
DEFAULT_MAX_SPEED = 0.1  # m/s: a parked vehicle's GPS drifts by cm over 10 s; a creeping one shows


@dataclass(frozen=True)
class GpsSeries:
    t: np.ndarray            # (N,) s
    latitude: np.ndarray     # (N,) deg
    longitude: np.ndarray
    altitude: np.ndarray     # (N,) m
    status: np.ndarray       # (N,) int
    covariance: np.ndarray   # (N, 9) ENU m²
    covariance_type: np.ndarray  # (N,) int
    dropped: int             # NO_FIX / NaN fixes left out


@dataclass(frozen=True)
class ImuSeries:
    t: np.ndarray       # (N,) s
    gyro: np.ndarray    # (N, 3) rad/s
    accel: np.ndarray   # (N, 3) m/s²


@dataclass(frozen=True)
class StandstillData:
    source: str
    gps_topic: str
    imu_topic: str
    gps: GpsSeries
    imu: ImuSeries
    velocity_topic: str | None
    velocity_t: np.ndarray | None   # (M,) s
    velocity: np.ndarray | None     # (M, 3) m/s, frame as recorded (only its horizontal norm is used)


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def _xyz(v) -> tuple:
    return (v.x, v.y, v.z)


def _sorted_unique(t: np.ndarray, topic: str, source: str) -> np.ndarray:
    """Indices that put the messages in stamp order, dropping repeated stamps."""
    order = np.argsort(t, kind="stable")
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = np.diff(t[order]) > 0
    if keep.sum() < len(order) // 2:
        raise UserError(f"{source}: {topic}: most header stamps repeat (are they set by the driver?)")
    return order[keep]


def read_standstill_bag(path, gps_topic: str = "/fix", imu_topic: str = "/imu",
                        velocity_topic: str | None = None) -> StandstillData:
    """All GPS, IMU (and INS velocity) samples of a bag as arrays; missing topics are named."""
    from ..bags import open_bag  # heavy import (rosbags) only when a bag is read

    path = Path(path)
    with open_bag(path) as reader:
        topics = reader.topics
        expected = {gps_topic: NAVSATFIX, imu_topic: IMU}
        missing = [name for name in expected if name not in topics]
        if missing:
            have = ", ".join(f"{n} ({i.msgtype})" for n, i in sorted(topics.items())) or "none"
            raise UserError(f"{path}: missing topic(s) {', '.join(missing)}; the bag has: {have}")
        for name, msgtype in expected.items():
            if topics[name].msgtype != msgtype:
                raise UserError(f"{path}: {name} is {topics[name].msgtype}, expected {msgtype}")
        if velocity_topic is None:
            candidates = sorted(n for n, i in topics.items() if i.msgtype.startswith("sbg_driver/")
                                and i.msgtype in VELOCITY_TYPES)
            velocity_topic = candidates[0] if candidates else None
        elif velocity_topic not in topics:
            raise UserError(f"{path}: missing velocity topic {velocity_topic}")
        elif topics[velocity_topic].msgtype not in VELOCITY_TYPES:
            raise UserError(f"{path}: {velocity_topic} is {topics[velocity_topic].msgtype}; expected one of "
                            f"{', '.join(VELOCITY_TYPES)}")
        velocity_of = VELOCITY_TYPES[topics[velocity_topic].msgtype] if velocity_topic else None

        fix_rows, imu_rows, vel_rows = [], [], []
        wanted = [gps_topic, imu_topic] + ([velocity_topic] if velocity_topic else [])
        for message in reader.messages(wanted):
            msg = message.msg
            if message.topic == gps_topic:
                fix_rows.append((_stamp(msg), msg.latitude, msg.longitude, msg.altitude, msg.status.status,
                                 int(msg.position_covariance_type), *np.asarray(msg.position_covariance)))
            elif message.topic == imu_topic:
                imu_rows.append((_stamp(msg), *_xyz(msg.angular_velocity), *_xyz(msg.linear_acceleration)))
            else:
                vel_rows.append((_stamp(msg), *_xyz(velocity_of(msg))))

    for topic, rows in ((gps_topic, fix_rows), (imu_topic, imu_rows)):
        if not rows:
            raise UserError(f"{path}: topic {topic} has no messages")
    fixes = np.array(fix_rows, dtype=float)
    valid = (fixes[:, 4] >= 0) & np.isfinite(fixes[:, 1:4]).all(axis=1)
    if valid.sum() == 0:
        raise UserError(f"{path}: {gps_topic}: every fix is NO_FIX or NaN")
    dropped = int((~valid).sum())
    fixes = fixes[valid]
    fixes = fixes[_sorted_unique(fixes[:, 0], gps_topic, str(path))]
    imu_arr = np.array(imu_rows, dtype=float)
    imu_arr = imu_arr[_sorted_unique(imu_arr[:, 0], imu_topic, str(path))]
    vel_t = vel = None
    if vel_rows:
        vel_arr = np.array(vel_rows, dtype=float)
        vel_arr = vel_arr[np.argsort(vel_arr[:, 0], kind="stable")]
        vel_t, vel = vel_arr[:, 0], vel_arr[:, 1:4]
    return StandstillData(
        source=str(path), gps_topic=gps_topic, imu_topic=imu_topic,
        gps=GpsSeries(fixes[:, 0], fixes[:, 1], fixes[:, 2], fixes[:, 3], fixes[:, 4].astype(int),
                      fixes[:, 6:15], fixes[:, 5].astype(int), dropped),
        imu=ImuSeries(imu_arr[:, 0], imu_arr[:, 1:4], imu_arr[:, 4:7]),
        velocity_topic=velocity_topic if vel_rows else None, velocity_t=vel_t, velocity=vel,
    )


def velocity_speed(t: np.ndarray, velocity: np.ndarray, window: float = 1.0) -> float:
    """Largest 1-s moving average of the horizontal speed √(v0² + v1²) (m/s; NED or ENU alike)."""
    speed = np.hypot(velocity[:, 0], velocity[:, 1])
    if len(speed) < 2:
        return float(speed.max()) if len(speed) else 0.0
    period = float(np.median(np.diff(t)))
    width = max(1, int(round(window / period))) if period > 0 else 1
    width = min(width, len(speed))
    return float(np.convolve(speed, np.ones(width) / width, mode="valid").max())


def check_standstill(data: StandstillData, enu: np.ndarray, max_speed: float = DEFAULT_MAX_SPEED) -> dict:
    """Refuse a bag that moves: measured speeds (m/s) from GPS displacement and INS velocity.

    GPS: largest speed between 10-s window means (gps.windowed_speed).  INS: largest 1-s average of
    the horizontal speed.  Either above max_speed → UserError with the measured value.
    """
    speeds = {"gps_displacement": gps_stats.windowed_speed(data.gps.t, enu)}
    if data.velocity is not None:
        speeds["ins_velocity"] = velocity_speed(data.velocity_t, data.velocity)
    for what, speed in speeds.items():
        if speed > max_speed:
            topic = data.gps_topic if what == "gps_displacement" else data.velocity_topic
            raise UserError(
                f"{data.source}: not a standstill: {topic} shows the vehicle moving at {speed:.3f} m/s "
                f"({what.replace('_', ' ')}; limit --max-speed {max_speed:g} m/s)"
            )
    return speeds
