"""navsat_transform_node (humble 3.5.2, navsat_transform.cpp) on the data clock.

world = W·C⁻¹·u with C = (u₀, Rz(ψ + decl + yaw_offset + γ)) and W = (odom position, Rz(odom yaw)) at
the moment the transform is built; u are UTM (E, N, alt) coordinates of fixes (pyproj ``+proj=utm`` in
the standard zone, γ = meridian convergence; computed for a whole chunk of fixes in one call).  The
callbacks (fix, odometry, imu) and the timer (compute the transform / publish /odometry/gps) are
compiled and run inside the Judge's loop (loop.py); ``NavsatNode`` is their per-message API.  The
upstream wall timer is replaced by ticks on the data clock (runner.py).
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import List, Optional, Tuple

import numpy as np
from pyproj import Proj

from ..errors import UserError
from . import input_rows
from .compiled_cache import njit
from .kernels import (
    clamp_rotation,
    copy1,
    copy2,
    mat3,
    matrix_from_quaternion,
    matrix_from_rpy,
    rotate,
    rotate_t,
    rotated_covariance,
    rpy_from_matrix,
    transpose3,
)
from .params import NavsatParams
from .series import gps_series
from .state import (
    COUNTERS,
    DROP_GPS_TF,
    DROP_GPS_TF_AT_DATUM,
    DROP_NAMES,
    DROP_NAVSAT_IMU_TF,
    DROP_ROBOT_TF,
    DROP_UNUSABLE_FIX,
    FAULT_COVARIANCE,
    FAULT_FIX_VALUE,
    FAULT_GPS_OUTPUT,
    FIELD_ALTITUDE,
    FIELD_LATITUDE,
    FIELD_LONGITUDE,
    FIELD_POSITION_COVARIANCE,
    GPS_ODOMETRY,
    INPUT_ROW,
    NAVSAT_CONFIG,
    NAVSAT_STATE,
    ODOMETRY,
    OUTPUT_HEAD,
    Navsat,
    Outputs,
    describe_fault,
    record,
    records,
)
from .tf import TfBuffer, lookup

STATUS_NO_FIX = -1


def utm_zone(latitude: float, longitude: float) -> Tuple[int, bool]:
    """GeographicLib UTMUPS::StandardZone for |lat| < 84 (incl. the Norway and Svalbard exceptions);
    returns (zone, northern)."""
    lon = ((longitude + 180.0) % 360.0) - 180.0
    zone = int(math.floor((lon + 180.0) / 6.0)) + 1
    zone = min(max(zone, 1), 60)
    band = int(math.floor((latitude + 80.0) / 8.0)) - 10
    if band == 7 and zone == 31 and lon >= 3.0:  # Norway
        zone = 32
    elif band == 9 and 0.0 <= lon < 42.0:  # Svalbard
        zone = 2 * int((lon + 183.0) / 12.0) + 1
    return zone, latitude >= 0.0


@lru_cache(maxsize=8)
def _utm_proj(zone: int, northern: bool):
    return Proj(proj="utm", zone=zone, ellps="WGS84", south=not northern)


def lat_lon_to_utm(latitude: float, longitude: float) -> Tuple[float, float, float, int, bool]:
    """(easting, northing, meridian convergence γ in radians, zone, northern), as UTMUPS::Forward."""
    zone, northern = utm_zone(latitude, longitude)
    easting, northing, gamma = lat_lon_to_utm_many([latitude], [longitude])
    return float(easting[0]), float(northing[0]), float(gamma[0]), zone, northern


def lat_lon_to_utm_many(latitudes, longitudes):
    """UTM of many fixes: (easting, northing, γ rad) arrays, one PROJ call per zone.  Non-finite inputs
    give NaN outputs."""
    latitudes = np.asarray(latitudes, dtype=float)
    longitudes = np.asarray(longitudes, dtype=float)
    easting = np.full(latitudes.shape, np.nan)
    northing = np.full(latitudes.shape, np.nan)
    gamma = np.full(latitudes.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(latitudes) & np.isfinite(longitudes))
    if not len(finite):
        return easting, northing, gamma
    lat, lon = latitudes[finite], longitudes[finite]
    # utm_zone for all of them: the standard zone with the Norway and Svalbard exceptions
    wrapped = ((lon + 180.0) % 360.0) - 180.0
    zone = np.clip(np.floor((wrapped + 180.0) / 6.0).astype(np.int64) + 1, 1, 60)
    band = np.floor((lat + 80.0) / 8.0).astype(np.int64) - 10
    zone = np.where((band == 7) & (zone == 31) & (wrapped >= 3.0), 32, zone)
    svalbard = (band == 9) & (wrapped >= 0.0) & (wrapped < 42.0)
    zone = np.where(svalbard, 2 * np.floor((wrapped + 183.0) / 12.0).astype(np.int64) + 1, zone)
    key = zone * 2 + (lat >= 0.0)
    for value in np.unique(key):
        members = finite[key == value]
        proj = _utm_proj(int(value // 2), bool(value % 2))
        e, n = proj(longitudes[members], latitudes[members])
        easting[members], northing[members] = e, n
        factors = proj.get_factors(longitudes[members], latitudes[members])
        gamma[members] = np.radians(np.asarray(factors.meridian_convergence, dtype=float))
    return easting, northing, gamma


UTM_COLUMNS = slice(input_rows.FIX_EASTING, input_rows.FIX_CONVERGENCE + 1)  # easting, northing, convergence


def utm_of(values: np.ndarray) -> np.ndarray:
    """(N, 3) easting, northing, meridian convergence of NavSatFix rows' values (their UTM_COLUMNS)."""
    return np.column_stack(lat_lon_to_utm_many(values[:, input_rows.FIX_LATITUDE],
                                               values[:, input_rows.FIX_LONGITUDE]))


