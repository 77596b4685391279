"""Score a run tree, a manifest or the authors' CSV layout (``sim2real-eval score``): the runs read and
scored, the study's statistics, the judge-noise floor of the real bags the runs name, the report."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import UserError
from .common import warn_once
from .replay import ReplayedBags, warn_judge_health

if TYPE_CHECKING:
    from ..metrics.study import StudyResult

def find_runs_to_score(options, runs_dir=None, manifest=None, csv_dir=None) -> tuple:
    """(kind, source, RunSpecs) of exactly one input: a run tree, a manifest or the reference CSV layout."""
    from ..metrics.inputs import discover_csv_dir, discover_runs_dir, read_manifest

    inputs = (("RUNS_DIR", runs_dir), ("--manifest", manifest), ("--csv-dir", csv_dir))
    given = [name for name, value in inputs if value]
    if len(given) != 1:
        raise UserError("give exactly one input: RUNS_DIR, --manifest or --csv-dir "
                        f"(got {', '.join(given) or 'none'})")
    if csv_dir:
        kind, source, specs = "csv", csv_dir, discover_csv_dir(csv_dir, options)
    elif manifest:
        kind, source, specs = "manifest", manifest, read_manifest(manifest, options)
    else:
        kind, source, specs = "runs_dir", runs_dir, discover_runs_dir(runs_dir, options)
    if not specs:
        raise UserError(f"{source}: no runs found")
    return kind, source, specs


@dataclass
class LoadedRuns:
    """Runs read and scored one by one: ``records`` (metrics.RunRecord), ``series`` {key: RunSeries},
    ``skipped`` [(source, reason)] (with ``skip_bad_runs``)."""

    records: list
    series: dict
    skipped: list


@dataclass
class ScoredRuns(LoadedRuns):
    """A scored study: ``result`` (metrics.StudyResult: Tables I/II, intervals, p-values) + the runs."""

    result: StudyResult | None = None
    extra: list = field(default_factory=list)


def load_runs(specs: Sequence, options, *, skip_bad_runs: bool = False, workers: int | None = None,
              progress: Callable | None = None) -> LoadedRuns:
    """Read and score every run (``metrics.inputs.RunSpec``), in ``workers`` processes (default: all)."""
    from ..metrics.inputs import load_and_score_all

    records, series, skipped = load_and_score_all(list(specs), options, skip_bad_runs, workers, progress)
    return LoadedRuns(records, series, skipped)


def score_runs(specs: Sequence, options, *, keep: Callable | None = None, extra_records: Sequence = (),
               skip_bad_runs: bool = False, workers: int | None = None, progress: Callable | None = None,
               source: str = "", judge_health: bool = False) -> ScoredRuns:
    """Score a study: the runs of ``specs`` selected by ``keep(spec)`` (plus ``extra_records``,
    runs scored before, e.g. tune's real side) → W1, W2, VEPD, intervals, p-values.  ``judge_health``:
    each real bag run's judge health too (``assess_real_runs``; a DataWarning when one is not tracked).

    ``progress(stage, advance, total)``: stage "reading runs" (one per run), then
    "bootstrap/permutations" (one per (variant, pooled or scenario) cell); ``total`` given once.
    """
    from ..metrics import score_study

    specs = [spec for spec in specs if keep is None or keep(spec)]
    if not specs:
        raise UserError(f"{source}: no runs to score" if source else "no runs to score")
    report = progress or (lambda stage, advance, total=None: None)
    report("reading runs", 0, len(specs))
    loaded = load_runs(specs, options, skip_bad_runs=skip_bad_runs, workers=workers,
                       progress=lambda n: report("reading runs", n, None))
    if judge_health:
        loaded.records = assess_real_runs(loaded.records, loaded.series, specs, options)
        warn_judge_health(loaded.records)
    records = list(extra_records) + loaded.records
    variants = {r.variant for r in records if r.side != "real"}
    report("bootstrap/permutations", 0, len(variants) * (1 + len({r.scenario for r in records})))
    result = score_study(records, options, loaded.skipped,
                         progress=lambda n: report("bootstrap/permutations", n, None),
                         workers=workers or os.cpu_count() or 1)
    return ScoredRuns(loaded.records, loaded.series, loaded.skipped, result, list(extra_records))


def assess_real_runs(records: Sequence, series: dict, specs: Sequence, options) -> list:
    """``records`` with the judge health (``replay.health.health_of_run_bag``) of each real bag run that
    has a run.yaml (replayed runs, the ROS recorder's runs); a run whose health cannot be measured is
    said in a DataWarning and left unassessed."""
    import dataclasses

    from ..replay.offline import health_of_run_bag
    from ..runs import read_run_info

    by_key = {spec.key: spec for spec in specs}
    out = []
    for record in records:
        spec = by_key.get(record.key)
        if record.side == "real" and spec is not None and spec.kind == "bag" and record.key in series:
            try:
                info = read_run_info(spec.source)
                health = health_of_run_bag(spec.source, info, series[record.key], record.score, options)
            except UserError as exc:
                warn_once([f"{spec.source}: judge health not assessed ({exc})"])
            else:
                record = dataclasses.replace(record, health=health)
        out.append(record)
    return out


def noise_floor_draws(specs: Sequence, options, draws: int, *, workers: int | None = None,
                      progress: bool = False) -> tuple:
    """The judge-noise floor's draws for the real runs of ``specs`` (``noise_floor``): each real
    run's real bag — named by its run.yaml (``source``, ``judge``, ``window_ns``: a replayed real bag) —
    judged ``draws`` times with random judge timing, seeded as the demo seeds them, so the floor of a
    demo's kept runs is the demo's.  Returns (one list of RunRecord per draw, "") or (None, why not):
    inputs that record no real bag (CSV files, manifests, ROS recordings without a window) have no floor.
    """
    from ..errors import UserError as _UserError
    from ..pipeline.batch import run_batch
    from ..replay.offline import BagReplay, replay_spec_of_run
    from ..runs import read_run_info

    real = [spec for spec in specs if spec.side == "real"]
    tasks = []
    for spec in real:
        if spec.kind != "bag":
            return None, f"{spec.source}: a CSV run records no real bag to judge again"
        try:
            info = read_run_info(spec.source)
        except _UserError:
            return None, f"{spec.source}: no run.yaml naming the real bag it was judged from"
        replay = replay_spec_of_run(info, spec.scenario, spec.k)
        if replay is None:
            judge = info.judge or {}
            return None, (f"{spec.source}: its run.yaml names no replayed real bag and judge files that "
                          f"exist here (source {info.source}, judge {judge.get('ekf')}, window_ns "
                          f"{info.window_ns})")
        tasks.append(BagReplay(replay, (), real=False, scoring=options, write=False, floor_draws=draws))
    if not tasks:
        return None, "no real runs"
    report = run_batch(tasks, ".", workers=workers, progress=progress,
                       description=f"judge-noise floor: {len(tasks)} real bag(s) x {draws} timing draws")
    if report.failures:
        first = report.failures[0]
        return None, f"{first.label}: {first.message}"
    replayed = ReplayedBags(tasks, report, 0.0)
    return replayed.noise_floor_draws(), ""


__all__ = ["LoadedRuns", "ScoredRuns", "assess_real_runs", "find_runs_to_score", "load_runs",
           "noise_floor_draws", "score_runs"]
