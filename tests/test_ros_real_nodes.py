"""The nodes on a real ROS 2 (Humble): rates on wall and sim time, the shutdown flush, parameter
errors, the recorder's atomicity under SIGINT / SIGTERM / SIGKILL.

Runs wherever rclpy is importable (a sourced ROS 2 workspace, the Docker image) and skips cleanly
otherwise.  Each node runs as its own process (``python -m sim2real_eval.ros.<node> --ros-args …``);
the test process is a small rclpy node that publishes ground truth (and /clock) and listens.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (no ROS 2 here)")
pytest.importorskip("rosbag2_py", reason="rosbag2_py is not installed (no ROS 2 here)")

from nav_msgs.msg import Odometry  # noqa: E402  (after the skips: these exist only with ROS 2)
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import Imu, NavSatFix  # noqa: E402

from sim2real_eval import rotations, stamps  # noqa: E402
from sim2real_eval.ros import messages  # noqa: E402

S = 1_000_000_000
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
BEST_EFFORT = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)


def start(module: str, *params: str) -> subprocess.Popen:
    args = [sys.executable, "-m", f"sim2real_eval.ros.{module}", "--ros-args"]
    for param in params:
        args += ["-p", param]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(process: subprocess.Popen, sig=signal.SIGINT, timeout: float = 15.0):
    process.send_signal(sig)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out + err


@pytest.fixture()
def ros():
    context = rclpy.context.Context()
    rclpy.init(args=[], context=context)
    node = Node("sim2real_eval_test", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    yield node, executor
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)


def spin_for(executor, seconds: float, every=None, period: float = 0.0):
    end = time.monotonic() + seconds
    next_call = time.monotonic()
    while time.monotonic() < end:
        if every is not None and time.monotonic() >= next_call:
            every()
            next_call += period
        executor.spin_once(timeout_sec=0.002)


def wait_for_subscribers(node, executor, publisher, count=1, timeout=20.0):
    end = time.monotonic() + timeout
    while publisher.get_subscription_count() < count:
        assert time.monotonic() < end, f"no subscriber on {publisher.topic_name}"
        executor.spin_once(timeout_sec=0.05)


def truth_message(stamp_ns: int, t: float) -> Odometry:
    yaw = 0.2 * t
    return messages.fill_odometry(Odometry(), stamp_ns, "odom", "base_link", [3 * t, 0.0, 0.0],
                                  rotations.from_yaw(yaw), [3.0, 0.0, 0.0], [0.0, 0.0, 0.2])


def listen(node, topic, kind):
    got = []
    node.create_subscription(kind, topic, lambda m: got.append(messages.header_ns(m.header)), BEST_EFFORT)
    return got


@pytest.mark.parametrize("sim_time", [False, True], ids=["wall_time", "sim_time"])
def test_noise_nodes_publish_exact_ticks_at_their_rates_and_flush_at_shutdown(ros, sim_time):
    """Truth at 5 Hz (the slow Chrono::ROS case) for 3 s: /fix at 10 Hz and /imu at 100 Hz, every
    tick k/rate inside the truth span, including the last interval (flushed on SIGINT)."""
    node, executor = ros
    truth_pub = node.create_publisher(Odometry, "/ground_truth/odom", RELIABLE)
    clock_pub = node.create_publisher(Clock, "/clock", RELIABLE)
    fixes, imus = listen(node, "/fix", NavSatFix), listen(node, "/imu", Imu)
    common = [f"use_sim_time:={str(sim_time).lower()}", "seed:=3", "seed_keys:=[]"]
    gps = start("gps_noise_node", *common)
    imu = start("imu_noise_node", *common)
    try:
        wait_for_subscribers(node, executor, truth_pub, 2)
        spin_for(executor, 1.0)  # matched on our side: let the nodes' side match too
        t0 = 1_700_000_000 * S
        sent = []

        def publish_truth():
            k = len(sent)
            if k > 15:
                return
            stamp = t0 + k * 200_000_000
            if sim_time:
                clock = Clock()
                clock.clock.sec, clock.clock.nanosec = divmod(stamp, S)
                clock_pub.publish(clock)
            truth_pub.publish(truth_message(stamp, k * 0.2))
            sent.append(stamp)

        spin_for(executor, 0.6, publish_truth, 0.2 / (4.0 if sim_time else 1.0))  # sim: 4x faster
        spin_for(executor, 4.0, publish_truth, 0.2 / (4.0 if sim_time else 1.0))
        before_flush = (len(fixes), len(imus))
        codes = [stop(gps), stop(imu)]
        spin_for(executor, 1.0)
    finally:
        for process in (gps, imu):
            if process.poll() is None:
                process.kill()
    assert [code for code, _ in codes] == [0, 0], codes
    span = (sent[0], sent[-1])
    for got, period in ((fixes, 100_000_000), (imus, 10_000_000)):
        expected = list(range(span[0], span[1] + 1, period))
        assert sorted(got) == expected                       # exact ticks, none lost, none extra
    assert len(fixes) - before_flush[0] >= 1 and len(imus) - before_flush[1] >= 10  # the last interval


def test_parameter_errors_are_one_line_and_exit_2(tmp_path):
    process = start("gps_noise_node", "gps_model:=no_such_preset")
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2, out + err
    errors = [line for line in (out + err).splitlines() if "ERROR" in line or "error" in line]
    assert len(errors) == 1 and "no_such_preset" in errors[0], out + err
    assert "Traceback" not in out + err
    process = start("imu_noise_node", "model:=ch_rw")  # the old parameter name: refused, named
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2 and "unknown parameter(s) model" in out + err


def test_an_empty_seed_keys_list_is_accepted(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("gps_noise_node:\n  ros__parameters:\n    seed_keys: []\n    gps_model: ch_rw\n")
    for process in (start("gps_noise_node", "seed_keys:=[]"),
                    subprocess.Popen([sys.executable, "-m", "sim2real_eval.ros.gps_noise_node", "--ros-args",
                                      "--params-file", str(params)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)):
        time.sleep(4.0)
        assert process.poll() is None, process.communicate()
        code, output = stop(process)
        assert code == 0 and "Traceback" not in output, output


def fix_message(stamp_ns: int) -> NavSatFix:
    msg = NavSatFix()
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamps.from_ns(stamp_ns)
    msg.header.frame_id = "gps"
    msg.latitude, msg.longitude, msg.altitude = 43.07, -89.4, 260.0
    msg.position_covariance = np.zeros(9)
    return msg


def record_some(ros, output: Path, sig, required=("/fix",)):
    node, executor = ros
    pub = node.create_publisher(NavSatFix, "/fix", RELIABLE)
    recorder = start("recorder_node", f"output:={output}", "use_sim_time:=false",
                     "required_topics:=[" + ",".join(f"'{t}'" for t in required) + "]",
                     "run_yaml:='side: real'")
    wait_for_subscribers(node, executor, pub)
    spin_for(executor, 1.0)  # matched on our side: let the recorder's side match too
    t0 = 1_700_000_000 * S
    for k in range(20):
        pub.publish(fix_message(t0 + k * 100_000_000))
        spin_for(executor, 0.02)
    spin_for(executor, 1.0)
    if sig == signal.SIGKILL:
        recorder.kill()
        recorder.communicate(timeout=10)
        return recorder.returncode, ""
    return stop(recorder, sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_recorder_writes_a_complete_run_on_sigint_and_sigterm(ros, tmp_path, sig):
    from sim2real_eval.bags import open_bag
    output = tmp_path / "runs" / "line_0"
    code, text = record_some(ros, output, sig)
    assert code == 0, text
    names = sorted(p.name for p in output.iterdir())
    assert names == ["line_0_0.db3", "metadata.yaml", "run.yaml"], names  # named after the run
    with open_bag(output) as reader:
        assert reader.topics["/fix"].count == 20
        assert all(m.recv_ns > 0 for m in reader.raw_messages(["/fix"]))
    assert not [p for p in output.parent.iterdir() if p.name.startswith(".")]  # nothing hidden left


def test_sigkill_leaves_no_run_and_its_leftovers_are_removed_by_the_next_recorder(ros, tmp_path):
    output = tmp_path / "runs" / "line_0"
    record_some(ros, output, signal.SIGKILL)
    assert not output.exists()
    leftovers = [p for p in output.parent.iterdir() if p.name.startswith(".line_0.tmp-")]
    assert len(leftovers) == 1 and (leftovers[0] / "recorder.pid").is_file()
    code, text = record_some(ros, tmp_path / "runs" / "line_1", signal.SIGINT)
    assert code == 0 and "left by a recorder that was killed" in text, text
    assert not leftovers[0].exists() and (tmp_path / "runs" / "line_1" / "run.yaml").is_file()


def test_a_run_missing_a_required_topic_is_not_written(ros, tmp_path):
    output = tmp_path / "runs" / "line_0"
    code, text = record_some(ros, output, signal.SIGINT, required=("/fix", "/odometry/filtered"))
    assert code == 2 and "no message on /odometry/filtered" in text, text
    assert not output.exists() and not list(output.parent.iterdir())


def test_ground_truth_node_without_sbg_driver_or_with_it_starts_cleanly():
    try:
        import sbg_driver.msg  # noqa: F401
        has_sbg = True
    except ImportError:
        has_sbg = False
    process = start("ground_truth_node", "truth_source:=sbg_ekf")
    if not has_sbg:
        out, err = process.communicate(timeout=30)
        assert process.returncode == 2 and "sbg_driver is not installed" in out + err
        return
    time.sleep(3.0)
    assert process.poll() is None
    code, output = stop(process)
    assert code == 0, output
    process = start("ground_truth_node", "truth_source:=ekf")  # the old value: refused, named
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2 and "parameter truth_source" in out + err
