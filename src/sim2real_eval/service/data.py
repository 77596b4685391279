"""The data sets the studies read: the synthetic reference bags (``sim2real-eval make-reference``), real
drives imported as bags (``sim2real-eval import``), and noise parameters calibrated from a recording
(``sim2real-eval calibrate``: a standstill with an IMU, a GNSS receiver alone, or a drive with truth)."""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import UserError
from ..limits import check_repeats
from ..outputs import NEW, check_name, check_paths, output_folder
from ..pipeline.batch import available_cores
from .common import parallel_map, status

if TYPE_CHECKING:
    from ..importer import ImportResult


# ================================================================ sim2real-eval make-reference
@dataclass(frozen=True)
class ReferenceRequest:
    """What ``sim2real-eval make-reference`` asks for."""

    out: str = "bags/reference"
    k: int | None = None                     # runs per scenario (None: the setup's shipped_repeats)
    seed: int | None = None                  # None: the setup's
    scenarios: Sequence[str] | None = None   # None: every scenario of the setup's study
    setup: str | None = None                 # reference setup YAML (None: config/studies/demo_reference.yaml)
    overwrite: bool = False
    workers: int | None = None               # None: all cores
    progress: bool = True


@dataclass
class WrittenReference:
    """The reference runs written to ``out`` and those kept (an earlier run of the same setup)."""

    out: Path
    written: int
    kept: int
    size_bytes: int          # of everything in out
    seconds: float


def make_reference(request: ReferenceRequest) -> WrittenReference:
    """The synthetic ART-like reference data set (``reference``): K runs per scenario into
    ``OUT/<scenario>/run_<kk>/`` and ``OUT/README.md``; runs written before with the same setup are kept
    unless ``overwrite``; a bag or README.md that is not make-reference's is refused."""
    from .. import reference as ref
    from ..scenarios import available_scenarios

    setup = ref.load_setup(request.setup)
    if request.seed is not None:
        setup = dataclasses.replace(setup, seed=request.seed)
    k = setup.shipped_repeats if request.k is None else request.k
    check_repeats(k, "--k")
    scenarios = list(request.scenarios or setup.scenarios)
    known = available_scenarios()
    for name in scenarios:
        if name not in setup.scenarios and name not in known:
            raise UserError(f"--scenario {name!r}: neither a scenario of {setup.source} "
                            f"({', '.join(setup.scenarios)}) nor of config/scenarios ({', '.join(known)})")
    workers = available_cores() if request.workers is None else request.workers
    check_name(request.out, "--out")
    out = Path(request.out)
    check_paths({"--setup": setup.source}, {"--out": [out / name for name in scenarios] + [out / ref.README]})
    readme = out / ref.README
    if os.path.lexists(readme) and not request.overwrite and not ref.readme_is_ours(readme):
        raise UserError(f"--out {out}: README.md: not written by make-reference; move it away or pass "
                        "--overwrite")
    todo = []
    for name in scenarios:
        if (out / name).is_symlink():
            raise UserError(f"--out {out}: {name}: a symbolic link; make-reference never writes through a "
                            "link (remove it or choose another --out)")
        for index in range(k):
            path = ref.run_path(out, name, index)
            if not os.path.lexists(path) or request.overwrite or ref.owned_item(path, setup) != "same":
                todo.append((setup, str(out), name, index, request.overwrite))
    start = time.perf_counter()
    parallel_map(ref.write_reference_run, todo, workers, request.progress,
                 f"writing {len(todo)} reference runs")
    ref.write_readme(setup, out, overwrite=request.overwrite)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return WrittenReference(out, len(todo), k * len(scenarios) - len(todo), size, time.perf_counter() - start)


# ======================================================================== sim2real-eval import
@dataclass(frozen=True)
class ImportRequest:
    """What ``sim2real-eval import`` asks for: the format, its sources, the options of docs/import.md."""

    format: str                              # comma2k19 | csv | nmea
    sources: Sequence[str]
    out: str
    scenario: str | None = None
    window: float | None = None
    stride: float | None = None
    fix_covariance: float | None = None
    fix_covariance_scale: float = 1.0
    estimate_mounting: bool = False
    imu_axes: str = "flu"                    # csv
    datum: Sequence[float] | None = None     # csv, nmea
    time_offset: float = 0.0                 # csv
    imu_orientation: str = "none"
    madgwick_gain: float | None = None
    date: str | None = None                  # nmea
    storage: str = "sqlite3"
    overwrite: bool = False