def add_utm(values: np.ndarray) -> None:
    """Fill the UTM columns of NavSatFix rows (``utm_of``)."""
    if len(values):
        values[:, UTM_COLUMNS] = utm_of(values)


# --- callbacks and timer (compiled) --------------------------------------------------------------------


@njit(cache=True)
def navsat_fix(nav, counters, row):
    """gpsFixCallback for a NavSatFix row (UTM precomputed).  False on a fault: a usable fix (status ≠
    NO_FIX, no NaN) with an infinite coordinate or a non-finite covariance is refused."""
    config, state, values = nav.config, nav.state, row.values
    state.gps_frame = row.frame
    lat, lon = values[input_rows.FIX_LATITUDE], values[input_rows.FIX_LONGITUDE]
    alt = values[input_rows.FIX_ALTITUDE]
    if int(values[input_rows.FIX_STATUS]) == STATUS_NO_FIX or np.isnan(lat) or np.isnan(lon) or np.isnan(alt):
        counters.dropped[DROP_UNUSABLE_FIX] += 1
        return True
    field = -1
    if not np.isfinite(lat):
        field = FIELD_LATITUDE
    elif not np.isfinite(lon):
        field = FIELD_LONGITUDE
    elif not np.isfinite(alt):
        field = FIELD_ALTITUDE
    else:
        for i in range(9):
            if not np.isfinite(values[input_rows.FIX_COVARIANCE + i]):
                field = FIELD_POSITION_COVARIANCE
    if field >= 0:
        counters.fault_kind = FAULT_COVARIANCE if field == FIELD_POSITION_COVARIANCE else FAULT_FIX_VALUE
        counters.fault_topic, counters.fault_index, counters.fault_field = row.topic, row.index, field
        return False
    easting, northing = values[input_rows.FIX_EASTING], values[input_rows.FIX_NORTHING]
    if not state.transform_good and not config.manual_datum:
        pose = state.transform_utm_pose
        pose[0], pose[1], pose[2] = easting, northing, alt
        state.convergence = values[input_rows.FIX_CONVERGENCE]
        state.has_gps = True
    state.latest_utm[0], state.latest_utm[1], state.latest_utm[2] = easting, northing, alt
    state.latest_utm_covariance[:, :] = 0.0
    for i in range(3):
        for j in range(3):
            state.latest_utm_covariance[i, j] = values[input_rows.FIX_COVARIANCE + 3 * i + j]
    state.gps_stamp = row.stamp
    state.gps_topic, state.gps_index = row.topic, row.index
    state.gps_updated = True
    return True


