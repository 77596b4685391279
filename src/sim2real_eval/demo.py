"""The main job: the paper's study (seed 003) end to end — real bags → runs → VEPD report.

Steps (``run_demo`` → ``_demo``: ``_real_side``, ``_judge_runs``, ``_score``, ``_sensitivity``, ``_finish``):
1. Real bags: ``--real DIR`` (``DIR/<scenario>/<run>/``, runs sorted by name, the first K used; named
   by ``runs.find_real_bags`` like ``replay`` names them), or the synthetic reference data set: the
   runs shipped in ``bags/reference`` plus, when K exceeds them, runs regenerated deterministically
   into ``OUT/reference`` (``reference.py``), or (``--real-sample``) the real car drive shipped in
   ``bags/real/comma2k19``, imported into ``OUT/imported`` with held-out windows calibrated and tuned
   on (``real_sample.py``; configuration ``config/studies/demo_car.yaml``): its scored windows, plus
   the ``calibrated`` and ``tuned`` variants of the GPS study and ``sim_imu-calibrated`` of the IMU
   study.  Input bags are only read.
2. Runs: per real bag one task (``replay.offline.BagReplay``, the one replay unit, via
   ``service.replay_bags``) reads the bag (its truth and real streams) once and judges these runs, all
   on sensor messages from the same time window (where the bag's INS truth exists; ``window_ns``),
   and scores each where it was judged, from the judged series in memory (the scorer's numbers, bit for
   bit: ``replay.offline.estimate_series``).  Run bags are written only with ``--keep-runs``
   (``OUT/runs/<side>/<variant>/<scenario>/<k>/``, the pipeline's run convention; a rerun resumes them):
   - the real run: the real /fix + /imu judged as recorded;
   - per GPS variant of the GPS study: simulated GPS *and* IMU driven by the bag's INS ground truth
     (``replay.offline`` with both streams replaced; variant directory = the GPS preset name);
   - on the IMU study's scenario: real GPS + simulated IMU (``sim_imu-<preset>``).
   Every judgement is the embedded robot_localization with the demo file's configuration (ART's; the
   car template in demo_car.yaml).
   The judge-noise floor (on unless ``--no-noise-floor``): each real bag is also judged ``DRAWS``
   times with independent random judge timing (``noise_floor.compute``; never written to ``runs/``).
3. Scores (the scorer's pieces): the GPS study → ``OUT/`` (vepd.json, statistics.json, runs.csv,
   tables.md, figures/, report.html); the IMU study → ``OUT/imu_study/`` (same files); each study's
   variants compared with each other (adjacent ranks, ties), its ``judge_noise_floor`` and sub-floor
   marks (``metrics.separation``).
   The real sample's covariance sensitivity: both studies again on its other imports of the scored
   windows (``_sensitivity``); its section of the report and ``OUT/real_sample/`` (calibration, tuning,
   ``real_sample.json``).
4. ``OUT/demo.json``: wall and CPU time per step, K, inputs, and the paper's qualitative ordering
   checks — each "yes", "no" or "not separable" (a finding the floor or the intervals cannot support
   is not stated as one).
5. Run bags (3.7 MB per run: 705 MB for K = 10) are not written unless ``keep_runs`` (``--keep-runs``):
   the scores come from the judged series in memory, so no bag is written only to be read back and
   deleted.  Measured alternative (not taken): MCAP with zstd chunk compression shrinks them 3.9x,
   still 179 MB for K = 10 (README).

OUT follows the output policy (``outputs``; docs/pipeline.md, "Outputs"): the demo writes a new or empty
folder, or resumes its own earlier output, recognised by its marker file (``OUT/.sim2real-eval.json``,
listing every report file it wrote with its size and SHA-256): those files are replaced, nothing else
in OUT is touched (run bags an earlier ``--keep-runs`` wrote stay, resumed by the next ``--keep-runs``),
and a file among its report names that it did not write is refused up front.  A folder of the user's is
replaced only with ``--overwrite``.  The report files are built in a staging folder by
``report.write_report`` (atomic) and moved into OUT only when every score is done, so OUT never holds a
half-written report file.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from .errors import UserError
from .noise_floor.compute import DRAWS
from .yamlio import Section, load_yaml

DEFAULT_CONFIG = ("studies", "demo.yaml")
REAL_SAMPLE_CONFIG = ("studies", "demo_car.yaml")  # --real-sample: the car study and its real_sample section
TOP_KEYS = ("name", "seed", "repeats", "quick_repeats", "reference", "gps_study", "imu_study", "judge",
            "ground_truth_rate", "score", "paper_variants", "real_sample", "judges")
RUNS = "runs"
REFERENCE = "reference"
IMPORTED = "imported"      # --real-sample: the shipped segment's imported windows (real_sample.IMPORTED)
REAL_SAMPLE = "real_sample"  # --real-sample: calibration, tuning and sensitivity files of the report
EVERY_SCENARIO = "*"       # imu_study.scenario: the IMU study on every scenario
IMU_STUDY = "imu_study"
SUMMARY = "demo.json"
REAL_LAYOUT = "DIR/<scenario>/<run>/: one folder per scenario (line, sine, circle, …), its runs inside"
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
    noise_floor_draws: int = 4
    static_tfs_by_layout: bool = True  # no judge.static_tfs: each bag gets its default (ART layout → ART)
    paper_variants: tuple = ()  # ((paper name, variant), …): which variant plays which paper variant
    real_sample: Any = None     # real_sample.RealSampleConfig (--real-sample), or None
    judges: tuple = ()          # judge names every run is also judged by (judges.py; --judges)


def _paper_variants(sec: Section, variants) -> tuple:
    """``paper_variants:`` {paper name: GPS variant}; default: each paper name that is a variant itself."""
    if not sec.has("paper_variants"):
        return tuple((name, name) for name in PAPER_VARIANTS if name in variants)
    mapping = sec.section("paper_variants")
    mapping.unknown_keys(PAPER_VARIANTS)
    for name, variant in mapping.data.items():
        if variant not in variants:
            raise mapping.error(name, f"{variant!r} is not a variant of gps_study.gps "
                                      f"({', '.join(variants)})")
    return tuple((name, mapping.data[name]) for name in PAPER_VARIANTS if name in mapping.data)


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
    imu_scenario = imu.string("scenario", "line")
    if imu_scenario != EVERY_SCENARIO:
        check_name(imu, "scenario", imu_scenario, f"scenario (or {EVERY_SCENARIO!r}: every scenario)")
    score = sec.section("score")
    score.unknown_keys(("bootstrap", "permutations", "seed", "noise_floor_draws"))
    judge_section = sec.section("judge")
    by_layout = not judge_section.has("static_tfs")
    judge = load_judge_config(judge_section, path.parent)
    if by_layout:  # decided per real bag (bags.layout.default_static_tfs), said on stderr
        import dataclasses

        judge = dataclasses.replace(judge, static_tfs=())
    reference = Path(sec.string("reference", "demo_reference.yaml"))
    if not reference.is_absolute():
        reference = path.parent / reference
    sample = None
    if sec.has("real_sample"):
        from .real_sample import load_config

        sample = load_config(sec.section("real_sample"), path.parent)
    return DemoConfig(
        source=str(path),
        name=sec.string("name", path.stem),
        seed=sec.integer("seed", required=True, minimum=0),
        repeats=sec.integer("repeats", 10, minimum=1),
        quick_repeats=sec.integer("quick_repeats", 3, minimum=1),
        reference=str(reference),
        gps_variants=tuple(variants),
        gps_study_imu=_model(gps, "imu"),
        imu_scenario=imu_scenario,
        imu_study_imu=_model(imu, "imu"),
        judge=judge,
        ground_truth_rate=check_ground_truth_rate(sec.number("ground_truth_rate", 50.0, positive=True),
                                                  f"{path}: ground_truth_rate"),
        bootstrap=score.integer("bootstrap", 1000, minimum=0),
        permutations=score.integer("permutations", 1000, minimum=0),
        score_seed=score.integer("seed", 0, minimum=0),
        noise_floor_draws=score.integer("noise_floor_draws", DRAWS, minimum=2),
        static_tfs_by_layout=by_layout,
        paper_variants=_paper_variants(sec, variants),
        real_sample=sample,
        judges=_judges_of(sec),
    )


def _judges_of(sec: Section) -> tuple:
    from .judges import from_section

    return from_section(sec)


def _model(sec: Section, key: str) -> Any:
    value = sec.data.get(key)
    if (isinstance(value, str) and value) or (isinstance(value, dict) and value):
        return value
    raise sec.error(key, f"expected a preset name, YAML path or mapping, got {value!r}")


# ------------------------------------------------------------------------------- real bags
def find_real_bags(directory, k: int) -> dict:
    """{scenario: [bag paths]} from ``DIR/<scenario>/<run>/``: the first ``k`` runs (by name) per scenario,
    named by the one rule of ``runs.find_real_bags``."""
    from .runs import bags_in
    from .runs import find_real_bags as named_bags

    root = Path(directory)
    if not root.is_dir():
        raise UserError(f"--real {root}: not a directory (expected {REAL_LAYOUT})")
    direct = bags_in(root)
    if direct:  # a scenario folder given as DIR: its bags would all be scenario DIR
        names = ", ".join(Path(b).name for b in direct[:3]) + (", …" if len(direct) > 3 else "")
        raise UserError(f"--real {root}: holds the runs of one scenario ({names}); --real takes the folder "
                        f"of scenario folders (DIR/<scenario>/<run>/): {_parent_hint(root)}")
    found: dict = {}
    for bag in named_bags([root], limit=k, what="--real"):
        found.setdefault(bag.scenario, []).append(Path(bag.path))
    return found


def _parent_hint(root: Path) -> str:
    """What to give ``--real`` instead of the scenario folder ``root``: its parent (naming the scenarios
    there), or, when ``root`` has no usable parent, how to make one."""
    from .runs import bags_in, is_name

    here = Path(os.path.abspath(root))
    parent = here.parent
    if is_name(here.name) and parent != here:   # its name can name a scenario: the folder above is DIR
        scenarios = sorted(d.name for d in parent.iterdir()
                           if d.is_dir() and not d.name.startswith(".") and bags_in(d))
        shown = os.path.relpath(parent) if not Path(root).is_absolute() else str(parent)
        return f"--real {shown} (scenarios there: {', '.join(scenarios)})"
    return "move its runs into NEW/<scenario>/ (a scenario name) and give --real NEW"


def reference_runs(setup, k: int, out: Path, shipped: Path) -> tuple:
    """The first ``k`` reference runs per scenario: ({scenario: [path of run 0 … k − 1]}: shipped, else in
    OUT/reference; [(scenario, k) missing there], for ``regenerate``)."""
    from . import reference as ref

    missing = []
    bags = {}
    written = ref.setup_as_written(setup)
    for scenario in setup.scenarios:
        bags[scenario] = []
        for index in range(k):
            path = ref.run_path(shipped, scenario, index)
            if not ref.made_by(path, setup, written):
                path = ref.run_path(out / REFERENCE, scenario, index)
                if not ref.made_by(path, setup, written):
                    if os.path.lexists(path):
                        ref.owned_item(path, setup)  # raises: another setup's run, or not one of ours
                    missing.append((scenario, index))
            bags[scenario].append(path)
    return bags, missing


def regenerate(setup, out: Path, missing: list, workers: int, progress: bool, meanwhile=None) -> None:
    """Write the ``missing`` reference runs into OUT/reference (and its README); ``meanwhile()`` runs here
    while forked workers write them."""
    from . import reference as ref

    if not missing:
        return
    readme = out / REFERENCE / ref.README
    if os.path.lexists(readme) and not ref.readme_is_ours(readme):
        raise UserError(f"--out {out}: {REFERENCE}/{ref.README}: not written by the demo; move it away")
    _generate(setup, out / REFERENCE, missing, workers, progress, meanwhile)
    ref.write_readme(setup, out / REFERENCE)


def _generate_one(setup, directory: str, scenario: str, k: int) -> str:
    from . import reference as ref

    return str(ref.write_reference_run(setup, directory, scenario, k))


def _generate(setup, directory: Path, runs: list, workers: int, progress: bool, meanwhile=None) -> None:
    """Regenerate reference runs (deterministic: same bytes as the shipped ones would have)."""
    items = [(setup, str(directory), scenario, k) for scenario, k in runs]
    _map(_generate_one, items, workers, progress, f"regenerating {len(items)} reference runs", meanwhile)


def _map(function, items: list, workers: int, progress: bool, description: str, meanwhile=None) -> list:
    """``function(*item)`` for every item, in ``workers`` forked processes, with a progress bar;
    ``meanwhile()`` runs here once the items are handed out (after them with one worker)."""
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
            if meanwhile is not None:
                meanwhile()
            return results
        with WorkerPool(min(workers, len(items))) as pool:
            futures = {pool.submit(function, *item): i for i, item in enumerate(items)}
            if meanwhile is not None:
                meanwhile()
            for future in cf.as_completed(futures):
                results[futures[future]] = future.result()
                bar.advance(task)
    return results


# ------------------------------------------------------------------------------------ runs
def plan_groups(config: DemoConfig, bags: dict, imu_scenario: str | None, scoring=None, write: bool = True,
                floor_draws: int = 0, extra_gps=(), extra_imu=()) -> list:
    """One ``replay.offline.BagReplay`` per real bag (k = position of the bag in its scenario's sorted
    list): the real run, one run per GPS variant (directory = the GPS preset) and per ``extra_gps``
    (``replay.offline.Replacement``), the IMU study's run(s) (and ``extra_imu``) on ``imu_scenario``
    (``EVERY_SCENARIO``: on every one); ``scoring`` (ScoreOptions): each run scored where it is judged;
    ``write``: run bags written; ``floor_draws``: the bag's noise-floor judgements too.  Without static
    TFs in the demo file, each bag gets its default (``bags.layout.default_static_tfs``)."""
    from .replay.offline import Replacement
    from .runs import RealBag
    from .service import plan_replays

    gps_study = [Replacement({"gps": gps, "imu": config.gps_study_imu}, name=gps)
                 for gps in config.gps_variants] + list(extra_gps)
    imu_study = [Replacement({"imu": config.imu_study_imu})] + list(extra_imu)
    groups = []
    for scenario, paths in bags.items():
        sims = gps_study + (imu_study if imu_scenario in (scenario, EVERY_SCENARIO) else [])
        named = [RealBag(str(bag), scenario, k) for k, bag in enumerate(paths)]
        groups += plan_replays(named, sims, config.judge, seed=config.seed, scoring=scoring, write=write,
                               floor_draws=floor_draws, ground_truth_rate=config.ground_truth_rate,
                               static_tfs_by_layout=config.static_tfs_by_layout)
    return groups


def imu_variant(config: DemoConfig) -> str:
    from .runs import replay_variant

    return replay_variant({"imu": config.imu_study_imu})


# ---------------------------------------------------------------------------------- scoring
# Pooled pairs the ordering checks compare, beyond the adjacent ranks every study compares.
PAPER_VARIANTS = ("ch_gauss", "ch_rw", "airsim", "ch_gauss_airsim", "ch_rw_airsim")
CHECKED_PAIRS = tuple(combinations(PAPER_VARIANTS, 2))
CHECK_NAMES = {"ch_gauss_worst": "Ch:Gauss worst", "ch_rw_and_airsim_best": "Ch:RW and AirSim best",
               "hdop_improves_ch_gauss": "HDOP covariance improves Ch:Gauss",
               "sim_imu_small": "sim-IMU VEPD below every GPS variant"}
NOT_SEPARABLE = "not separable"


def ordering_checks(gps_doc: dict, imu_doc: dict | None, gps_result=None, imu_result=None,
                    paper=None, imu_variants=None) -> dict:
    """The paper's qualitative findings, checked on Table I (combined VEPD) of this demo.

    ``paper``: ((paper name, variant), …) — which variant plays which paper variant (default: the paper's
    names themselves); the checks compare those variants only, and ``imu_variants`` (default: all) of
    the IMU study.  ``checks``: what the VEPD values say (True/False; None when a variant is missing).
    With the studies' results (``metrics.StudyResult``), ``findings`` says what the precision supports:
    "yes", "no", or "not separable" (a tie, or a VEPD not above the judge-noise floor; ``reasons`` says
    which) — a finding the floor or the intervals cannot support is never stated as one."""
    names = dict(paper if paper is not None else ((name, name) for name in PAPER_VARIANTS))
    every = {variant: row["VEPD"] for variant, row in gps_doc["combined"].items()}
    vepd = {name: every[variant] for name, variant in names.items() if variant in every}  # paper names
    ranked = sorted(vepd, key=vepd.get)
    checks = _gps_checks(vepd, ranked) if every else {}
    if imu_doc is not None and vepd:
        imu_vepd = [row["VEPD"] for variant, row in imu_doc["combined"].items()
                    if imu_variants is None or variant in imu_variants]
        checks["sim_imu_small"] = bool(imu_vepd) and max(imu_vepd) < min(vepd.values())
    out = {"ranking_best_first": sorted(every, key=every.get), "vepd": every, "checks": checks}
    if any(name != variant for name, variant in names.items()):
        out["paper"] = names  # which variant played which paper variant
    if gps_result is not None:
        context = _Checked(gps_result, imu_result, [names[name] for name in ranked], names, imu_variants)
        findings = {name: FINDINGS[name](context, value) for name, value in checks.items()
                    if value is not None}
        out["findings"] = {name: verdict for name, (verdict, _why) in findings.items()}
        out["reasons"] = {name: why for name, (_verdict, why) in findings.items() if why}
    return out


def _gps_checks(vepd: dict, ranked: list) -> dict:
    """The GPS study's checks on {paper name: VEPD} (``ranked``: best first); None when a variant is
    missing."""
    best = {"ch_rw", "airsim"}
    return {"ch_gauss_worst": ranked[-1] == "ch_gauss" if "ch_gauss" in vepd else None,
            "ch_rw_and_airsim_best": set(ranked[:2]) == best if best <= set(vepd) else None,
            "hdop_improves_ch_gauss": vepd["ch_gauss_airsim"] < vepd["ch_gauss"]
            if {"ch_gauss", "ch_gauss_airsim"} <= set(vepd) else None}


@dataclass(frozen=True)
class _Checked:
    """What the ordering findings read: both studies, the checked GPS variants best first, the paper
    names' variants (``names``) and the IMU study's checked variants."""

    gps: Any
    imu: Any
    ranked: list
    names: dict
    imu_variants: Any = None

    def apart(self, better: str, worse: str) -> bool:
        """``better`` separably below ``worse`` (pooled); variant names."""
        from .metrics import separation

        return separation.separated(self.gps, better, worse) is True

    def tie(self, a: str, b: str) -> str:
        from .metrics import separation

        entry = separation.comparison(self.gps, a, b)
        return separation.verdict(self.gps, entry)[1] if entry else f"{a} and {b} not compared"


def _worst_finding(c: _Checked, value: bool) -> tuple:
    """Ch:Gauss scores worst."""
    gauss, ranked = c.names["ch_gauss"], c.ranked
    word = "yes" if value else "no"
    if value:
        runner_up = ranked[-2] if len(ranked) > 1 else None
        if runner_up is None or c.apart(runner_up, gauss):
            return word, ""
        return NOT_SEPARABLE, f"{gauss} vs {runner_up}: {c.tie(runner_up, gauss)}"
    if c.apart(gauss, ranked[-1]):
        return word, ""
    return NOT_SEPARABLE, f"{gauss} vs {ranked[-1]}: {c.tie(gauss, ranked[-1])}"


def _hdop_finding(c: _Checked, value: bool) -> tuple:
    """Adding the HDOP covariance improves Ch:Gauss."""
    gauss, hdop = c.names["ch_gauss"], c.names["ch_gauss_airsim"]
    better, worse = (hdop, gauss) if value else (gauss, hdop)
    return ("yes" if value else "no", "") if c.apart(better, worse) else (NOT_SEPARABLE, c.tie(better, worse))


def _best_two_finding(c: _Checked, value: bool) -> tuple:
    """Ch:RW and AirSim are the best two."""
    ranked = c.ranked
    best = [c.names["ch_rw"], c.names["airsim"]]
    if value:
        if len(ranked) < 3 or c.apart(ranked[1], ranked[2]):
            return "yes", ""
        return NOT_SEPARABLE, f"{ranked[1]} vs {ranked[2]}: {c.tie(ranked[1], ranked[2])}"
    others = [v for v in ranked[:2] if v not in best]
    if any(c.apart(other, member) for other in others for member in set(best)):
        return "no", ""
    member = max(set(best), key=ranked.index)
    return NOT_SEPARABLE, f"{others[0]} vs {member}: {c.tie(others[0], member)}"


def _imu_finding(c: _Checked, value: bool) -> tuple:
    """The simulated IMU's VEPD is below every GPS variant's (different studies: intervals)."""
    from .metrics import separation

    word = "yes" if value else "no"
    imu = c.imu
    if imu is None:
        return word, ""
    variants = [v for v in imu.variants if c.imu_variants is None or v in c.imu_variants]
    for variant in variants:
        if separation.below_floor(imu, variant):
            limit = separation.floor_threshold(imu, variant)
            return NOT_SEPARABLE, (f"{variant}'s VEPD {imu.combined[variant]['VEPD']:.4f} is not above its "
                                   f"judge-noise floor {limit:.4f}: its gap is not measured")

    def interval(study, variant):
        return study.combined[variant]["VEPD_ci95"] or [study.combined[variant]["VEPD"]] * 2

    imu_high = max(interval(imu, v)[1] for v in variants)
    gps_low = min(interval(c.gps, v)[0] for v in c.ranked)
    if (imu_high < gps_low) == bool(value):
        return word, ""
    return NOT_SEPARABLE, f"95 % intervals overlap (sim IMU up to {imu_high:.4f}, GPS from {gps_low:.4f})"


FINDINGS = {"ch_gauss_worst": _worst_finding, "hdop_improves_ch_gauss": _hdop_finding,
            "ch_rw_and_airsim_best": _best_two_finding, "sim_imu_small": _imu_finding}


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
    noise_floor: dict | None = None  # {"gps_study" | "imu_study": pooled floor {VEPD, VEPD_interval}}
    runs_bytes: int = 0       # size of the run bags (OUT/runs) when kept
    runs_kept: bool = False   # True: the run bags are in OUT/runs (--keep-runs)
    cpu_times: dict | None = None    # CPU seconds per step (this process + its reaped workers)
    gps_result: Any = None    # metrics.StudyResult of each study
    imu_result: Any = None
    runs_note: str | None = None  # run bags an earlier --keep-runs wrote, left in OUT/runs
    real_sample: dict | None = None  # --real-sample: OUT/real_sample/real_sample.json's content
    judges: dict | None = None       # --judges: OUT/judges.json's content


def _cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (the worker pools) so far."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _process_age() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        since_boot = float(Path("/proc/uptime").read_text().split()[0])
        return since_boot - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _Stages:
    """Wall and CPU seconds of each step of the demo; "startup" is the process's own start (the
    interpreter and the imports) up to the first step."""

    def __init__(self):
        self.wall, self.cpu = {}, {}
        now, cpu = time.perf_counter(), _cpu_seconds()
        age = _process_age()
        self.start_wall, self.start_cpu = now - (age or 0.0), 0.0
        self.wall["startup"], self.cpu["startup"] = age or 0.0, cpu
        self._wall, self._cpu = now, cpu

    def done(self, name: str) -> None:
        wall, cpu = time.perf_counter(), _cpu_seconds()
        self.wall[name], self.cpu[name] = wall - self._wall, cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def total(self) -> None:
        self.wall["total"] = time.perf_counter() - self.start_wall
        self.cpu["total"] = _cpu_seconds() - self.start_cpu


def run_demo(out, real=None, k: int | None = None, quick: bool = False, workers: int | None = None,
             config_path=None, progress: bool = True, imu_scenario: str | None = None,
             ray_address: str | None = None, timing=None, noise_floor: bool = True,
             keep_runs: bool = False, overwrite: bool = False, notice=None, start=None,
             real_sample: bool = False, judges=None) -> DemoResult:
    """The whole demo (see the module docstring); returns what the CLI prints.  ``timing``: a
    ``pipeline.timing.TimingModel`` in place of the demo file's judge timing; ``noise_floor``: measure
    the judge-noise floor (``noise_floor.compute``; ``--no-noise-floor`` turns it off); ``keep_runs``:
    write the run bags to OUT/runs (default: none are written; scores come from memory);
    ``notice(text)``: told what was applied by default (the ART static TFs), one line; ``start(judge) ->
    judge``: the judge's start (``pipeline.start``: initial state, warm-up) in place of the demo file's;
    ``real_sample``: the study on the real car drive shipped in bags/real/comma2k19 (``real_sample``;
    default configuration ``config/studies/demo_car.yaml``) instead of ``real`` or the reference set;
    ``judges``: judge names (``judges.JUDGES``) in place of the demo file's ``judges:``.

    OUT follows the output policy (``outputs.output_folder``): a new or empty folder, or this demo's own
    earlier output (its marker lists what it wrote: those files are replaced, the runs resumed, nothing
    else touched); any other folder only with ``overwrite``."""
    import dataclasses

    from .limits import check_repeats
    from .metrics import ScoreOptions
    from .pipeline.batch import available_cores

    stages = _Stages()  # "startup": the interpreter and every import above
    if real_sample and real is not None:
        raise UserError("--real-sample and --real: choose one (the real sample is the shipped comma2k19 "
                        "drive)")
    if real_sample and (k is not None or quick):
        raise UserError("--real-sample: its runs are the drive's scored windows (real_sample: in the demo "
                        "file); --k and --quick do not apply")
    if config_path is None and real is not None and not real_sample:
        config_path = _recorded_template(real, notice)
    config = load_demo_config(config_path if config_path is not None or not real_sample
                              else _config_file(REAL_SAMPLE_CONFIG))
    if real_sample and config.real_sample is None:
        raise UserError(f"--config {config.source}: no real_sample section (--real-sample needs one; "
                        "config/studies/demo_car.yaml has it)")
    if timing is not None:
        config = dataclasses.replace(config, judge=dataclasses.replace(config.judge, timing=timing))
    if start is not None:
        config = dataclasses.replace(config, judge=start(config.judge))
    if judges:
        config = dataclasses.replace(config, judges=tuple(judges))
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
        job = _Job(out, previous, stages, config, options, real, k, workers, progress, imu_scenario,
                   ray_address, noise_floor, keep_runs, notice, real_sample)
        return _demo(job)


def _recorded_template(real, notice):
    """The study template ``import`` recorded for the imported drives in ``real`` (DIR/import.yaml:
    ``vehicle.template``), said in one line; None (the default demo file) for bags that are no import."""
    from .importer.vehicle import recorded_template

    recorded = recorded_template(real)
    if recorded is None:
        return None
    name, reason = recorded
    if notice is not None:
        notice(f"--real {real}: the template import recorded, config/studies/{name} ({reason}); "
               "--config overrides it")
    return _config_file(("studies", name))


def _imported_scenario(job: _Job, bags: dict):
    """The IMU study's scenario for imported drives whose demo file names a scenario they lack: the
    imported one (said in one line), else None."""
    from .importer.vehicle import import_summary

    summary = import_summary(job.real) if job.real is not None else None
    scenario = summary.get("scenario") if summary else None
    if scenario not in bags:
        return None
    if job.notice is not None:
        job.notice(f"imu study: scenario {scenario!r}, the imported one ({job.config.source} names "
                   f"{job.config.imu_scenario!r}; --imu-scenario chooses)")
    return scenario


def _config_file(parts: tuple) -> Path:
    from .resources import config_path

    return config_path(*parts)


@dataclass
class _Job:
    """One demo's inputs, as ``run_demo`` resolved them (``k`` becomes the K found)."""

    out: Path
    previous: dict            # the marker of this demo's earlier output ({} when new)
    stages: Any               # _Stages
    config: DemoConfig
    options: Any              # metrics.ScoreOptions
    real: Any
    k: int
    workers: int
    progress: bool
    imu_scenario: str | None
    ray_address: str | None
    noise_floor: bool
    keep_runs: bool
    notice: Any = None
    real_sample: bool = False

    @property
    def runs_dir(self) -> Path:
        return self.out / RUNS

    @property
    def draws(self) -> int:
        return self.config.noise_floor_draws if self.noise_floor else 0

    @property
    def forks_workers(self) -> bool:
        """Runs go to forked local workers (more than one, no Ray): work can overlap in this process."""
        return self.workers > 1 and self.ray_address is None


