"""ekf_node behaviour: gates, queue order, ticks, timeout predicts, publication
(judge.md §3.2, §3.7-§3.8)."""

from __future__ import annotations

import heapq
import shutil
import subprocess
from types import SimpleNamespace as NS

import numpy as np
import pytest

from sim2real_eval.judge import Judge
from sim2real_eval.judge.ekf_node import EkfNode
from sim2real_eval.judge.filter import Measurement
from sim2real_eval.judge.params import ekf_params_from_dict
from sim2real_eval.judge.tf import TfBuffer

S = 1_000_000_000
TWIST_ONLY = {
    "frequency": 10.0,
    "sensor_timeout": 0.5,
    "twist0": "/vel",
    "twist0_config": [False] * 6 + [True] + [False] * 8,
}


def twist_msg(stamp_ns, vx, frame="base_link", var=0.01):
    sec, nanosec = divmod(stamp_ns, S)
    cov = np.zeros(36)
    cov[0] = var
    return NS(
        header=NS(stamp=NS(sec=sec, nanosec=nanosec), frame_id=frame),
        twist=NS(twist=NS(linear=NS(x=vx, y=0.0, z=0.0), angular=NS(x=0.0, y=0.0, z=0.0)), covariance=cov),
    )


def node(extra=None):
    params = ekf_params_from_dict({**TWIST_ONLY, **(extra or {})}, "test.yaml")
    return EkfNode(params, TfBuffer())


def test_zero_stamp_is_always_dropped():
    n = node()
    n.handle("/vel", twist_msg(0, 1.0))
    assert not n.queue_stamps and n.dropped["stamp_not_after_set_pose"] == 1


def test_older_stamp_per_subtopic_is_dropped_equal_is_accepted():
    n = node()
    n.handle("/vel", twist_msg(2 * S, 1.0))
    n.handle("/vel", twist_msg(2 * S, 1.0))
    n.handle("/vel", twist_msg(1 * S, 1.0))
    assert len(n.queue_stamps) == 2 and n.dropped["stale_stamp"] == 1


def test_tick_processes_only_stamps_up_to_now_and_publishes_filter_time():
    n = node()
    n.handle("/vel", twist_msg(1 * S, 1.0))
    n.handle("/vel", twist_msg(3 * S, 1.0))
    odom = n.tick(2 * S)
    assert odom is not None and odom.stamp_ns[0] == 1 * S  # stamp = filter time, not tick time
    assert len(n.queue_stamps) == 1  # the future stamp waits


