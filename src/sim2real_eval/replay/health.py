"""Judge health: does the judge (the embedded robot_localization) track the real vehicle?

The VEPD compares the real side's judged speed errors with the simulated side's; it means something only
while the judge tracks the real vehicle.  ``assess`` measures, per real run (docs/scoring.md, "Judge
health"):

- **speed**: the run's scored speed RMSE E (the VEPD's own, eq. 1, on the common timeline after the
  warm-up) against the truth's speed scale s = max(RMS of the truth speed on that timeline,
  ``SPEED_FLOOR``): the ratio E / s.  ``NOT_TRACKED_RATIO`` decides "not tracked".
- **innovation consistency** (NIS, post hoc, an approximation): for each fused sensor, the innovation of
  each measurement against the last /odometry/filtered output before its stamp (the prior, carried to the
  stamp at its velocity) and S = P_prior + R, NIS = νᵀS⁻¹ν, against its χ² band.  Exact innovations
  live inside the filter's correct step; the published series give the posterior covariance of the
  output before the measurement instead (so S is a little small) and no acceleration state (so the
  accelerations' NIS is not measured).
- **causes**, each measured from the data: gravity leaking into a 2-D judge that fuses accelerations
  (truth attitude × g), an accelerometer bias (IMU − truth specific force), a GPS stamp lag
  (``calibrate.drive.fit_lag``: fixes against the truth), a wrong mount (the angle between the IMU's and
  the truth's mean specific force), a diverging filter (error and covariance growing).
- **the truth's own velocity noise** (``truth_velocity_noise``) and how much of E² it could explain.

Every input is an array; ``health_of_replay`` (the replay's real run, in memory) and
``replay.offline.health_of_run_bag`` (a real run's bag, for ``score``) gather them.  The report renders
the dicts (``report.health``: the tables, the page, the warning with its next step).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import message_fields, rotations
from ..bags import get_typestore
from ..bags.columns import decode_messages, read_topics
from ..bags.messages import IMU as IMU_TYPE
from ..errors import UserError
from ..geodesy import geodetic_to_enu
from ..message_fields import ODOMETRY
from ..metrics.per_run import resample_run
from ..static_tf import mounting_rpy
from ..truth.bag import IMPORT_SIDECAR

SPEED_FLOOR = 0.2          # m/s: the speed scale of a run that (nearly) stands still
NOT_TRACKED_RATIO = 1.0    # E / s above it: the judge does not track the real vehicle (docs/scoring.md)
# A cause is "present" when its measure reaches its threshold; the one the data point to is the present
# cause with the largest measure / threshold.
GRAVITY_THRESHOLD = 0.3    # m/s²: RMS horizontal gravity a 2-D judge integrates (≈ 1.8° of tilt)
BIAS_THRESHOLD = 0.3       # m/s²: |mean(IMU − truth specific force)| on the fused axes
LAG_THRESHOLD = 0.1        # s: |GPS stamp lag|, when the lag explains ≥ LAG_GAIN of the fix error variance
LAG_GAIN = 0.2
MOUNT_THRESHOLD = 3.0      # deg: IMU mean specific force off the truth's
GROWTH_THRESHOLD = 3.0     # RMS speed error of the last third / the first third
COVARIANCE_GROWTH = 10.0   # and the filtered velocity variance, last third / first third
TRUTH_NOISE_WINDOW = 0.5   # s: the centred moving average the truth speed's noise is measured against
NIS_BAND = 0.95            # two-sided band of each NIS; "consistent": at most 2 × 5 % outside


@dataclass
class HealthInputs:
    """What the assessment reads (times: stamps ns, truth seconds on the same clock)."""

    t_est: Any                   # the scored series (metrics.inputs.RunSeries): s from the window start
    v_est: Any
    t_gt: Any
    v_gt: Any
    timeline_end: Any
    rmse: float                  # the run's scored E
    options: Any                 # metrics.ScoreOptions
    truth: Any = None            # truth.GroundTruth, t in s (the stamps' clock)
    filtered: Any = None         # judge.series.OdometrySeries of /odometry/filtered
    gps_odometry: Any = None     # /odometry/gps (navsat's output the EKF fuses)
    imu: dict | None = None      # /imu columns: stamp_ns, angular_velocity, linear_acceleration, covariances
    imu_rotation: Any = None     # 3×3 base_link ← IMU frame (None: unknown mount)
    fix: tuple | None = None     # (t s, ENU (N, 3) at the truth's datum) of /fix
    ekf: Any = None              # judge.params.EkfParams
    truth_noise: tuple | None = None  # (σ m/s, where it comes from) given by the data's import.yaml


# ----------------------------------------------------------------------------------------------- speed
def speed_scale(v_gt) -> float:
    """The truth's speed scale s = max(RMS(v_gt), SPEED_FLOOR) (m/s)."""
    v_gt = np.asarray(v_gt, dtype=float)
    return max(float(np.sqrt(np.mean(np.square(v_gt)))) if v_gt.size else 0.0, SPEED_FLOOR)


