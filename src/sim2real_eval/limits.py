"""Resource bounds: how much work or memory an input may ask for, in one table (robot-side: Python 3.8).

A typo (``rate: 1e9``), a hostile file (a 700-byte YAML alias bomb, ``--config /dev/zero``) or a
pathological value (``--tick-latency-ms 1e30``) must be a one-line error naming the parameter and the
bound, not minutes of work, a MemoryError or a traceback.  Every bound lives here as a ``Bound`` row of
``BOUNDS`` (docs/limits.md shows the same table; tests/test_hostile_inputs.py checks they agree) and is
enforced in one place, named in its ``where`` column.  The bounds are far above any real use: each
``why`` says what real sensors, vehicles or statistics need.

Reading files: ``read_file`` is the one reader of configuration files (YAML studies, presets, judge
parameter files, manifests, run.yaml, bag metadata.yaml): regular files only (a FIFO would block, a
device never ends), at most ``FILE_BYTES``.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import NamedTuple, Optional

from .errors import UserError

MIB = 1 << 20


class Bound(NamedTuple):
    """One bound: the parameter(s) it applies to, the limits, the unit, why, and where it is checked."""

    name: str
    low: Optional[float]
    high: Optional[float]
    unit: str
    why: str
    where: str

    def check(self, value: float, what: Optional[str] = None) -> float:
        """``value`` if inside [low, high], else a UserError naming ``what`` (default: the parameter)."""
        what = what or self.name
        unit = f" {self.unit}" if self.unit else ""
        if self.high is not None and not value <= self.high:
            raise UserError(f"{what}: {value:g}{unit} is above the limit of {self.high:g}{unit} ({self.why})")
        if self.low is not None and not value >= self.low:
            raise UserError(f"{what}: {value:g}{unit} is below the limit of {self.low:g}{unit} ({self.why})")
        return value


FILE_BYTES = 16 * MIB
CONFIG_FILE = Bound(
    "configuration file size (studies, presets, judge YAML, manifests, run.yaml, bag metadata.yaml)",
    None, FILE_BYTES, "bytes",
    "the largest shipped one has 3 kB; regular files only, so a FIFO or /dev/zero is refused at once",
    "limits.read_file")
YAML_VALUES = Bound(
    "values in one YAML document, aliases expanded",
    None, 1_000_000, "values",
    "a 700-byte alias bomb expands to billions; a manifest entry is ~11 values (~90 000 runs fit)",
    "yamlio.load_yaml")
GROUND_TRUTH_RATE = Bound(
    "ground_truth_rate (study, demo file, replay --ground-truth-rate)", 1.0, 1000.0, "Hz",
    "the scorer resamples at 15 Hz; below 1 Hz a run has too few truth messages to score, above "
    "1 kHz only the bag grows",
    "bags.records.check_ground_truth_rate")
SCENARIO_RATE = Bound(
    "scenario rate (integration of the bicycle model)", 100.0, 10_000.0, "Hz",
    "the IMU truth needs >= 100 Hz; an IMU model runs at most at 5 kHz",
    "scenarios.simulate")
SCENARIO_DURATION = Bound(
    "scenario duration (sum of the phases)", None, 3600.0, "s",
    "an hour of simulated driving at 200 Hz is 720 000 truth samples; real drives of any length are "
    "replayed from bags",
    "scenarios.simulate")
GPS_RATE = Bound("GPS model rate", None, 100.0, "Hz", "no GNSS receiver publishes faster",
                 "models.base.model_rate")
IMU_RATE = Bound("IMU model rate", None, 5000.0, "Hz", "no MEMS or tactical IMU publishes faster",
                 "models.base.model_rate")
JUDGE_FREQUENCY = Bound(
    "ekf / navsat frequency (robot_localization parameter files)", None, 1000.0, "Hz",
    "robot_localization runs at 10-50 Hz; each tick is a filter step (1e7 Hz: a 31 s bag took 158 s)",
    "judge.params")
TICK_LATENCY = Bound(
    "tick latency (--tick-latency-ms, judge timing tick_latency_ms)", None, 1000.0, "ms",
    "measured ROS tick latencies are < 26 ms (docs/judge.md, 'Timing')",
    "runs.timing.TimingModel")
SCORE_RATE = Bound("score --rate (common timeline)", None, 1000.0, "Hz",
                   "the scored series are published at tens of Hz", "metrics.options.ScoreOptions")
RESAMPLES = Bound(
    "--bootstrap / --permutations (and a demo file's score: bootstrap, permutations)", 0, 100_000,
    "resamples", "N permutations resolve a p-value to 1/(N+1): 1e-5 at the bound; the cost grows linearly "
    "with N",
    "metrics.options.ScoreOptions")
REPEATS = Bound(
    "repeats K (study repeats, demo --k, make-reference --k)", 1, 1000, "runs",
    "the paper uses K = 10; each run is a bag of a few MB", "limits.check_repeats")

# Imported drives (sim2real-eval import, docs/import.md).
HEADER_STAMP = Bound(
    "header stamps of imported data (csv t + --time-offset; comma2k19 boot time + its UTC offset)", 0,
    9.2e9, "s",
    "stamps are int64 nanoseconds since 1970 (rosbag2): they overflow at 9.22e9 s (year 2262); "
    "robot_localization drops stamp 0",
    "importer.drive.check_stamps")
ALTITUDE = Bound(
    "altitude (gnss.csv and truth.csv alt, --datum ALT, datum alt, comma2k19 fixes)", -1000.0, 100_000.0,
    "m", "ellipsoidal height: the lowest dry land (Dead Sea shore, -430 m) and the lowest geoid (-106 m) lie "
    "above -1 km; 100 km is the edge of space (balloons reach 50 km, civil receivers stop at 18 km)",
    "geodesy.check_altitude")
IMPORT_RUNS = Bound(
    "runs of one import (--window/--stride over all drives)", 1, 1000, "runs",
    "counted before any window is built; 1000 windows of 10 s are 2.8 h of driving (a longer stride "
    "covers more)", "importer.drive.windows")
IMU_ACCELERATION = Bound(
    "imported IMU specific force, each axis (imu.csv ax, ay, az; comma2k19 accelerometer)", -1000.0, 1000.0,
    "m/s²", "about 100 g: vehicle IMUs saturate at 2-50 g; beyond it a value is a logging fault (1e308 "
    "made the covariance inf)", "importer.drive.check_imu_values")
IMU_RATE_VALUE = Bound(
    "imported IMU angular rate, each axis (imu.csv wx, wy, wz; comma2k19 gyro)", -100.0, 100.0, "rad/s",
    "MEMS gyroscopes' widest full scale is 4000 °/s = 70 rad/s", "importer.drive.check_imu_values")
NPY_ROWS = Bound(
    "rows of one comma2k19 array (read from the .npy header before loading)", None, 10_000_000, "rows",
    "a segment is one minute (6 000 IMU rows at 104 Hz); 1e7 rows is a day at 100 Hz",
    "importer.comma2k19.read_array")
CSV_FILE = Bound(
    "size of one imported CSV file (gnss.csv, imu.csv, truth.csv)", None, 512 * MIB, "bytes",
    "read as a stream (0.8x the file); a whole import peaks at 2.8x its CSV files (595 MB for 201 MB, "
    "benchmarks/bench_csv_import.py); 512 MiB of imu.csv at 100 Hz is ~15 h of driving",
    "importer.csv_layout.read_table")

BOUNDS = (CONFIG_FILE, YAML_VALUES, GROUND_TRUTH_RATE, SCENARIO_RATE, SCENARIO_DURATION, GPS_RATE,
          IMU_RATE, JUDGE_FREQUENCY, TICK_LATENCY, SCORE_RATE, RESAMPLES, REPEATS, HEADER_STAMP, ALTITUDE,
          IMPORT_RUNS, IMU_ACCELERATION, IMU_RATE_VALUE, NPY_ROWS, CSV_FILE)


def check_repeats(value: int, what: str) -> int:
    """A number of runs per scenario (K)."""
    REPEATS.check(value, what)
    return value


def markdown_table() -> str:
    """The bounds as the Markdown table docs/limits.md shows."""

    def number(value):
        if value is None:
            return "–"
        if value >= MIB and value % MIB == 0:
            return f"{int(value) // MIB} MiB"
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"

    lines = ["| parameter | lowest | highest | unit | why | checked in |", "|---|---|---|---|---|---|"]
    for bound in BOUNDS:
        unit = "" if bound.unit == "bytes" else bound.unit
        lines.append(f"| {bound.name} | {number(bound.low)} | {number(bound.high)} | {unit} | {bound.why} "
                     f"| `{bound.where}` |")
    return "\n".join(lines) + "\n"


def read_file(path, what: str = "file", limit: int = FILE_BYTES) -> bytes:
    """The bytes of a configuration file: a regular file of at most ``limit`` bytes, else a one-line
    UserError naming it.  Opened non-blocking (a FIFO does not wait for a writer) and checked with
    fstat before reading (a device such as /dev/zero is refused, not read until memory runs out)."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(os.fspath(path), flags)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a {what}") from None
    except PermissionError:
        raise UserError(f"{path}: permission denied (the file cannot be read)") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({describe_os_error(exc)})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UserError(f"{path}: is a directory, expected a {what}")
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: not a regular file (a FIFO, socket or device); give a {what} "
                            "stored on disk")
        if info.st_size > limit:
            raise UserError(f"{path}: {info.st_size} bytes, above the limit of {limit // MIB} MiB for a "
                            f"{what} (docs/limits.md)")
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while being read
            raise UserError(f"{path}: more than {limit // MIB} MiB, the limit for a {what} (docs/limits.md)")
        return data
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({describe_os_error(exc)})") from None
    finally:
        os.close(fd)


def describe_os_error(exc: OSError) -> str:
    """A short, user-facing reason for an OSError (the path limits named where they apply)."""
    if exc.errno == errno.ENAMETOOLONG:
        return "name too long: a path component may have at most 255 bytes, a path 4095"
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    return exc.strerror or str(exc)


__all__ = ["BOUNDS", "Bound", "FILE_BYTES", "MIB", "check_repeats", "describe_os_error", "markdown_table",
           "read_file"]
