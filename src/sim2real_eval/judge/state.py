"""The compiled core's vocabulary: state offsets, named constants and the records it works on.

The judge's state is held in numpy structured arrays: every field has a name (a named offset), numba
compiles attribute access to them (``state.time_ns``, ``slot.z``, ``parts[p].threshold``) and passes a
record to a function as one pointer, so the compiled functions take a few named records instead of
dozens of positional arrays.  A singleton is a record (element 0 of a one-element array, kept by its
Python owner); a collection is a record array.  Flags in nested arrays are uint8 (numba has no nested
bool arrays).  The named tuples below only group them.

- ``FILTER_CONFIG`` / ``FILTER_STATE`` (``FILTER_STATE_UKF``): filter_base.cpp + ekf.cpp/ukf.cpp (x, P,
  control, the kernels' scratch; the UKF's sigma points);
- ``QUEUE_SLOT`` (+ ``Queue``): one prepared measurement — z, covariance, update flags, threshold,
  stamp and source message; the queue is a heap of slots ordered by stamp;
- ``NODE_CONFIG``, ``PART``, ``INPUT``: ekf_node's inputs (``odomN``, ``imuN``, ...), their
  sub-measurements ("parts": the pose, twist and acceleration of one input) with each part's memory
  (stale-stamp gate, differential and relative poses);
- ``LOOKUP``, ``EDGE_SAMPLE``, ``EDGE``: tf2 as the judge needs it — every (target, source) frame pair
  resolved to static transforms around at most one dynamic edge (the EKF's own odom→base_link);
- ``NAVSAT_CONFIG`` / ``NAVSAT_STATE``: navsat_transform_node;
- ``ODOMETRY`` / ``GPS_ODOMETRY``: output buffers; ``COUNTERS``: counts and the fault record;
- ``INPUT_ROW``: one input message as a row (input_rows.py); ``TOPIC``: what a topic feeds;
- ``TIMING``: the timers (period, phase, latency) and their next ticks;
- ``describe_fault``: the fault a compiled function recorded in ``COUNTERS``, in one line.
"""

from __future__ import annotations

from typing import List, NamedTuple

import numpy as np

STATE_SIZE = 15
# State vector offsets (world frame for the pose, body frame for rates and accelerations).
X, Y, Z, ROLL, PITCH, YAW, VX, VY, VZ, VROLL, VPITCH, VYAW, AX, AY, AZ = range(STATE_SIZE)
# two_d_mode's out-of-plane variables: z, roll, pitch, vz, vroll, vpitch, az (forceTwoD)
TWO_D_INDICES = (Z, ROLL, PITCH, VZ, VROLL, VPITCH, AZ)

NEVER = np.iinfo(np.int64).max

# processMeasurement outcomes (index into COUNTERS.outcomes)
INIT, ACCEPTED, REJECTED = 0, 1, 2
OUTCOMES = ("init", "accepted", "rejected")

# input kinds (INPUT.kind) and part kinds (PART.kind)
INPUT_ODOM, INPUT_POSE, INPUT_TWIST, INPUT_IMU = 0, 1, 2, 3
INPUT_KINDS = ("odom", "pose", "twist", "imu")
PART_POSE, PART_TWIST, PART_ACCELERATION = 0, 1, 2
NO_PART = -1

# why an input was not used (COUNTERS.dropped), named as in JudgeResult.dropped
DROP_NAMES = (
    "stamp_not_after_set_pose",
    "stale_stamp",
    "imu_orientation_not_provided",
    "imu_angular_velocity_not_provided",
    "imu_acceleration_not_provided",
    "tf_unavailable",
    "differential_first_message",
    "navsat_unusable_fix",
    "navsat_imu_tf_unavailable",
    "navsat_gps_tf_unavailable",
    "navsat_gps_tf_unavailable_at_datum",
    "navsat_robot_tf_unavailable",
)
(DROP_SET_POSE, DROP_STALE, DROP_IMU_ORIENTATION, DROP_IMU_ANGULAR_VELOCITY, DROP_IMU_ACCELERATION,
 DROP_TF, DROP_DIFFERENTIAL_FIRST, DROP_UNUSABLE_FIX, DROP_NAVSAT_IMU_TF, DROP_GPS_TF,
 DROP_GPS_TF_AT_DATUM, DROP_ROBOT_TF) = range(len(DROP_NAMES))

# COUNTERS.fault_*: what stopped a run
FAULT_NONE, FAULT_COVARIANCE, FAULT_FIX_VALUE, FAULT_INITIAL_VALUE, FAULT_FILTER, FAULT_GPS_OUTPUT = range(6)
FIELD_NAMES = ("pose.covariance", "twist.covariance", "orientation_covariance", "angular_velocity_covariance",
               "linear_acceleration_covariance", "position_covariance", "latitude", "longitude", "altitude",
               "measurement")
