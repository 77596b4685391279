"""One demo: what it writes in OUT (the names, its marker's command), its inputs as ``run_demo`` resolved
them (``DemoJob``), its real side (``RealSide``) and what it returns (``DemoResult``, what the CLI
prints).  Every step of the demo (``real_bags``, ``plan``, ``scoring``, ``report_files``) takes these."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..outputs import OwnNames
from .accounting import Stages
from .config import EVERY_SCENARIO, DemoConfig
from .judges import SUMMARY as JUDGES

COMMAND = "demo"  # in the marker of OUT (outputs.write_marker)
RUNS = "runs"
REFERENCE = "reference"
IMPORTED = "imported"      # --real-sample: the shipped segment's imported windows (real_sample.IMPORTED)
REAL_SAMPLE = "real_sample"  # --real-sample: calibration, tuning and sensitivity files of the report
IMU_STUDY = "imu_study"
SUMMARY = "demo.json"
REPORT_FILES = ("vepd.json", "statistics.json", "runs.csv", "tables.md", "report.html", "figures")
# What the demo writes in OUT: the report (files it lists in its marker) and the folders it manages.
REPORT_NAMES = (*REPORT_FILES, IMU_STUDY, SUMMARY, REAL_SAMPLE, JUDGES)  # JUDGES: --judges
FOLDERS = (RUNS, REFERENCE, IMPORTED)


def own_names() -> OwnNames:
    """What the demo writes in OUT (``outputs.OwnNames``): its report names; its run folders are resumed
    run by run and must not be links."""
    return OwnNames(COMMAND, REPORT_NAMES, links=FOLDERS)


@dataclass
class DemoJob:
    """One demo's inputs, as ``run_demo`` resolved them (``k`` becomes the K found)."""

    out: Path
    previous: dict            # the marker of this demo's earlier output ({} when new)
    stages: Stages
    config: DemoConfig
    options: Any              # metrics.ScoreOptions
    real: Any
    k: int
    workers: int
    progress: bool
    imu_scenario: str | None
    ray_address: str | None
    noise_floor: bool
    keep_runs: bool
    notice: Any = None
    real_sample: bool = False

    @property
    def runs_dir(self) -> Path:
        return self.out / RUNS

    @property
    def draws(self) -> int:
        return self.config.noise_floor_draws if self.noise_floor else 0

    @property
    def forks_workers(self) -> bool:
        """Runs go to forked local workers (more than one, no Ray): work can overlap in this process."""
        return self.workers > 1 and self.ray_address is None


@dataclass
class RealSide:
    """The real bags of a demo and what they are."""

    bags: dict                # {scenario: [bag paths]}
    source: str               # what the report's banner and the console call the real side
    imu_scenario: str         # a scenario or EVERY_SCENARIO
    sample: Any = None        # real_sample.Prepared (--real-sample)

    @property
    def gps_extra(self) -> tuple:
        return self.sample.gps_variants if self.sample is not None else ()

    @property
    def imu_extra(self) -> tuple:
        return self.sample.imu_variants if self.sample is not None else ()

    @property
    def imu_scenarios(self) -> list:
        return list(self.bags) if self.imu_scenario == EVERY_SCENARIO else [self.imu_scenario]


@dataclass
class DemoResult:
    """What a demo did: the report's numbers and documents, its runs and times (what the CLI prints)."""

    out: Path
    k: int
    scenarios: list
    timings: dict
    gps: dict                 # vepd.json document of the GPS study
    imu: dict | None          # vepd.json document of the IMU study
    ordering: dict
    real_source: str
    runs_written: int = 0
    runs_total: int = 0
    noise_floor: dict | None = None  # {"gps_study" | "imu_study": pooled floor {VEPD, VEPD_interval}}
    runs_bytes: int = 0       # size of the run bags (OUT/runs) when kept
    runs_kept: bool = False   # True: the run bags are in OUT/runs (--keep-runs)
    cpu_times: dict | None = None    # CPU seconds per step (this process + its reaped workers)
    gps_result: Any = None    # metrics.StudyResult of each study
    imu_result: Any = None
    runs_note: str | None = None  # run bags an earlier --keep-runs wrote, left in OUT/runs
    real_sample: dict | None = None  # --real-sample: OUT/real_sample/real_sample.json's content
    judges: dict | None = None       # --judges: OUT/judges.json's content
