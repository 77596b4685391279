"""Numbers out: vepd.json (fixed schema), statistics.json, runs.csv, tables.md."""
from __future__ import annotations

import csv
import io
import json

from .. import __version__
from ..metrics import separation
from ..metrics.study import StudyResult
from ..noise_floor import render as noise_floor
from . import health
from .paper import paper_vepd

RUN_COLUMNS = ("side", "variant", "scenario", "k", "rmse", "S_est", "S_gt", "D")


def vepd_document(result: StudyResult, extra_options=None) -> dict:
    """The vepd.json document, exactly:
    {"combined": {V: {W1, W2, VEPD, VEPD_ci95, n_real, n_sim}},
     "per_scenario": {V: {S: {W1, W2, VEPD, rank}}}, "options": {...}, "version": str}
    Extra information goes inside "options" only (skipped runs, input kind, ``judge_health``), except
    ``real_tracked`` in each row when the real runs' judge health was assessed (``report.health``)."""
    combined = {
        v: {**{key: result.combined[v][key] for key in ("W1", "W2", "VEPD", "VEPD_ci95", "n_real", "n_sim")},
            **health.row_fields(result)}
        for v in result.variants
    }
    per_scenario = {
        v: {s: {**{key: result.per_scenario[v][s][key] for key in ("W1", "W2", "VEPD", "rank")},
                **health.row_fields(result, s)}
            for s in result.scenarios}
        for v in result.variants
    }
    options = result.options.to_dict()
    options["scenarios"] = list(result.scenarios)
    options["skipped_runs"] = [{"run": run, "reason": reason} for run, reason in result.skipped]
    judged = health.document(result)
    if judged is not None:
        options["judge_health"] = judged
    options.update(extra_options or {})
    return {"combined": combined, "per_scenario": per_scenario, "options": options, "version": __version__}


def statistics_document(result: StudyResult) -> dict:
    """Beyond the paper: percentile-bootstrap 95 % intervals of W1, W2, VEPD and permutation p-values
    (with ``p_min``, the smallest p the test can give), pooled (combined) and per scenario; "resampling"
    says per cell whether (scenario, k) pairs of real and sim runs or the runs of each side were
    resampled (docs/scoring.md); "comparisons": variant against variant (adjacent ranks, pooled and per
    scenario: the VEPD difference, its interval and p); "judge_noise_floor" when measured."""
    return {
        "bootstrap_resamples": result.options.bootstrap,
        "permutations": result.options.permutations,
        "seed": result.options.seed,
        "combined": result.statistics["combined"],
        "per_scenario": result.statistics["per_scenario"],
        "resampling": result.statistics.get("resampling", {}),
        "comparisons": result.statistics.get("comparisons", {}),
        **noise_floor.statistics(result),
    }


def resampling_note(result: StudyResult) -> str:
    """How the intervals and p-values were resampled, in words (one sentence)."""
    o = result.options
    units = set(result.statistics.get("resampling", {}).get("combined", {}).values())
    if units == {"pairs"}:
        how = ("(scenario, k) pairs of real and sim runs resampled together: both sides have the same "
               "run numbers k, as when sim run k replays real bag k")
        shuffle = "labels swapped within pairs"
    elif units == {"runs"}:
        how = "runs resampled within each side and scenario"
        shuffle = "labels shuffled within scenario"
    else:
        how = ("(scenario, k) pairs resampled together where both sides have the same run numbers k, "
               "runs within each side and scenario elsewhere")
        shuffle = "labels swapped within pairs where paired, shuffled within scenario elsewhere"
    ci = (f"95 % CI: percentile bootstrap (of a VEPD difference between variants: expanded percentile, "
          f"docs/scoring.md), {o.bootstrap} resamples, {how}" if o.bootstrap
          else "no intervals (0 bootstrap resamples)")
    p = (f"p: permutation test of “real and sim runs are exchangeable” ({o.permutations} permutations, "
         f"{shuffle}, statistic VEPD)" if o.permutations else "no p-values (0 permutations)")
    return (f"{ci}; {p}; seed {o.seed}.  A † marks an interval that does not contain its estimate "
            "(a distance near 0 is biased upwards under resampling; read it with p).")