def test_publish_only_when_the_stamp_advances():
    n = node()
    n.handle("/vel", twist_msg(1 * S, 1.0))
    assert n.tick(S + S // 10) is not None
    assert n.tick(S + 2 * S // 10) is None  # nothing new, timeout (0.5 s) not reached
    odom = n.tick(S + 6 * S // 10)  # timeout predict to now → stamp advances
    assert odom is not None and odom.stamp_ns[0] == S + 6 * S // 10


def test_future_stamped_queue_suppresses_the_timeout_predict():
    n = node()
    n.handle("/vel", twist_msg(1 * S, 1.0))
    n.tick(S)
    n.handle("/vel", twist_msg(10 * S, 1.0))
    assert n.tick(3 * S) is None  # queue non-empty (future item) → no timeout predict
    assert n.filter.last_measurement_ns == S


def test_late_measurement_after_timeout_predict_is_corrected_without_predict():
    n = node()
    n.handle("/vel", twist_msg(1 * S, 1.0))
    n.tick(S)
    n.tick(2 * S)  # timeout predict to 2 s
    p_before = n.filter.covariance[0, 0]
    n.handle("/vel", twist_msg(S + S // 2, 3.0))  # older than filter time (but newer on its key)
    n.tick(2 * S + S // 10)
    assert n.filter.last_measurement_ns == 2 * S
    assert n.filter.covariance[0, 0] <= p_before


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_equal_stamp_ties_pop_in_std_priority_queue_order(tmp_path):
    rng = np.random.default_rng(7)
    stamps = rng.integers(0, 6, size=300)
    ops = []  # push with id, or pop
    for i, stamp in enumerate(stamps):
        ops.append(("push", int(stamp), i))
        if rng.random() < 0.4:
            ops.append(("pop",))
    source = tmp_path / "pq.cpp"
    source.write_text(
        "#include <queue>\n#include <vector>\n#include <cstdio>\n"
        "struct M { long t; int id; };\n"
        "struct Cmp { bool operator()(const M& a, const M& b) const { return a.t > b.t; } };\n"
        "int main(){ std::priority_queue<M, std::vector<M>, Cmp> q; char op; long t; int id;\n"
        ' while (scanf(" %c", &op) == 1) { if (op == \'u\') { scanf("%ld %d", &t, &id); q.push({t, id}); }\n'
        '  else { printf("%d\\n", q.top().id); q.pop(); } }\n'
        ' while (!q.empty()) { printf("%d\\n", q.top().id); q.pop(); } }\n'
    )
    binary = tmp_path / "pq"
    subprocess.run(["g++", "-O1", "-o", str(binary), str(source)], check=True)
    script = "".join(f"u {op[1]} {op[2]}\n" if op[0] == "push" else "o\n" for op in ops)
    expected = [
        int(line)
        for line in subprocess.run(
            [str(binary)], input=script, capture_output=True, text=True, check=True
        ).stdout.split()
    ]
    heap, got = [], []
    for op in ops:
        if op[0] == "push":
            heapq.heappush(heap, Measurement(op[1], str(op[2]), None, None, None))
        else:
            got.append(int(heapq.heappop(heap).topic))
    while heap:
        got.append(int(heapq.heappop(heap).topic))
    assert got == expected


def test_judge_ticks_on_data_clock_and_counts_inputs():
    params = ekf_params_from_dict(TWIST_ONLY, "test.yaml")
    messages = [(k * S // 20 + S, "/vel", twist_msg(k * S // 20 + S, 1.0)) for k in range(40)]
    messages.append((3 * S, "/other", NS()))
    result = Judge(params).run(messages)
    assert result.inputs == {"/vel": 40}
    # 10 Hz ticks from 1.0 s to 3.0 s; each tick sees new data → one publication per tick
    assert result.published == len(result.filtered) == 21
    assert np.all(np.diff(result.filtered.stamp_ns) > 0)
    assert result.filtered.linear_velocity[-1, 0] == pytest.approx(1.0, abs=1e-3)
    assert result.filtered.frame_id == "odom" and result.filtered.child_frame_id == "base_link"
    # bags.BagMessage 4-tuples (recv_ns, topic, msgtype, msg) give the same result
    four = Judge(params).run(
        [(r, t, "geometry_msgs/msg/TwistWithCovarianceStamped", m) for r, t, m in messages]
    )
    assert four.filtered.position.tobytes() == result.filtered.position.tobytes()


def test_wrong_message_type_on_a_configured_topic_is_a_user_error():
    from sim2real_eval.errors import UserError

    params = ekf_params_from_dict(TWIST_ONLY, "test.yaml")
    bad = NS(
        header=NS(stamp=NS(sec=1, nanosec=0), frame_id=""),
        latitude=1.0,
        __msgtype__="sensor_msgs/msg/NavSatFix",
    )
    with pytest.raises(UserError, match="/vel"):
        Judge(params).run([(S, "/vel", bad)])


def test_predict_to_current_time_predicts_after_processing():
    n = node({"predict_to_current_time": True})
    n.handle("/vel", twist_msg(1 * S, 1.0))
    n.tick(S)
    n.handle("/vel", twist_msg(S + S // 10, 1.0))
    odom = n.tick(S + 3 * S // 10)
    assert odom.stamp_ns[0] == S + 3 * S // 10  # processed at 1.1 s, then predicted to the tick time
    assert odom.position[0, 0] == pytest.approx(0.3, abs=0.02)


def test_compiled_queue_pops_ties_in_heapq_order():
    """The compiled queue (filter.heap_push/heap_pop) is heapq's algorithm: the same pops as heapq with
    stamp-only compare (which the test above checks against g++'s std::priority_queue)."""
    from sim2real_eval.judge.filter import heap_pop, heap_push
    from sim2real_eval.judge.state import QUEUE_HEAD, record

    rng = np.random.default_rng(11)
    stamps = np.zeros(400, dtype=np.int64)
    heap_slots = np.zeros(400, dtype=np.int64)
    size = record(QUEUE_HEAD)[0]
    reference, got, expected = [], [], []
    for i, stamp in enumerate(rng.integers(0, 5, size=400)):
        stamps[i] = stamp
        heap_push(heap_slots, stamps, size, i)
        heapq.heappush(reference, Measurement(int(stamp), str(i), None, None, None))
        if rng.random() < 0.4:
            got.append(int(heap_pop(heap_slots, stamps, size)))
            expected.append(int(heapq.heappop(reference).topic))
    while reference:
        got.append(int(heap_pop(heap_slots, stamps, size)))
        expected.append(int(heapq.heappop(reference).topic))
    assert got == expected and size.length == 0


def test_queue_grows_and_keeps_its_order():
    n = node()
    for k in range(40):  # more than the initial pool: it doubles, queued entries keep their slots
        n.handle("/vel", twist_msg((40 - k // 2) * S, 1.0))
    assert len(n.queue_stamps) == 2 and n.dropped["stale_stamp"] == 38  # only the first two pass the gate
    n = node()
    for k in range(40):
        n.handle("/vel", twist_msg((k + 1) * S, float(k)))
    assert sorted(n.queue_stamps) == [(k + 1) * S for k in range(40)]
    odom = n.tick(100 * S)
    assert odom.stamp_ns[0] == 40 * S and not n.queue_stamps
