"""Guard without ROS: every rclpy / rosbag2_py / launch / launch_ros attribute our code uses exists in Humble.

The API list is ``tests/data/humble_api.json``, taken from Humble's own sources by
``tests/make_humble_api.py`` (its provenance — repository, branch, commit — is inside).  This test
reads our ROS code with ``ast`` and follows types through a small inference: imports, constructor
calls, return annotations (Humble's and ours), annotated parameters, ``self.x = …`` assignments and
message fields.  Every attribute looked up on a Humble module, class, instance or message, and every
keyword argument of a Humble callable, must be in the list.  (``Node.list_parameters``, added in
rclpy 5.2 / Iron, crashed every node on Humble: that is the kind of slip this catches.)
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
API = json.loads((REPO / "tests" / "data" / "humble_api.json").read_text(encoding="utf-8"))
ROOTS = ("rclpy", "rosbag2_py", "launch", "launch_ros", "launch_testing", "sensor_msgs", "nav_msgs",
         "geometry_msgs", "std_msgs", "builtin_interfaces", "rosgraph_msgs", "rosbag2_interfaces")
SOURCES = (sorted((REPO / "src" / "sim2real_eval" / "ros").glob("*.py"))
           + sorted((REPO / "launch").glob("*.launch.py")) + sorted((REPO / "tests" / "launch").glob("*.py"))
           + sorted((REPO / "tests").glob("test_ros_real_*.py")))


# ------------------------------------------------------------------------------------ Humble side
class Humble:
    def __init__(self, api: dict):
        self.modules, self.classes, self.functions = api["modules"], api["classes"], api["functions"]

    def is_humble(self, dotted: str) -> bool:
        return dotted.split(".")[0] in ROOTS

    def resolve(self, qualified: str, depth: int = 0):
        """A qualified name → ("module", m) | ("class", q) | ("function", q) | None."""
        if depth > 20:
            return None
        if qualified in self.classes:
            return ("class", qualified)
        if qualified in self.functions:
            return ("function", qualified)
        if qualified in self.modules:
            return ("module", qualified)
        module, _dot, name = qualified.rpartition(".")
        if module in self.modules and name in self.modules[module]["names"]:
            return self.resolve_in(module, name, depth + 1)
        return None

    def resolve_in(self, module: str, name: str, depth: int = 0):
        target = self.modules.get(module, {"names": {}})["names"].get(name)
        if target is None:
            return ("module", f"{module}.{name}") if f"{module}.{name}" in self.modules else None
        if target.startswith("module:"):
            return ("module", target[len("module:"):])
        if target.startswith("alias:"):
            head, *rest = target[len("alias:"):].split(".")
            found = self.resolve_in(module, head, depth + 1)
            for part in rest:
                found = self.member_of(found, part)
            return found
        return self.resolve(target, depth + 1) or ("value", target)

    def member_of(self, found, name: str):
        if found is None:
            return None
        kind, qualified = found
        if kind == "module":
            return self.resolve_in(qualified, name)
        if kind == "class":
            member = self.class_member(qualified, name)
            return None if member is None else ("member", (qualified, name))
        return None

    def class_member(self, qualified: str, name: str, seen=()):
        entry = self.classes.get(qualified)
        if entry is None or qualified in seen:
            return None
        if name in entry["members"]:
            return entry["members"][name]
        module = qualified.rpartition(".")[0]
        for base in entry["bases"]:
            resolved = self.resolve_annotation(module, base)
            if resolved and resolved[0] == "class":
                found = self.class_member(resolved[1], name, seen + (qualified,))
                if found is not None:
                    return found
        return None

    def resolve_annotation(self, module: str, text):
        """An annotation or base-class text in ``module`` → ("class", q) or None (``Optional[X]`` → X)."""
        if not text:
            return None
        text = text.strip().strip("'\"")
        inner = re.fullmatch(r"(?:typing\.)?Optional\[(.+)\]", text)
        if inner:
            text = inner.group(1).strip("'\"")
        if "[" in text or "|" in text:
            return None
        if text in self.classes:
            return ("class", text)
        head, *rest = text.split(".")
        found = self.resolve_in(module, head)
        for part in rest:
            found = self.member_of(found, part)
            if found and found[0] == "member":
                found = None
        return found if found and found[0] == "class" else None

    def member_type(self, qualified: str, name: str):
        """Type of ``instance.name`` of class ``qualified``: ("instance", q), ("bound", (q, name)) or None."""
        member = self.class_member(qualified, name)
        if member is None:
            return None
        module = qualified.rpartition(".")[0]
        if member["kind"] == "function":
            return ("bound", (qualified, name))
        if member["kind"] == "class":
            return ("class", member.get("returns") or f"{qualified}.{name}")
        found = self.resolve_annotation(module, member.get("returns"))
        return ("instance", found[1]) if found else None


HUMBLE = Humble(API)


# ------------------------------------------------------------------------------------ our side
class Checker(ast.NodeVisitor):
    """Walks one file; ``problems`` lists every attribute / keyword not in Humble's API."""

    def __init__(self, path: Path, source: str):
        self.path, self.problems = path, []
        self.env: dict = {}
        self.self_env: dict = {}
        self.project_returns = project_returns()
        self.tree = ast.parse(source)
        self.module_name = module_of(path)

    def problem(self, node, text):
        self.problems.append(f"{self.path.relative_to(REPO)}:{node.lineno}: {text}")

    # --- imports and names
    def bind_import(self, node):
        for alias in node.names:
            if isinstance(node, ast.Import):
                root = alias.name.split(".")[0]
                if HUMBLE.is_humble(root):
                    target = alias.name if alias.asname else root
                    self.env[alias.asname or root] = ("module", target)
                    if HUMBLE.resolve(alias.name) is None:
                        self.problem(node, f"import {alias.name}: no such module in Humble")
                continue
            module = node.module or ""
            if node.level:
                base = self.module_name.split(".")[:-node.level]
                dotted = ".".join(base + ([module] if module else []) + [alias.name])
                self.env[alias.asname or alias.name] = ("project", dotted)
                continue
            if not HUMBLE.is_humble(module):
                if module.startswith("sim2real_eval"):
                    self.env[alias.asname or alias.name] = ("project", f"{module}.{alias.name}")
                continue
            found = HUMBLE.resolve_in(module, alias.name) if module in HUMBLE.modules else None
            if found is None:
                self.problem(node, f"from {module} import {alias.name}: not in Humble")
            self.env[alias.asname or alias.name] = found

    def type_of(self, node):
        if isinstance(node, ast.Name):
            if node.id == "self":
                return ("self", None)
            return self.env.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.type_of(node.value)
            return self.attribute(node, base)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.IfExp):
            self.type_of(node.test)
            body, orelse = self.type_of(node.body), self.type_of(node.orelse)
            return body or orelse
        self.visit_children(node)  # comprehensions, subscripts, f-strings…: check what is inside
        return None

    def visit_children(self, node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.type_of(child)
            elif isinstance(child, ast.comprehension):
                self.visit_children(child)

    def attribute(self, node, base):
        if base is None:
            return None
        kind, value = base
        if kind == "self":
            return self.self_env.get(node.attr)
        if kind == "module":
            found = HUMBLE.resolve_in(value, node.attr)
            if found is None:
                self.problem(node, f"{value}.{node.attr}: not in Humble")
            return found
        if kind == "class":
            member = HUMBLE.class_member(value, node.attr)
            if member is None:
                self.problem(node, f"{value}.{node.attr}: not in Humble")
                return None
            if member["kind"] == "class":
                return ("class", member.get("returns") or f"{value}.{node.attr}")
            return ("classattr", (value, node.attr))
        if kind == "instance":
            if HUMBLE.class_member(value, node.attr) is None:
                self.problem(node, f"{value}.{node.attr}: not in Humble")
                return None
            return HUMBLE.member_type(value, node.attr)
        if kind == "project":
            returns = self.project_returns.get(f"{value}.{node.attr}")
            return ("project_function", returns) if returns else ("project", f"{value}.{node.attr}")
        return None

    def call(self, node):
        callee = self.type_of(node.func)
        for arg in node.args + [k.value for k in node.keywords]:
            self.type_of(arg)
        if callee is None:
            return None
        kind, value = callee
        if kind == "class":
            self.check_keywords(node, HUMBLE.class_member(value, "__init__"), f"{value}()")
            return ("instance", value)
        if kind == "function":
            entry = HUMBLE.functions[value]
            self.check_keywords(node, entry, f"{value}()")
            found = HUMBLE.resolve_annotation(value.rpartition(".")[0], entry.get("returns"))
            return ("instance", found[1]) if found else None
        if kind == "bound":
            qualified, name = value
            member = HUMBLE.class_member(qualified, name)
            self.check_keywords(node, member, f"{qualified}.{name}()")
            found = HUMBLE.resolve_annotation(qualified.rpartition(".")[0], member.get("returns"))
            return ("instance", found[1]) if found else None
        if kind == "project_function":
            return value
        return None

    def check_keywords(self, node, entry, what):
        if not entry or entry.get("varkw"):
            return
        for keyword in node.keywords:
            if keyword.arg is not None and keyword.arg not in entry.get("params", []):
                self.problem(node, f"{what}: no keyword {keyword.arg!r} in Humble")

    # --- statements
    def run(self):
        for node in self.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.bind_import(node)
        for node in ast.walk(self.tree):  # imports inside functions (tests import after skips)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in self.tree.body:
                self.bind_import(node)
        for node in self.tree.body:
            self.statement(node)
        return self.problems

    def statement(self, node):
        if isinstance(node, ast.ClassDef):
            saved = dict(self.self_env)
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            methods.sort(key=lambda n: n.name != "__init__")
            for method in methods:
                self.function(method)
            self.self_env = saved
            return
        if isinstance(node, ast.FunctionDef):
            self.function(node)
            return
        if isinstance(node, ast.Assign):
            value = self.type_of(node.value)
            for target in node.targets:
                self.assign(target, value)
            return
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, self.type_of(node.value))
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.statement(child)
            elif isinstance(child, ast.expr):
                self.type_of(child)
            elif isinstance(child, (ast.excepthandler, ast.withitem)):
                for sub in ast.iter_child_nodes(child):
                    if isinstance(sub, ast.stmt):
                        self.statement(sub)
                    elif isinstance(sub, ast.expr):
                        self.type_of(sub)

    def assign(self, target, value):
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "self":
            self.self_env[target.attr] = value
        else:
            self.type_of(target)

    def function(self, node):
        saved = dict(self.env)
        for arg in node.args.args + node.args.kwonlyargs:
            if arg.annotation is not None:
                annotated = self.type_of(arg.annotation)
                if annotated and annotated[0] == "class":
                    self.env[arg.arg] = ("instance", annotated[1])
        for stmt in node.body:
            self.statement(stmt)
        self.env = saved


