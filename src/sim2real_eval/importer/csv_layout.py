"""The generic CSV layout (docs/import.md): three files any logger can write, one clock, SI units.

``SRC/gnss.csv``   t, lat, lon, alt [, sigma_h, sigma_v, status]
``SRC/imu.csv``    t, ax, ay, az, wx, wy, wz
``SRC/truth.csv``  t + one position family, + optional attitude and body rates:
                   ECEF  x_ecef, y_ecef, z_ecef [, vx_ecef, vy_ecef, vz_ecef]     (m, m/s)
                   LLA   lat, lon, alt [, v_east, v_north, v_up]                 (deg, deg, m; m/s local ENU)
                   ENU   east, north, up [, v_east, v_north, v_up]  + --datum    (m, m/s at the datum)
                   (no velocity columns: velocity from the smoothed poses, ``vehicle.pose_velocity``)
                   [qx, qy, qz, qw]  attitude of base_link in that frame (ECEF, or local ENU)
                   [wx, wy, wz]      body rates of base_link (rad/s, FLU)

- ``t``: seconds, the same clock in all three files (any origin: epoch or since start);
  ``--time-offset`` is added to every ``t`` (header stamps must be > 0).
- ``alt``: metres above the WGS-84 ellipsoid.  ``sigma_h``/``sigma_v``: 1-σ metres (optional; the
  receiver-accuracy policy in ``importer.covariance`` applies otherwise).  ``status``: NavSatStatus
  (−1 no fix, 0 fix, 1 SBAS, 2 GBAS; default 0).
- IMU: specific force (m/s², +g on the up axis at rest, REP-145) and rates (rad/s) in the IMU's axes:
  FLU by default, ``--imu-axes frd`` for forward-right-down loggers; ``--estimate-mounting`` fits any
  other rotation from the drive.
- Lines starting with ``#`` and blank lines are skipped; columns may come in any order; other columns
  are ignored.  Bad input — a missing file or column, a field that is not a finite number, ``t`` not
  strictly increasing, a truth that does not cover the sensors — is one error naming file, column and
  line.
"""
from __future__ import annotations

import csv
from array import array
from pathlib import Path

import numpy as np

from .. import limits
from ..errors import UserError
from ..geodesy import as_datum, check_altitude
from ..models import samples as S
from . import covariance as cov
from . import frames
from .drive import Drive, Fixes, Inertial, check_imu_values, check_stamps, imu_residual_variance
from .vehicle import POSE_CUTOFF_HZ

FILES = ("gnss.csv", "imu.csv", "truth.csv")
GNSS_COLUMNS = ("t", "lat", "lon", "alt")
GNSS_OPTIONAL = ("sigma_h", "sigma_v", "status")
IMU_COLUMNS = ("t", "ax", "ay", "az", "wx", "wy", "wz")
TRUTH_FAMILIES = {
    "ecef": ("x_ecef", "y_ecef", "z_ecef", "vx_ecef", "vy_ecef", "vz_ecef"),
    "lla": ("lat", "lon", "alt", "v_east", "v_north", "v_up"),
    "enu": ("east", "north", "up", "v_east", "v_north", "v_up"),
}
TRUTH_FAMILY_KEYS = {"ecef": "x_ecef", "lla": "lat", "enu": "east"}
ATTITUDE = ("qx", "qy", "qz", "qw")
RATES = ("wx", "wy", "wz")
IMU_AXES = ("flu", "frd")


