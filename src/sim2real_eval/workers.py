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
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
STOP_TIMEOUT_S = 10.0  # running workers get this long to clean up after SIGTERM, then SIGKILL


class Terminated(KeyboardInterrupt):
    """SIGTERM received: unwinds like Ctrl-C (KeyboardInterrupt), exit status 128 + 15."""

    exit_code = 128 + signal.SIGTERM


def _raise_terminated(signum, frame):
    raise Terminated()


def handle_sigterm() -> None:
    """Make SIGTERM raise ``Terminated`` in the main thread (the CLI calls this once)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


class WorkerStopped(BaseException):
    """Raised inside a worker's task by SIGTERM/SIGINT: unwinds the task, then the worker exits."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_busy = False  # a task is running in this worker
_stopping = 0  # the stop signal taken (0: none): the task is unwinding


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


def _worker_start(parent_pid: int, initializer, initargs) -> None:
    signal.signal(signal.SIGTERM, _worker_signal)
    signal.signal(signal.SIGINT, _worker_signal)
    die_with_parent(parent_pid)
    if initializer is not None:
        initializer(*initargs)


def _call(function, *args, **kwargs):
    """Run one task in a worker; a stop signal unwinds it (cleaning up) and ends the worker."""
    global _busy
    _busy = True
    try:
        return function(*args, **kwargs)
    except WorkerStopped as stop:
        os._exit(128 + stop.signum)
    finally:
        _busy = False
        if _stopping:  # the WorkerStopped was swallowed (raised inside a __del__ or a callback that
            os._exit(128 + _stopping)  # ignores errors): the task ran on, but the worker still stops


class WorkerPool(cf.ProcessPoolExecutor):
    """A ProcessPoolExecutor of forked workers that die with the parent and stop on its signal.

    Forked workers inherit the already imported modules (and compiled numba kernels), so per-task
    start-up cost is ~0.  Use it as a context manager: leaving it by an exception terminates it.
    """

    def __init__(self, max_workers: int, initializer=None, initargs=()):
        super().__init__(max_workers, mp_context=multiprocessing.get_context("fork"),
                         initializer=_worker_start, initargs=(os.getpid(), initializer, initargs))

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(_call, fn, *args, **kwargs)

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
            self.terminate()
            return False
        return super().__exit__(exc_type, exc, tb)
