"""The ART vehicle of seed 003 (1/6-scale car) as the judge sees it: frames, topics, static TFs, configs.

One definition for the offline pipeline, the reference data set, the ROS nodes and launch files
(robot-side: Python 3.8, standard library only).
"""
from __future__ import annotations

BASE_FRAME = "base_link"
IMU_FRAME = "imu"
GPS_FRAME = "gps"

# The ART IROS-2024 launch's static TFs, static_transform_publisher order
# "PARENT CHILD x y z yaw pitch roll" (m, rad): the IMU is mounted yaw π, pitch −π/2 (as written in
# the launch file, 3.1416 and -1.5708), the GPS antenna at base_link.
ART_STATIC_TFS = (
    f"{BASE_FRAME} {IMU_FRAME} 0 0 0 3.1416 -1.5708 0",
    f"{BASE_FRAME} {GPS_FRAME} 0 0 0 0 0 0",
)

# The ART layout (docs/judge.md, "Static TFs: the ART layout"): a bag gets ART_STATIC_TFS by default only
# when (1) the judge's base_link_frame is BASE_FRAME, (2) its IMU messages are in IMU_FRAME and its fixes
# in GPS_FRAME (or in base_link: nothing to mount; at least one of the two frames), (3) it carries the
# ART vehicle's INS, an sbg_driver topic of one of ART_INS_TYPES, and (4) its IMU's mean specific force
# (gravity at rest) lies within ART_MOUNT_TOLERANCE_DEG of ART_IMU_UP, the IMU-frame axis the ART mount
# (yaw π, pitch −π/2) turns up.  Frames and INS alone cannot tell an ART bag from another robot's whose
# IMU frame is also called "imu"; the gravity direction can.
ART_INS_TYPES = ("sbg_driver/msg/SbgGpsVel", "sbg_driver/msg/SbgEkfNav")
ART_IMU_UP = (1.0, 0.0, 0.0)  # R(base_link←imu)ᵀ·(0, 0, 1) of ART_STATIC_TFS[0], to 1e-4
ART_MOUNT_TOLERANCE_DEG = 30.0

# Topics of every run bag and of the ROS nodes (docs/architecture.md, "runs").
TOPICS = {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom", "gps": "/fix",
          "imu": "/imu"}
GPS_ODOMETRY_TOPIC = "/odometry/gps"
MAGNETIC_FIELD_TOPIC = "/imu/mag"  # the IMU's magnetometer (sensor_msgs/MagneticField), when it has one

# robot_localization parameter files of the ART judge (in the installed config/ directory).
EKF_CONFIG = "ekf_art_iros2024.yaml"
NAVSAT_CONFIG = "navsat_art_iros2024.yaml"
EKF_ABSOLUTE_GPS_CONFIG = "ekf_art_absolute_gps.yaml"  # the later absolute-GPS preset

__all__ = ["ART_IMU_UP", "ART_INS_TYPES", "ART_MOUNT_TOLERANCE_DEG", "ART_STATIC_TFS", "BASE_FRAME",
           "EKF_ABSOLUTE_GPS_CONFIG", "EKF_CONFIG", "GPS_FRAME", "GPS_ODOMETRY_TOPIC", "IMU_FRAME",
           "MAGNETIC_FIELD_TOPIC", "NAVSAT_CONFIG", "TOPICS"]
