"""The EKF's numerical kernels (ekf.cpp predict/correct), one implementation for two hosts.

Written in the numpy subset numba compiles: with numba installed they are compiled once (cached on
disk, ``compiled_cache``); without it (or with NUMBA_DISABLE_JIT=1) the very same functions run as plain
numpy code.
"""

from __future__ import annotations

import math

import numpy as np

from .compiled_cache import njit

PI = math.pi
TAU = 2.0 * math.pi


@njit(cache=True, inline="always")
def clamp_rotation(angle: float) -> float:
    """filter_utilities::clampRotation (3.5.2): subtract 2π while > π, add 2π while < −π; ±π unchanged."""
    while angle > PI:
        angle -= TAU
    while angle < -PI:
        angle += TAU
    return angle


# The tf2 conversions and small products write into a given array (``*_into``: the compiled callbacks
# pass scratch fields, nothing is allocated per message); the plain forms return a new array.


@njit(cache=True, inline="always")
def matrix_from_rpy_into(roll: float, pitch: float, yaw: float, out: np.ndarray) -> None:
    """tf2 Matrix3x3::setRPY: R = Rz(yaw)·Ry(pitch)·Rx(roll)."""
    ci, cj, ch = math.cos(roll), math.cos(pitch), math.cos(yaw)
    si, sj, sh = math.sin(roll), math.sin(pitch), math.sin(yaw)
    cc, cs, sc, ss = ci * ch, ci * sh, si * ch, si * sh
    out[0, 0], out[0, 1], out[0, 2] = cj * ch, sj * sc - cs, sj * cc + ss
    out[1, 0], out[1, 1], out[1, 2] = cj * sh, sj * ss + cc, sj * cs - sc
    out[2, 0], out[2, 1], out[2, 2] = -sj, cj * si, cj * ci


@njit(cache=True, inline="always")
def matrix_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    out = np.empty((3, 3))
    matrix_from_rpy_into(roll, pitch, yaw, out)
    return out


@njit(cache=True, inline="always")
def rpy_from_matrix(m: np.ndarray):
    """tf2 Matrix3x3::getRPY (solution 1): pitch = −asin(m20), roll = atan2(m21/cp, m22/cp),
    yaw = atan2(m10/cp, m00/cp); at |m20| ≥ 1: yaw = 0, pitch = ∓π/2, roll = atan2(m21, m22)."""
    m20 = m[2, 0]
    if abs(m20) >= 1.0:
        delta = math.atan2(m[2, 1], m[2, 2])
        pitch = math.pi / 2 if m20 < 0 else -math.pi / 2
        return delta, pitch, 0.0
    pitch = -math.asin(m20)
    cp = math.cos(pitch)
    roll = math.atan2(m[2, 1] / cp, m[2, 2] / cp)
    yaw = math.atan2(m[1, 0] / cp, m[0, 0] / cp)
    return roll, pitch, yaw


@njit(cache=True, inline="always")
def matrix_from_quaternion_into(x: float, y: float, z: float, w: float, out: np.ndarray) -> None:
    """tf2 Matrix3x3::setRotation (scales by 2/|q|², so a slightly non-unit q still gives a rotation)."""
    d = x * x + y * y + z * z + w * w
    s = 2.0 / d
    xs, ys, zs = x * s, y * s, z * s
    wx, wy, wz = w * xs, w * ys, w * zs
    xx, xy, xz = x * xs, x * ys, x * zs
    yy, yz, zz = y * ys, y * zs, z * zs
    out[0, 0], out[0, 1], out[0, 2] = 1.0 - (yy + zz), xy - wz, xz + wy
    out[1, 0], out[1, 1], out[1, 2] = xy + wz, 1.0 - (xx + zz), yz - wx
    out[2, 0], out[2, 1], out[2, 2] = xz - wy, yz + wx, 1.0 - (xx + yy)


@njit(cache=True, inline="always")
def matrix_from_quaternion(x: float, y: float, z: float, w: float) -> np.ndarray:
    out = np.empty((3, 3))
    matrix_from_quaternion_into(x, y, z, w, out)
    return out


