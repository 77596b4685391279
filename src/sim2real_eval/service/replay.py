"""Replay real bags: each real bag judged as it is and with simulated streams in place of its real
ones, in one window (``sim2real-eval replay``; the demo and tune plan their replays here too)."""
from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from ..art import ART_STATIC_TFS, EKF_CONFIG, NAVSAT_CONFIG, TOPICS
from ..bags import layout
from ..bags.layout import art_static_tfs_note
from ..errors import UserError
from ..outputs import check_name, check_paths
from ..pipeline.batch import available_cores, run_batch
from ..resources import config_path, find_config
from ..runs import RealBag, find_real_bags
from ..runs.timing import TimingModel
from .common import existing_files, json_key, status, warn_once

if TYPE_CHECKING:
    from ..pipeline.batch import BatchReport


@dataclass
class ReplayedBags:
    """Replayed real bags: one task per bag, the batch report and wall time; ``runs`` lists each run."""

    tasks: list
    report: BatchReport
    seconds: float

    @property
    def runs(self) -> list:
        """The RunOutcome of every run (written or already complete), bag by bag."""
        return [run for outcome in self.report.outcomes if outcome is not None for run in outcome.runs]

    @property
    def scored(self) -> list:
        """Every run scored where it was judged (``replay.offline.ScoredRun``), bag by bag."""
        return [run for outcome in self.report.outcomes if outcome is not None for run in outcome.scored]

    def health_records(self) -> list:
        """The real runs whose judge health was assessed, as ``RunRecord`` (scored ones as scored; those of
        a replay without scoring carry no score)."""
        from ..metrics.study import REAL, RunRecord

        records = [run.record for run in self.scored if run.record.health is not None]
        if records:
            return records
        return [RunRecord(REAL, REAL, task.spec.scenario, task.spec.k, run.path, None, run.health)
                for task, outcome in zip(self.tasks, self.report.outcomes) if outcome is not None
                for run in outcome.runs if run.health is not None]

    def noise_floor_draws(self) -> list:
        """The noise-floor judgements of the bags, as one list of ``RunRecord`` per timing draw."""
        draws: dict = {}
        for outcome in self.report.outcomes:
            for draw, record in (outcome.scores if outcome is not None else ()):
                draws.setdefault(draw, []).append(record)
        return [draws[draw] for draw in sorted(draws)]

    def raise_on_failure(self) -> None:
        """A UserError when a bag failed: its own message when it was the only bag."""
        if len(self.tasks) == 1 and self.report.failures:
            raise UserError(self.report.failures[0].message)
        self.report.raise_on_failure()


def plan_replays(bags: Iterable, replacements: Sequence, judge, *, real: bool = True, scoring=None,
                 write: bool = True, floor_draws: int = 0, static_tfs_by_layout: bool = False,
                 **options) -> list:
    """One ``replay.offline.BagReplay`` per real bag (``runs.RealBag``): its real run (``real``) and
    one sim run per ``replay.offline.Replacement``.  With ``scoring`` (``metrics.ScoreOptions``) every
    run is scored where it is judged (``ReplayedBags.scored``), and ``write`` False writes no run bag;
    ``floor_draws``: the judge-noise floor's judgements of the real streams (``noise_floor``).
    ``options``: ``ReplaySpec`` fields (seed, storage, ground_truth_rate, truth_source, msg_path,
    imu_topic, gps_topic).

    Each bag is peeked at (its first IMU and GPS messages): a replaced IMU publishes in the frame of the
    bag's real IMU (``ReplaySpec.imu_frame``); with ``static_tfs_by_layout``, ``judge.static_tfs`` are
    replaced per bag by its default (``default_static_tfs``: the ART ones for a bag in the ART layout,
    else none).  ``replay_bags`` says which bags got the ART TFs and lints the IMU covariances."""
    from ..replay.offline import BagReplay
    from ..replay.real_bag import ReplaySpec

    tasks = []
    for bag in bags:
        tfs, real_imu = peek_real_bag(bag.path, judge, options, by_layout=static_tfs_by_layout)
        bag_judge = dataclasses.replace(judge, static_tfs=tfs) if static_tfs_by_layout else judge
        frame = None if real_imu is None else real_imu[0]  # the replaced IMU publishes there
        spec = ReplaySpec.of(bag, bag_judge, imu_frame=frame, **options)
        tasks.append(BagReplay(spec, tuple(replacements), real, scoring, write, floor_draws,
                               static_tfs_by_layout, real_imu))
    return tasks


