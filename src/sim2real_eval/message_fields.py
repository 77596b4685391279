"""The ROS messages the project writes and reads: one declarative field table per message type.

A table lists, one line per field, the *column* name (the attribute of the container that holds it:
``GpsSamples.latitude``, ``OdometrySeries.position``), the ROS field path and its kind.  Every writer
and reader of the type is driven by its table:

- ``bags.messages``: rosbags message objects and bulk CDR (``bags.cdr``) from container columns;
- ``bags.columns``: CDR (or any deserialised) messages of a bag topic -> column arrays;
- ``ros.messages``: rclpy messages filled from / read into one row (``fill`` / ``read`` below).

Adding a field to what the project writes or reads is one line in one table.  Fields a table does not
list are written as zero / empty.

Kinds (column shape for N messages):

- ``STAMP``: builtin_interfaces/Time <-> int64 ns (N,) (``stamps.split_ns``: floor division);
- ``STRING``: one text for the whole stream (frame ids), a ``str``;
- ``INT``, ``FLOAT``, ``BOOL``: a primitive (N,) int64 / float64 / bool, written at the field's wire
  type;
- ``XYZ``: geometry_msgs Vector3 / Point (N, 3); ``XYZW``: Quaternion (N, 4) in x, y, z, w order;
- ``ARRAY``: a fixed float64 array such as a covariance (N, size).

The functions below work on any object with the ROS field names (rclpy messages on the robot,
rosbags dataclasses offline).  Robot-side: Python 3.8, numpy only.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from . import stamps

STAMP, STRING, INT, FLOAT, BOOL, XYZ, XYZW, ARRAY = (
    "stamp", "string", "int", "float", "bool", "xyz", "xyzw", "array")
_SCALAR = {INT: int, FLOAT: float, BOOL: bool}
_COLUMN_DTYPES = {STAMP: np.int64, INT: np.int64, BOOL: np.bool_}  # every other kind: float64


class Field(NamedTuple):
    name: str   # column / container attribute
    path: str   # ROS field path, dots between nested messages
    kind: str
    size: int = 1  # ARRAY length

    @property
    def leaves(self) -> Tuple[str, ...]:
        """The primitive wire fields the column covers (``bags.cdr`` layout paths)."""
        if self.kind == STAMP:
            return (self.path + ".sec", self.path + ".nanosec")
        if self.kind in (XYZ, XYZW):
            return tuple(f"{self.path}.{axis}" for axis in self.kind)
        return (self.path,)

    @property
    def width(self) -> int:
        """Values per message: 3 for XYZ, 4 for XYZW, ``size`` for ARRAY, else 1 (a (N,) column)."""
        return {XYZ: 3, XYZW: 4, ARRAY: self.size}.get(self.kind, 1)

    @property
    def dtype(self):
        """numpy dtype of the column (not of the wire field): int64, bool or float64."""
        return _COLUMN_DTYPES.get(self.kind, np.float64)

    def shape(self, count: int) -> Tuple[int, ...]:
        """Shape of the column of ``count`` messages."""
        return (count,) if self.width == 1 else (count, self.width)


class MessageFields:
    """The field table of one message type: ``fields`` in declaration order, ``[name]`` -> Field."""

    def __init__(self, msgtype: str, *fields: tuple):
        self.msgtype = msgtype
        self.fields = tuple(Field(*f) for f in fields)
        self._by_name = {f.name: f for f in self.fields}
        if len(self._by_name) != len(self.fields):
            raise ValueError(f"{msgtype}: two fields with one name")

    def __getitem__(self, name: str) -> Field:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __iter__(self):
        return iter(self.fields)

    def __repr__(self) -> str:
        return f"MessageFields({self.msgtype!r}, {len(self.fields)} fields)"

    def select(self, names: Optional[Iterable[str]] = None) -> Tuple[Field, ...]:
        """The fields called ``names`` (every non-string field when None)."""
        if names is None:
            return tuple(f for f in self.fields if f.kind != STRING)
        return tuple(self._by_name[name] for name in names)


def _header(*more: tuple) -> tuple:
    return (("stamp_ns", "header.stamp", STAMP), ("frame_id", "header.frame_id", STRING)) + more


# ------------------------------------------------------------------------------------- the tables
NAVSATFIX = MessageFields("sensor_msgs/msg/NavSatFix", *_header(
    ("status", "status.status", INT),
    ("service", "status.service", INT),
    ("latitude", "latitude", FLOAT),
    ("longitude", "longitude", FLOAT),
    ("altitude", "altitude", FLOAT),
    ("position_covariance", "position_covariance", ARRAY, 9),
    ("position_covariance_type", "position_covariance_type", INT),
))

IMU = MessageFields("sensor_msgs/msg/Imu", *_header(
    ("orientation", "orientation", XYZW),
    ("orientation_covariance", "orientation_covariance", ARRAY, 9),
    ("angular_velocity", "angular_velocity", XYZ),
    ("angular_velocity_covariance", "angular_velocity_covariance", ARRAY, 9),
    ("linear_acceleration", "linear_acceleration", XYZ),
    ("linear_acceleration_covariance", "linear_acceleration_covariance", ARRAY, 9),
))

MAGNETIC_FIELD = MessageFields("sensor_msgs/msg/MagneticField", *_header(
    ("magnetic_field", "magnetic_field", XYZ),
    ("magnetic_field_covariance", "magnetic_field_covariance", ARRAY, 9),
))

ODOMETRY = MessageFields("nav_msgs/msg/Odometry", *_header(
    ("child_frame_id", "child_frame_id", STRING),
    ("position", "pose.pose.position", XYZ),
    ("orientation", "pose.pose.orientation", XYZW),
    ("pose_covariance", "pose.covariance", ARRAY, 36),
    ("linear_velocity", "twist.twist.linear", XYZ),
    ("angular_velocity", "twist.twist.angular", XYZ),
    ("twist_covariance", "twist.covariance", ARRAY, 36),
))

POSE_WITH_COVARIANCE_STAMPED = MessageFields("geometry_msgs/msg/PoseWithCovarianceStamped", *_header(
    ("position", "pose.pose.position", XYZ),
    ("orientation", "pose.pose.orientation", XYZW),
    ("pose_covariance", "pose.covariance", ARRAY, 36),
))

TWIST = MessageFields("geometry_msgs/msg/Twist",  # unstamped: cmd_vel (ekf_node's control input)
                      ("linear_velocity", "linear", XYZ),
                      ("angular_velocity", "angular", XYZ))

TWIST_STAMPED = MessageFields("geometry_msgs/msg/TwistStamped", *_header(
    ("linear_velocity", "twist.linear", XYZ),
    ("angular_velocity", "twist.angular", XYZ),
))

TWIST_WITH_COVARIANCE_STAMPED = MessageFields("geometry_msgs/msg/TwistWithCovarianceStamped", *_header(
    ("linear_velocity", "twist.twist.linear", XYZ),
    ("angular_velocity", "twist.twist.angular", XYZ),
    ("twist_covariance", "twist.covariance", ARRAY, 36),
))

# sbg_driver (both shipped layouts, bags/msgdefs): the fields the project writes and reads.
SBG_GPS_VEL = MessageFields("sbg_driver/msg/SbgGpsVel", *_header(
    ("time_stamp", "time_stamp", INT),  # device clock, µs since power-up (uint32)
    ("vel_type", "status.vel_type", INT),
    ("gps_tow", "gps_tow", INT),        # ms
    ("velocity", "velocity", XYZ),
    ("velocity_accuracy", "velocity_accuracy", XYZ),
    ("course", "course", FLOAT),
    ("course_acc", "course_acc", FLOAT),
))

SBG_GPS_POS = MessageFields("sbg_driver/msg/SbgGpsPos", *_header(
    ("time_stamp", "time_stamp", INT),
    ("fix_type", "status.type", INT),
    ("gps_tow", "gps_tow", INT),
    ("latitude", "latitude", FLOAT),
    ("longitude", "longitude", FLOAT),
    ("altitude", "altitude", FLOAT),    # above mean sea level
    ("undulation", "undulation", FLOAT),
    ("position_accuracy", "position_accuracy", XYZ),
    ("num_sv_used", "num_sv_used", INT),
))

SBG_EKF_NAV = MessageFields("sbg_driver/msg/SbgEkfNav", *_header(
    ("time_stamp", "time_stamp", INT),
    ("velocity", "velocity", XYZ),
    ("velocity_accuracy", "velocity_accuracy", XYZ),
    ("latitude", "latitude", FLOAT),
    ("longitude", "longitude", FLOAT),
    ("altitude", "altitude", FLOAT),
    ("undulation", "undulation", FLOAT),
    ("position_accuracy", "position_accuracy", XYZ),
    ("solution_mode", "status.solution_mode", INT),
    ("attitude_valid", "status.attitude_valid", BOOL),
    ("heading_valid", "status.heading_valid", BOOL),
    ("velocity_valid", "status.velocity_valid", BOOL),
    ("position_valid", "status.position_valid", BOOL),
))

SBG_EKF_QUAT = MessageFields("sbg_driver/msg/SbgEkfQuat", *_header(
    ("time_stamp", "time_stamp", INT),
    ("quaternion", "quaternion", XYZW),
    ("accuracy", "accuracy", XYZ),
    ("solution_mode", "status.solution_mode", INT),
    ("attitude_valid", "status.attitude_valid", BOOL),
    ("heading_valid", "status.heading_valid", BOOL),
))

TABLES: Dict[str, MessageFields] = {t.msgtype: t for t in (
    NAVSATFIX, IMU, MAGNETIC_FIELD, ODOMETRY, POSE_WITH_COVARIANCE_STAMPED, TWIST, TWIST_STAMPED,
    TWIST_WITH_COVARIANCE_STAMPED,
    SBG_GPS_VEL, SBG_GPS_POS, SBG_EKF_NAV, SBG_EKF_QUAT)}


# ---------------------------------------------------------------------- one message (any object)
def _parent(msg, path: str):
    """(the object holding the last component of ``path``, that component's name)."""
    *parents, leaf = path.split(".")
    for name in parents:
        msg = getattr(msg, name)
    return msg, leaf


def fill(msg, table: MessageFields, row: Mapping[str, Any]):
    """Set every field of ``table`` on ``msg`` from ``row`` {column: value of this message}; return msg.

    Scalars become Python int / float / bool / str (rclpy's setters reject numpy scalars); arrays
    become float64 numpy arrays (accepted by rclpy and rosbags alike).
    """
    for field in table.fields:
        value = row[field.name]
        holder, leaf = _parent(msg, field.path)
        if field.kind == STAMP:
            stamp = getattr(holder, leaf)
            stamp.sec, stamp.nanosec = stamps.from_ns(value)
        elif field.kind in (XYZ, XYZW):
            target = getattr(holder, leaf)
            for axis, component in zip(field.kind, value):
                setattr(target, axis, float(component))
        elif field.kind == ARRAY:
            setattr(holder, leaf, np.array(value, dtype=np.float64))
        elif field.kind == STRING:
            setattr(holder, leaf, str(value))
        else:
            setattr(holder, leaf, _SCALAR[field.kind](value))
    return msg


def read(msg, table: MessageFields, names: Optional[Iterable[str]] = None) -> Dict[str, Any]:
    """{column: value} of one message (``names``, default every non-string field): STAMP as int ns,
    XYZ / XYZW / ARRAY as float64 arrays, scalars as Python numbers, strings as str."""
    out: Dict[str, Any] = {}
    for field in table.select(names):
        holder, leaf = _parent(msg, field.path)
        value = getattr(holder, leaf)
        if field.kind == STAMP:
            out[field.name] = stamps.stamp_to_ns(value)
        elif field.kind in (XYZ, XYZW):
            out[field.name] = np.array([getattr(value, axis) for axis in field.kind], dtype=np.float64)
        elif field.kind == ARRAY:
            out[field.name] = np.array(value, dtype=np.float64)
        elif field.kind == STRING:
            out[field.name] = str(value)
        else:
            out[field.name] = _SCALAR[field.kind](value)
    return out


def row(table: MessageFields, container, i: int) -> Dict[str, Any]:
    """{column: value} of message ``i`` of a container whose attributes are the table's column names
    (strings are one per container)."""
    return {f.name: getattr(container, f.name) if f.kind == STRING else getattr(container, f.name)[i]
            for f in table.fields}
