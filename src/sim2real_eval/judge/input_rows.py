"""Input messages → rows: where each message type the judge reads goes in a row, and its two readers.

A message becomes one ``state.INPUT_ROW``: header stamp (int ns), frame codes of
``header.frame_id`` (and ``child_frame_id``), and its numbers in ``values`` at the offsets of its
row layout below (the compiled callbacks read them by these names).  A row layout only places fields:
their ROS paths and kinds come from the type's ``message_fields`` table, as for every other reader and
writer of the type.  Rows come from

- message objects (rosbags dataclasses, rclpy messages: anything with the ROS field names), read
  field by field — the per-message API and ``Judge.run`` on objects;
- CDR bytes (``bags.BagReader.raw_messages``, the ``bags.messages.*_cdr`` records), read in bulk for
  all messages of a topic that share one layout (``bags.cdr``): no message objects at all.

NavSatFix rows also get UTM easting, northing and meridian convergence (navsat.lat_lon_to_utm_many,
one PROJ call per chunk), which navsat's fix callback reads.
"""

from __future__ import annotations

import operator
import struct
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import message_fields as F
from ..bags import cdr
from ..errors import UserError
from .state import INPUT_ROW, VALUES, records

IMU, ODOMETRY, NAVSATFIX = F.IMU.msgtype, F.ODOMETRY.msgtype, F.NAVSATFIX.msgtype
POSE, TWIST = F.POSE_WITH_COVARIANCE_STAMPED.msgtype, F.TWIST_WITH_COVARIANCE_STAMPED.msgtype
CMD_VEL = F.TWIST.msgtype

# Value offsets.  Odometry, pose and twist share one layout (the callbacks read a pose or a twist at
# the same offsets whatever the message type).
POSITION, ORIENTATION, POSE_COVARIANCE, LINEAR, ANGULAR, TWIST_COVARIANCE = 0, 3, 7, 43, 46, 49
IMU_ORIENTATION, IMU_ORIENTATION_COVARIANCE, IMU_ANGULAR_VELOCITY = 0, 4, 13
IMU_ANGULAR_VELOCITY_COVARIANCE, IMU_LINEAR_ACCELERATION, IMU_LINEAR_ACCELERATION_COVARIANCE = 16, 25, 28
FIX_STATUS, FIX_LATITUDE, FIX_LONGITUDE, FIX_ALTITUDE, FIX_COVARIANCE = 0, 1, 2, 3, 4
FIX_EASTING, FIX_NORTHING, FIX_CONVERGENCE = 13, 14, 15  # computed (UTM)
CMD_LINEAR, CMD_ANGULAR = 0, 3


class Field(NamedTuple):
    path: str  # ROS field path
    names: Tuple[str, ...]  # sub-fields of a vector/quaternion, () for a scalar or a fixed array
    count: int  # numbers
    offset: int  # in ``values``


class MessageType(NamedTuple):
    msgtype: str
    fields: Tuple[Field, ...]
    width: int
    stamped: bool = True
    child: bool = False  # has child_frame_id


def _row_layout(table: F.MessageFields, width: int, placed) -> MessageType:
    """The judge's row layout of ``table``'s type: each (column name, offset) of ``placed`` puts that
    field of the table at that offset of ``values``.  What the fields are (ROS path, kind) is the
    table's; where the compiled callbacks find them is the judge's."""
    fields = []
    for name, offset in placed:
        field = table[name]
        names = tuple(field.kind) if field.kind in (F.XYZ, F.XYZW) else ()  # "xyz" -> ("x", "y", "z")
        fields.append(Field(field.path, names, field.width, offset))
    return MessageType(table.msgtype, tuple(fields), width, "stamp_ns" in table, "child_frame_id" in table)


_POSE_PARTS = (("position", POSITION), ("orientation", ORIENTATION), ("pose_covariance", POSE_COVARIANCE))
_TWIST_PARTS = (("linear_velocity", LINEAR), ("angular_velocity", ANGULAR),
                ("twist_covariance", TWIST_COVARIANCE))