@njit(cache=True, inline="always")
def message_orientation_matrix_into(x: float, y: float, z: float, w: float, out: np.ndarray) -> None:
    """An orientation as upstream reads it: all-zero → identity; |q| off by > 0.01 → normalised.
    The norm is taken with the largest component factored out, so components whose squares under- or
    overflow (a damaged message: 1e-320, 6e158) neither divide by zero nor turn the rotation into 0/0."""
    scale = max(abs(x), abs(y), abs(z), abs(w))
    if scale == 0.0:
        for i in range(3):
            for j in range(3):
                out[i, j] = 1.0 if i == j else 0.0
        return
    norm = scale * math.sqrt((x / scale) ** 2 + (y / scale) ** 2 + (z / scale) ** 2 + (w / scale) ** 2)
    if abs(norm - 1.0) > 0.01:
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
    matrix_from_quaternion_into(x, y, z, w, out)


@njit(cache=True, inline="always")
def message_orientation_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    out = np.empty((3, 3))
    message_orientation_matrix_into(x, y, z, w, out)
    return out


@njit(cache=True, inline="always")
def mat3_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a·b of 3×3 matrices (out must not be a or b)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]


@njit(cache=True, inline="always")
def mat3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty((3, 3))
    mat3_into(a, b, out)
    return out


@njit(cache=True, inline="always")
def mat3_t_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = aᵀ·b of 3×3 matrices (out must not be a or b)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = a[0, i] * b[0, j] + a[1, i] * b[1, j] + a[2, i] * b[2, j]


@njit(cache=True, inline="always")
def rotate(a: np.ndarray, v: np.ndarray, out: np.ndarray, offset: int) -> None:
    """out[offset:offset + 3] = a·v."""
    v0, v1, v2 = v[0], v[1], v[2]
    for i in range(3):
        out[offset + i] = a[i, 0] * v0 + a[i, 1] * v1 + a[i, 2] * v2


@njit(cache=True, inline="always")
def rotate_t(a: np.ndarray, v: np.ndarray, out: np.ndarray, offset: int) -> None:
    """out[offset:offset + 3] = aᵀ·v."""
    v0, v1, v2 = v[0], v[1], v[2]
    for i in range(3):
        out[offset + i] = a[0, i] * v0 + a[1, i] * v1 + a[2, i] * v2


@njit(cache=True, inline="always")
def rotated_covariance(rotation, covariance, out, offset, size, rc):
    """out[offset:, offset:] = R6·C·R6ᵀ (size 6, R6 = diag(R, R)) or R·C·Rᵀ (size 3), blockwise; ``rc``: a
    (3, 3) scratch."""
    for bi in range(0, size, 3):
        for bj in range(0, size, 3):
            for i in range(3):
                for j in range(3):
                    acc = 0.0
                    for a in range(3):
                        acc += rotation[i, a] * covariance[bi + a, bj + j]
                    rc[i, j] = acc
            for i in range(3):
                for j in range(3):
                    acc = 0.0
                    for b in range(3):
                        acc += rc[i, b] * rotation[j, b]
                    out[offset + bi + i, offset + bj + j] = acc


@njit(cache=True, inline="always")
def copy1(source: np.ndarray, target: np.ndarray) -> None:
    """target[:] = source, element by element (no broadcasting checks in compiled code)."""
    for i in range(source.shape[0]):
        target[i] = source[i]


@njit(cache=True, inline="always")
def copy2(source: np.ndarray, target: np.ndarray) -> None:
    """target[:, :] = source, element by element."""
    for i in range(source.shape[0]):
        for j in range(source.shape[1]):
            target[i, j] = source[i, j]


@njit(cache=True, inline="always")
def transpose3(a: np.ndarray) -> np.ndarray:
    out = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = a[j, i]
    return out


@njit(cache=True, inline="always")
def quaternion_from_rpy_into(roll: float, pitch: float, yaw: float, out: np.ndarray) -> None:
    """tf2 Quaternion::setRPY, (x, y, z, w)."""
    half_roll, half_pitch, half_yaw = roll * 0.5, pitch * 0.5, yaw * 0.5
    cr, sr = math.cos(half_roll), math.sin(half_roll)
    cp, sp = math.cos(half_pitch), math.sin(half_pitch)
    cy, sy = math.cos(half_yaw), math.sin(half_yaw)
    out[0] = sr * cp * cy - cr * sp * sy
    out[1] = cr * sp * cy + sr * cp * sy
    out[2] = cr * cp * sy - sr * sp * cy
    out[3] = cr * cp * cy + sr * sp * sy


@njit(cache=True, inline="always")
def quaternion_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    out = np.empty(4)
    quaternion_from_rpy_into(roll, pitch, yaw, out)
    return out


