"""recorder_node: record the run's topics with rosbag2_py (sqlite3 default, mcap option) + run.yaml.

The bag is written into a temporary sibling of ``output`` and renamed into place, with run.yaml
inside, only when recording ends cleanly (SIGINT, launch shutdown after the player exits, or
``idle_timeout`` seconds without messages): ``output`` is either complete or absent (the run
convention of docs/architecture.md).  Messages are stored serialized, stamped with the node clock
(the bag's /clock under use_sim_time).
"""
from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

import rosbag2_py
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, MagneticField, NavSatFix

from .. import art
from ..node import params
from . import _node

MESSAGE_TYPES = {
    art.TOPICS["gps"]: (NavSatFix, "sensor_msgs/msg/NavSatFix"),
    art.TOPICS["imu"]: (Imu, "sensor_msgs/msg/Imu"),
    params.MAGNETIC_FIELD_TOPIC: (MagneticField, "sensor_msgs/msg/MagneticField"),
}
ODOMETRY = (Odometry, "nav_msgs/msg/Odometry")
# Best effort subscribes to every publisher (reliable or not); deep queue so bursts are kept.
RECORD_QOS = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.BEST_EFFORT)


class Recorder:
    def __init__(self):
        self.node = _node.make_node("recorder_node", params.RECORDER_DEFAULTS)
        self.config = params.parse_recorder_params(_node.parameter_values(self.node))
        output = self.config.output
        output.parent.mkdir(parents=True, exist_ok=True)
        self.temp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
        self.temp.rmdir()  # rosbag2 refuses an existing directory
        self.writer = rosbag2_py.SequentialWriter()
        self.writer.open(rosbag2_py.StorageOptions(uri=str(self.temp), storage_id=self.config.storage),
                         rosbag2_py.ConverterOptions("cdr", "cdr"))
        self.count = 0
        self.last_message = _node.wall_seconds()
        for topic in self.config.topics:
            msg_class, type_name = MESSAGE_TYPES.get(topic, ODOMETRY)
            self.writer.create_topic(rosbag2_py.TopicMetadata(name=topic, type=type_name,
                                                              serialization_format="cdr"))
            self.node.create_subscription(msg_class, topic, self._callback(topic), RECORD_QOS, raw=True)
        if self.config.idle_timeout_s > 0:
            # Wall (steady) time: the data clock stops when the player does.
            self.node.create_timer(0.5, self.check_idle, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.node.get_logger().info(f"recording {', '.join(self.config.topics)} -> {output}")

    def _callback(self, topic):
        def write(serialized: bytes) -> None:
            self.writer.write(topic, serialized, self.node.get_clock().now().nanoseconds)
            self.count += 1
            self.last_message = _node.wall_seconds()
        return write

    def check_idle(self) -> None:
        if self.count and _node.wall_seconds() - self.last_message > self.config.idle_timeout_s:
            self.node.get_logger().info(f"no message for {self.config.idle_timeout_s:g} s: stopping")
            raise SystemExit(0)

    def close(self) -> None:
        """Close the bag (rosbag2 writes metadata.yaml on destruction), add run.yaml, rename."""
        writer, self.writer = self.writer, None
        del writer
        gc.collect()
        if not self.temp.is_dir():
            return
        if self.count == 0:
            shutil.rmtree(self.temp, ignore_errors=True)
            print(f"recorder_node: nothing was recorded; {self.config.output} not written", file=sys.stderr)
            return
        if self.config.run_yaml:
            (self.temp / "run.yaml").write_text(self.config.run_yaml, encoding="utf-8")
        os.replace(self.temp, self.config.output)
        print(f"recorder_node: {self.count} messages -> {self.config.output}", file=sys.stderr)


def main() -> int:
    holder = {}

    def build():
        holder["recorder"] = Recorder()
        return holder["recorder"].node

    def finish(_node_handle):
        if "recorder" in holder:
            holder["recorder"].close()

    try:
        return _node.run("recorder_node", build, finish)
    except SystemExit:
        return 0


if __name__ == "__main__":
    sys.exit(main())
