"""Speed of a series from its velocity vectors (see options.SPEED_EXPRESSIONS)."""
from __future__ import annotations

import numpy as np

from .. import rotations
from ..errors import UserError


def speed_from_velocity(velocity: np.ndarray, expression: str, orientation=None,
                        where: str = "") -> np.ndarray:
    """Speeds (N,) in m/s from velocities (N, 3) as stored in the message.

    horizontal = sqrt(vx^2 + vy^2); x, y; neg_x = -vx; abs_x = |vx|; abs_y = |vy|;
    world_x = x component of R(q) v, the velocity rotated from the child (body) frame into the pose
    frame with the orientation quaternions ``orientation`` (N, 4) xyzw (nav_msgs/Odometry only).
    """
    v = np.asarray(velocity, dtype=float).reshape(-1, 3)
    if expression == "horizontal":
        return np.hypot(v[:, 0], v[:, 1])
    if expression == "x":
        return v[:, 0].copy()
    if expression == "y":
        return v[:, 1].copy()
    if expression == "neg_x":
        return -v[:, 0]
    if expression == "abs_x":
        return np.abs(v[:, 0])
    if expression == "abs_y":
        return np.abs(v[:, 1])
    if expression == "world_x":
        if orientation is None:
            raise UserError(f"{where}: speed 'world_x' needs a nav_msgs/Odometry topic (pose orientation)")
        return np.asarray(rotations.rotate(np.asarray(orientation, dtype=float).reshape(-1, 4), v))[:, 0]
    raise UserError(f"{where}: unknown speed expression {expression!r}")