@dataclass
class _RealSide:
    """The real bags of a demo and what they are."""

    bags: dict                # {scenario: [bag paths]}
    source: str               # what the report's banner and the console call the real side
    imu_scenario: str         # a scenario or EVERY_SCENARIO
    sample: Any = None        # real_sample.Prepared (--real-sample)

    @property
    def gps_extra(self) -> tuple:
        return self.sample.gps_variants if self.sample is not None else ()

    @property
    def imu_extra(self) -> tuple:
        return self.sample.imu_variants if self.sample is not None else ()

    @property
    def imu_scenarios(self) -> list:
        return list(self.bags) if self.imu_scenario == EVERY_SCENARIO else [self.imu_scenario]


@dataclass
class _Scored:
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


def _demo(job: _Job) -> DemoResult:
    side = _real_side(job)
    job.stages.done("real_bags")
    replayed, groups = _judge_runs(job, side, side.bags, "judging {} real bags and their simulations")
    job.stages.done("runs")
    scored = _score(job, side, replayed)
    job.stages.done("score")  # the statistics and every figure (drawn by the same workers)
    if job.config.judges:
        scored.judges = _judge_robustness(job, side, scored)
        job.stages.done("judges")
    sensitivity = None
    if side.sample is not None:
        sensitivity = _sensitivity(job, side, scored)
        job.stages.done("sensitivity")
    return _finish(job, side, replayed, groups, scored, sensitivity)


