"""One simulated run: scenario ground truth → simulated GPS + IMU → the embedded judge → one recorded bag
(``SimRunSpec``, a batch task; ``simulate_run``).

A run directory ``OUT/<side>/<variant>/<scenario>/<k>/`` *is* a rosbag2 directory with ``run.yaml``
inside; its name, record and resume rule are ``sim2real_eval.runs``'s.  It appears in one atomic
rename, so a directory that exists is complete; a run whose directory exists and whose run.yaml
matches the spec is skipped (resume), one whose run.yaml differs is refused.

Seeds (numpy SeedSequence via ``models.sensor_seed``):
- ground truth: ``sensor_seed(seed, "scenario", scenario, k)`` (as ``scenarios.generate``) — no variant,
  so every variant of a study sees the same K trajectories of a scenario and differs only by its sensors;
- sensors: ``sensor_seed(seed, *run_id.seed_keys, "gps" | "imu")`` = ``(seed, variant, scenario, k, …)``.

The pieces it is made of have their homes: the judge's configuration and call (``judge.config``), its
findings (``judge.findings``), the run's records and writing (``bags.records``), its timing and start
(``runs.timing``, ``runs.start``), its outcome (``pipeline.batch.RunOutcome``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__, scenarios
from ..bags.records import (
    DEFAULT_GROUND_TRUTH_RATE,
    in_receive_order,
    judge_records,
    sensor_bag_records,
    truth_records,
)
from ..judge.config import JudgeConfig, judge_run, load_gps, load_imu, model_parameters
from ..judge.findings import check_divergence, model_imu_findings
from ..models import sensor_seed
from ..runs import RunId, RunInfo, existing_run, plain, remove_stale_temporaries, run_topics
from ..runs.start import start_stamp_ns
from ..runs.timing import RunTiming
from ..runs.write import write_run
from .batch import RunOutcome


@dataclass(frozen=True)
class SimRunSpec:
    """Everything that determines one simulated run (picklable: it travels to worker processes)."""

    variant: str
    scenario: str
    k: int
    seed: int
    gps: Any
    imu: Any
    judge: JudgeConfig
    scenario_params: Any = None
    ground_truth_rate: float = DEFAULT_GROUND_TRUTH_RATE
    storage: str = "sqlite3"
    side: str = "sim"

    @property
    def run_id(self) -> RunId:
        return RunId(self.side, self.variant, self.scenario, self.k)

    @property
    def label(self) -> str:
        return self.run_id.label

    @property
    def locality_key(self) -> tuple:
        """Runs with equal keys share their ground truth (the batch runner dispatches them together)."""
        return (self.scenario, json.dumps(plain(self.scenario_params), sort_keys=True), self.seed, self.k)

    def directory(self, out) -> Path:
        return self.run_id.directory(out)

    @property
    def timing(self) -> RunTiming:
        """The judge timing of this run (``JudgeConfig.run_timing``: shared by every variant)."""
        return self.judge.run_timing(self.seed, self.scenario, self.k)

    def info(self) -> RunInfo:
        """The typed run.yaml (see ``runs.RunInfo``)."""
        return RunInfo(
            self.run_id, seed=self.seed, source=self.scenario, scenario_params=self.scenario_params,
            from_scenario=True, models={"gps": plain(self.gps), "imu": plain(self.imu)},
            gps=model_parameters("gps", self.gps), imu=model_parameters("imu", self.imu, self.judge),
            judge=self.judge.record(), timing=self.judge.timing_record(self.timing, self.seed),
            **self.judge.start_records(), ground_truth_rate=self.ground_truth_rate, storage=self.storage,
            topics=run_topics(), version=__version__)

    def record(self) -> dict:
        """The run.yaml content (see docs/architecture.md)."""
        return self.info().to_dict()

    def execute(self, out) -> RunOutcome:
        return simulate_run(self, out)


# ---------------------------------------------------------------------------------- the pieces
def scenario_truth(name: str, params: Any, seed: int, k: int):
    """Ground truth of repeat ``k`` of scenario ``name`` (``params`` override its YAML keys).

    Seeded like ``scenarios.generate`` (``sensor_seed(seed, "scenario", name, k)``), so a study run
    and ``sim2real-eval scenario`` give the same trajectory.
    """
    data, source, stem = scenarios.load_scenario(name)
    if params:
        data = {**data, **params}
        source = f"{source} (with the study's overrides)"
    return scenarios.simulate(data, source, sensor_seed(seed, "scenario", stem, k))


class TruthCache:
    """The last ``size`` scenario truths with their /ground_truth/odom records (CDR bytes, read-only).

    Every variant of a study shares the trajectories of (scenario, k): a batch worker keeps the last
    few, and the batch runner dispatches runs grouped by (scenario, k) (``SimRunSpec.locality_key``)
    so these hits are frequent.
    """

    def __init__(self, size: int = 16):
        self.size = size
        self._entries: dict = {}

    def get(self, name: str, params: Any, seed: int, k: int, rate: float) -> tuple:
        """(GroundTruth, /ground_truth/odom records) of one repeat, computed once."""
        key = (name, json.dumps(plain(params), sort_keys=True), seed, k, rate)
        hit = self._entries.get(key)
        if hit is None:
            truth = scenario_truth(name, params, seed, k)
            hit = (truth, truth_records(truth, rate))
            while len(self._entries) >= self.size:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = hit
        return hit


# The truths of the batch worker this process is (a forked worker starts with a copy of its parent's).
WORKER_TRUTHS = TruthCache()


def simulate_run(spec: SimRunSpec, out, truths: TruthCache | None = None) -> RunOutcome:
    """Execute one simulated run (or skip it when its directory already holds it).

    ``truths``: where the scenario truths come from (default: this process's ``WORKER_TRUTHS``).
    """
    path = spec.directory(out)
    info = spec.info()
    if existing_run(path, info):
        return RunOutcome(spec.label, str(path), True, {})
    remove_stale_temporaries(path)
    truths = WORKER_TRUTHS if truths is None else truths
    truth, truth_messages = truths.get(spec.scenario, spec.scenario_params, spec.seed, spec.k,
                                       spec.ground_truth_rate)
    keys = (spec.seed, *spec.run_id.seed_keys)
    gps = load_gps(spec.gps, sensor_seed(*keys, "gps")).sample(truth)
    imu = load_imu(spec.imu, spec.judge, sensor_seed(*keys, "imu")).sample(truth)
    # The sensor messages serialised in bulk: the judge decodes these bytes, the bag stores them.
    sensors = in_receive_order(sensor_bag_records(gps, imu))
    start = start_stamp_ns(truth)
    initial_state = spec.judge.start_state(truth, start)
    result = judge_run(spec.judge, sensors, spec.timing, initial_state)
    result.check_sensors(str(path))  # a run that lost a whole sensor is not written
    check_divergence(result, truth, str(path), lambda: model_imu_findings(spec.judge, spec.imu))
    if initial_state is not None:
        info = info.with_initial_state(start, initial_state)
    records = in_receive_order(sensors + judge_records(result) + truth_messages)
    counts = write_run(path, records, info.with_outcome(result), spec.storage)
    return RunOutcome(spec.label, str(path), False, counts, truth.duration)
