"""What evaluate.launch.py replays: the offline replay's streams, read ahead from the bag file.

A recorded bag holds its whole ground truth, so nothing has to be streamed live: the sensor streams
the judge gets are computed before the player starts, by the offline replay's own functions
(``replay.offline``: the same truth, the same ``window_ns``, the same seeds, the same message
bytes), and ``ros/replay_node`` publishes each one when the player's sim clock reaches its receive
time.  So in every mode the judge gets its /fix and /imu as the real sensors delivered them (same
rates, the real receive times, the real IMU stamps), only in the truth window, and a ROS run of a
bag differs from the offline run of the same bag only by the judge.

- ``real``: the real /fix and /imu, cropped to ``window_ns`` (as the offline real run);
- ``sim_imu`` / ``sim_gps`` / ``sim_both``: the replaced stream(s) simulated (the IMU at the real
  IMU's header stamps and receive times, the GPS at the real receiver's rate and datum), the other
  real and cropped;
- always the ``/ground_truth/odom`` of the offline run (the INS truth at 50 Hz).

The run is named, seeded and recorded exactly as the offline replay names, seeds and records it
(``runs``: ``DIR/<scenario>/<run>``, ``OUT/<side>/<variant>/<scenario>/<k>``, ``RunInfo``).

This module needs the offline stack (rosbags, Python >= 3.10): evaluate.launch.py runs on a desktop.
Its imports are inside the functions so that the robot-side ``node`` package stays importable on
Python 3.8.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..art import EKF_CONFIG, NAVSAT_CONFIG, TOPICS
from ..errors import UserError
from ..resources import config_path
from ..runs import name_real_bag

MODES = ("sim_imu", "sim_gps", "sim_both", "real")
RECORDED_BY = "recorder_node (ros2 launch sim2real_eval evaluate.launch.py)"


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
    """One replay: the offline spec, the real bag's streams, and which run of the bag this is."""

    spec: Any       # replay.offline.ReplaySpec
    streams: Any    # replay.offline.RealStreams
    sim: Any        # replay.offline.Replacement, or None for the real run

    @property
    def run(self):
        """The run's identity (``runs.RunId``): the offline replay's run of this bag and mode."""
        return self.spec.run_id(self.sim)

    def info(self):
        """run.yaml (``runs.RunInfo``): the offline replay's record of this run + who recorded it."""
        return dataclasses.replace(self.spec.run_info(self.streams, self.sim), recorded_by=RECORDED_BY)

    def directory(self, runs_root) -> Path:
        """Where the offline replay writes this run under ``runs_root``."""
        return self.run.directory(runs_root)

    def records(self) -> List[Tuple[int, str, bytes]]:
        """(receive ns, topic, CDR bytes) of everything the judge and the recorder get, as the
        offline run writes them: /fix, /imu and /ground_truth/odom."""
        from . import offline

        sensors = offline.sensor_streams(self.spec, self.streams, self.sim)
        truth = self.streams.truth_records(self.spec.ground_truth_rate)
        out = [(int(r[0]), r[1], bytes(r[3])) for r in sensors]  # the bag's bytes
        out += [(int(r[0]), r[1], bytes(r[3])) for r in truth]
        return sorted(out, key=lambda r: r[0])


def load_replay(bag: str, mode: str, gps_model: str, imu_model: str, seed: int, scenario: str = "",
                k: Optional[int] = None, truth_source: str = "auto", ekf_config: str = "",
                navsat_config: str = "", storage: str = "sqlite3",
                static_tfs: Optional[Sequence[str]] = None, notice: Optional[Callable] = None) -> Replay:
    """Read the real bag (checked: topics, types, stamps, truth) into a Replay; one-line UserErrors.

    The bag is named by the one rule of real bags (``runs.name_real_bag``: ``DIR/<scenario>/<run>``);
    ``scenario`` / ``k`` override it.  ``static_tfs``: the judge's; None = the bag's default, as the
    offline replay decides it (``bags.layout``: the ART TFs for a bag in the ART layout, ``notice(text)``
    told; none otherwise).  A replaced IMU publishes in the real IMU's frame, as offline.
    """
    from ..bags.layout import peek_real_bag
    from ..judge.config import JudgeConfig, judge_parts
    from .real_bag import Replacement, ReplaySpec, check_frames, read_real_streams

    named = name_real_bag(bag, scenario or None, None if k is None or k < 0 else int(k))
    ekf = str(Path(ekf_config or config_path(EKF_CONFIG)).resolve())
    navsat = str(Path(navsat_config or config_path(NAVSAT_CONFIG)).resolve())
    for name, path in (("ekf_config", ekf), ("navsat_config", navsat)):
        if not Path(path).is_file():
            raise UserError(f"{name}: {path} does not exist")
    base_link = judge_parts(ekf, navsat, ())[0].base_link_frame
    default_tfs, real_imu = peek_real_bag(named.path, TOPICS["imu"], TOPICS["gps"], base_link,
                                          by_layout=static_tfs is None, notice=notice,
                                          override="static_tfs:= overrides")
    tfs = default_tfs if static_tfs is None else tuple(static_tfs)
    imu_frame = None if real_imu is None else str(real_imu.header.frame_id)
    spec = ReplaySpec.of(named, JudgeConfig(ekf, navsat, tfs), seed=int(seed), truth_source=truth_source,
                         storage=storage, imu_frame=imu_frame)
    replace = replaced(mode, gps_model, imu_model)
    streams = read_real_streams(spec)
    check_frames(spec, streams, hint="static_tfs:=\"{base} {frame} x y z yaw pitch roll\" (';'-separated)")
    return Replay(spec, streams, Replacement(replace) if replace else None)
