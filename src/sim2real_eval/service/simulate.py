"""Simulate a study: every run of a study file, one bag per run (``sim2real-eval simulate``)."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import UserError
from ..outputs import check_name, check_paths
from ..pipeline.batch import run_batch
from .common import existing_files, json_key, warn_once

if TYPE_CHECKING:
    from ..pipeline.batch import BatchReport
    from ..pipeline.study import Study

@dataclass
class SimulatedRuns:
    """Simulated runs: the tasks, the batch report (outcomes in task order, failures) and wall time."""

    tasks: list
    report: BatchReport
    seconds: float
    study: Study | None = None

    def first_failure(self) -> None:
        """Raise the first failed run's own message (as if that run had run alone)."""
        if self.report.failures:
            raise UserError(self.report.failures[0].message)


def simulate_runs(tasks: Sequence, out, *, workers: int | None = None, ray_address: str | None = None,
                  progress: bool = True, description: str = "runs") -> SimulatedRuns:
    """Execute simulated runs (``pipeline.simulated_run.SimRunSpec``) into ``out``; complete ones are
    skipped."""
    start = time.perf_counter()
    report = run_batch(tasks, out, workers=workers, ray_address=ray_address, progress=progress,
                       description=description)
    return SimulatedRuns(list(tasks), report, time.perf_counter() - start)


def simulate_study(study, out, *, storage: str | None = None, workers: int | None = None,
                   ray_address: str | None = None, progress: bool = True, timing=None) -> SimulatedRuns:
    """Every run of a study (a ``pipeline.study.Study`` or a study file) into ``out/sim/…``; ``timing``
    (a ``runs.timing.TimingModel``) replaces the study's judge timing."""
    from ..pipeline.study import load_study

    if not hasattr(study, "runs"):
        study = load_study(study)
    if timing is not None:
        study = dataclasses.replace(study, judge=dataclasses.replace(study.judge, timing=timing))
    check_name(out, "--out")
    tasks = study.runs(storage=storage)
    files = [p for t in tasks for p in (t.judge.ekf, t.judge.navsat, t.gps, t.imu)]
    check_paths({"STUDY": study.source, "(files of the study)": existing_files(files)},
                {"--out": Path(out) / "sim"})
    lint_study_imus(study)
    done = simulate_runs(tasks, out, workers=workers, ray_address=ray_address,
                         progress=progress, description=f"simulate {study.name}")
    done.study = study
    return done


def lint_study_imus(study) -> None:
    """Before any run: each IMU model of the study whose covariance is no covariance once ekf_node has
    rotated it into base_link (``judge.lint``) is a DataWarning, one line per model."""
    from ..judge.findings import model_imu_findings

    specs = {json_key(variant.imu): variant.imu for variant in study.variants}
    findings = []
    for spec in specs.values():
        try:
            findings += model_imu_findings(study.judge, spec)
        except UserError:
            pass  # a model the runs cannot load either: the batch's preflight names it
    warn_once(findings)


__all__ = ["SimulatedRuns", "lint_study_imus", "simulate_runs", "simulate_study"]