def to_json(document: dict) -> str:
    # Floats are written with repr (shortest round-trip), so a reader gets the exact doubles.
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value) -> str:
    """A text cell of a CSV file: one that a spreadsheet would run as a formula (it starts with = + - @,
    tab or CR: a variant named ``=HYPERLINK(...)``) gets a leading ``'``, as OWASP advises.  Only text
    cells: numbers are written as they are (a negative number stays a number)."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def runs_csv(result: StudyResult) -> str:
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(RUN_COLUMNS)
    for r in result.runs:
        s = r.score
        writer.writerow([csv_text(r.side), csv_text(r.variant), csv_text(r.scenario), r.k,
                         repr(s.rmse), repr(s.S_est), repr(s.S_gt), repr(s.D)])
    return stream.getvalue()


def fmt(value, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_ci(interval, digits: int = 4, estimate=None) -> str:
    """"[lo, hi]", with a † when ``estimate`` lies outside (docs/scoring.md)."""
    if not interval:
        return "–"
    outside = estimate is not None and not interval[0] <= estimate <= interval[1]
    return f"[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" + (" †" if outside else "")


def fmt_p(p, permutations: int | None = None) -> str:
    """p to 3 decimals; "≤ 0.001" when it is the smallest value ``permutations`` can give (the true p
    may be far smaller)."""
    if p is None:
        return "–"
    if permutations and p <= 1.0 / (1 + permutations) * (1 + 1e-9):
        return f"≤ {p:.3f}"
    return f"{p:.3f}"


BELOW_FLOOR = "≤ floor"


def fmt_vepd(result: StudyResult, variant: str, scenario: str | None = None) -> str:
    """A VEPD to 4 decimals, marked "≤ floor" when it is not above the judge-noise floor."""
    value = separation.vepd_of(result, variant, scenario)
    marks = [BELOW_FLOOR] * separation.below_floor(result, variant, scenario) + \
        [health.NOT_TRACKED] * (health.tracked(result, scenario) is False)
    return f"{value:.4f}" + "".join(f" ({mark})" for mark in marks)


def has_paper_values(result: StudyResult) -> bool:
    return any(paper_vepd(v) is not None for v in result.variants)


def table_one_rows(result: StudyResult) -> list:
    """Table I rows: variant, group (compact letter display: variants sharing a letter are not
    separable), W1, W2, VEPD (marked when not above the judge-noise floor), CIs, p-value, run counts
    (sorted by VEPD, best first), and the paper's VEPD when the paper has a row for one of the variants."""
    rows = []
    paper = has_paper_values(result)
    ranks = separation.group_letters(result)
    for v in separation.order(result):
        c, st = result.combined[v], result.statistics["combined"][v]
        row = [v, ranks[v], fmt(c["W1"]), fmt_ci(st.get("W1_ci95"), estimate=c["W1"]), fmt(c["W2"]),
               fmt_ci(st.get("W2_ci95"), estimate=c["W2"]), fmt_vepd(result, v),
               fmt_ci(c["VEPD_ci95"], estimate=c["VEPD"]),
               fmt_p(st.get("p_VEPD"), result.options.permutations),
               str(c["n_real"]), str(c["n_sim"])]
        if paper:
            value = paper_vepd(v)
            row.append("–" if value is None else f"{value:g}")
        rows.append(row)
    return rows


TABLE_ONE_HEADER = ["Variant", "group", "W1 (m/s)", "W1 95% CI", "W2", "W2 95% CI", "VEPD", "VEPD 95% CI",
                    "p (perm.)", "n real", "n sim"]
ADJACENT_HEADER = ["ranks", "better", "worse", "VEPD difference", "95% CI (paired)", "p (perm.)",
                   "separable?"]


def adjacent_rows(result: StudyResult, scenario: str | None = None) -> list:
    """One row per pair of adjacent ranks: the difference of VEPD, its interval, p and the verdict."""
    rows = []
    for ranks, entry, separable, reason in separation.adjacent_rows(result, scenario):
        word = {True: "yes", False: "no: tie", None: "not tested"}[separable]
        rows.append(([scenario] if scenario else []) + [
            ranks, entry["better"], entry["worse"], fmt(entry["difference"]),
            fmt_ci(entry.get("difference_ci95")),
            fmt_p(entry.get("p"), result.options.permutations),
            word if separable is not False else f"{word} ({reason.split(': ', 1)[-1]})"])
    return rows


def adjacent_note(result: StudyResult) -> str:
    """What the adjacent-ranks table shows and how a tie is decided (one paragraph)."""
    paired = {e.get("resampling") for e in separation.comparisons(result)} == {"pairs"}
    how = ("paired: the same (scenario, k) units — real run k and both variants' run k — resampled "
           "together, and the two variants' run k swapped in the permutation test" if paired else
           "each side's runs resampled on their own, the two variants' runs shuffled within scenario")
    return (f"Every pair of variants is compared, both against the same real runs ({how}); this table shows "
            f"each variant against the next one in VEPD order.  Rule: {group_rule(result)}.")


def group_rule(result: StudyResult) -> str:
    """The separability rule and what the group letters mean, as every page states it."""
    return separation.rule(result) + " (compact letter display; the best variant's group is \"a\")"


def closest_to_real(result: StudyResult) -> str:
    """The variant with the lowest VEPD, or the group of closest variants, those sharing its letter "a"
    ("a, b (group a: not separable from each other)")."""
    first = separation.closest_group(result)
    return first[0] if len(first) == 1 else f"{', '.join(first)} (group a: not separable from each other)"


