"""Static TF strings "PARENT CHILD x y z yaw pitch roll": the one parser (robot-side: Python 3.8, stdlib).

The order is static_transform_publisher's positional one (metres, radians).  The launch files (the
tf2_ros publishers they start), the noise nodes' IMU mounting and the offline judge
(``judge.tf.parse_static_tf`` wraps this parser) all read a TF string here, so a string the robot
accepts is one the judge accepts, and the other way round.  Checks: eight fields, six finite
numbers, valid tf2 frame ids (non-empty, no leading '/': tf2 rejects those), parent ≠ child.
"""
from __future__ import annotations

import math
from typing import List, NamedTuple, Optional, Sequence, Tuple

from .errors import UserError


class StaticTf(NamedTuple):
    """One parsed static TF: T(parent←child) given as translation and yaw, pitch, roll (tf2 setRPY)."""

    parent: str
    child: str
    x: float
    y: float
    z: float
    yaw: float
    pitch: float
    roll: float

    @property
    def translation(self) -> Tuple[float, float, float]:
        return (self.x, self.y, self.z)

    @property
    def rpy(self) -> List[float]:
        """[roll, pitch, yaw]: the order of an IMU model's ``mounting_rpy``."""
        return [self.roll, self.pitch, self.yaw]


def valid_frame(frame: str) -> bool:
    """tf2 rejects empty frame ids and ids with a leading slash."""
    return bool(frame) and not frame.startswith("/")


def parse_static_tf(spec: str) -> StaticTf:
    """Parse ``"PARENT CHILD x y z yaw pitch roll"``; a UserError (one line) names the string."""
    fields = str(spec).split()
    if len(fields) != 8:
        raise UserError(
            f"static TF {spec!r}: expected 'PARENT CHILD x y z yaw pitch roll' (8 fields), got {len(fields)}"
        )
    parent, child = fields[0], fields[1]
    try:
        numbers = [float(value) for value in fields[2:]]
    except ValueError:
        raise UserError(f"static TF {spec!r}: x y z yaw pitch roll must be numbers") from None
    if not all(math.isfinite(v) for v in numbers):
        raise UserError(f"static TF {spec!r}: x y z yaw pitch roll must be finite")
    for frame in (parent, child):
        if not valid_frame(frame):
            raise UserError(f"static TF {spec!r}: frame {frame!r} is not a valid tf2 frame id "
                            "(no leading '/')")
    if parent == child:
        raise UserError(f"static TF {spec!r}: parent and child frame are the same")
    x, y, z, yaw, pitch, roll = numbers
    return StaticTf(parent, child, x, y, z, yaw, pitch, roll)


def parse_static_tf_list(text: str, where: str) -> Optional[Tuple[str, ...]]:
    """A launch argument or node parameter holding several static TFs: "" → None (the default applies),
    "none" → no static TF, else the ';'-separated TF strings, each checked (a UserError names ``where``)."""
    text = str(text).strip()
    if not text:
        return None
    if text.lower() == "none":
        return ()
    tfs = tuple(part.strip() for part in text.split(";") if part.strip())
    for part in tfs:
        try:
            parse_static_tf(part)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
    return tfs


def static_tf_list_text(static_tfs: Sequence[str]) -> str:
    """The text ``parse_static_tf_list`` reads back as ``static_tfs`` ("none" for no TF)."""
    return ";".join(static_tfs) if static_tfs else "none"


def mounting_rpy(static_tfs: Sequence[str], child_frame: str,
                 parent_frame: str = "base_link") -> Optional[List[float]]:
    """[roll, pitch, yaw] of the static TF ``parent_frame``→``child_frame`` (None when there is none):
    the IMU model's ``mounting_rpy``, so simulated data is expressed in the frame the TF describes."""
    for text in static_tfs:
        tf = parse_static_tf(text)
        if tf.parent == parent_frame and tf.child == child_frame:
            return tf.rpy
    return None