@njit(cache=True)
def _imu_orientation(nav, tf, counters, quaternion, frame, stamp):
    state = nav.state
    if not state.has_odom:
        return
    copy2(matrix_from_quaternion(quaternion[0], quaternion[1], quaternion[2], quaternion[3]),
          state.transform_orientation)
    rotation, translation = state.lookup_rotation, state.lookup_translation
    if not lookup(tf, state.base_link_frame, frame, stamp, rotation, translation):
        counters.dropped[DROP_NAVSAT_IMU_TF] += 1
        return
    roll_offset, pitch_offset, yaw_offset = rpy_from_matrix(rotation)
    roll, pitch, yaw = rpy_from_matrix(state.transform_orientation)
    angles = np.array([clamp_rotation(roll - roll_offset), clamp_rotation(pitch - pitch_offset),
                       clamp_rotation(yaw - yaw_offset)])
    turned = np.empty(3)
    rotate(matrix_from_rpy(0.0, 0.0, yaw_offset), angles, turned, 0)
    copy2(matrix_from_rpy(turned[0], turned[1], turned[2]), state.transform_orientation)
    state.has_imu = True


@njit(cache=True)
def navsat_imu(nav, tf, counters, row):
    """imuCallback for an Imu row (subscribed only while the transform is not computed)."""
    q = input_rows.IMU_ORIENTATION
    quaternion = np.empty(4)
    for i in range(4):
        quaternion[i] = row.values[q + i]
    _imu_orientation(nav, tf, counters, quaternion, row.frame, row.stamp)


@njit(cache=True)
def navsat_odometry(nav, tf, counters, world_frame, base_link_frame, odometry):
    """odomCallback with the EKF's /odometry/filtered (an ODOMETRY record).  Once the transform is
    computed only the frames and the new-odometry flag matter (the pose feeds /gps/filtered, which is
    not produced)."""
    config, state = nav.config, nav.state
    state.world_frame = world_frame
    state.base_link_frame = base_link_frame
    if not state.transform_good and not config.manual_datum:
        q = odometry.orientation
        copy2(matrix_from_quaternion(q[0], q[1], q[2], q[3]), state.transform_world_rotation)
        for i in range(3):
            state.transform_world_translation[i] = odometry.state[i]
        state.has_odom = True
        if config.use_odometry_yaw:
            quaternion = np.empty(4)
            copy1(q, quaternion)
            _imu_orientation(nav, tf, counters, quaternion, base_link_frame, odometry.stamp)
    elif not state.transform_good and config.manual_datum and not state.has_odom:
        # datumCallback: the datum fix used directly (no GPS-offset removal), identity world pose
        copy1(config.datum_utm, state.transform_utm_pose)
        state.convergence = config.datum_convergence
        copy2(np.eye(3), state.transform_world_rotation)
        state.transform_world_translation[:] = 0.0
        copy2(matrix_from_rpy(0.0, 0.0, config.datum_yaw), state.transform_orientation)
        state.has_odom = True
        state.has_gps = True
        state.has_imu = True
    state.odom_updated = True


@njit(cache=True)
def _compute_transform(nav, tf, counters):
    config, state = nav.config, nav.state
    if state.transform_good or not (state.has_odom and state.has_gps and state.has_imu):
        return
    heading_offset = config.heading_offset + state.convergence
    utm_origin = np.empty(3)
    copy1(state.transform_utm_pose, utm_origin)
    if not config.manual_datum:  # getRobotOriginCartesianPose: remove the base_link→gps offset
        rotation, translation = state.lookup_rotation, state.lookup_translation
        if lookup(tf, state.base_link_frame, state.gps_frame, np.int64(0), rotation, translation):  # latest
            roll, pitch, yaw = rpy_from_matrix(state.transform_orientation)
            rotated = np.empty(3)
            rotate(matrix_from_rpy(roll, pitch, yaw + heading_offset), translation, rotated, 0)
            for i in range(3):
                utm_origin[i] -= rotated[i]
        else:
            counters.dropped[DROP_GPS_TF_AT_DATUM] += 1
    _r, _p, imu_yaw = rpy_from_matrix(state.transform_orientation)
    utm_rotation = matrix_from_rpy(0.0, 0.0, imu_yaw + heading_offset)
    _r, _p, odom_yaw = rpy_from_matrix(state.transform_world_rotation)
    world_rotation = matrix_from_rpy(0.0, 0.0, odom_yaw)
    # T(world←utm) = world_pose · utm_pose⁻¹ = (W·Cᵀ, W·(−Cᵀ·u₀) + w)
    inverse_translation, moved = np.empty(3), np.empty(3)
    rotate_t(utm_rotation, utm_origin, inverse_translation, 0)
    for i in range(3):
        inverse_translation[i] = -inverse_translation[i]
    rotate(world_rotation, inverse_translation, moved, 0)
    copy2(mat3(world_rotation, transpose3(utm_rotation)), state.utm_world_rotation)
    for i in range(3):
        state.utm_world_translation[i] = moved[i] + state.transform_world_translation[i]
    state.transform_good = True