def import_drives(request: ImportRequest) -> ImportResult:
    """Real drives (comma2k19 segments, CSV folders) or receiver logs (NMEA: /fix-only bags) as bags
    ``OUT/<scenario>/run_<kk>/`` + ``OUT/import.yaml``; an option of another format is refused."""
    from ..importer import import_comma2k19, import_csv, import_nmea

    check_paths({"SRC": list(request.sources)}, {"--out": request.out})
    if request.format == "nmea":
        for name, value, default in (("estimate-mounting", request.estimate_mounting, False),
                                     ("time-offset", request.time_offset, 0.0),
                                     ("imu-axes", request.imu_axes, "flu")):
            if value != default:
                raise UserError(f"--{name}: not for the nmea format (a receiver log has no IMU)")
    elif request.date is not None:
        raise UserError("--date: only for the nmea format")
    replace = output_folder(request.out, "--out", request.overwrite) != NEW or os.path.lexists(request.out)
    if request.format == "nmea":
        return import_nmea(request.sources, request.out, window=request.window, stride=request.stride,
                           scenario=request.scenario, date=request.date,
                           fix_covariance=request.fix_covariance,
                           fix_covariance_scale=request.fix_covariance_scale, datum=request.datum,
                           overwrite=replace, storage=request.storage)
    options = dict(window=request.window, stride=request.stride, fix_covariance=request.fix_covariance,
                   fix_covariance_scale=request.fix_covariance_scale,
                   estimate_mounting=request.estimate_mounting,
                   overwrite=replace, storage=request.storage, imu_orientation=request.imu_orientation,
                   madgwick_gain=request.madgwick_gain)
    if request.format == "csv":
        return import_csv(request.sources, request.out, scenario=request.scenario, imu_axes=request.imu_axes,
                          datum=request.datum, time_offset=request.time_offset, **options)
    for name, value in (("datum", request.datum), ("time-offset", request.time_offset)):
        if value not in (None, 0.0):
            raise UserError(f"--{name}: only for the csv format")
    if request.imu_axes != "flu":
        raise UserError("--imu-axes: only for the csv format (comma2k19's axes are known)")
    return import_comma2k19(request.sources, request.out, scenario=request.scenario or "highway", **options)


# ===================================================================== sim2real-eval calibrate
@dataclass(frozen=True)
class CalibrateRequest:
    """What ``sim2real-eval calibrate`` asks for (docs/calibration.md)."""

    bag: str
    out: str                                   # PARAMS.yaml (+ PARAMS_gps.yaml, PARAMS_imu.yaml)
    truth: bool = False                        # a drive with ground truth, not a standstill
    truth_source: str = "auto"                 # --truth: where the truth comes from
    static_tfs: Sequence[str] = ()             # --truth: mounting of an IMU not in base_link
    gps_topic: str = "/fix"
    imu_topic: str = "/imu"
    velocity_topic: str | None = None
    plots: str | None = None                   # folder of the fit plots
    overwrite: bool = False
    epe: float | str = 0.02                    # m, or "status"
    surveyed: Sequence[float] | None = None    # LAT LON ALT of a GNSS-only standstill's antenna
    t_b: float = 0.1
    max_speed: float = 0.1
    min_duration: float | None = None          # s (None: 60, with --truth 30)
    shortfall: Sequence[str] | None = None     # --truth: a (GPS, IMU) model pair against the real sensors
    seed: int = 0                              # --shortfall: seed of the simulated model streams


@dataclass
class Calibrated:
    """What was measured, as the lines the command shows, and the files written {name: path}."""

    lines: list
    written: dict = field(default_factory=dict)


