"""The main job: the paper's study (seed 003) end to end — real bags → runs → VEPD report.

Steps (``run_demo``):
1. Real bags: ``--real DIR`` (``DIR/<scenario>/<run>/``, runs sorted by name, the first K used; named
   by ``runs.find_real_bags`` like ``replay`` names them), or the synthetic reference data set: the
   runs shipped in ``bags/reference`` plus, when K exceeds them, runs regenerated deterministically
   into ``OUT/reference`` (``reference.py``).  Input bags are only read.
2. Runs (``OUT/runs/<side>/<variant>/<scenario>/<k>/``, the pipeline's run convention; resumable): per
   real bag one task (``pipeline.replay.BagReplay``, the one replay unit, via ``service.replay_bags``)
   reads the bag once and writes these runs, all judged on sensor messages from the same time window
   (where the bag's INS truth exists; ``window_ns`` in run.yaml):
   - the real run: the real /fix + /imu judged as recorded;
   - per GPS variant of the GPS study: simulated GPS *and* IMU driven by the bag's INS ground truth
     (``pipeline.replay`` with both streams replaced; variant directory = the GPS preset name);
   - on the IMU study's scenario: real GPS + simulated IMU (``sim_imu-<preset>``).
   Every judgement is the embedded robot_localization with the ART configuration.
   With the judge-noise floor on (``--noise-floor``), each real bag is also judged twice with independent
   random judge timing (``metrics.noise_floor``; nothing written to ``runs/``).
3. Scores (the scorer's pieces, unchanged): the GPS study → ``OUT/`` (vepd.json, statistics.json,
   runs.csv, tables.md, figures/, report.html); the IMU study → ``OUT/imu_study/`` (same files);
   statistics.json, tables.md and report.html carry each study's ``judge_noise_floor``.
4. ``OUT/demo.json``: wall time per step, K, inputs, and the paper's qualitative ordering checks.
5. The run bags (``OUT/runs``, 3.7 MB per run: 705 MB for K = 10) are the scorer's input, not part of
   the report: this demo's runs are removed once the report is in place, unless ``keep_runs``
   (``--keep-runs``); runs an earlier ``--keep-runs`` kept are kept again (and the summary says so).
   Until then they make an interrupted demo resumable.  Measured alternative (not taken): MCAP with
   zstd chunk compression shrinks them 3.9x, still 179 MB for K = 10 (README).

OUT follows the output policy (``outputs``; docs/pipeline.md, "Outputs"): the demo writes a new or empty
folder, or resumes its own earlier output, recognised by its marker file (``OUT/.sim2real-eval.json``,
listing every report file it wrote with its size and SHA-256): those files are replaced, nothing else
in OUT is touched, and a file among its report names that it did not write is refused up front.  A
folder of the user's is replaced only with ``--overwrite``.  The report files are built in a staging
folder by ``report.write_report`` (atomic) and moved into OUT only when every score is done, so OUT
never holds a half-written report file.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError
from .yamlio import Section, load_yaml

DEFAULT_CONFIG = ("studies", "demo.yaml")
TOP_KEYS = ("name", "seed", "repeats", "quick_repeats", "reference", "gps_study", "imu_study", "judge",
            "ground_truth_rate", "score")
RUNS = "runs"
REFERENCE = "reference"
IMU_STUDY = "imu_study"
SUMMARY = "demo.json"
REPORT_FILES = ("vepd.json", "statistics.json", "runs.csv", "tables.md", "report.html", "figures")
IMU_STUDY_NOTE = ("The paper's second study: the same real runs replayed with the real GPS and a simulated "
                  "IMU, against the real GPS and the real IMU.  It measures the simulated IMU's gap alone; "
                  "each sim run k replays real bag k, so runs are resampled as (scenario, k) pairs.")


# ------------------------------------------------------------------------------------ config
@dataclass(frozen=True)
class DemoConfig:
    source: str
    name: str
    seed: int
    repeats: int
    quick_repeats: int
    reference: str            # path of the reference setup YAML
    gps_variants: tuple       # GPS presets (variant names = preset names)
    gps_study_imu: Any
    imu_scenario: str
    imu_study_imu: Any
    judge: Any                # pipeline.run.JudgeConfig
    ground_truth_rate: float
    bootstrap: int
    permutations: int
    score_seed: int
    static_tfs_by_layout: bool = True  # no judge.static_tfs: each bag gets its default (ART layout → ART)


def load_demo_config(path=None) -> DemoConfig:
    """Parse the demo YAML (default: config/studies/demo.yaml); errors name file: key."""
    from .pipeline.run import check_ground_truth_rate
    from .pipeline.study import check_name, load_judge_config
    from .resources import config_path

    path = Path(path) if path is not None else config_path(*DEFAULT_CONFIG)
    sec = Section(load_yaml(path), str(path))
    sec.unknown_keys(TOP_KEYS)
    gps = sec.section("gps_study", required=True)
    gps.unknown_keys(("gps", "imu"))
    variants = gps.data.get("gps")
    if not isinstance(variants, list) or not variants:
        raise gps.error("gps", f"expected a non-empty list of GPS presets, got {variants!r}")
    for i, name in enumerate(variants):
        check_name(gps, f"gps[{i}]", name, "GPS preset")
    if len(set(variants)) != len(variants):
        raise gps.error("gps", "a preset is listed twice")
    imu = sec.section("imu_study", required=True)
    imu.unknown_keys(("scenario", "imu"))
    score = sec.section("score")
    score.unknown_keys(("bootstrap", "permutations", "seed"))
    judge_section = sec.section("judge")
    by_layout = not judge_section.has("static_tfs")
    judge = load_judge_config(judge_section, path.parent)
    if by_layout:  # decided per real bag (service.default_static_tfs), said on stderr
        import dataclasses

        judge = dataclasses.replace(judge, static_tfs=())
    reference = Path(sec.string("reference", "demo_reference.yaml"))
    if not reference.is_absolute():
        reference = path.parent / reference
    return DemoConfig(
        source=str(path),
        name=sec.string("name", path.stem),
        seed=sec.integer("seed", required=True, minimum=0),
        repeats=sec.integer("repeats", 10, minimum=1),
        quick_repeats=sec.integer("quick_repeats", 3, minimum=1),
        reference=str(reference),
        gps_variants=tuple(variants),
        gps_study_imu=_model(gps, "imu"),
        imu_scenario=imu.string("scenario", "line"),
        imu_study_imu=_model(imu, "imu"),
        judge=judge,
        ground_truth_rate=check_ground_truth_rate(sec.number("ground_truth_rate", 50.0, positive=True),
                                                  f"{path}: ground_truth_rate"),
        bootstrap=score.integer("bootstrap", 1000, minimum=0),
        permutations=score.integer("permutations", 1000, minimum=0),
        score_seed=score.integer("seed", 0, minimum=0),
        static_tfs_by_layout=by_layout,
    )


def _model(sec: Section, key: str) -> Any:
    value = sec.data.get(key)
    if (isinstance(value, str) and value) or (isinstance(value, dict) and value):
        return value
    raise sec.error(key, f"expected a preset name, YAML path or mapping, got {value!r}")


# ------------------------------------------------------------------------------- real bags
def find_real_bags(directory, k: int) -> dict:
    """{scenario: [bag paths]} from ``DIR/<scenario>/<run>/``: the first ``k`` runs (by name) per scenario,
    named by the one rule of ``runs.find_real_bags``."""
    from .runs import find_real_bags as named_bags

    root = Path(directory)
    if not root.is_dir():
        raise UserError(f"--real {root}: not a directory (expected DIR/<scenario>/<run bag>/)")
    found: dict = {}
    for bag in named_bags([root], limit=k, what="--real"):
        found.setdefault(bag.scenario, []).append(Path(bag.path))
    return found


def reference_bags(setup, k: int, out: Path, shipped: Path, workers: int, progress: bool) -> dict:
    """The first ``k`` reference runs per scenario: shipped ones, the rest regenerated into OUT/reference."""
    from . import reference as ref

    missing = []
    bags = {}
    for scenario in setup.scenarios:
        bags[scenario] = []
        for index in range(k):
            path = ref.run_path(shipped, scenario, index)
            if not ref.made_by(path, setup):
                path = ref.run_path(out / REFERENCE, scenario, index)
                if not ref.made_by(path, setup):
                    if os.path.lexists(path):
                        ref.owned_item(path, setup)  # raises: another setup's run, or not one of ours
                    missing.append((scenario, index))
            bags[scenario].append(path)
    if missing:
        readme = out / REFERENCE / ref.README
        if os.path.lexists(readme) and not ref.readme_is_ours(readme):
            raise UserError(f"--out {out}: {REFERENCE}/{ref.README}: not written by the demo; move it away")
        _generate(setup, out / REFERENCE, missing, workers, progress)
        ref.write_readme(setup, out / REFERENCE)
    return bags


def _generate_one(setup, directory: str, scenario: str, k: int) -> str:
    from . import reference as ref

    return str(ref.write_reference_run(setup, directory, scenario, k))


def _generate(setup, directory: Path, runs: list, workers: int, progress: bool) -> None:
    """Regenerate reference runs (deterministic: same bytes as the shipped ones would have)."""
    items = [(setup, str(directory), scenario, k) for scenario, k in runs]
    _map(_generate_one, items, workers, progress, f"regenerating {len(items)} reference runs")


def _map(function, items: list, workers: int, progress: bool, description: str) -> list:
    """``function(*item)`` for every item, in ``workers`` forked processes, with a progress bar."""
    import concurrent.futures as cf

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .workers import WorkerPool

    results = [None] * len(items)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=False) as bar:
        task = bar.add_task(description, total=len(items))
        if workers <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                results[i] = function(*item)
                bar.advance(task)
            return results
        with WorkerPool(min(workers, len(items))) as pool:
            futures = {pool.submit(function, *item): i for i, item in enumerate(items)}
            for future in cf.as_completed(futures):
                results[futures[future]] = future.result()
                bar.advance(task)
    return results


# ------------------------------------------------------------------------------------ runs
def plan_groups(config: DemoConfig, bags: dict, imu_scenario: str | None, noise_floor=None) -> list:
    """One ``pipeline.replay.BagReplay`` per real bag (k = position of the bag in its scenario's sorted
    list): the real run, one run per GPS variant (directory = the GPS preset), the IMU study's run;
    with ``noise_floor`` (ScoreOptions) the bag's noise-floor judgements too.  Without static TFs in the
    demo file, each bag gets its default (``service.default_static_tfs``)."""
    from .pipeline.replay import Replacement
    from .runs import RealBag
    from .service import plan_replays

    gps_study = [Replacement({"gps": gps, "imu": config.gps_study_imu}, name=gps)
                 for gps in config.gps_variants]
    imu_study = [Replacement({"imu": config.imu_study_imu})]
    groups = []
    for scenario, paths in bags.items():
        sims = gps_study + (imu_study if scenario == imu_scenario else [])
        named = [RealBag(str(bag), scenario, k) for k, bag in enumerate(paths)]
        groups += plan_replays(named, sims, config.judge, seed=config.seed, noise_floor=noise_floor,
                               ground_truth_rate=config.ground_truth_rate,
                               static_tfs_by_layout=config.static_tfs_by_layout)
    return groups


def imu_variant(config: DemoConfig) -> str:
    from .runs import replay_variant

    return replay_variant({"imu": config.imu_study_imu})


# ---------------------------------------------------------------------------------- scoring
def score_runs(runs_dir: Path, keep, options, workers: int):
    """Score the runs of ``runs_dir`` selected by ``keep(spec)`` → (StudyResult, series)."""
    from . import service
    from .metrics.inputs import discover_runs_dir

    scored = service.score_runs(discover_runs_dir(runs_dir, options), options, keep=keep, workers=workers,
                                source=str(runs_dir))
    return scored.result, scored.series


def ordering_checks(gps_doc: dict, imu_doc: dict | None) -> dict:
    """The paper's qualitative findings, checked on Table I (combined VEPD) of this demo."""
    vepd = {variant: row["VEPD"] for variant, row in gps_doc["combined"].items()}
    ranked = sorted(vepd, key=vepd.get)
    checks = {}
    if vepd:
        checks["ch_gauss_worst"] = ranked[-1] == "ch_gauss" if "ch_gauss" in vepd else None
        best = {"ch_rw", "airsim"}
        checks["ch_rw_and_airsim_best"] = set(ranked[:2]) == best if best <= set(vepd) else None
        checks["hdop_improves_ch_gauss"] = vepd["ch_gauss_airsim"] < vepd["ch_gauss"] \
            if {"ch_gauss", "ch_gauss_airsim"} <= set(vepd) else None
    if imu_doc is not None and vepd:
        imu_vepd = [row["VEPD"] for row in imu_doc["combined"].values()]
        checks["sim_imu_small"] = bool(imu_vepd) and max(imu_vepd) < min(vepd.values())
    return {"ranking_best_first": ranked, "vepd": vepd, "checks": checks}


