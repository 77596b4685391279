"""rclpy plumbing shared by the nodes: parameter collection, QoS profiles, error-exit main loop."""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Dict, List, Optional

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from ..errors import UserError

# Sensors are published reliable (robot_localization subscribes best-effort: compatible) and truth
# is subscribed with the sensor-data profile (best effort: compatible with any publisher).
PUBLISH_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
SUBSCRIBE_QOS = qos_profile_sensor_data


def make_node(name: str, scalar_defaults: Dict[str, Any]) -> Node:
    """A node that accepts any parameter override (model_params.* use the presets' own keys) and
    declares the scalar defaults so ``ros2 param list`` shows them."""
    node = Node(name, allow_undeclared_parameters=True, automatically_declare_parameters_from_overrides=True)
    for key, value in scalar_defaults.items():
        if not isinstance(value, (list, tuple)) and not node.has_parameter(key):
            node.declare_parameter(key, value)
    return node


def parameter_values(node: Node) -> Dict[str, Any]:
    """Every declared parameter (flattened names) → Python value."""
    names = node.list_parameters([], 0).names
    values = {}
    for name in names:
        value = node.get_parameter(name).value
        values[name] = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else value
    return values


def wall_seconds() -> float:
    return time.monotonic()


def run(name: str, build: Callable[[], Node], finish: Optional[Callable[[Node], None]] = None,
        argv: Optional[List[str]] = None) -> int:
    """Init, build the node, spin until shutdown; a UserError is one logged line and exit code 2."""
    rclpy.init(args=argv if argv is not None else sys.argv)
    node = None
    try:
        node = build()
        rclpy.spin(node)
    except UserError as exc:
        get_logger(name).error(str(exc))
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            if finish is not None:
                finish(node)  # closes files etc.; must run even when the context is already down
            try:
                node.destroy_node()
            except Exception:  # noqa: BLE001 — shutting down anyway; nothing left to save
                pass
        rclpy.try_shutdown()
    return 0
