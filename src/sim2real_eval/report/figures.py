"""Figures (matplotlib, Agg): what a reader checks at a glance.

- distributions: per variant, the real vs sim histograms + KDE of the per-run RMSE E and of the
  entropy difference D (the paper's Fig. 3), W printed on each panel.  Each panel spans its own pair
  of samples and bins each sample by the Freedman–Diaconis rule, so the bars (density=True) and the
  KDE describe the same spread;
- overview: Table I as bars (VEPD = W1/2 + W2/2 stacked, 95 % CI whiskers, the paper's VEPD as a
  marker where it has one) and, with more than one scenario, Table II as a heat map (VEPD, group letters);
- traces: speed vs time, ground truth and estimates, for chosen runs (the paper's Fig. 4/5): one panel
  per side/variant on shared axes, so no variant hides another and real and sim read on one scale.

``*_figure`` return the matplotlib Figure, ``*_png`` its PNG bytes (deterministic: no timestamps in
the metadata).
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.transforms import Bbox, ScaledTranslation  # noqa: E402
from PIL import Image  # noqa: E402

from ..metrics import separation
from ..metrics.study import REAL, StudyResult  # noqa: E402
from .paper import paper_vepd

DPI = 110  # figures are made at the dpi they are saved at: the layout computed for one holds for the other
REAL_COLOR = "#555555"
TRUTH_COLOR = "#222222"
STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "legend.frameon": False,
    # Titles at the top of their panel (no ticks or labels up there), not placed anew at every draw
    # and measurement (it lays out the y axis' ticks once more each time: ~15 % of a figure's CPU).
    "axes.titley": 1.0,
}


def variant_colors(variants) -> dict:
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


PAD = 3 / 72  # inches around every panel's decorations and the figure's edge (constrained layout's)
TITLE_PAD = 6.0  # points between a panel and its title (rcParams["axes.titlepad"])
MIN_PANEL = 1.8  # inches: a panel is never narrower; long labels (variant names) widen the figure instead
GUESS = (0.8, 0.2, 0.6, 0.35, 0.6, 0.7)  # inches: left, right, bottom, top margins, column, row gaps


def fit_margins(fig, title=None, pad: float = PAD) -> None:
    """Place the figure's grid of panels with margins measured once: each panel's decorations (tick
    labels, axis labels, title, legend, a colour bar beside it) are measured and the grid's outer
    margins and gaps made just large enough for the widest, plus ``pad``; ``title`` (the figure's
    suptitle) goes on top.

    What constrained layout computes, in one pass: it measures every panel twice and, on shared axes,
    each panel's siblings too (~45 % of a figure's CPU).  Measured, not fixed, margins: a long
    variant name or tick label widens its margin as it did there.  The panels are first given about
    their final size (``GUESS``), as the ticks chosen depend on it; should the ticks differ at the
    final size, the margins are measured once more.  Labels too long for the figure's width (a long
    variant name beside a heat map) widen the figure so that no panel is narrower than ``MIN_PANEL``.
    """
    if _grid(fig) is None:
        return
    left, right, bottom, top, wgap, hgap = GUESS
    head = title.get_size() * 1.2 * (title.get_text().count("\n") + 1) / 72 if title is not None else 0.0
    _set_margins(fig, left, right, bottom, top + head, wgap, hgap)
    ticks = _tick_labels(fig)
    margins = _measure(fig, title, pad)
    _widen(fig, margins)
    _set_margins(fig, *margins)
    if _tick_labels(fig) != ticks:
        _set_margins(fig, *_measure(fig, title, pad))


def _widen(fig, margins) -> None:
    """The figure made wide enough for its narrowest panel to be ``MIN_PANEL`` wide within ``margins``."""
    left, right, _bottom, _top, wgap, _hgap = margins
    ncols = _grid(fig).get_geometry()[1]
    ratios = _grid(fig).get_width_ratios() or [1.0] * ncols
    needed = left + right + wgap * (ncols - 1) + MIN_PANEL * sum(ratios) / min(ratios)
    width, height = fig.get_size_inches()
    if needed > width:
        fig.set_size_inches(needed, height)


def _grid(fig):
    """The figure's top-level grid of panels (None without one)."""
    return next((ax.get_subplotspec().get_topmost_subplotspec().get_gridspec() for ax in fig.axes
                 if ax.get_subplotspec() is not None), None)


