"""Score a run tree, a manifest or the authors' CSV layout (``sim2real-eval score``): the runs read and
scored, the study's statistics, the judge-noise floor of the real bags the runs name, the report."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import UserError
from ..outputs import NEW, check_paths, output_folder
from ..pipeline.batch import run_batch
from ..runs import read_run_info
from .common import warn_once
from .replay import ReplayedBags, warn_judge_health

if TYPE_CHECKING:
    from ..metrics import ScoreOptions
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
    from ..replay.offline import health_of_run_bag

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
    from ..replay.offline import BagReplay, replay_spec_of_run

    real = [spec for spec in specs if spec.side == "real"]
    tasks = []
    for spec in real:
        if spec.kind != "bag":
            return None, f"{spec.source}: a CSV run records no real bag to judge again"
        try:
            info = read_run_info(spec.source)
        except UserError:
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


# ====================================================================== sim2real-eval score
@dataclass(frozen=True)
class ScoreRequest:
    """What ``sim2real-eval score`` asks for: exactly one input, the scoring options, the report folder."""

    out: str
    options: ScoreOptions                  # preprocessing and statistics (warmup_s: from the runs or warmup)
    runs_dir: str | None = None
    manifest: str | None = None
    csv_dir: str | None = None
    window: str | None = None              # START:END (ns) of the bag runs that record none
    variants: Sequence[str] = ()           # globs of the sim variants scored (none: all)
    exclude_variants: Sequence[str] = ()
    warmup: float | None = None            # seconds left out (None: what the runs' run.yaml record)
    noise_floor_draws: int | None = 4      # None: no judge-noise floor
    trace_runs: Sequence[str] | None = None  # SCENARIO:K of the velocity traces (None: first of each)
    skip_bad_runs: bool = False
    workers: int | None = None
    overwrite: bool = False


@dataclass
class ScoreReport:
    """A study scored and its report written to ``out``: ``scored`` (the runs, ``result``) and the input
    ``kind`` and ``source`` it came from."""

    scored: ScoredRuns
    kind: str
    source: str
    out: str

    @property
    def result(self) -> StudyResult:
        return self.scored.result


def score_request(request: ScoreRequest, progress: Callable | None = None) -> ScoreReport:
    """``sim2real-eval score``: the runs of the input (``find_runs_to_score``) selected by variant, scored
    (``score_runs``, with each real bag run's judge health), the judge-noise floor of the real bags the
    runs name (``noise_floor_draws``), the report (tables, figures, report.html) written atomically.
    ``progress(stage, advance, total=None)`` as ``score_runs``, then the stages "judge-noise floor" and
    "figures and report" (one step each)."""
    from ..metrics.inputs import parse_window, warmup_of_runs, with_window
    from ..report import parse_trace_run, write_report
    from ..report.provenance import collect as collect_provenance

    if request.noise_floor_draws is not None and request.noise_floor_draws < 2:
        raise UserError(f"--noise-floor-draws: must be >= 2 (the floor compares pairs of draws), got "
                        f"{request.noise_floor_draws}")
    report = progress or (lambda stage, advance, total=None: None)
    trace_runs = [parse_trace_run(t) for t in request.trace_runs] if request.trace_runs else None
    replace = output_folder(request.out, "--out", request.overwrite) != NEW or os.path.lexists(request.out)
    kind, source, specs = find_runs_to_score(request.options, request.runs_dir, request.manifest,
                                             request.csv_dir)
    window = parse_window(request.window) if request.window else None
    if window is not None:
        specs = with_window(specs, window)
    specs = select_variants(specs, request.variants, request.exclude_variants)
    options = dataclasses.replace(request.options, warmup_s=warmup_of_runs(specs, request.warmup)).validate()
    label = {"runs_dir": "RUNS_DIR", "manifest": "--manifest", "csv": "--csv-dir"}[kind]
    check_paths({label: source, "(runs)": sorted({spec.source for spec in specs})}, {"--out": request.out})
    check_real_side(specs, kind, request)
    scored = score_runs(specs, options, skip_bad_runs=request.skip_bad_runs, workers=request.workers,
                        progress=report, judge_health=True)
    result = scored.result
    if request.noise_floor_draws is not None:
        report("judge-noise floor", 0, 1)
        result.judge_noise_floor = measure_noise_floor(specs, result, options, request.noise_floor_draws,
                                                       request.workers)
        report("judge-noise floor", 1)
    report("figures and report", 0, 1)
    write_report(request.out, result, scored.series, source, trace_runs,
                 extra_options={"input": kind, "source": str(source),
                                **({"window_ns": list(window)} if window is not None else {}),
                                **({"speed": "as written in the CSVs"} if kind == "csv" else {})},
                 overwrite=replace, workers=request.workers or os.cpu_count() or 1,
                 provenance=collect_provenance(result, kind, str(source)))
    report("figures and report", 1)
    return ScoreReport(scored, kind, str(source), request.out)


def select_variants(specs: list, include, exclude) -> list:
    """The runs of the sim variants matching an ``include`` glob (all when none is given) and no
    ``exclude`` glob, plus the real runs of the scenarios those variants cover.  Without any glob: every
    run, but a tree whose variants cover different scenarios (the demo's GPS and IMU studies) is refused
    with the options that split it."""
    if not include and not exclude:
        _check_one_scenario_set(specs)
        return list(specs)
    chosen = _chosen_variants(sorted({s.variant for s in specs if s.side != "real"}), include, exclude)
    scenarios = {s.scenario for s in specs if s.side != "real" and s.variant in chosen}
    return [s for s in specs if (s.variant in chosen if s.side != "real" else s.scenario in scenarios)]


def _chosen_variants(sim_variants: list, include, exclude) -> set:
    """The variants matching an ``include`` glob (all without one) and no ``exclude`` glob; a glob that
    matches no variant, or nothing left, is a UserError listing the variants."""
    for option, globs in (("--variant", include or []), ("--exclude-variant", exclude or [])):
        for glob in globs:
            if not any(fnmatchcase(variant, glob) for variant in sim_variants):
                raise UserError(f"{option} {glob!r} matches no sim variant "
                                f"(have: {', '.join(sim_variants)})")
    chosen = {variant for variant in sim_variants
              if (not include or any(fnmatchcase(variant, glob) for glob in include))
              and not any(fnmatchcase(variant, glob) for glob in exclude or [])}
    if not chosen:
        raise UserError("no sim variant left after --variant/--exclude-variant "
                        f"(have: {', '.join(sim_variants)})")
    return chosen


def _check_one_scenario_set(specs: list) -> None:
    """Every sim variant covers the same scenarios, or a UserError naming the sets and the options that
    score each alone."""
    covered: dict = {}
    for spec in specs:
        if spec.side != "real":
            covered.setdefault(spec.variant, set()).add(spec.scenario)
    groups: dict = {}
    for variant, scenarios in covered.items():
        groups.setdefault(frozenset(scenarios), []).append(variant)
    if len(groups) > 1:
        parts = [f"{', '.join(sorted(variants))} on {', '.join(sorted(scenarios))}"
                 for scenarios, variants in sorted(groups.items(), key=lambda item: sorted(item[1]))]
        raise UserError("scenario sets differ between sim variants (" + "; ".join(parts) + "): score "
                        "each set alone with --variant GLOB or --exclude-variant GLOB, or add the "
                        "missing runs")


def check_real_side(specs, kind: str, request: ScoreRequest) -> None:
    """Simulated runs alone (``score`` of a ``simulate`` output): the one-line error says how to add the
    real side they are compared with."""
    from ..metrics.inputs import REAL

    if not specs or any(spec.side == REAL for spec in specs):
        return
    scenarios = ", ".join(sorted({spec.scenario for spec in specs}))
    if kind == "runs_dir":
        step = (f"replay real bags of those scenarios into the same tree first, e.g. `sim2real-eval replay "
                f"bags/reference/line --replace imu=chrono_paper_demo --out {request.runs_dir}` (the shipped "
                "reference runs of scenario line), or run `sim2real-eval demo`, which makes both sides")
    elif kind == "manifest":
        step = f"list real runs of those scenarios in {request.manifest} (side: real)"
    else:
        step = f"put the real runs in {request.csv_dir}/Real/<scenario>_<k>.csv"
    raise UserError(f"only simulated runs (scenarios {scenarios}), no real runs to compare them with: {step}")


def measure_noise_floor(specs: list, result, options, draws: int, workers) -> dict:
    """``StudyResult.judge_noise_floor`` for the real runs scored (``service.noise_floor_draws``), or
    {"unavailable": why} when the inputs name no real bag to judge again."""
    from ..noise_floor.compute import judge_noise_floor

    scored = {r.key for r in result.runs if r.side == "real"}
    found, why = noise_floor_draws([s for s in specs if s.key in scored], options, draws, workers=workers)
    if found is None:
        return {"unavailable": why}
    return judge_noise_floor(found, result.variants, result.scenarios)


__all__ = ["LoadedRuns", "ScoreReport", "ScoreRequest", "ScoredRuns", "assess_real_runs", "check_real_side",
           "find_runs_to_score", "load_runs", "measure_noise_floor", "noise_floor_draws", "score_request",
           "score_runs", "select_variants"]
