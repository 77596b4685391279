"""Static checks of the rclpy node modules, which cannot be imported here (no ROS 2).

Every ``node_core.X`` / ``messages.X`` / ``_node.X`` / ``la.X`` the nodes and launch files use must
exist, and every node module must expose the ``main`` that setup.py's console_scripts name: a typo
in code that only runs on a robot is caught here instead of there.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from sim2real_eval import node_core
from sim2real_eval.ros import messages

REPO = Path(__file__).resolve().parents[1]
ROS_DIR = REPO / "src" / "sim2real_eval" / "ros"


def defined_names(path: Path) -> set:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


AVAILABLE = {
    "node_core": set(dir(node_core)),
    "messages": set(dir(messages)),
    "_node": defined_names(ROS_DIR / "_node.py"),
    "la": defined_names(ROS_DIR / "launch_actions.py"),
}
SOURCES = sorted(ROS_DIR.glob("*.py")) + sorted((REPO / "launch").glob("*.launch.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_core_attribute_used_by_nodes_and_launch_files_exists(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = [(node.value.id, node.attr, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in AVAILABLE]
    missing = [f"{path.name}:{line}: {mod}.{attr}" for mod, attr, line in used if attr not in AVAILABLE[mod]]
    assert not missing, missing
    for node in ast.walk(tree):  # names imported from node_core must exist too
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("node_core"):
            assert all(alias.name in AVAILABLE["node_core"] for alias in node.names), path.name


def test_console_scripts_point_at_existing_main_functions():
    setup = (REPO / "setup.py").read_text(encoding="utf-8")
    entries = re.findall(r'"(\w+) = sim2real_eval\.ros\.(\w+):main"', setup)
    assert {name for name, _ in entries} == {"gps_noise_node", "imu_noise_node", "ground_truth_node",
                                             "recorder_node"}
    for _name, module in entries:
        assert "main" in defined_names(ROS_DIR / f"{module}.py"), module


def test_only_ros_modules_import_rclpy():
    """The core stays importable without ROS: rclpy/rosbag2_py/launch only under ros/ (and launch/)."""
    offenders = []
    for path in (REPO / "src" / "sim2real_eval").rglob("*.py"):
        if ROS_DIR in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] in ("rclpy", "rosbag2_py", "launch_ros") for n in names):
                offenders.append(str(path.relative_to(REPO)))
    assert not offenders, offenders
