"""The README's ROS install works as written: its pip step installs the dependencies with the pins a
Humble needs, without building anything in the user's checkout, and every test module imports without
the optional extras (launch_testing's pytest plugin imports each tests/*.py while collecting).
"""
from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO / "docker" / "ros-requirements.txt"
# What a Humble beside PyPI needs (README "ROS 2"; setup.py's [ros] extra says why for each).
PINS = {"numpy": ("1.26.4", "2.0.0"), "pytest": ("9.0.3", "9.1.0"), "coverage": ("7.0", "6.5.0")}
OPTIONAL = ("allantools", "optuna", "ray", "mcap", "mcap_ros2")


def setup_py_lists() -> tuple:
    """(install_requires, extras_require) of setup.py, read as the literals they are."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "setup")
    keywords = {k.arg: k.value for k in call.keywords}
    return ast.literal_eval(keywords["install_requires"]), ast.literal_eval(keywords["extras_require"])


def requirement_lines(path: Path) -> list:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def readme_ros_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("\n## ROS 2\n", 1)[1].split("\n### Docker\n", 1)[0]


def readme_pip_step() -> str:
    """The one pip line of the README's ROS build block (comments dropped)."""
    section = readme_ros_section()
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in block.splitlines() if "pip install" in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_requirements_file_is_setup_pys_dependencies_and_ros_extra():
    install_requires, extras = setup_py_lists()
    assert requirement_lines(REQUIREMENTS) == install_requires + extras["ros"]


def test_the_ros_extra_pins_what_a_humble_needs():
    from packaging.requirements import Requirement

    _install, extras = setup_py_lists()
    specs = {}
    for text in extras["ros"]:
        requirement = Requirement(text)
        specs[requirement.name] = requirement.specifier
    for name, (allowed, refused) in PINS.items():
        assert allowed in specs[name] and refused not in specs[name], (name, specs[name])


def test_the_readme_step_installs_the_file_without_building():
    step = shlex.split(readme_pip_step())
    assert step[:4] == ["python3", "-m", "pip", "install"]
    assert step[step.index("-r") + 1] == "src/sim2real_eval/docker/ros-requirements.txt"
    assert not any(word.startswith(("-e", ".", "src/sim2real_eval[")) for word in step[4:]), step
    section = readme_ros_section()
    for platform in ("Ubuntu 22.04", "Debian bookworm", "--break-system-packages"):
        assert platform in section, f"README ROS section: nothing about {platform}"


@pytest.mark.slow
def test_the_readme_pip_step_in_a_fresh_venv(tmp_path):
    """The README's pip line, word for word, in a fresh venv that sees the system's packages
    (``--system-site-packages``: the interpreter ROS runs on): the pins hold afterwards, numba imports
    beside that numpy, and the checkout has no build/ or *.egg-info."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    step = shlex.split(readme_pip_step())
    step = [str(python)] + [str(REPO / w[len("src/sim2real_eval/"):]) if w.startswith("src/sim2real_eval/")
                            else w for w in step[1:]]
    before = sorted(p.name for p in REPO.iterdir()) + sorted(p.name for p in (REPO / "src").iterdir())
    done = subprocess.run(step + ["--disable-pip-version-check", "--quiet"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=900)
    if done.returncode != 0 and re.search(r"(?i)connection|resolve host|network is unreachable|"
                                          r"no matching distribution", done.stderr):
        pytest.skip(f"PyPI is not reachable here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-3000:]
    after = sorted(p.name for p in REPO.iterdir()) + sorted(p.name for p in (REPO / "src").iterdir())
    assert after == before  # nothing built in the checkout
    probe = textwrap.dedent("""
        import json, coverage, numba, numpy, pytest, hypothesis, rosbags, scipy, yaml
        print(json.dumps({"numpy": numpy.__version__, "pytest": pytest.__version__,
                          "coverage": coverage.__version__, "coverage_types": hasattr(coverage, "types")}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    shown = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=env, check=True)
    import json

    from packaging.specifiers import SpecifierSet

    versions = json.loads(shown.stdout)
    assert versions["numpy"] in SpecifierSet("<2"), versions
    assert versions["pytest"] in SpecifierSet(">=7,<9.1"), versions
    assert versions["coverage"] in SpecifierSet(">=7") and versions["coverage_types"], versions


@pytest.mark.slow
def test_every_test_module_imports_without_the_optional_extras():
    """What launch_testing's collection does with tests/*.py, with allantools, optuna, ray and mcap
    made unimportable: no module fails to import (the tests that need them skip)."""
    blocker = textwrap.dedent(f"""
        import sys
        class Absent:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {OPTIONAL!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
        sys.meta_path.insert(0, Absent())
        import pytest
        sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"]))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", blocker], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "error" not in done.stdout.splitlines()[-1].lower(), done.stdout[-2000:]
