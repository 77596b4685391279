"""A self-contained report.html: tables and base64-embedded figures, inline CSS, no external resource."""
from __future__ import annotations

import base64
import html

from .. import __version__
from ..metrics.study import StudyResult
from . import tables

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.note { color: #555; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: right; }
th { background: #f2f4f7; } td:first-child, th:first-child { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
tr.best td { background: #e8f5e9; font-weight: 600; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
details { margin: 1em 0; } summary { cursor: pointer; font-weight: 600; }
code { background: #f4f4f4; padding: 0 0.25em; }
"""


def _table(header, rows, best_first_row: bool = False) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = ' class="best"' if best_first_row and i == 0 else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def report_html(result: StudyResult, figures: dict, source: str) -> str:
    """``figures``: {title: PNG bytes} in display order ("distributions", "overview", "traces ...")."""
    o = result.options
    best = min(result.variants, key=lambda v: result.combined[v]["VEPD"])
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>VEPD report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>Sim-to-real gap of GPS/IMU: VEPD report</h1>",
        f'<p class="note">Input: <code>{html.escape(source)}</code> &middot; sim2real-eval {__version__} '
        f"&middot; scenarios {html.escape(', '.join(result.scenarios))} (excluded: "
        f"{html.escape(', '.join(o.exclude_scenarios) or 'none')}) &middot; closest to real: "
        f"<b>{html.escape(best)}</b></p>",
        '<p class="note">Per run: speed RMSE E between the state estimate and ground truth, and the '
        "difference D of their Wiener entropies (spectral flatness).  W1 = Wasserstein distance between "
        "the real and sim distributions of E (m/s), W2 the same for D (unitless), VEPD = (W1 + W2)/2. "
        "VEPD mixes units and is not bounded by 1; lower means the simulated sensors make the estimator "
        f"err like the real ones.  Preprocessing: {o.rate_hz:g} Hz timeline, moving average "
        f"{o.smoothing_window}, {html.escape(o.spectrum)} spectrum, {html.escape(o.speed)} speed.</p>",
        "<h2>Table I &mdash; all scenarios pooled</h2>",
        _table(tables.TABLE_ONE_HEADER, tables.table_one_rows(result), best_first_row=True),
        f'<p class="note">95 % CI: percentile bootstrap, {o.bootstrap} resamples of runs within each side '
        f"and scenario; p: permutation test of &ldquo;real and sim runs are exchangeable&rdquo; "
        f"({o.permutations} shuffles within scenario), statistic VEPD; seed {o.seed}.</p>",
        "<h2>Table II &mdash; per scenario</h2>",
        _table(tables.table_two_header(result), tables.table_two_rows(result)),
        "<details><summary>Per-scenario W1, W2, intervals and p-values</summary>",
        _table(tables.TABLE_TWO_DETAIL_HEADER, tables.table_two_detail_rows(result)), "</details>",
        "<h2>Figures</h2>",
    ]
    for title, png in figures.items():
        parts += [f"<h3>{html.escape(title)}</h3>", _image(png, title)]
    if result.skipped:
        parts += ["<h2>Skipped runs</h2>", "<ul>"]
        parts += [f"<li><code>{html.escape(run)}</code>: {html.escape(reason)}</li>"
                  for run, reason in result.skipped]
        parts += ["</ul>"]
    run_rows = [[r.side, r.variant, r.scenario, r.k, f"{r.score.rmse:.4f}", f"{r.score.S_est:.4f}",
                 f"{r.score.S_gt:.4f}", f"{r.score.D:.4f}", r.source] for r in result.runs]
    parts += [
        f"<details><summary>All {len(result.runs)} scored runs</summary>",
        _table(["side", "variant", "scenario", "k", "E (m/s)", "S est", "S gt", "D", "source"], run_rows),
        "</details>", "</body></html>", "",
    ]
    return "\n".join(parts)
