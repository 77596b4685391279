"""Figures (matplotlib, Agg): what a reader checks at a glance.

- distributions: per variant, the real vs sim histograms + KDE of the per-run RMSE E and of the
  entropy difference D (the paper's Fig. 3), W printed on each panel;
- overview: Table I as bars (VEPD = W1/2 + W2/2 stacked, 95 % CI whiskers) and Table II as a
  heat map (VEPD, rank in brackets);
- traces: speed vs time, ground truth and estimates, for chosen runs (the paper's Fig. 4/5).

Every function returns PNG bytes (deterministic: no timestamps in the metadata).
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from ..metrics.study import REAL, StudyResult  # noqa: E402

REAL_COLOR = "#555555"
TRUTH_COLOR = "#222222"
STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "legend.frameon": False,
}


def variant_colors(variants) -> dict:
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _kde_line(ax, values, grid, color, **kwargs):
    """Gaussian KDE density (Scott's bandwidth); skipped for degenerate samples."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or np.ptp(values) == 0:
        return
    try:
        density = stats.gaussian_kde(values)(grid)
    except (np.linalg.LinAlgError, ValueError):
        return
    ax.plot(grid, density, color=color, **kwargs)


def _values(result: StudyResult, variant: str, field: str) -> np.ndarray:
    side_real = variant == REAL
    return np.array([getattr(r.score, field) for r in result.runs
                     if (r.side == REAL) == side_real and r.variant == variant])


def distributions_png(result: StudyResult) -> bytes:
    """2 rows (E, D) x one column per variant: real (grey) vs sim (colour), histogram + KDE."""
    variants = result.variants
    colors = variant_colors(variants)
    rows = (("rmse", "speed RMSE E (m/s)", "W1"), ("D", "entropy difference D", "W2"))
    with plt.rc_context(STYLE):
        ncols = len(variants)
        fig, axes = plt.subplots(2, ncols, figsize=(max(3.0 * ncols, 7.5), 5.6), squeeze=False,
                                 constrained_layout=True)
        for row, (field, label, w_name) in enumerate(rows):
            real = _values(result, REAL, field)
            everything = np.concatenate([real] + [_values(result, v, field) for v in variants])
            lo, hi = float(everything.min()), float(everything.max())
            pad = 0.08 * (hi - lo) if hi > lo else max(abs(hi), 1e-3) * 0.1
            bins = np.linspace(lo - pad, hi + pad, 21)
            grid = np.linspace(bins[0], bins[-1], 200)
            for col, variant in enumerate(variants):
                ax = axes[row, col]
                sim = _values(result, variant, field)
                # One filled outline per histogram (looks like edge-less bars, 1 artist instead of 20).
                ax.hist(real, bins=bins, density=True, histtype="stepfilled", color=REAL_COLOR,
                        alpha=0.35, label=f"real (n={len(real)})")
                ax.hist(sim, bins=bins, density=True, histtype="stepfilled", color=colors[variant],
                        alpha=0.45, label=f"sim (n={len(sim)})")
                _kde_line(ax, real, grid, REAL_COLOR, lw=1.6)
                _kde_line(ax, sim, grid, colors[variant], lw=1.8)
                w = result.combined[variant][w_name]
                ax.set_title(f"{variant}\n{w_name} = {w:.4f}", fontsize=10)
                ax.set_xlabel(label)
                if col == 0:
                    ax.set_ylabel("density")
                ax.legend(fontsize=8, loc="upper right")
        fig.suptitle("Per-run errors: real (grey) vs each sim variant, scenarios pooled", fontsize=11)
        return _png(fig)


def overview_png(result: StudyResult) -> bytes:
    """Left: VEPD per variant as stacked W1/2 + W2/2 bars with the bootstrap 95 % CI.
    Right: per-scenario VEPD heat map with ranks."""
    variants = sorted(result.variants, key=lambda v: result.combined[v]["VEPD"])
    with plt.rc_context(STYLE):
        fig, (left, right) = plt.subplots(
            1, 2, figsize=(11.5, max(3.0, 0.55 * len(variants) + 1.8)), constrained_layout=True,
            gridspec_kw={"width_ratios": [1.1, max(1.0, 0.35 * len(result.scenarios) + 0.3)]})
        y = np.arange(len(variants))
        half_w1 = np.array([result.combined[v]["W1"] / 2 for v in variants])
        half_w2 = np.array([result.combined[v]["W2"] / 2 for v in variants])
        left.barh(y, half_w1, color="#4C72B0", label="W1/2 (RMSE)")
        left.barh(y, half_w2, left=half_w1, color="#DD8452", label="W2/2 (entropy)")
        right_ends = []
        for i, v in enumerate(variants):
            ci = result.combined[v]["VEPD_ci95"]
            end = result.combined[v]["VEPD"]
            if ci:
                left.plot(ci, [i, i], color="black", lw=1.4)
                left.plot([ci[0]] * 2, [i - 0.15, i + 0.15], color="black", lw=1.4)
                left.plot([ci[1]] * 2, [i - 0.15, i + 0.15], color="black", lw=1.4)
                end = max(end, ci[1])
            right_ends.append(end)
        for i, v in enumerate(variants):
            left.text(right_ends[i], i, f"  {result.combined[v]['VEPD']:.4f}", va="center", fontsize=9)
        left.set_xlim(0, 1.25 * max(right_ends) if max(right_ends) > 0 else 1.0)
        left.set_yticks(y, variants)
        left.invert_yaxis()
        left.set_xlabel("VEPD = (W1 + W2)/2   (lower = closer to real)")
        left.set_title("Table I: all scenarios pooled, 95 % bootstrap CI")
        left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8)
        values = np.array([[result.per_scenario[v][s]["VEPD"] for s in result.scenarios] for v in variants])
        image = right.imshow(values, cmap="viridis_r", aspect="auto")
        right.grid(False)
        right.set_xticks(np.arange(len(result.scenarios)), result.scenarios)
        right.set_yticks(y, variants)
        threshold = values.min() + 0.5 * (values.max() - values.min())
        for i, v in enumerate(variants):
            for j, s in enumerate(result.scenarios):
                cell = result.per_scenario[v][s]
                right.text(j, i, f"{cell['VEPD']:.3f}\n(rank {cell['rank']:g})", ha="center", va="center",
                           fontsize=8, color="white" if values[i, j] > threshold else "black")
        right.set_title("Table II: VEPD per scenario (rank 1 = best)")
        fig.colorbar(image, ax=right, label="VEPD", shrink=0.9)
        return _png(fig)


