"""navsat_transform_node (humble 3.5.2, navsat_transform.cpp) on the data clock.

world = W·C⁻¹·u with C = (u₀, Rz(ψ + decl + yaw_offset + γ)) and W = (odom position, Rz(odom yaw)) at
the moment the transform is built; u are UTM (E, N, alt) coordinates of fixes (pyproj ``+proj=utm`` in
the standard zone, γ = meridian convergence).  The upstream wall timer is replaced by ticks at
k·round(1e9/frequency) ns on the data clock (see runner.py).
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import List, Optional, Tuple

import numpy as np

from .ekf_node import Odometry
from .filter import clamp_rotation
from .measurements import stamp_ns
from .params import NavsatParams
from .tf import TfBuffer, Transform, matrix_from_quaternion, matrix_from_rpy, rpy_from_matrix

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
    from pyproj import Proj  # lazy: pyproj loads PROJ data

    return Proj(proj="utm", zone=zone, ellps="WGS84", south=not northern)


def lat_lon_to_utm(latitude: float, longitude: float) -> Tuple[float, float, float, int, bool]:
    """(easting, northing, meridian convergence γ in radians, zone, northern), as UTMUPS::Forward."""
    zone, northern = utm_zone(latitude, longitude)
    proj = _utm_proj(zone, northern)
    easting, northing = proj(longitude, latitude)
    gamma_deg = proj.get_factors(longitude, latitude).meridian_convergence
    return float(easting), float(northing), math.radians(float(gamma_deg)), zone, northern


def lat_lon_to_utm_many(latitudes, longitudes):
    """lat_lon_to_utm for many fixes at once: (easting, northing, γ rad) arrays (one PROJ call per zone;
    the same numbers as the one-fix call).  NaN inputs give NaN outputs."""
    latitudes = np.asarray(latitudes, dtype=float)
    longitudes = np.asarray(longitudes, dtype=float)
    easting = np.full(latitudes.shape, np.nan)
    northing = np.full(latitudes.shape, np.nan)
    gamma = np.full(latitudes.shape, np.nan)
    finite = np.isfinite(latitudes) & np.isfinite(longitudes)
    zones = {}
    for i in np.flatnonzero(finite):
        zones.setdefault(utm_zone(float(latitudes[i]), float(longitudes[i])), []).append(i)
    for (zone, northern), members in zones.items():
        members = np.array(members)
        proj = _utm_proj(zone, northern)
        e, n = proj(longitudes[members], latitudes[members])
        easting[members], northing[members] = e, n
        factors = proj.get_factors(longitudes[members], latitudes[members])
        gamma[members] = np.radians(np.asarray(factors.meridian_convergence, dtype=float))
    return easting, northing, gamma


class NavsatNode:
    """navsat_transform_node: GPS fix + EKF odometry (+ IMU) → /odometry/gps."""

    def __init__(self, params: NavsatParams, tf: TfBuffer):
        if params.use_local_cartesian:
            from ..errors import UserError

            raise UserError(f"{params.source}: use_local_cartesian is not implemented by the embedded judge")
        self.params = params
        self.tf = tf
        self.period_ns = int(round(1e9 / params.frequency))
        self.transform_good = False
        self.has_odom = self.has_gps = self.has_imu = False
        self.odom_updated = self.gps_updated = False
        self.world_frame = ""
        self.base_link_frame = ""
        self.gps_frame = ""
        self.transform_world_pose: Optional[Transform] = None
        self.transform_utm_pose: Optional[np.ndarray] = None
        self.transform_orientation: Optional[np.ndarray] = None  # 3×3
        self.convergence = 0.0
        self.latest_utm = np.zeros(3)
        self.latest_utm_covariance = np.zeros((6, 6))
        self.gps_stamp_ns = 0
        self.latest_world_pose: Optional[Transform] = None
        self.utm_world: Optional[Transform] = None
        self.world_utm: Optional[Transform] = None
        self.dropped: Counter = Counter()
        self.warnings: List[str] = []
        self.use_manual_datum = params.wait_for_datum

    @property
    def wants_imu(self) -> bool:
        """The IMU subscription exists only without use_odometry_yaw and wait_for_datum, until the
        transform is computed."""
        return not (self.params.use_odometry_yaw or self.params.wait_for_datum) and not self.transform_good

    # --- callbacks ---------------------------------------------------------------------------------
    def fix(self, msg, topic: str = "/fix", utm=None) -> None:
        """gpsFixCallback.  ``utm``: (easting, northing, γ) of this fix when computed in advance
        (lat_lon_to_utm_many)."""
        if not hasattr(msg, "latitude") or not hasattr(msg, "status"):
            from ..errors import UserError

            got = getattr(msg, "__msgtype__", type(msg).__name__)
            raise UserError(f"topic {topic}: expected sensor_msgs/msg/NavSatFix, got {got}")
        self.gps_frame = msg.header.frame_id
        lat, lon, alt = float(msg.latitude), float(msg.longitude), float(msg.altitude)
        if int(msg.status.status) == STATUS_NO_FIX or math.isnan(lat) or math.isnan(lon) or math.isnan(alt):
            self.dropped["unusable_fix"] += 1
            return
        if utm is None:
            easting, northing, gamma, _zone, _north = lat_lon_to_utm(lat, lon)
        else:
            easting, northing, gamma = utm
        if not self.transform_good and not self.use_manual_datum:
            self.transform_utm_pose = np.array([easting, northing, alt])
            self.convergence = gamma
            self.has_gps = True
        self.latest_utm = np.array([easting, northing, alt])
        self.latest_utm_covariance = np.zeros((6, 6))
        self.latest_utm_covariance[:3, :3] = np.asarray(msg.position_covariance, dtype=float).reshape(3, 3)
        self.gps_stamp_ns = stamp_ns(msg.header)
        self.gps_updated = True

    def odometry(self, odom: Odometry) -> None:
        """odomCallback (the EKF's /odometry/filtered)."""
        self.world_frame = odom.frame_id
        self.base_link_frame = odom.child_frame_id
        pose = Transform(matrix_from_quaternion(*odom.orientation), np.array(odom.position, dtype=float))
        if not self.transform_good and not self.use_manual_datum:
            self.transform_world_pose = pose
            self.has_odom = True
            if self.params.use_odometry_yaw:
                self._imu_orientation(odom.orientation, odom.child_frame_id, odom.stamp_ns)
        elif not self.transform_good and self.use_manual_datum and not self.has_odom:
            self._apply_manual_datum()
        self.latest_world_pose = pose
        self.odom_updated = True

    def odometry_after_transform(self, frame_id: str, child_frame_id: str) -> None:
        """odomCallback once the transform is computed: only the frames and the new-odometry flag matter
        then (the pose feeds /gps/filtered, which is not produced; ``latest_world_pose`` is not updated)."""
        assert self.transform_good
        self.world_frame = frame_id
        self.base_link_frame = child_frame_id
        self.odom_updated = True

    def _apply_manual_datum(self) -> None:
        """datumCallback: datum fix used directly (no GPS-offset removal), identity world pose, the
        datum yaw as orientation."""
        lat, lon, yaw = self.params.datum
        easting, northing, gamma, _zone, _north = lat_lon_to_utm(lat, lon)
        self.transform_utm_pose = np.array([easting, northing, 0.0])
        self.convergence = gamma
        self.transform_world_pose = Transform.identity()
        self.transform_orientation = matrix_from_rpy(0.0, 0.0, yaw)
        self.has_odom = self.has_gps = self.has_imu = True

    def imu(self, msg) -> None:
        """imuCallback (only while the transform is not computed)."""
        self._imu_orientation(
            (msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w),
            msg.header.frame_id,
            stamp_ns(msg.header),
        )

    def _imu_orientation(self, quaternion, frame_id: str, stamp: int) -> None:
        if not self.has_odom:
            return
        self.transform_orientation = matrix_from_quaternion(*quaternion)
        mount = self.tf.lookup_safe(self.base_link_frame, frame_id, stamp)
        if mount is None:
            self.dropped["imu_tf_unavailable"] += 1
            return
        roll_offset, pitch_offset, yaw_offset = rpy_from_matrix(mount.rotation)
        roll, pitch, yaw = rpy_from_matrix(self.transform_orientation)
        angles = np.array(
            [
                clamp_rotation(roll - roll_offset),
                clamp_rotation(pitch - pitch_offset),
                clamp_rotation(yaw - yaw_offset),
            ]
        )
        angles = matrix_from_rpy(0.0, 0.0, yaw_offset) @ angles
        self.transform_orientation = matrix_from_rpy(*angles)
        self.has_imu = True

    # --- timer -------------------------------------------------------------------------------------
    def tick(self, now_ns: int) -> Optional[Odometry]:
        """periodicUpdate: build the transform, or publish /odometry/gps (+ the /gps/filtered side
        effect of clearing the new-odom flag)."""
        if not self.transform_good:
            self.compute_transform()
            return None
        out = self.prepare_gps_odometry()
        if self.params.publish_filtered_gps and self.odom_updated:
            self.odom_updated = False  # prepareFilteredGps consumes the odometry
        return out

    def compute_transform(self) -> None:
        if self.transform_good or not (self.has_odom and self.has_gps and self.has_imu):
            return
        p = self.params
        heading_offset = p.magnetic_declination_radians + p.yaw_offset + self.convergence
        utm_origin = (
            self.transform_utm_pose.copy()
            if self.use_manual_datum
            else self._robot_origin_utm(self.transform_utm_pose, heading_offset)
        )
        _r, _p, imu_yaw = rpy_from_matrix(self.transform_orientation)
        utm_pose = Transform(matrix_from_rpy(0.0, 0.0, imu_yaw + heading_offset), utm_origin)
        _r, _p, odom_yaw = rpy_from_matrix(self.transform_world_pose.rotation)
        world_pose = Transform(matrix_from_rpy(0.0, 0.0, odom_yaw), self.transform_world_pose.translation)
        self.utm_world = world_pose * utm_pose.inverse()  # T(world←utm)
        self.world_utm = self.utm_world.inverse()
        self.transform_good = True

    def _robot_origin_utm(self, gps_utm: np.ndarray, heading_offset: float) -> np.ndarray:
        """getRobotOriginCartesianPose: remove the base_link→gps offset rotated by the heading."""
        offset = self.tf.lookup_safe(self.base_link_frame, self.gps_frame, 0)
        if offset is None:
            self.dropped["gps_tf_unavailable_at_datum"] += 1
            return gps_utm.copy()
        roll, pitch, yaw = rpy_from_matrix(self.transform_orientation)
        rotated = matrix_from_rpy(roll, pitch, yaw + heading_offset) @ offset.translation
        return gps_utm - rotated

    def prepare_gps_odometry(self) -> Optional[Odometry]:
        if not (self.transform_good and self.gps_updated and self.odom_updated):
            return None
        gps_world = self.utm_world.rotation @ self.latest_utm + self.utm_world.translation
        position = self._robot_origin_world(gps_world, self.gps_stamp_ns)
        if self.params.zero_altitude:
            position[2] = 0.0
        rot6 = np.zeros((6, 6))
        rot6[:3, :3] = self.utm_world.rotation
        rot6[3:, 3:] = self.utm_world.rotation
        self.latest_utm_covariance = rot6 @ self.latest_utm_covariance @ rot6.T
        self.gps_updated = False
        return Odometry(
            self.gps_stamp_ns,
            self.world_frame,
            "",
            position,
            np.array([0.0, 0.0, 0.0, 1.0]),
            self.latest_utm_covariance.reshape(36).copy(),
            np.zeros(3),
            np.zeros(3),
            np.zeros(36),
        )

    def _robot_origin_world(self, gps_world: np.ndarray, stamp: int) -> np.ndarray:
        """getRobotOriginWorldPose: (0,0,0) when either TF lookup fails, as upstream."""
        offset = self.tf.lookup_safe(self.base_link_frame, self.gps_frame, stamp)
        if offset is None:
            self.dropped["gps_tf_unavailable"] += 1
            return np.zeros(3)
        robot = self.tf.lookup_safe(self.world_frame, self.base_link_frame, stamp)
        if robot is None:
            self.dropped["robot_tf_unavailable"] += 1
            return np.zeros(3)
        return gps_world - robot.rotation @ offset.translation
