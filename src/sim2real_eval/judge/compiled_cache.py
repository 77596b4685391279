"""numba for the judge: the ``njit`` its compiled functions are decorated with, where their on-disk cache
lives, and keeping that cache in step with all of the judge's sources.

numba is optional (it only makes the judge faster): without it, or with NUMBA_DISABLE_JIT=1, ``njit``
and ``overload`` leave the functions as plain Python/numpy code.

numba invalidates a cached function only when *its own* file changes (documented: "Cache invalidation
fails to recognize changes in functions defined in a different file"); a kernel inlined from another
file (``inline="always"`` helpers of kernels.py into loop.py, navsat.py…) is not tracked.  After a
``git pull`` that edits kernels.py alone, an editable install would run the old compiled code with the
new Python source.  So: one digest of every judge source file is stamped beside each cache directory;
when it differs, every judge kernel's cache index is emptied once (numba recompiles and re-caches).

numba documents caching only as ``cache=True``, the NUMBA_CACHE_DIR environment variable and "the
cache directory can simply be removed"; it has no call that says where one function's cache is or
empties it, and the environment variable is process-wide.  So two things are done with numba's
internals, read in its sources 0.58.0 … 0.68.1, pinned in setup.py (``NUMBA_SUPPORTED``) and checked by
tests/test_judge_compiled_cache.py:

- ``Dispatcher._cache`` (a ``numba.core.caching.Cache`` when ``cache=True``): its ``cache_path``
  property and ``flush()`` (which writes an empty index), to empty the cache of a stale kernel;
- ``numba.config.CACHE_DIR`` (the value of NUMBA_CACHE_DIR, read by the cache locator when a function
  is decorated) and the "no locator available" RuntimeError numba raises at decoration when neither
  the source's ``__pycache__`` nor the user-wide cache directory is writable: the kernels are then
  cached in a private temporary directory.  CACHE_DIR is set only while decorating and restored at
  once, so no other numba user of the process, and no child process, is redirected.

When these are not what was read (a numba outside the range), ``numba_cache(dispatcher)`` raises a
RuntimeError naming the numba version and the supported range, at import of the judge.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import warnings
from pathlib import Path

try:  # numba is optional: it only makes the judge faster
    import numba
    from numba.extending import overload
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

    def overload(*_args, **_kwargs):  # type-based dispatch, for compiled callers only
        def wrap(function):
            return function

        return wrap


NUMBA_SUPPORTED = ">=0.58,<0.69"  # setup.py's numba requirement: the versions whose internals were read
STAMP_NAME = "sim2real_eval-sources.sha256"
CACHED: list = []  # the dispatchers ``njit`` made with an on-disk cache, in decoration order
_warned: list = []


def _private_cache_dir():
    """A numba cache directory only this user can write (tempdir/sim2real_eval-numba-<uid>), or None.

    Used when neither the install (numba's __pycache__ beside the source) nor $HOME is writable:
    read-only system installs, containers without a home.  The directory must be ours and private:
    numba loads pickles from it.
    """
    path = os.path.join(tempfile.gettempdir(), f"sim2real_eval-numba-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return path if private and os.access(path, os.W_OK | os.X_OK) else None


def _unsupported(what: str) -> RuntimeError:
    return RuntimeError(f"numba {numba.__version__}: {what}; the judge keeps its compiled kernels' on-disk "
                        f"cache in step with its sources through it (judge/compiled_cache.py) and supports "
                        f"numba {NUMBA_SUPPORTED}: install one of those "
                        f"(pip install 'numba{NUMBA_SUPPORTED}'), or run without compiling "
                        f"(NUMBA_DISABLE_JIT=1, slow)")


def _cached_in(directory: str, function, *args, **kwargs):
    """``function`` decorated by numba.njit(*args, **kwargs) with its cache in ``directory``:
    numba.config.CACHE_DIR (what NUMBA_CACHE_DIR sets) for the decoration only, when the cache locator
    reads it."""
    if not hasattr(numba.config, "CACHE_DIR"):
        raise _unsupported("numba.config has no CACHE_DIR (NUMBA_CACHE_DIR)")
    before = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = directory
    try:
        return numba.njit(*args, **kwargs)(function)
    finally:
        numba.config.CACHE_DIR = before


def njit(*args, **kwargs):
    """numba.njit; with ``cache=True`` the dispatcher is kept in ``CACHED`` (``refresh_stale_caches``), and
    it also works where numba finds no writable cache directory (numba raises "cannot cache function …:
    no locator available" at decoration otherwise): the kernels are then cached in
    ``_private_cache_dir()``, or compiled without a cache (with a warning)."""
    if numba is None or numba.config.DISABLE_JIT:  # plain Python: nothing compiled, nothing cached
        return lambda function: function
    if not kwargs.get("cache"):
        return numba.njit(*args, **kwargs)

    def wrap(function):
        try:
            dispatcher = numba.njit(*args, **kwargs)(function)
        except RuntimeError as exc:
            if "no locator available" not in str(exc):
                raise
            private = _private_cache_dir()
            if private is None:
                if not _warned:
                    _warned.append(True)
                    warnings.warn("numba cannot cache the judge's compiled kernels (no writable cache "
                                  "directory): each process compiles them again (~1 min); set "
                                  "NUMBA_CACHE_DIR to a writable directory to avoid it", RuntimeWarning,
                                  stacklevel=2)
                return numba.njit(*args, **{**kwargs, "cache": False})(function)
            dispatcher = _cached_in(private, function, *args, **kwargs)
        CACHED.append(dispatcher)
        return dispatcher

    return wrap


def numba_cache(dispatcher):
    """The on-disk cache of a dispatcher ``njit`` made with ``cache=True`` (numba's private
    ``Dispatcher._cache``: ``cache_path``, ``flush()``), or a RuntimeError naming the numba version and the
    supported range when numba no longer has it."""
    cache = getattr(dispatcher, "_cache", None)
    if cache is None or not callable(getattr(cache, "flush", None)):
        raise _unsupported("a compiled function has no Dispatcher._cache with flush()")
    path = getattr(cache, "cache_path", None)
    if not isinstance(path, str) or not path:
        raise _unsupported(f"Dispatcher._cache.cache_path is {path!r}, not a directory")
    return cache


def sources_digest(package_dir: Path) -> str:
    """SHA-256 over the names and bytes of the package's .py files (sorted: independent of listing order)."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def compiled_dispatchers(package: str) -> list:
    """The cached dispatchers ``njit`` made for functions of ``package`` (its modules imported so far)."""
    return [dispatcher for dispatcher in CACHED
            if (dispatcher.py_func.__module__ + ".").startswith(package + ".")]


def refresh_stale_caches(package: str) -> int:
    """Empty the cache index of every kernel of ``package`` whose cache directory was stamped with other
    sources; returns how many were emptied.  A directory that cannot be written is left alone (numba
    then does not cache there either)."""
    package_dir = Path(sys.modules[package].__file__).parent
    digest = None
    by_directory: dict = {}
    for dispatcher in compiled_dispatchers(package):
        cache = numba_cache(dispatcher)
        by_directory.setdefault(Path(cache.cache_path), []).append(cache)
    flushed = 0
    for directory, caches in by_directory.items():
        stamp = directory / STAMP_NAME
        digest = digest or sources_digest(package_dir)
        try:
            if stamp.is_file() and stamp.read_text().strip() == digest:
                continue
            for cache in caches:
                cache.flush()  # an empty index: numba compiles the function again and caches it
                flushed += 1
            directory.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest + "\n")
        except OSError:
            continue
    return flushed


def borrowed(array):
    """``array`` itself; in compiled code, a view of it that holds no reference (numba's meminfo NULL).

    numba counts references to an array atomically each time it is passed to a compiled function that
    is not inlined (on entry and on exit, for every array in a tuple argument too): ≈ 15 % of the judge's
    CPU time on the ART run went to those counts (docs/judge.md, "Speed").  A view without a meminfo
    makes every count a test of NULL.  Only for arrays whose Python owner keeps them alive for the whole
    compiled call and that the call never returns nor stores (loop.advance's inputs)."""
    return array


if numba is not None:
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def _view_without_meminfo(typingctx, array):
        def codegen(context, builder, signature, args):
            view = context.make_array(array)(context, builder, value=args[0])
            view.meminfo = cgutils.get_null_value(view.meminfo.type)
            view.parent = cgutils.get_null_value(view.parent.type)  # (never boxed back to Python)
            return view._getvalue()

        return array(array), codegen

    @overload(borrowed)
    def _borrowed_typed(array):
        if isinstance(array, types.Array):
            return lambda array: _view_without_meminfo(array)
        return None