def _resampled(inputs: HealthInputs) -> tuple:
    return resample_run(np.asarray(inputs.t_est, float), np.asarray(inputs.v_est, float),
                        np.asarray(inputs.t_gt, float), np.asarray(inputs.v_gt, float), inputs.options,
                        inputs.timeline_end)


def error_growth(error) -> float:
    """RMS of the last third of ``error`` / RMS of its first third (1 for a flat error)."""
    error = np.asarray(error, dtype=float)
    third = len(error) // 3
    if third < 2:
        return 1.0
    first = float(np.sqrt(np.mean(np.square(error[:third]))))
    last = float(np.sqrt(np.mean(np.square(error[-third:]))))
    return last / max(first, 1e-9)


# ------------------------------------------------------------------------------------------------ NIS
# The 2.5 % and 97.5 % quantiles of χ² with 1, 2, 3 degrees of freedom (the dimensions fused here),
# tabulated so that a demo's worker processes need not import scipy.stats (~1 s each); tested against it.
CHI2_BANDS = {1: (0.0009820691171752555, 5.023886187314888), 2: (0.05063561596857975, 7.377758908227871),
              3: (0.21579528262389785, 9.348403604496148)}


def nis_band(dof: int) -> tuple:
    """(low, high): the central ``NIS_BAND`` interval of one NIS with ``dof`` degrees of freedom."""
    if dof in CHI2_BANDS and NIS_BAND == 0.95:
        return CHI2_BANDS[dof]
    from scipy.special import gammaincinv

    tail = (1 - NIS_BAND) / 2
    return 2 * float(gammaincinv(dof / 2, tail)), 2 * float(gammaincinv(dof / 2, 1 - tail))


