"""Which static TFs a real bag gets when none are given: the ART vehicle's (``art.ART_STATIC_TFS``) for a
bag in the ART layout (rules 1-4 of ``art.py``), none otherwise, and the one line every command prints
when it applies them.  Every path that judges a real bag decides it here: the offline commands
(``service``), the demo, and evaluate.launch.py (``replay.read_ahead``).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..art import (
    ART_IMU_UP,
    ART_INS_TYPES,
    ART_MOUNT_TOLERANCE_DEG,
    ART_STATIC_TFS,
    BASE_FRAME,
    GPS_FRAME,
    IMU_FRAME,
)
from ..errors import UserError
from .reader import open_bag


def art_layout(frames: dict, base_link_frame: str, topic_types: Iterable[str] = ()) -> bool:
    """The ART vehicle's layout (``art.py``, rules 1-3): the judge's robot frame is ``base_link``, the
    sensors are in the frames ``imu``/``gps`` that the ART static TFs mount on it (or in base_link
    itself), and the bag carries the ART INS (an sbg_driver topic of ``art.ART_INS_TYPES``; ``topic_types``:
    the bag's message types).  Rule 4, the IMU's gravity direction, is ``art_mount_problem``'s."""
    others = set(frames) - {BASE_FRAME, ""}  # an empty frame_id is base_link to robot_localization
    return (base_link_frame == BASE_FRAME and bool(others) and others <= {IMU_FRAME, GPS_FRAME}
            and any(msgtype in ART_INS_TYPES for msgtype in topic_types))


def mean_specific_force(reader, topic: str, count: int = 200):
    """Mean linear acceleration (m/s², the IMU's frame) of the first ``count`` messages of ``topic`` that
    provide it (covariance[0] ≠ −1, finite), or None: at rest and on average on a drive it is gravity's
    reaction, so its direction is the IMU's "up"."""
    import numpy as np

    if topic not in reader.topics or reader.topics[topic].count == 0:
        return None
    values = []
    for message in reader.messages([topic]):
        msg = message.msg
        vector = [msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z]
        if abs(float(msg.linear_acceleration_covariance[0]) + 1.0) >= 1e-9 and np.isfinite(vector).all():
            values.append(vector)
        if len(values) >= count:
            break
    if not values:
        return None
    values = np.asarray(values, dtype=float)
    scale = float(np.abs(values).max())   # scaled: a hostile 1e308 must not overflow the sum
    return np.mean(values / scale, axis=0) * scale if scale > 0 else np.zeros(3)


def art_mount_problem(specific_force) -> str:
    """Why an IMU in the ART frames is not mounted like the ART one (rule 4 of ``art.py``), or "": its mean
    specific force must lie within ``ART_MOUNT_TOLERANCE_DEG`` of ``ART_IMU_UP``."""
    import numpy as np


    if specific_force is None:
        return ""  # no accelerometer data: nothing contradicts the frames
    specific_force = np.asarray(specific_force, dtype=float)
    scale = float(np.abs(specific_force).max())
    if not (scale > 0 and np.isfinite(scale)):
        return ""
    unit = specific_force / scale        # scaled first: the norm of (1e308, 0, 0) would overflow
    unit = unit / np.linalg.norm(unit)
    angle = float(np.degrees(np.arccos(np.clip(np.dot(unit, ART_IMU_UP), -1.0, 1.0))))
    if angle <= ART_MOUNT_TOLERANCE_DEG:
        return ""
    axis = "xyz"[int(np.argmax(np.abs(specific_force)))]
    sign = "+" if specific_force["xyz".index(axis)] > 0 else "-"
    shown = ", ".join(f"{v:.2f}" if abs(v) < 1e6 else f"{v:.3g}" for v in specific_force)
    return (f"its IMU's mean specific force ({shown}) m/s² points along {sign}{axis}, {angle:.0f}° from the "
            f"+x axis that the ART mount (base_link->imu yaw π, pitch −π/2) turns up")


CLI_OVERRIDE = "--static-tf or the file's judge.static_tfs overrides"


def default_static_tfs(reader, frames: dict, base_link_frame: str, imu_topics: Sequence[str], where: str,
                       notice: Callable | None = None, override: str = CLI_OVERRIDE) -> tuple:
    """The static TFs a command applies to a bag when none are given: ``art.ART_STATIC_TFS`` for a bag in
    the ART layout (rules 1-4 of ``art.py``; ``notice(text)`` is told, one line), else none.  A bag whose
    frames and INS are the ART layout but whose IMU is mounted otherwise is a UserError naming it."""
    types = [info.msgtype for info in reader.topics.values()]
    seen = {topic for topics in frames.values() for topic in topics}
    if not art_layout(frames, base_link_frame, types) or not set(imu_topics) <= seen:
        return ()  # (an IMU topic without messages: not the ART layout; the judge names what is missing)
    for topic in (t for t in imu_topics if t in frames.get(IMU_FRAME, [])):
        problem = art_mount_problem(mean_specific_force(reader, topic))
        if problem:
            raise UserError(f"{where}: frames 'imu'/'gps' and the sbg_driver INS look like the ART "
                            f"vehicle, but {problem} (topic {topic}): the ART static TFs would rotate it "
                            f"wrongly; give the IMU's mount with --static-tf "
                            f"\"{base_link_frame} imu x y z yaw pitch roll\"")
    if notice is not None:
        notice(art_static_tfs_note([where], override))
    return ART_STATIC_TFS


def art_static_tfs_note(bags: Sequence[str], override: str = CLI_OVERRIDE) -> str:
    """The one line a command says when it applied the ART static TFs to ``bags`` by default."""
    tfs = " and ".join(f'"{tf}"' for tf in ART_STATIC_TFS)
    more = f" (and {len(bags) - 1} more bag(s))" if len(bags) > 1 else ""
    return (f"{bags[0]}{more}: ART layout (IMU/GPS in frames 'imu'/'gps', sbg_driver INS, IMU x axis up): "
            f"applied the ART static TFs {tfs} ({override})")


def peek_real_bag(path, imu_topic: str, gps_topic: str, base_link_frame: str, msg_path=None,
                  by_layout: bool = True, notice: Callable | None = None,
                  override: str = CLI_OVERRIDE) -> tuple:
    """(the bag's default static TFs — ``default_static_tfs``, () unless ``by_layout`` —, its first
    ``imu_topic`` message or None), from the first IMU and GPS messages of the real bag at ``path``.
    ``notice(text)``: told when the ART TFs are applied."""
    with open_bag(path, msg_path=msg_path) as reader:
        check_types(reader, path, [(imu_topic, "sensor_msgs/msg/Imu"),
                                   (gps_topic, "sensor_msgs/msg/NavSatFix")])
        first, frames = first_messages(reader, (imu_topic, gps_topic))
        tfs = (default_static_tfs(reader, frames, base_link_frame, [imu_topic], str(path), notice, override)
               if by_layout else ())
    return tfs, first.get(imu_topic)


def check_types(reader, path, expected) -> None:
    """A one-line UserError when a topic of ``expected`` ([(topic, msgtype)]) is in the open bag ``reader``
    with another type (``--imu-topic /fix`` must not reach code that reads an Imu's fields)."""
    for topic, msgtype in expected:
        info = reader.topics.get(topic)
        if info is not None and info.msgtype != msgtype:
            raise UserError(f"{path}: topic {topic} has type {info.msgtype}, expected {msgtype}")


def first_messages(reader, topics) -> tuple:
    """({topic: its first message}, {frame_id: [topics]}) of those of ``topics`` that hold messages in the
    open bag ``reader`` (read up to the last of those first messages, no further)."""
    present = [t for t in dict.fromkeys(topics) if t in reader.topics and reader.topics[t].count > 0]
    first: dict = {}
    if present:
        for message in reader.messages(present):
            first.setdefault(message.topic, message.msg)
            if len(first) == len(present):
                break
    frames: dict = {}
    for topic, msg in first.items():
        frames.setdefault(str(msg.header.frame_id), []).append(topic)
    return first, frames
