"""The judge-noise floor in the reports (``metrics.noise_floor``): statistics.json ``judge_noise_floor``,
a tables.md section and a report.html paragraph — each only when the study has one (the demo's)."""
from __future__ import annotations

import html

from ..metrics.study import StudyResult

SENTENCE = ("Differences of VEPD below the judge-noise floor are not meaningful: it is the VEPD between the "
            "real runs judged twice with independent random judge timing (timer phases, tick latency), "
            "the score a perfect sensor model would get from judge timing alone.")
HEADER = ["Variant", "floor: VEPD (pooled)", "W1 (m/s)", "W2"]


def statistics(result: StudyResult) -> dict:
    """``{"judge_noise_floor": …}`` for statistics.json, or nothing."""
    return {} if result.judge_noise_floor is None else {"judge_noise_floor": result.judge_noise_floor}


def _rows(result: StudyResult) -> tuple:
    """One row per distinct floor (the variants of one study share their scenarios, hence their floor)."""
    floor = result.judge_noise_floor
    header = HEADER + [f"{s}: floor VEPD" for s in result.scenarios]
    rows: dict = {}
    for variant in result.variants:
        pooled, cells = floor["combined"][variant], floor["per_scenario"][variant]
        values = (f"{pooled['VEPD']:.4f}", f"{pooled['W1']:.4f}", f"{pooled['W2']:.4f}",
                  *[f"{cells[s]['VEPD']:.4f}" for s in result.scenarios])
        rows.setdefault(values, []).append(variant)
    every = len(rows) == 1 and len(result.variants) > 1
    return header, [["every variant" if every else ", ".join(variants), *values]
                    for values, variants in rows.items()]


def markdown(result: StudyResult) -> list:
    """tables.md lines (none without a floor)."""
    if result.judge_noise_floor is None:
        return []
    from .tables import markdown_table

    header, rows = _rows(result)
    return ["## Judge-noise floor", "", SENTENCE, "", markdown_table(header, rows), ""]


def html_parts(result: StudyResult, table, heading: str = "h2") -> list:
    """report.html parts (none without a floor); ``table(header, rows)`` renders a table."""
    if result.judge_noise_floor is None:
        return []
    header, rows = _rows(result)
    return [f"<{heading}>Judge-noise floor</{heading}>", f'<p class="note">{html.escape(SENTENCE)}</p>',
            table(header, rows)]