def calibrate(request: CalibrateRequest) -> Calibrated:
    """Noise parameters from ``request.bag``: sensor minus truth on a drive (``--truth``,
    ``calibrate.drive``), a GNSS receiver alone at standstill (a bag without IMU, ``calibrate.receiver``)
    or a standstill with an IMU (``calibrate.core``); presets, report and plots appear together or none."""
    from ..calibrate import receiver

    if request.shortfall is not None and not request.truth:
        raise UserError("--shortfall: only with --truth (the models are compared with the sensors on "
                        "the truth)")
    if request.truth:
        if request.surveyed is not None:
            raise UserError("--surveyed: only for a GNSS-only standstill (a bag without an IMU topic)")
        return _calibrate_drive(request)
    if not receiver.bag_has_imu(request.bag, request.imu_topic):  # a receiver log alone: GPS-only
        return _calibrate_receiver(request)
    if request.surveyed is not None:
        raise UserError(f"--surveyed: only for a GNSS-only standstill; {request.bag} has an IMU topic")
    if request.truth_source != "auto":
        raise UserError("--truth-source: only with --truth")
    if request.static_tfs:
        raise UserError("--static-tf: only with --truth (a standstill's IMU axes do not matter)")
    return _calibrate_standstill(request)


def _calibrate_standstill(request: CalibrateRequest) -> Calibrated:
    import numpy as np

    from ..calibrate.core import calibrate_standstill, output_files, write_calibration
    from ..calibrate.standstill import read_standstill_bag

    files = output_files(request.out, request.plots)  # names and places checked before the work
    plots = [path for name, path in files.items() if name.endswith("_plot")]
    check_paths({"STANDSTILL_BAG": request.bag},
                {"--out": [files["report"], files["gps"], files["imu"]], "--plots": plots},
                overwrite=request.overwrite)
    with status(True, f"reading {request.bag}"):
        data = read_standstill_bag(request.bag, request.gps_topic, request.imu_topic, request.velocity_topic)
    with status(True, "fitting"):
        min_duration = 60.0 if request.min_duration is None else request.min_duration
        cal = calibrate_standstill(data, epe=request.epe, t_b=request.t_b, max_speed=request.max_speed,
                                   min_imu_duration=min_duration)
        written = write_calibration(cal, request.out, request.plots, overwrite=request.overwrite)
    gps = cal.report["gps"]
    lines = [f"GPS: {gps['fixes']} fixes over {gps['duration_s']:.0f} s; std "
             + ", ".join(f"{k} {v:.4g} m" for k, v in gps["std_m"].items())]
    if cal.hdop is not None and cal.hdop.decaying:
        lines.append(f"HDOP: H0 {cal.hdop.h0:.4g}, H_inf {cal.hdop.h_inf:.4g}, tau {cal.hdop.tau:.4g} s")
    elif cal.hdop is not None:
        lines.append(f"HDOP: median {float(np.median(cal.hdop.hdop)):.4g} (no decay visible; "
                     f"covariance written as a constant diagonal)")
    accel, gyro = cal.imu_preset["accelerometer"], cal.imu_preset["gyroscope"]
    lines.append(f"IMU: {cal.report['imu']['duration_s']:.0f} s at {cal.imu.rate:.1f} Hz; "
                 f"accel sigma {[round(s, 5) for s in accel['sigma']]}, b0 {accel['b0']:.3g}; "
                 f"gyro sigma {[round(s, 6) for s in gyro['sigma']]}, b0 {gyro['b0']:.3g}")
    return Calibrated(lines, written)


def _calibrate_receiver(request: CalibrateRequest) -> Calibrated:
    """A GNSS receiver alone at standstill (``calibrate.receiver``)."""
    from ..calibrate.receiver import (
        calibrate_receiver,
        output_files,
        read_fix_bag,
        write_receiver_calibration,
    )

    if request.truth_source != "auto" or request.static_tfs:
        raise UserError("--truth-source/--static-tf: only with --truth")
    imu_only = [name for name, given in (("--velocity-topic", request.velocity_topic is not None),
                                         ("--min-duration", request.min_duration is not None),
                                         ("--t-b", request.t_b != 0.1)) if given]
    if imu_only:
        raise UserError(f"{', '.join(imu_only)}: only for a standstill with an IMU; {request.bag} has no "
                        f"sensor_msgs/Imu topic (a GNSS-only standstill)")
    planned = output_files(request.out, request.plots)
    check_paths({"STANDSTILL_BAG": request.bag},
                {"--out": [planned["report"], planned["gps"]],
                 "--plots": [p for n, p in planned.items() if n.endswith("_plot")]},
                overwrite=request.overwrite)
    data = read_fix_bag(request.bag, request.gps_topic)
    cal = calibrate_receiver(data, request.surveyed, request.epe, request.max_speed)
    written = write_receiver_calibration(cal, request.out, request.plots, overwrite=request.overwrite)
    return Calibrated(list(cal.lines), written)