(FIELD_POSE_COVARIANCE, FIELD_TWIST_COVARIANCE, FIELD_ORIENTATION_COVARIANCE, FIELD_GYRO_COVARIANCE,
 FIELD_ACCEL_COVARIANCE, FIELD_POSITION_COVARIANCE, FIELD_LATITUDE, FIELD_LONGITUDE, FIELD_ALTITUDE,
 FIELD_MEASUREMENT) = range(len(FIELD_NAMES))
NO_SOURCE = -2  # the source topic of a fault found at publication (no single message)

# lookups (LOOKUP.kind): T = A (static), T = A·E·B or A·E⁻¹·B with E the dynamic edge, or none
LOOKUP_NONE, LOOKUP_STATIC, LOOKUP_EDGE, LOOKUP_EDGE_INVERSE = 0, 1, 2, 3
MAX_FRAMES = 64  # distinct frame ids per run (frame codes index the lookup table)
MAX_TOPICS = 64  # distinct topics a run reads
MAX_INPUTS_PER_TOPIC = 8
EMPTY_FRAME = 0  # code of the empty frame id ""
VALUES = 85  # INPUT_ROW.values: the widest message layout (input_rows.py)

# advance() status
DONE, NEED_SPACE, FAULT = 0, 1, 2

_M = (STATE_SIZE, STATE_SIZE)
ROW = 16  # STATE_SIZE padded to whole 4-double vectors

FILTER_CONFIG = np.dtype([
    ("ukf", "?"), ("dynamic_process_noise", "?"), ("use_control", "?"), ("predict_to_current_time", "?"),
    ("permit_corrected_publication", "?"), ("disabled", "?"),
    ("control_timeout_ns", "i8"), ("sensor_timeout_ns", "i8"), ("lam", "f8"),  # lam: the UKF's λ
    ("process_noise", "f8", _M), ("acceleration_limits", "f8", 6), ("acceleration_gains", "f8", 6),
    ("deceleration_limits", "f8", 6), ("deceleration_gains", "f8", 6), ("control_update", "u1", 6),
    ("state_weights", "f8", 31), ("covariance_weights", "f8", 31),
], align=True)

_FILTER_STATE = [
    ("x", "f8", STATE_SIZE), ("p", "f8", _M), ("control", "f8", 6), ("initialized", "?"),
    ("time_ns", "i8"), ("control_ns", "i8"), ("last_published_ns", "i8"),
    # scratch of the kernels (kernels.predict / correct allocate nothing)
    ("index", "i8", STATE_SIZE), ("unit", "i8", STATE_SIZE), ("active", "i8", STATE_SIZE),
    ("transition", "f8", _M), ("jacobian", "f8", _M), ("product", "f8", _M), ("noise", "f8", _M),
    ("innovation_covariance", "f8", _M), ("inverse", "f8", _M), ("gain", "f8", _M), ("joseph", "f8", _M),
    ("vector", "f8", STATE_SIZE), ("increment", "f8", STATE_SIZE), ("acceleration", "f8", 6),
    # correct()'s row updates on rows padded to ROW (a run-time length for LLVM: vector code)
    ("row_width", "i8"), ("padded", "f8", (STATE_SIZE, ROW)), ("padded_rows", "f8", (STATE_SIZE, ROW)),
    ("padded_gain", "f8", (STATE_SIZE, ROW)),
]
FILTER_STATE = np.dtype(_FILTER_STATE, align=True)
# the UKF's state adds its sigma points and upstream's uncorrected_ flag (sigma points not regenerated
# since the last predict): a different record type, so the EKF's compiled code never contains the UKF's
# (its own fields first: a record type with the EKF's fields at the same offsets would count as a subtype
# of the EKF's, and numba could call the EKF's compiled code for it)
FILTER_STATE_UKF = np.dtype([("sigma", "f8", (31, STATE_SIZE)), ("uncorrected", "?")] + _FILTER_STATE,
                            align=True)

QUEUE_SLOT = np.dtype([
    ("threshold", "f8"), ("topic", "i8"), ("index", "i8"),  # source: topic code, message index
    ("z", "f8", STATE_SIZE), ("update", "u1", STATE_SIZE), ("covariance", "f8", _M),
], align=True)
QUEUE_HEAD = np.dtype([("length", "i8"), ("free_count", "i8")], align=True)

NODE_CONFIG = np.dtype([
    ("two_d_mode", "?"), ("publish_tf", "?"),  # publish_tf: the odom→base_link edge is the EKF's
    ("gravity", "f8"), ("world_frame", "i8"), ("base_link_frame", "i8"), ("base_link_frame_output", "i8"),
    ("tf_offset_ns", "i8"), ("period_ns", "i8"),
    ("gps_odometry_topic", "i8"),  # topic code of /odometry/gps when the EKF subscribes to it, else −1
], align=True)