# ------------------------------------------------------------------------------------- main
@dataclass
class DemoResult:
    out: Path
    k: int
    scenarios: list
    timings: dict
    gps: dict                 # vepd.json document of the GPS study
    imu: dict | None          # vepd.json document of the IMU study
    ordering: dict
    real_source: str
    runs_written: int = 0
    runs_total: int = 0
    noise_floor: dict | None = None  # {"gps_study" | "imu_study": pooled floor VEPD}
    runs_bytes: int = 0       # size of the run bags (OUT/runs) when the report was written
    runs_kept: bool = False   # False: OUT/runs was removed after the report
    runs_note: str | None = None  # why the runs were kept without --keep-runs


def run_demo(out, real=None, k: int | None = None, quick: bool = False, workers: int | None = None,
             config_path=None, progress: bool = True, imu_scenario: str | None = None,
             ray_address: str | None = None, timing=None, noise_floor: bool = False,
             keep_runs: bool = False, overwrite: bool = False, notice=None, start=None) -> DemoResult:
    """The whole demo (see the module docstring); returns what the CLI prints.  ``timing``: a
    ``pipeline.timing.TimingModel`` in place of the demo file's judge timing; ``noise_floor``: also
    measure the judge-noise floor (``metrics.noise_floor``); ``keep_runs``: leave the run bags in OUT/runs
    (default: removed once the report is written, unless an earlier ``keep_runs`` kept them);
    ``notice(text)``: told what was applied by default (the ART static TFs), one line; ``start(judge) ->
    judge``: the judge's start (``pipeline.start``: initial state, warm-up) in place of the demo file's.

    OUT follows the output policy (``outputs.output_folder``): a new or empty folder, or this demo's own
    earlier output (its marker lists what it wrote: those files are replaced, the runs resumed, nothing
    else touched); any other folder only with ``overwrite``."""
    import dataclasses

    from .limits import check_repeats
    from .metrics import ScoreOptions
    from .pipeline.batch import available_cores

    config = load_demo_config(config_path)
    if timing is not None:
        config = dataclasses.replace(config, judge=dataclasses.replace(config.judge, timing=timing))
    if start is not None:
        config = dataclasses.replace(config, judge=start(config.judge))
    options = ScoreOptions(bootstrap=config.bootstrap, permutations=config.permutations,
                           seed=config.score_seed, exclude_scenarios=(),
                           warmup_s=config.judge.warmup_s).validate()
    if k is None:
        k = config.quick_repeats if quick else config.repeats
    check_repeats(k, "--k")
    workers = available_cores() if workers is None else int(workers)
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    out = Path(out)
    with claim_output(out, overwrite) as previous:
        return _demo(out, previous, config, options, real, k, workers, progress, imu_scenario, ray_address,
                     noise_floor, keep_runs, notice)