def read_table(path: Path, required, optional=()) -> dict:
    """{column: float64 array} of the ``required`` and present ``optional`` columns of one CSV file,
    checked: every value a finite number, ``t`` strictly increasing (errors name file, column, line).
    Read as a stream (a row at a time into typed arrays: memory ~ the numbers, not the text) from a
    regular file of at most ``limits.CSV_FILE``; a UTF-8 byte-order mark (spreadsheet exports) is
    accepted."""
    with _open_csv(path) as stream:
        rows = _content_rows(csv.reader(stream))
        try:
            header_line, header = next(rows)
        except StopIteration:
            raise UserError(f"{path}: empty (expected a header line with {', '.join(required)})") from None
        names = [name.strip() for name in header]
        duplicated = sorted({n for n in names if names.count(n) > 1 and n})
        if duplicated:
            raise UserError(f"{path}: line {header_line}: column(s) {', '.join(duplicated)} appear twice")
        missing = [name for name in required if name not in names]
        if missing:
            raise UserError(f"{path}: missing column(s) {', '.join(missing)} "
                            f"(header has: {', '.join(names)})")
        wanted = list(required) + [name for name in optional if name in names]
        out = _numbers(path, rows, names, wanted)
    if len(out["t"]) < 2:
        raise UserError(f"{path}: needs at least 2 data lines, got {len(out['t'])}")
    steps = np.diff(out["t"])
    if (steps <= 0).any():
        i = int(np.argmax(steps <= 0)) + 1
        raise UserError(f"{path}: column t: not strictly increasing at line {out['_lines'][i]} "
                        f"({float(out['t'][i - 1])!r} then {float(out['t'][i])!r})")
    return out


def _open_csv(path: Path):
    """The open text stream of a CSV file: a regular file within ``limits.CSV_FILE`` (a FIFO or device
    is refused, not read), decoded as UTF-8 with an optional byte-order mark."""
    if not path.is_file():
        raise UserError(f"{path}: missing (the CSV layout needs {', '.join(FILES)} in one folder)")
    size = path.stat().st_size
    if size > limits.CSV_FILE.high:
        raise UserError(f"{path}: {size / limits.MIB:.0f} MiB, above the limit of "
                        f"{limits.CSV_FILE.high / limits.MIB:.0f} MiB for an imported CSV file (split the "
                        "drive into several folders; docs/limits.md)")
    try:
        return open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({limits.describe_os_error(exc)})") from None


def _content_rows(reader):
    """(line number, fields) of the CSV rows that are neither blank nor comments (lazily)."""
    for row in reader:
        if row and "".join(row).strip() and not row[0].lstrip().startswith("#"):
            yield reader.line_num, row


def _numbers(path: Path, rows, names: list, wanted: list) -> dict:
    """{column: float64 array} of the ``wanted`` columns of the data ``rows`` (+ "_lines", their line
    numbers): every line as many fields as the header, every value a finite number."""
    index = {name: names.index(name) for name in wanted}
    columns = {name: array("d") for name in wanted}
    numbers = array("q")
    line = 0
    try:
        for line, row in rows:
            if len(row) != len(names):
                raise UserError(f"{path}: line {line}: {len(row)} fields, the header has {len(names)}")
            for name, i in index.items():
                text = row[i].strip()
                try:
                    value = float(text)
                except ValueError:
                    raise UserError(f"{path}: column {name}: not a number at line {line}: {text!r}") from None
                if value - value != 0.0:   # inf or nan
                    raise UserError(f"{path}: column {name}: {text!r} at line {line} (expected a finite "
                                    "number)")
                columns[name].append(value)
            numbers.append(line)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"{path}: cannot read after line {line} ({exc})") from None
    out = {name: np.frombuffer(values, dtype=float) if len(values) else np.empty(0)
           for name, values in columns.items()}
    out["_lines"] = np.frombuffer(numbers, dtype=np.int64) if len(numbers) else np.empty(0, dtype=np.int64)
    return out


def _truth_family(path: Path) -> str:
    """Which position family truth.csv uses (from its header)."""
    with _open_csv(path) as stream:
        try:
            header = next(_content_rows(csv.reader(stream)), (0, []))[1]
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise UserError(f"{path}: cannot read ({exc})") from None
    names = {name.strip() for name in header}
    found = [family for family, key in TRUTH_FAMILY_KEYS.items() if key in names]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise UserError(f"{path}: positions given in several frames ({', '.join(found)}); "
                        "keep one of x_ecef…, lat/lon/alt, east/north/up")
    raise UserError(f"{path}: missing position columns: x_ecef, y_ecef, z_ecef (ECEF), lat, lon, alt (LLA) "
                    "or east, north, up (ENU, with --datum)")


def _optional_group(table: dict, names, path: Path):
    present = [name for name in names if name in table]
    if not present:
        return None
    if len(present) != len(names):
        missing = [name for name in names if name not in table]
        raise UserError(f"{path}: missing column(s) {', '.join(missing)} "
                        f"(give all of {', '.join(names)} or none)")
    return np.column_stack([table[name] for name in names])