def announce_replays(tasks: Sequence, notice: Callable | None = None) -> None:
    """What the replay of ``tasks`` applies and risks, said before any run: one ``notice`` line naming
    the bags that got the ART static TFs by default, and a DataWarning per IMU covariance that is no
    covariance once ekf_node has rotated it into base_link (``judge.lint``): each distinct real IMU
    (first message of its bag) and each replaced IMU model, once per mount."""
    from ..judge.findings import imu_findings, model_imu_findings

    applied = [t.spec.bag for t in tasks
               if t.default_static_tfs and t.spec.judge.static_tfs == ART_STATIC_TFS]
    if applied and notice is not None:
        notice(art_static_tfs_note(applied))
    findings: list = []
    real_imus: dict = {}  # (judge, frame, covariances) -> bags: each distinct real IMU linted once
    for task in tasks:
        judges_real_imu = task.real or any("imu" not in sim.replace for sim in task.sims)
        if task.real_imu is not None and judges_real_imu:
            frame, covariances = task.real_imu
            key = (task.spec.judge, frame, tuple(tuple(float(v) for v in c) for c in covariances.values()))
            real_imus.setdefault(key, (covariances, task.spec.imu_topic, []))[2].append(task.spec.bag)
    for (judge, frame, _values), (covariances, topic, paths) in real_imus.items():
        more = f" (and {len(paths) - 1} more bag(s) with this IMU covariance)" if len(paths) > 1 else ""
        findings += imu_findings(judge, frame, covariances, f"{paths[0]} {topic}{more}")
    models = {(t.spec.judge, t.spec.imu_frame, json_key(sim.replace["imu"])): sim.replace["imu"]
              for t in tasks for sim in t.sims if "imu" in sim.replace}
    for (judge, frame, _key), spec in models.items():  # each model once per mount
        try:
            findings += model_imu_findings(judge, spec, frame=frame)
        except UserError:
            pass  # a model the run cannot load either: the run names it, after the bag's own checks
    warn_once(findings)


def peek_real_bag(path: str, judge, options: dict, by_layout: bool) -> tuple:
    """(static TFs, (IMU frame, {part: covariance}) of its first IMU message or None) of a real bag: the
    TFs are ``judge.static_tfs``, or with ``by_layout`` the bag's default (``bags.layout.peek_real_bag``;
    a bag whose frames need a TF it does not get is refused by the replay before any run,
    ``replay.offline.check_frames``).  Without ``by_layout``, a bag that cannot be read here is left to
    the replay, which names the problem."""
    from ..judge.config import judge_parts
    from ..judge.lint import IMU_PARTS

    imu_topic, gps_topic = options.get("imu_topic", TOPICS["imu"]), options.get("gps_topic", TOPICS["gps"])
    ekf = judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))[0]
    try:
        tfs, imu = layout.peek_real_bag(path, imu_topic, gps_topic, ekf.base_link_frame,
                                        options.get("msg_path"), by_layout)
    except UserError:
        if by_layout:
            raise
        return tuple(judge.static_tfs), None
    covariances = None if imu is None else (str(imu.header.frame_id),
                                            {part: list(getattr(imu, part)) for part in IMU_PARTS})
    return (tfs if by_layout else tuple(judge.static_tfs)), covariances