def nis_summary(values, dof: int) -> dict | None:
    """{count, dof, mean, band (the 95 % band of one NIS), outside (fraction outside it), consistent}."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    low, high = nis_band(dof)
    outside = float(np.mean((values < low) | (values > high)))
    return {"count": int(values.size), "dof": int(dof), "mean": float(np.mean(values)), "band": [low, high],
            "outside": outside, "consistent": outside <= 2 * (1 - NIS_BAND)}


def _quadratic(nu: np.ndarray, s: np.ndarray) -> np.ndarray:
    """νᵀS⁻¹ν per row (NaN where S is singular)."""
    try:
        return np.einsum("ni,ni->n", nu, np.linalg.solve(s, nu[..., None])[..., 0])
    except np.linalg.LinAlgError:  # a singular S somewhere: row by row
        out = np.full(len(nu), np.nan)
        for i in range(len(nu)):
            try:
                out[i] = float(nu[i] @ np.linalg.solve(s[i], nu[i]))
            except np.linalg.LinAlgError:
                pass
        return out


def _prior_index(filtered, stamps_ns) -> np.ndarray:
    """Index of the last /odometry/filtered output strictly before each stamp (−1: none)."""
    return np.searchsorted(np.asarray(filtered.stamp_ns), np.asarray(stamps_ns), side="left") - 1


def _world_velocity(filtered, index) -> np.ndarray:
    return rotations.rotate(filtered.orientation[index], filtered.linear_velocity[index])


def gps_nis(filtered, gps, axes, differential: bool) -> dict | None:
    """NIS of /odometry/gps: absolute positions against the prior position carried to the stamp, S =
    P_xy + R_xy; differential (robot_localization turns position deltas into velocities): the delta over
    Δt against the prior's world velocity, S = P_v(world) + (R_k + R_k−1)/Δt²."""
    if gps is None or len(gps) < 2 or filtered is None or len(filtered) < 2 or not axes:
        return None
    axes = list(axes)
    stamps = np.asarray(gps.stamp_ns)
    index = _prior_index(filtered, stamps)
    ok = index >= 0
    if differential:
        ok[0] = False
    keep = np.flatnonzero(ok)
    if keep.size == 0:
        return None
    i = index[keep]
    r = gps.pose_covariance.reshape(-1, 6, 6)[:, :3, :3][:, axes][:, :, axes]
    velocity = _world_velocity(filtered, i)
    if not differential:
        dt = (stamps[keep] - filtered.stamp_ns[i]) * 1e-9
        predicted = filtered.position[i] + velocity * dt[:, None]
        p = filtered.pose_covariance.reshape(-1, 6, 6)[i, :3, :3][:, axes][:, :, axes]
        nu = (gps.position[keep] - predicted)[:, axes]
        s = p + r[keep]
    else:
        dt = (stamps[keep] - stamps[keep - 1]) * 1e-9
        nu = ((gps.position[keep] - gps.position[keep - 1]) / dt[:, None] - velocity)[:, axes]
        rot = rotations.to_matrix(filtered.orientation[i])
        p_body = filtered.twist_covariance.reshape(-1, 6, 6)[i, :3, :3]
        p = np.einsum("nij,njk,nlk->nil", rot, p_body, rot)[:, axes][:, :, axes]
        s = p + (r[keep] + r[keep - 1]) / np.square(dt)[:, None, None]
    return nis_summary(_quadratic(nu, s), len(axes))


def gyro_nis(filtered, imu: dict, rotation) -> dict | None:
    """NIS of the IMU's yaw rate: ν = (R·ω)_z − ω̂_z of the prior, S = P_ωz + (R·C·Rᵀ)_zz."""
    if filtered is None or imu is None or rotation is None or len(filtered) < 2:
        return None
    stamps = np.asarray(imu["stamp_ns"])
    index = _prior_index(filtered, stamps)
    keep = np.flatnonzero(index >= 0)
    if keep.size == 0:
        return None
    i = index[keep]
    rotation = np.asarray(rotation, dtype=float)
    measured = (np.asarray(imu["angular_velocity"], float)[keep] @ rotation.T)[:, 2]
    cov = np.asarray(imu["angular_velocity_covariance"], float).reshape(-1, 3, 3)[keep]
    r = np.einsum("j,njk,k->n", rotation[2], cov, rotation[2])  # (R·C·Rᵀ)_zz
    p = filtered.twist_covariance.reshape(-1, 6, 6)[i, 5, 5]
    nu = measured - filtered.angular_velocity[i, 2]
    s = p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(s > 0, nu * nu / s, np.nan)
    return nis_summary(values, 1)


# --------------------------------------------------------------------------------------------- causes
def _imu_sensor(ekf):
    return next((s for s in (ekf.sensors if ekf is not None else []) if s.kind == "imu"), None)


def fused_acceleration_axes(ekf) -> list:
    """Body axes (0 x, 1 y, 2 z) whose linear acceleration the judge's IMU input fuses."""
    sensor = _imu_sensor(ekf)
    if sensor is None:
        return []
    axes = [axis for axis in range(3) if sensor.config[12 + axis]]
    return [axis for axis in axes if axis != 2] if ekf.two_d_mode else axes