@njit(cache=True)
def _gps_odometry(nav, tf, counters, outputs):
    """prepareGpsOdometry → 1 published, 0 not, −1 fault."""
    config, state = nav.config, nav.state
    if not (state.transform_good and state.gps_updated and state.odom_updated):
        return 0
    position = np.empty(3)
    rotate(state.utm_world_rotation, state.latest_utm, position, 0)
    for i in range(3):
        position[i] += state.utm_world_translation[i]
    stamp = state.gps_stamp
    # getRobotOriginWorldPose: (0, 0, 0) when either lookup fails (upstream)
    offset_rotation, offset = state.lookup_rotation, state.lookup_translation
    robot_rotation, robot_translation = state.robot_rotation, state.robot_translation
    if not lookup(tf, state.base_link_frame, state.gps_frame, stamp, offset_rotation, offset):
        counters.dropped[DROP_GPS_TF] += 1
        position[:] = 0.0
    elif not lookup(tf, state.world_frame, state.base_link_frame, stamp, robot_rotation, robot_translation):
        counters.dropped[DROP_ROBOT_TF] += 1
        position[:] = 0.0
    else:
        lever = np.empty(3)
        rotate(robot_rotation, offset, lever, 0)
        for i in range(3):
            position[i] -= lever[i]
    if config.zero_altitude:
        position[2] = 0.0
    rotated = np.zeros((6, 6))
    rotated_covariance(state.utm_world_rotation, state.latest_utm_covariance, rotated, 0, 6, np.empty((3, 3)))
    copy2(rotated, state.latest_utm_covariance)
    state.gps_updated = False
    for i in range(3):
        if not np.isfinite(position[i]):
            counters.fault_kind, counters.fault_topic, counters.fault_index = (FAULT_GPS_OUTPUT,
                                                                               state.gps_topic,
                                                                               state.gps_index)
            return -1
    k = outputs.gps_head.count
    out = outputs.gps[k]
    out.stamp = stamp
    copy1(position, out.position)
    for i in range(6):
        for j in range(6):
            out.covariance[6 * i + j] = rotated[i, j]
    outputs.gps_head.count = k + 1
    return 1


@njit(cache=True)
def navsat_tick(nav, tf, counters, outputs):
    """periodicUpdate: build the transform, or publish /odometry/gps (+ the /gps/filtered side effect
    of clearing the new-odometry flag) → 1 published, 0 not, −1 fault."""
    state = nav.state
    if not state.transform_good:
        _compute_transform(nav, tf, counters)
        return 0
    status = _gps_odometry(nav, tf, counters, outputs)
    if nav.config.publish_filtered_gps and state.odom_updated:
        state.odom_updated = False  # prepareFilteredGps consumes the odometry
    return status


# --- navsat_transform_node in Python ---------------------------------------------------------------------


def navsat_core(params: Optional[NavsatParams]) -> Navsat:
    """The navsat records of ``params`` (None: a disabled navsat, for a judge without it)."""
    config, state, row = record(NAVSAT_CONFIG), record(NAVSAT_STATE), record(INPUT_ROW)
    state[0]["transform_world_rotation"] = state[0]["transform_orientation"] = np.eye(3)
    state[0]["utm_world_rotation"] = np.eye(3)
    if params is None:
        return Navsat(config[0], state[0], row[0])
    if params.use_local_cartesian:
        raise UserError(f"{params.source}: use_local_cartesian is not implemented by the embedded judge")
    c = config[0]
    c["enabled"] = True
    c["use_odometry_yaw"] = bool(params.use_odometry_yaw)
    c["manual_datum"] = bool(params.wait_for_datum)
    c["zero_altitude"] = bool(params.zero_altitude)
    c["publish_filtered_gps"] = bool(params.publish_filtered_gps)
    c["imu_topic_wanted"] = not (params.use_odometry_yaw or params.wait_for_datum)
    c["heading_offset"] = params.magnetic_declination_radians + params.yaw_offset
    if params.wait_for_datum:
        lat, lon, c["datum_yaw"] = params.datum
        easting, northing, c["datum_convergence"], _zone, _north = lat_lon_to_utm(lat, lon)
        c["datum_utm"] = (easting, northing, 0.0)
    return Navsat(config[0], state[0], row[0])


