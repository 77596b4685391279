"""The judge-noise floor in the reports (``noise_floor.compute``): statistics.json ``judge_noise_floor``,
a tables.md section and a report.html paragraph — each only when the study asked for one (``demo`` and
``score`` do by default; when it could not be measured, the reason is given instead)."""
from __future__ import annotations

import html

from ..metrics.study import StudyResult

SENTENCE = ("A VEPD, or a difference of VEPD, not above the judge-noise floor is not meaningful: the floor "
            "is the VEPD between the real runs judged several times with independent random judge timing "
            "(timer phases, tick latency), one value per pair of draws — the score a perfect sensor model "
            "would get from judge timing alone.  Results are compared with the highest pair value.")
HEADER = ["Variant", "floor: VEPD (mean of pairs)", "range over the pairs", "W1 (m/s)", "W2"]


def statistics(result: StudyResult) -> dict:
    """``{"judge_noise_floor": …}`` for statistics.json, or nothing."""
    return {} if result.judge_noise_floor is None else {"judge_noise_floor": result.judge_noise_floor}


def unavailable(result: StudyResult) -> str | None:
    """Why a floor asked for could not be measured (None when there is one, or none was asked for)."""
    floor = result.judge_noise_floor
    return None if not floor or "combined" in floor else str(floor.get("unavailable"))


def _interval(cell: dict) -> str:
    low, high = cell["VEPD_interval"]
    return f"[{low:.4f}, {high:.4f}]"


def _rows(result: StudyResult) -> tuple:
    """One row per distinct floor (the variants of one study share their scenarios, hence their floor)."""
    floor = result.judge_noise_floor
    header = HEADER + [f"{s}: floor VEPD [range]" for s in result.scenarios]
    rows: dict = {}
    for variant in result.variants:
        pooled, cells = floor["combined"][variant], floor["per_scenario"][variant]
        values = (f"{pooled['VEPD']:.4f}", _interval(pooled), f"{pooled['W1']:.4f}", f"{pooled['W2']:.4f}",
                  *[f"{cells[s]['VEPD']:.4f} {_interval(cells[s])}" for s in result.scenarios])
        rows.setdefault(values, []).append(variant)
    every = len(rows) == 1 and len(result.variants) > 1
    return header, [["every variant" if every else ", ".join(variants), *values]
                    for values, variants in rows.items()]


def _draws(result: StudyResult) -> str:
    floor = result.judge_noise_floor
    return f"{floor['draws']} timing draws of every real run, {floor['pairs']} pairs of draws."


def markdown(result: StudyResult, table) -> list:
    """tables.md lines (none without a floor); ``table(header, rows)`` renders a table
    (``report.tables.markdown_table``)."""
    if result.judge_noise_floor is None:
        return []
    reason = unavailable(result)
    if reason is not None:
        return ["## Judge-noise floor", "", f"Not measured: {reason}.", ""]
    header, rows = _rows(result)
    return ["## Judge-noise floor", "", f"{SENTENCE}  {_draws(result)}", "", table(header, rows), ""]


def html_parts(result: StudyResult, table, heading: str = "h2") -> list:
    """report.html parts (none without a floor); ``table(header, rows)`` renders a table."""
    if result.judge_noise_floor is None:
        return []
    reason = unavailable(result)
    if reason is not None:
        return [f"<{heading}>Judge-noise floor</{heading}>",
                f'<p class="note">Not measured: {html.escape(reason)}.</p>']
    header, rows = _rows(result)
    return [f"<{heading}>Judge-noise floor</{heading}>",
            f'<p class="note">{html.escape(SENTENCE)}  {html.escape(_draws(result))}</p>',
            table(header, rows)]
