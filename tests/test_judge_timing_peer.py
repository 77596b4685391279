"""The real judge's timer timing on the shipped real runs (../shared/peer), and the timing model fitted
to it (runs.timing).  Skips without the peer data."""
from __future__ import annotations

import judge_timing_peer as peer
import numpy as np
import pytest

from sim2real_eval.runs.timing import LATENCY_HIGH_NS

pytestmark = pytest.mark.skipif(not peer.available(), reason=f"peer data {peer.ROS1} is absent")

GPS_LOSS_RUNS = {"line_run_00_realtime_2", "line_run_00_realtime_4", "sine_run_00_realtime_3",
                 "circle_run_00_realtime_3"}


@pytest.fixture(scope="module")
def facts():
    return {f.run: f for f in peer.all_facts()}


def test_every_shipped_run_is_read(facts):
    assert len([f for f in facts.values() if f.source == "ros1"]) == 15
    assert len([f for f in facts.values() if f.source == "humble"]) == 8
    # README table: /odometry/gps counts of the ROS 1 runs.
    assert facts["line_run_00_realtime_2"].gps_odometry == 232
    assert facts["circle_run_00_realtime_3"].gps_odometry == 251
    assert all(f.filtered > 1000 for f in facts.values())


def test_gps_loss_mode_is_navsat_ticking_while_fixes_arrive(facts):
    """The 4 runs that lost 18-25 % of /odometry/gps are exactly those whose navsat ticks fell in the
    35-55 ms in which fixes arrive: their stamps pin the phase there to a fraction of a ms; every other
    run's stamps allow any phase outside that window (a plateau of ~80 ms)."""
    lost = {name for name, f in facts.items() if f.gps_loss > 0.15}
    assert lost == GPS_LOSS_RUNS
    for name in GPS_LOSS_RUNS:
        navsat = facts[name].navsat
        assert navsat.stamp_plateau_width_ms < 1.0
        assert 35.0 <= navsat.stamp_plateau_ms <= 55.0
        assert navsat.stamp_consistency > 0.85
        assert abs(navsat.exec_phase_ms - navsat.stamp_plateau_ms) < 4.0  # receive times agree
    for name, f in facts.items():
        if f.fixes_lost == 0:
            assert f.navsat.stamp_plateau_width_ms > 75.0, name
            assert f.navsat.stamp_consistency == 1.0, name


def test_quarter_speed_runs_ticked_12_ms_into_the_ekf_period(facts):
    """The quarter-speed runs' EKF ticks executed 12.3-12.6 ms into their period (receive times), inside
    the phases their output stamps allow, and every output stamp is explained by one phase."""
    for scenario in peer.SCENARIOS:
        ekf = facts[f"{scenario}_run_00_quarter_speed"].ekf
        assert 12.0 < ekf.exec_phase_ms < 13.0
        assert ekf.stamp_consistency == 1.0
        assert abs(ekf.exec_phase_ms - ekf.stamp_plateau_ms) <= ekf.stamp_plateau_width_ms / 2 + 0.1


def test_humble_tick_latency_is_uniform_over_one_clock_period(facts):
    """The fitted latency distribution of runs.timing: the Humble EKF ticks' delay after their
    nominal time is U(0, 25 ms) (ros2 bag play --clock publishes /clock at 40 Hz) — and fits better than
    an exponential or a gamma."""
    fits = {fit.group.split(" ")[0]: fit for fit in peer.latency_fits(facts.values())}
    humble = fits["humble"]
    assert humble.runs == 8 and humble.ticks > 8000
    assert abs(humble.uniform_high_ms - LATENCY_HIGH_NS * 1e-6) < 1.0
    assert humble.ks_uniform < 0.1
    assert humble.ks_uniform < min(humble.ks_exponential, humble.ks_gamma) / 2
    latencies = np.concatenate([f.ekf.latency_ms for f in facts.values() if f.source == "humble"])
    assert 10.0 < np.median(latencies) < 13.5  # the middle of U(0, 25 ms)


def test_circular_statistics():
    period = 100
    values = np.array([95, 97, 99, 1, 3, 5])  # a band across the wrap point
    assert peer.largest_gap_start(values, period) == 95
    assert peer.circular_median(values, period) in (99, 0, 1)
    start, end = np.array([10, 50]), np.array([20, 70])
    counts = peer.explained(np.array([0, 15, 55, 75]), period, start, end)
    assert counts.tolist() == [0, 1, 1, 0]


# ------------------------------------------------------------------------ the judge against them
@pytest.mark.parametrize("scenario", peer.SCENARIOS)
def test_quarter_speed_timing_reproduces_the_quarter_speed_run(scenario):
    """Issue 12 acceptance: with the quarter-speed run's timing (its execution phases, latency 0) the
    judge matches that real run to speed RMS <= 0.015 m/s, E within 3 %, S_est within 5 %."""
    result = peer.acceptance_fixed(scenario)
    assert result["speed_rms"] <= 0.015
    assert abs(result["E_error"]) <= 0.03
    assert abs(result["S_est_error"]) <= 0.05
    assert result["gps_odometry"][0] == result["gps_odometry"][1]


def test_zero_timing_matches_no_quarter_speed_run_as_well():
    """The default timing (exact multiples) is one arbitrary point of the real spread: it misses the
    quarter-speed runs by several times the tolerance (the test above can fail)."""
    from sim2real_eval.runs.timing import RunTiming

    real = peer.real_scored("line", peer.ROS1 / "line_run_00_quarter_speed.csv.gz")
    assert peer.speed_rms(peer.judged("line", RunTiming()), real) > 0.03


@pytest.mark.slow
@pytest.mark.parametrize("scenario", peer.SCENARIOS)
def test_random_timing_spreads_like_the_real_runs_gps_loss_mode_included(scenario):
    """Random timing over 20 seeds spreads E over the real runs' range (to 2 % at either end; the full
    acceptance, 100 seeds, is in docs/judge.md), and a navsat phase where the real runs' stamps pinned
    the GPS-loss mode (line run 2: 45.9 ms) loses 18-26 % of /odometry/gps as they did."""
    from sim2real_eval.runs.timing import RunTiming

    result = peer.acceptance_random(scenario, 20)
    low, high = min(result["real_E"]), max(result["real_E"])
    assert min(result["E"]) <= low * 1.02 and max(result["E"]) >= high * 0.98
    assert max(result["gps"]) >= max(result["real_gps"]) - 1
    lost = peer.judged(scenario, RunTiming(12_000_000, 45_900_000, 0))
    assert 0.18 <= 1 - lost.gps_odometry / max(result["gps"]) <= 0.26
