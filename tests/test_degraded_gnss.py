"""The GNSS-degraded study (docs/demo.md, "GNSS-degraded drives"): the judge through outages and NO_FIX
fixes (robot_localization's navsat_transform ignores NO_FIX and NaN fixes; the EKF only predicts until
the next fix), the ranking comparison (report/degraded.py) on hand values, the study end to end on small
data, and the README/docs regions being the benchmark's record rendered."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.art_judge import art_judge, records
from fixtures.benchmarks import load_benchmark

from sim2real_eval.judge.synthetic import art_like_samples
from sim2real_eval.metrics.judge_agreement import kendall_tau
from sim2real_eval.models import samples as S
from sim2real_eval.report.degraded import Ranking, flipped_pairs, verdict

REPO = Path(__file__).resolve().parents[1]
NS = 1_000_000_000


# ------------------------------------------------------------------------------ the judge in a gap
def test_judge_predicts_through_an_outage_and_ignores_no_fix_fixes():
    """A 6-s outage published as NO_FIX and the same outage with no fix published give the same
    estimate (navsat_transform drops NO_FIX fixes in its fix callback), no /odometry/gps inside the gap
    (it publishes only for a new fix), and /odometry/filtered at its full rate through the gap."""
    imu, gps = art_like_samples(duration=20.0, seed=3, gps_sigma=0.3)
    t = gps.stamp_ns / NS - 10.0
    gap = (t >= 8.0) & (t < 14.0)
    no_fix = gps.select(np.arange(len(gps)))
    no_fix.status[gap] = S.STATUS_NO_FIX
    with_no_fix = art_judge().run(records(imu, no_fix))
    dropped = art_judge().run(records(imu, gps.select(~gap)))
    assert with_no_fix.dropped["navsat_unusable_fix"] == gap.sum() == 60
    np.testing.assert_array_equal(with_no_fix.filtered.stamp_ns, dropped.filtered.stamp_ns)
    np.testing.assert_array_equal(with_no_fix.filtered.position, dropped.filtered.position)
    odom_t = with_no_fix.gps_odometry.stamp_ns / NS - 10.0
    assert not ((odom_t > 8.2) & (odom_t < 14.0)).any()
    filtered_t = with_no_fix.filtered.stamp_ns / NS - 10.0
    in_gap = ((filtered_t >= 8.0) & (filtered_t < 14.0)).sum()
    assert in_gap >= 0.95 * 6.0 * 30.0  # ART's ekf frequency 30 Hz: it keeps predicting
    assert np.isfinite(with_no_fix.filtered.position).all()
    clean = art_judge().run(records(imu, gps))
    assert not np.array_equal(clean.filtered.position, with_no_fix.filtered.position)
    # nmea_navsat_driver's outage message: NO_FIX with empty (NaN) position fields — the same gap
    nmea = no_fix.select(np.arange(len(no_fix)))
    nmea.latitude[gap], nmea.longitude[gap], nmea.altitude[gap] = np.nan, np.nan, np.nan
    np.testing.assert_array_equal(art_judge().run(records(imu, nmea)).filtered.position,
                                  with_no_fix.filtered.position)


def test_judge_drops_only_status_no_fix_like_upstream():
    """gpsFixCallback's test is status != STATUS_NO_FIX (not status < FIX): a degraded status (FIX,
    SBAS_FIX) and even an out-of-range −2 are used; only −1 is dropped."""
    imu, gps = art_like_samples(duration=6.0, seed=4)
    base = art_judge().run(records(imu, gps))
    for status, dropped in ((S.STATUS_FIX, 0), (S.STATUS_SBAS_FIX, 0), (-2, 0), (S.STATUS_NO_FIX, 5)):
        marked = gps.select(np.arange(len(gps)))
        marked.status[20:25] = status
        result = art_judge().run(records(imu, marked))
        assert result.dropped.get("navsat_unusable_fix", 0) == dropped, status
        if dropped == 0:
            np.testing.assert_array_equal(result.filtered.position, base.filtered.position)


# --------------------------------------------------------------------------- ranking comparison
def test_ranking_comparison_by_hand():
    normal = Ranking({"a": 0.1, "b": 0.2, "c": 0.3}, {"a": "a", "b": "b", "c": "c"})
    degraded = Ranking({"a": 0.5, "b": 0.2, "c": 0.3}, {"a": "a_urban", "b": "b_urban", "c": "c_urban"})
    assert normal.order == ["a", "b", "c"] and degraded.order == ["b", "c", "a"]
    assert flipped_pairs(normal, degraded) == [("a", "b"), ("a", "c")]
    # 1 concordant pair (b, c), 2 discordant: τ = (1 − 2)/3
    assert kendall_tau(normal.vepd, degraded.vepd) == pytest.approx(-1.0 / 3.0)
    assert kendall_tau(normal.vepd, normal.vepd) == pytest.approx(1.0)
    assert flipped_pairs(normal, normal) == []
    flip = {"pair": ["a", "b"], "separable_normal": True, "separable_degraded": False}
    assert verdict([]) == "unchanged"
    assert verdict([flip]) == "not separable"
    assert verdict([flip, {**flip, "separable_degraded": True}]) == "changes"


def test_feature_ahead_by_hand():
    """Every model with the feature ahead of every model without it, or not (no result needed when
    it is not: separability is only asked across a clean line)."""
    from sim2real_eval.report.degraded import feature_ahead

    rank = Ranking({"a": 0.1, "b": 0.2, "c": 0.3}, {"a": "a", "b": "b", "c": "c"})
    neither = {"ahead": False, "separable": False}
    assert feature_ahead(None, rank, {"a": True, "b": False, "c": True}) == neither
    assert feature_ahead(None, rank, {"a": True, "b": True, "c": True}) == neither


# --------------------------------------------------------------------------------- end to end
BLOCK = """\
schedule:
  - {start: 1.5, end: 2.5, kind: outage}