TYPES: Dict[str, MessageType] = {t.msgtype: t for t in (
    _row_layout(F.IMU, 37, (("orientation", IMU_ORIENTATION),
                            ("orientation_covariance", IMU_ORIENTATION_COVARIANCE),
                            ("angular_velocity", IMU_ANGULAR_VELOCITY),
                            ("angular_velocity_covariance", IMU_ANGULAR_VELOCITY_COVARIANCE),
                            ("linear_acceleration", IMU_LINEAR_ACCELERATION),
                            ("linear_acceleration_covariance", IMU_LINEAR_ACCELERATION_COVARIANCE))),
    _row_layout(F.ODOMETRY, 85, _POSE_PARTS + _TWIST_PARTS),
    _row_layout(F.POSE_WITH_COVARIANCE_STAMPED, 85, _POSE_PARTS),
    _row_layout(F.TWIST_WITH_COVARIANCE_STAMPED, 85, _TWIST_PARTS),
    _row_layout(F.NAVSATFIX, 16, (("status", FIX_STATUS), ("latitude", FIX_LATITUDE),
                                  ("longitude", FIX_LONGITUDE), ("altitude", FIX_ALTITUDE),
                                  ("position_covariance", FIX_COVARIANCE))),
    _row_layout(F.TWIST, 6, (("linear_velocity", CMD_LINEAR), ("angular_velocity", CMD_ANGULAR))),
)}
assert max(kind.width for kind in TYPES.values()) <= VALUES  # a row of any type fits INPUT_ROW.values
# the message type each ekf_node input kind subscribes to
INPUT_TYPES = {"odom": ODOMETRY, "pose": POSE, "twist": TWIST, "imu": IMU}


class Columns(NamedTuple):
    """Messages of one type as columns (frame ids by name: codes are given per run)."""

    stamp: np.ndarray  # (N,) int64
    frame_names: List[str]  # distinct header.frame_id values
    frame: np.ndarray  # (N,) index into frame_names
    child_names: List[str]  # distinct child_frame_id values
    child: np.ndarray  # (N,) index into child_names
    values: np.ndarray  # (N, width)


def _names(per_message: List[str]):
    """(distinct names, index of each message's name)."""
    index: Dict[str, int] = {}
    codes = np.array([index.setdefault(name, len(index)) for name in per_message], dtype=np.int64)
    return list(index), codes


def _wrong_type(topic: str, msgtype: str, got) -> UserError:
    return UserError(f"topic {topic}: expected {msgtype}, got {got}")


# --- message objects -----------------------------------------------------------------------------------


def _getters(kind: MessageType) -> list:
    out = []
    for field in kind.fields:
        if field.names:
            out += [(operator.attrgetter(f"{field.path}.{name}"), False) for name in field.names]
        else:
            out.append((operator.attrgetter(field.path), field.count > 1))
    return out


_GETTERS = {name: _getters(kind) for name, kind in TYPES.items()}


def object_columns(topic: str, msgtype: str, msgs: Sequence) -> Columns:
    """Columns of message objects of ``msgtype`` (duck-typed on the ROS field names); a message without
    those fields is a UserError naming the topic."""
    kind = TYPES[msgtype]
    getters = _GETTERS[msgtype]
    n = len(msgs)
    values = np.zeros((n, kind.width))
    stamp = np.zeros(n, np.int64)
    frame, child = [""] * n, [""] * n
    rows = []
    try:
        for i, msg in enumerate(msgs):
            row = []
            for getter, array in getters:
                if array:
                    row.extend(getter(msg))
                else:
                    row.append(getter(msg))
            rows.append(row)
            if kind.stamped:
                header = msg.header
                stamp[i] = int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)
                frame[i] = header.frame_id
            if kind.child:
                child[i] = msg.child_frame_id
        table = np.array(rows, dtype=float).reshape(n, -1)
    except (AttributeError, TypeError, ValueError):
        raise _wrong_type(topic, msgtype, getattr(msg, "__msgtype__", type(msg).__name__)) from None
    offsets = [field.offset for field in kind.fields]
    counts = [field.count for field in kind.fields]
    if table.shape[1] != sum(counts):
        raise _wrong_type(topic, msgtype, getattr(msgs[0], "__msgtype__", type(msgs[0]).__name__))
    column = 0
    for offset, count in zip(offsets, counts):
        values[:, offset:offset + count] = table[:, column:column + count]
        column += count
    return Columns(stamp, *_names(frame), *_names(child), values)


# --- CDR bytes -------------------------------------------------------------------------------------------


def _paths(kind: MessageType) -> List[str]:
    paths = ["header.stamp.sec", "header.stamp.nanosec"] if kind.stamped else []
    for field in kind.fields:
        paths += [f"{field.path}.{name}" for name in field.names] if field.names else [field.path]
    return paths