def replay_bags(tasks: Sequence, out, *, workers: int | None = None, ray_address: str | None = None,
                progress: bool = True, description: str | None = None, notice: Callable | None = None,
                shared=None, warn_health: bool = True) -> ReplayedBags:
    """Execute ``plan_replays``'s tasks into ``out``: bags in parallel, runs of a bag in one task.  Once
    the paths are checked and before any run, ``announce_replays`` (``notice``: the ART TFs line).
    ``shared``: the existing folder Ray's nodes must see when ``out`` is not made (``pipeline.batch``).
    After the runs, with ``warn_health``: one DataWarning when the judge does not track the real vehicle
    in a real run (``replay.health``; ``report.health.warning_line``: the cause measured and a next step)."""
    start = time.perf_counter()
    tasks = list(tasks)
    check_name(out, "--out")
    check_paths({"BAG": [t.spec.bag for t in tasks], "--msg-path": [t.spec.msg_path for t in tasks],
                 "(judge/model files)": existing_files(
                     [f for t in tasks for f in (t.spec.judge.ekf, t.spec.judge.navsat)]
                     + [m for t in tasks for sim in t.sims for m in sim.replace.values()])},
                {"--out": [t.spec.run_id(sim).directory(out)
                           for t in tasks if t.write for sim in ([None] if t.real else []) + list(t.sims)]})
    workers = available_cores() if workers is None else int(workers)
    description = description or f"replaying {len(tasks)} real bag(s)"
    if ray_address is None and workers > 1 and len(tasks) > 1:
        # The judge's numba kernels are compiled (or loaded from numba's cache) once, here, on a 3-s
        # synthetic stream, and inherited by the forked workers rather than loaded in each; with an empty
        # cache the other cores share the compilation meanwhile.  Before the lint below, which runs the
        # judge's callbacks too (alone, it would compile a third of the kernels on one core first).
        from ..judge.parallel_compile import compilation_helpers

        warm = functools.partial(warm_judge, tasks[0].spec.judge)
        with compilation_helpers(warm, workers - 1), \
                status(progress, f"{description}: loading the judge (its first run compiles its kernels)"):
            warm()
    announce_replays(tasks, notice)
    report = run_batch(tasks, out, workers=workers, ray_address=ray_address, progress=progress,
                       description=description, shared=shared)
    replayed = ReplayedBags(tasks, report, time.perf_counter() - start)
    if warn_health:
        warn_judge_health(replayed.health_records())
    return replayed


def warn_judge_health(records: Sequence) -> None:
    """One DataWarning naming the cause and a next step when a real run of ``records`` (RunRecord with
    ``health``) is not tracked by the judge (``report.health.warning_line``)."""
    from ..report.health import warning_line

    line = warning_line(records)
    if line:
        warn_once([line])


def warm_judge(judge) -> None:
    """Run the embedded judge of ``judge`` (``judge.config.JudgeConfig``) once on a 3-s ART-like stream
    (/fix + /imu as CDR bytes, what every run gives it): every compiled kernel is then in this process."""
    from ..judge.config import judge_run
    from ..judge.synthetic import art_like_records

    judge_run(judge, art_like_records(duration=3.0, heading_rate=0.05))




# ============================================================== sim2real-eval replay, as requested
@dataclass(frozen=True)
class ReplayRequest:
    """What ``sim2real-eval replay`` asks for (its options, parsed)."""

    bags: Sequence[str]                    # BAG|DIR...: bags, scenario folders, folders of them
    replace: Sequence[str]                 # SENSOR=PRESET items (replay.offline.parse_replace)
    out: str
    config: str | None = None              # ekf YAML (None: recorded by an import, else the ART one)
    navsat: str | None = None              # navsat YAML (None: as config)
    static_tfs: Sequence[str] = ()         # given ones (none: recorded by an import, else the bag's layout)
    scenario: str | None = None            # of every bag (None: its folder)
    k: int | None = None                   # repeat index of the one bag given
    seed: int = 0
    truth_source: str = "auto"
    msg_path: str | None = None
    imu_topic: str = "/imu"
    gps_topic: str = "/fix"
    storage: str = "sqlite3"
    ground_truth_rate: float | None = None  # Hz of /ground_truth/odom (None: the default, 50)
    timing: TimingModel | None = None      # the judge's timing (None: exact multiples)
    start: Callable | None = None          # start(JudgeConfig) -> JudgeConfig: the judge's start options
    workers: int | None = None
    ray_address: str | None = None
    progress: bool = True


