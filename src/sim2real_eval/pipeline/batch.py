"""Batch runner: independent run tasks on a local process pool (default) or a Ray cluster.

A task is any picklable ``RunTask``: ``label``, ``directory(out)``, ``record()`` and
``execute(out) -> RunOutcome`` (``simulated_run.SimRunSpec`` and ``replay.offline.BagReplay`` are
ones).  Every run derives its random streams
from its own spec, so where a task runs (in-process, a pool worker, a Ray node) does not change its
output.  Before anything runs, existing run directories are checked: complete and matching → skipped
(resume); different → refused (UserError) so nothing is overwritten by accident.

With Ray (``ray_cluster``: joining a cluster, checking its nodes), OUT must be a path every node can
write (a shared filesystem); the runs' inputs are read by the node that runs them, at the same paths.
The nodes' check looks for its file in OUT once OUT exists (created before, when a task writes there);
when nothing has made OUT yet (tasks judged in memory only: the demo without --keep-runs), in
``shared``, a folder the caller made (the demo's own output folder, which its other inputs lie in).
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..errors import DataWarning, UserError
from ..runs import existing_run
from ..workers import STOP_TIMEOUT_S, WorkerPool
from .ray_cluster import call_in, check_nodes, connect_ray


@dataclass(frozen=True)
class RunOutcome:
    """What one task did: the run it wrote (or skipped: already complete), its message counts and
    simulated seconds, and what a real bag's task adds (its runs, noise-floor judgements, scores, health)."""

    label: str
    path: str
    skipped: bool
    messages: dict  # topic -> count written (empty when skipped)
    sim_seconds: float = 0.0
    runs: tuple = ()  # a task that makes several runs (one real bag's): the RunOutcome of each
    scores: tuple = ()  # a real bag's noise-floor judgements (draw, RunRecord): replay.noise_floor_scores
    scored: tuple = ()  # its runs scored where they were judged (replay.ScoredRun), with ``scoring``
    health: Any = None  # a replayed real run's judge health (replay.health.assess), when assessed


@runtime_checkable
class RunTask(Protocol):
    """What the batch runner runs: one picklable task that writes (or, for a task judged in memory,
    only returns) the runs of one unit of work.  Optional attributes the runner reads when present:
    ``writes`` (False: nothing is written to OUT), ``locality_key`` (tasks with equal keys are dispatched
    together), ``judge`` / ``spec.judge`` and ``sims`` (checked once by ``preflight``)."""

    @property
    def label(self) -> str:
        """The run's name in progress lines and errors (``RunId.label``)."""

    def directory(self, out) -> Path:
        """The run directory the task writes under ``out`` (resume looks there first)."""

    def record(self) -> dict:
        """The run.yaml content the task's run will have (resume compares it)."""

    def execute(self, out) -> RunOutcome:
        """Judge and write the run (UserError: this run failed, the others go on)."""


@dataclass(frozen=True)
class RunFailure:
    label: str
    message: str


@dataclass
class BatchReport:
    outcomes: list = field(default_factory=list)  # RunOutcome per task, in task order (None if failed)
    failures: list = field(default_factory=list)  # RunFailure

    @property
    def written(self) -> int:
        return sum(1 for o in self.outcomes if o is not None and not o.skipped)

    @property
    def skipped(self) -> int:
        return sum(1 for o in self.outcomes if o is not None and o.skipped)

    def raise_on_failure(self) -> None:
        if self.failures:
            first = self.failures[0]
            failed, total = len(self.failures), len(self.outcomes)
            if failed == total:
                what = "the run failed" if total == 1 else f"all {total} runs failed"
            else:
                other = total - failed
                what = (f"{failed} of {total} runs failed (the other {other} "
                        f"{'is' if other == 1 else 'are'} complete)")
            raise UserError(f"{what}; first: {first.label}: {first.message}")


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def execute_task(task: RunTask, out: str):
    """Run one task; a UserError becomes a RunFailure value (other exceptions are bugs and propagate)."""
    try:
        return task.execute(out)
    except UserError as exc:
        return RunFailure(task.label, str(exc))


