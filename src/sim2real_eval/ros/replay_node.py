"""replay_node: a real bag's /fix, /imu (real or simulated) and /ground_truth/odom, published on the
player's clock at the receive times the offline replay gives them.

evaluate.launch.py starts ``ros2 bag play --clock --start-paused`` on the bag's real /fix and /imu
(remapped to /real/*, so nobody judges them: the player is the clock).  This node reads the bag
ahead (``replay.read_ahead``: the offline replay's streams, window and seeds), waits until the judge and
the recorder have subscribed (``wait_for``), resumes the player, and publishes each record as the
CDR bytes the offline run writes, when the sim clock reaches its receive time.  The sim clock
between two /clock messages is followed with ``node.clock.ClockFollower`` (a publisher thread
sleeps until each record's time), so the judge gets every stream at the times the real sensors
delivered it, whatever the mode.  Parameters: the evaluate.launch.py arguments of the same names.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Dict

from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosbag2_interfaces.srv import Resume
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import Imu, NavSatFix

from ..art import TOPICS
from ..errors import UserError
from ..node import params
from ..node.clock import ClockFollower, Schedule
from ..replay.read_ahead import load_replay
from . import node_runtime

TYPES = {TOPICS["gps"]: NavSatFix, TOPICS["imu"]: Imu, TOPICS["ground_truth"]: Odometry}
SETTLE_S = 1.0  # after the subscribers matched: let discovery finish on their side too
# /clock as rclpy's TimeSource subscribes it (best effort, latest value only).
CLOCK_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


class ReplayNode:
    def __init__(self, stop: node_runtime.StopRequest):
        self.stop = stop
        self.node = node_runtime.make_node("replay_node", params.REPLAY_DEFAULTS)
        self.config = params.parse_replay_params(node_runtime.parameter_values(self.node))
        c = self.config
        replay = load_replay(c.bag, c.mode, c.gps_model, c.imu_model, c.seed, c.scenario,
                             None if c.k < 0 else c.k, c.truth_source, c.ekf_config, c.navsat_config,
                             static_tfs=c.static_tfs)
        self.schedule = Schedule(replay.records())
        self.publishers: Dict[str, object] = {
            topic: self.node.create_publisher(msg_type, topic, node_runtime.PUBLISH_QOS)
            for topic, msg_type in TYPES.items()}
        self.follower = ClockFollower(c.play_rate)
        self.lock = threading.Condition()
        self.node.create_subscription(ClockMessage, "/clock", self.on_clock, CLOCK_QOS)
        self.resume = self.node.create_client(Resume, c.resume_service) if c.resume_service else None
        self.started_at = node_runtime.wall_seconds()
        self.matched_at = None
        self.resumed = self.resume is None
        self.gate = self.node.create_timer(0.1, self.try_start, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.thread = threading.Thread(target=self.publish_loop, name="replay_publisher", daemon=True)
        self.failure = None
        w = replay.streams.window_ns
        self.node.get_logger().info(
            f"{c.mode}: {len(self.schedule)} messages of {replay.spec.bag} (window {w[0]}..{w[1]} ns) -> "
            f"{', '.join(TYPES)}; run {replay.run.label}")

    # ------------------------------------------------------------------------------ start gate
    def missing_subscribers(self):
        counts = {topic: publisher.get_subscription_count() for topic, publisher in self.publishers.items()}
        missing = []
        for topic, wanted in self.config.wait_for:
            have = counts[topic] if topic in counts else self.node.count_subscribers(topic)
            if have < wanted:
                missing.append(f"{topic} ({have} of {wanted})")
        return missing

    def try_start(self) -> None:
        """Every 0.1 s until started: subscribers matched → settle → resume the player → publish."""
        missing = self.missing_subscribers()
        now = node_runtime.wall_seconds()
        if missing:
            if now - self.started_at > self.config.start_timeout_s:
                raise UserError(f"replay_node: subscribers missing after {self.config.start_timeout_s:g} s: "
                                f"{', '.join(missing)}")
            return
        if self.matched_at is None:
            self.matched_at = now
        if now - self.matched_at < SETTLE_S:
            return
        if self.resume is not None and not self.resumed:
            if not self.resume.service_is_ready():
                if now - self.started_at > self.config.start_timeout_s:
                    raise UserError(f"replay_node: the player's {self.config.resume_service} service "
                                    f"did not appear within {self.config.start_timeout_s:g} s")
                return
            self.resume.call_async(Resume.Request())
            self.resumed = True
            self.node.get_logger().info("subscribers matched: player resumed")
        self.gate.cancel()
        self.thread.start()

    # ------------------------------------------------------------------------------ publishing
    def on_clock(self, msg: ClockMessage) -> None:
        with self.lock:
            self.follower.update(msg.clock.sec * 1_000_000_000 + msg.clock.nanosec, time.monotonic_ns())
            self.lock.notify()

    def publish_loop(self) -> None:
        """Sleep until the next record's time on the followed sim clock, publish what is due."""
        try:
            while not self.stop.is_set():
                with self.lock:
                    next_ns = self.schedule.next_ns
                    if next_ns is None:
                        break
                    target = self.follower.steady_at(next_ns)
                    now = time.monotonic_ns()
                    if target is None or target > now:
                        wait = 0.05 if target is None else min((target - now) / 1e9, 0.05)
                        self.lock.wait(timeout=wait)
                        continue
                    due = self.schedule.due(self.follower.now(now))
                for _recv, topic, raw in due:
                    self.publishers[topic].publish(raw)
        except Exception as exc:  # noqa: BLE001 — reported by finish(), which exits non-zero
            self.failure = exc
        self.node.get_logger().info(f"published {self.schedule.published} of {len(self.schedule)} messages")

    def finish(self) -> None:
        self.stop.event.set()
        if self.thread.is_alive():
            with self.lock:
                self.lock.notify()
            self.thread.join(timeout=2.0)
        if self.failure is not None:
            raise UserError(f"replay_node: publishing failed: {self.failure}")
        left = len(self.schedule) - self.schedule.published
        if left and self.thread.ident is not None:
            self.node.get_logger().warning(
                f"{left} messages not published: the player's clock ended at "
                f"{self.follower.last_clock_ns} ns before their receive times")


def main() -> int:
    holder = {}

    def build(stop):
        holder["node"] = ReplayNode(stop)
        return holder["node"].node

    def finish():
        if "node" in holder:
            holder["node"].finish()

    return node_runtime.run("replay_node", build, finish)


if __name__ == "__main__":
    sys.exit(main())
