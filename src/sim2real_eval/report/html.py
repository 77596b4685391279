"""A self-contained report.html: tables and base64-embedded figures, inline CSS, no external resource.

The page explains itself: a banner says what the data are (synthetic reference or recorded bags),
which software, judge configuration and seeds made the numbers (``report.provenance``); one line per
variant says what it models; Table I carries the paper's VEPD beside ours; further studies (the demo's
simulated-IMU study) follow with their own tables and figures.
"""
from __future__ import annotations

import base64
import html

from ..metrics.study import StudyResult
from ..noise_floor import render as noise_floor
from . import health, tables
from .paper import CITATION

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.note { color: #555; font-size: 0.92em; }
.note.warn { color: #8a4b00; }
.banner { border-radius: 6px; padding: 0.7em 1em; margin: 1em 0; border: 1px solid; }
.banner.synthetic { background: #fff4d6; border-color: #e0a800; }
.banner.recorded { background: #e8f1fb; border-color: #6a9fd8; }
.banner.unknown { background: #f2f2f2; border-color: #aaa; }
.banner.alarm { background: #fde8e8; border-color: #c62828; }
.banner b.kind { font-size: 1.05em; }
table.facts td, table.facts th { border: none; padding: 0.15em 0.8em 0.15em 0; text-align: left;
       vertical-align: top; background: none; font-weight: normal; }
table.facts th { color: #555; white-space: nowrap; }
table.facts tr:nth-child(even) td { background: none; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: right; }
th { background: #f2f4f7; } td:first-child, th:first-child { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
tr.best td { background: #e8f5e9; font-weight: 600; }
table.variants td, table.variants th { text-align: left; }
table.numbers td { white-space: nowrap; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
details { margin: 1em 0; } summary { cursor: pointer; font-weight: 600; }
code { background: #f4f4f4; padding: 0 0.25em; } code.hash { font-size: 0.8em; color: #555; }
"""

BANNER_CLASS = {"synthetic": "synthetic", "recorded": "recorded"}
HEADLINE = {"synthetic": "The &ldquo;real&rdquo; side of this study is synthetic data.",
            "recorded": "Real side: recorded bags.",
            "not recorded": "Real side: origin not recorded."}


def _table(header, rows, best_first_row: bool = False, css_class: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = ' class="best"' if best_first_row and i == 0 else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    attr = f' class="{css_class}"' if css_class else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def table_html(header, rows, css_class: str = "numbers") -> str:
    """A table as the report draws them (for sections a caller renders itself)."""
    return _table(header, rows, css_class=css_class)


def image_html(png: bytes, alt: str) -> str:
    """A PNG embedded as the report embeds its figures."""
    return _image(png, alt)


def _image(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _code(text) -> str:
    return f"<code>{html.escape(str(text))}</code>"


def banner(provenance: dict) -> list:
    """The box at the top: what the data are, then the facts that made the numbers."""
    data, software = provenance.get("data", {}), provenance.get("software", {})
    kind = data.get("real", "not recorded")
    parts = [f'<div class="banner {BANNER_CLASS.get(kind, "unknown")}">',
             f'<b class="kind">{HEADLINE.get(kind, HEADLINE["not recorded"])}</b> '
             f'{html.escape(data.get("summary", ""))}']
    facts = []
    folders = data.get("real_folders", [])
    if folders:
        facts.append(("real-side bags",
                      "<br>".join(f"{_code(f['folder'])}: {f['runs']} run(s)" for f in folders)))
    source = provenance.get("input", {})
    if source.get("source"):
        facts.append(("scored input", f"{_code(source['source'])} ({html.escape(source.get('kind', ''))})"))
    commit = software.get("commit")
    version = html.escape(f"{software.get('package', 'sim2real-eval')} {software.get('version')}")
    if commit:
        version += f", git commit {_code(commit[:12])}"
        version += " with local changes" if software.get("modified") else ""
    else:
        version += " (no git checkout: commit unknown)"
    facts.append(("software", version))
    judge = provenance.get("judge", [])
    facts.append(("judge configuration", "<br>".join(
        f"{html.escape(j['role'])}: {_code(j['path'])} "
        f'<code class="hash">sha256 {html.escape(j["sha256"])}</code>' for j in judge)
        or "not recorded by the inputs"))
    seeds = provenance.get("seeds", {})
    seed_text = [f"study {', '.join(str(s) for s in seeds.get('study', [])) or 'not recorded'}"]
    if seeds.get("reference"):
        seed_text.append(f"reference data {', '.join(str(s) for s in seeds['reference'])}")
    seed_text.append(f"bootstrap/permutations {seeds.get('statistics')}")
    facts.append(("seeds", html.escape(" · ".join(seed_text))))
    for key, value in provenance.get("context", {}).items():
        facts.append((html.escape(str(key)), html.escape(str(value))))
    parts.append('<table class="facts"><tbody>' + "".join(
        f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts) + "</tbody></table></div>")
    return parts


def _variant_rows(result: StudyResult, provenance: dict) -> list:
    described = provenance.get("variants", {})
    return [[v, described.get(v, "not recorded")] for v in result.variants]


def study_section(result: StudyResult, provenance: dict, figures: dict, level: int = 2) -> list:
    """Variants, Table I (with the paper's VEPD), Table II, details and figures of one study."""
    h, h3 = f"h{level}", f"h{level + 1}"
    parts = [
        f"<{h}>Variants &mdash; what each simulated sensor set models</{h}>",
        _table(["Variant", "what it models"], _variant_rows(result, provenance), css_class="variants"),
        f"<{h}>Table I &mdash; all scenarios pooled</{h}>",
        _table(tables.table_one_header(result), tables.table_one_rows(result), best_first_row=True,
               css_class="numbers"),
        f'<p class="note">{html.escape(tables.resampling_note(result))}'
        + (f"  Paper column: {html.escape(CITATION)}; on other data only the ordering compares, not the "
           "values." if tables.has_paper_values(result) else "") + "</p>",
        *[f'<p class="note warn">{html.escape(note)}</p>' for note in tables.study_notes(result)],
    ]
    adjacent = tables.adjacent_rows(result)
    if adjacent:
        parts += [f"<{h3}>Adjacent ranks: is each variant separable from the next?</{h3}>",
                  f'<p class="note">{html.escape(tables.adjacent_note(result))}</p>',
                  _table(tables.ADJACENT_HEADER, adjacent, css_class="numbers")]
    if len(result.scenarios) > 1:
        parts += [f"<{h}>Table II &mdash; per scenario</{h}>",
                  '<p class="note">group letters per scenario, as in Table I; mean rank: of the average '
                  "ranks in vepd.json.</p>",
                  _table(tables.table_two_header(result), tables.table_two_rows(result))]
    parts += ["<details><summary>Per-scenario W1, W2, intervals and p-values</summary>",
              _table(tables.TABLE_TWO_DETAIL_HEADER, tables.table_two_detail_rows(result)), "</details>"]
    per_scenario = [row for s in result.scenarios for row in tables.adjacent_rows(result, s)]
    if per_scenario and len(result.scenarios) > 1:
        parts += ["<details><summary>Adjacent ranks per scenario</summary>",
                  _table(["scenario"] + tables.ADJACENT_HEADER, per_scenario, css_class="numbers"),
                  "</details>"]
    parts += noise_floor.html_parts(result, _table, h)
    parts += health.html_parts(result, _table, h)
    for title, png in figures.items():
        parts += [f"<{h3}>{html.escape(title)}</{h3}>", _image(png, title)]
    if result.skipped:
        parts += [f"<{h3}>Skipped runs</{h3}>", "<ul>"]
        parts += [f"<li><code>{html.escape(run)}</code>: {html.escape(reason)}</li>"
                  for run, reason in result.skipped]
        parts += ["</ul>"]
    run_rows = [[r.side, r.variant, r.scenario, r.k, f"{r.score.rmse:.4f}", f"{r.score.S_est:.4f}",
                 f"{r.score.S_gt:.4f}", f"{r.score.D:.4f}", r.source] for r in result.runs]
    parts += [
        f"<details><summary>All {len(result.runs)} scored runs</summary>",
        _table(["side", "variant", "scenario", "k", "E (m/s)", "S est", "S gt", "D", "source"], run_rows),
        "</details>",
    ]
    return parts


def report_html(result: StudyResult, figures: dict, source: str, provenance: dict | None = None,
                studies=(), preface=()) -> str:
    """``figures``: {title: PNG bytes} in display order; ``studies``: [(title, note, StudyResult,
    provenance, figures)] shown after the main study; ``preface``: HTML parts shown before the studies
    (the demo's real sample)."""
    provenance = provenance or {}
    o = result.options
    best = tables.closest_to_real(result)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>VEPD report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>Sim-to-real gap of GPS/IMU: VEPD report</h1>",
        *health.first_screen_html(result),
        *banner(provenance),
        f'<p class="note">Scenarios {html.escape(", ".join(result.scenarios))} (excluded: '
        f"{html.escape(', '.join(o.exclude_scenarios) or 'none')}) &middot; closest to real: "
        f"<b>{html.escape(best)}</b> &middot; input <code>{html.escape(source)}</code></p>",
        '<p class="note">Per run: speed RMSE E between the state estimate and ground truth, and the '
        "difference D of their Wiener entropies (spectral flatness).  W1 = Wasserstein distance between "
        "the real and sim distributions of E (m/s), W2 the same for D (unitless), VEPD = (W1 + W2)/2. "
        "VEPD mixes units and is not bounded by 1; lower means the simulated sensors make the estimator "
        f"err like the real ones.  Preprocessing: {o.rate_hz:g} Hz timeline, moving average "
        f"{o.smoothing_window}, {html.escape(o.spectrum)} spectrum, {html.escape(o.speed)} speed.</p>",
    ]
    parts += list(preface)
    parts += study_section(result, provenance, figures)
    for title, note, study, study_provenance, study_figures in studies:
        parts += [f"<h2>{html.escape(title)}</h2>"]
        if note:
            parts += [f'<p class="note">{html.escape(note)}</p>']
        parts += study_section(study, study_provenance, study_figures, level=3)
    parts += ["</body></html>", ""]
    return "\n".join(parts)
