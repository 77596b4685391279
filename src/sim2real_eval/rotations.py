"""Quaternion helpers, vectorised over leading axes.  Convention: (x, y, z, w), Hamilton product,
``q`` rotates body-frame vectors into the world frame (ROS geometry_msgs/Quaternion semantics).
Robot-side module: Python 3.8, numpy only."""
from __future__ import annotations

import numpy as np


def normalize(q):
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def multiply(a, b):
    """Hamilton product a ⊗ b."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def conjugate(q):
    q = np.asarray(q, dtype=float)
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def to_matrix(q):
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4)."""
    x, y, z, w = np.moveaxis(normalize(q), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], axis=-1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], axis=-1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )


def from_matrix(matrix):
    """Unit quaternions (..., 4) of rotation matrices (..., 3, 3) (Shepperd's method: the largest of
    w, x, y, z is computed first, so no branch divides by a small number); w >= 0."""
    m = np.asarray(matrix, dtype=float)
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    candidates = np.stack([trace, m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], axis=-1)
    pick = np.argmax(candidates, axis=-1)
    q = np.empty(m.shape[:-2] + (4,))
    for case in range(4):
        sel = pick == case
        if not np.any(sel):
            continue
        r = m[sel]
        if case == 0:
            s = 2.0 * np.sqrt(1.0 + r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2])
            part = [(r[:, 2, 1] - r[:, 1, 2]) / s, (r[:, 0, 2] - r[:, 2, 0]) / s,
                    (r[:, 1, 0] - r[:, 0, 1]) / s, 0.25 * s]
        elif case == 1:
            s = 2.0 * np.sqrt(1.0 + r[:, 0, 0] - r[:, 1, 1] - r[:, 2, 2])
            part = [0.25 * s, (r[:, 0, 1] + r[:, 1, 0]) / s, (r[:, 0, 2] + r[:, 2, 0]) / s,
                    (r[:, 2, 1] - r[:, 1, 2]) / s]
        elif case == 2:
            s = 2.0 * np.sqrt(1.0 - r[:, 0, 0] + r[:, 1, 1] - r[:, 2, 2])
            part = [(r[:, 0, 1] + r[:, 1, 0]) / s, 0.25 * s, (r[:, 1, 2] + r[:, 2, 1]) / s,
                    (r[:, 0, 2] - r[:, 2, 0]) / s]
        else:
            s = 2.0 * np.sqrt(1.0 - r[:, 0, 0] - r[:, 1, 1] + r[:, 2, 2])
            part = [(r[:, 0, 2] + r[:, 2, 0]) / s, (r[:, 1, 2] + r[:, 2, 1]) / s, 0.25 * s,
                    (r[:, 1, 0] - r[:, 0, 1]) / s]
        q[sel] = np.stack(part, axis=-1)
    q = normalize(q)
    return np.where(q[..., 3:] < 0, -q, q)


def rotate(q, v):
    """Rotate body vectors v (..., 3) into the world frame: R(q)·v."""
    return np.einsum("...ij,...j->...i", to_matrix(q), np.asarray(v, dtype=float))


def rotate_inverse(q, v):
    """Rotate world vectors v (..., 3) into the body frame: R(q)ᵀ·v."""
    return np.einsum("...ji,...j->...i", to_matrix(q), np.asarray(v, dtype=float))


def from_rpy(roll, pitch, yaw):
    """Quaternion of R = Rz(yaw)·Ry(pitch)·Rx(roll) (fixed-axis XYZ, as tf2 setRPY)."""
    roll, pitch, yaw = (np.asarray(a, dtype=float) * 0.5 for a in (roll, pitch, yaw))
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.stack(
        [
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ],
        axis=-1,
    )


def from_yaw(yaw):
    yaw = np.asarray(yaw, dtype=float)
    zero = np.zeros_like(yaw)
    return from_rpy(zero, zero, yaw)


def to_rpy(q):
    """(roll, pitch, yaw) of R = Rz·Ry·Rx; stacked on the last axis."""
    x, y, z, w = np.moveaxis(normalize(q), -1, 0)
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.stack([roll, pitch, yaw], axis=-1)


def yaw_of(q):
    return to_rpy(q)[..., 2]


def slerp(q0, q1, fraction):
    """Spherical interpolation, vectorised; takes the short way round."""
    q0 = normalize(q0)
    q1 = normalize(q1)
    fraction = np.asarray(fraction, dtype=float)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    small = sin_theta < 1e-9
    safe = np.where(small, 1.0, sin_theta)
    w0 = np.where(small, 1.0 - fraction, np.sin((1.0 - fraction) * theta) / safe)
    w1 = np.where(small, fraction, np.sin(fraction * theta) / safe)
    return normalize(w0 * q0 + w1 * q1)