def replay_request(request: ReplayRequest, *, recorded_judge: Callable | None = None,
                   notice: Callable | None = None) -> ReplayedBags:
    """``sim2real-eval replay``: the bags found (``runs.find_real_bags``), the judge (the files given,
    else the one ``recorded_judge(bags)`` returns — the study template an import recorded, parsed by the
    study layer — else the ART one), one ``BagReplay`` per bag (``plan_replays``), replayed into
    ``request.out`` (``replay_bags``; a single bag in this process, with a spinner)."""
    from ..bags.records import DEFAULT_GROUND_TRUTH_RATE, check_ground_truth_rate
    from ..replay.real_bag import parse_replace

    bags = find_real_bags(request.bags, scenario=request.scenario)
    if request.k is not None:
        if len(bags) != 1:
            raise UserError(f"--k names the repeat of one bag; {len(bags)} bags given")
        bags = [RealBag(bags[0].path, bags[0].scenario, request.k)]
    judge = _replay_judge(request)
    recorded = None
    if request.config is None and request.navsat is None and not request.static_tfs and recorded_judge:
        recorded = recorded_judge(bags)
    if recorded is not None:
        judge = dataclasses.replace(recorded, timing=request.timing or TimingModel())
    if request.start is not None:
        judge = request.start(judge)
    rate = DEFAULT_GROUND_TRUTH_RATE if request.ground_truth_rate is None else request.ground_truth_rate
    check_ground_truth_rate(rate, "--ground-truth-rate")
    sims = parse_replace(request.replace)
    tasks = plan_replays(bags, sims, judge, seed=request.seed, storage=request.storage,
                         ground_truth_rate=rate,
                         truth_source=request.truth_source, msg_path=request.msg_path,
                         imu_topic=request.imu_topic, gps_topic=request.gps_topic,
                         static_tfs_by_layout=not request.static_tfs and recorded is None)
    variants = ", ".join(sim.variant for sim in sims)
    if len(tasks) == 1 and request.ray_address is None:
        # Judged runs of a possibly long bag: show that work is going on.
        with status(True, f"replaying {Path(bags[0].path).name}: real run + {variants}"):
            return replay_bags(tasks, request.out, workers=1, progress=False, notice=notice)
    return replay_bags(tasks, request.out, workers=request.workers, ray_address=request.ray_address,
                       progress=request.progress,
                       description=f"replaying {len(tasks)} real bags: real runs + {variants}", notice=notice)


def _replay_judge(request: ReplayRequest):
    """The judge of the files given (a bare name is looked up in the installed config/ too; default: the
    ART ones) with the static TFs and timing given."""
    from ..judge.config import JudgeConfig
    from ..pipeline.study import parse_static_tf_text

    def config_file(value, default, option):
        path = find_config(value, option=option) if value else config_path(default)
        if not path.is_file():
            raise UserError(f"{option} {path}: file not found")
        return str(path.resolve())

    tfs = tuple(parse_static_tf_text(t, f"--static-tf {t!r}") for t in request.static_tfs)
    return JudgeConfig(config_file(request.config, EKF_CONFIG, "--config"),
                       config_file(request.navsat, NAVSAT_CONFIG, "--navsat"), tfs,
                       request.timing or TimingModel())


__all__ = ["ReplayRequest", "ReplayedBags", "announce_replays", "peek_real_bag", "plan_replays",
           "replay_bags", "replay_request", "warm_judge", "warn_judge_health"]
