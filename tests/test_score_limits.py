"""The scorer never scores a non-finite value silently, its messages say what happened, and its rate
has an upper bound (issue 15 items 4, 12, 13)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.metrics.options import MAX_RATE_HZ, ScoreOptions
from sim2real_eval.metrics.per_run import score_run
from sim2real_eval.replay.real_bag import _check_stamps

T = np.arange(0.0, 20.0, 0.05)
SPEED = 1.0 + 0.1 * np.sin(T)


@pytest.mark.parametrize("side", ["estimate", "ground truth"])
def test_overflowing_speed_is_named_not_called_zero(side):
    huge = SPEED.copy()
    huge[100:] = 1e308
    v_est, v_gt = (huge, SPEED) if side == "estimate" else (SPEED, huge)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw numpy overflow warnings either
        with pytest.raises(UserError) as info:
            score_run("runs/sim/x/line/0", T, v_est, T, v_gt, ScoreOptions())
    message = str(info.value)
    assert "identically 0" not in message
    assert message.startswith("runs/sim/x/line/0: the ")
    assert "reaches 1e+308 m/s, too large to score" in message


def test_zero_speed_is_still_reported_as_zero():
    with pytest.raises(UserError, match="estimate speed is undefined \\(speed identically 0\\)"):
        score_run("r", T, np.zeros_like(T), T, SPEED, ScoreOptions())


def test_non_finite_input_is_refused_by_name():
    bad = SPEED.copy()
    bad[7] = np.nan
    with pytest.raises(UserError, match="r: estimate speed is NaN/inf at sample 7"):
        score_run("r", T, bad, T, SPEED, ScoreOptions())


def test_ordinary_speeds_still_score():
    score = score_run("r", T, SPEED * 1.01, T, SPEED, ScoreOptions())
    assert np.isfinite([score.rmse, score.S_est, score.S_gt, score.D]).all()


def test_rate_upper_bound(tmp_path, capsys):
    assert ScoreOptions(rate_hz=MAX_RATE_HZ).validate().rate_hz == MAX_RATE_HZ
    with pytest.raises(UserError, match=r"--rate: 1e\+06 Hz is above the 1000 Hz limit"):
        ScoreOptions(rate_hz=1e6).validate()
    (tmp_path / "runs" / "real").mkdir(parents=True)
    report = tmp_path / "report"
    assert main(["score", str(tmp_path / "runs"), "--out", str(report), "--rate", "1000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1000 Hz limit" in err and not (tmp_path / "report").exists()


def test_equal_stamps_are_not_called_backwards():
    with pytest.raises(UserError, match=r"topic /imu: header stamps repeat at message 2 \(20 ns then 20"):
        _check_stamps(np.array([10, 20, 20, 30]), "/imu", "bag", strict=True)
    with pytest.raises(UserError, match=r"header stamps go backwards at message 2 \(20 ns then 15 ns\)"):
        _check_stamps(np.array([10, 20, 15]), "/imu", "bag", strict=True)
    _check_stamps(np.array([10, 20, 20, 30]), "/fix", "bag", strict=False)  # GPS: repeats allowed