def read_truth(path: Path, datum, time_offset: float):
    family = _truth_family(path) if path.is_file() else "ecef"
    columns = TRUTH_FAMILIES[family]
    table = read_table(path, ("t",) + columns[:3], columns[3:] + ATTITUDE + RATES)
    check_stamps(f"{path}: column t", table["t"], time_offset, table["_lines"], "--time-offset")
    t = table["t"] + time_offset
    position = np.column_stack([table[c] for c in columns[:3]])
    velocity = _optional_group(table, columns[3:], path)  # None: from the smoothed poses
    attitude = _optional_group(table, ATTITUDE, path)
    if attitude is not None:
        norms = np.linalg.norm(attitude, axis=1)
        bad = np.abs(norms - 1.0) > 1e-3
        if bad.any():
            i = int(np.argmax(bad))
            raise UserError(f"{path}: columns qx, qy, qz, qw: not a unit quaternion at line "
                            f"{table['_lines'][i]} (norm {norms[i]:.6f})")
    rates = _optional_group(table, RATES, path)
    source = str(path)
    if family == "enu" and datum is None:
        raise UserError(f"{path}: positions in ENU (east, north, up) need --datum LAT LON ALT "
                        "(the geodetic point they are relative to)")
    if family == "lla":
        bad = (np.abs(position[:, 0]) > 90) | (np.abs(position[:, 1]) > 360)
        if bad.any():
            i = int(np.argmax(bad))
            raise UserError(f"{path}: columns lat, lon: out of range at line {table['_lines'][i]}")
        check_altitude(position[:, 2], f"{path}: column alt", table["_lines"])
    measured: dict = {}
    if family == "ecef":
        truth, datum = frames.truth_from_ecef(t, position, velocity, attitude, rates, datum, source,
                                              measured=measured)
    elif family == "lla":
        truth, datum = frames.truth_from_lla(t, position[:, 0], position[:, 1], position[:, 2], velocity,
                                             attitude, rates, datum, source, measured=measured)
    else:
        truth, datum = frames.truth_from_enu(t, position, velocity, attitude, rates, datum, source,
                                             measured=measured)
    check_altitude(datum.alt, f"{path}: the datum (the first truth position)")
    given = list(columns) if velocity is not None else list(columns[:3])
    described = {"frame": family, "columns": given, "measured": measured,
                 "velocity": "given" if velocity is not None else
                 f"from the poses: zero-phase low-pass at {POSE_CUTOFF_HZ:g} Hz, then centred differences",
                 "attitude": "given (qx, qy, qz, qw)" if attitude is not None else
                 "planar: yaw along the horizontal velocity, roll = pitch = 0",
                 "rates": "given (wx, wy, wz)" if rates is not None else
                 ("from the smoothed attitude" if attitude is not None else "from the smoothed yaw"),
                 "specific_force": "from the smoothed velocity (5 Hz zero-phase)",
                 "rate_hz": round(float((len(truth) - 1) / truth.duration), 3)}
    return truth, datum, described