def _tick_labels(fig) -> list:
    """Every visible panel's tick labels (they depend on the panel's size)."""
    labels = []
    for ax in fig.axes:
        if ax.get_visible():
            for axis in (ax.xaxis, ax.yaxis):
                labels.append(axis.major.formatter.format_ticks(axis.get_majorticklocs()))
    return labels


def _set_margins(fig, left, right, bottom, top, wgap, hgap) -> None:
    """The top-level grid's margins and gaps, in inches."""
    grid = _grid(fig)
    if grid is None:
        return
    nrows, ncols = grid.get_geometry()
    width, height = fig.get_size_inches()
    panel_w = (width - left - right - wgap * (ncols - 1)) / ncols
    panel_h = (height - bottom - top - hgap * (nrows - 1)) / nrows
    if panel_w <= 0 or panel_h <= 0:  # decorations larger than the figure: leave the layout as it is
        return
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - top / height, wspace=wgap / panel_w, hspace=hgap / panel_h)


def _measure(fig, title, pad: float) -> tuple:
    """(left, right, bottom, top, column gap, row gap) in inches that fit every panel's decorations."""
    renderer = fig.canvas.get_renderer()
    cells = {}  # top-level grid cell -> (its box, the union of its panels' decorations), pixels
    grid = _grid(fig)
    ncols = grid.get_geometry()[1]
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None or not ax.get_visible():
            continue
        spec = spec.get_topmost_subplotspec()
        key = (spec.rowspan.start, spec.rowspan.stop, spec.colspan.start, spec.colspan.stop)
        # Titles and x labels wider than their panel may reach into the gaps (as in constrained
        # layout), not out of the figure: measured in full in the last column.
        last = spec.colspan.stop == ncols
        tight = ax.get_tightbbox(renderer, for_layout_only=not last)
        offset = ax.yaxis.offsetText  # a y-axis offset or exponent ("1e6") is written above the panel
        if offset.get_visible() and offset.get_text() and ax.get_title():
            raised = TITLE_PAD + offset.get_window_extent(renderer).height * 72 / fig.dpi
            ax.set_title(ax.get_title(), fontsize=ax.title.get_fontsize(), pad=raised)
            tight = ax.get_tightbbox(renderer, for_layout_only=not last)
        if key in cells:
            tight = Bbox.union([cells[key][1], tight])
        box = spec.get_position(fig).transformed(fig.transFigure)
        cells[key] = (box, tight)
    nrows = grid.get_geometry()[0]
    left, right, top, bottom = [0.0] * ncols, [0.0] * ncols, [0.0] * nrows, [0.0] * nrows
    for (row0, row1, col0, col1), (box, tight) in cells.items():
        left[col0] = max(left[col0], box.x0 - tight.x0)
        right[col1 - 1] = max(right[col1 - 1], tight.x1 - box.x1)
        top[row0] = max(top[row0], tight.y1 - box.y1)
        bottom[row1 - 1] = max(bottom[row1 - 1], box.y0 - tight.y0)
    head = 0.0
    if title is not None:
        title.set_y(1 - pad / fig.get_size_inches()[1])
        head = title.get_window_extent(renderer).height / fig.dpi + pad
    inch = 1 / fig.dpi
    wgap = max([right[c] + left[c + 1] for c in range(ncols - 1)], default=0.0) * inch + 2 * pad
    hgap = max([bottom[r] + top[r + 1] for r in range(nrows - 1)], default=0.0) * inch + 2 * pad
    return (left[0] * inch + pad, right[-1] * inch + pad, bottom[-1] * inch + pad,
            top[0] * inch + head + pad, wgap, hgap)


