"""What evaluate.launch.py replays: the offline replay's streams, read ahead from the bag file.

A recorded bag holds its whole ground truth, so nothing has to be streamed live: the sensor streams
the judge gets are computed before the player starts, by the offline replay's own functions
(``pipeline.replay``: the same truth, the same ``window_ns``, the same seeds, the same message
bytes), and ``ros/replay_node`` publishes each one when the player's sim clock reaches its receive
time.  So in every mode the judge gets its /fix and /imu as the real sensors delivered them (same
rates, the real receive times, the real IMU stamps), only in the truth window, and a ROS run of a
bag differs from the offline run of the same bag only by the judge.

- ``real``: the real /fix and /imu, cropped to ``window_ns`` (as the offline real run);
- ``sim_imu`` / ``sim_gps`` / ``sim_both``: the replaced stream(s) simulated (the IMU at the real
  IMU's header stamps and receive times, the GPS at the real receiver's rate and datum), the other
  real and cropped;
- always the ``/ground_truth/odom`` of the offline run (the INS truth at 50 Hz).

This module needs the offline stack (rosbags, Python >= 3.10): evaluate.launch.py runs on a desktop.
Its imports are inside the functions so that the robot-side ``node`` package stays importable on
Python 3.8.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..errors import UserError

MODES = ("sim_imu", "sim_gps", "sim_both", "real")
# Run directories named like the reference data set: DIR/<scenario>/run_<k>/.
RUN_DIR = re.compile(r"^run_(\d+)$")


def run_key(bag: str) -> Tuple[str, int]:
    """(scenario, k) of a real bag from its path: ``DIR/<scenario>/run_<k>`` → (scenario, k), any
    other bag → (its directory name, 0)."""
    path = Path(bag).expanduser().resolve()
    match = RUN_DIR.match(path.name)
    if match:
        return path.parent.name, int(match.group(1))
    return path.name.split(".")[0], 0


def replaced(mode: str, gps_model: str, imu_model: str) -> Dict[str, str]:
    """The offline ``--replace`` of a mode: which streams are simulated, by which model."""
    if mode not in MODES:
        raise UserError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    out = {}
    if mode in ("sim_gps", "sim_both"):
        out["gps"] = gps_model
    if mode in ("sim_imu", "sim_both"):
        out["imu"] = imu_model
    return out


@dataclass
class Replay:
    """One replay: the offline spec, the real bag's streams, and the run.yaml of the run."""

    spec: Any       # pipeline.replay.ReplaySpec
    streams: Any    # pipeline.replay.RealStreams
    mode: str

    @property
    def side(self) -> str:
        return "real" if self.mode == "real" else "sim"

    @property
    def variant(self) -> str:
        return "real" if self.mode == "real" else self.spec.variant

    def record(self) -> Dict[str, Any]:
        """run.yaml: the offline replay's record of this run, plus who recorded it."""
        record = (self.spec.real_record_for(self.streams) if self.mode == "real"
                  else self.spec.sim_record_for(self.streams))
        record["recorded_by"] = "recorder_node (ros2 launch sim2real_eval evaluate.launch.py)"
        record["judge_implementation"] = "robot_localization (ROS 2)"
        return record

    def directory(self, runs_root) -> Path:
        """Where the offline replay would write this run under ``runs_root``."""
        return (self.spec.real_directory(runs_root) if self.mode == "real"
                else self.spec.sim_directory(runs_root))

    def records(self) -> List[Tuple[int, str, bytes]]:
        """(receive ns, topic, CDR bytes) of everything the judge and the recorder get, as the
        offline run writes them: /fix, /imu and /ground_truth/odom."""
        from ..pipeline import replay as offline

        spec, streams = self.spec, self.streams
        imu = offline.simulated_imu(spec, streams) if "imu" in spec.replace else streams.imu
        gps = offline.simulated_gps(spec, streams) if "gps" in spec.replace else streams.gps
        truth = offline.truth_records(streams.truth, spec.ground_truth_rate)
        out = [(int(r[0]), r[1], bytes(r.raw)) for r in gps + imu]
        out += [(int(r[0]), r[1], bytes(r[3])) for r in truth]
        return sorted(out, key=lambda r: r[0])


def load_replay(bag: str, mode: str, gps_model: str, imu_model: str, seed: int, scenario: str = "",
                k: Optional[int] = None, truth_source: str = "auto", ekf_config: str = "",
                navsat_config: str = "", storage: str = "sqlite3") -> Replay:
    """Read the real bag (checked: topics, types, stamps, truth) into a Replay; one-line UserErrors."""
    from ..art import ART_STATIC_TFS, EKF_CONFIG, NAVSAT_CONFIG
    from ..pipeline.replay import ReplaySpec, read_real_streams
    from ..pipeline.run import JudgeConfig
    from ..pipeline.study import NAME_PATTERN
    from ..resources import config_path

    default_scenario, default_k = run_key(bag)
    scenario = scenario or default_scenario
    if not NAME_PATTERN.match(scenario):
        raise UserError(f"scenario {scenario!r}: use letters, digits, '_', '.', '+', '-' "
                        "(it names a directory)")
    k = default_k if k is None or k < 0 else int(k)
    ekf = str(Path(ekf_config or config_path(EKF_CONFIG)).resolve())
    navsat = str(Path(navsat_config or config_path(NAVSAT_CONFIG)).resolve())
    for name, path in (("ekf_config", ekf), ("navsat_config", navsat)):
        if not Path(path).is_file():
            raise UserError(f"{name}: {path} does not exist")
    spec = ReplaySpec(bag=str(Path(bag).expanduser()), replace=replaced(mode, gps_model, imu_model),
                      judge=JudgeConfig(ekf, navsat, ART_STATIC_TFS), scenario=scenario, k=k, seed=int(seed),
                      truth_source=truth_source, storage=storage)
    return Replay(spec, read_real_streams(spec), mode)
