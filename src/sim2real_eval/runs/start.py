"""Moving starts (issue 18): the judge started from the truth, and the warm-up the scorer skips.

A window of a long drive starts while the car moves, but robot_localization starts from its
``initial_state`` parameter (zeros by default): the estimate then spends its first moments catching up
with a speed it was never told, and that start-up transient is scored as if it were the sensors'.  Two
remedies, both recorded in every run's run.yaml:

- **initial_state: truth** — each run's ekf_node gets ``initial_state`` (the 15-value parameter a ROS
  user would set in the ekf YAML) from the ground truth at the run's first instant (the window's start:
  the first header stamp judged lies within one IMU period after it).  The values follow the state's
  frames (docs/judge.md, "Moving starts"): position and Euler angles in the EKF's world frame, linear
  and angular velocity and linear acceleration in base_link.  The world frame is ``odom``, which the ART
  navsat setup (``use_odometry_yaw``) treats as ENU-aligned, so the yaw is the truth's ENU heading and
  the position the truth's ENU position (about the bag's datum).  In two_d_mode the state is the planar
  one: roll = pitch = 0, the velocity and acceleration rotated by the heading only, vz = az = 0, the yaw
  rate the truth's rate about the vertical.  The first measurement then overwrites only the entries it
  measures, as robot_localization's ``initial_state`` does.
- **warm-up** — seconds at the start of every run that the scorer leaves out (``ScoreOptions.warmup_s``;
  the judge-noise floor is scored with the same options, so it skips them too).

Importing this module is cheap; numpy loads with the truth.
"""
from __future__ import annotations

import dataclasses
import math

from ..errors import UserError

INITIAL_STATES = ("config", "truth")  # config: the ekf YAML's initial_state (Humble: zeros); truth: below


def check_initial_state(value, where: str) -> str:
    if value not in INITIAL_STATES:
        raise UserError(f"{where}: expected one of {', '.join(INITIAL_STATES)}, got {value!r}")
    return value


def check_warmup(value, where: str) -> float:
    """A warm-up in seconds: a finite number >= 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{where}: expected seconds (a number >= 0), got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds < 0:
        raise UserError(f"{where}: expected seconds (a number >= 0), got {value!r}")
    return seconds


def initial_state_from_truth(truth, stamp_ns: int, two_d_mode: bool):
    """robot_localization's 15-value ``initial_state`` (x y z roll pitch yaw vx vy vz vroll vpitch vyaw ax
    ay az) from ``truth`` (``truth.GroundTruth``: ENU, body rates, specific force) at header stamp
    ``stamp_ns`` (inside the truth span).  See the module docstring for the frames."""
    import numpy as np

    from .. import rotations
    from ..stamps import ns_to_seconds
    from ..truth import GRAVITY

    seconds = ns_to_seconds(np.array([stamp_ns], dtype=np.int64))
    at = truth.interpolate(np.clip(seconds, truth.t[0], truth.t[-1]))
    q, position, velocity = at.orientation[0], at.position[0], at.velocity[0]
    body_to_world = rotations.to_matrix(q)
    world_acceleration = body_to_world @ at.specific_force[0] - np.array([0.0, 0.0, GRAVITY])
    roll, pitch, yaw = (float(v) for v in rotations.to_rpy(q))
    state = np.zeros(15)
    if two_d_mode:  # the planar state two_d_mode keeps: heading-only frame, out-of-plane entries 0
        heading = rotations.to_matrix(rotations.from_yaw(yaw))
        state[0:2] = position[:2]
        state[5] = yaw
        state[6:8] = (heading.T @ velocity)[:2]
        state[11] = (body_to_world @ at.angular_velocity[0])[2]
        state[12:14] = (heading.T @ world_acceleration)[:2]
    else:
        state[0:3] = position
        state[3:6] = roll, pitch, yaw
        state[6:9] = body_to_world.T @ velocity
        state[9:12] = at.angular_velocity[0]
        state[12:15] = body_to_world.T @ world_acceleration
    return state


def add_arguments(parser, default_help: str = "config") -> None:
    """``--initial-state`` and ``--warmup`` (replay, demo; the file's ``judge:`` keys otherwise)."""
    parser.add_argument("--initial-state", choices=INITIAL_STATES, default=None,
                        help="start ekf_node from 'truth' (its initial_state = each run's ground truth at "
                             "the run's first instant: for windows that start while moving) or from the ekf "
                             f"YAML's 'config' (default: {default_help})")
    parser.add_argument("--warmup", type=float, default=None, metavar="SECONDS",
                        help="seconds at the start of every run the scorer leaves out (the judge's "
                             "start-up), recorded in run.yaml; the noise floor skips them too (default: "
                             f"{default_help})")


def start_stamp_ns(truth) -> int:
    """A run's first instant: the first header stamp inside the truth span (``truth.truth_window_ns``);
    the judge's ``initial_state: truth`` is the truth there."""
    from ..truth import truth_window_ns

    return truth_window_ns(truth)[0]


def from_args(args, judge):
    """``judge`` (``judge.config.JudgeConfig``) with ``--initial-state`` / ``--warmup`` applied."""
    changes = {}
    if getattr(args, "initial_state", None) is not None:
        changes["initial_state"] = check_initial_state(args.initial_state, "--initial-state")
    if getattr(args, "warmup", None) is not None:
        changes["warmup_s"] = check_warmup(args.warmup, "--warmup")
    return dataclasses.replace(judge, **changes) if changes else judge


__all__ = ["INITIAL_STATES", "add_arguments", "check_initial_state", "check_warmup", "from_args",
           "initial_state_from_truth", "start_stamp_ns"]
