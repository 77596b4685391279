"""Real recorded drives → the project's real-bag layout ``OUT/<scenario>/run_<kk>/`` (docs/import.md).

Library calls behind ``sim2real-eval import``:

    import_comma2k19(segments, out, window=None, stride=None, scenario="highway", ...) -> ImportResult
    import_csv(folders, out, window=None, stride=None, scenario=None, ...) -> ImportResult
        (both: imu_orientation="madgwick" fills /imu's orientation with the offline imu_filter_madgwick)
    import_nmea(logs, out, window=None, stride=None, scenario=None, date=None, ...) -> ImportResult
    sensitivity_imports(import_function, sources, out_root, scales=(0.5, 1.0, 2.0), **options)
        -> {scale: ImportResult}      # the same drive with the fix σ scaled (the report's sensitivity line)
    shipped_comma2k19() -> Path       # the real segment shipped in bags/real/comma2k19
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..models import madgwick
from ..resources import share_dir
from .comma2k19 import read_segment
from .covariance import SENSITIVITY_SCALES
from .csv_layout import read_folder
from .drive import SIDECAR, ImportResult, add_madgwick_orientation, write_runs
from .nmea import import_logs

FORMATS = ("comma2k19", "csv", "nmea")
IMU_ORIENTATIONS = ("none", "madgwick")
# The real segment shipped with the package (bags/real/comma2k19, MIT licence; its README says what it is).
SHIPPED_COMMA2K19 = ("real", "comma2k19", "b0c9d2329ad1606b_2018-08-02--08-34-47", "40")


def shipped_comma2k19():
    """Path of the comma2k19 segment in ``bags/real`` of this installation (source tree or share dir)."""
    return share_dir() / "bags" / Path(*SHIPPED_COMMA2K19)


def _sources(sources) -> list:
    if isinstance(sources, (str, Path)):
        return [sources]
    return list(sources)


def import_comma2k19(segments, out, window: float | None = None, stride: float | None = None,
                     scenario: str = "highway", fix_covariance: float | None = None,
                     fix_covariance_scale: float = 1.0, estimate_mounting: bool = False,
                     overwrite: bool = False, storage: str = "sqlite3", imu_orientation: str = "none",
                     madgwick_gain: float | None = None) -> ImportResult:
    """Import comma2k19 segment folder(s) (see ``importer.comma2k19``) into ``out``."""
    _check_scale(fix_covariance_scale)
    read = [read_segment(src, fix_covariance, fix_covariance_scale, estimate_mounting)
            for src in _sources(segments)]
    _orientation([d for d, _o in read], imu_orientation, madgwick_gain)
    return write_runs([d for d, _o in read], out, scenario, window, stride, overwrite, storage,
                      [o for _d, o in read])


def import_csv(folders, out, window: float | None = None, stride: float | None = None,
               scenario: str | None = None, fix_covariance: float | None = None,
               fix_covariance_scale: float = 1.0, estimate_mounting: bool = False, imu_axes: str = "flu",
               datum=None, time_offset: float = 0.0, overwrite: bool = False,
               storage: str = "sqlite3", imu_orientation: str = "none",
               madgwick_gain: float | None = None) -> ImportResult:
    """Import folder(s) in the generic CSV layout (see ``importer.csv_layout``) into ``out``."""
    _check_scale(fix_covariance_scale)
    sources = _sources(folders)
    drives = [read_folder(src, fix_covariance, fix_covariance_scale, estimate_mounting, imu_axes, datum,
                          time_offset) for src in sources]
    _orientation(drives, imu_orientation, madgwick_gain)
    name = scenario if scenario is not None else Path(str(sources[0])).resolve().name
    return write_runs(drives, out, name, window, stride, overwrite, storage)


def import_nmea(logs, out, window: float | None = None, stride: float | None = None,
                scenario: str | None = None, date=None, fix_covariance: float | None = None,
                fix_covariance_scale: float = 1.0, datum=None, overwrite: bool = False,
                storage: str = "sqlite3") -> ImportResult:
    """Import NMEA 0183 receiver log(s) (see ``importer.nmea``): /fix-only bags into ``out``."""
    return import_logs(logs, out, window, stride, scenario, date, fix_covariance, fix_covariance_scale, datum,
                       overwrite, storage)


def sensitivity_imports(import_function, sources, out_root, scales=SENSITIVITY_SCALES,
                        **options) -> dict:
    """The same drive(s) imported once per σ scale into ``out_root/fix_sigma_x<scale>/``:
    {scale: ImportResult}.  Replay and score each with the same --replace: the VEPD at 0.5× and 2×
    beside the 1× one is the sensitivity line (docs/import.md, "Receivers without accuracy")."""
    results = {}
    for scale in scales:
        results[scale] = import_function(sources, Path(out_root) / f"fix_sigma_x{scale:g}",
                                         fix_covariance_scale=scale, **options)
    return results


def _orientation(drives: list, imu_orientation: str, madgwick_gain: float | None) -> None:
    """``--imu-orientation``: ``none`` (the /imu orientation is "not provided") or ``madgwick`` (the
    offline imu_filter_madgwick, ``models.madgwick``, on each whole drive; ``--madgwick-gain``)."""
    if imu_orientation not in IMU_ORIENTATIONS:
        raise UserError(f"--imu-orientation: expected one of {', '.join(IMU_ORIENTATIONS)}, "
                        f"got {imu_orientation!r}")
    if imu_orientation == "none":
        if madgwick_gain is not None:
            raise UserError("--madgwick-gain: only with --imu-orientation madgwick")
        return
    for drive in drives:
        add_madgwick_orientation(drive, madgwick.GAIN if madgwick_gain is None else madgwick_gain,
                                 madgwick.ORIENTATION_STDDEV)


def _check_scale(scale) -> None:
    if not (isinstance(scale, (int, float)) and scale > 0 and scale < float("inf")):
        raise UserError(f"--fix-covariance-scale: expected a factor > 0, got {scale!r}")


__all__ = ["FORMATS", "SIDECAR", "SHIPPED_COMMA2K19", "ImportResult", "import_comma2k19", "import_csv",
           "import_nmea", "sensitivity_imports", "shipped_comma2k19"]
