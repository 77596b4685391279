"""write_report with figure workers: the same files, byte for byte, as drawing them in one process."""
from __future__ import annotations

import numpy as np

from sim2real_eval.metrics import RunRecord, RunScore, ScoreOptions, score_study
from sim2real_eval.metrics.inputs import RunSeries, RunSpec
from sim2real_eval.report import write_report


def _study():
    rng = np.random.default_rng(5)
    records, series = [], {}
    t_gt = np.arange(0.0, 6.0, 0.02)
    v_gt = np.clip(t_gt - 1.0, 0.0, 1.0)
    t_est = np.arange(0.0, 6.0, 1 / 35)
    for side, variant, spread in (("real", "real", 0.02), ("sim", "gauss", 0.05), ("sim", "walk", 0.03)):
        for scenario in ("line", "sine"):
            for k in range(3):
                score = RunScore(0.05 + spread * rng.random(), 0.4, 0.3, 0.1 + spread * rng.random())
                records.append(RunRecord(side, variant, scenario, k, f"{variant}/{scenario}/{k}", score))
                v_est = np.interp(t_est, t_gt, v_gt) + spread * rng.standard_normal(len(t_est))
                spec = RunSpec(side, variant, scenario, k, f"{variant}/{scenario}/{k}", "bag")
                series[spec.key] = RunSeries(spec, t_est, v_est, t_gt, v_gt)
    return score_study(records, ScoreOptions(bootstrap=20, permutations=20)), series


def test_parallel_figures_give_the_same_report(tmp_path):
    result, series = _study()
    serial = write_report(tmp_path / "serial", result, series, "study")
    parallel = write_report(tmp_path / "parallel", result, series, "study", workers=2)
    files = sorted(p.relative_to(serial) for p in serial.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(parallel) for p in parallel.rglob("*") if p.is_file())
    # distributions, overview and one trace figure per scenario
    assert sorted(str(p) for p in files if p.suffix == ".png") == [
        "figures/distributions.png", "figures/overview.png", "figures/traces_line_0.png",
        "figures/traces_sine_0.png"]
    for name in files:
        assert (serial / name).read_bytes() == (parallel / name).read_bytes(), name