PART = np.dtype([
    # configuration (ros_filter.cpp's per-callback update vectors, keyed by topic and part)
    ("kind", "i8"), ("update", "u1", STATE_SIZE), ("threshold", "f8"), ("differential", "?"),
    ("relative", "?"),
    ("imu", "?"),  # the input is an IMU: its message layout, preparePose's imu_data
    ("remove_gravity", "?"), ("target", "i8"),  # frame code of the target frame (world or base_link)
    # memory of the callbacks: stale-stamp gate, toSec of the last stamp, differential / relative poses
    ("has_last", "?"), ("has_previous", "?"), ("has_initial", "?"), ("last_ns", "i8"), ("last_seconds", "f8"),
    ("previous_rotation", "f8", (3, 3)), ("previous_translation", "f8", 3),
    ("previous_covariance", "f8", (6, 6)),
    ("initial_rotation", "f8", (3, 3)), ("initial_translation", "f8", 3),
], align=True)

INPUT = np.dtype([("kind", "i8"), ("pose", "i8"), ("twist", "i8"), ("acceleration", "i8")], align=True)

# The callbacks' scratch (ekf_node.py): one field per intermediate, so preparing a message allocates nothing.
_V3, _M3, _M6 = ("f8", 3), ("f8", (3, 3)), ("f8", (6, 6))
PREPARE = np.dtype([
    ("covariance6", *_M6), ("position", *_V3), ("quaternion", "f8", 4), ("linear", *_V3), ("angular", *_V3),
    ("pose_rotation", *_M3), ("pose_translation", *_V3), ("target_rotation", *_M3),
    ("target_translation", *_V3),
    ("yaw_rotation", *_M3), ("rotated", *_M6), ("turned", *_V3), ("angles", *_V3), ("moved", *_V3),
    ("delta_rotation", *_M3), ("delta_translation", *_V3), ("previous6", *_M6), ("twist6", *_M6),
    ("twist_rotation", *_M3), ("twist_translation", *_V3),
    ("accel_rotation", *_M3), ("accel_translation", *_V3), ("acceleration", *_V3), ("raw", *_M3),
    ("attitude", *_M3), ("state_rotation", *_M3), ("product", *_M3), ("rc", *_M3),
], align=True)

LOOKUP = np.dtype([
    ("kind", "i8"), ("a_identity", "?"), ("b_identity", "?"),
    ("a_rotation", "f8", (3, 3)), ("a_translation", "f8", 3),
    ("b_rotation", "f8", (3, 3)), ("b_translation", "f8", 3),
], align=True)
EDGE_SAMPLE = np.dtype([("stamp", "i8"), ("quaternion", "f8", 4), ("translation", "f8", 3)], align=True)
EDGE = np.dtype([("start", "i8"), ("count", "i8"), ("cache_ns", "i8")], align=True)  # ring buffer head

ODOMETRY = np.dtype([("stamp", "i8"), ("state", "f8", STATE_SIZE), ("orientation", "f8", 4),
                     ("pose_covariance", "f8", 36), ("twist_covariance", "f8", 36)], align=True)
GPS_ODOMETRY = np.dtype([("stamp", "i8"), ("position", "f8", 3), ("covariance", "f8", 36)], align=True)
OUTPUT_HEAD = np.dtype([("count", "i8")], align=True)

COUNTERS = np.dtype([
    ("dropped", "i8", len(DROP_NAMES)), ("outcomes", "i8", 3), ("inputs", "i8", MAX_TOPICS),
    ("fault_kind", "i8"), ("fault_topic", "i8"), ("fault_index", "i8"), ("fault_field", "i8"),
], align=True)

NAVSAT_CONFIG = np.dtype([
    ("enabled", "?"), ("use_odometry_yaw", "?"), ("manual_datum", "?"),  # manual: wait_for_datum + datum
    ("zero_altitude", "?"), ("publish_filtered_gps", "?"),
    ("imu_topic_wanted", "?"),  # the IMU subscription exists (not use_odometry_yaw, not wait_for_datum)
    ("heading_offset", "f8"),  # magnetic_declination_radians + yaw_offset
    ("datum_utm", "f8", 3), ("datum_convergence", "f8"), ("datum_yaw", "f8"),
], align=True)