def _demo(out: Path, previous: dict, config: DemoConfig, options, real, k: int, workers: int, progress: bool,
          imu_scenario, ray_address, noise_floor: bool, keep_runs: bool, notice=None) -> DemoResult:
    import tempfile

    from . import reference as ref
    from .metrics.noise_floor import judge_noise_floor
    from .outputs import write_marker
    from .report import Study, tables, write_report
    from .report.provenance import collect as collect_provenance
    from .service import replay_bags

    timings = {}
    t_start = time.perf_counter()
    runs_dir = out / RUNS
    # Runs an earlier --keep-runs kept are the user's now: resumed, never removed by a plain demo.
    runs_were_kept = bool(previous.get("runs_kept")) and runs_dir.is_dir()

    # 1. real bags
    t = time.perf_counter()
    if real is not None:
        bags = find_real_bags(real, k)
        real_source = str(Path(real).resolve())
    else:
        setup = ref.load_setup(config.reference)
        bags = reference_bags(setup, k, out, ref.shipped_reference_dir(), workers, progress)
        real_source = f"synthetic reference data set ({setup.name}, seed {setup.seed})"
    for scenario, paths in bags.items():
        if len(paths) < 2:  # checked before any judging: the scorer needs two runs per side
            raise UserError(f"scenario {scenario}: {len(paths)} real run(s); W1/W2 need at least 2 per "
                            "scenario (raise --k or add bags)")
    k = max(len(paths) for paths in bags.values())  # a user's folder may hold fewer than asked
    imu_scenario = imu_scenario or config.imu_scenario
    if imu_scenario not in bags:
        raise UserError(f"imu study: scenario {imu_scenario!r} has no real bags (found: {', '.join(bags)}); "
                        "choose one with --imu-scenario")
    timings["real_bags"] = time.perf_counter() - t

    # 2. runs
    t = time.perf_counter()
    groups = plan_groups(config, bags, imu_scenario, options if noise_floor else None)
    replayed = replay_bags(groups, runs_dir, workers=workers, ray_address=ray_address, progress=progress,
                           description=f"judging {len(groups)} real bags and their simulations",
                           notice=notice)
    report = replayed.report
    report.raise_on_failure()
    run_paths = [Path(run.path) for run in replayed.runs]
    # Only this demo's runs are scored (kept runs of an earlier demo with another K or variants stay out).
    labels = {run.label for run in replayed.runs}
    timings["runs"] = time.perf_counter() - t
    runs_total = sum(1 + len(g.sims) for g in groups)

    # 3. scores
    t = time.perf_counter()
    gps_names = set(config.gps_variants)
    imu_name = imu_variant(config)

    def ours(spec) -> bool:
        return f"{spec.side}/{spec.variant}/{spec.scenario}/{spec.k}" in labels

    gps_result, gps_series = score_runs(
        runs_dir, lambda s: ours(s) and (s.side == "real" or s.variant in gps_names), options, workers)
    imu_result, imu_series = score_runs(
        runs_dir,
        lambda s: ours(s) and s.scenario == imu_scenario and (s.side == "real" or s.variant == imu_name),
        options, workers)
    floors = None
    if noise_floor:
        draws = replayed.noise_floor_draws()
        for result in (gps_result, imu_result):
            result.judge_noise_floor = judge_noise_floor(draws, result.variants, result.scenarios)
        floors = {name: next(iter(result.judge_noise_floor["combined"].values()))["VEPD"]
                  for name, result in (("gps_study", gps_result), ("imu_study", imu_result))}
    timings["score"] = time.perf_counter() - t

    t = time.perf_counter()
    extra = {"input": "demo", "source": real_source, "k": k}
    imu_study = f"real GPS + {imu_name} vs real GPS + real IMU ({imu_scenario})"
    context = {"command": "sim2real-eval demo", "demo configuration": config.source, "runs per scenario": k}
    imu_provenance = collect_provenance(imu_result, "demo runs", str(runs_dir), context)
    imu_section = Study(IMU_STUDY, f"Simulated-IMU study: {imu_study}", imu_result, imu_series,
                        note=IMU_STUDY_NOTE, provenance=imu_provenance)
    keep = keep_runs or runs_were_kept
    staging_root = Path(tempfile.mkdtemp(prefix=".report.tmp-", dir=out))
    try:
        staging = staging_root / "report"
        write_report(staging, gps_result, gps_series, str(runs_dir), extra_options=extra, workers=workers,
                     provenance=collect_provenance(gps_result, "demo runs", str(runs_dir), context),
                     studies=[imu_section])
        write_report(staging / IMU_STUDY, imu_result, imu_series, str(runs_dir),
                     extra_options=dict(extra, study=imu_study), workers=workers, provenance=imu_provenance)
        gps_doc = tables.vepd_document(gps_result, extra)
        imu_doc = tables.vepd_document(imu_result, extra)
        ordering = ordering_checks(gps_doc, imu_doc)
        timings["report"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t_start
        runs_bytes = sum(tree_bytes(path) for path in run_paths)
        summary = {
            "k": k, "scenarios": list(bags), "real_source": real_source, "imu_study_scenario": imu_scenario,
            "runs": {"groups": len(groups), "groups_with_new_runs": report.written, "total": runs_total,
                     "bag_bytes": runs_bytes, "kept": keep},
            "wall_time_s": {name: round(value, 3) for name, value in timings.items()},
            "workers": workers, "ordering": ordering, "config": config.source,
            "judge_timing": config.judge.timing.describe(), "judge_noise_floor_vepd": floors,
        }
        (staging / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        files = _publish(staging, out, previous.get("files", {}))
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)
    if not keep:
        remove_runs(run_paths, runs_dir)
    write_marker(out, COMMAND, files, runs_kept=keep and runs_dir.is_dir())
    note = None
    if runs_were_kept and not keep_runs:
        note = (f"run bags ({runs_bytes / 1e6:.0f} MB) kept in {runs_dir}: an earlier --keep-runs kept them "
                f"(remove that folder to free the space)")
    return DemoResult(out, k, list(bags), timings, gps_doc, imu_doc, ordering, real_source,
                      report.written, runs_total, floors, runs_bytes, keep, note)


COMMAND = "demo"
# What the demo writes in OUT: the report (files it lists in its marker) and the folders it manages.
REPORT_NAMES = (*REPORT_FILES, IMU_STUDY, SUMMARY)
FOLDERS = (RUNS, REFERENCE)


@contextlib.contextmanager
def claim_output(out: Path, overwrite: bool):
    """OUT for this demo (``outputs.output_folder``), yielding the marker of its earlier output ({} when
    new).  A folder of the user's is refused unless ``overwrite``: then it is moved aside (a hidden
    sibling ``.OUT.tmp-…``) and deleted only when the new output is complete; an interrupted or failed
    demo puts it back.  Its own output is checked up front: no link among the names it writes, no
    file there that it did not write (or that changed since)."""
    from .atomic import _remove, _temp_sibling, deferred_signals
    from .outputs import NEW, OWN, output_folder, read_marker, visible_entries, write_marker

    mode = output_folder(out, "--out", overwrite, command=COMMAND)
    if mode == OWN:
        previous = read_marker(out) or {}
        check_own_output(out, previous)
        yield previous
        return
    aside = None
    created = not os.path.lexists(out)
    if mode != NEW:
        aside = _temp_sibling(out, "dir")
        aside.rmdir()
        os.replace(out, aside)  # a link is moved as a link: its target is not touched
    try:
        try:
            out.mkdir(parents=True, exist_ok=mode == NEW)
        except OSError as exc:
            raise UserError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
        write_marker(out, COMMAND, {}, runs_kept=False)  # claimed: an interrupted demo resumes here
        yield {}
    except BaseException:
        if aside is not None:
            with deferred_signals():
                _remove(out)
                os.replace(aside, out)
        elif created and out.is_dir() and not visible_entries(out):  # failed before writing anything
            _remove(out)
        raise
    if aside is not None:
        _remove(aside)


def check_own_output(out: Path, marker: dict) -> None:
    """Refuse (before any work) a link among the names the demo writes in OUT, or a file among its
    report that its marker does not list with the same size and SHA-256 (the user's, or edited)."""
    from .outputs import same_file

    files = marker.get("files", {})
    for name in (*REPORT_NAMES, *FOLDERS):
        path = out / name
        if path.is_symlink():
            raise UserError(f"--out {out}: {name}: a symbolic link; the demo writes {name} itself and never "
                            "writes through a link (remove the link or choose another --out)")
    for name in REPORT_NAMES:
        top = out / name
        if not os.path.lexists(top):
            continue
        found = [top] if not top.is_dir() else \
            [Path(folder) / entry for folder, dirs, names in os.walk(top) for entry in names + [
                d for d in dirs if (Path(folder) / d).is_symlink()]]
        for path in sorted(found):
            rel = path.relative_to(out).as_posix()
            if ".tmp-" in path.name:
                continue
            if not same_file(path, files.get(rel)):
                raise UserError(f"--out {out}: {rel}: not written by sim2real-eval demo (or changed since); "
                                "move it away, or pass --overwrite to replace the whole folder")


def _publish(staging: Path, out: Path, previous: dict) -> dict:
    """Move the finished report from the staging folder into OUT, file by file (all renamed in one
    block, rolled back if one fails); remove the files of the previous report that this one does not
    write, if unchanged.  Returns the marker's {relative path: {size, sha256}}."""
    from .atomic import replace_files
    from .outputs import file_record, same_file

    sources = sorted(p for p in staging.rglob("*") if p.is_file())
    names = [p.relative_to(staging).as_posix() for p in sources]
    targets = [out / name for name in names]
    for name, target in zip(names, targets):
        if os.path.lexists(target) and not same_file(target, previous.get(name)):
            raise UserError(f"--out {out}: {name}: appeared while the demo ran and is not the demo's; the "
                            "report was not written (move the file away and run the demo again)")
        for parent in reversed(target.relative_to(out).parents[:-1]):
            folder = out / parent
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise UserError(f"--out {out}: {parent.as_posix()}: not a folder of the demo's")
            folder.mkdir(exist_ok=True)
    records = {name: file_record(source) for name, source in zip(names, sources)}
    replace_files(sources, targets)
    for name, record in previous.items():
        parts = Path(name).parts
        if name in records or Path(name).is_absolute() or ".." in parts or not parts:
            continue
        if same_file(out / name, record):
            (out / name).unlink()
    return records


def remove_runs(paths: list, runs_dir: Path) -> None:
    """Remove this demo's run directories, then the folders of OUT/runs they leave empty (anything
    else a user keeps there stays).  Nothing is followed through a symbolic link."""
    if runs_dir.is_symlink() or not runs_dir.is_dir():
        return
    for path in paths:
        if not path.is_symlink() and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
    for folder, _dirs, _files in sorted(os.walk(runs_dir), key=lambda entry: len(entry[0]), reverse=True):
        if not Path(folder).is_symlink() and not os.listdir(folder):
            os.rmdir(folder)


def tree_bytes(path: Path) -> int:
    """Bytes of the files below ``path`` (what ``du --apparent-size`` counts)."""
    return sum(entry.stat().st_size for entry in Path(path).rglob("*") if entry.is_file())


def summary_table(result: DemoResult) -> str:
    """The short text table the CLI prints (Table I + the IMU study + the ordering checks)."""
    gps, imu = result.gps["combined"], (result.imu or {}).get("combined", {})
    rows = [(variant, gps[variant], "") for variant in result.ordering["ranking_best_first"]]
    rows += [(variant, row, "  (IMU study)") for variant, row in imu.items()]
    width = max([len("variant")] + [len(variant) for variant, _row, _note in rows])
    lines = [f"VEPD (lower = closer to real), K = {result.k} per scenario, real = {result.real_source}",
             f"{'variant':<{width}} {'W1 m/s':>9} {'W2':>9} {'VEPD':>9}"]
    for variant, row, note in rows:
        lines.append(f"{variant:<{width}} {row['W1']:>9.4f} {row['W2']:>9.4f} {row['VEPD']:>9.4f}{note}")
    checks = result.ordering["checks"]
    names = {"ch_gauss_worst": "Ch:Gauss worst", "ch_rw_and_airsim_best": "Ch:RW and AirSim best",
             "hdop_improves_ch_gauss": "HDOP covariance improves Ch:Gauss",
             "sim_imu_small": "sim-IMU VEPD below every GPS variant"}
    marks = ", ".join(f"{names[key]}: {'yes' if value else ('n/a' if value is None else 'no')}"
                      for key, value in checks.items())
    lines.append(f"paper's ordering — {marks}")
    if result.noise_floor:
        floor = ", ".join(f"{name.replace('_', ' ')} {value:.4f}"
                          for name, value in result.noise_floor.items())
        lines.append(f"judge-noise floor (VEPD from judge timing alone; differences below it are not "
                     f"meaningful): {floor}")
    lines.append(f"wall time {result.timings['total']:.1f} s (real bags {result.timings['real_bags']:.1f}, "
                 f"runs {result.timings['runs']:.1f}, score {result.timings['score']:.1f}, "
                 f"report {result.timings['report']:.1f}); report: {result.out / 'report.html'}")
    size = f"{result.runs_bytes / 1e6:.0f} MB"
    if result.runs_note:
        lines.append(result.runs_note)
    else:
        lines.append(f"run bags: {result.out / RUNS} ({size})" if result.runs_kept else
                     f"run bags ({size}) removed after scoring; --keep-runs keeps them in "
                     f"{result.out / RUNS}")
    return "\n".join(lines)


__all__ = ["DemoConfig", "DemoResult", "find_real_bags", "load_demo_config", "ordering_checks", "plan_groups",
           "remove_runs", "run_demo", "summary_table", "tree_bytes"]
