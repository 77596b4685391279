"""The main job: the paper's study (seed 003) end to end — real bags → runs → VEPD report.

Steps (``run_demo`` → ``_demo``; each step its own module of ``studies``, all taking the one parsed demo
file ``config.DemoConfig`` inside the ``job.DemoJob``; ``accounting.Stages`` times them):
1. Real bags (``real_bags.real_side``): ``--real DIR`` (``DIR/<scenario>/<run>/``, runs sorted by name,
   the first K used; named by ``runs.find_real_bags`` like ``replay`` names them), or the synthetic
   reference data set: the runs shipped in ``bags/reference`` plus, when K exceeds them, runs regenerated
   deterministically into ``OUT/reference`` (``reference.py``), or (``--real-sample``) the real car drive
   shipped in ``bags/real/comma2k19``, imported into ``OUT/imported`` with held-out windows calibrated
   and tuned on (``real_sample``; configuration ``config/studies/demo_car.yaml``): its scored windows,
   plus the ``calibrated`` and ``tuned`` variants of the GPS study and ``sim_imu-calibrated`` of the IMU
   study.  Input bags are only read.
2. Runs (``plan.judge_runs``): per real bag one task (``replay.offline.BagReplay``, the one replay unit,
   via ``service.replay_bags``) reads the bag (its truth and real streams) once and judges these runs,
   all on sensor messages from the same time window (where the bag's INS truth exists; ``window_ns``),
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
3. Scores (``scoring.score_studies``; the scorer's pieces): the GPS study → ``OUT/`` (vepd.json,
   statistics.json, runs.csv, tables.md, figures/, report.html); the IMU study → ``OUT/imu_study/``
   (same files); each study's variants compared with each other (adjacent ranks, ties), its
   ``judge_noise_floor`` and sub-floor marks (``metrics.separation``).
   The real sample's covariance sensitivity: both studies again on its other imports of the scored
   windows (``scoring.covariance_sensitivity``); its section of the report and ``OUT/real_sample/``
   (calibration, tuning, ``real_sample.json``).
4. ``OUT/demo.json`` (``report_files.finish``): wall and CPU time per step, K, inputs, and the paper's
   qualitative ordering checks (``findings``) — each "yes", "no" or "not separable" (a finding the floor
   or the intervals cannot support is not stated as one).
5. Run bags (3.7 MB per run: 705 MB for K = 10) are not written unless ``keep_runs`` (``--keep-runs``):
   the scores come from the judged series in memory, so no bag is written only to be read back and
   deleted.  Measured alternative (not taken): MCAP with zstd chunk compression shrinks them 3.9x,
   still 179 MB for K = 10 (README).

OUT follows the one output policy (``outputs``; docs/pipeline.md, "Outputs"): the demo writes a new or
empty folder, or resumes its own earlier output, recognised by its marker file (``OUT/.sim2real-eval.json``,
listing every report file it wrote with its size and SHA-256): those files are replaced, nothing else
in OUT is touched (run bags an earlier ``--keep-runs`` wrote stay, resumed by the next ``--keep-runs``),
and a file among its report names that it did not write is refused up front.  A folder of the user's is
replaced only with ``--overwrite`` (``outputs.claim_folder``).  The report files are built in a staging
folder (``outputs.staging_folder``) and moved into OUT (``outputs.publish_files``) only when every score
is done, so OUT never holds a half-written report file.  What the CLI prints: ``summary.summary_table``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import UserError
from ..limits import check_repeats
from ..metrics import ScoreOptions
from ..outputs import claim_folder
from ..pipeline.batch import available_cores
from .accounting import Stages
from .config import REAL_SAMPLE_CONFIG, config_file, load_demo_config, recorded_template_config

# The names of what the demo writes in OUT, which ``cli/demo.py`` checks against the inputs, and the
# summary it prints.
from .job import (
    IMPORTED,
    IMU_STUDY,
    JUDGES,
    REAL_SAMPLE,
    REFERENCE,
    REPORT_FILES,
    RUNS,
    SUMMARY,
    DemoJob,
    DemoResult,
    own_names,
)
from .plan import judge_runs
from .real_bags import real_side
from .report_files import finish
from .scoring import compare_judges, covariance_sensitivity, score_studies
from .summary import summary_table

if TYPE_CHECKING:
    from ..runs.timing import TimingModel


@dataclass(frozen=True)
class DemoOptions:
    """How ``run_demo`` runs the demo (the options of ``sim2real-eval demo``)."""

    real: str | Path | None = None      # real bags DIR/<scenario>/<run>/ (None: the reference set)
    k: int | None = None                # runs per scenario (None: the demo file's repeats / quick_repeats)
    quick: bool = False
    workers: int | None = None          # None: all cores
    config_path: str | Path | None = None  # demo YAML (None: the default, or the template import recorded)
    progress: bool = True
    imu_scenario: str | None = None     # None: the demo file's (or an imported drive's scenario)
    ray_address: str | None = None
    timing: TimingModel | None = None   # in place of the demo file's judge timing
    noise_floor: bool = True            # measure the judge-noise floor
    keep_runs: bool = False             # write the run bags to OUT/runs
    overwrite: bool = False             # replace an --out folder that is no demo output
    notice: Callable | None = None      # notice(text): told what was applied by default, one line
    start: Callable | None = None       # start(JudgeConfig) -> JudgeConfig: the judge's start options
    real_sample: bool = False           # the study on the shipped comma2k19 drive
    judges: tuple | None = None         # judge names (judges.JUDGES) in place of the demo file's judges:


def run_demo(out, options: DemoOptions = DemoOptions()) -> DemoResult:
    """The whole demo (see the module docstring); returns what the CLI prints.  ``options.timing``: a
    ``runs.timing.TimingModel`` in place of the demo file's judge timing; ``noise_floor``: measure
    the judge-noise floor (``noise_floor.compute``; ``--no-noise-floor`` turns it off); ``keep_runs``:
    write the run bags to OUT/runs (default: none are written; scores come from memory);
    ``notice(text)``: told what was applied by default (the ART static TFs), one line; ``start(judge) ->
    judge``: the judge's start (``runs.start``: initial state, warm-up) in place of the demo file's;
    ``real_sample``: the study on the real car drive shipped in bags/real/comma2k19 (``real_sample``;
    default configuration ``config/studies/demo_car.yaml``) instead of ``real`` or the reference set;
    ``judges``: judge names (``judges.JUDGES``) in place of the demo file's ``judges:``.

    OUT follows the output policy (``outputs.output_folder``): a new or empty folder, or this demo's own
    earlier output (its marker lists what it wrote: those files are replaced, the runs resumed, nothing
    else touched); any other folder only with ``overwrite``."""
    stages = Stages()  # "startup": the interpreter and every import above
    real, k, config_path, real_sample = options.real, options.k, options.config_path, options.real_sample
    quick, timing, start, notice = options.quick, options.timing, options.start, options.notice
    if real_sample and real is not None:
        raise UserError("--real-sample and --real: choose one (the real sample is the shipped comma2k19 "
                        "drive)")
    if real_sample and (k is not None or quick):
        raise UserError("--real-sample: its runs are the drive's scored windows (real_sample: in the demo "
                        "file); --k and --quick do not apply")
    if config_path is None and real is not None and not real_sample:
        config_path = recorded_template_config(real, notice)
    config = load_demo_config(config_path if config_path is not None or not real_sample
                              else config_file(REAL_SAMPLE_CONFIG))
    if real_sample and config.real_sample is None:
        raise UserError(f"--config {config.source}: no real_sample section (--real-sample needs one; "
                        "config/studies/demo_car.yaml has it)")
    if timing is not None:
        config = dataclasses.replace(config, judge=dataclasses.replace(config.judge, timing=timing))
    if start is not None:
        config = dataclasses.replace(config, judge=start(config.judge))
    if options.judges:
        config = dataclasses.replace(config, judges=tuple(options.judges))
    scoring = ScoreOptions(bootstrap=config.bootstrap, permutations=config.permutations,
                           seed=config.score_seed, exclude_scenarios=(),
                           warmup_s=config.judge.warmup_s).validate()
    if k is None:
        k = config.quick_repeats if quick else config.repeats
    check_repeats(k, "--k")
    workers = available_cores() if options.workers is None else int(options.workers)
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    out = Path(out)
    with claim_folder(out, "--out", options.overwrite, own_names(), runs_kept=False) as previous:
        job = DemoJob(out=out, previous=previous, stages=stages, config=config, options=scoring, real=real,
                      k=k, workers=workers, progress=options.progress,
                      imu_scenario=options.imu_scenario, ray_address=options.ray_address,
                      noise_floor=options.noise_floor, keep_runs=options.keep_runs, notice=notice,
                      real_sample=real_sample)
        return _demo(job)


def _demo(job: DemoJob) -> DemoResult:
    side = real_side(job)
    job.stages.done("real_bags")
    replayed, groups = judge_runs(job, side, side.bags, "judging {} real bags and their simulations")
    job.stages.done("runs")
    scored = score_studies(job, side, replayed)
    job.stages.done("score")  # the statistics and every figure (drawn by the same workers)
    if job.config.judges:
        scored.judges = compare_judges(job, side, scored)
        job.stages.done("judges")
    sensitivity = None
    if side.sample is not None:
        sensitivity = covariance_sensitivity(job, side, scored)
        job.stages.done("sensitivity")
    return finish(job, side, replayed, groups, scored, sensitivity)


__all__ = ["IMPORTED", "IMU_STUDY", "JUDGES", "REAL_SAMPLE", "REFERENCE", "REPORT_FILES", "RUNS", "SUMMARY",
           "DemoOptions", "DemoResult", "run_demo", "summary_table"]
