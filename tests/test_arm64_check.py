"""benchmarks/arm64_check.py's own logic, on this machine (the emulated run itself is a developer's
check, docs/ros.md): reading ``preset_streams.py compare`` on two real dumps, the Debian mirror of an
apt configuration, which test files are robot-side, and the docs region it rewrites."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


arm64_check = _load("arm64_check")


def _compare(tmp_path: Path, a: dict, b: dict) -> subprocess.CompletedProcess:
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "b.npz", **b)
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "preset_streams.py"), "compare",
                           str(tmp_path / "a.npz"), str(tmp_path / "b.npz")],
                          capture_output=True, text=True)


def test_compare_output_is_read_field_by_field(tmp_path):
    altitude = np.array([260.0, 1000.0, 0.5])
    a = {"circle/gps/ublox/altitude": altitude, "sine/gps/ublox/altitude": altitude,
         "circle/imu/xsens/angular_velocity": np.zeros((2, 3)),
         "circle/gps/ublox/stamp_ns": np.array([10, 20], dtype=np.int64)}
    b = dict(a, **{"sine/gps/ublox/altitude": altitude + np.array([0.0, 2e-9, 1e-13])})
    done = _compare(tmp_path, a, b)
    assert done.returncode == 0, done.stdout + done.stderr
    fields, unequal = arm64_check.parse_compare(done.stdout)
    rows = {row[0]: row for row in fields}
    assert set(rows) == {"gps altitude", "imu angular_velocity"}
    name, count, total, largest, scaled = rows["gps altitude"]
    assert (count, total) == (2, 6)
    assert largest == pytest.approx(2e-9, rel=0.03)           # printed with 2 digits
    assert scaled == pytest.approx(2e-12, rel=0.03)           # 2e-9 / 1000 beats 1e-13 / max(1, 0.5)
    assert rows["imu angular_velocity"][1:] == (0, 6, 0.0, 0.0)
    assert unequal == []


def test_an_integer_difference_is_reported(tmp_path):
    a = {"circle/gps/ublox/stamp_ns": np.array([10, 20], dtype=np.int64),
         "circle/gps/ublox/latitude": np.array([48.0])}
    b = dict(a, **{"circle/gps/ublox/stamp_ns": np.array([10, 21], dtype=np.int64)})
    done = _compare(tmp_path, a, b)
    assert done.returncode == 1
    fields, unequal = arm64_check.parse_compare(done.stdout)
    assert unequal == ["circle/gps/ublox/stamp_ns"]
    assert [row[0] for row in fields] == ["gps latitude"]


def test_an_unknown_compare_line_is_an_error():
    with pytest.raises(ValueError, match="unexpected line"):
        arm64_check.parse_compare("gps altitude: 3 values differ\n")


def test_pytest_summary_is_the_closing_line():
    text = "....\n=== 1 failed, 245 passed, 2 skipped in 151.20s (0:02:31) ===\n"
    assert arm64_check.pytest_summary(text) == ("1 failed, 245 passed, 2 skipped", [])
    quiet = ("..s\nSKIPPED [1] tests/test_yaml_rcl.py:158: root reads files whatever their mode\n"
             "SKIPPED [2] tests/test_yaml_rcl.py:363: no librcl\n"
             "390 passed, 4 skipped, 3 warnings in 181.63s (0:03:01)\n")
    assert arm64_check.pytest_summary(quiet) == (
        "390 passed, 4 skipped, 3 warnings",
        ["test_yaml_rcl: no librcl", "test_yaml_rcl: root reads files whatever their mode"])
    with pytest.raises(ValueError):
        arm64_check.pytest_summary("ImportError while loading conftest\n")


def test_the_mirror_is_read_from_either_apt_format(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "other.list").write_text("deb https://example.org/apt stable main\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n"
        "Suites: bookworm-security\n")
    assert arm64_check.debian_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("# x\ndeb [arch=amd64] http://ftp.example/debian bookworm main\n")
    assert arm64_check.debian_mirror(tmp_path) == "http://ftp.example/debian"


def test_robot_side_tests_import_only_robot_side_code():
    chosen = {path.name for path in arm64_check.robot_side_tests()}
    # robot-side by what they import (docs/ros.md's Python 3.8 list)
    assert {"test_geodesy.py", "test_models_gps.py", "test_models_imu.py", "test_node_core.py",
            "test_scenarios.py", "test_stamps.py", "test_atomic.py", "test_runs.py"} <= chosen
    # the CLI, the judge, sim2real_eval.reference (offline); repository checks importing no module
    assert not chosen & {"test_yaml_project.py", "test_judge_filter.py", "test_models_gps_stamps.py",
                         "test_architecture.py", "test_ros_nodes_static.py"}


def test_the_docs_region_is_rewritten_and_nothing_else(tmp_path):
    doc = tmp_path / "models.md"
    doc.write_text("a\n<!-- generated: arm64-check -->\nold\n<!-- end: arm64-check -->\nb\n")
    arm64_check.write_docs("- new\n", doc)
    assert doc.read_text() == "a\n<!-- generated: arm64-check -->\n- new\n<!-- end: arm64-check -->\nb\n"
    doc.write_text("no region\n")
    with pytest.raises(SystemExit, match="no <!-- generated: arm64-check --> region"):
        arm64_check.write_docs("- new\n", doc)
    assert doc.read_text() == "no region\n"
