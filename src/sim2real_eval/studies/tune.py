"""Search noise-model parameters that minimise VEPD against real runs (Optuna, local or Ray).

Why Optuna and not Ray Tune: the objective is a black box costing K·S simulated runs per trial and a
budget of tens of trials, which is TPE's home ground; Optuna's RDB (SQLite) storage makes a study
resumable after a crash with no extra service; its ask/tell interface lets *us* decide where a trial
runs, so the same loop dispatches trials in-process, to local worker processes or as Ray tasks (any
Ray cluster, no Ray Tune trainable/driver/checkpoint conventions), and the result is identical for a
given seed when trials run one at a time.  Ray Tune would add a second scheduler on top of Ray for no
gain at this scale, and its own experiment directory instead of a plain SQLite file.

One trial = the study's scenarios × K repeats simulated with the candidate parameters, judged, and
scored against the real runs (``metrics``): the objective is the combined VEPD (Table I, scenarios
pooled) or the VEPD of one scenario.  Every trial uses the same variant name and study seed, hence the
same random streams (common random numbers): differences between trials come from the parameters,
not from the noise draw.  Parallel trials are proposed with TPE's constant-liar strategy.

The searched parameters and their ranges: ``tune_params``; the files of ``--out``: ``tune_outputs``.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import math
import os
import re
import sqlite3
import tempfile
import time
import urllib.parse
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import service
from ..errors import DataWarning, UserError
from ..pipeline.ray_cluster import call_in, check_nodes, connect_ray
from ..service import plan_replays, replay_bags
from ..workers import WorkerPool
from .tune_params import apply_params, parse_params

TUNE_VARIANT = "tuned"
OBJECTIVE_COMBINED = "combined"


@dataclass(frozen=True)
class TrialContext:
    """Everything a trial needs besides its parameter values (picklable; shipped once to Ray)."""

    study: Any            # pipeline.study.Study
    scenarios: tuple      # scenario names simulated and scored
    models: dict          # {"gps": dict, "imu": dict}: the base variant, fully resolved
    ranges: tuple         # ParamRange
    real_records: tuple   # metrics.study.RunRecord of the real side
    objective: str        # "combined" or a scenario name
    options: Any          # metrics.options.ScoreOptions


@dataclass(frozen=True)
class TrialResult:
    number: int
    values: dict
    vepd: float | None
    w1: float | None
    w2: float | None
    per_scenario: dict = field(default_factory=dict)   # scenario -> VEPD
    seconds: float = 0.0
    error: str | None = None
    warnings: tuple = ()     # the DataWarnings of its runs (run labels without the trial's temporary folder)


@dataclass(frozen=True)
class ReplayTrials:
    """Trials on real bags instead of a study's scenarios (``tune_replay``): each candidate's GPS and IMU
    are driven by every bag's ground truth and judged on the bag's window, as ``replay`` and the demo
    judge them (one sim run per bag, scored in memory, no run bag written), against the bags' real
    runs, which are judged once (``real_records``).  Picklable: shipped to workers like a study."""

    name: str
    bags: tuple           # runs.RealBag
    judge: Any            # judge.config.JudgeConfig (its start and warm-up included)
    seed: int = 0
    ground_truth_rate: float = 50.0

    @property
    def scenarios(self) -> tuple:
        return tuple(dict.fromkeys(bag.scenario for bag in self.bags))

    def _replay(self, replacements, real: bool, options) -> list:
        tasks = plan_replays(self.bags, replacements, self.judge, real=real, scoring=options, write=False,
                             seed=self.seed, ground_truth_rate=self.ground_truth_rate)
        with tempfile.TemporaryDirectory(prefix="sim2real-tune-") as tmp:
            replayed = replay_bags(tasks, tmp, workers=1, progress=False)
        replayed.raise_on_failure()
        return [run.record for run in replayed.scored]

    def real_records(self, options) -> tuple:
        """The bags' real runs, judged and scored once."""
        return tuple(self._replay((), True, options))

    def score(self, models: dict, real_records, options):
        """``metrics.StudyResult`` of the bags replayed with ``models`` against ``real_records``."""
        from ..metrics import score_study
        from ..replay.real_bag import Replacement

        sim = self._replay((Replacement(dict(models), name=TUNE_VARIANT),), False, options)
        return score_study(list(real_records) + sim, options)