def _calibrate_drive(request: CalibrateRequest) -> Calibrated:
    """Sensor minus truth on a drive (``calibrate.drive``); with ``shortfall``, a model pair against the
    same sensors (``calibrate.shortfall``)."""
    from ..calibrate import shortfall
    from ..calibrate.drive import (
        DEFAULT_MIN_IMU_DURATION,
        calibrate_drive,
        drive_output_files,
        read_drive,
        write_drive_calibration,
    )

    files = drive_output_files(request.out, request.plots)
    plots = [path for name, path in files.items() if name.endswith("_plot")]
    gap_files = (list(shortfall.shortfall_files(Path(request.out).parent).values()) if request.shortfall
                 else [])
    check_paths({"DRIVE_BAG": request.bag},
                {"--out": [files["report"], files["gps"], files["imu"]] + gap_files, "--plots": plots},
                overwrite=request.overwrite)
    min_duration = DEFAULT_MIN_IMU_DURATION if request.min_duration is None else request.min_duration
    with status(True, f"reading {request.bag}"):
        data, truth, datum = read_drive(request.bag, request.gps_topic, request.imu_topic,
                                        request.truth_source, list(request.static_tfs))
    with status(True, "fitting"):
        cal = calibrate_drive(data, truth, datum, t_b=request.t_b, min_imu_duration=min_duration)
        gap = None
        if request.shortfall:
            models = [{"gps": cal.gps_preset, "imu": cal.imu_preset}[kind] if spec == "calibrated" else spec
                      for kind, spec in zip(("gps", "imu"), request.shortfall)]
            segment = shortfall.segment_of_drive(data, truth, datum, str(request.bag))
            gap = shortfall.error_statistics([segment], *models, seed=request.seed)
        extra = shortfall.shortfall_writers(gap, Path(request.out).parent) if gap is not None else None
        written = write_drive_calibration(cal, request.out, request.plots, overwrite=request.overwrite,
                                          extra=extra)
    gps = cal.report["gps"]
    speed = gps["speed_m_s"]
    lines = [f"GPS: {gps['fixes']} fixes over {gps['duration_s']:.0f} s at {speed['p5']:.2g}-"
             f"{speed['p95']:.2g} m/s (5-95 %, median {speed['median']:.2g}); jitter std "
             f"{gps['stamp_jitter_std_s'] * 1e3:.1f} ms; bias "
             + ", ".join(f"{k} {v:+.3g}" for k, v in gps["bias_m"].items()) + " m; std "
             + ", ".join(f"{k} {v:.3g}" for k, v in gps["std_m"].items()) + " m",
             f"GPS {gps['stamp_lag']['summary']}"]
    gm = cal.gps_preset["position_noise"]
    if gm["model"] == "gauss_markov":
        lines.append(f"GPS model: Gauss-Markov tau {gm['tau']:.3g} s, bias_sigma "
                     f"{[round(v, 4) for v in gm['bias_sigma']]}, white sigma "
                     f"{[round(v, 4) for v in gm['sigma']]}")
    imu = cal.report["imu"]
    lines.append("IMU - truth: accel bias " + ", ".join(f"{v:+.3g}" for v in imu["accel_bias_m_s2"].values())
                 + " m/s², std " + ", ".join(f"{v:.3g}" for v in imu["accel_residual_std_m_s2"].values())
                 + "; gyro bias " + ", ".join(f"{v:+.2g}" for v in imu["gyro_bias_rad_s"].values())
                 + " rad/s, std " + ", ".join(f"{v:.2g}" for v in imu["gyro_residual_std_rad_s"].values()))
    for axis, properties in (gap.differing() if gap is not None else {}).items():
        lines.append(f"shortfall {axis}: the model differs in "
                     + ", ".join(shortfall.PROPERTY_NAMES[p] for p in properties))
    return Calibrated(lines, written)


__all__ = ["CalibrateRequest", "Calibrated", "ImportRequest", "ReferenceRequest", "WrittenReference",
           "calibrate", "import_drives", "make_reference"]