@njit(cache=True)
def quaternion_from_matrix(m: np.ndarray) -> np.ndarray:
    """tf2 Matrix3x3::getRotation (Shepperd's method as in LinearMath), (x, y, z, w)."""
    q = np.empty(4)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = math.sqrt(trace + 1.0)
        q[3] = s * 0.5
        s = 0.5 / s
        q[0] = (m[2, 1] - m[1, 2]) * s
        q[1] = (m[0, 2] - m[2, 0]) * s
        q[2] = (m[1, 0] - m[0, 1]) * s
        return q
    i = 0 if m[0, 0] >= m[1, 1] else 1
    if m[2, 2] > m[i, i]:
        i = 2
    j = (i + 1) % 3
    k = (i + 2) % 3
    s = math.sqrt(m[i, i] - m[j, j] - m[k, k] + 1.0)
    q[i] = s * 0.5
    s = 0.5 / s
    q[3] = (m[k, j] - m[j, k]) * s
    q[j] = (m[j, i] + m[i, j]) * s
    q[k] = (m[k, i] + m[i, k]) * s
    return q


@njit(cache=True)
def slerp(q0: np.ndarray, q1: np.ndarray, t: float) -> np.ndarray:
    """tf2 Quaternion::slerp (the interpolation of tf2's TimeCache): the short way round, no
    normalisation; θ = angleShortestPath/2, q = (q0·sin((1−t)θ) ± q1·sin(tθ)) / sin θ; θ = 0 → q0."""
    dot = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3]
    s = math.sqrt((q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3])
                  * (q1[0] * q1[0] + q1[1] * q1[1] + q1[2] * q1[2] + q1[3] * q1[3]))
    cosine = (-dot if dot < 0 else dot) / s
    theta = math.acos(min(max(cosine, -1.0), 1.0))  # tf2Acos clamps; (acos·2)/2 is exact
    out = q0.copy()
    if theta != 0.0:
        d = 1.0 / math.sin(theta)
        s0 = math.sin((1.0 - t) * theta)
        s1 = math.sin(t * theta)
        sign = -1.0 if dot < 0 else 1.0
        for i in range(4):
            out[i] = (q0[i] * s0 + sign * q1[i] * s1) * d
    return out


