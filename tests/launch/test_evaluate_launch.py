"""launch_testing integration test: evaluate.launch.py on a small ART-like bag, mode sim_imu.

Runs the real ros2 bag player, replay_node, static TFs, robot_localization's ekf_node +
navsat_transform_node and recorder_node, then checks the recorded run directory.  Needs a ROS 2
Humble environment with robot_localization (the Docker image, or a source build); skipped without
rclpy.  (sbg_driver is not needed: replay_node reads the bag's INS truth with the project's reader.)
"""
from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not installed: the ROS 2 launch tests run in docker/Dockerfile")
pytest.importorskip("launch_testing", reason="launch_testing is not installed (no ROS 2)")

import launch  # noqa: E402  (after the skips: these exist only in a ROS 2 environment)
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from art_bag import make_art_bag  # noqa: E402  (tests/launch is on sys.path: no __init__.py)
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

WORK = Path(tempfile.mkdtemp(prefix="sim2real_eval_launch_test_"))
BAG = WORK / "art_lot"
OUTPUT = WORK / "runs" / "sim_imu_art_lot"


@pytest.mark.launch_test
def generate_test_description():
    make_art_bag(BAG, duration_s=20.0)
    evaluate = Path(get_package_share_directory("sim2real_eval")) / "launch" / "evaluate.launch.py"
    include = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(evaluate)),
        launch_arguments={"bag": str(BAG), "mode": "sim_imu", "imu_model": "chrono_paper_demo", "seed": "3",
                          "output": str(OUTPUT), "truth_source": "sbg_ekf",
                          # The test, not the player's exit, ends the launch (no race with the runner).
                          "shutdown_when_done": "false"}.items())
    return launch.LaunchDescription([include, launch_testing.actions.ReadyToTest()])


class TestReplay(unittest.TestCase):
    def test_player_plays_the_whole_bag(self, proc_info):
        proc_info.assertWaitForShutdown(process="bag_player", timeout=120)


@launch_testing.post_shutdown_test()
class TestRecordedRun(unittest.TestCase):
    def test_recorded_bag_has_the_filtered_odometry(self):
        from sim2real_eval.bags import open_bag
        self.assertTrue((OUTPUT / "run.yaml").is_file(), f"{OUTPUT} is not a complete run directory")
        with open_bag(OUTPUT) as reader:
            topics = reader.topics
        self.assertIn("/odometry/filtered", topics)
        self.assertGreater(topics["/odometry/filtered"].count, 100)
        self.assertGreater(topics["/imu"].count, 1000)   # simulated IMU at 100 Hz for ~20 s
        self.assertGreater(topics["/ground_truth/odom"].count, 100)

    def test_player_exited_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, process="bag_player")