def evaluate(context: TrialContext, models: dict, number: int = -1,
             values: dict | None = None) -> TrialResult:
    """Simulate the study's runs with ``models`` (or, for ``ReplayTrials``, replay its real bags with them),
    score them against the real runs → TrialResult.

    Runs are written to a private temporary directory (removed afterwards), so a trial needs no
    shared filesystem and can run on any Ray node.  A UserError (e.g. parameters a model refuses)
    becomes a failed trial, not a crash.  The runs' DataWarnings come back in ``warnings``.
    """
    start = time.perf_counter()
    with _trial_warnings() as caught:
        result = _evaluate(context, models, number, values, start)
    return dataclasses.replace(result, warnings=tuple(caught))


@contextlib.contextmanager
def _trial_warnings():
    """The DataWarnings raised while a trial runs, collected (not printed: one per judged run, hundreds in
    a search, naming temporary folders that are gone by then) — ``search`` sums them up in one line.
    Other warnings are shown as usual."""
    texts: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        yield texts
    for item in caught:
        if issubclass(item.category, DataWarning):
            texts.append(re.sub(r"\S*sim2real-tune-[^/\s]*/", "", str(item.message)))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


def _evaluate(context: TrialContext, models: dict, number: int, values: dict | None, start: float):
    from ..metrics.inputs import discover_runs_dir
    from ..pipeline.study import Variant

    study = context.study
    try:
        if isinstance(study, ReplayTrials):
            result = study.score(models, context.real_records, context.options)
        else:
            with tempfile.TemporaryDirectory(prefix="sim2real-tune-") as tmp:
                tasks = study.runs("sqlite3", variants=[Variant(TUNE_VARIANT, models["gps"], models["imu"])],
                                   scenarios=context.scenarios)
                service.simulate_runs(tasks, tmp, workers=1, progress=False).first_failure()
                # written just now, in a private folder, by this trial: not hashed again before scoring
                specs = [dataclasses.replace(spec, run_record=None)
                         for spec in discover_runs_dir(tmp, context.options)]
                result = service.score_runs(specs, context.options, extra_records=context.real_records,
                                            workers=1).result
    except UserError as exc:
        return TrialResult(number, dict(values or {}), None, None, None, {}, time.perf_counter() - start,
                           str(exc))
    if context.objective == OBJECTIVE_COMBINED:
        cell = result.combined[TUNE_VARIANT]
    else:
        cell = result.per_scenario[TUNE_VARIANT][context.objective]
    per_scenario = {s: float(v["VEPD"]) for s, v in result.per_scenario[TUNE_VARIANT].items()}
    return TrialResult(number, dict(values or {}), float(cell["VEPD"]), float(cell["W1"]), float(cell["W2"]),
                       per_scenario, time.perf_counter() - start)


def run_trial(context: TrialContext, number: int, values: dict) -> TrialResult:
    """The unit of work shipped to a worker: apply the values to the base models, then evaluate."""
    return evaluate(context, apply_params(context.models, list(context.ranges), values), number, values)


# ------------------------------------------------------------------------------------ executors
class _Inline:
    """Trials one after the other in this process."""

    capacity = 1

    def __init__(self, context):
        self.context = context
        self.results = []

    def submit(self, number, values):
        self.results.append(run_trial(self.context, number, values))

    def wait_one(self):
        return self.results.pop(0)

    def close(self):
        pass


