"""ROS messages (rosbags dataclasses) from the project's containers, ready for ``write_bag`` / the judge.

Every ``*_messages`` builder yields ``BagMessage(recv_ns, topic, msgtype, msg)`` in the container's
order.  The builders only copy arrays into fields; content decisions (status, covariance types,
−1 for "not provided") belong to the models.  Messages are built by calling the typestore's
dataclasses directly with Python scalars (``tolist()`` once per array) and covariance rows as numpy
views, which keeps a million messages cheap (see benchmarks/bench_bags.py).

The ``*_cdr`` builders return the same messages already serialised (CDR bytes, byte-identical to
``typestore.serialize_cdr`` of the ``*_messages`` objects, see tests/test_bags_cdr.py), encoded for a
whole stream at once by ``bags.cdr`` — what the pipeline writes to bags without building objects.

Also here: builders of sbg_driver messages from a GroundTruth (the inverse of ``bags.truth``), used to
make synthetic "ART-like" real bags for tests and demos.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from rosbags.typesys.base import Nodetype
from rosbags.typesys.store import Typestore

from .. import geodesy, rotations, sbg
from ..truth import GroundTruth
from . import cdr
from .reader import BagMessage
from .typestore import get_typestore

NS_PER_S = 1_000_000_000

NAVSATFIX = "sensor_msgs/msg/NavSatFix"
IMU = "sensor_msgs/msg/Imu"
MAGNETIC_FIELD = "sensor_msgs/msg/MagneticField"
ODOMETRY = "nav_msgs/msg/Odometry"
SBG_GPS_VEL = "sbg_driver/msg/SbgGpsVel"
SBG_GPS_POS = "sbg_driver/msg/SbgGpsPos"
SBG_EKF_NAV = "sbg_driver/msg/SbgEkfNav"
SBG_EKF_QUAT = "sbg_driver/msg/SbgEkfQuat"


def _store(typestore: Typestore | None) -> Typestore:
    return typestore if typestore is not None else get_typestore()


def seconds_to_ns(t) -> np.ndarray:
    """Seconds (float) -> int64 nanoseconds, rounded to the nearest ns."""
    return np.rint(np.asarray(t, dtype=np.float64) * 1e9).astype(np.int64)


def stamp_to_ns(stamp) -> int:
    """builtin_interfaces/Time (or ROS 1 time with .sec/.nanosec) -> int ns."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def header(stamp_ns: int, frame_id: str, typestore: Typestore | None = None):
    """std_msgs/Header with stamp = ``stamp_ns`` (int ns; floor division keeps nanosec in [0, 1e9))."""
    types = _store(typestore).types
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    return types["std_msgs/msg/Header"](types["builtin_interfaces/msg/Time"](sec, nanosec), frame_id)


def default_message(msgtype: str, typestore: Typestore | None = None):
    """A message of ``msgtype`` with every field zero / False / empty (recursively)."""
    store = _store(typestore)
    return _default_of(store, msgtype)


_BASE_DEFAULTS = {"bool": False, "string": "", "float32": 0.0, "float64": 0.0}


def _default_value(store: Typestore, node):
    kind, spec = node
    if kind == Nodetype.BASE:
        return _BASE_DEFAULTS.get(spec[0], 0)
    if kind == Nodetype.NAME:
        return _default_of(store, spec)
    inner, count = spec
    if inner[0] == Nodetype.BASE and inner[1][0] not in ("string", "bool"):
        dtype = np.float32 if inner[1][0] == "float32" else (np.float64 if inner[1][0] == "float64"
                                                             else np.dtype(inner[1][0]))
        return np.zeros(count if kind == Nodetype.ARRAY else 0, dtype=dtype)
    return [_default_value(store, inner) for _ in range(count if kind == Nodetype.ARRAY else 0)]


def _default_of(store: Typestore, msgtype: str):
    _consts, fields = store.fielddefs[msgtype]
    return store.types[msgtype](*[_default_value(store, node) for _name, node in fields])


# --- sensor messages from model containers ---------------------------------------------------------

def _rows(array) -> list:
    """Row views of a float64 (N, k) array (one C-level pass; indexing per message is slower)."""
    return list(np.ascontiguousarray(array, dtype=np.float64))