def gravity_leak(truth, stamps_s, axes, gravity: float = 9.80665, orientation=None, mount=None) -> float:
    """RMS (m/s²) over ``stamps_s`` of the gravity a 2-D judge leaves in its acceleration along the fused
    body ``axes``.  ekf_node removes gravity along the IMU message's orientation, or — when the message
    has none (orientation_covariance[0] = −1) — along its own attitude, level in two_d_mode: then what
    is left is gravity's component along the body axes the truth's attitude gives (for a pitch θ alone
    g·|sin θ| on x; for a roll φ alone g·|sin φ| on y).  With ``orientation`` (the messages' quaternions,
    the IMU frame in the world; NaN rows: none) and ``mount`` (base_link ← IMU frame), what is left is
    g·R_mount·(R_true − R_message)ᵀ·ẑ: the orientation's own error."""
    if not axes or truth is None or len(stamps_s) == 0:
        return 0.0
    attitude = truth.interpolate(stamps_s).orientation
    up = np.array([0.0, 0.0, gravity])
    body = rotations.rotate_inverse(attitude, up)  # gravity's reaction in base_link per the truth
    left = body - up                                 # a level attitude removes only its z
    if orientation is not None and mount is not None:
        given = np.all(np.isfinite(orientation), axis=1)
        if given.any():
            removed = rotations.rotate_inverse(orientation[given], up) @ np.asarray(mount, float).T
            left[given] = body[given] - removed
    left = left[:, axes]
    return float(np.sqrt(np.mean(np.sum(np.square(left), axis=1))))


def message_orientations(imu: dict, inside) -> np.ndarray | None:
    """The IMU messages' orientations (N, 4) with NaN rows where a message gives none (covariance[0] = −1,
    as ekf_node reads it), or None when the columns are absent."""
    if "orientation" not in imu or "orientation_covariance" not in imu:
        return None
    q = np.array(imu["orientation"], dtype=float)[inside]
    none = np.abs(np.asarray(imu["orientation_covariance"], float)[inside][:, 0] + 1.0) < 1e-9
    q[none] = np.nan
    return q


def accelerometer_bias(truth, stamps_s, accel_base, axes) -> np.ndarray:
    """mean(IMU specific force in base_link − the truth's) on ``axes`` (m/s²)."""
    if truth is None or len(stamps_s) == 0:
        return np.zeros(0)
    residual = np.asarray(accel_base, float) - truth.interpolate(stamps_s).specific_force
    return residual.mean(axis=0)[list(axes)]


def mount_angle(truth, stamps_s, accel_base) -> float:
    """Angle (deg) between the IMU's mean specific force in base_link and the truth's."""
    a = np.asarray(accel_base, float).mean(axis=0)
    b = truth.interpolate(stamps_s).specific_force.mean(axis=0)
    cosine = float(np.dot(a, b) / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))
    return math.degrees(math.acos(min(1.0, max(-1.0, cosine))))


def offset_or_rotation(truth, stamps_s, accel_base) -> tuple:
    """(RMS residual of IMU − truth specific force once its mean is removed, RMS residual once the IMU's
    vectors are turned by the best rotation onto the truth's: ``importer.frames.wahba``), m/s²."""
    from ..importer.frames import wahba

    imu = np.asarray(accel_base, float)
    body = truth.interpolate(stamps_s).specific_force
    residual = imu - body
    offset = residual - residual.mean(axis=0)
    rotated = imu @ wahba(imu, body).T - body
    return (float(np.sqrt(np.mean(np.sum(offset ** 2, axis=1)))),
            float(np.sqrt(np.mean(np.sum(rotated ** 2, axis=1)))))


def gps_lag(fix, truth) -> dict | None:
    """The GPS stamp lag L (``calibrate.drive.fit_lag``: fixes against the truth), and the fraction of
    the fixes' horizontal error variance it removes; None when it cannot be measured."""
    from ..calibrate.drive import DEFAULT_MAX_LAG, fit_lag

    if fix is None or truth is None:
        return None
    t, enu = fix
    try:
        lag, lags, costs = fit_lag(t, enu, truth, DEFAULT_MAX_LAG)
    except UserError:
        return None
    at_zero = float(np.interp(0.0, lags, costs))
    gain = 0.0 if at_zero <= 0 else max(0.0, 1.0 - float(np.min(costs)) / at_zero)
    return {"lag_s": float(lag), "variance_removed": gain}


def _inside(truth, stamps_s) -> np.ndarray:
    return (stamps_s >= truth.t[0]) & (stamps_s <= truth.t[-1])


