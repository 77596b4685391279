"""Worker processes that die with their parent, and SIGTERM handled like Ctrl-C.

Every local process pool of the package is a ``WorkerPool`` (forked workers, as before):
- a worker asks Linux to send it SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``; elsewhere
  a thread watches the parent pid), so a SIGKILLed command leaves no orphans finishing its runs;
- a worker receiving SIGTERM or SIGINT while running a task raises ``WorkerStopped`` (a
  BaseException) so the task's ``with`` blocks remove its temporaries, then exits at once; an idle
  worker just exits;
- a pool left by an exception (Ctrl-C, SIGTERM, a bug) is terminated: queued work is dropped and
  running workers are stopped and joined before the exception goes on, so the command exits with
  nothing half-written and no worker left.
``handle_sigterm()`` (the CLI installs it) turns SIGTERM into ``Terminated``, a KeyboardInterrupt:
everything that cleans up after Ctrl-C cleans up after ``kill``, ``timeout``, ``docker stop``,
systemd and SLURM too, and the CLI exits 143.
"""
from __future__ import annotations

import concurrent.futures as cf
import concurrent.futures.process  # noqa: F401 - BrokenProcessPool
import ctypes
import gc
import itertools
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time

from .errors import UserError

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
STOP_TIMEOUT_S = 10.0  # running workers get this long to clean up after SIGTERM, then SIGKILL


# Signals that end a command (``kill``, ``timeout``, ``docker stop``, a closed terminal or SSH session):
# handled like Ctrl-C, so temporaries are removed.  Without a handler SIGHUP kills at once.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP) received: unwinds like Ctrl-C (KeyboardInterrupt), exit status 128 + signal."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


_received: list = []  # the stop signals this process received (``termination_received``)


def _raise_terminated(signum, frame):
    _received.append(signum)
    raise Terminated(signum)


def termination_received():
    """The first SIGTERM/SIGHUP this process received (``Terminated``), or None.  A library that was
    running when it came may have turned the ``Terminated`` into an error of its own (numba compiling
    or loading a kernel does): the CLI reports the signal, not that error."""
    return Terminated(_received[0]) if _received else None


def handle_sigterm() -> None:
    """Make SIGTERM and SIGHUP raise ``Terminated`` in the main thread (the CLI calls this once)."""
    if threading.current_thread() is threading.main_thread():
        for number in STOP_SIGNALS:
            signal.signal(number, _raise_terminated)