def navsatfix_messages(gps, topic: str = "/fix", typestore: Typestore | None = None) -> Iterator[BagMessage]:
    """sensor_msgs/NavSatFix per GpsSamples row; recv_ns = receive_ns, header stamp = stamp_ns."""
    types = _store(typestore).types
    fix_cls, status_cls = types[NAVSATFIX], types["sensor_msgs/msg/NavSatStatus"]
    header_cls, time_cls = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
    cov = _rows(gps.position_covariance)
    rows = zip(np.asarray(gps.stamp_ns).tolist(), np.asarray(gps.receive_ns).tolist(),
               np.asarray(gps.latitude).tolist(), np.asarray(gps.longitude).tolist(),
               np.asarray(gps.altitude).tolist(), np.asarray(gps.status).tolist(),
               np.asarray(gps.service).tolist(), np.asarray(gps.position_covariance_type).tolist())
    frame_id = gps.frame_id
    for i, (stamp, recv, lat, lon, alt, status, service, cov_type) in enumerate(rows):
        sec, nanosec = divmod(stamp, NS_PER_S)
        msg = fix_cls(header_cls(time_cls(sec, nanosec), frame_id), status_cls(status, service),
                      lat, lon, alt, cov[i], cov_type)
        yield BagMessage(recv, topic, NAVSATFIX, msg)


def imu_messages(imu, topic: str = "/imu", typestore: Typestore | None = None) -> Iterator[BagMessage]:
    """sensor_msgs/Imu per ImuSamples row; recv_ns = receive_ns, header stamp = stamp_ns."""
    types = _store(typestore).types
    imu_cls, quat_cls, vec_cls = (types[IMU], types["geometry_msgs/msg/Quaternion"],
                                  types["geometry_msgs/msg/Vector3"])
    header_cls, time_cls = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
    q = np.asarray(imu.orientation, dtype=np.float64).tolist()
    w = np.asarray(imu.angular_velocity, dtype=np.float64).tolist()
    a = np.asarray(imu.linear_acceleration, dtype=np.float64).tolist()
    cov_q = _rows(imu.orientation_covariance)
    cov_w = _rows(imu.angular_velocity_covariance)
    cov_a = _rows(imu.linear_acceleration_covariance)
    frame_id = imu.frame_id
    stamps = np.asarray(imu.stamp_ns).tolist()
    receives = np.asarray(imu.receive_ns).tolist()
    for i, stamp in enumerate(stamps):
        sec, nanosec = divmod(stamp, NS_PER_S)
        msg = imu_cls(header_cls(time_cls(sec, nanosec), frame_id), quat_cls(*q[i]), cov_q[i],
                      vec_cls(*w[i]), cov_w[i], vec_cls(*a[i]), cov_a[i])
        yield BagMessage(receives[i], topic, IMU, msg)


def magnetic_field_messages(imu, topic: str = "/imu/mag", typestore: Typestore | None = None
                            ) -> Iterator[BagMessage]:
    """sensor_msgs/MagneticField (tesla) per ImuSamples row; nothing when the magnetometer is off."""
    if getattr(imu, "magnetic_field", None) is None:
        return
    types = _store(typestore).types
    mag_cls, vec_cls = types[MAGNETIC_FIELD], types["geometry_msgs/msg/Vector3"]
    field = np.asarray(imu.magnetic_field, dtype=np.float64).tolist()
    cov = getattr(imu, "magnetic_field_covariance", None)
    cov = _rows(np.zeros((len(field), 9)) if cov is None else cov)
    receives = np.asarray(imu.receive_ns).tolist()
    for i, stamp in enumerate(np.asarray(imu.stamp_ns).tolist()):
        msg = mag_cls(header(stamp, imu.frame_id, typestore), vec_cls(*field[i]), cov[i])
        yield BagMessage(receives[i], topic, MAGNETIC_FIELD, msg)


def _odometry(types, stamps, frame_id, child_frame_id, position, orientation, pose_cov,
              linear, angular, twist_cov, topic) -> Iterator[BagMessage]:
    odom_cls = types[ODOMETRY]
    header_cls, time_cls = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
    pose_cov_cls, pose_cls = types["geometry_msgs/msg/PoseWithCovariance"], types["geometry_msgs/msg/Pose"]
    twist_cov_cls, twist_cls = (types["geometry_msgs/msg/TwistWithCovariance"],
                                types["geometry_msgs/msg/Twist"])
    point_cls, quat_cls = types["geometry_msgs/msg/Point"], types["geometry_msgs/msg/Quaternion"]
    vec_cls = types["geometry_msgs/msg/Vector3"]
    p, q = position.tolist(), orientation.tolist()
    v, w = linear.tolist(), angular.tolist()
    for i, stamp in enumerate(stamps):
        sec, nanosec = divmod(stamp, NS_PER_S)
        msg = odom_cls(
            header_cls(time_cls(sec, nanosec), frame_id), child_frame_id,
            pose_cov_cls(pose_cls(point_cls(*p[i]), quat_cls(*q[i])), pose_cov[i]),
            twist_cov_cls(twist_cls(vec_cls(*v[i]), vec_cls(*w[i])), twist_cov[i]),
        )
        yield BagMessage(stamp, topic, ODOMETRY, msg)


