"""comma2k19 segments (the numpy layout of the public comma2k19 data set, MIT licence) → a ``Drive``.

A segment folder holds ``global_pose/`` (20 Hz post-processed pose: the truth) and ``processed_log/``
(every stream as ``t`` + ``value`` numpy arrays without extension, ``t`` in boot-time seconds, one clock
for all).  What is read and how:

- truth: ``global_pose/frame_{times,positions,velocities,orientations}`` — ECEF position and velocity
  of the device, attitude as a Hamilton quaternion [w, x, y, z] of the device frame (forward, right,
  down) in ECEF.  → ENU at the datum (the first pose, WGS-84 ellipsoidal height), FRD → FLU; body
  rates from the smoothed attitude (the pose has none); specific force from the smoothed velocity.
- fixes: ``processed_log/GNSS/live_gnss_ublox`` [lat deg, lon deg, speed, UTC ms, altitude m
  (ellipsoidal), bearing], stamped at log time like a ROS driver stamps at reception (the fix epoch
  is earlier: ``calibrate --truth`` measures that lag).  No accuracy field: the covariance comes from
  ``raw_gnss_ublox`` (column 5, pseudorange σ; epochs by column 2, GPS time of week) or
  ``--fix-covariance`` (``importer.covariance``).
- IMU: ``processed_log/IMU/accelerometer`` and ``IMU/gyro`` (bias-corrected), axes forward, right,
  down → FLU.  Same device as the pose, so its axes are the pose's body axes.
- clock: boot time + the offset to UTC from ``global_pose/frame_gps_times`` (GPS week, time of week;
  GPS − UTC = 18 s in 2017–2025), so header stamps are UTC epoch nanoseconds like a ROS recording.
- ``estimate_mounting``: base_link becomes the vehicle frame (``frames.vehicle_frame``: x along the
  direction of travel, z the mean up) instead of the device's own axes; truth and IMU are rotated
  into it.  Without it base_link is the device (tilted in the car: gravity leaks into x).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.lib import format as npy

from .. import limits
from ..errors import UserError
from ..geodesy import check_altitude
from ..models import samples as S
from . import covariance as cov
from . import frames
from .drive import Drive, Fixes, Inertial, check_imu_values, check_stamps, imu_residual_variance

GPS_EPOCH_UNIX_S = 315964800      # 1980-01-06T00:00:00Z
GPS_MINUS_UTC_S = 18              # leap seconds since 2017-01-01 (comma2k19 was recorded in 2018)
SECONDS_PER_WEEK = 604800

FILES = {
    "pose_t": "global_pose/frame_times",
    "pose_gps_t": "global_pose/frame_gps_times",
    "pose_position": "global_pose/frame_positions",
    "pose_velocity": "global_pose/frame_velocities",
    "pose_orientation": "global_pose/frame_orientations",
    "fix_t": "processed_log/GNSS/live_gnss_ublox/t",
    "fix": "processed_log/GNSS/live_gnss_ublox/value",
    "raw_t": "processed_log/GNSS/raw_gnss_ublox/t",
    "raw": "processed_log/GNSS/raw_gnss_ublox/value",
    "accel_t": "processed_log/IMU/accelerometer/t",
    "accel": "processed_log/IMU/accelerometer/value",
    "gyro_t": "processed_log/IMU/gyro/t",
    "gyro": "processed_log/IMU/gyro/value",
}
SHAPES = {"pose_gps_t": 2, "pose_position": 3, "pose_velocity": 3, "pose_orientation": 4, "fix": 6, "raw": 10,
          "accel": 3, "gyro": 3}
OPTIONAL = ("raw_t", "raw")
RAW_TOW, RAW_SIGMA = 2, 5         # raw_gnss_ublox columns: time of week (s), pseudorange σ (m)


def _load(root: Path, key: str, required: bool = True):
    path = root / FILES[key]
    if not path.is_file():
        if not required:
            return None
        raise UserError(f"{path}: missing (a comma2k19 segment folder holds global_pose/ and processed_log/)")
    width = SHAPES.get(key)
    expected = "(N,)" if width is None else f"(N, {width})"
    array = read_array(path, 1 if width is None else 2, expected)
    wrong = array.ndim != 1 if width is None else (array.ndim != 2 or array.shape[1] < width)
    if wrong:
        raise UserError(f"{path}: shape {array.shape}, expected {expected}")
    return array


def read_array(path: Path, ndim: int, expected: str) -> np.ndarray:
    """The float64 contents of a .npy file, checked from its header before anything is loaded: a numeric
    dtype (not text or objects), ``ndim`` dimensions, at most ``limits.NPY_ROWS`` rows, and a file long
    enough for what the header claims (a forged header cannot make numpy allocate terabytes)."""
    try:
        with open(path, "rb") as stream:
            version = npy.read_magic(stream)
            read_header = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}.get(version)
            if read_header is None:
                raise UserError(f"{path}: .npy format version {version[0]}.{version[1]}, expected 1.0 or 2.0 "
                                "(numeric arrays)")
            shape, _fortran_order, dtype = read_header(stream)
            data_bytes = path.stat().st_size - stream.tell()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({limits.describe_os_error(exc)})") from None
    except ValueError as exc:
        raise UserError(f"{path}: not a numpy .npy array ({str(exc).splitlines()[0]})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise UserError(f"{path}: dtype {dtype.str!r}, expected numbers (float or integer)")
    if len(shape) != ndim:
        raise UserError(f"{path}: shape {shape}, expected {expected}")
    limits.NPY_ROWS.check(shape[0], f"{path}: rows")
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if claimed > data_bytes:
        raise UserError(f"{path}: the header claims shape {shape} of {dtype.str} ({claimed} bytes) but "
                        f"the file holds {data_bytes} bytes of data (truncated or not a comma2k19 array)")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a numpy array ({str(exc).splitlines()[0]})") from None
    return np.asarray(array, dtype=float)


def _check_time(path: Path, t: np.ndarray, length: int) -> None:
    if len(t) != length:
        raise UserError(f"{path}: {len(t)} times for {length} values")
    bad = ~np.isfinite(t)
    if bad.any():
        raise UserError(f"{path}: column t: not a number at row {int(np.argmax(bad))}")
    steps = np.diff(t)
    if (steps <= 0).any():
        i = int(np.argmax(steps <= 0)) + 1
        raise UserError(f"{path}: column t: not strictly increasing at row {i} "
                        f"({float(t[i - 1])!r} then {float(t[i])!r})")


def _check_finite(path: Path, values: np.ndarray, columns) -> None:
    for index in columns:
        bad = ~np.isfinite(values[:, index])
        if bad.any():
            raise UserError(f"{path}: column {index}: not a number at row {int(np.argmax(bad))}")


def segment_root(src) -> Path:
    root = Path(src)
    if not root.is_dir():
        raise UserError(f"{src}: no such comma2k19 segment folder")
    if not (root / "global_pose").is_dir() and not (root / "processed_log").is_dir():
        raise UserError(f"{src}: not a comma2k19 segment folder (expected global_pose/ and processed_log/ "
                        "in it)")
    return root


def read_segment(src, fix_covariance: float | None = None, fix_covariance_scale: float = 1.0,
                 estimate_mounting: bool = False) -> tuple:
    """(Drive, epoch offset ns) of one segment folder (see the module docstring)."""
    root = segment_root(src)
    a = {key: _load(root, key, key not in OPTIONAL) for key in FILES}
    for t_key, v_key in (("pose_t", "pose_position"), ("fix_t", "fix"), ("accel_t", "accel"),
                         ("gyro_t", "gyro")):
        _check_time(root / FILES[t_key], a[t_key], len(a[v_key]))
    for key in ("pose_gps_t", "pose_velocity", "pose_orientation"):
        if len(a[key]) != len(a["pose_t"]):
            raise UserError(f"{root / FILES[key]}: {len(a[key])} rows for {len(a['pose_t'])} pose times")
    for key in ("pose_gps_t", "pose_position", "pose_velocity", "pose_orientation", "accel", "gyro"):
        _check_finite(root / FILES[key], a[key], range(SHAPES[key]))
    _check_finite(root / FILES["fix"], a["fix"], (0, 1, 4))
    check_altitude(a["fix"][:, 4], f"{root / FILES['fix']}: column 4 (altitude)")
    axes = ("0", "1", "2") * 2
    check_imu_values(str(root / FILES["accel"]), a["accel"][:, :3], np.zeros((1, 3)), names=axes)
    check_imu_values(str(root / FILES["gyro"]), np.zeros((1, 3)), a["gyro"][:, :3], names=axes)

    # Clock: boot time → UTC epoch through the pose's GPS times.
    week, time_of_week = a["pose_gps_t"][:, 0], a["pose_gps_t"][:, 1]
    gps_unix = GPS_EPOCH_UNIX_S + week * SECONDS_PER_WEEK + time_of_week - GPS_MINUS_UTC_S
    offsets = gps_unix - a["pose_t"]
    if np.ptp(offsets) > 0.01:
        raise UserError(f"{root / FILES['pose_gps_t']}: boot time and GPS time drift apart by "
                        f"{np.ptp(offsets) * 1e3:.1f} ms within the segment; cannot align the clocks")
    offset_s = float(np.median(offsets))
    for key in ("pose_t", "fix_t", "accel_t", "gyro_t"):
        check_stamps(f"{root / FILES[key]} + the UTC offset from {FILES['pose_gps_t']}", a[key], offset_s)
    offset_ns = int(round(offset_s * 1e9))

    # Truth (device FRD attitude → FLU).
    q_wxyz = a["pose_orientation"][:, :4]
    q_ecef_frd = np.column_stack([q_wxyz[:, 1:], q_wxyz[:, :1]])
    where_truth = str(root / "global_pose")
    measured: dict = {}
    truth, datum = frames.truth_from_ecef(a["pose_t"], a["pose_position"], a["pose_velocity"],
                                          frames.attitude_frd_to_flu(q_ecef_frd), None, None, where_truth,
                                          measured=measured)
    check_altitude(datum.alt, f"{where_truth}: the datum (the first pose)")

    # IMU (FRD → FLU), gyro on the accelerometer's stamps.
    t_imu = a["accel_t"]
    accel = frames.frd_to_flu(a["accel"][:, :3])
    if np.array_equal(a["gyro_t"], t_imu):
        gyro = a["gyro"][:, :3]
    else:
        gyro = np.column_stack([np.interp(t_imu, a["gyro_t"], a["gyro"][:, i]) for i in range(3)])
    gyro = frames.frd_to_flu(gyro)

    mounting = frames.IDENTITY
    if estimate_mounting:
        vehicle = frames.vehicle_frame(truth, source=where_truth)   # R_device←vehicle
        truth = frames.rotate_body(truth, vehicle, where_truth)
        accel, gyro = accel @ vehicle.matrix, gyro @ vehicle.matrix
        # recorded like every mounting: the IMU's (the device's) axes in base_link, R_base_link←imu
        mounting = frames.Mounting(vehicle.matrix.T, vehicle.method)
    imu = Inertial(t_imu, accel, gyro)
    imu.accel_variance, imu.gyro_variance = imu_residual_variance(truth, imu)

    # Fixes and their covariance.
    fix = a["fix"]
    where_fix = str(root / FILES["fix"])
    if fix_covariance is not None:
        policy = cov.given_sigma(len(fix), fix_covariance)
    elif a["raw"] is not None and a["raw_t"] is not None:
        raw_path = root / FILES["raw"]
        if len(a["raw_t"]) != len(a["raw"]):
            raise UserError(f"{raw_path}: {len(a['raw'])} rows for {len(a['raw_t'])} times")
        epoch_t, epoch_sigma = cov.pseudorange_epochs(a["raw_t"], a["raw"][:, RAW_TOW],
                                                      a["raw"][:, RAW_SIGMA])
        policy = cov.from_pseudorange(a["fix_t"], epoch_t, epoch_sigma, str(raw_path))
    else:
        raise UserError(f"{where_fix}: the u-blox fix has no accuracy and {root / FILES['raw']} is missing; "
                        "give --fix-covariance SIGMA (m)")
    policy = cov.FixCovariance(policy.sigma, policy.covariance_type, policy.policy, policy.description,
                               float(fix_covariance_scale))
    fixes = Fixes(a["fix_t"], fix[:, 0], fix[:, 1], fix[:, 4], np.full(len(fix), S.STATUS_FIX, dtype=np.int8),
                  policy)
    record = {
        "format": "comma2k19", "source": str(root.resolve()),
        "clock": {"source": "boot time (s) of every stream", "stamps": "UTC epoch = boot time + offset",
                  "offset_ns": offset_ns, "gps_minus_utc_s": GPS_MINUS_UTC_S,
                  "fixes": "stamped at log time (as a ROS driver stamps at reception)"},
        "frames": {"world": "ENU at the datum (odom)", "base_link": (
            "vehicle frame (x = direction of travel, z = mean up), estimated from the drive"
            if estimate_mounting else "the comma device's axes, forward-right-down turned to FLU"),
            "imu": "base_link (FRD -> FLU, rotated with the mounting)", "gps": "base_link (lever arm 0)",
            "mounting": mounting.record()},
        "datum": [float(v) for v in datum],
        "gnss": policy.record(),
        "imu": {"rate_hz": round(float((len(t_imu) - 1) / (t_imu[-1] - t_imu[0])), 3),
                "accel_sigma_m_s2": [round(float(v), 5) for v in np.sqrt(imu.accel_variance)],
                "gyro_sigma_rad_s": [round(float(v), 6) for v in np.sqrt(imu.gyro_variance)],
                "covariance": "variance of IMU - truth per axis (mean removed)"},
        "truth": {"source": "global_pose (comma's post-processed INS/GNSS/vision pose)",
                  "rate_hz": round(float((len(truth) - 1) / truth.duration), 3),
                  "derived": "body rates from the smoothed attitude; specific force from the smoothed "
                             "velocity (5 Hz zero-phase)", "measured": measured},
    }
    drive = Drive(truth, datum, fixes, imu, {"truth": where_truth, "gnss": where_fix,
                                             "imu": str(root / FILES["accel"])}, record, mounting)
    return drive, offset_ns
