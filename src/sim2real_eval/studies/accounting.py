"""CPU accounting of the demo: wall and CPU seconds of each step (``Stages``; demo.json's ``wall_time_s``
and ``cpu_time_s``, the printed time line), the process's own start included, and the bytes of a
folder tree (the kept run bags)."""
from __future__ import annotations

import os
import resource
import time
from pathlib import Path


def _cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (the worker pools) so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _process_age() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        since_boot = float(Path("/proc/uptime").read_text().split()[0])
        return since_boot - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Stages:
    """Wall and CPU seconds of each step of the demo; "startup" is the process's own start (the
    interpreter and the imports) up to the first step."""

    def __init__(self):
        self.wall, self.cpu = {}, {}
        now, cpu = time.perf_counter(), _cpu_seconds()
        age = _process_age()
        self.start_wall, self.start_cpu = now - (age or 0.0), 0.0
        self.wall["startup"], self.cpu["startup"] = age or 0.0, cpu
        self._wall, self._cpu = now, cpu

    def done(self, name: str) -> None:
        wall, cpu = time.perf_counter(), _cpu_seconds()
        self.wall[name], self.cpu[name] = wall - self._wall, cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def total(self) -> None:
        self.wall["total"] = time.perf_counter() - self.start_wall
        self.cpu["total"] = _cpu_seconds() - self.start_cpu


def tree_bytes(path: Path) -> int:
    """Bytes of the files below ``path`` (what ``du --apparent-size`` counts)."""
    return sum(entry.stat().st_size for entry in Path(path).rglob("*") if entry.is_file())