def _real_side(job: _Job) -> _RealSide:
    """Step 1: the real bags — the real sample's evaluated windows (prepared here: import, calibrate,
    tune), ``--real DIR``, or the synthetic reference set (regenerated into OUT/reference beyond the
    shipped runs); checked before any judging."""
    from . import reference as ref

    config, sample = job.config, None
    if job.real_sample:
        from .real_sample import prepare

        if job.forks_workers:
            # the tuning judges in this process: with an empty numba cache, the other cores share the
            # compilation first (alone, the first run took 64 s; shared, 38–43 s)
            with _judge_loading(job) as warm:
                warm()
        sample = prepare(config.real_sample, config, job.out, job.progress)
        job.stages.done("real_sample")  # import, calibrate --truth and tune on the held-out windows
        bags = {scenario: [Path(path) for path in paths] for scenario, paths in sample.bags.items()}
        held = config.real_sample.held_out_windows
        real_source = (f"real sample: {sample.segment} (comma2k19 real car drive, imported; "
                       f"{len(sample.windows)} windows of {config.real_sample.window_s:g} s, the first "
                       f"{held} held out for calibration and tuning)")
    elif job.real is not None:
        bags = find_real_bags(job.real, job.k)
        real_source = str(Path(job.real).resolve())
    else:
        setup = ref.load_setup(config.reference)
        bags, missing = reference_runs(setup, job.k, job.out, ref.shipped_reference_dir())
        if missing and job.forks_workers:
            # the judge's kernels load here while the workers write the runs (later, the load would
            # leave a core idle)
            with _judge_loading(job) as warm:
                regenerate(setup, job.out, missing, job.workers, job.progress, meanwhile=warm)
        else:
            regenerate(setup, job.out, missing, job.workers, job.progress)
        real_source = f"synthetic reference data set ({setup.name}, seed {setup.seed})"
    for scenario, paths in bags.items():
        if len(paths) < 2:  # checked before any judging: the scorer needs two runs per side
            raise UserError(f"scenario {scenario}: {len(paths)} real run(s); W1/W2 need at least 2 per "
                            "scenario (raise --k or add bags)")
    job.k = max(len(paths) for paths in bags.values())  # a user's folder may hold fewer than asked
    imu_scenario = job.imu_scenario or config.imu_scenario
    if job.imu_scenario is None and imu_scenario != EVERY_SCENARIO and imu_scenario not in bags:
        imu_scenario = _imported_scenario(job, bags) or imu_scenario
    if imu_scenario != EVERY_SCENARIO and imu_scenario not in bags:
        raise UserError(f"imu study: scenario {imu_scenario!r} has no real bags (scenarios found: "
                        f"{', '.join(bags)}; the layout is {REAL_LAYOUT}); choose one with --imu-scenario")
    return _RealSide(bags, real_source, imu_scenario, sample)


