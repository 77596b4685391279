"""numba re-uses a cached kernel whose inlined helper (in another file) changed; the judge's stamp
(judge/compiled_cache.py) makes it recompile.  Shown on a two-file package compiled in subprocesses.

The stamp empties a kernel's cache through numba internals (``Dispatcher._cache``: ``cache_path``,
``flush()``; ``numba.config.CACHE_DIR``): setup.py pins numba to the versions they were read in, and the
tests below check them on the installed numba and that their absence is a clear error."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("numba")

HELPER = ("from sim2real_eval.judge.compiled_cache import njit\n\n"
          "@njit(cache=True, inline='always')\ndef value():\n    return {}\n")
CALLER = textwrap.dedent("""\
    from sim2real_eval.judge.compiled_cache import njit
    from .helper import value

    @njit(cache=True)
    def compiled():
        return value()
    """)
RUN = textwrap.dedent("""\
    import sys
    import kpkg.caller
    if sys.argv[1] == "refresh":
        from sim2real_eval.judge.compiled_cache import refresh_stale_caches
        refresh_stale_caches("kpkg")
    print(kpkg.caller.compiled())
    """)


def _run(tmp_path, mode):
    # No .pyc: helper.py v1 and v2 have the same size, and written within one second Python's
    # (mtime-in-seconds, size) check would import the stale v1 bytecode (a flaky CI failure).
    env = {"PYTHONPATH": ":".join([str(tmp_path), *sys.path]), "PATH": "/usr/bin:/bin",
           "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", RUN, mode], cwd=tmp_path, capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.parametrize("mode, second", [("plain", 1), ("refresh", 2)])
def test_an_edited_inlined_helper_is_recompiled_only_with_the_stamp(tmp_path, mode, second):
    package = tmp_path / "kpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(CALLER)
    (package / "helper.py").write_text(HELPER.format(1))
    assert _run(tmp_path, mode) == 1
    (package / "helper.py").write_text(HELPER.format(2))  # caller.py untouched: numba keeps its cache
    assert _run(tmp_path, mode) == second
    assert _run(tmp_path, mode) == second  # and the new code is cached (same answer again)
    if mode == "refresh":
        assert (package / "__pycache__" / "sim2real_eval-sources.sha256").is_file()


def test_setup_py_pins_numba_to_the_versions_the_internals_were_read_in():
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from test_ros_install import setup_py_lists

    from sim2real_eval.judge.compiled_cache import NUMBA_SUPPORTED

    install_requires, _extras = setup_py_lists()
    numba_lines = [Requirement(line) for line in install_requires if Requirement(line).name == "numba"]
    assert [r.specifier for r in numba_lines] == [SpecifierSet(NUMBA_SUPPORTED)]
    import numba

    assert numba.__version__ in SpecifierSet(NUMBA_SUPPORTED), (
        f"numba {numba.__version__} is outside {NUMBA_SUPPORTED}: check judge/compiled_cache.py's internals "
        "in its sources, then widen NUMBA_SUPPORTED and setup.py")


def test_the_numba_internals_the_stamp_uses_are_there():
    import numba
    from numba.core.caching import Cache

    from sim2real_eval.judge import compiled_cache, kernels, loop

    judge = compiled_cache.compiled_dispatchers("sim2real_eval.judge")
    assert kernels.clamp_rotation in judge and loop.advance in judge
    for dispatcher in judge:
        cache = compiled_cache.numba_cache(dispatcher)
        assert isinstance(cache, Cache) and Path(cache.cache_path).is_dir()
    assert isinstance(numba.config.CACHE_DIR, str)  # NUMBA_CACHE_DIR, as the cache locator reads it


def test_numba_without_those_internals_is_a_clear_error(monkeypatch):
    import numba

    from sim2real_eval.judge import compiled_cache
    from sim2real_eval.judge.compiled_cache import NUMBA_SUPPORTED

    class NoCache:
        py_func = compiled_cache.sources_digest

    class NoPath:
        py_func = compiled_cache.sources_digest
        _cache = type("Cache", (), {"cache_path": None, "flush": lambda self: None})()

    clear = re.escape(f"numba {numba.__version__}: ") + ".*" + re.escape(f"supports numba {NUMBA_SUPPORTED}")
    for dispatcher in (NoCache(), NoPath()):
        with pytest.raises(RuntimeError, match=clear):
            compiled_cache.numba_cache(dispatcher)
    monkeypatch.delattr(numba.config, "CACHE_DIR")
    with pytest.raises(RuntimeError, match="numba.config has no CACHE_DIR"):
        compiled_cache._cached_in("/nonexistent", compiled_cache.sources_digest, cache=True)


# --- parallel_compile: the loop compiled once between processes -------------------------------------------


def _art_judge():
    from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params
    from sim2real_eval.judge.synthetic import ART_STATIC_TFS
    from sim2real_eval.resources import config_path

    return Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
                 load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS)


def test_the_units_are_compiled_for_the_types_the_loop_passes_them():
    """Compiled ahead with parallel_compile's signatures, the loop's first call adds no other signature to
    any of them (a wrong one would be compiled for nothing, and compiled again by the call)."""
    pytest.importorskip("numba")
    from sim2real_eval.judge import parallel_compile
    from sim2real_eval.judge.runner import _Run
    from sim2real_eval.judge.synthetic import art_like_records

    judge = _art_judge()
    callees, final = parallel_compile._units(_Run(judge))
    for dispatcher, signature in [*callees, final]:
        dispatcher.compile(signature)
    before = {dispatcher: set(dispatcher.overloads) for dispatcher, _signature in [*callees, final]}
    judge.run(art_like_records(duration=2.0, heading_rate=0.05, seed=1))
    for dispatcher, signature in [*callees, final]:
        assert signature in before[dispatcher]
        assert set(dispatcher.overloads) == before[dispatcher], dispatcher.py_func.__qualname__


HOLD_LOCK = """
import sys
from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params, parallel_compile
from sim2real_eval.judge.runner import _Run
from sim2real_eval.judge.synthetic import ART_STATIC_TFS
from sim2real_eval.resources import config_path
judge = Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
              load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS)
held = parallel_compile._lock(*parallel_compile._units(_Run(judge))[0][0], wait=True)
print("held", flush=True)
sys.stdin.readline()
held.close()
"""


def test_a_unit_another_process_compiles_is_waited_for_not_taken():
    """The lock file beside numba's cache: held by another process, a non-waiting lock is refused (the
    caller takes another unit), and it is free again once that process lets go."""
    pytest.importorskip("numba")
    from sim2real_eval.judge import parallel_compile
    from sim2real_eval.judge.runner import _Run

    dispatcher, signature = parallel_compile._units(_Run(_art_judge()))[0][0]
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert parallel_compile._lock(dispatcher, signature, wait=False) is None
    finally:
        holder.communicate("release\n", timeout=120)
    again = parallel_compile._lock(dispatcher, signature, wait=False)
    assert again is not None
    again.close()


def test_no_compilation_helpers_once_the_loop_is_compiled_here():
    """A process whose loop is compiled (every later demo: loaded from the cache) forks no helper."""
    pytest.importorskip("numba")
    import multiprocessing

    from sim2real_eval.judge import parallel_compile
    from sim2real_eval.judge.synthetic import art_like_records

    judge = _art_judge()
    judge.run(art_like_records(duration=1.0, seed=1))  # the loop compiled (or loaded) here
    with parallel_compile.compilation_helpers(lambda: None, helpers=2):
        assert multiprocessing.active_children() == []