class _Pool:
    """Local worker processes (fork: modules already imported are inherited)."""

    def __init__(self, context, workers: int):
        self.cf = cf
        self.capacity = workers
        self.context = context
        self.pool = WorkerPool(workers)
        self.futures = set()

    def submit(self, number, values):
        future = self.pool.submit_labelled(f"trial {number}", run_trial, self.context, number, values)
        self.futures.add(future)

    def wait_one(self):
        done, _ = self.cf.wait(self.futures, return_when=self.cf.FIRST_COMPLETED)
        future = next(iter(done))
        self.futures.discard(future)
        try:
            return future.result()
        except self.cf.process.BrokenProcessPool:
            raise self.pool.death_error() from None

    def close(self):
        if any(not future.done() for future in self.futures):  # interrupted: stop the running trials
            self.pool.terminate()
        else:
            self.pool.shutdown(wait=True)


class _Ray:
    """Trials as Ray tasks (1 CPU each) on the cluster at ``address`` ("local" starts one here)."""

    def __init__(self, context, address: str, workers: int):
        ray, self.started = connect_ray(address, workers)
        self.ray = ray
        if address != "local":
            check_nodes(ray)  # the same sim2real_eval on every node, or one line up front
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.capacity = max(1, min(workers, cpus) if address == "local" else cpus)
        self.context_ref = ray.put(context)
        self.remote = ray.remote(num_cpus=1)(call_in)  # in our working directory: relative study paths
        self.cwd = os.getcwd()
        self.waiting = []

    def submit(self, number, values):
        self.waiting.append(self.remote.remote(self.cwd, run_trial, self.context_ref, number, values))

    def wait_one(self):
        ready, self.waiting = self.ray.wait(self.waiting, num_returns=1)
        return self.ray.get(ready[0])

    def close(self):
        for ref in self.waiting:
            self.ray.cancel(ref)
        if self.started:
            self.ray.shutdown()


# ------------------------------------------------------------------------------------ the search
@dataclass
class TuneResult:
    study_name: str
    ranges: list
    baseline: TrialResult
    trials: list           # TrialResult of every finished trial in this storage (incl. resumed ones)
    best: TrialResult
    best_models: dict
    wall_seconds: float
    parallel: int
    executor: str

    @property
    def best_is_baseline(self) -> bool:
        """No trial beat the untuned model: the result is the untuned model itself."""
        return self.best is self.baseline


REAL_LAYOUT = ("a run tree DIR/real/real/<scenario>/<k>/ (run bags with run.yaml: what `sim2real-eval "
               "replay BAGS --out DIR` writes) or a demo output with its run bags, "
               "DIR/runs/real/real/<scenario>/<k>/ (`sim2real-eval demo --keep-runs --out DIR`)")


def real_runs_dir(real_dir, check: bool = True) -> Path:
    """The run tree holding tune's real runs: ``--real`` itself (``DIR/real/real/…``, replay's output) or
    a demo output's ``DIR/runs`` (``demo --keep-runs``), taken as they are; a UserError naming the
    expected layout otherwise (``check`` False: ``--real`` itself then, for the output checks)."""
    root = Path(real_dir)
    if not check:
        return root / "runs" if (root / "runs" / "real" / "real").is_dir() else root
    if not root.is_dir():
        raise UserError(f"--real {root}: not a directory; expected {REAL_LAYOUT}")
    for candidate in (root, root / "runs"):
        if (candidate / "real" / "real").is_dir():
            return candidate
    if (root / "demo.json").is_file():
        raise UserError(f"--real {root}: a demo output without its run bags (the demo writes them only with "
                        f"--keep-runs); expected {REAL_LAYOUT}")
    raise UserError(f"--real {root}: no real runs found; expected {REAL_LAYOUT}")


def load_real_records(real_dir, scenarios, options) -> tuple:
    """Scored real runs (side ``real``) of the given scenarios; every scenario needs ≥ 2 runs."""
    from ..metrics.inputs import discover_runs_dir

    specs = [s for s in discover_runs_dir(real_dir, options) if s.side == "real"]
    have = {}
    for spec in specs:
        have[spec.scenario] = have.get(spec.scenario, 0) + 1
    for scenario in scenarios:
        if have.get(scenario, 0) < 2:
            found = ", ".join(sorted(have)) or "none"
            raise UserError(f"{real_dir}: real/real/{scenario}: {have.get(scenario, 0)} real run(s); "
                            f"need at least 2 of every scenario the study scores (scenarios with real runs: "
                            f"{found})")
    specs = [s for s in specs if s.scenario in scenarios]
    return tuple(service.load_runs(specs, options, workers=1).records)