def odometry_messages(series, topic: str = "/odometry/filtered", typestore: Typestore | None = None
                      ) -> Iterator[BagMessage]:
    """nav_msgs/Odometry per OdometrySeries row (judge output); recv_ns = header stamp."""
    types = _store(typestore).types
    return _odometry(
        types, np.asarray(series.stamp_ns).tolist(), series.frame_id, series.child_frame_id,
        np.asarray(series.position, dtype=np.float64), np.asarray(series.orientation, dtype=np.float64),
        _rows(series.pose_covariance),
        np.asarray(series.linear_velocity, dtype=np.float64),
        np.asarray(series.angular_velocity, dtype=np.float64),
        _rows(series.twist_covariance), topic)


def truth_odometry_messages(truth: GroundTruth, topic: str = "/ground_truth/odom", frame_id: str = "odom",
                            child_frame_id: str = "base_link", typestore: Typestore | None = None
                            ) -> Iterator[BagMessage]:
    """nav_msgs/Odometry per truth sample: pose in ENU ``frame_id``, twist in the body (``child_frame_id``).

    stamp = round(t·1e9) ns; twist.linear = R_bwᵀ·v_world, twist.angular = body rates; covariances 0
    (ground truth).
    """
    types = _store(typestore).types
    body_velocity = rotations.rotate_inverse(truth.orientation, truth.velocity)
    zeros = _rows(np.zeros((len(truth), 36)))
    return _odometry(types, seconds_to_ns(truth.t).tolist(), frame_id, child_frame_id, truth.position,
                     truth.orientation, zeros, body_velocity, truth.angular_velocity, zeros, topic)


# --- the same messages, serialised in bulk (bags.cdr) ----------------------------------------------

def _cdr_messages(store, msgtype, topic, receive_ns, strings, columns) -> list:
    layout = cdr.message_layout(store, msgtype, strings)
    receive = np.asarray(receive_ns, dtype=np.int64).tolist()
    data = cdr.encode(layout, len(receive), columns)
    return [BagMessage(recv, topic, msgtype, raw) for recv, raw in zip(receive, data)]


def navsatfix_cdr(gps, topic: str = "/fix", typestore: Typestore | None = None) -> list:
    """``navsatfix_messages`` as CDR bytes: list of BagMessage(recv_ns, topic, NAVSATFIX, bytes)."""
    columns = {**cdr.stamp_columns(gps.stamp_ns), "status.status": gps.status, "status.service": gps.service,
               "latitude": gps.latitude, "longitude": gps.longitude, "altitude": gps.altitude,
               "position_covariance": np.asarray(gps.position_covariance, dtype=np.float64),
               "position_covariance_type": gps.position_covariance_type}
    return _cdr_messages(_store(typestore), NAVSATFIX, topic, gps.receive_ns,
                         {"header.frame_id": gps.frame_id}, columns)


def imu_cdr(imu, topic: str = "/imu", typestore: Typestore | None = None) -> list:
    """``imu_messages`` as CDR bytes: list of BagMessage(recv_ns, topic, IMU, bytes)."""
    columns = {**cdr.stamp_columns(imu.stamp_ns),
               **cdr.vector_columns("orientation", imu.orientation, "xyzw"),
               "orientation_covariance": imu.orientation_covariance,
               **cdr.vector_columns("angular_velocity", imu.angular_velocity),
               "angular_velocity_covariance": imu.angular_velocity_covariance,
               **cdr.vector_columns("linear_acceleration", imu.linear_acceleration),
               "linear_acceleration_covariance": imu.linear_acceleration_covariance}
    return _cdr_messages(_store(typestore), IMU, topic, imu.receive_ns, {"header.frame_id": imu.frame_id},
                         columns)


def magnetic_field_cdr(imu, topic: str = "/imu/mag", typestore: Typestore | None = None) -> list:
    """``magnetic_field_messages`` as CDR bytes (empty when the magnetometer is off)."""
    if getattr(imu, "magnetic_field", None) is None:
        return []
    cov = getattr(imu, "magnetic_field_covariance", None)
    columns = {**cdr.stamp_columns(imu.stamp_ns), **cdr.vector_columns("magnetic_field", imu.magnetic_field),
               "magnetic_field_covariance": 0.0 if cov is None else np.asarray(cov, dtype=np.float64)}
    return _cdr_messages(_store(typestore), MAGNETIC_FIELD, topic, imu.receive_ns,
                         {"header.frame_id": imu.frame_id}, columns)


