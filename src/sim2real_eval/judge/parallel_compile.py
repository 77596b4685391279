"""The judge's compiled loop, compiled once between the processes that start at the same time.

numba compiles ``loop.advance`` and every function it calls at its first call (~45 s of one core on a
2-core machine) and caches each on disk.  Workers that start judging with an empty cache (the first
run after installation: the demo's two workers) would each compile all of it, side by side.  Here a
process compiles the functions ``advance`` calls ("units") one at a time, each under an exclusive lock
file beside numba's cache: it takes the first unit no other process holds; when every remaining unit
is held, it waits for one, and numba then loads it from the disk cache instead of compiling it again.
``advance`` itself comes last (its callees are then loaded, not compiled).  Measured 2026-11-27: two
processes on an empty cache took ≈ 31 s of wall time each, one process alone ≈ 48 s of CPU; the demo's
first run went from 85 s to 52 s (``compilation_helpers``).  With a warm cache each unit is a
cache load, which the first call would do anyway.

The signatures are numba's types of the very objects the run passes (``_units``), so the loop's first
call finds them compiled; tests/test_judge_compiled_cache.py checks that it compiles nothing more.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import threading
from pathlib import Path

from numba import types

from ..workers import die_with_parent
from . import ekf_node, loop, navsat
from .compiled_cache import numba, numba_cache
from .input_rows import INPUT_ROW
from .state import records

_done: set = set()  # argument layouts (``_layout``) advance was compiled (or loaded) for in this process


def _units(run) -> tuple:
    """([(dispatcher, signature)] of advance's callees, (advance, its signature)) for ``run``
    (``runner._Run``): the argument types advance passes them."""
    typeof = numba.typeof
    ekf, tf, queue, nav = run.ekf.core, run.tf.core, run.ekf.queue, run.nav_core
    counters, outputs = ekf.counters, run.outputs
    row = records(1, INPUT_ROW)
    i64 = types.int64
    common = (typeof(nav), typeof(tf), typeof(counters))
    callees = [
        (ekf_node.ekf_callback, (typeof(ekf), typeof(tf), typeof(queue), i64, typeof(row[0]))),
        (ekf_node.ekf_tick, (typeof(ekf), typeof(tf), typeof(queue), typeof(outputs), i64)),
        (navsat.navsat_odometry, common + (i64, i64, typeof(outputs.odometry[0]))),
        (navsat.navsat_tick, common + (typeof(outputs),)),
        (navsat.navsat_fix, (typeof(nav), typeof(counters), typeof(row[0]))),
        (navsat.navsat_imu, common + (typeof(row[0]),)),
    ]
    final = (loop.advance, (typeof(ekf), typeof(tf), typeof(queue), typeof(outputs), typeof(nav),
                            typeof(run.topics), typeof(run.timing), typeof(row), i64, i64, types.boolean, i64,
                            i64))
    return callees, final


def compile_loop(run) -> None:
    """Compile (or load from numba's cache) ``loop.advance`` and its callees for ``run``'s types, sharing
    the compilation with other processes doing the same (module docstring).  Once per process and
    signature; nothing without numba (or with NUMBA_DISABLE_JIT=1)."""
    if numba is None or numba.config.DISABLE_JIT:
        return
    ekf = run.ekf
    key = _layout((ekf.core, run.tf.core, ekf.queue, run.outputs, run.nav_core, run.topics, run.timing))
    if key in _done:  # (numba's typeof of these records costs ~15 ms: not once per run)
        return
    callees, (advance, signature) = _units(run)
    if signature in advance.overloads:
        _done.add(key)
        return
    pending = [(dispatcher, sig) for dispatcher, sig in callees if sig not in dispatcher.overloads]
    while pending:
        for unit in pending:  # the first unit nobody else is compiling
            held = _lock(*unit, wait=False)
            if held is not None:
                break
        else:  # every remaining unit is being compiled elsewhere: wait for one (then it is a cache load)
            unit = pending[0]
            held = _lock(*unit, wait=True)
        try:
            unit[0].compile(unit[1])
        finally:
            held.close()
        pending.remove(unit)
    with _lock(advance, signature, wait=True):
        advance.compile(signature)
    _done.add(key)


def _layout(value):
    """What numba's types of the loop's arguments follow from: the dtypes and dimensions of the records and
    arrays in ``value`` (nested tuples)."""
    if isinstance(value, tuple):
        return tuple(_layout(item) for item in value)
    return type(value).__name__, getattr(value, "dtype", None), getattr(value, "ndim", None)


@contextlib.contextmanager
def compilation_helpers(function, helpers: int):
    """While the block runs ``function()`` (a first judge run), ``helpers`` forked processes run it too,
    so that with an empty numba cache the compilation is shared (``compile_loop``) and this process ends
    up with all of it compiled, for the workers it forks next.  The helpers keep nothing: they only write
    numba's cache.  None are started when the loop is already compiled here or numba is off, nor from a
    process running other threads: a lock one of them held at the fork (a progress spinner's, on
    stderr) would stay held in the helper — so enter this before starting any (``with helpers, spinner``)."""
    started = []
    if (numba is not None and not numba.config.DISABLE_JIT and helpers >= 1 and not loop.advance.overloads
            and threading.active_count() == 1):
        context = multiprocessing.get_context("fork")
        started = [context.Process(target=_helper, args=(function, os.getpid()), daemon=True)
                   for _ in range(helpers)]
        for process in started:
            process.start()
    finished = False
    try:
        yield
        finished = True
    finally:
        for process in started:
            if not finished:  # (stopped or failed here: the helpers are of no use)
                process.terminate()
            process.join()


def _helper(function, parent_pid: int) -> None:
    die_with_parent(parent_pid)
    try:
        function()
    except BaseException:  # noqa: BLE001 - a helper's failure only means the parent compiles more itself
        os._exit(1)


class _NoLock:
    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()


def _lock(dispatcher, signature, wait: bool):
    """An exclusive lock on ``dispatcher``'s compilation for ``signature`` (a lock file in its numba cache
    directory, released by ``close()``); None when another process holds it and not ``wait``.  Where no
    lock can be taken (no fcntl, a read-only cache), a lock that does nothing: compiling twice is only
    slower."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return _NoLock()
    name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"
    # one lock per function and signature, the same name in every process (str of numba types is stable)
    digest = hashlib.sha256(str(signature).encode()).hexdigest()[:16]
    path = Path(numba_cache(dispatcher).cache_path) / f"sim2real_eval-compiling-{name}-{digest}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a")
    except OSError:
        return _NoLock()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        handle.close()
        return None
    except OSError:
        handle.close()
        return _NoLock()
    return handle


__all__ = ["compilation_helpers", "compile_loop"]
