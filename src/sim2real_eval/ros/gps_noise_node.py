"""gps_noise_node: ground-truth nav_msgs/Odometry → simulated sensor_msgs/NavSatFix (default /fix, 10 Hz).

Parameters (named as the launch arguments; model keys as the offline presets): gps_model,
model_params.<key>, seed, seed_keys, gps_rate, frame_id (gps), truth_topic (/ground_truth/odom),
output_topic (/fix), truth_mode (interpolate|hold), max_truth_gap (s), twist_frame (child|world),
tick_topic, use_sim_time.  See docs/ros.md.
"""
from __future__ import annotations

import sys

from .noise_node import main_for


def main() -> int:
    return main_for("gps")


if __name__ == "__main__":
    sys.exit(main())
