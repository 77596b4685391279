"""Step 3 of the demo: both studies scored (``score_studies``: intervals, p-values, comparisons, each
study's judge-noise floor) and their figures drawn by the same workers; with the real sample, the
covariance sensitivity (``covariance_sensitivity``: the whole study again on each other import)."""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ..metrics import score_study
from ..metrics.separation import below_floor
from ..noise_floor.compute import judge_noise_floor
from ..workers import WorkerPool
from .config import EVERY_SCENARIO
from .findings import CHECKED_PAIRS
from .job import IMU_STUDY, DemoJob, RealSide
from .judges import judge_robustness
from .plan import imu_variant, judge_runs
from .real_sample import PSEUDORANGE, scale_label


@dataclass
class ScoredStudies:
    """Both studies of one demo, scored."""

    gps_result: Any
    imu_result: Any
    gps_series: dict
    imu_series: dict
    run_records: dict         # {record key: run.yaml dict} (the report's provenance)
    imu_title: str
    floors: dict | None       # {"gps_study" | "imu_study": pooled floor {VEPD, VEPD_interval}}
    pngs: dict                # {figure file name: PNG bytes or None}
    judges: dict | None = None  # judges.json (--judges: every run judged by each judge, compared)


def _study_names(job: DemoJob, side: RealSide) -> tuple:
    """(GPS study variants, IMU study variants), in the order the demo file and the real sample list
    them."""
    gps = list(job.config.gps_variants) + [r.variant for r in side.gps_extra]
    imu = [imu_variant(job.config)] + [r.variant for r in side.imu_extra]
    return gps, imu


def _split(job: DemoJob, side: RealSide, scored: list) -> tuple:
    """The runs of the two studies: (GPS records, IMU records, GPS series, IMU series, run records)."""
    gps_names, imu_names = (set(names) for names in _study_names(job, side))
    imu_scenarios = set(side.imu_scenarios)

    def in_gps(key):
        return key[0] == "real" or key[1] in gps_names

    def in_imu(key):
        return key[2] in imu_scenarios and (key[0] == "real" or key[1] in imu_names)

    gps_records = [run.record for run in scored if in_gps(run.record.key)]
    imu_records = [run.record for run in scored if in_imu(run.record.key)]
    series = {run.record.key: run.series for run in scored}
    return (gps_records, imu_records, {k: v for k, v in series.items() if in_gps(k)},
            {k: v for k, v in series.items() if in_imu(k)}, {run.record.key: run.info for run in scored})


def _pairs(job: DemoJob, side: RealSide) -> list:
    """Pooled pairs compared beyond the adjacent ranks: those of the paper's ordering checks (in this
    study's names) and every fitted variant of the real sample against every other GPS variant."""
    names = dict(job.config.paper_variants)
    pairs = [(names[a], names[b]) for a, b in CHECKED_PAIRS if a in names and b in names]
    fitted = [r.variant for r in side.gps_extra]
    return pairs + [(f, v) for f in fitted for v in job.config.gps_variants] + list(combinations(fitted, 2))


def _attach_floors(draw_records: list, gps_result, imu_result) -> dict:
    """Each study's judge-noise floor from the real bags' timing draws; {study: pooled floor}."""
    for result in (gps_result, imu_result):
        result.judge_noise_floor = judge_noise_floor(draw_records, result.variants, result.scenarios)
    return {name: {key: next(iter(result.judge_noise_floor["combined"].values()))[key]
                   for key in ("VEPD", "VEPD_interval")}
            for name, result in (("gps_study", gps_result), ("imu_study", imu_result))}


def _imu_title(job: DemoJob, side: RealSide) -> str:
    names = " / ".join(_study_names(job, side)[1])
    where = "every scenario" if side.imu_scenario == EVERY_SCENARIO and len(side.bags) > 1 else \
        ", ".join(side.imu_scenarios)
    return f"real GPS + {names} vs real GPS + real IMU ({where})"


