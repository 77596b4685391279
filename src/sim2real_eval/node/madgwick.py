"""madgwick_node's rclpy-free logic (robot-side): imu/data_raw (sensor_msgs/Imu without orientation) →
imu/data with the orientation imu_filter_madgwick would publish (``models.madgwick``, the same filter
the offline import runs) and orientation_stddev² on the covariance diagonal.

The parameters are imu_filter_madgwick's own names, so one parameter set starts either node (the
launch plan picks the real ``imu_filter_madgwick_node`` where that package is installed).  Ours
provides its 6-DoF, ENU, no-TF configuration only: ``use_mag``, ``publish_tf``, ``stateless`` and
``remove_gravity_vector`` true, or another ``world_frame``, are refused naming the parameter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict

import numpy as np

from .. import message_fields as F
from ..errors import UserError
from ..models import madgwick
from .params import Parameters

MADGWICK_DEFAULTS: Dict[str, Any] = {
    "gain": madgwick.GAIN, "zeta": madgwick.ZETA, "world_frame": "enu",
    "orientation_stddev": madgwick.ORIENTATION_STDDEV, "constant_dt": 0.0,
    "use_mag": False, "publish_tf": False, "stateless": False, "remove_gravity_vector": False,
    "fixed_frame": "odom", "publish_debug_topics": False,
}
UNSUPPORTED_TRUE = ("use_mag", "publish_tf", "stateless", "remove_gravity_vector", "publish_debug_topics")


@dataclass(frozen=True)
class MadgwickConfig:
    gain: float
    zeta: float
    world_frame: str
    orientation_stddev: float
    constant_dt: float


def parse_madgwick_params(params: Dict[str, Any]) -> MadgwickConfig:
    p = Parameters("madgwick_node", params, MADGWICK_DEFAULTS)
    for name in UNSUPPORTED_TRUE:
        if p.boolean(name):
            raise UserError(f"parameter {name}: true is not provided by sim2real_eval's madgwick_node "
                            "(6-DoF, ENU, no TF); install ros-humble-imu-filter-madgwick for it")
    config = MadgwickConfig(gain=p.number("gain"), zeta=p.number("zeta"), world_frame=p.text("world_frame"),
                            orientation_stddev=p.number("orientation_stddev"),
                            constant_dt=p.number("constant_dt", minimum=0.0))
    madgwick.check_parameters(config.gain, config.zeta, config.world_frame, config.orientation_stddev,
                              "madgwick_node: parameter")
    return config


class MadgwickRepublisher:
    """One IMU stream: ``on_imu(msg)`` fills ``msg``'s orientation and its covariance in place (any
    object with sensor_msgs/Imu's field names: an rclpy message, a rosbags one) and returns True, or
    False while no gravity direction was seen (the message is not republished, as the node does)."""

    def __init__(self, config: MadgwickConfig):
        self.filter = madgwick.MadgwickFilter(config.gain, config.zeta, config.world_frame,
                                              config.constant_dt, "madgwick_node")
        self.covariance = madgwick.orientation_covariance(config.orientation_stddev)
        self.waiting = 0  # messages dropped before the first usable accelerometer reading

    def on_imu(self, msg) -> bool:
        got = F.read(msg, F.IMU, ("stamp_ns", "linear_acceleration", "angular_velocity"))
        t = int(got["stamp_ns"]) / 1e9
        q = self.filter.update(t, got["linear_acceleration"], got["angular_velocity"])
        if q is None:
            self.waiting += 1
            return False
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
        msg.orientation_covariance = np.array(self.covariance, dtype=np.float64)
        return True