def ensure_writable(out) -> None:
    """Fail early (before any run is computed) when OUT cannot hold results."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise UserError(f"{out}: cannot write output here ({exc.strerror or exc})") from None


def preflight(tasks: Sequence[RunTask]) -> None:
    """Check what every run will need and is the same for many runs — its record (model presets and
    parameters), its judge configuration, the sensor models a replay puts in — once, before any run:
    a typo in a study is one error up front, not "16 of 16 runs failed" (and no empty OUT)."""
    from ..judge.config import judge_parts
    from ..models import load_gps_model, load_imu_model

    judges, models = {}, {}
    for task in tasks:
        try:
            task.record()
        except UserError as exc:
            raise UserError(f"{task.label}: {exc}") from None
        for holder in (task, getattr(task, "spec", None)):  # a simulated run, or a replay (BagReplay)
            judge = getattr(holder, "judge", None)
            if judge is not None and hasattr(judge, "static_tfs"):
                judges[(judge.ekf, judge.navsat, tuple(judge.static_tfs))] = judge
        for sim in getattr(task, "sims", ()):  # replay-style tasks (demo): their replacement models
            for kind, spec in (getattr(sim, "replace", None) or {}).items():
                models[(kind, json.dumps(spec, sort_keys=True, default=str))] = (kind, spec)
    for key in judges:
        judge_parts(*key)
    for kind, spec in models.values():
        with warnings.catch_warnings():  # announced again when the run builds it
            warnings.simplefilter("ignore", DataWarning)
            (load_gps_model if kind == "gps" else load_imu_model)(spec, 0)


def plan(tasks: Sequence[RunTask], out) -> tuple[list, list]:
    """Split tasks into (already complete → RunOutcome, to run → index) after checking existing dirs."""
    done, pending = [], []
    for index, task in enumerate(tasks):
        path = task.directory(out)
        if existing_run(path, task.record()):
            done.append((index, RunOutcome(task.label, str(path), True, {})))
        else:
            pending.append(index)
    return done, pending


def run_batch(tasks: Sequence[RunTask], out, workers: int | None = None, ray_address: str | None = None,
              progress: bool = True, description: str = "runs", shared=None) -> BatchReport:
    """Execute every task once (skipping complete runs) and report outcomes in task order.

    ``workers``: local processes (default: all cores; 1 runs in this process).  ``ray_address``:
    run on Ray instead — an address, ``"auto"`` (an existing cluster), or ``"local"`` (start one
    here with ``workers`` CPUs); an already initialised Ray is used as it is.  ``shared``: an existing
    folder every Ray node must see when ``out`` does not exist (see the module's docstring).
    """
    out = str(Path(out))
    report = BatchReport(outcomes=[None] * len(tasks))
    workers = available_cores() if workers is None else int(workers)
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    preflight(tasks)  # bad models/judge configs are refused before OUT is created or a run starts
    if any(getattr(task, "writes", True) for task in tasks):  # tasks judged in memory only write nothing
        ensure_writable(out)
    done, pending = plan(tasks, out)
    for index, outcome in done:
        report.outcomes[index] = outcome
    # Dispatch runs that share a ground truth together (workers cache it); report in task order.
    pending.sort(key=lambda index: getattr(tasks[index], "locality_key", ()))

    with _progress(progress, description, len(tasks), len(done)) as advance:
        def collect(index: int, result) -> None:
            if isinstance(result, RunFailure):
                report.failures.append(result)
            else:
                report.outcomes[index] = result
            advance(result)

        if not pending:
            pass
        elif ray_address is not None:
            _run_ray(tasks, pending, out, ray_address, workers, collect, shared)
        elif workers == 1 or len(pending) == 1:
            for index in pending:
                collect(index, execute_task(tasks[index], out))
        else:
            _run_pool(tasks, pending, out, workers, collect)
    return report


def _run_pool(tasks, pending, out, workers, collect: Callable) -> None:
    # Ctrl-C, SIGTERM or a bug: the pool drops queued runs and stops running ones (they remove their
    # temporary directory); workers also die with this process if it is killed (workers.WorkerPool).
    with WorkerPool(min(workers, len(pending))) as pool:
        futures = {pool.submit_labelled(tasks[index].label, execute_task, tasks[index], out): index
                   for index in pending}
        for future in cf.as_completed(futures):
            collect(futures[future], future.result())


def execute_on_node(task, out: str, cwd: str):
    """``execute_task`` as a Ray task, in the driver's working directory (``ray_cluster.call_in``); a
    failure names the node it ran on (e.g. an input file missing there)."""
    result = call_in(cwd, execute_task, task, out)
    if isinstance(result, RunFailure):
        import ray

        return RunFailure(result.label, f"{result.message} (on Ray node {ray.util.get_node_ip_address()})")
    return result


def _run_ray(tasks, pending, out, address: str, workers: int, collect: Callable, shared=None) -> None:
    ray, _started = connect_ray(address, workers)
    out = os.path.abspath(out)  # a worker starts in its own folder (execute_on_node moves to ours)
    if address != "local":
        # same sim2real_eval everywhere, OUT shared: one line up front if not
        check_nodes(ray, out if os.path.isdir(out) else shared)
    remote = ray.remote(execute_on_node)
    refs = {remote.remote(tasks[index], out, os.getcwd()): index for index in pending}
    waiting = list(refs)
    try:
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError:
                    raise  # our code raised: a bug, with its traceback
                except ray.exceptions.RayError as exc:  # the worker or its node died (after Ray's retries)
                    label = tasks[refs[ref]].label
                    result = RunFailure(label, f"the Ray worker running it was lost ({type(exc).__name__})")
                collect(refs[ref], result)
    except BaseException:
        # Ctrl-C, SIGTERM or a bug: cancelling interrupts the running tasks (their `with` blocks remove
        # their temporary run directories); wait for that, as the local pool does, before leaving.
        for ref in waiting:
            ray.cancel(ref)
        try:
            ray.wait(waiting, num_returns=len(waiting), timeout=STOP_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
        raise


class _progress:
    """A rich progress bar over the runs (also counts skipped ones); a no-op when disabled."""

    def __init__(self, enabled: bool, description: str, total: int, completed: int):
        self.enabled, self.description, self.total, self.completed = enabled, description, total, completed

    def __enter__(self):
        if not self.enabled:
            return lambda result: None

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), TextColumn("{task.fields[last]}"), transient=False)
        self.bar.__enter__()
        skipped = f"{self.completed} already complete" if self.completed else ""
        self.task = self.bar.add_task(self.description, total=self.total, completed=self.completed,
                                      last=skipped)

        def advance(result) -> None:
            failed = isinstance(result, RunFailure)
            self.bar.update(self.task, advance=1, last=("FAILED " if failed else "") + result.label)

        return advance

    def __exit__(self, *exc):
        if self.enabled:
            self.bar.__exit__(*exc)
        return False