NAVSAT_STATE = np.dtype([
    ("transform_good", "?"), ("has_odom", "?"), ("has_gps", "?"), ("has_imu", "?"), ("odom_updated", "?"),
    ("gps_updated", "?"),
    ("world_frame", "i8"), ("base_link_frame", "i8"),  # frame codes from the odometry
    ("gps_frame", "i8"), ("gps_stamp", "i8"), ("gps_topic", "i8"), ("gps_index", "i8"),  # the latest fix
    ("convergence", "f8"), ("transform_utm_pose", "f8", 3), ("transform_world_rotation", "f8", (3, 3)),
    ("transform_world_translation", "f8", 3), ("transform_orientation", "f8", (3, 3)),
    ("latest_utm", "f8", 3), ("latest_utm_covariance", "f8", (6, 6)),
    ("utm_world_rotation", "f8", (3, 3)), ("utm_world_translation", "f8", 3),  # T(world←utm)
    # scratch of the transform lookups
    ("lookup_rotation", "f8", (3, 3)), ("lookup_translation", "f8", 3), ("robot_rotation", "f8", (3, 3)),
    ("robot_translation", "f8", 3),
], align=True)

TOPIC = np.dtype([("inputs", "i8", MAX_INPUTS_PER_TOPIC), ("fix", "?"), ("navsat_imu", "?"),
                  ("cmd_vel", "?")],
                 align=True)

INPUT_ROW = np.dtype([("recv", "i8"), ("topic", "i8"), ("index", "i8"), ("stamp", "i8"), ("frame", "i8"),
                      ("child", "i8"), ("values", "f8", VALUES)], align=True)

TIMING = np.dtype([
    ("ekf_period_ns", "i8"), ("navsat_period_ns", "i8"), ("ekf_phase_ns", "i8"), ("navsat_phase_ns", "i8"),
    ("latency_ns", "i8"),  # a tick at nominal T sees the messages received up to T + latency
    ("next_ekf", "i8"), ("next_navsat", "i8"),  # nominal times of the next ticks (NEVER: none)
], align=True)


def records(shape, dtype: np.dtype) -> np.recarray:
    """A zeroed record array (a recarray: fields are attributes in Python too, as in compiled code)."""
    return np.zeros(shape, dtype).view(np.recarray)


def record(dtype: np.dtype) -> np.recarray:
    """A zeroed one-element record array: its owner keeps it, compiled code gets ``[0]``."""
    return records(1, dtype)


class Queue(NamedTuple):
    slots: np.ndarray  # (C,) QUEUE_SLOT pool
    stamp: np.ndarray  # (C,) int64 stamp of each slot (the heap's key)
    heap: np.ndarray  # (C,) slots in heap order
    free: np.ndarray  # (C,) free slots (a stack)
    head: np.void  # QUEUE_HEAD


class Outputs(NamedTuple):
    odometry: np.ndarray  # (K,) ODOMETRY: /odometry/filtered not yet taken
    odometry_head: np.void  # OUTPUT_HEAD
    gps: np.ndarray  # (K,) GPS_ODOMETRY: /odometry/gps not yet taken
    gps_head: np.void


class Tf(NamedTuple):
    lookups: np.ndarray  # (F, F) LOOKUP
    edge: np.ndarray  # (H,) EDGE_SAMPLE
    edge_head: np.void  # EDGE


class Ekf(NamedTuple):
    """Everything of one ekf_node the compiled callbacks and timer use."""

    config: np.void  # FILTER_CONFIG
    state: np.void  # FILTER_STATE
    node: np.void  # NODE_CONFIG
    parts: np.ndarray  # (P,) PART
    inputs: np.ndarray  # (I,) INPUT
    counters: np.void  # COUNTERS
    unresolved: np.ndarray  # (P, F) transform failures per part and message frame
    scratch: np.void  # PREPARE


class Navsat(NamedTuple):
    config: np.void  # NAVSAT_CONFIG
    state: np.void  # NAVSAT_STATE
    row: np.void  # INPUT_ROW: /odometry/gps as the EKF's input message


def describe_fault(counters, topic_names: List[str]) -> str:
    """One line for the fault a compiled callback recorded (COUNTERS.fault_*)."""
    kind, topic, index, field = (int(counters[name]) for name in ("fault_kind", "fault_topic", "fault_index",
                                                                  "fault_field"))
    where = (f"topic {topic_names[topic]}, message {index}" if 0 <= topic < len(topic_names)
             else "the filter")
    name = FIELD_NAMES[field] if 0 <= field < len(FIELD_NAMES) else "?"
    if kind == FAULT_COVARIANCE:
        return f"{where}: {name} is not finite (the filter would become NaN; refused)"
    if kind == FAULT_FIX_VALUE:
        return f"{where}: {name} is not finite (a fix with status != NO_FIX must be finite)"
    if kind == FAULT_INITIAL_VALUE:
        return f"{where}: a non-finite measurement value would initialise the filter (refused)"
    if kind == FAULT_GPS_OUTPUT:
        return f"navsat: non-finite /odometry/gps from {where} (stopped; nothing written)"
    if kind == FAULT_FILTER:
        return f"the filter became non-finite after {where} (stopped; nothing written)"
    assert kind != FAULT_NONE
    return f"judge fault {kind} at {where}"