@njit(cache=True)
def transition_into(state: np.ndarray, delta: float, f: np.ndarray, j: np.ndarray) -> None:
    """The transfer function F (x⁺ = F·x) and its Jacobian J from the current angles/rates, into f, j.

    p⁺ = p + R·(vΔ + ½aΔ²) with R = Rz(ψ)Ry(θ)Rx(φ); Euler rates from body rates; v⁺ = v + aΔ.
    J = F with the analytic partials of p⁺ and of the Euler angles w.r.t. (φ, θ, ψ).
    """
    sr, cr = math.sin(state[3]), math.cos(state[3])
    sp, cp = math.sin(state[4]), math.cos(state[4])
    sy, cy = math.sin(state[5]), math.cos(state[5])
    cpi = 1.0 / cp
    tp = sp * cpi
    d = delta
    half_d2 = 0.5 * d * d
    f[:, :] = 0.0
    for i in range(15):
        f[i, i] = 1.0
    # R (rows x, y, z) times Δ and ½Δ²
    r00, r01, r02 = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    r10, r11, r12 = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    r20, r21, r22 = -sp, cp * sr, cp * cr
    f[0, 6], f[0, 7], f[0, 8] = r00 * d, r01 * d, r02 * d
    f[1, 6], f[1, 7], f[1, 8] = r10 * d, r11 * d, r12 * d
    f[2, 6], f[2, 7], f[2, 8] = r20 * d, r21 * d, r22 * d
    for i in range(3):
        for k in range(3):
            f[i, 12 + k] = 0.5 * f[i, 6 + k] * d
    f[3, 9] = d
    f[3, 10] = sr * tp * d
    f[3, 11] = cr * tp * d
    f[4, 10] = cr * d
    f[4, 11] = -sr * d
    f[5, 10] = sr * cpi * d
    f[5, 11] = cr * cpi * d
    f[6, 12] = d
    f[7, 13] = d
    f[8, 14] = d
    copy2(f, j)
    v0, v1, v2 = state[6], state[7], state[8]
    a0, a1, a2 = state[12], state[13], state[14]
    wy, wz = state[10], state[11]
    # ∂R/∂roll, ∂R/∂pitch, ∂R/∂yaw applied to (vΔ + ½aΔ²): rows x, y, z
    j[0, 3] = (0.0 * v0 + (cy * sp * cr + sy * sr) * v1 + (-cy * sp * sr + sy * cr) * v2) * d + (
        0.0 * a0 + (cy * sp * cr + sy * sr) * a1 + (-cy * sp * sr + sy * cr) * a2) * half_d2
    j[0, 4] = (-cy * sp * v0 + cy * cp * sr * v1 + cy * cp * cr * v2) * d + (
        -cy * sp * a0 + cy * cp * sr * a1 + cy * cp * cr * a2) * half_d2
    j[0, 5] = (-sy * cp * v0 + (-sy * sp * sr - cy * cr) * v1 + (-sy * sp * cr + cy * sr) * v2) * d + (
        -sy * cp * a0 + (-sy * sp * sr - cy * cr) * a1 + (-sy * sp * cr + cy * sr) * a2) * half_d2
    j[1, 3] = (0.0 * v0 + (sy * sp * cr - cy * sr) * v1 + (-sy * sp * sr - cy * cr) * v2) * d + (
        0.0 * a0 + (sy * sp * cr - cy * sr) * a1 + (-sy * sp * sr - cy * cr) * a2) * half_d2
    j[1, 4] = (-sy * sp * v0 + sy * cp * sr * v1 + sy * cp * cr * v2) * d + (
        -sy * sp * a0 + sy * cp * sr * a1 + sy * cp * cr * a2) * half_d2
    j[1, 5] = (cy * cp * v0 + (cy * sp * sr - sy * cr) * v1 + (cy * sp * cr + sy * sr) * v2) * d + (
        cy * cp * a0 + (cy * sp * sr - sy * cr) * a1 + (cy * sp * cr + sy * sr) * a2) * half_d2
    j[2, 3] = ((0.0 * v0 + cp * cr * v1 + -cp * sr * v2) * d
               + (0.0 * a0 + cp * cr * a1 + -cp * sr * a2) * half_d2)
    j[2, 4] = ((-cp * v0 + -sp * sr * v1 + -sp * cr * v2) * d
               + (-cp * a0 + -sp * sr * a1 + -sp * cr * a2) * half_d2)
    j[2, 5] = (0.0 * v0 + 0.0 * v1 + 0.0 * v2) * d + (0.0 * a0 + 0.0 * a1 + 0.0 * a2) * half_d2
    j[3, 3] = 1.0 + (cr * tp * wy - sr * tp * wz) * d
    j[3, 4] = (cpi * cpi * sr * wy + cpi * cpi * cr * wz) * d
    j[4, 3] = (-sr * wy - cr * wz) * d
    j[5, 3] = (cr * cpi * wy - sr * cpi * wz) * d
    j[5, 4] = (sr * tp * cpi * wy + cr * tp * cpi * wz) * d


@njit(cache=True)
def transition(state: np.ndarray, delta: float):
    """(F, J) as new arrays (transition_into)."""
    f, j = np.empty((15, 15)), np.empty((15, 15))
    transition_into(state, delta, f, j)
    return f, j


# The non-zero columns of the Jacobian J (transition_into) row by row, ascending: J·P·Jᵀ runs over these
# only.  Entries outside are exactly 0; entries inside may be 0 too (adding ±0 changes nothing).
J_COLUMNS = ((0, 3, 4, 5, 6, 7, 8, 12, 13, 14), (1, 3, 4, 5, 6, 7, 8, 12, 13, 14),
             (2, 3, 4, 6, 7, 8, 12, 13, 14),
             (3, 4, 9, 10, 11), (3, 4, 10, 11), (3, 4, 5, 10, 11), (6, 12), (7, 13), (8, 14),
             (9,), (10,), (11,), (12,), (13,), (14,))
J_NONZERO = np.array([columns + (0,) * (10 - len(columns)) for columns in J_COLUMNS], dtype=np.int64)
J_COUNT = np.array([len(columns) for columns in J_COLUMNS], dtype=np.int64)


