"""recorder_node: record the run's topics with rosbag2_py (sqlite3 default, mcap option) + run.yaml.

The bag is written into a hidden temporary directory beside ``output`` and renamed into place, with
run.yaml inside, only when recording ends cleanly (SIGINT/SIGTERM, launch shutdown after the
player exits, or ``idle_timeout`` seconds without messages) and every ``required_topics`` topic has
messages: ``output`` is either complete or absent (``node.recording`` describes the layout and how
a SIGKILLed recorder's leftovers are recognised and removed).  Messages are stored serialized,
stamped with the node clock (the bag's /clock under use_sim_time); messages arriving before the
first /clock are held and stamped with the first clock time.
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
from ..errors import UserError
from ..node import params, recording
from . import node_runtime

MESSAGE_TYPES = {
    art.TOPICS["gps"]: (NavSatFix, "sensor_msgs/msg/NavSatFix"),
    art.TOPICS["imu"]: (Imu, "sensor_msgs/msg/Imu"),
    art.MAGNETIC_FIELD_TOPIC: (MagneticField, "sensor_msgs/msg/MagneticField"),
}
ODOMETRY = (Odometry, "nav_msgs/msg/Odometry")
# Best effort subscribes to every publisher (reliable or not); deep queue so bursts are kept.
RECORD_QOS = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.BEST_EFFORT)


class Recorder:
    def __init__(self):
        self.node = node_runtime.make_node("recorder_node", params.RECORDER_DEFAULTS)
        self.config = params.parse_recorder_params(node_runtime.parameter_values(self.node))
        output = self.config.output
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"parameter output: cannot create {output.parent} ({exc.strerror})") from None
        for stale in recording.stale_temporaries(output.parent):
            shutil.rmtree(stale, ignore_errors=True)
            self.node.get_logger().warning(f"removed {stale}: left by a recorder that was killed")
        self.temp = Path(tempfile.mkdtemp(prefix=recording.temporary_name(output), dir=output.parent))
        (self.temp / recording.PID_FILE).write_text(f"{os.getpid()}\n", encoding="utf-8")
        self.bag = self.temp / output.name  # rosbag2 names the data file after this directory
        self.writer = rosbag2_py.SequentialWriter()
        try:
            self.writer.open(rosbag2_py.StorageOptions(uri=str(self.bag), storage_id=self.config.storage),
                             rosbag2_py.ConverterOptions("cdr", "cdr"))
        except RuntimeError as exc:  # e.g. the storage plugin is not installed
            shutil.rmtree(self.temp, ignore_errors=True)
            raise UserError(f"recorder_node: cannot open a {self.config.storage} bag at {output}: "
                            f"{exc}") from None
        self.counts = {topic: 0 for topic in self.config.topics}
        self.early = recording.EarlyMessages()
        self.last_message = node_runtime.wall_seconds()
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
            now = self.node.get_clock().now().nanoseconds
            self.last_message = node_runtime.wall_seconds()
            if now == 0:  # use_sim_time and no /clock yet
                self.early.hold(topic, serialized)
                return
            for held_topic, raw, stamp in self.early.release(now):
                self.store(held_topic, raw, stamp)
            self.store(topic, serialized, now)
        return write

    def store(self, topic: str, serialized: bytes, stamp_ns: int) -> None:
        self.writer.write(topic, serialized, stamp_ns)
        self.counts[topic] += 1

    def check_idle(self) -> None:
        idle = node_runtime.wall_seconds() - self.last_message
        if sum(self.counts.values()) and idle > self.config.idle_timeout_s:
            self.node.get_logger().info(f"no message for {self.config.idle_timeout_s:g} s: stopping")
            raise node_runtime.Finished()

    def close(self) -> None:
        """Close the bag (rosbag2 writes metadata.yaml when the writer is destroyed), add run.yaml,
        rename into place; or remove everything when the run is empty or incomplete."""
        for topic, raw, stamp in self.early.release(None):
            self.store(topic, raw, stamp)
        writer, self.writer = self.writer, None
        del writer
        gc.collect()
        output = self.config.output
        total = sum(self.counts.values())
        missing = params.missing_topics(self.counts, self.config.required_topics)
        if total == 0 or missing:
            shutil.rmtree(self.temp, ignore_errors=True)
            if total == 0:
                raise UserError(f"recorder_node: nothing was recorded; {output} not written")
            raise UserError(f"recorder_node: no message on {', '.join(missing)}; {output} not written "
                            f"(recorded: {', '.join(f'{t} {n}' for t, n in self.counts.items() if n)})")
        if self.config.run_yaml:
            (self.bag / "run.yaml").write_text(self.config.run_yaml, encoding="utf-8")
        os.replace(self.bag, output)
        shutil.rmtree(self.temp, ignore_errors=True)
        self.node.get_logger().info(f"{total} messages -> {output}")


def main() -> int:
    holder = {}

    def build(_stop):
        holder["recorder"] = Recorder()
        return holder["recorder"].node

    def finish():
        if "recorder" in holder:
            holder["recorder"].close()

    return node_runtime.run("recorder_node", build, finish)


if __name__ == "__main__":
    sys.exit(main())
