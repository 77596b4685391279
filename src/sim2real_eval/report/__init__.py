"""Reports of a scored study: vepd.json, statistics.json, runs.csv, tables.md, PNG figures, report.html.

``write_report`` builds everything in a temporary sibling of the output folder and renames it into
place only when complete (atomic.atomic_directory): a failure leaves no partial report.
"""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from ..atomic import atomic_directory
from ..errors import UserError
from ..metrics.study import REAL, StudyResult
from . import figures, html, tables

__all__ = ["default_trace_runs", "parse_trace_run", "write_report"]


def parse_trace_run(text: str) -> tuple[str, int]:
    """"SCENARIO:K" -> (scenario, k)."""
    scenario, sep, k = text.rpartition(":")
    if not sep or not scenario or not k.isdigit():
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


def write_report(out_dir, result: StudyResult, series: dict, source: str, trace_runs=None,
                 extra_options=None, overwrite: bool = False, workers: int = 1) -> Path:
    """Write the report folder ``out_dir``; returns its path.

    ``series``: {(side, variant, scenario, k): RunSeries} for the velocity-trace figures;
    ``trace_runs``: [(scenario, k)] (default: ``default_trace_runs``); ``workers`` > 1 draws the
    figures in that many forked processes (same PNG bytes: each figure is drawn by one process alone).
    """
    trace_runs = default_trace_runs(result) if trace_runs is None else list(trace_runs)
    scored = {(r.scenario, r.k) for r in result.runs}
    for scenario, k in trace_runs:
        if (scenario, k) not in scored:
            raise UserError(f"--trace-runs: no scored run {scenario}:{k}")
    jobs = [("distributions", figures.distributions_png, (result,)),
            ("overview", figures.overview_png, (result,))]
    for scenario, k in trace_runs:
        # Only the runs the figure shows travel to a worker.
        shown = {key: value for key, value in series.items() if key[2:] == (scenario, k)}
        jobs.append((f"traces_{scenario}_{k}", figures.traces_png, (result, shown, scenario, k)))
    pngs = {name: png for (name, _, _), png in zip(jobs, _draw_all(jobs, workers)) if png is not None}
    titles = {
        "distributions": "Fig. 3 — per-run RMSE and entropy-difference distributions, real vs sim",
        "overview": "Tables I and II at a glance",
    }
    titles.update({name: f"Velocity traces — {name[len('traces_'):].replace('_', ' run ')}"
                   for name in pngs if name.startswith("traces_")})
    documents = {
        "vepd.json": tables.to_json(tables.vepd_document(result, extra_options)),
        "statistics.json": tables.to_json(tables.statistics_document(result)),
        "runs.csv": tables.runs_csv(result),
        "tables.md": tables.tables_markdown(result),
        "report.html": html.report_html(result, {titles[n]: png for n, png in pngs.items()}, source),
    }
    out_dir = Path(out_dir)
    with atomic_directory(out_dir, overwrite=overwrite, empty=False) as temp:
        for name, text in documents.items():
            (temp / name).write_text(text, encoding="utf-8")
        figure_dir = temp / "figures"
        figure_dir.mkdir()
        for name, png in pngs.items():
            (figure_dir / f"{_safe(name)}.png").write_bytes(png)
    return out_dir


def _draw(job) -> bytes | None:
    _name, function, args = job
    return function(*args)


def _draw_all(jobs: list, workers: int) -> list:
    """PNG bytes (or None) of every figure job, in job order."""
    if workers <= 1 or len(jobs) <= 1:
        return [_draw(job) for job in jobs]
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=get_context("fork")) as pool:
        return list(pool.map(_draw, jobs))


def _safe(name: str) -> str:
    # Scenario names are free text: keep file names portable.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
