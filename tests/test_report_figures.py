"""Figures that agree with their tables: histogram bars and densities on one scale, traces on shared
axes with no variant hiding another, an overview without a one-cell heat map (issue 13)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy import stats
from test_report_parallel import _study

from sim2real_eval.metrics import RunRecord, RunScore, ScoreOptions, score_study, separation
from sim2real_eval.report import figures


def test_freedman_diaconis_edges_by_hand():
    values = np.arange(1.0, 9.0)          # n 8, IQR 6.25 - 2.75 = 3.5 -> width 2·3.5/2 = 3.5 over [1, 8]
    edges = figures.histogram_edges(values)
    assert len(edges) == 3 and edges[0] == 1.0 and edges[-1] == 8.0       # ceil(7/3.5) = 2 bins
    assert len(figures.histogram_edges(np.full(5, 2.0))) >= 2              # one value: no crash
    wide = np.random.default_rng(0).standard_cauchy(100_000)              # FD would want ~10^6 bins
    assert len(figures.histogram_edges(wide)) <= 61


@pytest.mark.parametrize("n", [10, 30])
def test_bars_and_density_curve_agree(n):
    """The old figure binned each panel over every variant's range (20 bins): a narrow sample sat in
    one or two wide bins, ~4x below its density curve.  Its own Freedman–Diaconis bins keep the
    tallest bar near the KDE peak (median ratio over 100 samples; one small sample can be lumpy)."""
    ratios = []
    for seed in range(100):
        real = np.random.default_rng(seed).normal(0.097, 0.003, n)
        heights, _ = np.histogram(real, bins=figures.histogram_edges(real), density=True)
        peak = stats.gaussian_kde(real)(np.linspace(0.08, 0.115, 2000)).max()
        ratios.append(heights.max() / peak)
    assert 0.8 < np.median(ratios) < 1.6
    old = np.linspace(0.04, 0.45, 21)                      # the old pooled bins, for contrast
    heights, _ = np.histogram(real, bins=old, density=True)
    assert heights.max() / peak < 0.6


def test_kde_matches_scipy():
    """figures.gaussian_kde is numpy only (no scipy.stats import for the figures): scipy's density with
    Scott's bandwidth, to rounding."""
    rng = np.random.default_rng(4)
    for n in (2, 3, 30, 200):
        values = rng.normal(0.1, 0.01, n)
        grid = np.linspace(0.0, 0.2, 300)
        expected = stats.gaussian_kde(values)(grid)
        density = figures.gaussian_kde(values, grid)
        assert np.allclose(density, expected, rtol=1e-12, atol=1e-12 * expected.max())


def _one_scenario_study():
    records = []
    rng = np.random.default_rng(2)
    for k in range(6):
        e, d = 0.1 + 0.01 * rng.random(), 0.3 + 0.02 * rng.random()
        records.append(RunRecord("real", "real", "line", k, f"r/{k}", RunScore(e, 0.5, 0.4, d)))
        records.append(RunRecord("sim", "sim_imu-chrono_paper_demo", "line", k, f"s/{k}",
                                 RunScore(e + 0.0004, 0.5, 0.4, d + 0.008)))
    return score_study(records, ScoreOptions(bootstrap=50, permutations=50))


def test_overview_has_a_heat_map_only_with_several_scenarios():
    several, _series = _study()
    fig = figures.overview_figure(several)
    assert len(fig.axes) == 3                              # bars, heat map, colour bar
    texts = [t.get_text() for t in fig.axes[1].texts]
    cell = several.per_scenario["gauss"]["line"]
    letters = separation.group_letters(several, "line")["gauss"]
    assert f"{cell['VEPD']:.4f}\n(group {letters})" in texts  # 4 decimals, as the table prints
    plt.close(fig)
    single = _one_scenario_study()
    fig = figures.overview_figure(single)
    assert len(fig.axes) == 1                              # Table I only: no one-cell heat map
    labels = [t.get_text().strip() for t in fig.axes[0].texts]
    assert f"{single.combined['sim_imu-chrono_paper_demo']['VEPD']:.4f}" in labels
    # The paper's VEPD for the IMU study (0.0211) is drawn as a marker.
    offsets = np.concatenate([c.get_offsets() for c in fig.axes[0].collections if len(c.get_offsets())])
    assert np.isclose(offsets[:, 0], 0.0211).any()
    plt.close(fig)


def test_traces_give_every_variant_its_own_panel_on_shared_axes():
    result, series = _study()
    shown = {key: value for key, value in series.items() if key[2:] == ("line", 0)}
    fig = figures.traces_figure(result, shown, "line", 0)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["real sensors", "sim: gauss", "sim: walk"]
    assert len({ax.get_ylim() for ax in visible}) == 1 and len({ax.get_xlim() for ax in visible}) == 1
    top = max(max(line.get_ydata().max() for line in ax.get_lines()) for ax in visible)
    assert visible[0].get_ylim()[1] >= top                 # nothing clipped by the shared range
    plt.close(fig)
    assert figures.traces_figure(result, {}, "line", 0) is None
