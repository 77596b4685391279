"""Step 2 of the demo: the runs planned (``plan_groups``: one ``replay.offline.BagReplay`` per real bag)
and judged, each scored where it is judged (``judge_runs`` → ``service.replay_bags``); the judge's
kernels loaded in this process while forked helpers plan or compile (``judge_loading``)."""
from __future__ import annotations

import contextlib
import functools

from ..runs import RealBag, replay_variant
from ..service import plan_replays, replay_bags, warm_judge
from ..workers import WorkerPool
from .config import EVERY_SCENARIO, DemoConfig
from .job import DemoJob, RealSide


def plan_groups(config: DemoConfig, bags: dict, imu_scenario: str | None, scoring=None, write: bool = True,
                floor_draws: int = 0, extra_gps=(), extra_imu=()) -> list:
    """One ``replay.offline.BagReplay`` per real bag (k = position of the bag in its scenario's sorted
    list): the real run, one run per GPS variant (directory = the GPS preset) and per ``extra_gps``
    (``replay.offline.Replacement``), the IMU study's run(s) (and ``extra_imu``) on ``imu_scenario``
    (``EVERY_SCENARIO``: on every one); ``scoring`` (ScoreOptions): each run scored where it is judged;
    ``write``: run bags written; ``floor_draws``: the bag's noise-floor judgements too.  Without static
    TFs in the demo file, each bag gets its default (``bags.layout.default_static_tfs``)."""
    from ..replay.real_bag import Replacement

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
    """The IMU study's variant name (``sim_imu-<preset>``), as the replay names it."""
    return replay_variant({"imu": config.imu_study_imu})


def judge_runs(job: DemoJob, side: RealSide, bags: dict, description: str, main: bool = True) -> tuple:
    """Step 2: every run of ``bags``, each scored where it is judged (``service.replay_bags``):
    (ReplayedBags, the tasks).  ``description`` has a ``{}`` for the number of bags.  Not ``main`` (the
    real sample's sensitivity runs): no run bag is written and nothing is announced."""
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


def _plan_while_warming(job: DemoJob, plan_args: tuple) -> list:
    """``plan_groups(*plan_args)`` — which reads the first messages of every real bag, ~30 ms a bag — in
    a forked process while this one loads the judge's kernels (``service.warm_judge``, ~1.3 s, which
    ``replay_bags`` then finds done; with an empty numba cache its helpers share the compilation): on
    two cores the reading takes no wall time.  One worker, or Ray: planned here."""
    if not job.forks_workers:
        return plan_groups(*plan_args)
    with judge_loading(job) as warm, WorkerPool(1) as pool:  # the helpers before the pool's thread
        planned = pool.submit(plan_groups, *plan_args)
        warm()
        return planned.result()


@contextlib.contextmanager
def judge_loading(job: DemoJob):
    """Yields ``warm()``, which loads the judge's kernels into this process (``service.warm_judge``);
    with an empty numba cache, ``workers − 1`` forked helpers share the compilation meanwhile.  Enter it
    before starting any thread (a pool's, a spinner's): the helpers are forked only while none runs
    (``parallel_compile.compilation_helpers``)."""
    from ..judge.parallel_compile import compilation_helpers

    warm = functools.partial(warm_judge, job.config.judge)
    with compilation_helpers(warm, job.workers - 1):
        yield warm