def _png(fig) -> bytes:
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    # An opaque figure is saved as RGB at zlib level 1: 2.4x faster to encode than savefig's RGBA at
    # level 6, and smaller (no alpha channel).  No timestamp or software name: same bytes every run.
    pixels = np.ascontiguousarray(rgba[..., :3]) if rgba[..., 3].min() == 255 else rgba
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="png", compress_level=1, dpi=(DPI, DPI))
    plt.close(fig)
    return buffer.getvalue()


def gaussian_kde(values, grid) -> np.ndarray:
    """Gaussian kernel density of ``values`` at ``grid``, Scott's bandwidth (σ·n^(-1/5), σ with ddof 1):
    scipy.stats.gaussian_kde in one dimension, to rounding.  Numpy only: importing scipy.stats costs
    the demo ~1 s CPU, and its Cholesky solves more than these few sums."""
    values = np.asarray(values, dtype=float)
    bandwidth = np.std(values, ddof=1) * len(values) ** -0.2
    z = (np.asarray(grid, dtype=float)[:, None] - values[None, :]) / bandwidth
    return np.exp(-0.5 * z * z).sum(axis=1) / (len(values) * bandwidth * np.sqrt(2 * np.pi))


def _kde_line(ax, values, grid, color, **kwargs):
    """Gaussian KDE density (Scott's bandwidth); skipped for degenerate samples."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or not np.ptp(values) > 0:  # one value, or NaN: no density
        return
    ax.plot(grid, gaussian_kde(values, grid), color=color, **kwargs)


def _values(result: StudyResult, variant: str, field: str) -> np.ndarray:
    side_real = variant == REAL
    return np.array([getattr(r.score, field) for r in result.runs
                     if (r.side == REAL) == side_real and r.variant == variant])


def histogram_edges(values) -> np.ndarray:
    """Bin edges over the sample's own range, Freedman–Diaconis width (2·IQR/n^(1/3)); Sturges' count
    when that is undefined (IQR 0) or would exceed 60 bins."""
    values = np.asarray(values, dtype=float)
    edges = np.histogram_bin_edges(values, bins="fd") if np.ptp(values) > 0 else np.array([])
    if not 2 <= len(edges) <= 61:
        edges = np.histogram_bin_edges(values, bins=int(min(60, np.log2(max(len(values), 1)) + 1)))
    return edges


def _panel_range(samples) -> tuple:
    """(lo, hi) covering every sample with room for the KDE tails (3 Scott bandwidths)."""
    lo = min(float(np.min(v)) for v in samples)
    hi = max(float(np.max(v)) for v in samples)
    tail = max(3.0 * float(np.std(v, ddof=1)) * len(v) ** -0.2 if len(v) > 1 else 0.0 for v in samples)
    pad = tail or (0.08 * (hi - lo) if hi > lo else max(abs(hi), 1e-3) * 0.1)
    return lo - pad, hi + pad


def distributions_figure(result: StudyResult):
    """2 rows (E, D) x one column per variant: real (grey) vs sim (colour), histogram + KDE."""
    variants = result.variants
    colors = variant_colors(variants)
    rows = (("rmse", "speed RMSE E (m/s)", "W1"), ("D", "entropy difference D", "W2"))
    with plt.rc_context(STYLE):
        ncols = len(variants)
        fig, axes = plt.subplots(2, ncols, figsize=(max(3.0 * ncols, 7.5), 5.6), squeeze=False, dpi=DPI)
        for row, (field, label, w_name) in enumerate(rows):
            real = _values(result, REAL, field)
            for col, variant in enumerate(variants):
                ax = axes[row, col]
                sim = _values(result, variant, field)
                lo, hi = _panel_range([real, sim])
                grid = np.linspace(lo, hi, 300)
                # One filled outline per histogram (looks like edge-less bars, 1 artist instead of 20).
                ax.hist(real, bins=histogram_edges(real), density=True, histtype="stepfilled",
                        color=REAL_COLOR, alpha=0.35)
                ax.hist(sim, bins=histogram_edges(sim), density=True, histtype="stepfilled",
                        color=colors[variant], alpha=0.45)
                _kde_line(ax, real, grid, REAL_COLOR, lw=1.6)
                _kde_line(ax, sim, grid, colors[variant], lw=1.8)
                w = result.combined[variant][w_name]
                ax.set_title(f"{variant}\n{w_name} = {w:.4f}  (n {len(real)} real, {len(sim)} sim)",
                             fontsize=9)
                ax.set_xlim(lo, hi)
                ax.set_xlabel(label)
                if col == 0:
                    ax.set_ylabel("density")
        title = fig.suptitle("Per-run errors, scenarios pooled: real (grey) vs each sim variant (colour)\n"
                             "bars: histogram, Freedman–Diaconis bins; lines: Gaussian KDE; both densities",
                             fontsize=10)
        fit_margins(fig, title)
        return fig


def overview_figure(result: StudyResult):
    """Left: VEPD per variant as stacked W1/2 + W2/2 bars with the bootstrap 95 % CI and the paper's
    VEPD where it has one.  Right (more than one scenario): per-scenario VEPD heat map with group letters."""
    variants = separation.order(result)
    heat_map = len(result.scenarios) > 1
    with plt.rc_context(STYLE):
        if heat_map:
            fig, (left, right) = plt.subplots(
                1, 2, figsize=(11.5, max(3.0, 0.55 * len(variants) + 1.8)),
                gridspec_kw={"width_ratios": [1.1, max(1.0, 0.35 * len(result.scenarios) + 0.3)]}, dpi=DPI)
        else:
            fig, left = plt.subplots(figsize=(7.5, max(2.4, 0.55 * len(variants) + 1.8)), dpi=DPI)
        _vepd_bars(left, result, variants)
        if heat_map:
            _vepd_heat_map(fig, right, result, variants)
        fit_margins(fig)
        return fig


def _vepd_bars(left, result: StudyResult, variants: list) -> None:
    """Table I as bars: W1/2 + W2/2 stacked, the 95 % CI, the paper's VEPD, the judge-noise floor, the
    VEPD written beside each bar and the group letters before each name."""
    ranks = separation.group_letters(result)
    height = 0.8 if len(variants) > 1 else 0.5
    y = np.arange(len(variants))
    half_w1 = np.array([result.combined[v]["W1"] / 2 for v in variants])
    half_w2 = np.array([result.combined[v]["W2"] / 2 for v in variants])
    left.barh(y, half_w1, height=height, color="#4C72B0", label="W1/2 (RMSE)")
    left.barh(y, half_w2, height=height, left=half_w1, color="#DD8452", label="W2/2 (entropy)")
    right_ends = _ci_whiskers(left, result, variants)
    paper = [(i, paper_vepd(v)) for i, v in enumerate(variants) if paper_vepd(v) is not None]
    if paper:
        left.scatter([value for _i, value in paper], [i for i, _value in paper], marker="D", s=34,
                     facecolor="white", edgecolor="black", zorder=5,
                     label="paper's VEPD (real ART data)")
    floor = _floor_band(left, result, variants)
    widest = max(right_ends + [value for _i, value in paper]
                 + ([floor["VEPD_interval"][1]] if floor else []))
    markers = dict(paper)
    for i, v in enumerate(variants):
        at = right_ends[i]
        if at < markers.get(i, -1.0) < at + 0.08 * widest:  # a marker just right of the bar: step over it
            at = markers[i]
        below = "  (≤ floor)" if separation.below_floor(result, v) else ""
        left.text(at, i, f"  {result.combined[v]['VEPD']:.4f}{below}", va="center", fontsize=9)
    left.set_xlim(0, 1.3 * widest if widest > 0 else 1.0)
    left.set_yticks(y, [f"{ranks[v]}  {v}" for v in variants])
    left.set_ylim(len(variants) - 0.5, -0.5)   # best on top, bars keep their height with one variant
    left.set_xlabel("VEPD = (W1 + W2)/2   (lower = closer to real)")
    left.set_title("Table I: all scenarios pooled, 95 % bootstrap CI\ngroup letters before the name: "
                   "variants sharing a letter are not separable", fontsize=10)
    # Below the x label at a fixed distance (tick labels and x label: ~36 pt), whatever the axes' height.
    below = left.transAxes + ScaledTranslation(0, -40 / 72, left.get_figure().dpi_scale_trans)
    left.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, ncol=2, fontsize=8)


def _ci_whiskers(left, result: StudyResult, variants: list) -> list:
    """The bootstrap 95 % CI of each variant's VEPD as a whisker; returns where each bar's label goes
    (the VEPD, or the CI's upper end)."""
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
    return right_ends


def _floor_band(left, result: StudyResult, variants: list):
    """The judge-noise floor (what judge timing alone gives: the range over the pairs of timing draws)
    as a hatched band; returns its pooled cell, or None without a floor."""
    floor = (result.judge_noise_floor or {}).get("combined", {}).get(variants[0])
    if floor:
        low, high = floor["VEPD_interval"]
        left.axvspan(low, high, facecolor="#555555", alpha=0.25, hatch="///", edgecolor="#333333", lw=0,
                     zorder=3,
                     label=f"judge-noise floor (range of {result.judge_noise_floor['pairs']} pairs)")
        left.axvline(high, color="#333333", lw=0.8, ls=":", zorder=3)
    return floor


def _vepd_heat_map(fig, right, result: StudyResult, variants: list) -> None:
    """Table II as a heat map: VEPD per variant and scenario, with its group letters and the sub-floor
    mark."""
    values = np.array([[result.per_scenario[v][s]["VEPD"] for s in result.scenarios]
                       for v in variants])
    image = right.imshow(values, cmap="viridis_r", aspect="auto")
    right.grid(False)
    right.set_xticks(np.arange(len(result.scenarios)), result.scenarios)
    right.set_yticks(np.arange(len(variants)), variants)
    threshold = values.min() + 0.5 * (values.max() - values.min())
    labels = {s: separation.group_letters(result, s) for s in result.scenarios}
    for i, v in enumerate(variants):
        for j, s in enumerate(result.scenarios):
            cell = result.per_scenario[v][s]
            ink = "white" if values[i, j] > threshold else "black"
            below = "\n≤ floor" if separation.below_floor(result, v, s) else ""
            right.text(j, i, f"{cell['VEPD']:.4f}\n(group {labels[s][v]}){below}", ha="center",
                       va="center", fontsize=8, color=ink)
    right.set_title("Table II: VEPD per scenario (group letters as in Table I)")
    fig.colorbar(image, ax=right, label="VEPD", shrink=0.9)


def traces_figure(result: StudyResult, series: dict, scenario: str, k: int):
    """Speed vs time of run k of ``scenario``: one panel for the real run and one per sim variant,
    all on the same x and y axes; each sim panel repeats the real estimate in light grey.

    Raw series (estimate as recorded, no smoothing), times from the run's origin.  None when no run
    with that (scenario, k) was scored.
    """
    real = series.get((REAL, REAL, scenario, k))
    sims = [(v, series.get(("sim", v, scenario, k))) for v in result.variants]
    sims = [(v, s) for v, s in sims if s is not None]
    if real is None and not sims:
        return None
    colors = variant_colors(result.variants)
    panels = ([("real sensors", real, REAL_COLOR)] if real is not None else []) + [
        (variant, s, colors[variant]) for variant, s in sims]
    ncols = 1 if len(panels) <= 2 else 2
    nrows = -(-len(panels) // ncols)
    with plt.rc_context(STYLE):
        # Same limits set on every panel rather than shared axes: sharing makes matplotlib lay out
        # every sibling's ticks for each panel's labels (a third of the figure's CPU), for the same picture.
        fig, axes = plt.subplots(nrows, ncols, figsize=(10.5 if ncols == 2 else 9.0, 2.5 * nrows + 0.9),
                                 squeeze=False, dpi=DPI)
        for ax, (name, run, color) in zip(axes.flat, panels):
            if real is not None and run is not real:
                ax.plot(real.t_est, real.v_est, color=REAL_COLOR, lw=0.8, alpha=0.4)
            ax.plot(run.t_est, run.v_est, color=color, lw=1.0)
            ax.plot(run.t_gt, run.v_gt, "--", color=TRUTH_COLOR, lw=1.4, zorder=5)
            ax.set_title(name if run is real else f"sim: {name}", fontsize=10)
        xlim, ylim = _trace_limits([run for _n, run, _c in panels])
        for ax in axes.flat:
            ax.set_ylim(*ylim)
            if xlim:
                ax.set_xlim(*xlim)
            ax.tick_params(labelleft=ax in axes[:, 0], labelbottom=False)
        _trace_labels(axes, len(panels), with_real=real is not None and len(panels) > 1)
        title = fig.suptitle(f"{scenario}, run {k}: estimated speed vs ground truth (shared axes)",
                             fontsize=11)
        fit_margins(fig, title)
        return fig


def _trace_limits(runs: list) -> tuple:
    """(x limits or None, y limits) every trace panel shares: the runs' time span ± 5 %, speed from
    min(0, lowest estimate) to 1.3 × the highest (room for the legend on top)."""
    top = max([float(np.max(run.v_est, initial=0.0)) for run in runs]
              + [float(np.max(run.v_gt, initial=0.0)) for run in runs])
    start = min([float(np.min(run.t_gt, initial=np.inf)) for run in runs]
                + [float(np.min(run.t_est, initial=np.inf)) for run in runs])
    end = max([float(np.max(run.t_gt, initial=-np.inf)) for run in runs]
              + [float(np.max(run.t_est, initial=-np.inf)) for run in runs])
    ylim = (min(0.0, *(float(np.min(run.v_est, initial=0.0)) for run in runs)), 1.3 * top if top > 0 else 1.0)
    xlim = (start - 0.05 * (end - start), end + 0.05 * (end - start)) if end > start else None
    return xlim, ylim


def _trace_labels(axes, panels: int, with_real: bool) -> None:
    """The trace figure's legend (first panel), axis labels on the outer panels, unused panels hidden."""
    handles = [plt.Line2D([], [], color="#1f77b4", lw=1.0, label="estimate"),
               plt.Line2D([], [], color=TRUTH_COLOR, ls="--", lw=1.4, label="ground truth")]
    if with_real:
        handles.insert(1, plt.Line2D([], [], color=REAL_COLOR, lw=0.8, alpha=0.4,
                                     label="real estimate (grey, in sim panels)"))
    axes[0, 0].legend(handles=handles, fontsize=7, loc="upper center", ncol=len(handles),
                      frameon=True, framealpha=0.9, handlelength=1.6, columnspacing=1.0)
    for ax in axes.flat[panels:]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("speed (m/s)")
    for col in range(axes.shape[1]):
        visible = [ax for ax in axes[:, col] if ax.get_visible()]
        visible[-1].set_xlabel("time (s)")
        visible[-1].xaxis.set_tick_params(labelbottom=True)


def distributions_png(result: StudyResult) -> bytes:
    return _png(distributions_figure(result))


def overview_png(result: StudyResult) -> bytes:
    return _png(overview_figure(result))


def traces_png(result: StudyResult, series: dict, scenario: str, k: int) -> bytes | None:
    fig = traces_figure(result, series, scenario, k)
    return None if fig is None else _png(fig)
