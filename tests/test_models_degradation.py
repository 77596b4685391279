"""The GNSS degradation layer (models/degradation.py, docs/models.md "GNSS degradation"): hand values,
the statistics of outages, multipath jumps and degraded reporting, same seed → same bytes, streaming =
batch, errors naming file and key, and the synthetic reference's receiver degrading as the sim side does."""
from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval import scenarios
from sim2real_eval.errors import UserError
from sim2real_eval.models import load_gps_model, sensor_seed
from sim2real_eval.models import samples as S
from sim2real_eval.models.degradation import (
    Degradation,
    log_uniform,
    log_uniform_mean,
    multipath_offset,
    onset_probability,
)
from sim2real_eval.yamlio import Section

REPO = Path(__file__).resolve().parents[1]
DT = 0.1


@pytest.fixture(scope="module")
def truth():
    data, source, _ = scenarios.load_scenario("line")
    return scenarios.simulate(data, source, sensor_seed(1, "truth"))


def layer(block: dict, seed: int = 0) -> Degradation:
    return Degradation(Section(block, "test block"), np.random.SeedSequence(seed))


def run_layer(block: dict, seconds: float, seed: int = 0):
    n = int(round(seconds / DT))
    return layer(block, seed).apply(np.full(n, DT), np.arange(n) * DT)


def runs_of(mask: np.ndarray) -> list:
    """Lengths (samples) of the runs of True in ``mask``."""
    padded = np.concatenate([[False], mask, [False]]).astype(int)
    edges = np.flatnonzero(np.diff(padded))
    return list(edges[1::2] - edges[0::2])


# ------------------------------------------------------------------------------------ hand values
def test_hand_values():
    assert log_uniform(0.0, 2.0, 20.0) == pytest.approx(2.0)
    assert log_uniform(0.5, 1.0, 100.0) == pytest.approx(10.0)
    assert log_uniform_mean(1.0, math.e) == pytest.approx(math.e - 1.0)
    assert log_uniform_mean(3.0, 3.0) == 3.0
    assert onset_probability(0.1, np.array([0.1]))[0] == pytest.approx(1.0 - math.exp(-0.01))
    u, offset = multipath_offset((0.5, 0.5, 0.25, 1.0), (1.0, 3.0), 2.0)  # size 2, north, up = 2·2·1
    assert u == 0.5
    np.testing.assert_allclose(offset, [0.0, 2.0, 4.0], atol=1e-12)


def test_schedule_on_a_model_by_hand(truth):
    """Scheduled windows on the fix clock: status, position offset, covariance ×k², re-acquisition."""
    block = {"schedule": [{"start": 1.0, "end": 2.0, "kind": "outage"},
                          {"start": 3.0, "end": 4.0, "kind": "multipath", "offset": [2.0, 0.0, 0.0]},
                          {"start": 5.0, "end": 6.0, "kind": "degraded"}],
             "reporting": {"status": "fix", "std_scale": 10.0, "reacquisition": 0.5}}
    spec = {"preset": "ideal", "status": "gbas_fix",
            "covariance": {"model": "diagonal", "sigma": [0.1, 0.1, 0.2]}}
    fixes = load_gps_model(spec, 0).sample(truth)
    degraded = load_gps_model({**spec, "degradation": block}, 0).sample(truth)
    t = (fixes.stamp_ns - fixes.stamp_ns[0]) / 1e9
    outage = (t >= 1.0 - 1e-9) & (t < 2.0 - 1e-9)
    reacquiring = (t >= 2.0 - 1e-9) & (t < 2.5 - 1e-9)
    jump = (t >= 3.0 - 1e-9) & (t < 4.0 - 1e-9)
    window = (t >= 5.0 - 1e-9) & (t < 6.0 - 1e-9)
    low = reacquiring | jump | window
    assert outage.sum() == 10 and reacquiring.sum() == 5 and jump.sum() == 10
    np.testing.assert_array_equal(degraded.status[outage], S.STATUS_NO_FIX)
    np.testing.assert_array_equal(degraded.status[low], S.STATUS_FIX)
    np.testing.assert_array_equal(degraded.status[~outage & ~low], S.STATUS_GBAS_FIX)
    np.testing.assert_allclose(degraded.position_covariance[low][:, [0, 4, 8]], [[1.0, 1.0, 4.0]] * low.sum())
    np.testing.assert_array_equal(degraded.position_covariance[~low], fixes.position_covariance[~low])
    np.testing.assert_allclose(degraded.enu_error[jump], [[2.0, 0.0, 0.0]] * 10, atol=1e-9)
    np.testing.assert_array_equal(degraded.enu_error[~jump], 0.0)
    assert np.abs(degraded.latitude[~jump] - fixes.latitude[~jump]).max() == 0.0
    dropped = load_gps_model({**spec, "degradation": {**block, "outage_mode": "drop"}}, 0).sample(truth)
    assert len(dropped) == len(fixes) - 10


