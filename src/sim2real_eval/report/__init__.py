"""Reports of a scored study: vepd.json, statistics.json, runs.csv, tables.md, PNG figures, report.html.

``write_report`` builds everything in a temporary sibling of the output folder and renames it into
place only when complete (atomic.atomic_directory): a failure leaves no partial report.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_directory
from ..errors import UserError
from ..metrics.study import REAL, StudyResult
from ..runs import is_number
from ..workers import WorkerPool
from . import figures, html, tables
from . import provenance as provenance_module

__all__ = ["STATISTICS_FIGURES", "ReportSection", "Study", "default_trace_runs", "draw", "figure_groups",
           "parse_trace_run", "write_report"]

# Figures drawn from the intervals, comparisons and floor (the rest need only the runs' scores).
STATISTICS_FIGURES = ("overview",)


def parse_trace_run(text: str) -> tuple[str, int]:
    """"SCENARIO:K" -> (scenario, k)."""
    scenario, sep, k = text.rpartition(":")
    if not sep or not scenario or not is_number(k):
        raise UserError(f"--trace-runs: expected SCENARIO:K (e.g. line:1), got {text!r}")
    return scenario, int(k)


def default_trace_runs(result: StudyResult) -> list:
    """One run per scenario: the lowest k that the real side has."""
    chosen = []
    for scenario in result.scenarios:
        ks = sorted(r.k for r in result.runs if r.side == REAL and r.scenario == scenario)
        if ks:
            chosen.append((scenario, ks[0]))
    return chosen


@dataclass(frozen=True)
class Study:
    """A further study shown on the same page (the demo's simulated-IMU study); its figures are saved
    as ``figures/<name>_*.png``."""

    name: str
    title: str
    result: StudyResult
    series: dict
    note: str = ""
    provenance: dict | None = None


@dataclass(frozen=True)
class ReportSection:
    """A section a caller renders itself (the demo's real sample): HTML parts shown before the studies,
    and markdown appended to tables.md."""

    html: list
    markdown: str = ""


def _figure_jobs(prefix: str, result: StudyResult, series: dict, trace_runs) -> list:
    """[(file name, title, function, args)] of one study's figures, in display order."""
    overview = "Tables I and II at a glance" if len(result.scenarios) > 1 else "Table I at a glance"
    jobs = [(f"{prefix}distributions",
             "Fig. 3 — per-run RMSE and entropy-difference distributions, real vs sim",
             figures.distributions_png, (result,)),
            (f"{prefix}overview", overview, figures.overview_png, (result,))]
    for scenario, k in trace_runs:
        # Only the runs the figure shows travel to a worker.
        shown = {key: value for key, value in series.items() if key[2:] == (scenario, k)}
        jobs.append((f"{prefix}traces_{scenario}_{k}", f"Velocity traces — {scenario} run {k}",
                     figures.traces_png, (result, shown, scenario, k)))
    return jobs


def figure_groups(result: StudyResult, series: dict, trace_runs=None, studies=()) -> list:
    """[[(file name, title, function, args)] of the main study, then of each ``Study``], display order."""
    trace_runs = default_trace_runs(result) if trace_runs is None else list(trace_runs)
    groups = [_figure_jobs("", result, series, trace_runs)]
    return groups + [_figure_jobs(f"{study.name}_", study.result, study.series,
                                  default_trace_runs(study.result)) for study in studies]


def draw(job) -> bytes | None:
    """PNG bytes of one figure job ``(function, args)`` (picklable: any worker may draw it)."""
    function, args = job
    return function(*args)


def write_report(out_dir, result: StudyResult, series: dict, source: str, trace_runs=None,
                 extra_options=None, overwrite: bool = False, workers: int = 1,
                 provenance: dict | None = None, studies=(), pngs: dict | None = None, sections=()) -> Path:
    """Write the report folder ``out_dir``; returns its path.

    ``series``: {(side, variant, scenario, k): RunSeries} for the velocity-trace figures;
    ``trace_runs``: [(scenario, k)] (default: ``default_trace_runs``); ``workers`` > 1 draws the
    figures in that many forked processes (same PNG bytes: each figure is drawn by one process alone).
    ``provenance``: ``report.provenance.collect(...)`` — what the data are, software, judge, seeds —
    shown as the page's banner and stored in vepd.json ``options.provenance`` (default: collected from
    the scored runs' own records).  ``studies``: ``Study`` sections shown after the main study.
    ``pngs``: {figure file name: PNG bytes or None} already drawn (``figure_groups`` + ``draw``, e.g. while
    the statistics were resampled); the others are drawn here.  ``sections``: ``ReportSection`` shown
    before the studies (and appended to tables.md).
    """
    trace_runs = default_trace_runs(result) if trace_runs is None else list(trace_runs)
    scored = {(r.scenario, r.k) for r in result.runs}
    for scenario, k in trace_runs:
        if (scenario, k) not in scored:
            raise UserError(f"--trace-runs: no scored run {scenario}:{k}")
    if provenance is None:
        options = extra_options or {}
        provenance = provenance_module.collect(result, options.get("input", ""),
                                               options.get("source", source))
    groups = figure_groups(result, series, trace_runs, studies)
    jobs = [job for group in groups for job in group if job[0] not in (pngs or {})]
    drawn = _draw_all([job[2:] for job in jobs], workers)
    pngs = dict(pngs or {}, **dict(zip((name for name, *_ in jobs), drawn)))

    def shown(group):  # {title: PNG} of one study's drawn figures, in display order
        return {title: pngs[name] for name, title, *_ in group if pngs[name] is not None}

    main = shown(groups[0])
    studies_html = [(study.title, study.note, study.result,
                     study.provenance or provenance_module.collect(study.result), shown(group))
                    for study, group in zip(studies, groups[1:])]
    documents = _documents(result, source, dict(extra_options or {}, provenance=provenance), main,
                           studies_html, sections)
    out_dir = Path(out_dir)
    with atomic_directory(out_dir, overwrite=overwrite, empty=False) as temp:
        for name, text in documents.items():  # a file name that is not UTF-8 is shown as \xff
            (temp / name).write_text(text, encoding="utf-8", errors="backslashreplace")
        figure_dir = temp / "figures"
        figure_dir.mkdir()
        for name, png in pngs.items():
            if png is not None and any(name == job[0] for group in groups for job in group):
                (figure_dir / f"{_safe(name)}.png").write_bytes(png)
    return out_dir


def _documents(result: StudyResult, source: str, options: dict, figures: dict, studies_html: list,
               sections) -> dict:
    """{file name: text} of the report's text files."""
    provenance = options["provenance"]
    return {
        "vepd.json": tables.to_json(tables.vepd_document(result, options)),
        "statistics.json": tables.to_json(tables.statistics_document(result)),
        "runs.csv": tables.runs_csv(result),
        "tables.md": tables.tables_markdown(result) + "".join(section.markdown for section in sections),
        "report.html": html.report_html(result, figures, source, provenance, studies_html,
                                        [part for section in sections for part in section.html]),
    }


def _draw_all(jobs: list, workers: int) -> list:
    """PNG bytes (or None) of every figure job, in job order."""
    if workers <= 1 or len(jobs) <= 1:
        return [draw(job) for job in jobs]
    with WorkerPool(min(workers, len(jobs))) as pool:
        return list(pool.map(draw, jobs))


def _safe(name: str) -> str:
    # Scenario names are free text: keep file names portable.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