def read_folder(src, fix_covariance: float | None = None, fix_covariance_scale: float = 1.0,
                estimate_mounting: bool = False, imu_axes: str = "flu", datum=None,
                time_offset: float = 0.0) -> Drive:
    """The Drive of one folder in the CSV layout (module docstring)."""
    folder = Path(src)
    if not folder.is_dir():
        raise UserError(f"{src}: no such folder (expected {', '.join(FILES)} in it)")
    if imu_axes not in IMU_AXES:
        raise UserError(f"--imu-axes: expected one of {', '.join(IMU_AXES)}, got {imu_axes!r}")
    if not np.isfinite(time_offset):
        raise UserError(f"--time-offset: expected a number of seconds, got {time_offset!r}")
    datum = None if datum is None else as_datum(datum, "--datum")
    paths = {name: folder / name for name in FILES}
    gnss = read_table(paths["gnss.csv"], GNSS_COLUMNS, GNSS_OPTIONAL)
    imu_table = read_table(paths["imu.csv"], IMU_COLUMNS)
    for name, table in (("gnss.csv", gnss), ("imu.csv", imu_table)):
        check_stamps(f"{paths[name]}: column t", table["t"], time_offset, table["_lines"], "--time-offset")
    truth, datum, truth_record = read_truth(paths["truth.csv"], datum, float(time_offset))

    t_imu = imu_table["t"] + time_offset
    accel = np.column_stack([imu_table[c] for c in ("ax", "ay", "az")])
    gyro = np.column_stack([imu_table[c] for c in ("wx", "wy", "wz")])
    check_imu_values(str(paths["imu.csv"]), accel, gyro, imu_table["_lines"])
    del imu_table, table   # its columns are in accel, gyro now (a long drive's imu.csv: 128 MB less)
    if imu_axes == "frd":
        accel, gyro = frames.frd_to_flu(accel), frames.frd_to_flu(gyro)
    mounting = frames.IDENTITY
    if estimate_mounting:
        mounting = frames.estimate_mounting(truth, t_imu, accel, gyro, str(paths["imu.csv"]))
        accel, gyro = accel @ mounting.matrix.T, gyro @ mounting.matrix.T
    imu = Inertial(t_imu, accel, gyro)
    imu.accel_variance, imu.gyro_variance = imu_residual_variance(truth, imu)

    n = len(gnss["t"])
    bad = (np.abs(gnss["lat"]) > 90) | (np.abs(gnss["lon"]) > 360)
    if bad.any():
        i = int(np.argmax(bad))
        raise UserError(f"{paths['gnss.csv']}: columns lat, lon: out of range at line {gnss['_lines'][i]}")
    check_altitude(gnss["alt"], f"{paths['gnss.csv']}: column alt", gnss["_lines"])
    where_gnss = str(paths["gnss.csv"])
    if fix_covariance is not None:
        policy = cov.given_sigma(n, fix_covariance)
    elif "sigma_h" in gnss:
        policy = cov.reported_sigma(gnss["sigma_h"], gnss.get("sigma_v"), where_gnss)
    else:
        raise UserError(f"{where_gnss}: missing column sigma_h (the receiver's 1-sigma accuracy, m) and no "
                        "--fix-covariance SIGMA given: the judge needs a covariance for every fix")
    policy = cov.FixCovariance(policy.sigma, policy.covariance_type, policy.policy, policy.description,
                               float(fix_covariance_scale))
    status = np.full(n, S.STATUS_FIX, dtype=np.int8)
    if "status" in gnss:
        values = gnss["status"]
        bad = ~np.isin(values, (-1, 0, 1, 2))
        if bad.any():
            i = int(np.argmax(bad))
            raise UserError(f"{where_gnss}: column status: {float(values[i]):g} at line {gnss['_lines'][i]} "
                            "(expected -1 no fix, 0 fix, 1 SBAS, 2 GBAS)")
        status = values.astype(np.int8)
    fixes = Fixes(gnss["t"] + time_offset, gnss["lat"], gnss["lon"], gnss["alt"], status, policy)
    record = {
        "format": "csv", "source": str(folder.resolve()),
        "clock": {"source": "column t of gnss.csv, imu.csv, truth.csv (one clock)",
                  "time_offset_s": float(time_offset), "stamps": "t + time offset"},
        "frames": {"world": "ENU at the datum (odom)", "base_link": "the truth's body (FLU)",
                   "imu": f"base_link ({imu_axes.upper()} axes" + (", rotated with the estimated mounting)"
                                                                    if estimate_mounting else ")"),
                   "gps": "base_link (lever arm 0)", "mounting": mounting.record()},
        "datum": [float(v) for v in datum], "gnss": policy.record(),
        "imu": {"rate_hz": round(float((len(t_imu) - 1) / (t_imu[-1] - t_imu[0])), 3), "axes": imu_axes,
                "accel_sigma_m_s2": [round(float(v), 5) for v in np.sqrt(imu.accel_variance)],
                "gyro_sigma_rad_s": [round(float(v), 6) for v in np.sqrt(imu.gyro_variance)],
                "covariance": "variance of IMU - truth per axis (mean removed)"},
        "truth": truth_record,
    }
    return Drive(truth, datum, fixes, imu, {"truth": str(paths["truth.csv"]), "gnss": where_gnss,
                                            "imu": str(paths["imu.csv"])}, record, mounting)