def _judge_runs(job: _Job, side: _RealSide, bags: dict, description: str, main: bool = True) -> tuple:
    """Step 2: every run of ``bags``, each scored where it is judged (``service.replay_bags``):
    (ReplayedBags, the tasks).  ``description`` has a ``{}`` for the number of bags.  Not ``main`` (the
    real sample's sensitivity runs): no run bag is written and nothing is announced."""
    from .service import replay_bags

    draws = job.draws
    groups = _plan_while_warming(job, (job.config, bags, side.imu_scenario, job.options,
                                       job.keep_runs and main, draws, side.gps_extra, side.imu_extra))
    floor_note = f" + {draws} noise-floor draws of each real bag" if draws else ""
    # shared: OUT, which claim_output made, is what Ray's nodes must see when OUT/runs is not written
    replayed = replay_bags(groups, job.runs_dir, workers=job.workers, ray_address=job.ray_address,
                           progress=job.progress, description=description.format(len(groups)) + floor_note,
                           notice=job.notice if main else None, shared=job.out, warn_health=main)
    replayed.raise_on_failure()
    return replayed, groups


def _plan_while_warming(job: _Job, plan_args: tuple) -> list:
    """``plan_groups(*plan_args)`` — which reads the first messages of every real bag, ~30 ms a bag — in
    a forked process while this one loads the judge's kernels (``service.warm_judge``, ~1.3 s, which
    ``replay_bags`` then finds done; with an empty numba cache its helpers share the compilation): on
    two cores the reading takes no wall time.  One worker, or Ray: planned here."""
    from .workers import WorkerPool

    if not job.forks_workers:
        return plan_groups(*plan_args)
    with _judge_loading(job) as warm, WorkerPool(1) as pool:  # the helpers before the pool's thread
        planned = pool.submit(plan_groups, *plan_args)
        warm()
        return planned.result()