def _odometry_cdr(store, stamps_ns, frame_id, child_frame_id, position, orientation, pose_cov, linear,
                  angular, twist_cov, topic) -> list:
    columns = {**cdr.stamp_columns(stamps_ns),
               **cdr.vector_columns("pose.pose.position", position),
               **cdr.vector_columns("pose.pose.orientation", orientation, "xyzw"),
               "pose.covariance": pose_cov,
               **cdr.vector_columns("twist.twist.linear", linear),
               **cdr.vector_columns("twist.twist.angular", angular),
               "twist.covariance": twist_cov}
    strings = {"header.frame_id": frame_id, "child_frame_id": child_frame_id}
    return _cdr_messages(store, ODOMETRY, topic, stamps_ns, strings, columns)


def odometry_cdr(series, topic: str = "/odometry/filtered", typestore: Typestore | None = None) -> list:
    """``odometry_messages`` as CDR bytes: list of BagMessage(header stamp, topic, ODOMETRY, bytes)."""
    return _odometry_cdr(_store(typestore), np.asarray(series.stamp_ns, dtype=np.int64), series.frame_id,
                         series.child_frame_id, series.position, series.orientation,
                         np.asarray(series.pose_covariance, dtype=np.float64), series.linear_velocity,
                         series.angular_velocity, np.asarray(series.twist_covariance, dtype=np.float64),
                         topic)


def truth_odometry_cdr(truth: GroundTruth, topic: str = "/ground_truth/odom", frame_id: str = "odom",
                       child_frame_id: str = "base_link", typestore: Typestore | None = None) -> list:
    """``truth_odometry_messages`` as CDR bytes (same pose/twist/stamp rules)."""
    body_velocity = rotations.rotate_inverse(truth.orientation, truth.velocity)
    return _odometry_cdr(_store(typestore), seconds_to_ns(truth.t), frame_id, child_frame_id, truth.position,
                         truth.orientation, 0.0, body_velocity, truth.angular_velocity, 0.0, topic)


# --- sbg_driver messages from ground truth (synthetic real bags) -----------------------------------