@njit(cache=True)
def predict(x, p, process_noise, delta, dynamic_noise, control_acceleration, control_update, use_control,
            work):
    """Ekf::predict, in place: F, J from the pre-update state; Q′ (dynamic: pose block × ‖(v, ω)‖²);
    control (ω += aΔ, enabled linear accelerations replaced); x ← F·x; wrap angles; P ← J P Jᵀ + Δ·Q.
    ``work``: the FILTER_STATE record's scratch.  Every sum runs in ascending index order."""
    n = 15
    f, j = work.transition, work.jacobian
    transition_into(x, delta, f, j)
    q = process_noise
    if dynamic_noise:
        q = work.noise
        speed2 = 0.0
        for i in range(6, 12):
            speed2 += x[i] * x[i]
        for i in range(n):
            for c in range(n):
                q[i, c] = process_noise[i, c] * speed2 if (i < 6 and c < 6) else process_noise[i, c]
    xc = work.vector
    copy1(x, xc)
    if use_control:
        for i in range(3):
            xc[9 + i] += control_acceleration[3 + i] * delta
            if control_update[i]:
                xc[12 + i] = control_acceleration[i]
    for i in range(n):  # F·x over J's non-zero columns (F's are among them; a skipped 0·x adds ±0)
        acc = 0.0
        for m in range(J_COUNT[i]):
            k = J_NONZERO[i, m]
            acc += f[i, k] * xc[k]
        x[i] = acc
    for i in range(3, 6):
        x[i] = clamp_rotation(x[i])
    # J·P, row by row over J's non-zero columns (vectorised over P's columns)
    jp = work.product
    for i in range(n):
        for c in range(n):
            jp[i, c] = 0.0
        for m in range(J_COUNT[i]):
            k = J_NONZERO[i, m]
            factor = j[i, k]
            for c in range(n):
                jp[i, c] += factor * p[k, c]
    # (J·P)·Jᵀ, computed transposed: row c of it is Σ_k J[c, k]·(J·P)ᵀ[k, :]
    jpt, product = work.inverse, work.gain
    for i in range(n):
        for c in range(n):
            jpt[c, i] = jp[i, c]
    for c in range(n):
        for i in range(n):
            product[c, i] = 0.0
        for m in range(J_COUNT[c]):
            k = J_NONZERO[c, m]
            factor = j[c, k]
            for i in range(n):
                product[c, i] += jpt[k, i] * factor
    for i in range(n):
        for c in range(n):
            p[i, c] = product[c, i] + delta * q[i, c]


@njit(cache=True, error_model="numpy")
def invert(a: np.ndarray, out: np.ndarray, n: int, unit: np.ndarray, active: np.ndarray) -> None:
    """out[:n, :n] = a[:n, :n]⁻¹ by Gauss-Jordan elimination with partial pivoting (what an LU inverse
    does, without LAPACK's call overhead; a singular matrix gives inf/nan like Eigen's); a is destroyed
    (only its columns still to be eliminated are kept up to date).

    ``out`` starts as the identity, and a column of it stays a unit vector until the row holding its 1
    becomes the pivot row: such columns are skipped (their updates would subtract exact zeros; at most
    a zero's sign could differ, which no later sum can see).  ``unit[r]``: the column whose 1 row r
    holds; ``active[:count]``: the columns already combined.  While a pivot or a factor is not finite
    (a singular matrix), every column is updated, so inf/nan spread as in the full elimination."""
    for i in range(n):
        for k in range(n):
            out[i, k] = 0.0
        out[i, i] = 1.0
        unit[i] = i
    count = 0
    dense = False
    for col in range(n):
        pivot = col
        best = abs(a[col, col])
        for row in range(col + 1, n):
            if abs(a[row, col]) > best:
                best = abs(a[row, col])
                pivot = row
        # a's columns before ``col`` are never read again: they are left as they are (out is complete)
        if pivot != col:
            for k in range(col, n):
                a[col, k], a[pivot, k] = a[pivot, k], a[col, k]
            for k in range(n):
                out[col, k], out[pivot, k] = out[pivot, k], out[col, k]
            unit[col], unit[pivot] = unit[pivot], unit[col]
        active[count] = unit[col]
        count += 1
        scale = 1.0 / a[col, col]
        dense = dense or not math.isfinite(scale)
        for k in range(col, n):
            a[col, k] *= scale
        if dense:
            for k in range(n):
                out[col, k] *= scale
        else:
            for c in range(count):
                out[col, active[c]] *= scale
        for row in range(n):
            if row != col:
                factor = a[row, col]
                if factor != 0.0:
                    for k in range(col + 1, n):
                        a[row, k] -= factor * a[col, k]
                    if dense or not math.isfinite(factor):
                        for k in range(n):
                            out[row, k] -= factor * out[col, k]
                    else:
                        for c in range(count):
                            k = active[c]
                            out[row, k] -= factor * out[col, k]


