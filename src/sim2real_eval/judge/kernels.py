"""The EKF's numerical kernels (ekf.cpp predict/correct), one implementation for two hosts.

Written in the numpy subset numba compiles: with numba installed they are compiled once (cached on
disk); without it (or with NUMBA_DISABLE_JIT=1) the very same functions run as plain numpy code.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

try:  # numba is optional: it only makes the judge faster
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None


def _private_cache_dir():
    """A numba cache directory only this user can write (tempdir/sim2real_eval-numba-<uid>), or None.

    Used when neither the install (numba's __pycache__ beside the source) nor $HOME is writable:
    read-only system installs, containers without a home.  The directory must be ours and private:
    numba loads pickles from it.
    """
    import stat
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"sim2real_eval-numba-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return path if private and os.access(path, os.W_OK | os.X_OK) else None


def njit(*args, **kwargs):
    """numba.njit; with ``cache=True`` it also works where numba finds no writable cache directory
    (numba raises "cannot cache function …: no locator available" at import otherwise): the kernels
    are then cached in ``_private_cache_dir()``, or compiled without a cache (with a warning)."""
    if numba is None:  # pragma: no cover - exercised where numba is absent
        return lambda function: function
    if not kwargs.get("cache"):
        return numba.njit(*args, **kwargs)

    def wrap(function):
        try:
            return numba.njit(*args, **kwargs)(function)
        except RuntimeError as exc:
            if "no locator available" not in str(exc):
                raise
        private = _private_cache_dir()
        if private is not None:
            os.environ["NUMBA_CACHE_DIR"] = private  # numba re-reads its config from the environment
            numba.config.CACHE_DIR = private
            return numba.njit(*args, **kwargs)(function)
        if not _warned:
            _warned.append(True)
            warnings.warn("numba cannot cache the judge's compiled kernels (no writable cache directory): "
                          "each process compiles them again (~1 min); set NUMBA_CACHE_DIR to a writable "
                          "directory to avoid it", RuntimeWarning, stacklevel=2)
        return numba.njit(*args, **{**kwargs, "cache": False})(function)

    return wrap


_warned: list = []


PI = math.pi
TAU = 2.0 * math.pi


@njit(cache=True)
def clamp_rotation(angle: float) -> float:
    """filter_utilities::clampRotation (3.5.2): subtract 2π while > π, add 2π while < −π; ±π unchanged."""
    while angle > PI:
        angle -= TAU
    while angle < -PI:
        angle += TAU
    return angle


@njit(cache=True)
def matrix_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """tf2 Matrix3x3::setRPY: R = Rz(yaw)·Ry(pitch)·Rx(roll)."""
    ci, cj, ch = math.cos(roll), math.cos(pitch), math.cos(yaw)
    si, sj, sh = math.sin(roll), math.sin(pitch), math.sin(yaw)
    cc, cs, sc, ss = ci * ch, ci * sh, si * ch, si * sh
    out = np.empty((3, 3))
    out[0, 0], out[0, 1], out[0, 2] = cj * ch, sj * sc - cs, sj * cc + ss
    out[1, 0], out[1, 1], out[1, 2] = cj * sh, sj * ss + cc, sj * cs - sc
    out[2, 0], out[2, 1], out[2, 2] = -sj, cj * si, cj * ci
    return out


@njit(cache=True)
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


@njit(cache=True)
def matrix_from_quaternion(x: float, y: float, z: float, w: float) -> np.ndarray:
    """tf2 Matrix3x3::setRotation (scales by 2/|q|², so a slightly non-unit q still gives a rotation)."""
    d = x * x + y * y + z * z + w * w
    s = 2.0 / d
    xs, ys, zs = x * s, y * s, z * s
    wx, wy, wz = w * xs, w * ys, w * zs
    xx, xy, xz = x * xs, x * ys, x * zs
    yy, yz, zz = y * ys, y * zs, z * zs
    out = np.empty((3, 3))
    out[0, 0], out[0, 1], out[0, 2] = 1.0 - (yy + zz), xy - wz, xz + wy
    out[1, 0], out[1, 1], out[1, 2] = xy + wz, 1.0 - (xx + zz), yz - wx
    out[2, 0], out[2, 1], out[2, 2] = xz - wy, yz + wx, 1.0 - (xx + yy)
    return out


@njit(cache=True)
def message_orientation_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """An orientation as upstream reads it: all-zero → identity; |q| off by > 0.01 → normalised.
    The norm is taken with the largest component factored out, so components whose squares under- or
    overflow (a damaged message: 1e-320, 6e158) neither divide by zero nor turn the rotation into 0/0."""
    scale = max(abs(x), abs(y), abs(z), abs(w))
    if scale == 0.0:
        return np.eye(3)
    norm = scale * math.sqrt((x / scale) ** 2 + (y / scale) ** 2 + (z / scale) ** 2 + (w / scale) ** 2)
    if abs(norm - 1.0) > 0.01:
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
    return matrix_from_quaternion(x, y, z, w)


@njit(cache=True)
def transition(state: np.ndarray, delta: float):
    """(F, J): the transfer function F (x⁺ = F·x) and its Jacobian J from the current angles/rates.

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
    # (element-wise assignments: numba builds nested np.array literals slowly)
    r = np.empty((3, 3))
    r[0, 0], r[0, 1], r[0, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    r[1, 0], r[1, 1], r[1, 2] = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    r[2, 0], r[2, 1], r[2, 2] = -sp, cp * sr, cp * cr
    f = np.eye(15)
    for i in range(3):
        for j in range(3):
            f[i, 6 + j] = r[i, j] * d
            f[i, 12 + j] = 0.5 * f[i, 6 + j] * d
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

    v = state[6:9]
    a = state[12:15]
    wy, wz = state[10], state[11]
    # ∂R/∂roll, ∂R/∂pitch, ∂R/∂yaw applied to (vΔ + ½aΔ²): rows x, y, z
    dr = np.empty((3, 3, 3))
    dr[0, 0, 0], dr[0, 0, 1], dr[0, 0, 2] = 0.0, cy * sp * cr + sy * sr, -cy * sp * sr + sy * cr
    dr[0, 1, 0], dr[0, 1, 1], dr[0, 1, 2] = -cy * sp, cy * cp * sr, cy * cp * cr
    dr[0, 2, 0], dr[0, 2, 1], dr[0, 2, 2] = -sy * cp, -sy * sp * sr - cy * cr, -sy * sp * cr + cy * sr
    dr[1, 0, 0], dr[1, 0, 1], dr[1, 0, 2] = 0.0, sy * sp * cr - cy * sr, -sy * sp * sr - cy * cr
    dr[1, 1, 0], dr[1, 1, 1], dr[1, 1, 2] = -sy * sp, sy * cp * sr, sy * cp * cr
    dr[1, 2, 0], dr[1, 2, 1], dr[1, 2, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    dr[2, 0, 0], dr[2, 0, 1], dr[2, 0, 2] = 0.0, cp * cr, -cp * sr
    dr[2, 1, 0], dr[2, 1, 1], dr[2, 1, 2] = -cp, -sp * sr, -sp * cr
    dr[2, 2, 0], dr[2, 2, 1], dr[2, 2, 2] = 0.0, 0.0, 0.0
    j = f.copy()
    for row in range(3):
        for angle in range(3):
            c = dr[row, angle]
            j[row, 3 + angle] = (c[0] * v[0] + c[1] * v[1] + c[2] * v[2]) * d + (
                c[0] * a[0] + c[1] * a[1] + c[2] * a[2]
            ) * half_d2
    j[3, 3] = 1.0 + (cr * tp * wy - sr * tp * wz) * d
    j[3, 4] = (cpi * cpi * sr * wy + cpi * cpi * cr * wz) * d
    j[4, 3] = (-sr * wy - cr * wz) * d
    j[5, 3] = (cr * cpi * wy - sr * cpi * wz) * d
    j[5, 4] = (sr * tp * cpi * wy + cr * tp * cpi * wz) * d
    return f, j


@njit(cache=True)
def predict(
    state: np.ndarray,
    covariance: np.ndarray,
    process_noise: np.ndarray,
    delta: float,
    dynamic_noise: bool,
    control_acceleration: np.ndarray,
    control_update: np.ndarray,
    use_control: bool,
):
    """Ekf::predict: F, J from the pre-update state; Q′ (dynamic: pose block × ‖(v, ω)‖²); control
    (ω += aΔ, enabled linear accelerations replaced); x ← F·x; wrap angles; P ← J P Jᵀ + Δ·Q.
    Returns (state, covariance)."""
    f, j = transition(state, delta)
    q = process_noise_for(process_noise, state, dynamic_noise)
    x = state.copy()
    if use_control:
        for i in range(3):
            x[9 + i] += control_acceleration[3 + i] * delta
            if control_update[i]:
                x[12 + i] = control_acceleration[i]
    n = x.shape[0]
    x_new = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(n):
            acc += f[i, k] * x[k]
        x_new[i] = acc
    for i in range(3, 6):
        x_new[i] = clamp_rotation(x_new[i])
    # J·P·Jᵀ over J's non-zero entries (≤ 10 per row: identity + the kinematic couplings)
    nonzero = np.empty((n, n), dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for k in range(n):
            if j[i, k] != 0.0:
                nonzero[i, counts[i]] = k
                counts[i] += 1
    jp = np.empty((n, n))
    for i in range(n):
        for c in range(n):
            acc = 0.0
            for m in range(counts[i]):
                k = nonzero[i, m]
                acc += j[i, k] * covariance[k, c]
            jp[i, c] = acc
    p_new = np.empty((n, n))
    for i in range(n):
        for c in range(n):
            acc = 0.0
            for m in range(counts[c]):
                k = nonzero[c, m]
                acc += jp[i, k] * j[c, k]
            p_new[i, c] = acc + delta * q[i, c]
    return x_new, p_new


@njit(cache=True, error_model="numpy")
def inverse(matrix: np.ndarray) -> np.ndarray:
    """Inverse of a small square matrix by Gauss-Jordan elimination with partial pivoting (what an LU
    inverse does, without LAPACK's call overhead; a singular matrix gives inf/nan like Eigen's)."""
    n = matrix.shape[0]
    a = matrix.copy()
    out = np.eye(n)
    for col in range(n):
        pivot = col
        best = abs(a[col, col])
        for row in range(col + 1, n):
            if abs(a[row, col]) > best:
                best = abs(a[row, col])
                pivot = row
        if pivot != col:
            for j in range(n):
                a[col, j], a[pivot, j] = a[pivot, j], a[col, j]
                out[col, j], out[pivot, j] = out[pivot, j], out[col, j]
        scale = 1.0 / a[col, col]
        for j in range(n):
            a[col, j] *= scale
            out[col, j] *= scale
        for row in range(n):
            if row != col:
                factor = a[row, col]
                if factor != 0.0:
                    for j in range(n):
                        a[row, j] -= factor * a[col, j]
                        out[row, j] -= factor * out[col, j]
    return out


@njit(cache=True)
def correct(
    state: np.ndarray,
    covariance: np.ndarray,
    z: np.ndarray,
    measurement_covariance: np.ndarray,
    update: np.ndarray,
    threshold: float,
):
    """Ekf::correct + checkMahalanobisThreshold.  Returns (applied, state, covariance).

    idx = flagged entries with finite z; R = cov[idx, idx] with |diag| floored at 1e-9;
    S = P[idx, idx] + R, K = P[:, idx]·S⁻¹, ν = z − x[idx] (angles wrapped); reject when νᵀS⁻¹ν ≥ thr²;
    else x += Kν and the Joseph form (I−KH)P(I−KH)ᵀ + KRKᵀ, evaluated as A = P − K·P[idx, :],
    A − A[:, idx]·Kᵀ + KRKᵀ (H is a selection), then angles wrapped.
    Written as loops over the selected entries (no temporaries beyond m×m and 15×m arrays).
    """
    n = state.shape[0]
    idx = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        if update[i] and np.isfinite(z[i]):
            idx[count] = i
            count += 1
    if count == 0:
        return False, state, covariance
    r = np.empty((count, count))
    s = np.empty((count, count))
    for a in range(count):
        for b in range(count):
            r[a, b] = measurement_covariance[idx[a], idx[b]]
        value = abs(r[a, a])  # negative variance → absolute value
        r[a, a] = value if value >= 1e-9 else 1e-9  # the only floor
        for b in range(count):
            s[a, b] = covariance[idx[a], idx[b]] + r[a, b]
    innovation = np.empty(count)
    for a in range(count):
        value = z[idx[a]] - state[idx[a]]
        if 3 <= idx[a] <= 5:
            while value < -PI:
                value += TAU
            while value > PI:
                value -= TAU
        innovation[a] = value
    s_inv = inverse(s)
    # d² = νᵀ S⁻¹ ν
    d2 = 0.0
    for a in range(count):
        row = 0.0
        for b in range(count):
            row += s_inv[a, b] * innovation[b]
        d2 += innovation[a] * row
    if d2 >= threshold * threshold:
        return False, state, covariance
    # K = P[:, idx]·S⁻¹ (n×m) and Kᵀ (m×n)
    k = np.zeros((n, count))
    kt = np.empty((count, n))
    for i in range(n):
        for a in range(count):
            f = covariance[i, idx[a]]
            for b in range(count):
                k[i, b] += f * s_inv[a, b]
        for b in range(count):
            kt[b, i] = k[i, b]
    x = state.copy()
    for i in range(n):
        acc = 0.0
        for a in range(count):
            acc += k[i, a] * innovation[a]
        x[i] += acc
    # A = P − K·P[idx, :]
    p_new = covariance.copy()
    for i in range(n):
        for a in range(count):
            f = k[i, a]
            row = idx[a]
            for j in range(n):
                p_new[i, j] -= f * covariance[row, j]
    # P⁺ = A − A[:, idx]·Kᵀ + (K·R)·Kᵀ = A + G·Kᵀ with G = K·R − A[:, idx]
    g = np.empty((n, count))
    for i in range(n):
        for b in range(count):
            acc = 0.0
            for a in range(count):
                acc += k[i, a] * r[a, b]
            g[i, b] = acc - p_new[i, idx[b]]
    for i in range(n):
        for a in range(count):
            f = g[i, a]
            for j in range(n):
                p_new[i, j] += f * kt[a, j]
    for i in range(3, 6):
        x[i] = clamp_rotation(x[i])
    return True, x, p_new


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
    """Q, or the dynamic Q′: the pose block scaled by ‖(vx, vy, vz, vroll, vpitch, vyaw)‖² of ``state``."""
    if not dynamic_noise:
        return process_noise
    q = process_noise.copy()
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
    x += Kν, P −= K·P_zz·Kᵀ.  Returns (applied, state, covariance, sigma)."""
    if regenerate:
        sigma = sigma_points(state, covariance, lam)
    count = 0
    for i in range(15):
        if update[i] and np.isfinite(z[i]):
            count += 1
    if count == 0:
        return False, state, covariance, sigma
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
    projected = np.ascontiguousarray(sigma[:, idx])
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
        return False, state, covariance, sigma
    x = state + k @ innovation
    p = covariance - k @ p_zz @ k.T
    for i in range(3, 6):
        x[i] = clamp_rotation(x[i])
    return True, x, p, sigma