def base_models(study, variant_name: str | None) -> tuple[str, dict]:
    """(variant name, {"gps": dict, "imu": dict}) of the study variant to tune, presets resolved."""
    from ..models.base import resolve_spec

    names = [v.name for v in study.variants]
    if variant_name is None:
        if len(names) != 1:
            raise UserError(f"{study.source}: the study has {len(names)} variants; choose one with --variant "
                            f"({', '.join(names)})")
        variant_name = names[0]
    variant = next((v for v in study.variants if v.name == variant_name), None)
    if variant is None:
        raise UserError(f"--variant: {variant_name!r} is not in {study.source} "
                        f"(variants: {', '.join(names)})")
    gps, _ = resolve_spec(variant.gps, "gps", {})
    imu, _ = resolve_spec(variant.imu, "imu", {})
    return variant_name, {"gps": gps, "imu": imu}


def _distributions(ranges):
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    return {r.full_name: (CategoricalDistribution(list(r.choices)) if r.choices
                          else FloatDistribution(r.low, r.high, log=r.log)) for r in ranges}


SQLITE_MAGIC = b"SQLite format 3\x00"
OPTUNA_TABLES = {"studies", "trials", "alembic_version"}  # what Optuna's RDB storage creates


def check_storage(storage) -> None:
    """--storage must be a new or empty file, or an Optuna SQLite storage, in an existing folder: any
    other SQLite database (a run bag's .db3, a user's data) is refused, never written into."""
    path = Path(storage)
    if path.is_symlink():
        raise UserError(f"--storage {path}: a symbolic link; give the storage file itself")
    if path.is_dir():
        raise UserError(f"--storage {path}: is a directory, expected an SQLite file (e.g. tune.db)")
    if not path.parent.is_dir():
        raise UserError(f"--storage {path}: folder {path.parent} does not exist")
    if path.exists():
        if not path.is_file():
            raise UserError(f"--storage {path}: not a regular file (refusing to touch it)")
        try:
            with open(path, "rb") as stream:
                head = stream.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise UserError(f"--storage {path}: cannot read ({exc.strerror})") from None
        if head and head != SQLITE_MAGIC:
            raise UserError(f"--storage {path}: not an SQLite database (refusing to touch it)")
        if head:
            uri = "file:" + urllib.parse.quote(os.fsencode(path.resolve())) + "?mode=ro"
            try:
                with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
                    tables = {row[0] for row in connection.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table'")}
            except sqlite3.Error as exc:
                raise UserError(f"--storage {path}: cannot read it as SQLite ({exc})") from None
            if not OPTUNA_TABLES <= tables:
                raise UserError(f"--storage {path}: an SQLite database but not an Optuna storage (tables: "
                                f"{', '.join(sorted(tables)) or 'none'}); refusing to write into it")


def tune(study_path, real_dir, params: str, budget: int = 20, objective: str = OBJECTIVE_COMBINED,
         variant: str | None = None, storage: str | None = None, ray_address: str | None = None,
         workers: int = 1, seed: int = 0, progress: bool = True) -> TuneResult:
    """Minimise VEPD over ``params`` with a seeded TPE sampler; ``budget`` finished trials in total.

    ``storage``: SQLite file for a resumable study (trials already finished there count towards the
    budget; trials left running by a killed session are marked failed).  ``ray_address``: run trials
    as Ray tasks; otherwise ``workers`` local processes (1 = in this process).
    """
    from ..metrics.options import ScoreOptions
    from ..pipeline.study import load_study

    if budget < 1:
        raise UserError(f"--budget must be >= 1, got {budget}")
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    if storage:
        check_storage(storage)
    real_dir = Path(real_dir)
    study = load_study(study_path)
    variant_name, models = base_models(study, variant)
    ranges = parse_params(params, models)
    # The study's warm-up (judge.warmup_s) is skipped in the real runs' scores and the candidates' alike.
    options = ScoreOptions(bootstrap=0, permutations=0, warmup_s=study.judge.warmup_s).validate()
    scenarios = _objective_scenarios(study, options, objective)
    real = load_real_records(real_runs_dir(real_dir), scenarios, options)
    context = TrialContext(study, tuple(scenarios), models, tuple(ranges), real, objective, options)

    return search(context, f"{study.name}-{variant_name}-{objective}", variant_name, budget, storage=storage,
                  ray_address=ray_address, workers=workers, seed=seed, progress=progress,
                  real_label=str(real_dir.resolve()))


def tune_replay(bags, judge, base: dict, params: str, budget: int = 20, name: str = "replay",
                seed: int = 0, ground_truth_rate: float = 50.0, storage: str | None = None,
                workers: int = 1, progress: bool = True) -> TuneResult:
    """``tune`` on real bags: minimise the VEPD of ``base`` ({"gps": spec, "imu": spec}, presets resolved
    here) against the real runs of ``bags`` (``runs.RealBag``, at least 2 per scenario), the candidates'
    sensors driven by each bag's ground truth and judged with ``judge`` (``judge.config.JudgeConfig``:
    its initial state and warm-up too; ``ReplayTrials``).  The demo's real sample tunes on held-out
    windows this way and evaluates the result on the others."""
    from ..metrics.options import ScoreOptions
    from ..models.base import resolve_spec

    if budget < 1:
        raise UserError(f"--budget must be >= 1, got {budget}")
    if storage:
        check_storage(storage)
    models = {"gps": resolve_spec(base["gps"], "gps", {})[0], "imu": resolve_spec(base["imu"], "imu", {})[0]}
    ranges = parse_params(params, models)
    options = ScoreOptions(bootstrap=0, permutations=0, warmup_s=judge.warmup_s,
                           exclude_scenarios=()).validate()
    trials = ReplayTrials(name, tuple(bags), judge, seed, ground_truth_rate)
    counts = {s: sum(bag.scenario == s for bag in trials.bags) for s in trials.scenarios}
    if not counts or min(counts.values()) < 2:
        raise UserError(f"tune on real bags: need at least 2 bags per scenario, got {counts or 'none'}")
    context = TrialContext(trials, trials.scenarios, models, tuple(ranges), trials.real_records(options),
                           OBJECTIVE_COMBINED, options)
    label = ", ".join(sorted({str(Path(bag.path).parent) for bag in trials.bags}))
    return search(context, f"{name}-{OBJECTIVE_COMBINED}", name, budget, storage=storage, workers=workers,
                  seed=seed, progress=progress, real_label=label)


def search(context: TrialContext, study_name: str, variant_name: str, budget: int, storage: str | None = None,
           ray_address: str | None = None, workers: int = 1, seed: int = 0, progress: bool = True,
           real_label: str = "", progress_label: str = "tune", initial: tuple = ()) -> TuneResult:
    """The seeded TPE search over ``context.ranges`` (``budget`` finished trials in total, resumable in
    ``storage``): the untuned model first, then the trials in-process, in local processes or on Ray.
    ``tune`` (a study's scenarios simulated) and ``tune_replay`` (real bags replayed) both run it.
    ``initial``: points ({full name: value}) a new study runs first, as trials 0 … n−1 (``fit`` enqueues
    its calibrated start and the presets compared); they count in the budget, which is raised to n."""
    import optuna

    models, ranges = context.models, list(context.ranges)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna_study = _open_search(study_name, storage, seed, budget, ranges, real_label)
    states = optuna.trial.TrialState
    budget = max(budget, len(initial))
    if not optuna_study.get_trials(deepcopy=False):  # a new study: the given points first, in order
        for point in initial:
            optuna_study.enqueue_trial(dict(point))
    start = time.perf_counter()
    executor, kind = _executor(context, ray_address, workers)
    try:
        baseline = _stored_baseline(optuna_study)
        finished = len(optuna_study.get_trials(deepcopy=False, states=(states.COMPLETE, states.FAIL)))
        ran: list = []
        with _Progress(progress, budget, finished, progress_label) as advance:
            if baseline is None:  # the untuned variant: what the search has to beat
                baseline = _untuned_baseline(optuna_study, context, models, variant_name)
                ran.append(baseline)
            _run_trials(optuna_study, executor, _distributions(ranges), max(0, budget - finished),
                        lambda result: (ran.append(result), advance(result)))
    finally:
        executor.close()
    wall = time.perf_counter() - start
    summarise_warnings(ran)

    finished_trials = optuna_study.get_trials(deepcopy=False, states=(states.COMPLETE, states.FAIL))
    trials = [_result_of(t) for t in finished_trials]
    complete = [t for t in trials if t.vepd is not None]
    if not complete:
        raise UserError(f"every trial failed; first error: {trials[0].error if trials else 'none ran'}")
    best = min(complete, key=lambda t: (t.vepd, t.number))
    if not best.vepd < baseline.vepd:  # no trial beat the untuned model: it stays the result
        best, best_models = baseline, models
    else:
        best_models = apply_params(models, ranges, best.values)
    return TuneResult(study_name, ranges, baseline, trials, best, best_models, wall, executor.capacity, kind)


def summarise_warnings(results: list) -> None:
    """One DataWarning for the warnings of all the trials that ran (the untuned variant is trial -1):
    how many runs in how many trials, and the first one's text."""
    warned = [r for r in results if r.warnings]
    if not warned:
        return
    runs = sum(len(r.warnings) for r in warned)
    first = warned[0]
    which = "the untuned variant" if first.number < 0 else f"trial {first.number}"
    values = ", ".join(f"{k}={v:.4g}" for k, v in sorted(first.values.items()))
    warnings.warn(f"{runs} warning(s) from the judged runs of {len(warned)} of the {len(results)} trials run "
                  f"here (the untuned variant included); the first, {which}"
                  f"{f' ({values})' if values else ''}: {first.warnings[0]}", DataWarning, stacklevel=2)


def _objective_scenarios(study, options, objective: str) -> list:
    """The scenarios a trial simulates and scores: the study's scored ones (the scorer leaves out the
    standstill "rest": it would only cost time), or the one ``objective`` names."""
    scenarios = [s for s in study.scenarios if s not in options.exclude_scenarios]
    if not scenarios:
        excluded = ", ".join(options.exclude_scenarios)
        raise UserError(f"{study.source}: no scored scenario (the scorer excludes {excluded})")
    if objective != OBJECTIVE_COMBINED:
        if objective not in scenarios:
            raise UserError(f"--objective: {objective!r} is neither 'combined' nor a scored scenario of "
                            f"{study.source} ({', '.join(scenarios)})")
        scenarios = [objective]
    return scenarios


def _open_search(study_name: str, storage, seed: int, budget: int, ranges: list, real_label: str):
    """The Optuna study (in ``storage`` when given: created, or resumed when it searched the same
    ranges), its trials left running by a killed session marked failed."""
    import optuna

    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True,
                                         n_startup_trials=max(2, min(10, budget // 3)))
    url = f"sqlite:///{Path(storage).resolve()}" if storage else None
    try:
        search = optuna.create_study(study_name=study_name, storage=url, sampler=sampler,
                                     direction="minimize", load_if_exists=True)
    except Exception as exc:  # noqa: BLE001 - sqlalchemy/sqlite errors of a storage we cannot use
        if url is None:
            raise
        raise UserError(f"--storage {storage}: cannot use it as an Optuna SQLite storage "
                        f"({getattr(exc, 'orig', None) or type(exc).__name__})") from None
    signature = ",".join(f"{r.full_name}={'|'.join(r.choices)}" if r.choices else
                         f"{r.full_name}={r.low!r}:{r.high!r}:{'log' if r.log else 'linear'}" for r in ranges)
    previous = search.user_attrs.get("params")
    if previous is None:
        search.set_user_attr("params", signature)
        search.set_user_attr("real", real_label)
    elif previous != signature:
        raise UserError(f"--storage {storage}: study {study_name!r} was searched over {previous}, "
                        f"not {signature}; use another --storage file")
    states = optuna.trial.TrialState
    for stale in search.get_trials(deepcopy=False, states=(states.RUNNING, states.WAITING)):
        search.tell(stale.number, state=states.FAIL)  # left behind by a killed session
    return search


def _executor(context: TrialContext, ray_address: str | None, workers: int) -> tuple:
    """(where the trials run, its description): Ray tasks, local processes, or this process."""
    if ray_address is not None:
        return _Ray(context, ray_address, workers), f"ray:{ray_address}"
    if workers > 1:
        return _Pool(context, workers), f"processes:{workers}"
    return _Inline(context), "inline"


def _stored_baseline(search) -> TrialResult | None:
    """The untuned variant's result a resumed study stored, or None."""
    if "baseline_vepd" not in search.user_attrs:
        return None
    stored = search.user_attrs
    return TrialResult(-1, {}, stored["baseline_vepd"], stored["baseline_w1"], stored["baseline_w2"],
                       stored.get("baseline_per_scenario", {}), stored.get("baseline_seconds", 0.0))


def _untuned_baseline(search, context: TrialContext, models: dict, variant_name: str) -> TrialResult:
    """The untuned variant evaluated (an error when it fails) and stored in the study."""
    baseline = evaluate(context, models)
    if baseline.error:
        raise UserError(f"the untuned variant {variant_name!r} fails: {baseline.error}")
    for key, value in (("baseline_vepd", baseline.vepd), ("baseline_w1", baseline.w1),
                       ("baseline_w2", baseline.w2), ("baseline_per_scenario", baseline.per_scenario),
                       ("baseline_seconds", baseline.seconds)):
        search.set_user_attr(key, value)
    return baseline


def _run_trials(search, executor, distributions: dict, to_run: int, advance) -> None:
    """``to_run`` trials, as many at once as the executor runs: asked, run, told as each finishes."""
    submitted = running = 0
    asked = {}
    while submitted < to_run or running:
        while submitted < to_run and running < executor.capacity:
            trial = search.ask(distributions)
            asked[trial.number] = trial
            executor.submit(trial.number, dict(trial.params))
            submitted += 1
            running += 1
        result = executor.wait_one()
        running -= 1
        _tell(search, asked.pop(result.number), result)
        advance(result)


def _tell(search, trial, result: TrialResult) -> None:
    """Record the trial's numbers (user attributes, kept in the storage) and its VEPD (or FAIL)."""
    import optuna

    for key, value in (("w1", result.w1), ("w2", result.w2), ("per_scenario", result.per_scenario),
                       ("seconds", result.seconds), ("error", result.error)):
        trial.set_user_attr(key, value)
    if result.vepd is None or not math.isfinite(result.vepd):
        search.tell(trial, state=optuna.trial.TrialState.FAIL)
    else:
        search.tell(trial, result.vepd)


def _result_of(trial) -> TrialResult:
    attrs = trial.user_attrs
    return TrialResult(trial.number, dict(trial.params), trial.value, attrs.get("w1"), attrs.get("w2"),
                       attrs.get("per_scenario") or {}, attrs.get("seconds") or 0.0, attrs.get("error"))


class _Progress:
    """rich progress over the trial budget; shows the best VEPD so far."""

    def __init__(self, enabled: bool, total: int, done: int, label: str = "tune"):
        self.enabled, self.total, self.done, self.label = enabled, total, done, label
        self.best = math.inf

    def __enter__(self):
        if not self.enabled:
            return lambda result: None

        self.bar = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[best]}"), transient=False)
        self.bar.__enter__()
        self.task = self.bar.add_task("trials", total=self.total, completed=self.done, best="")

        def advance(result):
            if result.vepd is not None:
                self.best = min(self.best, result.vepd)
            self.bar.update(self.task, advance=1, best=f"best VEPD {self.best:.4g}")

        return advance

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)
        return False