# ------------------------------------------------------------------------------------ statistics
def test_outage_fraction_and_durations():
    """An alternating renewal process: up time ~ Exp(rate), down time ~ log-uniform [min, max]."""
    rate, low, high = 0.05, 2.0, 20.0
    effect = run_layer({"outages": {"rate": rate, "duration": [low, high]}}, 40_000.0, seed=3)
    mean_down = log_uniform_mean(low, high)
    mean_up = DT / onset_probability(rate, np.array([DT]))[0] - DT / 2  # geometric on the fix grid
    expected = mean_down / (mean_down + mean_up)
    assert effect.outage.mean() == pytest.approx(expected, rel=0.06)
    lengths = np.array(runs_of(effect.outage)) * DT
    assert lengths.min() >= low - DT
    assert np.median(lengths) == pytest.approx(math.sqrt(low * high), rel=0.15)  # log-uniform median
    assert not effect.degraded.any() and not effect.offset.any()


def test_multipath_rate_and_magnitude():
    rate, low, high, vertical = 0.1, 0.5, 3.0, 1.5
    block = {"multipath": {"rate": rate, "duration": [1.0, 4.0], "magnitude": [low, high],
                           "vertical": vertical, "reported": False}}
    effect = run_layer(block, 40_000.0, seed=4)
    moving = np.abs(effect.offset).sum(axis=1) > 0
    changed = np.diff(np.concatenate([[0.0], effect.offset[:, 0]])) != 0
    onsets = np.flatnonzero(changed & moving)  # an episode starts (back-to-back ones included)
    free_time = ((~moving).sum() + len(onsets)) * DT  # the fixes at which an onset was drawn
    assert len(onsets) / free_time == pytest.approx(rate, rel=0.08)
    horizontal = np.hypot(effect.offset[onsets, 0], effect.offset[onsets, 1])
    assert horizontal.min() >= low and horizontal.max() <= high
    assert horizontal.mean() == pytest.approx((low + high) / 2, rel=0.05)
    assert horizontal.var() == pytest.approx((high - low) ** 2 / 12, rel=0.12)
    up_ratio = effect.offset[onsets, 2] / horizontal
    assert np.abs(up_ratio).max() <= vertical
    assert up_ratio.std() == pytest.approx(vertical / math.sqrt(3), rel=0.1)
    assert not effect.degraded.any()  # reported: false
    reported = run_layer({"multipath": {**block["multipath"], "reported": True}}, 40_000.0, seed=4)
    np.testing.assert_array_equal(reported.degraded, moving)


def test_degraded_covariance_and_status_on_a_model(truth):
    """During degraded fixes the model reports the degraded status and std × k (variances × k²)."""
    block = {"multipath": {"rate": 0.3, "duration": [1.0, 2.0], "magnitude": [1.0, 2.0]},
             "reporting": {"status": "sbas_fix", "std_scale": 30.0}}
    fixes = load_gps_model("ch_gauss_airsim", 5, degradation=block).sample(truth)
    plain = load_gps_model("ch_gauss_airsim", 5).sample(truth)
    low = fixes.status == S.STATUS_SBAS_FIX
    assert 0 < low.sum() < len(fixes)
    np.testing.assert_allclose(fixes.position_covariance[low], 900.0 * plain.position_covariance[low])
    np.testing.assert_array_equal(fixes.position_covariance[~low], plain.position_covariance[~low])
    offset = fixes.enu_error - plain.enu_error
    np.testing.assert_array_equal(np.abs(offset).sum(axis=1) > 1e-9, low)