@contextlib.contextmanager
def _judge_loading(job: _Job):
    """Yields ``warm()``, which loads the judge's kernels into this process (``service.warm_judge``);
    with an empty numba cache, ``workers − 1`` forked helpers share the compilation meanwhile.  Enter it
    before starting any thread (a pool's, a spinner's): the helpers are forked only while none runs
    (``parallel_compile.compilation_helpers``)."""
    import functools

    from .judge.parallel_compile import compilation_helpers
    from .service import warm_judge

    warm = functools.partial(warm_judge, job.config.judge)
    with compilation_helpers(warm, job.workers - 1):
        yield warm


def _study_names(job: _Job, side: _RealSide) -> tuple:
    """(GPS study variants, IMU study variants), in the order the demo file and the real sample list
    them."""
    gps = list(job.config.gps_variants) + [r.variant for r in side.gps_extra]
    imu = [imu_variant(job.config)] + [r.variant for r in side.imu_extra]
    return gps, imu


def _split(job: _Job, side: _RealSide, scored: list) -> tuple:
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


def _pairs(job: _Job, side: _RealSide) -> list:
    """Pooled pairs compared beyond the adjacent ranks: those of the paper's ordering checks (in this
    study's names) and every fitted variant of the real sample against every other GPS variant."""
    names = dict(job.config.paper_variants)
    pairs = [(names[a], names[b]) for a, b in CHECKED_PAIRS if a in names and b in names]
    fitted = [r.variant for r in side.gps_extra]
    return pairs + [(f, v) for f in fitted for v in job.config.gps_variants] + list(combinations(fitted, 2))


