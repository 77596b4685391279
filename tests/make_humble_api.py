"""Write tests/data/humble_api.json: the rclpy / launch / launch_ros / rosbag2_py API of ROS 2 Humble.

Read from Humble's own sources (the ``humble`` branches of ros2/rclpy, ros2/launch, ros2/launch_ros,
ros2/rosbag2 and the message packages our nodes use), never from an installed ROS, so the guard
``tests/test_ros_humble_api.py`` runs in CI without ROS.  Python modules are parsed with ``ast``
(module names, re-exports, classes with their bases, methods, properties and attributes, function
parameters and return annotations); pybind11 modules (rosbag2_py, parts of rclpy) with regular
expressions over their ``.cpp`` bindings; messages and services from their ``.msg`` / ``.srv`` files.

    python tests/make_humble_api.py GIT_DIR_RCLPY GIT_DIR_LAUNCH GIT_DIR_LAUNCH_ROS GIT_DIR_ROSBAG2 \\
        GIT_DIR_COMMON_INTERFACES GIT_DIR_RCL_INTERFACES

Each argument is a git directory (a bare clone is enough) holding the repository's ``humble`` branch;
the file records each repository's commit.  The JSON is data (checked in), this script its recipe.
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

BRANCH = "humble"
OUT = Path(__file__).resolve().parent / "data" / "humble_api.json"

# repository → (python package roots: path in repo → import name, pybind sources, interface packages)
REPOS = {
    "ros2/rclpy": ({"rclpy/rclpy": "rclpy"},
                   {"rclpy/src/rclpy": "rclpy.impl.implementation_singleton.rclpy_implementation"}, {}),
    "ros2/launch": ({"launch/launch": "launch", "launch_testing/launch_testing": "launch_testing"}, {}, {}),
    "ros2/launch_ros": ({"launch_ros/launch_ros": "launch_ros"}, {}, {}),
    "ros2/rosbag2": ({"rosbag2_py/rosbag2_py": "rosbag2_py"}, {"rosbag2_py/src/rosbag2_py": None},
                     {"rosbag2_interfaces": "rosbag2_interfaces"}),
    "ros2/common_interfaces": ({}, {}, {p: p for p in ("sensor_msgs", "nav_msgs", "geometry_msgs",
                                                       "std_msgs")}),
    "ros2/rcl_interfaces": ({}, {}, {p: p for p in ("builtin_interfaces", "rosgraph_msgs")}),
}
PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
              "uint32", "int64", "uint64", "string", "wstring"}


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True,
                          text=True).stdout


def files(git_dir: str, root: str, suffix: str):
    for path in git(git_dir, "ls-tree", "-r", "--name-only", BRANCH, root).split():
        if path.endswith(suffix):
            yield path, git(git_dir, "show", f"{BRANCH}:{path}")


# ------------------------------------------------------------------------------------- python
def module_name(path: str, root: str, package: str) -> str:
    rel = Path(path).relative_to(root).with_suffix("")
    parts = [package] + [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def annotation_text(node) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ast.unparse(node)


def signature(fn) -> dict:
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return {"params": names, "varargs": args.vararg is not None, "varkw": args.kwarg is not None,
            "returns": annotation_text(fn.returns)}


def parse_python(source: str, module: str, is_package: bool, api: dict) -> None:
    tree = ast.parse(source)
    names = api["modules"].setdefault(module, {"names": {}})["names"]

    def bind_imports(node):
        for alias in node.names:
            if isinstance(node, ast.Import):
                names[(alias.asname or alias.name).split(".")[0]] = "module:" + (
                    alias.name if alias.asname else alias.name.split(".")[0])
            else:
                source_module = (resolve_relative(module, is_package, node.level, node.module)
                                 if node.level else node.module)
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{source_module}.{alias.name}"

    for node in tree.body:
        for sub in ast.walk(node) if isinstance(node, (ast.With, ast.Try, ast.If)) else [node]:
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                bind_imports(sub)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = f"{module}.{node.name}"
            api["functions"][f"{module}.{node.name}"] = signature(node)
        elif isinstance(node, ast.ClassDef):
            names[node.name] = f"{module}.{node.name}"
            api["classes"][f"{module}.{node.name}"] = parse_class(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                if isinstance(target, ast.Name):
                    # An alias of another name (``SignalHandlerOptions = _rclpy.SignalHandlerOptions``)
                    # keeps pointing at it; anything else is a plain value of this module.
                    alias = ast.unparse(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
                    names[target.id] = f"alias:{alias}" if alias else f"{module}.{target.id}"
    api["module_files"][module] = True


def parse_class(node: ast.ClassDef) -> dict:
    members = {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = {ast.unparse(d) for d in item.decorator_list}
            if "property" in decorators:
                members[item.name] = {"kind": "property", "returns": annotation_text(item.returns)}
            elif any(d.endswith(".setter") for d in decorators):
                continue
            else:
                members[item.name] = dict(kind="function", **signature(item))
            if item.name == "__init__":
                for sub in ast.walk(item):
                    targets = (sub.targets if isinstance(sub, ast.Assign)
                               else [sub.target] if isinstance(sub, ast.AnnAssign) else [])
                    for target in targets:
                        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                                and target.value.id == "self"):
                            members.setdefault(target.attr, {"kind": "attribute"})
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            for target in (item.targets if isinstance(item, ast.Assign) else [item.target]):
                if isinstance(target, ast.Name):
                    members[target.id] = {"kind": "attribute"}
        elif isinstance(item, ast.ClassDef):
            members[item.name] = {"kind": "class"}
    return {"bases": [ast.unparse(b) for b in node.bases], "members": members}


# ------------------------------------------------------------------------------------- pybind11
CLASS_START = re.compile(r'(?:py|pybind11)::(class_|enum_)<[^;]*?>\s*\(\s*\w+\s*,\s*"(\w+)"')
MEMBER = re.compile(r'\.(def|def_static|def_readwrite|def_readonly|def_property|def_property_readonly|value)'
                    r'\(\s*"(\w+)"')
INIT = re.compile(r'\.def\(\s*(?:py|pybind11)::init[^;]*?(?=\)\s*\.def|\)\s*;|$)', re.S)
ARG = re.compile(r'(?:py|pybind11)::arg\("(\w+)"\)')
MODULE_DEF = re.compile(r'\bm\.def\(\s*"(\w+)"')
MODULE_NAME = re.compile(r'PYBIND11_MODULE\(\s*(\w+)\s*,')


def parse_pybind(source: str, module: str, api: dict) -> None:
    names = api["modules"].setdefault(module, {"names": {}})["names"]
    api["module_files"][module] = True
    starts = list(CLASS_START.finditer(source))
    for match in starts:
        end = source.find(";", match.end())
        chain = source[match.end():end if end >= 0 else len(source)]
        qualified = f"{module}.{match.group(2)}"
        entry = api["classes"].setdefault(qualified, {"bases": [], "members": {}})
        for kind, name in MEMBER.findall(chain):
            entry["members"][name] = {"kind": "attribute" if kind != "def" else "function",
                                      "params": [], "varargs": True, "varkw": True, "returns": None}
        init = INIT.search(chain)
        if init:
            args = ARG.findall(init.group(0))
            entry["members"]["__init__"] = {"kind": "function", "params": ["self"] + args, "varargs": True,
                                            "varkw": not args, "returns": None}
        names[match.group(2)] = qualified
    for name in MODULE_DEF.findall(source):
        names[name] = f"{module}.{name}"
        api["functions"][f"{module}.{name}"] = {"params": [], "varargs": True, "varkw": True, "returns": None}


# ------------------------------------------------------------------------------------- interfaces
def interface_fields(text: str) -> dict:
    """Field name → type ("pkg.msg.Name", a same-package "Name", or None for primitives) of a .msg
    (or one half of a .srv); constants (``TYPE NAME=VALUE``) are attributes without a type."""
    fields = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        parts = line.split()
        if len(parts) < 2:
            continue
        if "=" in line:  # a constant
            fields[line.split(None, 1)[1].split("=")[0].strip()] = None
            continue
        base = re.sub(r"\[.*\]$", "", parts[0]).split("<=")[0]
        if "/" in base:
            package, msg = base.split("/")
            fields[parts[1]] = f"{package}.msg.{msg}"
        else:
            fields[parts[1]] = None if base in PRIMITIVES else base
    return fields


def parse_interfaces(git_dir: str, package: str, api: dict) -> None:
    for kind in ("msg", "srv"):
        module = f"{package}.{kind}"
        names = api["modules"].setdefault(module, {"names": {}})["names"]
        for path, text in files(git_dir, f"{package}/{kind}", f".{kind}"):
            name = Path(path).stem
            qualified = f"{module}.{name}"
            names[name] = qualified
            if kind == "msg":
                api["classes"][qualified] = message_class(interface_fields(text), package)
            else:
                request, _sep, response = text.partition("\n---")
                api["classes"][qualified] = {"bases": [], "members": {
                    "Request": {"kind": "class", "returns": f"{qualified}.Request"},
                    "Response": {"kind": "class", "returns": f"{qualified}.Response"}}}
                api["classes"][f"{qualified}.Request"] = message_class(interface_fields(request), package)
                api["classes"][f"{qualified}.Response"] = message_class(interface_fields(response), package)
        api["module_files"][module] = True


def message_class(fields: dict, package: str) -> dict:
    members = {"__init__": {"kind": "function", "params": ["self"] + list(fields), "varargs": False,
                            "varkw": True, "returns": None}}
    for name, ftype in fields.items():
        if ftype is not None and "." not in ftype:
            ftype = f"{package}.msg.{ftype}"
        members[name] = {"kind": "attribute", "returns": ftype}
    return {"bases": [], "members": members}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def prune_private(api: dict) -> None:
    """Only the public API: a private name our code used would be missing, hence reported.  Modules
    stay (re-exports resolve through them), their private names go unless public names alias them."""
    for entry in api["classes"].values():
        entry["members"] = {k: v for k, v in entry["members"].items() if not private(k)}
    for entry in api["modules"].values():
        entry["names"] = {k: v for k, v in entry["names"].items() if not private(k) or k == "_rclpy"}
    api["classes"] = {k: v for k, v in api["classes"].items() if not private(k.split(".")[-1])}
    api["functions"] = {k: v for k, v in api["functions"].items() if not private(k.split(".")[-1])}


def main(git_dirs) -> int:
    if len(git_dirs) != len(REPOS):
        print(__doc__, file=sys.stderr)
        return 2
    api = {"provenance": [], "modules": {}, "classes": {}, "functions": {}, "module_files": {}}
    for (repo, (packages, pybinds, interfaces)), git_dir in zip(REPOS.items(), git_dirs):
        commit = git(git_dir, "rev-parse", BRANCH).strip()
        api["provenance"].append({"repo": f"github.com/{repo}", "branch": BRANCH, "commit": commit,
                                  "read": sorted(list(packages) + list(pybinds) + list(interfaces))})
        for root, package in packages.items():
            for path, text in files(git_dir, root, ".py"):
                module = module_name(path, root, package)
                parse_python(text, module, path.endswith("__init__.py"), api)
        for root, module in pybinds.items():
            for _path, text in files(git_dir, root, ".cpp"):
                name = MODULE_NAME.search(text)
                target = module or (f"rosbag2_py.{name.group(1)}" if name else None)
                if target:
                    parse_pybind(text, target, api)
        for package in interfaces:
            parse_interfaces(git_dir, package, api)
    api["module_files"] = sorted(api["module_files"])
    prune_private(api)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(api, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(api['modules'])} modules, {len(api['classes'])} classes, "
          f"{len(api['functions'])} functions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
