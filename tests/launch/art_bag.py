"""A small ART-like real bag for the launch tests: /fix, /imu (ART mounting) and sbg_driver
SbgEkfNav/SbgEkfQuat ground truth, written with the project's own bag writer (rosbags, Humble)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sim2real_eval import rotations
from sim2real_eval.truth import GroundTruth

DATUM = [43.07, -89.40, 260.0]
# base_link→imu of the ART launch ("0 0 0 3.1416 -1.5708 0" = x y z yaw pitch roll) as roll, pitch, yaw.
ART_IMU_MOUNTING_RPY = [0.0, -1.5708, 3.1416]


def drive(duration_s: float = 20.0) -> GroundTruth:
    """Standstill 3 s, accelerate to 4 m/s, then a gentle left turn (100 Hz truth from t = 10 s)."""
    t = 10.0 + np.arange(0.0, duration_s, 0.01)
    rel = t - t[0]
    speed = np.clip((rel - 3.0) * 1.0, 0.0, 4.0)
    yaw_rate = np.where(rel > 10.0, 0.15, 0.0)
    yaw = 0.3 + np.cumsum(yaw_rate) * 0.01
    velocity = np.stack([speed * np.cos(yaw), speed * np.sin(yaw), np.zeros_like(t)], axis=1)
    position = np.cumsum(velocity, axis=0) * 0.01
    return GroundTruth.from_kinematics(t, position, rotations.from_yaw(yaw), velocity,
                                       angular_velocity=np.stack([0 * t, 0 * t, yaw_rate], axis=1))


def make_art_bag(path, duration_s: float = 20.0, seed: int = 5, sbg_layout: str = "3.1",
                 truth_rate_hz: float = 50.0) -> Path:
    """``sbg_layout``: the sbg_driver message layout (``bags.SBG_LAYOUTS``); ``truth_rate_hz``: rate
    of the SbgEkfNav/SbgEkfQuat ground truth."""
    from sim2real_eval.bags import get_typestore, write_bag
    from sim2real_eval.bags import messages as bm
    from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared test fixtures
    from fixtures.bags import sbg_ekf_nav_messages, sbg_ekf_quat_messages

    truth = drive(duration_s)
    gps = load_gps_model("ch_gauss", sensor_seed(seed, "real", "gps"), datum=DATUM).sample(truth)
    imu = load_imu_model({"preset": "chrono_paper_demo", "mounting_rpy": ART_IMU_MOUNTING_RPY},
                         sensor_seed(seed, "real", "imu")).sample(truth)
    store = get_typestore(sbg_layout=sbg_layout)
    items = (list(bm.navsatfix_messages(gps, typestore=store)) + list(bm.imu_messages(imu, typestore=store))
             + list(sbg_ekf_nav_messages(truth, DATUM, rate_hz=truth_rate_hz, typestore=store))
             + list(sbg_ekf_quat_messages(truth, rate_hz=truth_rate_hz, typestore=store)))
    items.sort(key=lambda m: (m.recv_ns, m.topic))
    return write_bag(path, items, typestore=store)

