"""What importing costs: the numbers behind docs/architecture.md's "Imports at the top" rule.

    python benchmarks/import_times.py            # the dependencies and packages below, best of 3
    python benchmarks/import_times.py --repeat 5 numpy sim2real_eval.judge

Each module is imported in a fresh interpreter with ``python -X importtime``; the number is its
cumulative time (itself and everything it loaded first), the best of ``--repeat`` runs, in ms.  Then
``sim2real-eval COMMAND --help`` for every command: wall time (best of the runs) and which costly
dependencies it loaded (none is the point of cli/'s lazy imports).  Run by hand; on a machine shared with
other jobs the times are upper bounds.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

DEPENDENCIES = ["numpy", "yaml", "rich.console", "rosbags.highlevel", "pyproj", "numba", "ray", "optuna",
                "matplotlib.pyplot", "scipy.spatial.transform", "scipy.optimize", "scipy.stats", "allantools"]
PACKAGES = ["sim2real_eval.runs", "sim2real_eval.models", "sim2real_eval.bags", "sim2real_eval.judge",
            "sim2real_eval.metrics", "sim2real_eval.report", "sim2real_eval.service"]
COSTLY = ["numpy", "yaml", "scipy", "matplotlib", "numba", "ray", "optuna", "allantools", "pyproj", "rosbags"]
SRC = Path(__file__).resolve().parents[1] / "src"


def environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    return env


def import_ms(module: str, repeat: int) -> float:
    """Cumulative import time of ``module`` in ms (best of ``repeat`` fresh interpreters)."""
    best = float("inf")
    for _ in range(repeat):
        result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                                capture_output=True, text=True, env=environment(), check=True)
        for line in result.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].strip() == module:
                best = min(best, int(parts[1]) / 1000)
    return best


HELP = """
import contextlib, io, sys
sys.argv = ["sim2real-eval", sys.argv[1], "--help"]
from sim2real_eval.cli import main
try:
    with contextlib.redirect_stdout(io.StringIO()):
        main()
except SystemExit:
    pass
print(" ".join(name for name in sys.argv[2:] if name in sys.modules))
"""


def help_run(command: str, repeat: int) -> tuple:
    """(best wall time in ms, costly dependencies loaded) of ``sim2real-eval COMMAND --help``."""
    best, loaded = float("inf"), ""
    for _ in range(repeat):
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-c", HELP, command, *COSTLY], capture_output=True,
                                text=True, env=environment(), check=True)
        best = min(best, (time.perf_counter() - started) * 1000)
        loaded = result.stdout.strip()
    return best, loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to time (default: the lists in this script)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for module in args.modules or DEPENDENCIES + PACKAGES:
        print(f"{module:28s} {import_ms(module, args.repeat):7.0f} ms")
    if not args.modules:
        sys.path.insert(0, str(SRC))
        from sim2real_eval.cli import COMMANDS

        for command in COMMANDS:
            ms, loaded = help_run(command, args.repeat)
            print(f"sim2real-eval {command + ' --help':22s} {ms:5.0f} ms  loads: {loaded or 'none of them'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
