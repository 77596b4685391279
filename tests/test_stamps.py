"""stamps: ns <-> (sec, nanosec) <-> seconds, checked against hand-computed values."""
from types import SimpleNamespace

import numpy as np

from sim2real_eval import stamps


def test_from_ns_keeps_nanosec_in_range_for_negative_stamps():
    assert stamps.from_ns(1_500_000_000) == (1, 500_000_000)
    assert stamps.from_ns(-1) == (-1, 999_999_999)
    assert stamps.to_ns(*stamps.from_ns(-1)) == -1


def test_stamp_and_header_conversions():
    stamp = SimpleNamespace(sec=12, nanosec=345)
    assert stamps.stamp_to_ns(stamp) == 12_000_000_345
    assert stamps.header_ns(SimpleNamespace(header=SimpleNamespace(stamp=stamp))) == 12_000_000_345
    assert stamps.stamp_seconds(stamp) == 12.0 + 345e-9


def test_seconds_round_to_nearest_ns():
    out = stamps.seconds_to_ns([0.1, 1.0000000004, 1.0000000006])
    assert out.dtype == np.int64
    assert out.tolist() == [100_000_000, 1_000_000_000, 1_000_000_001]
    assert stamps.ns_to_seconds(np.array([1_500_000_000])).tolist() == [1.5]


def test_array_split_join_and_stamp_seconds():
    sec, nanosec = stamps.split_ns([-1, 0, 1_707_000_000_123_456_789])
    assert sec.tolist() == [-1, 0, 1_707_000_000] and nanosec.tolist() == [999_999_999, 0, 123_456_789]
    assert stamps.join_ns(sec, nanosec).tolist() == [-1, 0, 1_707_000_000_123_456_789]
    assert stamps.join_ns(sec, nanosec).dtype == np.int64
    ns = [12_000_000_345, 1_707_000_000_123_456_789]
    assert stamps.ns_to_stamp_seconds(ns).tolist() == [
        stamps.stamp_seconds(SimpleNamespace(sec=s // 10**9, nanosec=s % 10**9)) for s in ns]