def tick_stamps_ns(truth: GroundTruth, rate_hz: float) -> np.ndarray:
    """Exact multiples of round(1e9/rate) ns inside the truth span (architecture.md "Time")."""
    period = int(round(1e9 / rate_hz))
    first = -(-int(np.ceil(truth.t[0] * 1e9)) // period)
    last = int(np.floor(truth.t[-1] * 1e9)) // period
    return np.arange(first, last + 1, dtype=np.int64) * period


def _sbg_common(truth, rate_hz, stamps_ns):
    stamps = tick_stamps_ns(truth, rate_hz) if stamps_ns is None else np.asarray(stamps_ns, dtype=np.int64)
    # Clip: ns -> s rounding may step past the span by an ulp (epoch-scale times).
    sample = truth.interpolate(np.clip(stamps / 1e9, truth.t[0], truth.t[-1]))
    # Device clock: microseconds since an arbitrary power-up, wrapping like the uint32 field.
    device_us = ((stamps - stamps[0]) // 1000 + 1_000_000) % (1 << 32)
    return stamps.tolist(), sample, device_us.tolist()


def _vec(types, values):
    return types["geometry_msgs/msg/Vector3"](*values)


def sbg_gps_vel_messages(truth: GroundTruth, rate_hz: float = 5.0, topic: str = "/sbg/gps_vel",
                         stamps_ns=None, velocity_accuracy: float = 0.05,
                         typestore: Typestore | None = None, frame_id: str = "imu_link_ned"
                         ) -> Iterator[BagMessage]:
    """SbgGpsVel (NED velocity, course clockwise from north) sampled from ``truth`` at ``rate_hz``."""
    store = _store(typestore)
    types = store.types
    stamps, sample, device_us = _sbg_common(truth, rate_hz, stamps_ns)
    ned = sbg.enu_to_ned(sample.velocity).tolist()
    course = sbg.yaw_to_course(np.arctan2(sample.velocity[:, 1], sample.velocity[:, 0])).tolist()
    for i, stamp in enumerate(stamps):
        msg = default_message(SBG_GPS_VEL, store)
        msg.header = header(stamp, frame_id, store)
        msg.time_stamp = device_us[i]
        msg.status.vel_type = 2  # doppler
        msg.gps_tow = (stamp // 1_000_000) % (7 * 86400 * 1000)
        msg.velocity = _vec(types, ned[i])
        msg.velocity_accuracy = _vec(types, [velocity_accuracy] * 3)
        msg.course, msg.course_acc = course[i], 1.0
        yield BagMessage(stamp, topic, SBG_GPS_VEL, msg)


def sbg_gps_pos_messages(truth: GroundTruth, datum, rate_hz: float = 5.0, topic: str = "/sbg/gps_pos",
                         undulation: float = 0.0, stamps_ns=None, position_accuracy: float = 0.02,
                         typestore: Typestore | None = None, frame_id: str = "imu_link_ned"
                         ) -> Iterator[BagMessage]:
    """SbgGpsPos (lat/lon, MSL altitude = ellipsoidal − undulation) of ``truth`` positions at ``datum``."""
    store = _store(typestore)
    stamps, sample, device_us = _sbg_common(truth, rate_hz, stamps_ns)
    lat, lon, height = geodesy.enu_to_geodetic(sample.position, datum)
    lat, lon, alt = lat.tolist(), lon.tolist(), (height - undulation).tolist()
    for i, stamp in enumerate(stamps):
        msg = default_message(SBG_GPS_POS, store)
        msg.header = header(stamp, frame_id, store)
        msg.time_stamp = device_us[i]
        msg.status.type = 7  # RTK fixed
        msg.gps_tow = (stamp // 1_000_000) % (7 * 86400 * 1000)
        msg.latitude, msg.longitude, msg.altitude, msg.undulation = lat[i], lon[i], alt[i], undulation
        msg.position_accuracy = _vec(store.types, [position_accuracy] * 3)
        msg.num_sv_used = 20
        yield BagMessage(stamp, topic, SBG_GPS_POS, msg)


def sbg_ekf_nav_messages(truth: GroundTruth, datum, rate_hz: float = 50.0, topic: str = "/sbg/ekf_nav",
                         undulation: float = 0.0, stamps_ns=None, typestore: Typestore | None = None,
                         frame_id: str = "imu_link_ned") -> Iterator[BagMessage]:
    """SbgEkfNav (NED velocity, geodetic position) sampled from ``truth``."""
    store = _store(typestore)
    stamps, sample, device_us = _sbg_common(truth, rate_hz, stamps_ns)
    ned = sbg.enu_to_ned(sample.velocity).tolist()
    lat, lon, height = geodesy.enu_to_geodetic(sample.position, datum)
    lat, lon, alt = lat.tolist(), lon.tolist(), (height - undulation).tolist()
    for i, stamp in enumerate(stamps):
        msg = default_message(SBG_EKF_NAV, store)
        msg.header = header(stamp, frame_id, store)
        msg.time_stamp = device_us[i]
        msg.velocity = _vec(store.types, ned[i])
        msg.velocity_accuracy = _vec(store.types, [0.01] * 3)
        msg.latitude, msg.longitude, msg.altitude, msg.undulation = lat[i], lon[i], alt[i], undulation
        msg.position_accuracy = _vec(store.types, [0.02] * 3)
        msg.status.solution_mode = 4
        msg.status.velocity_valid = msg.status.position_valid = True
        msg.status.attitude_valid = msg.status.heading_valid = True
        yield BagMessage(stamp, topic, SBG_EKF_NAV, msg)


def sbg_ekf_quat_messages(truth: GroundTruth, rate_hz: float = 50.0, topic: str = "/sbg/ekf_quat",
                          stamps_ns=None, typestore: Typestore | None = None,
                          frame_id: str = "imu_link_ned") -> Iterator[BagMessage]:
    """SbgEkfQuat (body FRD -> NED attitude) sampled from ``truth``."""
    store = _store(typestore)
    stamps, sample, device_us = _sbg_common(truth, rate_hz, stamps_ns)
    q_ned = sbg.quaternion_from_enu(sample.orientation).tolist()
    for i, stamp in enumerate(stamps):
        msg = default_message(SBG_EKF_QUAT, store)
        msg.header = header(stamp, frame_id, store)
        msg.time_stamp = device_us[i]
        msg.quaternion = store.types["geometry_msgs/msg/Quaternion"](*q_ned[i])
        msg.accuracy = _vec(store.types, [0.001] * 3)
        msg.status.solution_mode = 4
        msg.status.attitude_valid = msg.status.heading_valid = True
        yield BagMessage(stamp, topic, SBG_EKF_QUAT, msg)
