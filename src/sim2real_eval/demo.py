"""The main job: the paper's study (seed 003) end to end — real bags → runs → VEPD report.

Steps (``run_demo``):
1. Real bags: ``--real DIR`` (``DIR/<scenario>/<run>/``, runs sorted by name, the first K used), or the
   synthetic reference data set: the runs shipped in ``bags/reference`` plus, when K exceeds them, runs
   regenerated deterministically into ``OUT/reference`` (``reference.py``).  Input bags are only read.
2. Runs (``OUT/runs/<side>/<variant>/<scenario>/<k>/``, the pipeline's run convention; resumable): per
   real bag one task (``BagGroup``) reads the bag once and writes these runs, all judged on sensor
   messages from the same time window (where the bag's INS truth exists; ``window_ns`` in run.yaml):
   - the real run: the real /fix + /imu judged as recorded;
   - per GPS variant of the GPS study: simulated GPS *and* IMU driven by the bag's INS ground truth
     (``pipeline.replay`` with both streams replaced; variant directory = the GPS preset name);
   - on the IMU study's scenario: real GPS + simulated IMU (``sim_imu-<preset>``).
   Every judgement is the embedded robot_localization with the ART configuration.
3. Scores (the scorer's pieces, unchanged): the GPS study → ``OUT/`` (vepd.json, statistics.json,
   runs.csv, tables.md, figures/, report.html); the IMU study → ``OUT/imu_study/`` (same files).
4. ``OUT/demo.json``: wall time per step, K, inputs, and the paper's qualitative ordering checks.

The report files are built in a staging folder by ``report.write_report`` (atomic) and moved into
OUT only when every score is done, so OUT never holds a half-written report file.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UserError
from .pipeline.replay import ReplaySpec
from .yamlio import Section, load_yaml

DEFAULT_CONFIG = ("studies", "demo.yaml")
TOP_KEYS = ("name", "seed", "repeats", "quick_repeats", "reference", "gps_study", "imu_study", "judge",
            "ground_truth_rate", "score")
RUNS = "runs"
REFERENCE = "reference"
IMU_STUDY = "imu_study"
SUMMARY = "demo.json"
REPORT_FILES = ("vepd.json", "statistics.json", "runs.csv", "tables.md", "report.html", "figures")


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


def load_demo_config(path=None) -> DemoConfig:
    """Parse the demo YAML (default: config/studies/demo.yaml); errors name file: key."""
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
        judge=load_judge_config(sec.section("judge"), path.parent),
        ground_truth_rate=sec.number("ground_truth_rate", 50.0, positive=True),
        bootstrap=score.integer("bootstrap", 1000, minimum=0),
        permutations=score.integer("permutations", 1000, minimum=0),
        score_seed=score.integer("seed", 0, minimum=0),
    )


def _model(sec: Section, key: str) -> Any:
    value = sec.data.get(key)
    if (isinstance(value, str) and value) or (isinstance(value, dict) and value):
        return value
    raise sec.error(key, f"expected a preset name, YAML path or mapping, got {value!r}")


# ------------------------------------------------------------------------------- real bags
def is_bag(path: Path) -> bool:
    """A rosbag2 directory (metadata.yaml) or a ROS 1 .bag file; hidden entries are temporaries."""
    if path.name.startswith("."):
        return False
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.is_file() and path.suffix == ".bag"


def find_real_bags(directory, k: int) -> dict:
    """{scenario: [bag paths]} from ``DIR/<scenario>/<run>/``: the first ``k`` runs (by name) per scenario."""
    root = Path(directory)
    if not root.is_dir():
        raise UserError(f"--real {root}: not a directory (expected DIR/<scenario>/<run bag>/)")
    found = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        bags = sorted(p for p in folder.iterdir() if is_bag(p))
        if bags:
            found[folder.name] = bags[:k]
    if not found:
        raise UserError(f"--real {root}: no bags found "
                        "(expected DIR/<scenario>/<run>/ rosbag2 folders or .bag files)")
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
                    if path.exists():
                        raise UserError(f"{path}: a reference run made with another setup; "
                                        f"remove {out / REFERENCE}")
                    missing.append((scenario, index))
            bags[scenario].append(path)
    if missing:
        _generate(setup, out / REFERENCE, missing, workers, progress)
        ref.write_readme(setup, out / REFERENCE, 0)
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
    import multiprocessing

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    results = [None] * len(items)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=False) as bar:
        task = bar.add_task(description, total=len(items))
        if workers <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                results[i] = function(*item)
                bar.advance(task)
            return results
        context = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(min(workers, len(items)), mp_context=context) as pool:
            futures = {pool.submit(function, *item): i for i, item in enumerate(items)}
            for future in cf.as_completed(futures):
                results[futures[future]] = future.result()
                bar.advance(task)
    return results


# ------------------------------------------------------------------------------------ runs
@dataclass(frozen=True)
class NamedReplaySpec(ReplaySpec):
    """A replay whose sim variant directory has a chosen name (the GPS preset); default naming otherwise."""

    name: str = ""

    @property
    def variant(self) -> str:
        return self.name or super().variant


@dataclass(frozen=True)
class BagGroup:
    """Every run made from one real bag: the real run plus its simulated counterparts.

    Satisfies the batch runner's task protocol.  The runner's own resume check looks at
    ``directory(out)``, which is never created: resume happens per run inside ``execute`` (each run
    directory is checked against its run.yaml, like the pipeline does), because the sim runs' records
    need the bag's datum, which is only known after reading the bag.
    """

    label: str
    real: Any                 # ReplaySpec of the real run (its ``replace`` is unused)
    sims: tuple               # ReplaySpecs of the simulated runs

    def directory(self, out) -> Path:
        return Path(out) / ".groups" / self.label.replace("/", "_")

    def record(self) -> dict:
        return {"group": self.label}

    def execute(self, out):
        from .pipeline.replay import judge_and_write, read_real_streams, simulated_gps, simulated_imu
        from .pipeline.run import RunOutcome, existing_run, remove_stale_temporaries

        start = time.perf_counter()
        streams = read_real_streams(self.real)
        written, counts = 0, {}
        # Every run of the bag is judged on the same window (streams.window_ns, in each run.yaml).
        todo = [(self.real.real_directory(out), self.real.real_record_for(streams), None)]
        todo += [(spec.sim_directory(out), spec.sim_record_for(streams), spec) for spec in self.sims]
        for path, record, spec in todo:
            if existing_run(path, record):
                continue
            remove_stale_temporaries(path)
            if spec is None:
                sensors, judge_spec = streams.gps + streams.imu, self.real
            else:
                imu = simulated_imu(spec, streams) if "imu" in spec.replace else streams.imu
                gps = simulated_gps(spec, streams) if "gps" in spec.replace else streams.gps
                sensors, judge_spec = gps + imu, spec
            outcome = judge_and_write(judge_spec, path, record, sensors, streams.truth)
            written += 1
            for topic, count in outcome.messages.items():
                counts[topic] = counts.get(topic, 0) + count
        return RunOutcome(self.label, str(self.real.real_directory(out)), written == 0, counts,
                          time.perf_counter() - start)


def plan_groups(config: DemoConfig, bags: dict, imu_scenario: str | None) -> list:
    """One BagGroup per real bag (k = position of the bag in its scenario's sorted list)."""
    spec_class = NamedReplaySpec
    groups = []
    for scenario, paths in bags.items():
        for k, bag in enumerate(paths):
            common = dict(bag=str(bag), judge=config.judge, scenario=scenario, k=k, seed=config.seed,
                          ground_truth_rate=config.ground_truth_rate)
            real = spec_class(replace={}, **common)
            sims = [spec_class(replace={"gps": gps, "imu": config.gps_study_imu}, name=gps, **common)
                    for gps in config.gps_variants]
            if scenario == imu_scenario:
                sims.append(spec_class(replace={"imu": config.imu_study_imu}, **common))
            groups.append(BagGroup(f"{scenario}/{k}", real, tuple(sims)))
    return groups


def imu_variant(config: DemoConfig) -> str:
    from .pipeline.replay import replay_variant

    return replay_variant({"imu": config.imu_study_imu})


# ---------------------------------------------------------------------------------- scoring
def score_runs(runs_dir: Path, keep, options, workers: int):
    """Score the runs of ``runs_dir`` selected by ``keep(spec)`` → (StudyResult, series)."""
    from .metrics import score_study
    from .metrics.inputs import discover_runs_dir, load_and_score_all

    specs = [spec for spec in discover_runs_dir(runs_dir, options) if keep(spec)]
    if not specs:
        raise UserError(f"{runs_dir}: no runs to score")
    records, series, skipped = load_and_score_all(specs, options, False, workers)
    return score_study(records, options, skipped, workers=workers), series


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


def run_demo(out, real=None, k: int | None = None, quick: bool = False, workers: int | None = None,
             config_path=None, progress: bool = True, imu_scenario: str | None = None,
             ray_address: str | None = None) -> DemoResult:
    """The whole demo (see the module docstring); returns what the CLI prints."""
    from . import reference as ref
    from .metrics import ScoreOptions
    from .pipeline.batch import BatchReport, available_cores, run_batch
    from .report import tables, write_report

    timings = {}
    t_start = time.perf_counter()
    config = load_demo_config(config_path)
    if k is None:
        k = config.quick_repeats if quick else config.repeats
    if k < 1:
        raise UserError(f"--k must be >= 1, got {k}")
    workers = available_cores() if workers is None else int(workers)
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")

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
    groups = plan_groups(config, bags, imu_scenario)
    runs_dir = out / RUNS
    description = f"judging {len(groups)} real bags and their simulations"
    if ray_address is None and workers > 1 and len(groups) > 1:
        # The first bag is judged here: the judge's numba kernels are compiled (or loaded from numba's
        # cache) once in this process and inherited by the forked workers, not compiled in each.
        first = run_batch(groups[:1], runs_dir, workers=1, progress=False)
        rest = run_batch(groups[1:], runs_dir, workers=workers, progress=progress, description=description)
        report = BatchReport(first.outcomes + rest.outcomes, first.failures + rest.failures)
    else:
        report = run_batch(groups, runs_dir, workers=workers, ray_address=ray_address, progress=progress,
                           description=description)
    report.raise_on_failure()
    timings["runs"] = time.perf_counter() - t
    runs_total = sum(1 + len(g.sims) for g in groups)

    # 3. scores
    t = time.perf_counter()
    options = ScoreOptions(bootstrap=config.bootstrap, permutations=config.permutations,
                           seed=config.score_seed, exclude_scenarios=()).validate()
    gps_names = set(config.gps_variants)
    imu_name = imu_variant(config)
    gps_result, gps_series = score_runs(runs_dir, lambda s: s.side == "real" or s.variant in gps_names,
                                        options, workers)
    imu_result, imu_series = score_runs(
        runs_dir, lambda s: s.scenario == imu_scenario and (s.side == "real" or s.variant == imu_name),
        options, workers)
    timings["score"] = time.perf_counter() - t

    t = time.perf_counter()
    extra = {"input": "demo", "source": real_source, "k": k}
    staging = out / ".report-staging"
    if staging.exists():
        shutil.rmtree(staging)
    write_report(staging, gps_result, gps_series, str(runs_dir), extra_options=extra, workers=workers)
    imu_study = f"real GPS + {imu_name} vs real GPS + real IMU ({imu_scenario})"
    write_report(staging / IMU_STUDY, imu_result, imu_series, str(runs_dir),
                 extra_options=dict(extra, study=imu_study), workers=workers)
    gps_doc = tables.vepd_document(gps_result, extra)
    imu_doc = tables.vepd_document(imu_result, extra)
    ordering = ordering_checks(gps_doc, imu_doc)
    timings["report"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_start
    summary = {
        "k": k, "scenarios": list(bags), "real_source": real_source, "imu_study_scenario": imu_scenario,
        "runs": {"groups": len(groups), "groups_with_new_runs": report.written, "total": runs_total},
        "wall_time_s": {name: round(value, 3) for name, value in timings.items()},
        "workers": workers, "ordering": ordering, "config": config.source,
    }
    (staging / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _publish(staging, out)
    return DemoResult(out, k, list(bags), timings, gps_doc, imu_doc, ordering, real_source,
                      report.written, runs_total)


def _publish(staging: Path, out: Path) -> None:
    """Move the finished report from the staging folder into OUT (each entry one rename)."""
    for entry in sorted(staging.iterdir()):
        target = out / entry.name
        if target.is_dir() and not target.is_symlink():
            old = out / f".{entry.name}.old"
            if old.exists():
                shutil.rmtree(old)
            os.replace(target, old)
            os.replace(entry, target)
            shutil.rmtree(old)
        else:
            os.replace(entry, target)
    staging.rmdir()


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
    lines.append(f"wall time {result.timings['total']:.1f} s (real bags {result.timings['real_bags']:.1f}, "
                 f"runs {result.timings['runs']:.1f}, score {result.timings['score']:.1f}, "
                 f"report {result.timings['report']:.1f}); report: {result.out / 'report.html'}")
    return "\n".join(lines)


__all__ = ["BagGroup", "DemoConfig", "DemoResult", "NamedReplaySpec", "find_real_bags", "load_demo_config",
           "ordering_checks", "plan_groups", "run_demo", "summary_table"]