def traces_png(result: StudyResult, series: dict, scenario: str, k: int) -> bytes | None:
    """Speed vs time of run k of ``scenario``: top the real run, bottom every sim variant's run k.

    Raw series (estimate as recorded, no smoothing), times from the run's origin.  None when no run
    with that (scenario, k) was scored.
    """
    real = series.get((REAL, REAL, scenario, k))
    sims = [(v, series.get(("sim", v, scenario, k))) for v in result.variants]
    sims = [(v, s) for v, s in sims if s is not None]
    if real is None and not sims:
        return None
    colors = variant_colors(result.variants)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(10.5, 6.4), sharex=True, constrained_layout=True)
        top, bottom = axes
        if real is not None:
            top.plot(real.t_est, real.v_est, color=REAL_COLOR, lw=1.0, alpha=0.8,
                     label="estimate (real sensors)")
            top.plot(real.t_gt, real.v_gt, "--", color=TRUTH_COLOR, lw=1.8, zorder=5, label="ground truth")
        top.set_title(f"{scenario}, run {k}: real")
        if sims:
            for variant, s in sims:
                bottom.plot(s.t_est, s.v_est, color=colors[variant], lw=1.0, alpha=0.75, label=variant)
            first = sims[0][1]
            bottom.plot(first.t_gt, first.v_gt, "--", color=TRUTH_COLOR, lw=1.8, zorder=5,
                        label=f"ground truth ({sims[0][0]} run)")
        bottom.set_title(f"{scenario}, run {k}: simulated sensor variants")
        for ax in axes:
            ax.set_ylabel("speed (m/s)")
            ax.legend(fontsize=8, loc="best", ncol=2)
        bottom.set_xlabel("time (s)")
        return _png(fig)
