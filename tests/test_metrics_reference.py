"""The scorer against an independent, deliberately plain re-implementation of the reference algorithm
(computeEPD.py as described in ../shared/spec/vepd.md), on generated CSVs in the authors' layout.

Nothing here calls sim2real_eval.metrics: the CSV parsing, zero-drop quirk, timeline, moving average,
interpolation, DFT, Wiener entropy, Wasserstein-1 and ranks are all written out below.
"""
from __future__ import annotations

import bisect
import csv
import json
import math

import numpy as np
import pytest

from sim2real_eval.cli import main

SCENARIOS = ("circle", "line", "sine")


# ---------------------------------------------------------------------------------------------
# Data generator (shared with the other score tests)

def _profile(scenario: str, t: np.ndarray) -> np.ndarray:
    ramp = 1.0 - np.exp(-t / 1.5)          # exactly 0 at t = 0 (dropped by the quirk with the time 0)
    if scenario == "rest":
        return 0.0 * t
    if scenario == "line":
        return 2.0 * ramp
    if scenario == "circle":
        return 1.6 * ramp + 0.05 * np.sin(0.3 * t)
    return 1.8 * ramp + 0.25 * np.sin(0.8 * t) * ramp


def write_run_csv(path, scenario: str, noise: float, rng, duration: float = 12.0, bias: float = 0.0):
    """One run: truth at 50 Hz from t = 0, estimate at ~35 Hz (jittered), truth column zero-padded."""
    t_gt = np.arange(0.0, duration, 0.02)
    v_gt = _profile(scenario, t_gt)
    t_se = np.cumsum(rng.uniform(0.025, 0.032, int(duration * 40))) + 0.01
    t_se = t_se[t_se < duration + 0.4]
    v_se = np.interp(t_se, t_gt, v_gt) + bias + noise * rng.standard_normal(len(t_se))
    v_se += 0.5 * noise * np.sin(2 * np.pi * rng.uniform(0.5, 3.0) * t_se)
    rows = max(len(t_se), len(t_gt))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["se_time", "gt_time", "se_vel", "gt_vel"])
        for i in range(rows):
            writer.writerow([
                repr(float(t_se[i])) if i < len(t_se) else "",
                repr(float(t_gt[i])) if i < len(t_gt) else "0.0",
                repr(float(v_se[i])) if i < len(v_se) else "",
                repr(float(v_gt[i])) if i < len(v_gt) else "0.0",
            ])


def write_csv_study(root, variants=None, runs: int = 3, seed: int = 7, scenarios=SCENARIOS,
                    with_rest: bool = True, duration: float = 12.0):
    """Reference layout root/Real/<scenario>_<k>.csv, root/Sim/<variant>/<scenario>_<k>.csv."""
    variants = variants or {"gauss": 0.10, "walk": 0.05, "airsim": 0.03}
    rng = np.random.default_rng(seed)
    scenario_list = list(scenarios) + (["rest"] if with_rest else [])
    for scenario in scenario_list:
        if scenario == "rest":
            continue
        for k in range(1, runs + 1):
            write_run_csv(root / "Real" / f"{scenario}_{k}.csv", scenario, 0.04, rng, duration)
            for variant, noise in variants.items():
                write_run_csv(root / "Sim" / variant / f"{scenario}_{k}.csv", scenario, noise, rng, duration)
    if with_rest:
        # A rest run whose zero speeds would break the reference: it must be excluded by default.
        for folder in [root / "Real", *[root / "Sim" / v for v in variants]]:
            (folder / "rest_1.csv").write_text("se_time,gt_time,se_vel,gt_vel\n0.1,0.0,0.0,0.0\n")
    return root


# ---------------------------------------------------------------------------------------------
# Independent reference implementation

def ref_extract(path):
    with open(path, newline="") as stream:
        reader = csv.DictReader(stream)
        rows = list(reader)
    def col(name):
        return [float(r[name]) for r in rows if r[name] != ""]
    se_time, se_vel = col("se_time"), col("se_vel")
    gt_time = [x for x in col("gt_time") if x != 0.0]
    gt_vel = [x for x in col("gt_vel") if x != 0.0]
    return se_time, gt_time, se_vel, gt_vel


def ref_interp(x, xp, fp):
    out = []
    for xi in x:
        if xi <= xp[0]:
            out.append(fp[0])
        elif xi >= xp[-1]:
            out.append(fp[-1])
        else:
            j = bisect.bisect_right(xp, xi)
            x0, x1, y0, y1 = xp[j - 1], xp[j], fp[j - 1], fp[j]
            out.append(y0 + (xi - x0) * (y1 - y0) / (x1 - x0))
    return out


def ref_flatness(x):
    # DFT written out: X_k = sum_m x_m exp(-2 pi i k m / n), as an explicit matrix product
    n = len(x)
    k = np.arange(n)
    mags = np.abs(np.exp(-2j * np.pi * np.outer(k, k) / n) @ np.asarray(x)).tolist()
    geo = math.exp(sum(math.log(m + 1e-10) for m in mags) / n)
    return geo / (sum(mags) / n)