@settings(max_examples=25, deadline=None)
@given(rate=st.floats(0.01, 1.0), low=st.floats(0.2, 5.0), spread=st.floats(1.0, 10.0),
       size=st.floats(0.0, 5.0), vertical=st.floats(0.0, 2.0), seed=st.integers(0, 2**32 - 1))
def test_property_invariants_and_streaming(rate, low, spread, size, vertical, seed):
    """For any parameters: outage runs last at least min; multipath offsets inside their bounds and
    constant within an episode; never degraded during an outage; one fix at a time = all at once."""
    block = {"outages": {"rate": rate, "duration": [low, low * spread]},
             "multipath": {"rate": rate, "duration": [low, low * spread], "magnitude": [size, 2 * size],
                           "vertical": vertical},
             "reporting": {"reacquisition": low}}
    n = 600
    dt, t = np.full(n, DT), np.arange(n) * DT
    batch = layer(block, seed).apply(dt, t)
    assert not (batch.outage & batch.degraded).any()
    finished = runs_of(batch.outage)[:-1] if batch.outage[-1] else runs_of(batch.outage)
    assert all(length * DT >= low - DT - 1e-9 for length in finished)
    horizontal = np.hypot(batch.offset[:, 0], batch.offset[:, 1])
    moving = horizontal > 0
    assert (horizontal[moving] >= size - 1e-9).all() and (horizontal <= 2 * size + 1e-9).all()
    assert (np.abs(batch.offset[:, 2]) <= vertical * horizontal + 1e-9).all()
    streaming = layer(block, seed)
    parts = [streaming.apply(dt[k:k + 1], t[k:k + 1]) for k in range(n)]
    np.testing.assert_array_equal(np.concatenate([p.offset for p in parts]), batch.offset)
    np.testing.assert_array_equal(np.concatenate([p.outage for p in parts]), batch.outage)
    np.testing.assert_array_equal(np.concatenate([p.degraded for p in parts]), batch.degraded)


# ------------------------------------------------------------------------------- reproducibility
def _bytes(fixes) -> bytes:
    return b"".join(np.ascontiguousarray(v).tobytes() for v in fixes.as_dict().values())


def test_same_seed_same_bytes_and_step_equals_sample(truth):
    seed = sensor_seed(9, "ch_rw_urban", "line", 0, "gps")
    first = load_gps_model("ch_rw_urban", seed).sample(truth)
    assert _bytes(first) == _bytes(load_gps_model("ch_rw_urban", seed).sample(truth))
    assert _bytes(first) != _bytes(load_gps_model("ch_rw_urban", sensor_seed(10, "x")).sample(truth))
    model = load_gps_model("ch_rw_urban", seed)
    stamps = model.default_stamps(truth)
    stepped = [model.step(int(s), truth.interpolate(np.array([s / 1e9]))) for s in stamps]
    joined = S.GpsSamples.concatenate([p for p in stepped if len(p)])
    assert _bytes(joined) == _bytes(first)


def test_no_event_block_leaves_the_fixes_unchanged(truth):
    """The layer draws from its own child stream: with no event the fixes are the model's own bytes,
    and without the key run.yaml's parameters stay as before."""
    plain = load_gps_model("ch_rw", 4)
    assert "degradation" not in plain.parameters
    quiet = load_gps_model("ch_rw", 4, degradation={"outages": {"rate": 0.0}})
    assert _bytes(quiet.sample(truth)) == _bytes(plain.sample(truth))
    assert quiet.parameters["degradation"]["outages"]["rate"] == 0.0