class WorkerStopped(BaseException):
    """Raised inside a worker's task by SIGTERM/SIGINT: unwinds the task, then the worker exits."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_busy = False  # a task is running in this worker
_stopping = 0  # the stop signal taken (0: none): the task is unwinding
_slots = None  # the pool's shared (pid, task number + 1) table, and this worker's row in it
_slot = -1


def _worker_signal(signum, frame):
    global _stopping
    # Linux can deliver the parent-death signal more than once (the orphan is first handed to
    # another thread of the dying parent, then to init): a second one must not interrupt the
    # clean-up the first one started.
    if not _busy:
        os._exit(128 + (_stopping or signum))
    if _stopping:
        return
    _stopping = signum
    raise WorkerStopped(signum)


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)


def die_with_parent(parent_pid: int) -> None:
    """In a child: get SIGTERM when ``parent_pid`` is gone (PR_SET_PDEATHSIG, or a watcher thread)."""
    done = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            done = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
        except (OSError, AttributeError):
            done = False
    if not done:
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(128 + signal.SIGTERM)


def _worker_start(parent_pid: int, slots, initializer, initargs) -> None:
    global _slots, _slot
    for number in (*STOP_SIGNALS, signal.SIGINT):
        signal.signal(number, _worker_signal)
    with slots.get_lock():  # a row of the pool's table: which task this worker runs (for a death notice)
        for row in range(len(slots) // 2):
            if slots[2 * row] == 0:
                slots[2 * row] = os.getpid()
                # the row is this worker's alone: written without the lock from now on (a worker killed
                # while holding it would leave it held, and the death notice waiting for it)
                _slots, _slot = slots.get_obj(), row
                break
    die_with_parent(parent_pid)
    # The objects inherited from the parent are the parent's, never garbage here: frozen (gc.freeze, O(1)),
    # the worker's full collections no longer walk that whole heap and copy its pages (measured on the
    # demo's figure workers: ~2 s of CPU, K = 10).
    gc.freeze()
    if initializer is not None:
        initializer(*initargs)


def _call(number, function, *args, **kwargs):
    """Run task ``number`` in a worker; a stop signal unwinds it (cleaning up) and ends the worker."""
    global _busy
    _busy = True
    if _slot >= 0:
        _slots[2 * _slot + 1] = number + 1
    try:
        return function(*args, **kwargs)
    except WorkerStopped as stop:
        os._exit(128 + stop.signum)
    finally:
        _busy = False
        if _slot >= 0:
            _slots[2 * _slot + 1] = 0
        if _stopping:  # the WorkerStopped was swallowed (raised inside a __del__ or a callback that
            os._exit(128 + _stopping)  # ignores errors): the task ran on, but the worker still stops


class WorkerDied(UserError):
    """A worker process died (killed: SIGKILL, the out-of-memory killer …) while the pool was in use."""


class WorkerPool(cf.ProcessPoolExecutor):
    """A ProcessPoolExecutor of forked workers that die with the parent and stop on its signal.

    Forked workers inherit the already imported modules (and compiled numba kernels), so per-task
    start-up cost is ~0.  Use it as a context manager: leaving it by an exception terminates it.  If a
    worker dies (``kill -9``, the out-of-memory killer), leaving the pool raises ``WorkerDied``: one line
    naming the task that worker was running (``submit_labelled``) and how it died.
    """

    def __init__(self, max_workers: int, initializer=None, initargs=()):
        context = multiprocessing.get_context("fork")
        self._table = context.Array("q", 2 * max_workers)  # per worker: pid, task number + 1 (0: idle)
        self._labels: dict = {}
        self._numbers = itertools.count()
        self._seen: dict = {}  # pid -> Process of every worker started
        super().__init__(max_workers, mp_context=context, initializer=_worker_start,
                         initargs=(os.getpid(), self._table, initializer, initargs))

    def submit(self, fn, /, *args, **kwargs):
        return self.submit_labelled(None, fn, *args, **kwargs)

    def submit_labelled(self, label, fn, /, *args, **kwargs):
        """``submit``, naming the task (e.g. a run's label) in the notice if its worker dies."""
        number = next(self._numbers)
        if label is not None:
            self._labels[number] = str(label)
        future = super().submit(_call, number, fn, *args, **kwargs)
        self._seen.update(self._processes or {})
        return future

    def death_error(self) -> WorkerDied:
        """The ``WorkerDied`` of a broken pool: which worker, running what, and how it died."""
        self._seen.update(self._processes or {})
        table = list(self._table.get_obj())  # not the lock: a worker killed holding it never frees it
        running = {table[2 * row]: table[2 * row + 1] - 1 for row in range(len(table) // 2) if table[2 * row]}
        notes = []
        for pid, process in sorted(self._seen.items()):
            code = _exit_code(process, 0.5)
            if code in (None, 0):
                continue
            if code < 0:
                how = f"killed by {_signal_name(-code)}"
                if -code == signal.SIGKILL:
                    how += ", e.g. by the out-of-memory killer"
            elif code > 128:
                how = f"stopped by {_signal_name(code - 128)}"
            else:
                how = f"exit status {code}"
            task = running.get(pid, -1)
            what = f" while running {self._labels[task]}" if task in self._labels else ""
            notes.append(f"worker process {pid} died{what} ({how})")
        detail = "; ".join(notes) or "a worker process died"
        return WorkerDied(f"{detail}; work finished before is kept: rerun the command to resume")

    def terminate(self) -> None:
        """Drop queued tasks, stop running ones (SIGTERM: they remove their temporaries) and wait
        for every worker to exit (SIGKILL after ``STOP_TIMEOUT_S``)."""
        processes = [p for p in (self._processes or {}).values() if p.is_alive()]
        self.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            try:
                os.kill(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        self.shutdown(wait=True)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            if issubclass(exc_type, cf.process.BrokenProcessPool):
                error = self.death_error()
                self.terminate()
                raise error from None
            self.terminate()
            return False
        return super().__exit__(exc_type, exc, tb)


def _exit_code(process, timeout: float):
    """The exit code of a dead worker; None if it still runs after ``timeout`` s.  The pool's manager
    thread joins the workers of a broken pool too: when its waitpid reaps one first, ours finds no
    child and the code is set a moment later (read at once, a SIGKILLed worker went unnamed 5 times in
    40)."""
    if not multiprocessing.connection.wait([process.sentinel], timeout):
        return None
    deadline = time.monotonic() + 2.0
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.005)
    return process.exitcode


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
