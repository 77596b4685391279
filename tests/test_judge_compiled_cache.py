"""numba re-uses a cached kernel whose inlined helper (in another file) changed; the judge's stamp
(judge/compiled_cache.py) makes it recompile.  Shown on a two-file package compiled in subprocesses."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba")

HELPER = ("from sim2real_eval.judge.kernels import njit\n\n"
          "@njit(cache=True, inline='always')\ndef value():\n    return {}\n")
CALLER = textwrap.dedent("""\
    from sim2real_eval.judge.kernels import njit
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
