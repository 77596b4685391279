"""Static checks of the rclpy node modules and launch files, which cannot be imported without ROS 2.

Every attribute of a project module the nodes and launch files use (``params.X``, ``node_runtime.X``,
``la.X``…) and every name they import from one must exist, and every node module must expose the
``main`` that setup.py's console_scripts name: a typo in code that only runs on a robot is caught
here instead of there.  (tests/test_ros_humble_api.py checks the rclpy/launch side against Humble.)
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ROS_DIR = SRC / "sim2real_eval" / "ros"


def defined_names(path: Path) -> set:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def module_names(dotted: str) -> set:
    """Names a project module offers: imported when it needs no ROS, else read from its source."""
    path = SRC / (dotted.replace(".", "/") + ".py")
    package = SRC / dotted.replace(".", "/") / "__init__.py"
    if path.parent == ROS_DIR or (path.parent / "..").resolve() == ROS_DIR:
        return defined_names(path)
    module = importlib.import_module(dotted)
    names = set(dir(module))
    if package.is_file():  # a package: its submodules count as attributes
        names |= {p.stem for p in package.parent.glob("*.py")}
    return names


def project_module(node: ast.ImportFrom, path: Path) -> str | None:
    """The dotted name an ImportFrom refers to, when it is a sim2real_eval module."""
    if node.level:
        here = path.relative_to(SRC).with_suffix("").parts[:-node.level]
        base = ".".join(here + ((node.module,) if node.module else ()))
    else:
        base = node.module or ""
    return base if base.split(".")[0] == "sim2real_eval" else None


def is_module(dotted: str) -> bool:
    target = SRC / dotted.replace(".", "/")
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


SOURCES = sorted(ROS_DIR.glob("*.py")) + sorted((REPO / "launch").glob("*.launch.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_project_attribute_used_by_nodes_and_launch_files_exists(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases, missing = {}, []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = project_module(node, path)
        if base is None:
            continue
        for alias in node.names:
            dotted = f"{base}.{alias.name}"
            if is_module(dotted):
                aliases[alias.asname or alias.name] = dotted
            elif alias.name not in module_names(base):
                missing.append(f"{path.name}:{node.lineno}: from {base} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            if node.attr not in module_names(aliases[node.value.id]):
                missing.append(f"{path.name}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    assert not missing, missing


def test_console_scripts_point_at_existing_main_functions():
    setup = (REPO / "setup.py").read_text(encoding="utf-8")
    entries = re.findall(r'"(\w+) = sim2real_eval\.ros\.(\w+):main"', setup)
    assert {name for name, _ in entries} == {"gps_noise_node", "imu_noise_node", "ground_truth_node",
                                             "recorder_node", "replay_node", "madgwick_node"}
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
