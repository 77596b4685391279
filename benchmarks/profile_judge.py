"""Where the embedded judge's time goes, by compiled function: a `perf` sampling profile made readable.

perf sees numba's compiled code as bare addresses.  This script judges the ART run (as bench_judge does)
in a child process that compiles the kernels itself (an empty NUMBA_CACHE_DIR: ~1-2 min on 2 cores; the
object code of a cached kernel is not kept in memory) and writes perf's map of every compiled judge
function, plus numba's runtime reference counting (``NRT_incref`` / ``NRT_decref``: atomic operations,
a cost of passing arrays, records and tuples of them between non-inlined functions).  The parent
samples the child with ``perf record`` while it judges the run over and over, then prints
``name: percent of samples`` for the top entries (``judge.kernels.correct``, ``numba.NRT_incref``, ...;
``python`` is the interpreter, ``other`` the rest).

Needs Linux ``perf`` (perf_event_paranoid ≤ 1, or root) and ``nm`` (binutils).

Usage: python benchmarks/profile_judge.py [--seconds 15] [--top 15]
Measured 2026-11-24 (2 cores, load ≈ 1): correct 28 %, invert 17 %, predict 11 %, NRT refcounts 10 %.
Measured 2026-11-27 (load ≈ 2.5), after loop.advance's reference-free views: correct 29 %, invert 21 %,
predict 10 %, NRT refcounts 1.6 % (15 % before).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CHILD = """
import os, subprocess, sys, time
from pathlib import Path
from numba.core.runtime import nrt
from sim2real_eval.judge import Judge, load_ekf_params, load_navsat_params
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_records
from sim2real_eval.resources import config_path

workdir, seconds = Path(sys.argv[1]), float(sys.argv[2])
records = art_like_records(duration=30.0, heading_rate=0.05, seed=1)
judge = Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
              load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS)
judge.run(records)  # compiles every kernel in this process
libraries = {}
for name, module in list(sys.modules.items()):
    if name.startswith("sim2real_eval.judge") and module is not None:
        for value in vars(module).values():
            for result in getattr(value, "overloads", {}).values():
                libraries[id(result.library)] = result.library
symbols = {}  # address -> (size, mangled name)
objfile = workdir / "library.o"
for library in libraries.values():
    objfile.write_bytes(library._get_compiled_object())
    listing = subprocess.run(["nm", "-S", "--defined-only", str(objfile)], capture_output=True, text=True,
                             check=True).stdout
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            address = library.get_pointer_to_function(parts[3])
            if address:
                symbols[address] = (int(parts[1], 16), parts[3])
runtime = nrt.rtsys.library
for name in ("NRT_incref", "NRT_decref"):
    symbols[runtime.get_pointer_to_function(name)] = (16, "numba." + name)
with open(f"/tmp/perf-{os.getpid()}.map", "w") as out:
    for address, (size, name) in sorted(symbols.items()):
        out.write(f"{address:x} {size:x} {name}\\n")
(workdir / "ready").write_text(str(len(symbols)))
start = time.monotonic()
while time.monotonic() - start < seconds:
    judge.run(records)
"""

_PART = re.compile(r"(\d+)")  # numba's mangled names: _ZN13sim2real_eval5judge7kernels7correctB3v...


def readable(symbol: str) -> str:
    """``_ZN13sim2real_eval5judge7kernels7correctB3v...`` -> ``judge.kernels.correct``."""
    if symbol.startswith("numba."):
        return symbol
    if not symbol.startswith("_ZN13sim2real_eval"):
        return "python" if symbol.startswith(("_Py", "Py", "_PyEval")) else "other"
    rest, parts = symbol[len("_ZN13sim2real_eval"):], []
    while rest and rest[0].isdigit():
        length = int(_PART.match(rest).group(1))
        digits = len(str(length))
        parts.append(rest[digits:digits + length])
        rest = rest[digits + length:]
    return ".".join(parts) if parts else "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="sampling time (s)")
    parser.add_argument("--top", type=int, default=15, help="entries to print")
    args = parser.parse_args()
    for tool in ("perf", "nm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"profile_judge: `{tool}` is not on PATH (Linux perf and binutils are needed)")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(workdir / "numba_cache")}
        command = [sys.executable, "-c", CHILD, str(workdir), str(args.seconds + 30.0)]
        child = subprocess.Popen(command, env=env)
        try:
            while not (workdir / "ready").exists():
                if child.poll() is not None:
                    raise SystemExit(f"profile_judge: the judge process failed (exit {child.returncode})")
                time.sleep(0.5)
            print(f"compiled functions mapped: {(workdir / 'ready').read_text()}")
            data = workdir / "perf.data"
            subprocess.run(["perf", "record", "-q", "-F", "2000", "-p", str(child.pid), "-o", str(data), "--",
                            "sleep", str(args.seconds)], check=True, capture_output=True)
            report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", "sym"],
                                    check=True, capture_output=True, text=True).stdout
        finally:
            child.kill()
            child.wait()
            Path(f"/tmp/perf-{child.pid}.map").unlink(missing_ok=True)
    shares: Counter = Counter()
    for line in report.splitlines():
        match = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(\S+)", line)
        if match:
            shares[readable(match.group(2))] += float(match.group(1))
    for name, share in shares.most_common(args.top):
        print(f"{name}: {share:.1f}")


if __name__ == "__main__":
    main()