def measure_causes(inputs: HealthInputs, error) -> dict:
    """{cause: {value, threshold, unit, present, …}} for every cause the data allow measuring."""
    causes: dict = {}
    truth, ekf = inputs.truth, inputs.ekf
    imu_ok = truth is not None and inputs.imu is not None and inputs.imu_rotation is not None
    if imu_ok:
        stamps = np.asarray(inputs.imu["stamp_ns"], dtype=np.int64) * 1e-9
        inside = _inside(truth, stamps)
        stamps = stamps[inside]
        accel = np.asarray(inputs.imu["linear_acceleration"], float)[inside] @ np.asarray(
            inputs.imu_rotation, float).T
        axes = fused_acceleration_axes(ekf)
        if stamps.size >= 10:
            if ekf is not None and ekf.two_d_mode:
                orientation = message_orientations(inputs.imu, inside)
                leak = gravity_leak(truth, stamps, axes, ekf.gravitational_acceleration, orientation,
                                    inputs.imu_rotation)
                given = orientation is not None and bool(np.isfinite(orientation).all(axis=1).any())
                causes["gravity"] = {"value": leak, "threshold": GRAVITY_THRESHOLD, "unit": "m/s²",
                                     "axes": [("x", "y", "z")[a] for a in axes],
                                     "removed_along": ("the IMU's orientation" if given
                                                       else "a level attitude")}
            bias_axes = axes or [0, 1]
            bias = accelerometer_bias(truth, stamps, accel, bias_axes)
            offset_rms, rotated_rms = offset_or_rotation(truth, stamps, accel)
            causes["accelerometer_bias"] = {"value": float(np.linalg.norm(bias)), "threshold": BIAS_THRESHOLD,
                                            "unit": "m/s²", "axes": [("x", "y", "z")[a] for a in bias_axes],
                                            "mean": [float(b) for b in bias], "residual_rms": offset_rms}
            causes["mount"] = {"value": mount_angle(truth, stamps, accel), "threshold": MOUNT_THRESHOLD,
                               "unit": "deg", "residual_rms": rotated_rms}
            # A constant offset and a rotation both move the mean; the one whose correction leaves the
            # smaller residual is what the data show (they differ once the attitude or the
            # accelerations change).  The other is not counted as present.
            loser = "mount" if offset_rms <= rotated_rms else "accelerometer_bias"
            causes[loser]["explained_by"] = "accelerometer_bias" if loser == "mount" else "mount"
    lag = gps_lag(inputs.fix, truth)
    if lag is not None:
        value = abs(lag["lag_s"]) if lag["variance_removed"] >= LAG_GAIN else 0.0
        causes["gps_lag"] = {"value": value, "threshold": LAG_THRESHOLD, "unit": "s", **lag}
    growth = error_growth(error)
    divergence = {"value": growth, "threshold": GROWTH_THRESHOLD, "unit": "×"}
    if inputs.filtered is not None and len(inputs.filtered) >= 6:
        variance = inputs.filtered.twist_covariance.reshape(-1, 6, 6)[:, 0, 0] + \
            inputs.filtered.twist_covariance.reshape(-1, 6, 6)[:, 1, 1]
        third = len(variance) // 3
        grown = float(np.mean(variance[-third:]) / max(float(np.mean(variance[:third])), 1e-300))
        divergence["covariance_growth"] = grown
        if grown < COVARIANCE_GROWTH:
            # the error grew but the filter's covariance did not: no divergence
            divergence["value"] = min(growth, GROWTH_THRESHOLD * 0.999)
    causes["divergence"] = divergence
    for cause in causes.values():
        cause["present"] = bool(cause["value"] >= cause["threshold"]) and "explained_by" not in cause
    return causes


def pointed_cause(causes: dict) -> str | None:
    """The present cause with the largest measure / threshold (None: none present)."""
    present = [(cause["value"] / cause["threshold"], name)
               for name, cause in causes.items() if cause["present"]]
    return max(present)[1] if present else None