def study_notes(result: StudyResult) -> list:
    """Sentences every rendering of the study prints: sub-floor marks and permutation limits."""
    notes = [f"“group”: {group_rule(result)}."]
    if noise_floor.unavailable(result) is not None:
        notes.append(f"Judge-noise floor not measured ({noise_floor.unavailable(result)}): results are not "
                     "compared with what judge timing alone produces.")
    elif result.judge_noise_floor:
        below = [v for v in result.variants if separation.below_floor(result, v)]
        limit = separation.floor_threshold(result, result.variants[0])
        pairs = result.judge_noise_floor["pairs"]
        notes.append(f"“{BELOW_FLOOR}”: the VEPD is not above the judge-noise floor ({limit:.4f}, the "
                     f"highest of its {pairs} pairs of timing draws): judge timing "
                     "alone produces a gap this large, so it is not a measured sensor gap"
                     + (f" ({', '.join(below)} pooled)." if below else "; no pooled VEPD is."))
    notes += [line + "." for line in separation.permutation_warnings(result)]
    return notes
PAPER_COLUMN = "paper's VEPD (real ART data)"


def table_one_header(result: StudyResult) -> list:
    return TABLE_ONE_HEADER + ([PAPER_COLUMN] if has_paper_values(result) else [])


def table_two_rows(result: StudyResult) -> list:
    """Table II rows: variant, then per scenario "VEPD (group letters)" ( "≤ floor" when not above the
    scenario's judge-noise floor), then the mean rank (of the average ranks in vepd.json)."""
    rows = []
    labels = {s: separation.group_letters(result, s) for s in result.scenarios}
    for v in result.variants:
        cells = [f"{result.per_scenario[v][s]['VEPD']:.4f} ({labels[s][v]})"
                 + (f" {BELOW_FLOOR}" if separation.below_floor(result, v, s) else "")
                 + (f" ({health.NOT_TRACKED})" if health.tracked(result, s) is False else "")
                 for s in result.scenarios]
        mean_rank = sum(result.per_scenario[v][s]["rank"] for s in result.scenarios) / len(result.scenarios)
        rows.append([v, *cells, f"{mean_rank:.2f}"])
    return rows


def table_two_header(result: StudyResult) -> list:
    return ["Variant", *[f"{s}: VEPD (group)" for s in result.scenarios], "mean rank"]


def table_two_detail_rows(result: StudyResult) -> list:
    """Per (variant, scenario): W1, W2, VEPD with its CI and p-value."""
    rows = []
    for v in result.variants:
        for s in result.scenarios:
            cell, st = result.per_scenario[v][s], result.statistics["per_scenario"][v][s]
            rows.append([v, s, fmt(cell["W1"]), fmt(cell["W2"]), fmt_vepd(result, v, s),
                         fmt_ci(st.get("VEPD_ci95"), estimate=cell["VEPD"]),
                         fmt_p(st.get("p_VEPD"), result.options.permutations), f"{cell['rank']:g}"])
    return rows


TABLE_TWO_DETAIL_HEADER = ["Variant", "Scenario", "W1 (m/s)", "W2", "VEPD", "VEPD 95% CI", "p (perm.)",
                           "rank"]


def markdown_table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def tables_markdown(result: StudyResult) -> str:
    o = result.options
    excluded = ", ".join(o.exclude_scenarios) or "none"
    warning = health.warning_line(result.runs)
    parts = [
        "# VEPD tables",
        "",
        *([f"**Warning:** {warning}.", ""] if warning else []),
        f"Scenarios: {', '.join(result.scenarios)} (excluded: {excluded}).  Preprocessing: "
        f"{o.rate_hz:g} Hz timeline, moving average {o.smoothing_window}, spectrum {o.spectrum}, "
        f"speed {o.speed}.  {resampling_note(result)}  W1 is in m/s, W2 is unitless; "
        "VEPD = (W1 + W2)/2 is not bounded by 1.",
        "",
        "## Table I — all scenarios pooled (lower is closer to real)",
        "",
        markdown_table(table_one_header(result), table_one_rows(result)),
        "",
        *[f"{note}  " for note in study_notes(result)],
        "",
        "### Adjacent ranks",
        "",
        adjacent_note(result),
        "",
        markdown_table(ADJACENT_HEADER, adjacent_rows(result)),
        "",
        "## Table II — per scenario (group letters per scenario, as in Table I; mean rank of the average "
        "ranks)",
        "",
        markdown_table(table_two_header(result), table_two_rows(result)),
        "",
        "### Per-scenario details",
        "",
        markdown_table(TABLE_TWO_DETAIL_HEADER, table_two_detail_rows(result)),
        "",
        "### Adjacent ranks per scenario",
        "",
        markdown_table(["scenario"] + ADJACENT_HEADER,
                       [row for s in result.scenarios for row in adjacent_rows(result, s)]),
        "",
    ]
    parts += noise_floor.markdown(result, markdown_table)
    parts += health.markdown(result, markdown_table)
    if result.skipped:
        parts += ["## Skipped runs", ""] + [f"- `{run}`: {reason}" for run, reason in result.skipped] + [""]
    return "\n".join(parts)