# A tight Mahalanobis gate rejects most measurements (ART: 0.8σ, about half of them).  For S symmetric
# positive definite, νᵀS⁻¹ν ≥ νᵢ²/Sᵢᵢ for every i (Cauchy–Schwarz with u = eᵢ: (uᵀν)² ≤ uᵀSu · νᵀS⁻¹ν),
# so one component far outside its own σ proves a rejection in O(m²), without the inverse (m³).  Only a
# clear one is taken: S strictly diagonally dominant with a positive diagonal (Gershgorin: positive
# definite — an indefinite S, which upstream lets through with a negative d², is left to the inverse)
# and νᵢ²/Sᵢᵢ above the threshold by GATE_MARGIN, far more than the inverse's rounding of d²
# (≈ m·ε·cond(S)).  Every other case goes on to the inverse, which decides: each decision and every
# applied update are the inverse's, as before.
GATE_MARGIN = 1e-3


@njit(cache=True, inline="always")
def clearly_outside_gate(s, innovation, m, threshold):
    """True when some νᵢ²/Sᵢᵢ is ≥ threshold²·(1 + GATE_MARGIN) and S is strictly diagonally dominant
    with a positive diagonal (then νᵀS⁻¹ν ≥ threshold² too); False otherwise."""
    limit = threshold * threshold * (1.0 + GATE_MARGIN)
    if not math.isfinite(limit):
        return False
    outside = False
    for i in range(m):
        value = innovation[i]
        if value * value >= limit * s[i, i]:
            outside = True
            break
    if not outside:
        return False
    for i in range(m):
        off_diagonal = 0.0
        for j in range(m):
            if j != i:
                off_diagonal += abs(s[i, j])
        if not s[i, i] > off_diagonal:
            return False
    return True


# Above the complexity limit on purpose (tests/test_complexity.py names it): this is robot_localization's
# Ekf::correct (ekf.cpp) with FilterBase::checkMahalanobisThreshold (filter_base.cpp), step for step in
# one compiled function, the judge's hottest code (docs/judge.md, "Speed"); split, its steps would be
# calls numba does not fuse, or inlined copies that only hide the same branches.
@njit(cache=True, error_model="numpy")
def correct(x, p, z, measurement_covariance, update, threshold, work):
    """Ekf::correct + checkMahalanobisThreshold, in place; True when the update was applied.

    idx = flagged entries with finite z; R = cov[idx, idx] with |diag| floored at 1e-9;
    S = P[idx, idx] + R, K = P[:, idx]·S⁻¹, ν = z − x[idx] (angles wrapped); reject when νᵀS⁻¹ν ≥ thr²;
    else x += Kν and the Joseph form (I−KH)P(I−KH)ᵀ + KRKᵀ, evaluated as A = P − K·P[idx, :],
    A − A[:, idx]·Kᵀ + KRKᵀ (H is a selection) in whole rows, then the part above the diagonal mirrored
    below (the result is exactly symmetric), then angles wrapped.  Loops over the selected entries in
    ``work`` (state.Work), no allocation.
    """
    n = 15
    idx = work.index
    count = 0
    for i in range(n):
        if update[i] and np.isfinite(z[i]):
            idx[count] = i
            count += 1
    if count == 0:
        return False
    r, s, s_inv = work.noise, work.innovation_covariance, work.inverse
    for a in range(count):
        for b in range(count):
            r[a, b] = measurement_covariance[idx[a], idx[b]]
        value = abs(r[a, a])  # negative variance → absolute value
        r[a, a] = value if value >= 1e-9 else 1e-9  # the only floor
        for b in range(count):
            s[a, b] = p[idx[a], idx[b]] + r[a, b]
    innovation = work.vector
    for a in range(count):
        value = z[idx[a]] - x[idx[a]]
        if 3 <= idx[a] <= 5:
            while value < -PI:
                value += TAU
            while value > PI:
                value -= TAU
        innovation[a] = value
    if clearly_outside_gate(s, innovation, count, threshold):
        return False
    invert(s, s_inv, count, work.unit, work.active)
    # d² = νᵀ S⁻¹ ν
    d2 = 0.0
    for a in range(count):
        row = 0.0
        for b in range(count):
            row += s_inv[a, b] * innovation[b]
        d2 += innovation[a] * row
    if d2 >= threshold * threshold:
        return False
    # K = P[:, idx]·S⁻¹ (n×m), built as Kᵀ (m×n) with the state index innermost: each element is the
    # same sum in the same order (a ascending), but the n sums advance side by side, not one by one
    # Kᵀ in padded rows: the P⁺ update below reads them 16 wide (their 16th entry stays 0)
    k, kt, columns, increment = work.gain, work.padded_gain, work.transition, work.increment
    for a in range(count):
        for i in range(n):
            columns[a, i] = p[i, idx[a]]
    for b in range(count):
        for i in range(n):
            kt[b, i] = 0.0
        for a in range(count):
            f = s_inv[a, b]
            for i in range(n):
                kt[b, i] += columns[a, i] * f
        for i in range(n):
            k[i, b] = kt[b, i]
    for i in range(n):
        increment[i] = 0.0
    for a in range(count):
        f = innovation[a]
        for i in range(n):
            increment[i] += kt[a, i] * f
    for i in range(n):
        x[i] += increment[i]
    # A = P − K·P[idx, :] (the rows P[idx, :] copied first: P is updated in place).  Whole rows: only the
    # part on and above the diagonal and the columns idx (for G) are read, but a fixed-length row is
    # straight-line code, faster than the triangle's variable lengths (each element: the same terms in
    # the same order, so the same bits)
    rows, padded, width = work.padded_rows, work.padded, work.row_width
    for a in range(count):
        for col in range(n):
            rows[a, col] = p[idx[a], col]
    for i in range(n):
        for col in range(n):
            padded[i, col] = p[i, col]
    for i in range(n):
        for a in range(count):
            f = k[i, a]
            for col in range(width):
                padded[i, col] -= f * rows[a, col]
    # P⁺ = A − A[:, idx]·Kᵀ + (K·R)·Kᵀ = A + G·Kᵀ with G = K·R − A[:, idx], built as Gᵀ like Kᵀ.  K·R
    # skips R's zeros (R is mostly diagonal: the 2-D pseudo-measurements, uncorrelated sensor axes): a
    # term k·0 = ±0 would not change the sum (it starts at +0.0, so it is never −0.0)
    gt = work.joseph
    for b in range(count):
        for i in range(n):
            gt[b, i] = 0.0
        for a in range(count):
            f = r[a, b]
            if f != 0.0:
                for i in range(n):
                    gt[b, i] += kt[a, i] * f
        col = idx[b]
        for i in range(n):
            gt[b, i] -= padded[i, col]
    # P⁺ in whole rows (as A), the part above the diagonal mirrored below (P⁺ is symmetric)
    for i in range(n):
        for a in range(count):
            f = gt[a, i]
            for col in range(width):
                padded[i, col] += f * kt[a, col]
    for i in range(n):
        for col in range(i, n):
            p[i, col] = padded[i, col]
            p[col, i] = padded[i, col]
    for i in range(3, 6):
        x[i] = clamp_rotation(x[i])
    return True


