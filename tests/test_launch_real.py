"""The launch files on a real ROS 2 (Humble): exit codes, and evaluate.launch.py's judge output rates
equal in every mode (the simulated streams reach robot_localization as the real ones do).

Needs ``ros2`` on PATH with this package and robot_localization installed (a sourced workspace, the
Docker image); skips cleanly otherwise.  Each case runs ``ros2 launch`` as a subprocess.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not installed (no ROS 2 here)")
ament = pytest.importorskip("ament_index_python.packages", reason="no ament index (no ROS 2 here)")
if shutil.which("ros2") is None:
    pytest.skip("the ros2 command is not on PATH", allow_module_level=True)
try:
    ament.get_package_share_directory("sim2real_eval")
except ament.PackageNotFoundError:
    pytest.skip("sim2real_eval is not installed in the sourced workspace", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parent / "launch"))
from art_bag import make_art_bag  # noqa: E402

MODES = ("real", "sim_imu", "sim_gps", "sim_both")


def launch(name: str, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run(["ros2", "launch", "sim2real_eval", name, *args], capture_output=True, text=True,
                          timeout=timeout)


def has_robot_localization() -> bool:
    try:
        ament.get_package_share_directory("robot_localization")
        return True
    except ament.PackageNotFoundError:
        return False


def test_a_failing_noise_node_fails_the_launch():
    result = launch("sensors.launch.py", "gps_model:=no_such_preset", timeout=120)
    assert result.returncode != 0
    assert "gps_noise_node exited with code 2" in result.stdout + result.stderr


def test_unknown_arguments_are_refused():
    result = launch("sensors.launch.py", "gps_modle:=ch_rw", timeout=120)
    assert result.returncode != 0 and "unknown argument(s) gps_modle" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def art_bag(tmp_path_factory):
    # DIR/<scenario>/run_<k>: the launch names the run art/3.
    return make_art_bag(tmp_path_factory.mktemp("bags") / "art" / "run_03", duration_s=12.0)


@pytest.mark.skipif(not has_robot_localization(), reason="robot_localization is not installed")
def test_evaluate_fails_when_the_recorder_cannot_write(art_bag):
    result = launch("evaluate.launch.py", f"bag:={art_bag}", "mode:=real", "output:=/proc/sim2real_eval/run")
    assert result.returncode != 0
    assert "recorder_node exited with code 2" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def runs(art_bag, tmp_path_factory):
    if not has_robot_localization():
        pytest.skip("robot_localization is not installed")
    out = tmp_path_factory.mktemp("runs")
    results = {}
    for mode in MODES:
        result = launch("evaluate.launch.py", f"bag:={art_bag}", f"mode:={mode}", "truth_source:=sbg_ekf",
                        f"output:={out / mode}")
        results[mode] = (result, out / mode)
    return results


@pytest.mark.parametrize("mode", MODES)
def test_evaluate_writes_a_complete_run_in_every_mode(runs, mode):
    from sim2real_eval.yamlio import load_yaml
    result, output = runs[mode]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = load_yaml(output / "run.yaml")
    assert (record["scenario"], record["k"]) == ("art", 0)
    assert record["side"] == ("real" if mode == "real" else "sim")
    assert (output / f"{output.name}_0.db3").is_file()


def judge_rates(output: Path) -> dict:
    from sim2real_eval.bags import open_bag
    rates = {}
    with open_bag(output) as reader:
        for topic in ("/odometry/filtered", "/odometry/gps", "/fix", "/imu"):
            stamps = sorted(m.recv_ns for m in reader.raw_messages([topic]))
            rates[topic] = (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9)
    return rates


@pytest.mark.parametrize("mode", MODES[1:])
def test_every_mode_feeds_the_judge_like_real_so_its_output_rates_are_reals(runs, mode):
    real, other = judge_rates(runs["real"][1]), judge_rates(runs[mode][1])
    for topic in ("/fix", "/imu", "/odometry/filtered", "/odometry/gps"):
        assert other[topic] == pytest.approx(real[topic], rel=0.03), (topic, real, other)