def _attach_floors(draw_records: list, gps_result, imu_result) -> dict:
    """Each study's judge-noise floor from the real bags' timing draws; {study: pooled floor}."""
    from .noise_floor.compute import judge_noise_floor

    for result in (gps_result, imu_result):
        result.judge_noise_floor = judge_noise_floor(draw_records, result.variants, result.scenarios)
    return {name: {key: next(iter(result.judge_noise_floor["combined"].values()))[key]
                   for key in ("VEPD", "VEPD_interval")}
            for name, result in (("gps_study", gps_result), ("imu_study", imu_result))}


def _imu_title(job: _Job, side: _RealSide) -> str:
    names = " / ".join(_study_names(job, side)[1])
    where = "every scenario" if side.imu_scenario == EVERY_SCENARIO and len(side.bags) > 1 else \
        ", ".join(side.imu_scenarios)
    return f"real GPS + {names} vs real GPS + real IMU ({where})"


def _score(job: _Job, side: _RealSide, replayed) -> _Scored:
    """Step 3: both studies scored (intervals, p-values, comparisons, the floor) and their figures."""
    import dataclasses

    from .metrics import score_study
    from .report import STATISTICS_FIGURES, draw
    from .workers import WorkerPool

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
    return _Scored(gps_result, imu_result, gps_series, imu_series, run_records, imu_title, floors, pngs)


def _judge_robustness(job: _Job, side: _RealSide, scored: _Scored) -> dict:
    """``--judges`` (``judges.py``): both studies again with every run judged by each other judge (no run
    bag written), then the judges compared; judges.json's document."""
    import dataclasses

    from .judges import judge_robustness
    from .metrics import score_study

    def again(judge, name: str) -> dict:
        other = dataclasses.replace(job, config=dataclasses.replace(job.config, judge=judge))
        replayed, _groups = _judge_runs(other, side, side.bags, f"judge {name}: judging {{}} real bags",
                                        main=False)
        gps_records, imu_records, *_rest = _split(job, side, replayed.scored)
        gps = score_study(gps_records, job.options, workers=job.workers)
        imu = score_study(imu_records, job.options, workers=job.workers)
        if job.draws:
            _attach_floors(replayed.noise_floor_draws(), gps, imu)
        return {"gps_study": gps, "imu_study": imu}

    main = {"gps_study": scored.gps_result, "imu_study": scored.imu_result}
    return judge_robustness(job.config.judges, job.config.judge, main, again, job.out, job.options,
                            job.notice)


def _sensitivity(job: _Job, side: _RealSide, scored: _Scored) -> dict:
    """The real sample's covariance sensitivity: the whole study again on each other import of the
    evaluated windows (the fix σ scaled; the pseudorange policy), judged and scored like the main one;
    {label: {sigma_m, gps_study: {variant: {VEPD, VEPD_ci95, below_floor}}, imu_study: …, floor: …}},
    the main import (1×) included, in σ order."""
    from .metrics import score_study
    from .metrics.separation import below_floor
    from .real_sample import PSEUDORANGE, scale_label

    sample = side.sample
    results = {sample.main_label: (scored.gps_result, scored.imu_result, scored.floors)}
    for label, bags in sample.sensitivity_bags.items():
        replayed, _groups = _judge_runs(job, side, bags, f"sensitivity {label}: judging {{}} real bags",
                                        main=False)
        gps_records, imu_records, *_rest = _split(job, side, replayed.scored)
        gps = score_study(gps_records, job.options, workers=job.workers)
        imu = score_study(imu_records, job.options, workers=job.workers)
        floors = _attach_floors(replayed.noise_floor_draws(), gps, imu) if job.draws else None
        results[label] = (gps, imu, floors)
    order = [scale_label(s) for s in sorted((1.0, *sample.config.sensitivity))] + \
        [PSEUDORANGE] * (PSEUDORANGE in results)

    def cells(result):
        return {v: {"VEPD": result.combined[v]["VEPD"], "VEPD_ci95": result.combined[v]["VEPD_ci95"],
                    "below_floor": below_floor(result, v)} for v in result.variants}

    return {label: {"sigma_m": sample.sensitivity_sigma[label], "gps_study": cells(results[label][0]),
                    "imu_study": cells(results[label][1]), "floor": results[label][2] or {}}
            for label in order}