# --- UKF (ukf.cpp) ------------------------------------------------------------------------------------


@njit(cache=True)
def llt_lower(matrix: np.ndarray) -> np.ndarray:
    """Eigen's unblocked LLT (used for sizes < 32) on the lower triangle, returning matrixL().

    Like Eigen it does not raise on a non-positive-definite matrix: it stops at the failing column and
    the remaining columns keep the partially processed input (lower triangle).
    """
    n = matrix.shape[0]
    m = matrix.copy()
    for k in range(n):
        row = m[k, :k].copy()
        x = m[k, k] - np.dot(row, row)
        if x <= 0.0:
            break
        x = math.sqrt(x)
        m[k, k] = x
        if k + 1 < n:
            below = m[k + 1 :, k] - np.ascontiguousarray(m[k + 1 :, :k]) @ row
            m[k + 1 :, k] = below / x
    for i in range(n):
        m[i, i + 1 :] = 0.0
    return m


@njit(cache=True)
def ukf_weights(alpha: float, kappa: float, beta: float):
    """Ukf::setConstants: λ = α²(n + κ) − n; w₀ = λ/(n + λ), c₀ = w₀ + 1 − α² + β, wᵢ = cᵢ = 1/(2(n + λ))."""
    n = 15
    lam = alpha * alpha * (n + kappa) - n
    state_weights = np.full(2 * n + 1, 1.0 / (2.0 * (n + lam)))
    covar_weights = state_weights.copy()
    state_weights[0] = lam / (n + lam)
    covar_weights[0] = state_weights[0] + (1.0 - alpha * alpha + beta)
    return lam, state_weights, covar_weights


@njit(cache=True)
def process_noise_for(process_noise: np.ndarray, state: np.ndarray, dynamic_noise: bool) -> np.ndarray:
    """Q, or the dynamic Q′: the pose block scaled by ‖(vx, vy, vz, vroll, vpitch, vyaw)‖² of ``state``
    (a new array)."""
    q = process_noise.copy()
    if not dynamic_noise:
        return q
    speed2 = 0.0
    for i in range(6, 12):
        speed2 += state[i] * state[i]
    q[:6, :6] *= speed2
    return q