# ------------------------------------------------------------------------------------ truth's own noise
def truth_velocity_noise(truth, window_s: float = TRUTH_NOISE_WINDOW) -> float | None:
    """σ (m/s) of the truth's horizontal speed around its centred moving average over ``window_s`` (n
    samples, at least 3, odd): std of the residual × √(n/(n−1)) (a white noise's residual against a mean
    that includes it has variance σ²(1 − 1/n)).  Motion slower than the window is not counted as noise."""
    if truth is None or len(truth) < 5:
        return None
    t = np.asarray(truth.t, float)
    step = float(np.median(np.diff(t)))
    if not step > 0:
        return None
    rate = 1.0 / step
    n = max(3, int(round(window_s * rate)) // 2 * 2 + 1)
    speed = np.hypot(truth.velocity[:, 0], truth.velocity[:, 1])
    if len(speed) < n + 2:
        return None
    smooth = np.convolve(speed, np.ones(n) / n, "valid")
    residual = speed[n // 2: n // 2 + len(smooth)] - smooth
    return float(np.std(residual) * math.sqrt(n / (n - 1)))


# ---------------------------------------------------------------------------------------------- assess
def assess(inputs: HealthInputs) -> dict:
    """The judge health of one real run (see the module docstring); JSON-ready."""
    _t, v_est_t, v_gt_t = _resampled(inputs)
    scale = speed_scale(v_gt_t)
    ratio = float(inputs.rmse) / scale
    error = v_est_t - v_gt_t
    nis: dict = {}
    ekf = inputs.ekf
    for sensor in (ekf.sensors if ekf is not None else []):
        if sensor.kind == "odom" and inputs.gps_odometry is not None:
            axes = [a for a in range(2 if ekf.two_d_mode else 3) if sensor.config[a]]
            found = gps_nis(inputs.filtered, inputs.gps_odometry, axes, sensor.differential)
            if found is not None:
                name = f"{sensor.kind}{sensor.index} position" + (" (differential)" * sensor.differential)
                nis[name] = found
        if sensor.kind == "imu" and sensor.config[11] and inputs.imu is not None:
            found = gyro_nis(inputs.filtered, inputs.imu, inputs.imu_rotation)
            if found is not None:
                nis[f"{sensor.kind}{sensor.index} yaw rate"] = found
    tracked = ratio <= NOT_TRACKED_RATIO
    # The causes explain a run that is not tracked; measuring them (the GPS lag's search above all) would
    # cost a tracked run more than judging it.
    causes = {} if tracked else measure_causes(inputs, error)
    noise = inputs.truth_noise
    if noise is None:
        sigma = truth_velocity_noise(inputs.truth)
        noise = None if sigma is None else (sigma, "estimated from the truth (residual against a "
                                                   f"{TRUTH_NOISE_WINDOW:g}-s moving average)")
    truth_noise = None if noise is None else {
        "sigma_mps": float(noise[0]), "source": noise[1],
        "explained_fraction": (min(1.0, float(noise[0]) ** 2 / float(inputs.rmse) ** 2)
                               if inputs.rmse > 0 else 1.0)}
    return {"tracked": bool(tracked),
            "speed": {"rmse": float(inputs.rmse), "scale": scale, "ratio": ratio,
                      "threshold": NOT_TRACKED_RATIO, "floor": SPEED_FLOOR},
            "nis": nis, "causes": causes, "cause": None if tracked else pointed_cause(causes),
            "truth_velocity_noise": truth_noise}


# ---------------------------------------------------------------------------------------- gathering
def import_truth_noise(bag_path) -> tuple | None:
    """(σ, source) from the imported bag's import.yaml, else None: ``truth.measured.velocity_noise_mps``
    (what the importer writes into each run's sidecar) or ``truth.velocity_noise_mps`` (the folder's
    import.yaml form)."""
    from ..yamlio import load_yaml

    sidecar = Path(bag_path) / IMPORT_SIDECAR
    if not sidecar.is_file():
        return None
    try:
        data = load_yaml(sidecar)
    except UserError:
        return None
    truth = data.get("truth") if isinstance(data, dict) else None
    measured = truth.get("measured") if isinstance(truth, dict) else None
    for key, block in (("truth.measured.velocity_noise_mps", measured), ("truth.velocity_noise_mps", truth)):
        value = block.get("velocity_noise_mps") if isinstance(block, dict) else None
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and math.isfinite(value) and value >= 0:
            return float(value), f"{sidecar}: {key}"
    return None


def imu_columns(records) -> dict | None:
    """The /imu columns the assessment reads, from CDR records (``bags.RawMessage``)."""
    if not records:
        return None
    names = ["stamp_ns", "orientation", "orientation_covariance", "angular_velocity", "linear_acceleration",
             "angular_velocity_covariance", "linear_acceleration_covariance"]
    return decode_messages(get_typestore(), message_fields.IMU, [r.data for r in records], names)


def imu_frame_rotation(records, judge) -> np.ndarray | None:
    """base_link ← the IMU's frame (its first message's) from the judge's static TFs; None when no TF
    connects it."""
    from ..judge.config import judge_parts

    if not records:
        return None
    base = judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))[0].base_link_frame
    frame = str(get_typestore().deserialize_cdr(records[0].data, IMU_TYPE).header.frame_id)
    rpy = [0.0, 0.0, 0.0] if frame in ("", base) else mounting_rpy(judge.static_tfs, frame, base)
    return None if rpy is None else rotations.to_matrix(rotations.from_rpy(*rpy))


