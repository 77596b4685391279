"""GroundTruth.interpolate (the pipeline samples every sensor and /ground_truth/odom through it):
hand-computed values, and agreement with the plain formula (lerp + rotations.slerp) to 1e-12."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import rotations
from sim2real_eval.errors import UserError
from sim2real_eval.truth import FIELDS, GroundTruth


def reference(truth: GroundTruth, times) -> dict:
    """The defining formula, row by row: x[i] + (x[i+1] − x[i])·f and rotations.slerp."""
    times = np.asarray(times, dtype=float)
    hi = np.clip(np.searchsorted(truth.t, times, side="right"), 1, len(truth) - 1)
    lo = hi - 1
    f = np.clip((times - truth.t[lo]) / (truth.t[hi] - truth.t[lo]), 0.0, 1.0)
    out = {"t": times, "orientation": rotations.slerp(truth.orientation[lo], truth.orientation[hi], f)}
    for name in ("position", "velocity", "angular_velocity", "specific_force"):
        x = getattr(truth, name)
        out[name] = x[lo] + (x[hi] - x[lo]) * f[:, None]
    return out


def test_interpolate_by_hand():
    q0 = [0.0, 0.0, 0.0, 1.0]
    q1 = [0.0, 0.0, math.sin(0.5), math.cos(0.5)]          # yaw 1 rad
    q2 = [0.0, 0.0, -math.sin(0.5), -math.cos(0.5)]        # the same rotation, other sign
    truth = GroundTruth(t=[10.0, 12.0, 13.0], position=[[0, 0, 0], [2, 4, 0], [2, 4, 0]],
                        orientation=[q0, q1, q2], velocity=np.zeros((3, 3)),
                        angular_velocity=[[0, 0, 0.5], [0, 0, 1.5], [0, 0, 1.5]],
                        specific_force=np.tile([0, 0, 9.8], (3, 1)))
    got = truth.interpolate([10.0, 10.5, 12.0, 12.5, 13.0])
    assert np.allclose(got.position[:, :2], [[0, 0], [0.5, 1.0], [2, 4], [2, 4], [2, 4]], atol=1e-15)
    assert np.allclose(got.angular_velocity[:, 2], [0.5, 0.75, 1.5, 1.5, 1.5], atol=1e-15)
    yaw = rotations.yaw_of(got.orientation)
    assert np.allclose(yaw, [0.0, 0.25, 1.0, 1.0, 1.0], atol=1e-15)   # short way round across the sign flip
    with pytest.raises(UserError, match="outside the truth span"):
        truth.interpolate([9.0])


QUATERNION = st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: sum(v * v for v in q) > 0.01)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.floats(1e-4, 1.0), min_size=1, max_size=12), quats=st.data(),
       offset=st.sampled_from([0.0, 1.7e9]), fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_interpolate_matches_the_plain_formula(steps, quats, offset, fractions):
    n = len(steps) + 1
    t = offset + 10.0 + np.concatenate([[0.0], np.cumsum(steps)])
    if np.any(np.diff(t) <= 0):
        return  # steps lost below the resolution of epoch-scale times
    q = np.array([quats.draw(QUATERNION) for _ in range(n)])
    if n > 2:
        q[2] = -q[1] * (1 + 1e-12)    # near-zero angle with a sign flip: the lerp branch
    rng = np.random.default_rng(n)
    truth = GroundTruth(t, rng.normal(size=(n, 3)), q, rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
                        rng.normal(size=(n, 3)))
    times = t[0] + np.array(fractions) * (t[-1] - t[0])
    times = np.concatenate([np.clip(times, t[0], t[-1]), t])
    first = truth.interpolate(times)
    again = truth.interpolate(times[::-1])      # second call: cached per-interval tables
    expected = reference(truth, times)
    for name in FIELDS:
        assert np.allclose(getattr(first, name), expected[name], rtol=0, atol=1e-12), name
        assert np.array_equal(getattr(again, name)[::-1], getattr(first, name)), name