def module_of(path: Path) -> str:
    try:
        rel = path.relative_to(REPO / "src")
    except ValueError:
        return path.stem
    return ".".join(rel.with_suffix("").parts)


_PROJECT: dict = {}


def project_returns() -> dict:
    """Return types (Humble classes) of our own ros/ functions, from their annotations."""
    if _PROJECT:
        return _PROJECT
    for path in sorted((REPO / "src" / "sim2real_eval" / "ros").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and HUMBLE.is_humble(node.module):
                for alias in node.names:
                    imports[alias.asname or alias.name] = HUMBLE.resolve_in(node.module, alias.name)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and isinstance(node.returns, ast.Name):
                found = imports.get(node.returns.id)
                if found and found[0] == "class":
                    _PROJECT[f"{module_of(path)}.{node.name}"] = ("instance", found[1])
    return _PROJECT


def check(path: Path, source: str | None = None) -> list:
    return Checker(path, path.read_text(encoding="utf-8") if source is None else source).run()


# ------------------------------------------------------------------------------------ tests
def test_the_api_list_says_where_it_comes_from():
    repos = {entry["repo"]: entry for entry in API["provenance"]}
    assert {"github.com/ros2/rclpy", "github.com/ros2/launch", "github.com/ros2/launch_ros",
            "github.com/ros2/rosbag2"} <= set(repos)
    for entry in repos.values():
        assert entry["branch"] == "humble" and re.fullmatch(r"[0-9a-f]{40}", entry["commit"])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_our_ros_code_uses_only_humble_apis(path):
    problems = check(path)
    assert not problems, "\n".join(problems)


NODE_FILE = REPO / "src" / "sim2real_eval" / "ros" / "snippet.py"


@pytest.mark.parametrize("snippet, expected", [
    # rclpy 5.2 (Iron) API: the crash of every node on Humble
    ("from rclpy.node import Node\n\ndef f(node: Node):\n    return node.list_parameters([], 0)\n",
     "rclpy.node.Node.list_parameters"),
    ("from . import node_runtime\nn = node_runtime.make_node('x', {})\nn.list_parameters([], 0)\n",
     "rclpy.node.Node.list_parameters"),
    ("import rclpy\nrclpy.init(args=None, domain_id=0, bogus=1)\n", "no keyword 'bogus'"),
    ("from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor\n",
     None),  # both exist in Humble
    ("from rclpy.event_handler import PublisherEventCallbacks\n", "rclpy.event_handler"),  # Iron+
    ("import rosbag2_py\nw = rosbag2_py.SequentialWriter()\nw.close()\n", "SequentialWriter.close"),
    ("import rosbag2_py\nrosbag2_py.TopicMetadata(name='/a', type='t', serialization_format='cdr', "
     "offered_qos_profiles='')\n", None),
    ("import rosbag2_py\nrosbag2_py.TopicMetadata(id=0, name='/a')\n", "no keyword 'id'"),   # Jazzy+
    ("from launch.actions import ExecuteProcess\nExecuteProcess(cmd=['x'], name='p', output='screen')\n",
     None),
    ("from launch_ros.actions import Node\nNode(package='p', executable='e', ros_arguments=['x'])\n",
     None),
    ("from sensor_msgs.msg import NavSatFix\nm = NavSatFix()\nm.header.stamp.nanosec = 1\nm.fix = 2\n",
     "sensor_msgs.msg.NavSatFix.fix"),
    ("from rclpy.node import Node\nn = Node('x')\np = n.create_publisher(int, '/a', 1)\n"
     "p.get_subscription_count()\np.publish_raw(b'')\n", "rclpy.publisher.Publisher.publish_raw"),
])
def test_the_guard_catches_apis_humble_does_not_have(snippet, expected):
    problems = check(NODE_FILE, snippet)
    if expected is None:
        assert not problems, problems
    else:
        assert any(expected in p for p in problems), problems