def test_the_named_block_and_the_urban_presets():
    model = load_gps_model("airsim_urban", 0)
    assert model.degradation.params["schedule"] == [{"start": 12.0, "end": 20.0, "kind": "outage"}]
    assert model.covariance.params["model"] == "hdop"  # the preset it starts from


@pytest.mark.parametrize("block, message", [
    ("nowhere", r"degradation: unknown block 'nowhere'; expected one of urban_canyon"),
    ({"outages": {"rate": 0.1}}, r"outages.duration: missing key"),
    ({"outages": {"rate": 0.1, "duration": [5, 2]}}, r"outages.duration: expected \[min, max\]"),
    ({"schedule": [{"start": 3, "end": 1, "kind": "outage"}]}, r"schedule\[0\].end: must be after start"),
    ({"schedule": [{"start": 1, "end": 3, "kind": "multipath"}]}, r"schedule\[0\].offset: missing key"),
    ({"schedule": [{"start": 1, "end": 3, "kind": "tunnel"}]}, r"schedule\[0\].kind: unknown value"),
    ({"reporting": {"std_scale": 0}}, r"reporting.std_scale: must be > 0"),
    ({"multipath": {"rate": 1, "duration": [1, 2], "size": 3}}, r"multipath: unknown key\(s\) size"),
])
def test_bad_blocks_are_one_line_errors(block, message):
    with pytest.raises(UserError, match=message):
        load_gps_model("ch_gauss", 0, degradation=block)


# ------------------------------------------------------------------- the reference's real side
def test_reference_receiver_degrades_like_the_sim_side():
    """demo_reference_urban.yaml: the real side's scheduled outage falls at the same time since the first
    fix as a *_urban sim variant's on the same drive; the normal reference is untouched."""
    from sim2real_eval import reference as ref

    setup = ref.load_setup(REPO / "config" / "studies" / "demo_reference_urban.yaml")
    normal = ref.load_setup(REPO / "config" / "studies" / "demo_reference.yaml")
    truth = ref.reference_truth(setup, "line", 0)

    def seed(stream):
        return sensor_seed(setup.seed, "reference", "line", 0, stream)

    real, _ = ref._reference_gps(setup, truth, seed)
    plain, _ = ref._reference_gps(normal, truth, seed)
    sim = load_gps_model("ch_rw_urban", sensor_seed(1, "sim")).sample(truth)
    for fixes in (real, sim):  # the real stamps are later than the epochs by a jittered 45 ms latency
        t = fixes.stamp_ns / 1e9 - truth.t[0]
        inside = (t > 12.3) & (t < 19.7)
        assert inside.sum() >= 70
        assert (fixes.status[inside] == S.STATUS_NO_FIX).all()
    assert (plain.status == S.STATUS_GBAS_FIX).all()
    np.testing.assert_array_equal(real.stamp_ns, plain.stamp_ns)  # same drive, same clock


@pytest.mark.skipif(shutil.which("vermin") is None, reason="vermin is not installed")
def test_robot_side_files_run_on_python_38():
    files = [REPO / "src" / "sim2real_eval" / "models" / name for name in ("degradation.py", "gps.py")]
    done = subprocess.run(["vermin", "-t=3.8-", "--no-tips", "--violations", *map(str, files)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_docs_claim_circle_run_1_loses_its_fix_for_good():
    """docs/demo.md, "GNSS-degraded drives": the degraded reference's circle run 1 has no usable fix from
    5.5 s (since its truth starts) to its end — random outages joining the scheduled one."""
    from sim2real_eval import reference as ref

    setup = ref.load_setup(REPO / "config" / "studies" / "demo_reference_urban.yaml")
    truth = ref.reference_truth(setup, "circle", 1)
    fixes, _ = ref._reference_gps(setup, truth,
                                  lambda stream: sensor_seed(setup.seed, "reference", "circle", 1, stream))
    t = fixes.stamp_ns / 1e9 - truth.t[0]
    lost = fixes.status == S.STATUS_NO_FIX
    assert not lost[t < 5.4].any() and lost[t > 5.6].all()
