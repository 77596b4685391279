"""node.clock: following the player's /clock between its messages, and the publication schedule."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.node.clock import ClockFollower, Schedule

MS = 1_000_000
T0 = 1_707_998_410 * 1_000_000_000  # an epoch-scale bag time
S0 = 5_000 * 1_000_000_000           # a steady-clock reading


def test_hand_values_at_play_rate_one():
    follower = ClockFollower(1.0)
    assert not follower.running and follower.now(S0) is None and follower.steady_at(T0) is None
    follower.update(T0, S0 + 2 * MS)            # seen 2 ms late
    assert not follower.running                  # one point is not a line
    follower.update(T0 + 25 * MS, S0 + 25 * MS)  # seen on time
    assert follower.running
    # The least-delayed message fixes the line: sim = T0 + (steady − S0).
    assert follower.now(S0 + 30 * MS) == T0 + 30 * MS
    assert follower.steady_at(T0 + 40 * MS) == S0 + 40 * MS
    # Never further than the horizon (0.1 s) past the last /clock value.
    assert follower.now(S0 + 10_000 * MS) == T0 + 125 * MS
    assert follower.steady_at(T0 + 126 * MS) is None


def test_play_rate_two_and_a_pause_or_seek_restart_the_line():
    follower = ClockFollower(2.0)
    follower.update(T0, S0)
    follower.update(T0 + 50 * MS, S0 + 25 * MS)
    assert follower.steady_at(T0 + 80 * MS) == S0 + 40 * MS  # 80 ms of bag time in 40 ms
    follower.update(T0 + 50 * MS, S0 + 50 * MS)  # paused: the same value again
    assert not follower.running and follower.resets == 1
    follower.update(T0 + 10 * MS, S0 + 60 * MS)  # seek back
    assert not follower.running and follower.resets == 2


@settings(max_examples=100, deadline=None)
@given(st.floats(0.25, 4.0), st.lists(st.floats(0.0, 3.0), min_size=3, max_size=60))
def test_the_estimate_is_never_ahead_and_within_the_smallest_delay(rate, delays_ms):
    """With delivery delays d_i ≥ 0, the estimated sim time lags the true one by rate·min(d_i)."""
    follower = ClockFollower(rate, window=100)
    for i, delay in enumerate(delays_ms):
        taken = S0 + i * 25 * MS
        follower.update(T0 + int(rate * (taken - S0)), taken + int(delay * MS))
    probe = S0 + (len(delays_ms) - 1) * 25 * MS + 5 * MS
    truth = T0 + int(rate * (probe - S0))
    error_ns = truth - follower.now(probe)
    assert -2 <= error_ns <= rate * min(delays_ms) * MS + 2  # ns


def test_schedule_pops_due_records_in_order():
    schedule = Schedule([(30, "/imu", b"c"), (10, "/fix", b"a"), (20, "/imu", b"b"), (20, "/fix", b"b2")])
    assert (len(schedule), schedule.first_ns, schedule.last_ns, schedule.next_ns) == (4, 10, 30, 10)
    assert schedule.due(9) == []
    assert [r[2] for r in schedule.due(20)] == [b"a", b"b", b"b2"]  # ties keep their order
    assert schedule.published == 3 and schedule.next_ns == 30
    assert [r[2] for r in schedule.due(10**12)] == [b"c"] and schedule.next_ns is None


@pytest.mark.parametrize("rate", [1.0, 2.0])
def test_a_simulated_publisher_meets_every_time_within_a_millisecond(rate):
    """Replay: /clock at 40 Hz with 0–2 ms delivery jitter; a publisher that wakes at steady_at(t)
    publishes each record within 1 ms (bag time) of its receive time."""
    rng = np.random.default_rng(3)
    follower = ClockFollower(rate)
    records = sorted(T0 + rng.integers(100 * MS, 3_000 * MS, 300))  # the line is known from 25 ms on
    schedule = Schedule([(int(t), "/imu", b"") for t in records])
    errors = []
    for i in range(int(3.2 / 0.025 / rate) + 2):
        taken = S0 + int(i * 25 * MS)
        follower.update(T0 + int(rate * (taken - S0)), taken + int(rng.uniform(0, 2) * MS))
        horizon = taken + int(25 * MS)  # until the next /clock
        while schedule.next_ns is not None:
            wake = follower.steady_at(schedule.next_ns)
            if wake is None or wake > horizon:
                break
            for recv, _topic, _raw in schedule.due(follower.now(wake)):
                errors.append(T0 + int(rate * (wake - S0)) - recv)   # true bag time at publication − target
    assert len(errors) == len(records)
    assert max(abs(e) for e in errors) < rate * 1 * MS