class NavsatNode:
    """navsat_transform_node: GPS fix + EKF odometry (+ IMU) → /odometry/gps.

    ``core`` (state.Navsat) is what the Judge's loop drives; the methods are the per-message API over
    the same compiled callbacks."""

    def __init__(self, params: NavsatParams, tf: TfBuffer, counters=None, output_capacity: int = 64):
        self.params = params
        self.tf = tf
        self.period_ns = int(round(1e9 / params.frequency))
        self.core = navsat_core(params)
        self.counters = counters if counters is not None else record(COUNTERS)[0]
        self.warnings: List[str] = []
        self.gps = records(output_capacity, GPS_ODOMETRY)
        self.gps_head = record(OUTPUT_HEAD)[0]

    @property
    def wants_imu(self) -> bool:
        """The IMU subscription exists only without use_odometry_yaw and wait_for_datum, until the
        transform is computed."""
        return bool(self.core.config["imu_topic_wanted"]) and not self.transform_good

    @property
    def transform_good(self) -> bool:
        return bool(self.core.state["transform_good"])

    @property
    def has_gps(self) -> bool:
        return bool(self.core.state["has_gps"])

    @property
    def gps_frame(self) -> str:
        return self.tf.names[int(self.core.state["gps_frame"])]

    @property
    def base_link_frame(self) -> str:
        return self.tf.names[int(self.core.state["base_link_frame"])]

    @property
    def dropped(self) -> Counter:
        prefix = "navsat_"
        return Counter({name[len(prefix):]: int(v) for name, v in zip(DROP_NAMES, self.counters["dropped"])
                        if v and name.startswith(prefix)})

    def take_published(self) -> np.ndarray:
        """The /odometry/gps messages published since the last call (a GPS_ODOMETRY array, a copy)."""
        k = int(self.gps_head["count"])
        taken = self.gps[:k].copy()
        self.gps_head["count"] = 0
        return taken

    def _rows(self, topic: str, msgtype: str, msg) -> np.ndarray:
        return input_rows.rows(input_rows.object_columns(topic, msgtype, [msg]), self.tf, 0, 0)

    def fix(self, msg, topic: str = "/fix") -> None:
        """gpsFixCallback for one NavSatFix message object."""
        rows = self._rows(topic, input_rows.NAVSATFIX, msg)
        add_utm(rows["values"])
        if not navsat_fix(self.core, self.counters, rows[0]):
            raise UserError(describe_fault(self.counters, [topic]))

    def odometry(self, msg) -> None:
        """odomCallback for one nav_msgs/Odometry message object (the EKF's output)."""
        row = self._rows("/odometry/filtered", input_rows.ODOMETRY, msg)[0]
        odometry = records(1, ODOMETRY)
        odometry["stamp"] = row["stamp"]
        odometry["state"][0, :3] = row["values"][input_rows.POSITION:input_rows.POSITION + 3]
        odometry["orientation"] = row["values"][input_rows.ORIENTATION:input_rows.ORIENTATION + 4]
        navsat_odometry(self.core, self.tf.core, self.counters, int(row["frame"]), int(row["child"]),
                        odometry[0])

    def imu(self, msg) -> None:
        """imuCallback for one Imu message object."""
        navsat_imu(self.core, self.tf.core, self.counters, self._rows("/imu", input_rows.IMU, msg)[0])

    def tick(self, now_ns: int = 0):
        """periodicUpdate: the published /odometry/gps (a one-message OdometrySeries) or None."""
        self.gps_head["count"] = 0
        outputs = Outputs(_NO_ODOMETRY, _NO_ODOMETRY_HEAD, self.gps, self.gps_head)
        status = navsat_tick(self.core, self.tf.core, self.counters, outputs)
        if status < 0:
            raise UserError(describe_fault(self.counters, []))
        if status == 0:
            return None
        return gps_series(self.take_published(), self.tf.names[int(self.core.state["world_frame"])])


_NO_ODOMETRY = records(1, ODOMETRY)  # NavsatNode.tick publishes no /odometry/filtered
_NO_ODOMETRY_HEAD = record(OUTPUT_HEAD)[0]
