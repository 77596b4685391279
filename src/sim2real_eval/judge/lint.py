"""Start-up lint of an IMU's covariances as ekf_node will fuse them (issue 18, docs/judge.md "Divergence").

robot_localization rotates each IMU covariance into base_link with the static TF (R·C·Rᵀ; the
orientation's by the mounting yaw only) and then, in two_d_mode, sets the seven out-of-plane variances
(z, roll, pitch, vz, vroll, vpitch, az) to 1e-6 but keeps their off-diagonal entries (humble 3.5.2;
3.5.4 zeroes them, #942).  An uneven IMU covariance (every Chrono preset: accelerometer σ 0.3, 0.3,
0.01 m/s²) under a mount a little off the axes (pitch −1.5608 instead of −π/2) gets an ax–az cross
term of −9.0e-4 that this overwrite leaves beside variances 1.1e-4 and 1e-6: the matrix the filter
fuses is no covariance (eigenvalue −8.5e-4).  Its innovation covariance S is then indefinite, so a
Mahalanobis distance νᵀS⁻¹ν can be negative — it passes every rejection gate — and the gain has the
wrong sign, pushing the state away from the measurement.  With the ART 0.8σ gates only those updates
get through, and the filter's acceleration and speed run away (51 m/s on a 1 m/s drive).

``imu_covariance_findings`` prepares one message per IMU part through the judge's own callbacks
(``EkfNode.handle``: the same rotation and forceTwoD as a run) and reports each prepared covariance
that is not positive semi-definite, one line each.  Nothing here changes the judge's maths.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from ..bags.messages import default_message
from .ekf_node import EkfNode
from .params import absolute_topic
from .state import STATE_SIZE, TWO_D_INDICES
from .tf import TfBuffer

STATE_NAMES = ("x", "y", "z", "roll", "pitch", "yaw", "vx", "vy", "vz", "vroll", "vpitch", "vyaw",
               "ax", "ay", "az")
# The message covariance of each IMU part (sensor_msgs/Imu field names), in imuCallback's order.
IMU_PARTS = ("orientation_covariance", "angular_velocity_covariance", "linear_acceleration_covariance")
# Relative tolerance of the eigenvalue test: rounding of R·C·Rᵀ is ~1e-16 of the largest entry.
TOLERANCE = 1e-12


class InvalidCovariance(NamedTuple):
    """A prepared IMU covariance that is not positive semi-definite (see the module docstring)."""

    sensor: str         # "imu0"
    topic: str          # "/imu"
    part: str           # one of IMU_PARTS
    min_eigenvalue: float
    pair: tuple         # (state i, state j): the 2×2 block that violates it most
    values: tuple       # (C_ii, C_jj, C_ij) of that block as fused

    def describe(self, frame: str, base_link: str, two_d_mode: bool) -> str:
        i, j = (STATE_NAMES[k] for k in self.pair)
        c_ii, c_jj, c_ij = self.values
        forced = [STATE_NAMES[k] for k in self.pair if two_d_mode and k in TWO_D_INDICES]
        why = (f"two_d_mode set the {', '.join(forced)} variance to 1e-6 and kept the cross term"
               if forced else "the cross term exceeds its variances")
        return (f"{self.sensor} ({self.topic}): {self.part} rotated from frame {frame!r} into {base_link!r} "
                f"is no covariance once fused: {i}–{j} covariance {c_ij:.3g} against variances {c_ii:.3g} "
                f"and {c_jj:.3g} ({why}), smallest eigenvalue {self.min_eigenvalue:.3g}; robot_localization "
                "3.5.2 fuses it as it is: negative Mahalanobis distances pass every rejection gate and "
                "wrong-signed gains push the state away from the IMU, so the filter can diverge; give an "
                "isotropic IMU covariance or the exact mount (docs/judge.md, 'Divergence')")


def _imu_message(frame_id: str, stamp_s: int, part: str, covariance):
    """A sensor_msgs/Imu object in ``frame_id`` providing only ``part`` (the others −1: not provided)."""
    msg = default_message("sensor_msgs/msg/Imu")
    msg.header.frame_id = frame_id
    msg.header.stamp.sec = int(stamp_s)
    msg.orientation.w = 1.0
    msg.linear_acceleration.z = 9.80665
    for name in IMU_PARTS:
        absent = np.array([-1.0] + [0.0] * 8)  # robot_localization's "not provided"
        setattr(msg, name, np.asarray(covariance, dtype=float).reshape(9) if name == part else absent)
    return msg


def _fused(covariance: np.ndarray, update: np.ndarray, z: np.ndarray) -> tuple:
    """(indices, R) as Ekf::correct takes them: flagged finite entries, |diagonal| floored at 1e-9."""
    index = [i for i in range(STATE_SIZE) if update[i] and np.isfinite(z[i])]
    r = covariance[np.ix_(index, index)].copy()
    diagonal = np.maximum(np.abs(np.diag(r)), 1e-9)
    r[np.diag_indices_from(r)] = diagonal
    return index, r


def _worst_pair(index: List[int], r: np.ndarray) -> tuple:
    """The 2×2 principal block of ``r`` with the most negative determinant → ((i, j), (C_ii, C_jj, C_ij))."""
    best, found = np.inf, ((index[0], index[0]), (r[0, 0], r[0, 0], r[0, 0]))
    for a in range(len(index)):
        for b in range(a + 1, len(index)):
            det = r[a, a] * r[b, b] - r[a, b] ** 2
            if det < best:
                best, found = det, ((index[a], index[b]), (r[a, a], r[b, b], r[a, b]))
    return found


class Unresolved(NamedTuple):
    """An IMU frame no static TF connects to base_link: its messages are dropped, nothing is checked."""

    sensor: str
    topic: str
    frame: str


def invalid_imu_covariances(ekf_params, static_tfs: Sequence, frame_id: str,
                            covariances: Dict[str, object]) -> List:
    """The IMU covariances that ekf_node would fuse as a matrix that is not positive semi-definite.

    ``static_tfs``: ``judge.StaticTransform``s; ``frame_id``: the IMU messages' frame; ``covariances``:
    {part: 9 values row-major} for the parts of ``IMU_PARTS`` to check (−1 first = not provided: skipped).
    Every ``imuN`` input of ``ekf_params`` is checked with its own configuration, through the judge's
    callbacks (rotation, masks, forceTwoD).  A frame no TF connects to base_link gives one ``Unresolved``
    per input (the judge drops those messages).
    """
    found: list = []
    for sensor in ekf_params.sensors:
        if sensor.kind != "imu":
            continue
        topic = absolute_topic(sensor.topic)
        one = dataclasses.replace(ekf_params, sensors=[sensor])
        for part, covariance in covariances.items():
            values = np.asarray(covariance, dtype=float).reshape(9)
            if abs(values[0] + 1.0) < 1e-9 or not np.isfinite(values).all():
                continue
            node = EkfNode(one, TfBuffer(static_tfs))
            for stamp in (1, 2):  # two messages: a differential input prepares from its second
                node.handle(topic, _imu_message(frame_id, stamp, part, values))
            if node.dropped.get("tf_unavailable"):
                found.append(Unresolved(sensor.name, topic, frame_id))
                break
            for m in node.measurements:
                if m.stamp_ns != 2_000_000_000:
                    continue
                index, r = _fused(m.covariance, m.update, m.z)
                if len(index) < 2:
                    continue
                smallest = float(np.linalg.eigvalsh(r)[0])
                if smallest < -TOLERANCE * float(np.max(np.abs(r))):
                    pair, block = _worst_pair(index, r)
                    found.append(InvalidCovariance(sensor.name, topic, part, smallest, pair,
                                                   tuple(float(v) for v in block)))
    return found


def imu_covariance_findings(ekf_params, static_tfs: Sequence, frame_id: str, covariances: Dict[str, object],
                            where: Optional[str] = None, unresolved: bool = True) -> List[str]:
    """``invalid_imu_covariances`` as one line each (``where`` prefixes them: the IMU's source);
    ``unresolved``: also a line for a frame no TF connects (its covariances cannot be checked)."""
    prefix = f"{where}: " if where else ""
    base = ekf_params.base_link_frame
    lines = []
    for item in invalid_imu_covariances(ekf_params, static_tfs, frame_id, covariances):
        if isinstance(item, Unresolved):
            if not unresolved:
                continue
            lines.append(f"{prefix}{item.sensor} ({item.topic}): frame {item.frame!r} has no transform to "
                         f"{base!r} (give it with --static-tf): its covariances are not checked")
        else:
            lines.append(prefix + item.describe(frame_id or base, base, ekf_params.two_d_mode))
    return lines


def model_covariances(model) -> Dict[str, np.ndarray]:
    """{part: covariance row} an IMU model (``models.ImuModel``) publishes with every message."""
    return {"orientation_covariance": model.orientation_cov, "angular_velocity_covariance": model.gyro_cov,
            "linear_acceleration_covariance": model.accel_cov}


__all__ = ["IMU_PARTS", "InvalidCovariance", "Unresolved", "imu_covariance_findings",
           "invalid_imu_covariances", "model_covariances"]
