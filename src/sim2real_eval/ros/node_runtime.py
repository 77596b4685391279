"""rclpy plumbing shared by the nodes: parameters, QoS profiles, signals and the error-exit main loop.

Only APIs of Humble's rclpy (3.3.x) are used; tests/test_ros_humble_api.py checks every rclpy,
rosbag2_py, launch and launch_ros attribute of the package against Humble's own sources.

Shutdown: Humble's default SIGINT handler shuts the rclpy context down *before* Python code runs,
so nothing could be published afterwards (a noise node's last truth interval, a replay's tail).
The nodes therefore init rclpy without its signal handlers and install their own for SIGINT and
SIGTERM (what ``ros2 launch`` sends): they only ask the spin loop to stop; the node then finishes
(publishes what is pending, closes files) while the context is still valid, and only then is the
context shut down.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.signals import SignalHandlerOptions

from ..errors import UserError

# Sensors are published reliable (robot_localization subscribes best-effort: compatible) and truth
# is subscribed with the sensor-data profile (best effort: compatible with any publisher).
PUBLISH_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
SUBSCRIBE_QOS = qos_profile_sensor_data
SPIN_PERIOD_S = 0.05  # how often the spin loop looks at the stop request (a signal handler sets it)


class Finished(Exception):
    """Raised in a callback to end the node normally (exit 0), e.g. the recorder's idle timeout."""


def make_node(name: str, defaults: Dict[str, Any]) -> Node:
    """A node that accepts any parameter override (model_params.* use the presets' own keys) and
    declares the scalar defaults so ``ros2 param list`` shows them."""
    node = Node(name, allow_undeclared_parameters=True, automatically_declare_parameters_from_overrides=True)
    for key, value in defaults.items():
        if not isinstance(value, (list, tuple)) and not node.has_parameter(key):
            node.declare_parameter(key, value)
    return node


def parameter_values(node: Node) -> Dict[str, Any]:
    """Every parameter of the node (flattened names) → Python value.

    A parameter given without a value (``seed_keys: []`` in a params file, ``-p seed_keys:=[]``:
    rcl stores an empty list as NOT_SET) is None; ``node.params`` decides what that means.
    (``get_parameters_by_prefix("")`` returns every parameter as a Parameter object in Humble;
    ``Node.list_parameters`` exists only from rclpy 5.2, Iron.)
    """
    values = {}
    for name, parameter in node.get_parameters_by_prefix("").items():
        value = parameter.value
        values[name] = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else value
    return values


def wall_seconds() -> float:
    return time.monotonic()


class StopRequest:
    """SIGINT/SIGTERM → a flag the spin loop polls (instead of rclpy's handler shutting the context)."""

    def __init__(self):
        self.event = threading.Event()
        self.signal: Optional[int] = None
        self._previous: Dict[int, Any] = {}

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum, _frame) -> None:
        self.signal = signum
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()


def run(name: str, build: Callable[[StopRequest], Node], finish: Optional[Callable[[], None]] = None,
        argv: Optional[List[str]] = None) -> int:
    """Init, build the node, spin until SIGINT/SIGTERM (or ``Finished``), finish, then shut down.

    A UserError (at start or in a callback) is one logged line and exit code 2; ``finish`` runs with
    the context still valid in every case (it publishes or closes what is pending).
    """
    try:
        rclpy.init(args=sys.argv if argv is None else argv, signal_handler_options=SignalHandlerOptions.NO)
    except RuntimeError as exc:  # rclpy's RCLError: e.g. a -p value that is not YAML; rcl logged why
        print(f"{name}: cannot start: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    stop = StopRequest()
    stop.install()
    executor = SingleThreadedExecutor()
    node = None
    code = 0
    try:
        node = build(stop)
        executor.add_node(node)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
    except UserError as exc:
        get_logger(name).error(str(exc))
        code = 2
    except Finished:
        pass
    finally:
        try:
            if finish is not None:
                finish()
        except UserError as exc:
            get_logger(name).error(str(exc))
            code = 2
        finally:
            executor.shutdown()
            if node is not None:
                node.destroy_node()
            rclpy.try_shutdown()
            stop.restore()
    return code