def cdr_columns(store, topic: str, msgtype: str, raws: Sequence) -> Optional[Columns]:
    """Columns of CDR messages of ``msgtype``, decoded in bulk (one layout per group of messages with
    the same frame ids); None when they are not little-endian CDR of that type's fixed layout (the
    caller deserialises them)."""
    kind = TYPES[msgtype]
    paths = _paths(kind)
    n = len(raws)
    try:
        layout = cdr.layout_of(store, msgtype, raws[0])
        columns = cdr.decode_columns(layout, raws, paths)
        if columns is not None:
            groups = [(layout, slice(None), columns)]
        else:  # several layouts (frame ids): decode each group of messages with one layout
            by_layout: Dict[object, List[int]] = {}
            for i, raw in enumerate(raws):
                by_layout.setdefault(cdr.layout_of(store, msgtype, raw), []).append(i)
            groups = []
            for lay, members in by_layout.items():
                columns = cdr.decode_columns(lay, [raws[i] for i in members], paths)
                if columns is None:
                    return None
                groups.append((lay, np.array(members), columns))
    except (cdr.CdrLayoutError, KeyError, UnicodeDecodeError, struct.error, ValueError, IndexError):
        return None  # the caller deserialises them one by one (a damaged message: a UserError there)
    return _wire_to_columns(kind, n, [(members, columns, {
        path: encoded[:-1].decode("utf-8") for path, (_offset, encoded) in layout.strings.items()})
        for layout, members, columns in groups])


def _wire_to_columns(kind: MessageType, n: int, groups: list) -> Columns:
    """Columns of ``n`` messages of ``kind`` from wire columns in groups (members: the messages'
    positions, {wire path: column}, {string path: text}), as ``bags.cdr.decode_columns`` reads them."""
    stamp = np.zeros(n, np.int64)
    values = np.zeros((n, kind.width))
    frame, child = np.zeros(n, np.int64), np.zeros(n, np.int64)
    frame_names: List[str] = []
    child_names: List[str] = []
    for members, columns, strings in groups:
        for names, codes, path in ((frame_names, frame, "header.frame_id"),
                                   (child_names, child, "child_frame_id")):
            name = strings.get(path, "")
            if name not in names:
                names.append(name)
            codes[members] = names.index(name)
        if kind.stamped:
            stamp[members] = (columns["header.stamp.sec"].astype(np.int64) * 1_000_000_000
                              + columns["header.stamp.nanosec"].astype(np.int64))
        for field in kind.fields:
            if field.names:
                for k, name in enumerate(field.names):
                    values[members, field.offset + k] = columns[f"{field.path}.{name}"]
            else:
                block = columns[field.path].reshape(-1, field.count).astype(float)
                values[members, field.offset:field.offset + field.count] = block
    return Columns(stamp, frame_names or [""], frame, child_names or [""], child, values)


def columns_from_wire(store, msgtype: str, strings: dict, wire: dict, n: int) -> Columns:
    """Columns of ``n`` messages of ``msgtype`` given as ``bags.messages.wire_columns`` makes them: the
    values ``cdr_columns`` reads back from the bytes ``bags.cdr.encode`` would write of them (each column
    cast to its wire type first, as encoding does), without making the bytes."""
    layout = cdr.message_layout(store, msgtype, strings)
    wire_type = {path: layout.dtype.fields[path][0].base for path in wire}
    cast = {path: np.asarray(column).astype(wire_type[path]) for path, column in wire.items()}
    return _wire_to_columns(TYPES[msgtype], n, [(slice(None), cast, strings)])


def take(cols: Columns, index: np.ndarray) -> Columns:
    """The messages ``index`` of ``cols``, as new arrays (the judge adds UTM to a fix's values in place:
    the taken columns must not share them)."""
    return Columns(cols.stamp[index], cols.frame_names, cols.frame[index], cols.child_names,
                   cols.child[index], cols.values[index])


def rows(cols: Columns, tf, topic: int, first_index: int) -> np.ndarray:
    """INPUT_ROW records of ``cols`` (messages ``first_index``… of topic code ``topic``)."""
    out = records(len(cols.stamp), INPUT_ROW)
    fill_rows(out, slice(None), cols, tf, topic, first_index)
    return out


def fill_rows(out: np.ndarray, at, cols: Columns, tf, topic: int, first_index: int) -> None:
    """Write ``cols`` into the INPUT_ROW records ``out[at]`` (receive times aside); frame ids get their
    codes from ``tf`` (judge.tf.TfBuffer)."""
    n = len(cols.stamp)
    out["topic"][at] = topic
    out["index"][at] = first_index + np.arange(n)
    out["stamp"][at] = cols.stamp
    out["frame"][at] = np.array([tf.code(name) for name in cols.frame_names], np.int64)[cols.frame]
    out["child"][at] = np.array([tf.code(name) for name in cols.child_names], np.int64)[cols.child]
    out["values"][at, :cols.values.shape[1]] = cols.values