def _finish(job: _Job, side: _RealSide, replayed, groups: list, scored: _Scored, sensitivity) -> DemoResult:
    """Step 4: the report files (built aside, then published into OUT), demo.json, the marker."""
    from .outputs import write_marker

    out, stages = job.out, job.stages
    runs_total = sum(1 + len(g.sims) for g in groups)
    with _staging(out) as staging:
        gps_doc, imu_doc, sample_doc = _report_files(job, side, scored, sensitivity, staging)
        ordering = ordering_checks(gps_doc, imu_doc, scored.gps_result, scored.imu_result,
                                   job.config.paper_variants, [imu_variant(job.config)])
        stages.done("report")
        runs_bytes = sum(tree_bytes(Path(run.path)) for run in replayed.runs) if job.keep_runs else 0
        stages.total()
        summary = {
            "k": job.k, "scenarios": list(side.bags), "real_source": side.source,
            "imu_study_scenario": ", ".join(side.imu_scenarios),
            "runs": {"groups": len(groups), "groups_with_new_runs": replayed.report.written,
                     "total": runs_total, "bag_bytes": runs_bytes, "kept": job.keep_runs},
            "wall_time_s": {name: round(value, 3) for name, value in stages.wall.items()},
            "cpu_time_s": {name: round(value, 3) for name, value in stages.cpu.items()},
            "workers": job.workers, "ordering": ordering, "config": job.config.source,
            "judge_timing": job.config.judge.timing.describe(), "judge_noise_floor": scored.floors,
            "warnings": separation_warnings(scored.gps_result, scored.imu_result),
        }
        if sample_doc is not None:
            summary["real_sample"] = sample_doc
        (staging / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True, default=float) + "\n",
                                       encoding="utf-8")
        files = _publish(staging, out, job.previous.get("files", {}))
    # Run bags an earlier --keep-runs wrote are the user's: a plain demo leaves them as they are.
    runs_dir = job.runs_dir
    earlier_runs = bool(job.previous.get("runs_kept")) and runs_dir.is_dir()
    write_marker(out, COMMAND, files, runs_kept=(job.keep_runs and runs_dir.is_dir()) or earlier_runs)
    note = None
    if earlier_runs and not job.keep_runs:
        note = (f"run bags: {runs_dir} ({tree_bytes(runs_dir) / 1e6:.0f} MB) kept as an earlier --keep-runs "
                "wrote them, untouched (this demo scored in memory; remove the folder to free the space)")
    return DemoResult(out, job.k, list(side.bags), stages.wall, gps_doc, imu_doc, ordering, side.source,
                      replayed.report.written, runs_total, scored.floors, runs_bytes, job.keep_runs,
                      stages.cpu, scored.gps_result, scored.imu_result, note, sample_doc, scored.judges)


def _report_files(job: _Job, side: _RealSide, scored: _Scored, sensitivity, staging: Path) -> tuple:
    """Write the report (both studies; the real sample's section and files) into ``staging``:
    (GPS vepd document, IMU vepd document, the real sample's record or None)."""
    from .report import ReportSection, Study, tables, write_report
    from .report.provenance import collect as collect_provenance

    extra = {"input": "demo", "source": side.source, "k": job.k}
    context = {"command": "sim2real-eval demo" + (" --real-sample" if job.real_sample else ""),
               "demo configuration": job.config.source, "runs per scenario": job.k}
    source = str(job.runs_dir) if job.keep_runs else \
        "judged and scored in memory (--keep-runs writes them to OUT/runs)"
    gps_result, imu_result = scored.gps_result, scored.imu_result
    imu_provenance = collect_provenance(imu_result, "demo runs", source, context, scored.run_records)
    imu_section = Study(IMU_STUDY, f"Simulated-IMU study: {scored.imu_title}", imu_result, scored.imu_series,
                        note=IMU_STUDY_NOTE, provenance=imu_provenance)
    sections, sample_doc, sample_dir = (), None, staging.parent / REAL_SAMPLE
    if side.sample is not None:
        sections, sample_doc = _real_sample_files(side.sample, gps_result, imu_result, sensitivity,
                                                  sample_dir)
    if scored.judges is not None:
        from . import judges

        doc = scored.judges
        sections += (ReportSection(judges.section_html(doc), judges.section_markdown(doc)),)
    write_report(staging, gps_result, scored.gps_series, source, extra_options=extra, workers=job.workers,
                 provenance=collect_provenance(gps_result, "demo runs", source, context, scored.run_records),
                 studies=[imu_section], pngs=scored.pngs, sections=sections)
    prefix = f"{IMU_STUDY}_"  # the IMU study's own folder: the same figures, drawn once
    write_report(staging / IMU_STUDY, imu_result, scored.imu_series, source,
                 extra_options=dict(extra, study=scored.imu_title), workers=job.workers,
                 provenance=imu_provenance,
                 pngs={name[len(prefix):]: png for name, png in scored.pngs.items()
                       if name.startswith(prefix)})
    if scored.judges is not None:
        judges.write(scored.judges, staging)
    if side.sample is not None:
        os.replace(sample_dir, staging / REAL_SAMPLE)
    return tables.vepd_document(gps_result, extra), tables.vepd_document(imu_result, extra), sample_doc


def _real_sample_files(sample, gps_result, imu_result, sensitivity: dict, folder: Path) -> tuple:
    """The real sample's files in ``folder`` (calibration/: calibrate --truth's presets, report and
    plots; tune/: tune's outputs; real_sample.json) and its report section: ((ReportSection,), record)."""
    from . import real_sample as rs
    from .calibrate.drive import write_drive_calibration
    from .calibrate.tune import write_outputs
    from .report import ReportSection

    calibration = folder / "calibration"
    calibration.mkdir(parents=True)
    write_drive_calibration(sample.calibration, calibration / "params.yaml", plots_dir=calibration)
    write_outputs(sample.tuned, folder / "tune", marker=False)
    record = dict(rs.record(sample), sensitivity=sensitivity,
                  verdicts=rs.verdict_rows([("GPS study", gps_result), ("IMU study", imu_result)]),
                  comparisons=rs.fitted_rows(gps_result, imu_result))
    text = json.dumps(record, indent=2, sort_keys=True, default=float) + "\n"
    (folder / "real_sample.json").write_text(text, encoding="utf-8")
    images = {"Calibration on the held-out windows: fix minus truth":
              (calibration / "gps_error.png").read_bytes(),
              "Tuning on the held-out windows": (folder / "tune" / "convergence.png").read_bytes()}
    section = ReportSection(rs.section_html(record, gps_result, imu_result, sensitivity, images),
                            rs.section_markdown(record, gps_result, imu_result, sensitivity))
    return (section,), record