def ref_run(path):
    se_time, gt_time, se_vel, gt_vel = ref_extract(path)
    stop = min(gt_time[-1], se_time[-1])
    step = 1 / 15
    t = [i * step for i in range(math.ceil(stop / step))]
    gt = ref_interp(t, gt_time, gt_vel)
    se_vel_s = [(se_vel[i] + se_vel[i + 1]) / 2 for i in range(len(se_vel) - 1)]
    se_time_s = [(se_time[i] + se_time[i + 1]) / 2 for i in range(len(se_time) - 1)]
    se = ref_interp(t, se_time_s, se_vel_s)
    e = math.sqrt(sum((g - s) ** 2 for g, s in zip(gt, se)) / len(t))
    d = abs(ref_flatness(se) - ref_flatness(gt))
    return e, d


def ref_w1(a, b):
    """Integral of |F_a - F_b| over the line, from the sorted union of sample points."""
    a, b = sorted(a), sorted(b)
    points = sorted(a + b)
    total = 0.0
    for left, right in zip(points[:-1], points[1:]):
        fa = bisect.bisect_right(a, left) / len(a)
        fb = bisect.bisect_right(b, left) / len(b)
        total += abs(fa - fb) * (right - left)
    return total


def ref_ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def ref_study(root, variants, scenarios, runs):
    real = {s: [ref_run(root / "Real" / f"{s}_{k}.csv") for k in range(1, runs + 1)] for s in scenarios}
    out = {"combined": {}, "per_scenario": {}}
    for v in variants:
        sim = {s: [ref_run(root / "Sim" / v / f"{s}_{k}.csv") for k in range(1, runs + 1)] for s in scenarios}
        pooled_real = [x for s in scenarios for x in real[s]]
        pooled_sim = [x for s in scenarios for x in sim[s]]
        w1 = ref_w1([e for e, _ in pooled_real], [e for e, _ in pooled_sim])
        w2 = ref_w1([d for _, d in pooled_real], [d for _, d in pooled_sim])
        out["combined"][v] = {"W1": w1, "W2": w2, "VEPD": (w1 + w2) / 2}
        out["per_scenario"][v] = {}
        for s in scenarios:
            w1 = ref_w1([e for e, _ in real[s]], [e for e, _ in sim[s]])
            w2 = ref_w1([d for _, d in real[s]], [d for _, d in sim[s]])
            out["per_scenario"][v][s] = {"W1": w1, "W2": w2, "VEPD": (w1 + w2) / 2}
    for s in scenarios:
        ranks = ref_ranks([out["per_scenario"][v][s]["VEPD"] for v in variants])
        for v, r in zip(variants, ranks):
            out["per_scenario"][v][s]["rank"] = r
    return out


# ---------------------------------------------------------------------------------------------

def test_ref_helpers_on_hand_values():
    assert ref_w1([0.0, 1.0], [1.0, 2.0]) == pytest.approx(1.0)
    assert ref_ranks([0.3, 0.1, 0.3, 0.2]) == [3.5, 1.0, 3.5, 2.0]
    assert ref_interp([0.5, -1, 9], [0.0, 1.0], [2.0, 4.0]) == [3.0, 2.0, 4.0]


def test_vepd_json_matches_independent_reference(tmp_path):
    variants = {"gauss": 0.10, "walk": 0.05, "airsim": 0.03}
    root = write_csv_study(tmp_path / "data", variants, runs=3, duration=10.0)
    out = tmp_path / "report"
    code = main(["score", "--csv-dir", str(root), "--out", str(out), "--bootstrap", "20",
                 "--permutations", "20", "--workers", "1"])
    assert code == 0
    got = json.loads((out / "vepd.json").read_text())
    names = sorted(variants)
    expected = ref_study(root, names, list(SCENARIOS), runs=3)
    assert set(got) == {"combined", "per_scenario", "options", "version"}
    assert sorted(got["combined"]) == names
    for v in names:
        for key in ("W1", "W2", "VEPD"):
            assert got["combined"][v][key] == pytest.approx(expected["combined"][v][key], abs=1e-9)
        assert set(got["combined"][v]) == {"W1", "W2", "VEPD", "VEPD_ci95", "n_real", "n_sim"}
        assert got["combined"][v]["n_real"] == got["combined"][v]["n_sim"] == 9
        assert sorted(got["per_scenario"][v]) == list(SCENARIOS)   # rest excluded by default
        for s in SCENARIOS:
            cell = got["per_scenario"][v][s]
            assert set(cell) == {"W1", "W2", "VEPD", "rank"}
            for key in ("W1", "W2", "VEPD"):
                assert cell[key] == pytest.approx(expected["per_scenario"][v][s][key], abs=1e-9)
            assert cell["rank"] == expected["per_scenario"][v][s]["rank"]
    # The noisiest variant is the farthest from real in this synthetic study.
    assert max(names, key=lambda v: got["combined"][v]["VEPD"]) == "gauss"