multipath: {rate: 0.5, duration: [0.5, 1.0], magnitude: [1.0, 2.0]}
reporting: {status: fix, std_scale: 50.0, reacquisition: 0.5}
"""


@pytest.mark.slow
def test_degraded_study_end_to_end_on_small_data(tmp_path):
    """The small demo study with a normal and a degraded reference receiver, compared like the
    benchmark compares the shipped ones; the degraded real runs hold the scheduled outage as NO_FIX."""
    from test_demo_quick import small_demo_config

    from sim2real_eval import reference as ref
    from sim2real_eval.cli import main
    from sim2real_eval.report.degraded import compare

    benchmark = load_benchmark("degraded_gnss")
    models = ("ch_gauss_airsim", "airsim")
    normal_config = small_demo_config(tmp_path, gps=list(models), name="normal.yaml")
    (tmp_path / "block.yaml").write_text(BLOCK)
    setup = (tmp_path / "small_reference.yaml").read_text()
    old = "  model: reference_rtk "
    assert old in setup
    (tmp_path / "urban_reference.yaml").write_text(
        setup.replace(old, f"  model: {{preset: reference_rtk, degradation: {tmp_path / 'block.yaml'}}} "))
    degraded_config = tmp_path / "degraded.yaml"
    degraded_config.write_text(
        normal_config.read_text()
        .replace("reference: small_reference.yaml", "reference: urban_reference.yaml")
        .replace("gps: [ch_gauss_airsim, airsim]",
                 "gps: [ch_gauss_airsim, airsim, ch_gauss_airsim_urban, airsim_urban]"))
    results = {}
    for name, config in (("normal", normal_config), ("degraded", degraded_config)):
        out = tmp_path / name
        assert main(["demo", "--quick", "--config", str(config), "--out", str(out), "--workers", "2",
                     "--no-progress", "--no-noise-floor"]) == 0
        results[name] = benchmark._study(out)[0]
    real = ref.load_setup(tmp_path / "urban_reference.yaml")
    fixes, _ = ref._reference_gps(real, ref.reference_truth(real, "line", 0), lambda s: _seed(real, s))
    assert (fixes.status == S.STATUS_NO_FIX).sum() >= 8
    record = compare(results["normal"], results["degraded"], models,
                     feature=benchmark.reports_covariance(models))
    assert set(record["modelled"]["feature_ahead"]) == {"ahead", "separable"}
    assert set(record["modelled"]["vepd"]) == set(models) == set(record["normal"]["vepd"])
    assert -1.0 <= record["modelled"]["kendall_tau"] <= 1.0
    assert record["modelled"]["verdict"] in ("changes", "not separable", "unchanged")
    record.update(k={"normal": 2, "degraded": 2}, measured="now", wall_s={"normal": 1.0, "degraded": 2.0})
    benchmark.MODELS, benchmark.LABELS = models, {m: m for m in models}
    text = benchmark.render(record)["demo-degraded-gnss"]
    assert "| ch_gauss_airsim |" in text and "Kendall's τ" in text


def _seed(setup, stream):
    from sim2real_eval.models import sensor_seed

    return sensor_seed(setup.seed, "reference", "line", 0, stream)


# ------------------------------------------------------------------------------ the docs' numbers
def test_readme_and_docs_regions_are_the_record_rendered():
    """README.md's readme-degraded-gnss and docs/demo.md's demo-degraded-gnss are
    benchmarks/degraded_gnss.json rendered (`python benchmarks/degraded_gnss.py` rewrites both)."""
    benchmark = load_benchmark("degraded_gnss")
    numbers = load_benchmark("make_readme_numbers")
    blocks = benchmark.render(json.loads(benchmark.RECORD.read_text()))
    found = {}
    for path in numbers.FILES.values():
        found.update(numbers.regions(path.read_text(encoding="utf-8")))
    for name, text in blocks.items():
        assert found.get(name) == text, f"{name} is not benchmarks/degraded_gnss.json rendered"