@contextlib.contextmanager
def _staging(out: Path):
    """A hidden staging folder inside OUT (``.report.tmp-*``) for the report, removed whatever happens."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix=".report.tmp-", dir=out))
    try:
        yield root / "report"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _figures(gps_result, gps_series: dict, imu_result, imu_series: dict, imu_title: str, wanted) -> dict:
    """{figure file name: (function, args)} of the demo's report (the GPS study, then the IMU study's
    figures as its section: ``imu_study_*``) whose base name (``overview``, …) ``wanted`` accepts."""
    from .report import Study, figure_groups

    section = Study(IMU_STUDY, imu_title, imu_result, imu_series)
    groups = figure_groups(gps_result, gps_series, studies=[section])
    prefixes = [""] + [f"{IMU_STUDY}_"]
    return {name: (function, args) for prefix, group in zip(prefixes, groups)
            for name, _title, function, args in group if wanted(name[len(prefix):])}


def separation_warnings(gps_result, imu_result) -> list:
    """The permutation-limit warnings of both studies (``metrics.separation.permutation_warnings``)."""
    from .metrics.separation import permutation_warnings

    return [f"{name}: {line}" for name, result in (("GPS study", gps_result), ("IMU study", imu_result))
            for line in permutation_warnings(result)]


COMMAND = "demo"
# What the demo writes in OUT: the report (files it lists in its marker) and the folders it manages.
REPORT_NAMES = (*REPORT_FILES, IMU_STUDY, SUMMARY, REAL_SAMPLE, "judges.json")  # judges.json: --judges
FOLDERS = (RUNS, REFERENCE, IMPORTED)


def own_names():
    """What the demo writes in OUT (``outputs.OwnNames``): its report names; its run folders are resumed
    run by run and must not be links."""
    from .outputs import OwnNames

    return OwnNames(COMMAND, REPORT_NAMES, links=FOLDERS)


@contextlib.contextmanager
def claim_output(out: Path, overwrite: bool):
    """OUT for this demo (``outputs.claim_folder``), yielding the marker of its earlier output ({} when
    new).  Its own output (its marker verified: ``outputs.own_output_problem``) is resumed; a folder of
    the user's, or one whose marker does not hold up, is refused unless ``overwrite``: then it is moved
    aside and deleted only when the new output is complete; an interrupted or failed demo puts it back."""
    from .outputs import claim_folder

    with claim_folder(out, "--out", overwrite, own_names(), runs_kept=False) as previous:
        yield previous


def _publish(staging: Path, out: Path, previous: dict) -> dict:
    """The finished report from the staging folder into OUT (``outputs.publish_files``): the marker's
    {relative path: {size, sha256}}."""
    from .outputs import publish_files

    return publish_files(staging, out, previous, "--out", COMMAND)


def tree_bytes(path: Path) -> int:
    """Bytes of the files below ``path`` (what ``du --apparent-size`` counts)."""
    return sum(entry.stat().st_size for entry in Path(path).rglob("*") if entry.is_file())


def summary_table(result: DemoResult) -> str:
    """The text the CLI prints: Table I with group letters (compact letter display) and the rule they
    follow, intervals and sub-floor marks, the adjacent ranks compared, the IMU study, the judge-noise
    floor, the ordering checks as the precision supports them, permutation-limit warnings, and the time
    of each step."""
    from .metrics import separation
    from .report import health

    gps, imu = result.gps_result, result.imu_result
    rows = [(gps, variant, "") for variant in separation.order(gps)]
    rows += [(imu, variant, "  (IMU study)") for variant in separation.order(imu)]
    width = max([len("variant")] + [len(variant) for _r, variant, _note in rows])
    lines = [f"VEPD (lower = closer to real), K = {result.k} per scenario, real = {result.real_source}",
             f"{'group':<5} {'variant':<{width}} {'W1 m/s':>8} {'W2':>8} {'VEPD':>8}  {'95 % CI':<18}"]
    for study, variant, note in rows:
        row = study.combined[variant]
        rank = separation.group_letters(study)[variant]
        ci = row["VEPD_ci95"]
        interval = f"[{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "–"
        mark = "  ≤ floor" if separation.below_floor(study, variant) else ""
        mark += f"  {health.NOT_TRACKED}" if health.tracked(study) is False else ""
        lines.append(f"{rank:<5} {variant:<{width}} {row['W1']:>8.4f} {row['W2']:>8.4f} {row['VEPD']:>8.4f}  "
                     f"{interval:<18}{mark}{note}")
    ties = [f"{entry['better']} ~ {entry['worse']} ({reason})"
            for _ranks, entry, separable, reason in separation.adjacent_rows(gps) if separable is False]
    if ties:
        lines.append("adjacent variants not separable: " + "; ".join(ties))
    lines.append(f"group: {separation.rule(gps)}")
    if result.noise_floor:
        floor = ", ".join(f"{name.replace('_', ' ')} {value['VEPD']:.4f} [{value['VEPD_interval'][0]:.4f}, "
                          f"{value['VEPD_interval'][1]:.4f}]" for name, value in result.noise_floor.items())
        draws = gps.judge_noise_floor
        lines.append(f"judge-noise floor (VEPD from judge timing alone, mean [range] of {draws['pairs']} "
                     f"pairs of {draws['draws']} draws; \"≤ floor\": not above its upper end): {floor}")
    else:
        lines.append("judge-noise floor: not measured (--no-noise-floor); sub-floor results are not marked")
    findings = result.ordering.get("findings", {})
    reasons = result.ordering.get("reasons", {})
    marks = ", ".join(f"{CHECK_NAMES[key]}: {findings.get(key, 'n/a')}"
                      + (f" ({reasons[key]})" if key in reasons else "")
                      for key in result.ordering["checks"])
    mapped = [variant for name, variant in result.ordering.get("paper", {}).items() if variant != name]
    lines.append(f"paper's ordering{' (on ' + ', '.join(mapped) + ')' if mapped else ''} — {marks}")
    lines += health.console_lines(gps)
    lines += [f"warning: {line}" for line in separation_warnings(gps, imu)]
    if result.real_sample is not None:
        from .real_sample import console_lines

        lines += console_lines(result.real_sample, gps, imu)
    if result.judges is not None:
        from .judges import console_lines as judge_lines

        lines += judge_lines(result.judges)
    lines.append(_time_line(result))
    if result.runs_note:
        lines.append(result.runs_note)
    else:
        lines.append(f"run bags: {result.out / RUNS} ({result.runs_bytes / 1e6:.0f} MB)" if result.runs_kept
                     else f"run bags: none written (scored in memory); --keep-runs writes them to "
                          f"{result.out / RUNS}")
    return "\n".join(lines)


def _time_line(result: DemoResult) -> str:
    """Wall and CPU time of the demo and of each of its steps."""
    wall, cpu = result.timings, result.cpu_times or {}
    labels = {"startup": "startup", "real_sample": "import + calibrate + tune", "real_bags": "real bags",
              "runs": "runs", "score": "scores + figures", "judges": "other judges",
              "sensitivity": "sensitivity",
              "report": "report files"}
    steps = ", ".join(f"{label} {wall[name]:.1f}" + (f" ({cpu[name]:.1f} CPU)" if name in cpu else "")
                      for name, label in labels.items() if name in wall)
    return (f"wall time {wall['total']:.1f} s, CPU {cpu.get('total', 0.0):.1f} s ({steps}); "
            f"report: {result.out / 'report.html'}")


__all__ = ["DemoConfig", "DemoResult", "find_real_bags", "load_demo_config", "ordering_checks", "plan_groups",
           "run_demo", "summary_table", "tree_bytes"]
