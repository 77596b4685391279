"""The judge runs for a user who can write neither to the install nor to $HOME (issue 15 item 3).

numba's on-disk cache needs a writable directory; without one, ``@njit(cache=True)`` raised
"cannot cache function …: no locator available" when the judge was imported.  The test copies the
package into a read-only folder and runs it with a read-only HOME as a user without privileges
(root without capabilities: the permission bits apply to it as to anyone).
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = """
import math
import os
import numba
from sim2real_eval.judge import kernels, load_ekf_params  # the whole judge imports
assert kernels.clamp_rotation(4.0) == 4.0 - 2 * math.pi   # and its kernels compile and run
# the private cache directory was numba's only while the judge's kernels were decorated
assert "NUMBA_CACHE_DIR" not in os.environ and numba.config.CACHE_DIR == ""
print("ok")
"""


def read_only(path: Path) -> None:
    for item in [path, *path.rglob("*")]:
        mode = stat.S_IMODE(item.stat().st_mode)
        item.chmod(mode & ~0o222)


def unprivileged() -> list:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop the capability to write anywhere")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="permission model of Linux")
def test_judge_imports_and_runs_without_a_writable_install_or_home(tmp_path):
    pytest.importorskip("numba")
    install, home, tmp = tmp_path / "install", tmp_path / "home", tmp_path / "tmp"
    shutil.copytree(REPO / "src" / "sim2real_eval", install / "sim2real_eval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    tmp.mkdir()
    read_only(install)
    read_only(home)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NUMBA_", "XDG_"))}
    env.update(PYTHONPATH=str(install), HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
    try:
        result = subprocess.run([*unprivileged(), sys.executable, "-c", SCRIPT], env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip() == "ok"
        cache = tmp / f"sim2real_eval-numba-{os.getuid()}"
        assert cache.is_dir() and stat.S_IMODE(cache.stat().st_mode) == 0o700
        assert any(cache.rglob("*.nbi"))  # the kernel went to the private cache
        assert not any(install.rglob("__pycache__")) and not any(home.iterdir())
    finally:
        for item in [install, *install.rglob("*"), home]:
            if item.is_dir():
                item.chmod(0o755)