@njit(cache=True)
def sigma_points(state: np.ndarray, covariance: np.ndarray, lam: float) -> np.ndarray:
    """The UKF's 31 sigma points: x and x ± the columns of chol((n + λ)·P)."""
    root = llt_lower((15 + lam) * covariance)
    points = np.empty((31, 15))
    points[0] = state
    points[1:16] = state + root.T
    points[16:31] = state - root.T
    return points


@njit(cache=True)
def ukf_predict(
    state: np.ndarray,
    covariance: np.ndarray,
    process_noise: np.ndarray,
    delta: float,
    dynamic_noise: bool,
    lam: float,
    state_weights: np.ndarray,
    covar_weights: np.ndarray,
):
    """Ukf::predict: sigma points x ± cols(chol((n+λ)P)) all pushed through the *same* F (built from the
    mean's angles); mean and covariance from the weights; P += Δ·Q (dynamic Q from the new mean);
    angles wrapped.  The control acceleration is not applied (as in ukf.cpp).
    Returns (state, covariance, sigma points (31, 15))."""
    f, _j = transition(state, delta)
    sigma = sigma_points(state, covariance, lam) @ f.T  # every sigma point through the same F
    x = state_weights @ sigma
    diff = sigma - x
    p = (diff * np.expand_dims(covar_weights, 1)).T @ diff
    q = process_noise_for(process_noise, x, dynamic_noise)
    p = p + delta * q
    for i in range(3, 6):
        x[i] = clamp_rotation(x[i])
    return x, p, sigma


@njit(cache=True)
def ukf_correct(
    state: np.ndarray,
    covariance: np.ndarray,
    sigma: np.ndarray,
    regenerate: bool,
    z: np.ndarray,
    measurement_covariance: np.ndarray,
    update: np.ndarray,
    threshold: float,
    lam: float,
    state_weights: np.ndarray,
    covar_weights: np.ndarray,
):
    """Ukf::correct.  Sigma points are regenerated from (x, P) only after an accepted correction
    (upstream's ``uncorrected_`` flag); ẑ = Σwᵢ·Hσᵢ, P_zz = Σcᵢ(Hσᵢ − ẑ)(·)ᵀ, P_xz = Σcᵢ(σᵢ − x)(Hσᵢ − ẑ)ᵀ,
    K = P_xz(P_zz + R)⁻¹, ν = z − ẑ (angles wrapped), gate d² = νᵀ(P_zz + R)⁻¹ν ≥ thr² → reject,
    x += Kν, P −= K·P_zz·Kᵀ.  In place (state, covariance, sigma); True when the update was applied."""
    if regenerate:
        sigma[:, :] = sigma_points(state, covariance, lam)
    count = 0
    for i in range(15):
        if update[i] and np.isfinite(z[i]):
            count += 1
    if count == 0:
        return False
    idx = np.empty(count, dtype=np.int64)
    n = 0
    for i in range(15):
        if update[i] and np.isfinite(z[i]):
            idx[n] = i
            n += 1
    r = np.empty((count, count))
    for a in range(count):
        for b in range(count):
            r[a, b] = measurement_covariance[idx[a], idx[b]]
        value = abs(r[a, a])
        r[a, a] = value if value >= 1e-9 else 1e-9
    projected = np.ascontiguousarray(sigma[:, idx])  # (sigma: regenerated above, or the predicted points)
    predicted = state_weights @ projected
    diff = projected - predicted
    weighted = diff * np.expand_dims(covar_weights, 1)
    p_zz = weighted.T @ diff
    p_xz = (sigma - state).T @ weighted
    s_inv = np.linalg.inv(p_zz + r)
    k = p_xz @ s_inv
    innovation = np.empty(count)
    for a in range(count):
        value = z[idx[a]] - predicted[a]
        if 3 <= idx[a] <= 5:
            while value < -PI:
                value += TAU
            while value > PI:
                value -= TAU
        innovation[a] = value
    d2 = innovation @ (s_inv @ innovation)
    if d2 >= threshold * threshold:
        return False
    x = state + k @ innovation
    p = covariance - k @ p_zz @ k.T
    for i in range(3, 6):
        x[i] = clamp_rotation(x[i])
    state[:] = x
    covariance[:, :] = p
    return True