def score_studies(job: DemoJob, side: RealSide, replayed) -> ScoredStudies:
    """Step 3: both studies scored (intervals, p-values, comparisons, the floor) and their figures."""
    from ..report import STATISTICS_FIGURES, draw

    gps_records, imu_records, gps_series, imu_series, run_records = _split(job, side, replayed.scored)
    imu_title = _imu_title(job, side)
    options, workers = job.options, job.workers
    with contextlib.ExitStack() as stack:
        # One pool for the resampling and the figures: the figures that need only the runs' scores are
        # drawn while the intervals are resampled, the overview (intervals, ties, floor) after them.
        pool = stack.enter_context(WorkerPool(workers)) if workers > 1 else None
        point = dataclasses.replace(options, bootstrap=0, permutations=0)
        early = _figures(score_study(gps_records, point), gps_series, score_study(imu_records, point),
                         imu_series, imu_title, lambda name: name not in STATISTICS_FIGURES)
        drawing = {name: pool.submit(draw, job) for name, job in early.items()} if pool else {}
        gps_result = score_study(gps_records, options, workers=workers, pairs=_pairs(job, side), pool=pool)
        imu_result = score_study(imu_records, options, workers=workers, pool=pool)
        floors = _attach_floors(replayed.noise_floor_draws(), gps_result, imu_result) if job.draws else None
        late = _figures(gps_result, gps_series, imu_result, imu_series, imu_title,
                        lambda name: name in STATISTICS_FIGURES)
        drawing.update({name: pool.submit(draw, job) for name, job in late.items()} if pool else {})
        pngs = {name: future.result() for name, future in drawing.items()} if pool else \
            {name: draw(job) for name, job in {**early, **late}.items()}
    return ScoredStudies(gps_result, imu_result, gps_series, imu_series, run_records, imu_title, floors, pngs)


def score_again(job: DemoJob, side: RealSide, bags: dict, description: str) -> tuple:
    """Both studies again on ``bags`` with ``job``'s judge — judged (no run bag written, nothing announced)
    and scored without figures: (GPS StudyResult, IMU StudyResult, floors or None).  The real sample's
    sensitivity imports and ``--judges``' other judges (``compare_judges``) take this path."""
    replayed, _groups = judge_runs(job, side, bags, description, main=False)
    gps_records, imu_records, *_rest = _split(job, side, replayed.scored)
    gps = score_study(gps_records, job.options, workers=job.workers)
    imu = score_study(imu_records, job.options, workers=job.workers)
    floors = _attach_floors(replayed.noise_floor_draws(), gps, imu) if job.draws else None
    return gps, imu, floors


def compare_judges(job: DemoJob, side: RealSide, scored: ScoredStudies) -> dict:
    """``--judges`` (``judges.py``): both studies again with every run judged by each other judge
    (``score_again``), then the judges compared; judges.json's document."""
    def again(judge, name: str) -> dict:
        other = dataclasses.replace(job, config=dataclasses.replace(job.config, judge=judge))
        gps, imu, _floors = score_again(other, side, side.bags, f"judge {name}: judging {{}} real bags")
        return {"gps_study": gps, "imu_study": imu}

    main = {"gps_study": scored.gps_result, "imu_study": scored.imu_result}
    return judge_robustness(job.config.judges, job.config.judge, main, again, job.out, job.options,
                            job.notice)


def covariance_sensitivity(job: DemoJob, side: RealSide, scored: ScoredStudies) -> dict:
    """The real sample's covariance sensitivity: the whole study again on each other import of the
    evaluated windows (the fix σ scaled; the pseudorange policy), judged and scored like the main one;
    {label: {sigma_m, gps_study: {variant: {VEPD, VEPD_ci95, below_floor}}, imu_study: …, floor: …}},
    the main import (1×) included, in σ order."""
    sample = side.sample
    results = {sample.main_label: (scored.gps_result, scored.imu_result, scored.floors)}
    for label, bags in sample.sensitivity_bags.items():
        results[label] = score_again(job, side, bags, f"sensitivity {label}: judging {{}} real bags")
    order = [scale_label(s) for s in sorted((1.0, *sample.config.sensitivity))] + \
        [PSEUDORANGE] * (PSEUDORANGE in results)

    def cells(result):
        return {v: {"VEPD": result.combined[v]["VEPD"], "VEPD_ci95": result.combined[v]["VEPD_ci95"],
                    "below_floor": below_floor(result, v)} for v in result.variants}

    return {label: {"sigma_m": sample.sensitivity_sigma[label], "gps_study": cells(results[label][0]),
                    "imu_study": cells(results[label][1]), "floor": results[label][2] or {}}
            for label in order}


def _figures(gps_result, gps_series: dict, imu_result, imu_series: dict, imu_title: str, wanted) -> dict:
    """{figure file name: (function, args)} of the demo's report (the GPS study, then the IMU study's
    figures as its section: ``imu_study_*``) whose base name (``overview``, …) ``wanted`` accepts."""
    from ..report import Study, figure_groups

    section = Study(IMU_STUDY, imu_title, imu_result, imu_series)
    groups = figure_groups(gps_result, gps_series, studies=[section])
    prefixes = [""] + [f"{IMU_STUDY}_"]
    return {name: (function, args) for prefix, group in zip(prefixes, groups)
            for name, _title, function, args in group if wanted(name[len(prefix):])}
