"""Read a standstill bag into plain arrays for the calibration math, and refuse bags that move.

Topics (read into arrays by their field tables, ``bags.columns``):
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

from .. import message_fields as F
from ..bags import open_bag
from ..bags.columns import read_topics
from ..bags.reader import require_topic
from ..errors import UserError
from ..stamps import ns_to_stamp_seconds
from . import gps as gps_stats

NAVSATFIX = F.NAVSATFIX.msgtype
IMU = F.IMU.msgtype
# msgtype -> (field table, velocity column)
VELOCITY_TYPES = {table.msgtype: (table, column) for table, column in (
    (F.SBG_GPS_VEL, "velocity"), (F.SBG_EKF_NAV, "velocity"), (F.ODOMETRY, "linear_velocity"),
    (F.TWIST_STAMPED, "linear_velocity"))}
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


def sorted_unique(t: np.ndarray, topic: str, source: str) -> np.ndarray:
    """Indices that put the messages in stamp order, dropping repeated stamps."""
    order = np.argsort(t, kind="stable")
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = np.diff(t[order]) > 0
    if keep.sum() < len(order) // 2:
        raise UserError(f"{source}: {topic}: most header stamps repeat (are they set by the driver?)")
    return order[keep]


def refuse_non_finite(path, topic: str, field: str, values: np.ndarray, used=None) -> None:
    """A NaN/inf in a field the statistics use is bad input: name bag, topic, field and message."""
    bad = ~np.isfinite(values).all(axis=1)
    if used is not None:
        bad &= used
    if bad.any():
        raise UserError(f"{path}: {topic}: {field} is NaN/inf in {int(bad.sum())} message(s), the first "
                        f"is message {int(np.argmax(bad))} (record order)")


def read_standstill_bag(path, gps_topic: str = "/fix", imu_topic: str = "/imu",
                        velocity_topic: str | None = None) -> StandstillData:
    """All GPS, IMU (and INS velocity) samples of a bag as arrays; missing topics are named."""
    path = Path(path)
    if gps_topic == imu_topic:
        raise UserError(f"--gps-topic and --imu-topic are both {gps_topic}; the GPS topic carries "
                        f"{NAVSATFIX}, the IMU topic {IMU}")
    with open_bag(path) as reader:
        topics = reader.topics
        expected = ((gps_topic, NAVSATFIX, "--gps-topic"), (imu_topic, IMU, "--imu-topic"))
        missing = [name for name, _type, _option in expected if name not in topics]
        if missing:
            have = ", ".join(f"{n} ({i.msgtype})" for n, i in sorted(topics.items())) or "none"
            raise UserError(f"{path}: missing topic(s) {', '.join(missing)}; the bag has: {have}")
        for name, msgtype, option in expected:
            require_topic(reader, name, msgtype, option)
        if velocity_topic is None:
            candidates = sorted(n for n, i in topics.items() if i.msgtype.startswith("sbg_driver/")
                                and i.msgtype in VELOCITY_TYPES)
            velocity_topic = candidates[0] if candidates else None
        elif velocity_topic not in topics:
            raise UserError(f"{path}: missing velocity topic {velocity_topic}")
        elif topics[velocity_topic].msgtype not in VELOCITY_TYPES:
            raise UserError(f"{path}: {velocity_topic} is {topics[velocity_topic].msgtype}; expected one of "
                            f"{', '.join(VELOCITY_TYPES)}")
        tables = {gps_topic: F.NAVSATFIX, imu_topic: F.IMU}
        names = {gps_topic: ("stamp_ns", "latitude", "longitude", "altitude", "status",
                             "position_covariance_type", "position_covariance"),
                 imu_topic: ("stamp_ns", "angular_velocity", "linear_acceleration")}
        if velocity_topic:
            tables[velocity_topic], velocity_column = VELOCITY_TYPES[topics[velocity_topic].msgtype]
            names[velocity_topic] = ("stamp_ns", velocity_column)
        columns = read_topics(reader, tables, names)

    fix, imu = columns[gps_topic], columns[imu_topic]  # never empty: read_topics refuses empty topics
    # one float table per topic, as the calibration math reads it: t (s, sec + nanosec·1e-9), values
    fixes = np.column_stack([ns_to_stamp_seconds(fix["stamp_ns"]), fix["latitude"], fix["longitude"],
                             fix["altitude"], fix["status"], fix["position_covariance_type"],
                             fix["position_covariance"]]).astype(float)
    valid = (fixes[:, 4] >= 0) & np.isfinite(fixes[:, 1:4]).all(axis=1)
    if valid.sum() == 0:
        raise UserError(f"{path}: {gps_topic}: every fix is NO_FIX or NaN")
    refuse_non_finite(path, gps_topic, "position_covariance", fixes[:, 6:15], valid)
    dropped = int((~valid).sum())
    fixes = fixes[valid]
    fixes = fixes[sorted_unique(fixes[:, 0], gps_topic, str(path))]
    imu_arr = np.column_stack([ns_to_stamp_seconds(imu["stamp_ns"]), imu["angular_velocity"],
                               imu["linear_acceleration"]])
    refuse_non_finite(path, imu_topic, "angular_velocity", imu_arr[:, 1:4])
    refuse_non_finite(path, imu_topic, "linear_acceleration", imu_arr[:, 4:7])
    imu_arr = imu_arr[sorted_unique(imu_arr[:, 0], imu_topic, str(path))]
    vel_t = vel = None
    if velocity_topic:
        vel_arr = np.column_stack([ns_to_stamp_seconds(columns[velocity_topic]["stamp_ns"]),
                                   columns[velocity_topic][velocity_column]])
        vel_arr = vel_arr[np.argsort(vel_arr[:, 0], kind="stable")]
        vel_t, vel = vel_arr[:, 0], vel_arr[:, 1:4]
    return StandstillData(
        source=str(path), gps_topic=gps_topic, imu_topic=imu_topic,
        gps=GpsSeries(fixes[:, 0], fixes[:, 1], fixes[:, 2], fixes[:, 3], fixes[:, 4].astype(int),
                      fixes[:, 6:15], fixes[:, 5].astype(int), dropped),
        imu=ImuSeries(imu_arr[:, 0], imu_arr[:, 1:4], imu_arr[:, 4:7]),
        velocity_topic=velocity_topic, velocity_t=vel_t, velocity=vel,
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