def fix_enu(records, datum) -> tuple | None:
    """(t s, ENU) of /fix records at ``datum`` (None without a datum)."""
    if datum is None or not records:
        return None
    columns = decode_messages(get_typestore(), message_fields.NAVSATFIX, [r.data for r in records],
                              ["stamp_ns", "latitude", "longitude", "altitude"])
    good = np.isfinite(columns["latitude"]) & np.isfinite(columns["longitude"])
    enu = geodetic_to_enu(columns["latitude"][good], columns["longitude"][good], columns["altitude"][good],
                          datum)
    return np.asarray(columns["stamp_ns"][good], dtype=np.int64) * 1e-9, enu


def health_of_replay(spec, streams, result, series, score, options) -> dict:
    """The health of a replay's real run (``replay.offline``: its ReplaySpec, RealStreams, JudgeResult,
    scored RunSeries and RunScore)."""
    return assess_streams(spec, streams, result.filtered, result.gps_odometry, series, score, options)


def assess_streams(spec, streams, filtered, gps_odometry, series, score, options) -> dict:
    """The health of a real run judged from ``streams`` (replay.offline.RealStreams) by ``spec``'s judge,
    whose outputs are ``filtered`` and ``gps_odometry``."""
    from ..judge.config import judge_parts

    ekf = judge_parts(spec.judge.ekf, spec.judge.navsat, tuple(spec.judge.static_tfs))[0]
    inputs = HealthInputs(series.t_est, series.v_est, series.t_gt, series.v_gt, series.timeline_end,
                          score.rmse, options, truth=streams.truth, filtered=filtered,
                          gps_odometry=gps_odometry, imu=imu_columns(streams.imu),
                          imu_rotation=imu_frame_rotation(streams.imu, spec.judge),
                          fix=fix_enu(streams.gps, streams.datum), ekf=ekf,
                          truth_noise=import_truth_noise(spec.bag))
    return assess(inputs)


ODOMETRY_COLUMNS = ("stamp_ns", "position", "orientation", "pose_covariance", "linear_velocity",
                    "angular_velocity", "twist_covariance")


def odometry_outputs(reader, topics) -> dict:
    """{topic: OdometrySeries} of the Odometry ``topics`` a run bag holds."""
    from ..judge.series import OdometrySeries

    wanted = [t for t in topics if t in reader.topics and reader.topics[t].count]
    columns = read_topics(reader, {t: ODOMETRY for t in wanted}, {t: list(ODOMETRY_COLUMNS) for t in wanted})
    return {topic: OdometrySeries(np.asarray(values["stamp_ns"], np.int64), "", "",
                                  *(np.asarray(values[n], float) for n in ODOMETRY_COLUMNS[1:]))
            for topic, values in columns.items()}
