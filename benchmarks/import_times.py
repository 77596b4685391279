"""What importing costs: the numbers behind docs/architecture.md's "Imports at the top" rule.

    python benchmarks/import_times.py            # the dependencies and packages below, best of 3
    python benchmarks/import_times.py --repeat 5 numpy sim2real_eval.judge

Each module is imported in a fresh interpreter with ``python -X importtime``; the number is what the
import adds (the cumulative times of everything it imported, beyond the interpreter's own start-up), the
best of ``--repeat`` runs, in ms.  Then
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


def top_level_ms(stderr: str, skip: set) -> dict:
    """{module: cumulative µs} of the imports ``-X importtime`` lists at the outermost level (not those of
    ``skip``: what the bare interpreter imports at start-up)."""
    found = {}
    for line in stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[0].startswith("import time:") and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            if len(name) - len(name.lstrip()) == 1 and name.strip() not in skip:  # one space: outermost
                found[name.strip()] = int(parts[1])
    return found


def run_importtime(code: str) -> str:
    return subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          env=environment(), check=True).stderr


def import_ms(module: str, repeat: int) -> float:
    """What ``import module`` adds to a fresh interpreter, in ms: the cumulative times of every import it
    triggers at the outermost level (the module, and its parent packages first), best of ``repeat``."""
    startup = set(top_level_ms(run_importtime("pass"), set()))
    return min(sum(top_level_ms(run_importtime(f"import {module}"), startup).values()) / 1000
               for _ in range(repeat))


HELP = """
import contextlib, io, sys
names = sys.argv[2:]
sys.argv = ["sim2real-eval", sys.argv[1], "--help"]
from sim2real_eval.cli import main
try:
    with contextlib.redirect_stdout(io.StringIO()):
        main()
except SystemExit:
    pass
print(" ".join(name for name in names if name in sys.modules))
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
