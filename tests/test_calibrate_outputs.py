"""calibrate never destroys data and fails with one line (issue 15 items 1, 2, 3, 5, 12)."""
from __future__ import annotations

import dataclasses
import errno
import hashlib

import numpy as np
import pytest
from fixtures.bags import merge_by_time
from fixtures.optional import requires
from test_calibrate_standstill import gps_spec, imu_spec, standstill_truth

from sim2real_eval.bags import messages as bag_messages
from sim2real_eval.bags import write_bag
from sim2real_eval.calibrate import plots
from sim2real_eval.cli import main
from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed

NEEDS_ALLANTOOLS = requires("allantools", "all", "the IMU Allan deviation")

OUTPUTS = ("p.yaml", "p_gps.yaml", "p_imu.yaml")


def tree_digest(path) -> dict:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    truth = standstill_truth(70.0)
    gps = load_gps_model(gps_spec(), sensor_seed(1, "gps")).sample(truth)
    imu = load_imu_model(imu_spec(), sensor_seed(1, "imu")).sample(truth)
    path = tmp_path_factory.mktemp("bags") / "standstill"
    write_bag(path, merge_by_time(bag_messages.navsatfix_messages(gps), bag_messages.imu_messages(imu)))
    return path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sim2real-eval calibrate: error: "), err
    return err


@pytest.mark.parametrize("where", ["metadata.yaml", "p.yaml", "sub/p.yaml"])
def test_output_inside_the_input_bag_is_refused_and_the_bag_untouched(bag, where, capsys):
    before = tree_digest(bag)
    assert main(["calibrate", str(bag), "--out", str(bag / where)]) == 2
    err = one_line_error(capsys)
    assert "lies inside the input STANDSTILL_BAG" in err
    assert tree_digest(bag) == before


def test_plots_inside_the_bag_are_refused(bag, tmp_path, capsys):
    before = tree_digest(bag)
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml"), "--plots", str(bag)]) == 2
    assert "--plots" in one_line_error(capsys)
    assert tree_digest(bag) == before and not list(tmp_path.iterdir())


@NEEDS_ALLANTOOLS
@pytest.mark.parametrize("existing", OUTPUTS)
def test_existing_outputs_need_overwrite(bag, tmp_path, existing, capsys):
    (tmp_path / existing).write_text("precious\n")
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml")]) == 2
    err = one_line_error(capsys)
    assert f"{existing}: already exists" in err and "--overwrite" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing]
    assert (tmp_path / existing).read_text() == "precious\n"
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml"), "--overwrite"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(OUTPUTS)
    assert (tmp_path / existing).read_text() != "precious\n"


@pytest.mark.parametrize("args, expected", [
    (["--gps-topic", "/imu"], "--gps-topic and --imu-topic are both /imu"),
    (["--gps-topic", "/imu", "--imu-topic", "/fix"],
     "topic /imu (--gps-topic) has type sensor_msgs/msg/Imu, expected sensor_msgs/msg/NavSatFix"),
])
def test_wrong_message_type_is_one_line(bag, tmp_path, args, expected, capsys):
    assert main(["calibrate", str(bag), "--out", str(tmp_path / "p.yaml"), *args]) == 2
    assert expected in one_line_error(capsys)
    assert not list(tmp_path.iterdir())


@NEEDS_ALLANTOOLS
@pytest.mark.parametrize("failing", ["gps_plot", "hdop_plot"])
def test_a_failure_between_the_files_leaves_none(bag, tmp_path, monkeypatch, failing, capsys):
    """Full disk while the set is being written (the presets were complete, the plots not)."""
    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(args[-1]))

    monkeypatch.setattr(plots, failing, full_disk)
    out = tmp_path / "cal" / "p.yaml"
    assert main(["calibrate", str(bag), "--out", str(out), "--plots", str(tmp_path / "plots")]) == 2
    assert "no space left on device" in one_line_error(capsys)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_non_finite_covariance_names_bag_and_topic(tmp_path, capsys):
    truth = standstill_truth(70.0)
    gps = load_gps_model(gps_spec(), sensor_seed(2, "gps")).sample(truth)
    cov = gps.position_covariance.copy()
    cov[::5] = np.inf  # every 5th fix
    gps = dataclasses.replace(gps, position_covariance=cov)
    imu = load_imu_model(imu_spec(), sensor_seed(2, "imu")).sample(truth)
    path = write_bag(tmp_path / "infcov", merge_by_time(bag_messages.navsatfix_messages(gps),
                                                        bag_messages.imu_messages(imu)))
    assert main(["calibrate", str(path), "--out", str(tmp_path / "p.yaml")]) == 2
    err = one_line_error(capsys)
    assert f"{path}: /fix: position_covariance is NaN/inf in 141 message(s), the first is message 0" in err
    assert not (tmp_path / "p.yaml").exists()
