"""Ground truth and simulated sensors for inspection: one scenario's truth (``sim2real-eval scenario``, and
its drive as a field rover's CSV logs) and the GPS/IMU series models draw from it (``sim2real-eval
sensors``)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..atomic import atomic_directory, atomic_files
from ..errors import UserError
from ..outputs import NEW, check_paths, output_folder

if TYPE_CHECKING:
    from ..models import GpsModel, GpsSamples, ImuModel, ImuSamples
    from ..truth import GroundTruth


# ==================================================================== sim2real-eval scenario
@dataclass(frozen=True)
class ScenarioRequest:
    """What ``sim2real-eval scenario`` asks for."""

    name: str                       # scenario name or YAML path
    k: int = 0                      # repeat index (the run's perturbation)
    seed: int = 0
    out: str | None = None          # ground truth NPZ
    plot: str | None = None         # PNG of the truth (needs out)
    csv: str | None = None          # folder of the drive as a field rover's CSV logs
    csv_truth_frame: str = "lla"    # truth.csv positions: lla | enu
    csv_velocity: bool = True       # truth.csv with v_east, v_north, v_up
    overwrite: bool = False


@dataclass
class WrittenScenario:
    """The truth written to ``request.out`` (None when only CSV logs were asked for)."""

    request: ScenarioRequest
    truth: GroundTruth | None


def write_scenario(request: ScenarioRequest) -> WrittenScenario:
    """The scenario's CSV logs (``importer.scenario_csv``) and/or its ground truth NPZ (+ plot): the files
    appear together, complete, or none does."""
    import numpy as np

    from ..scenarios import generate

    if request.out is None and request.csv is None:
        raise UserError("give --out FILE.npz (the ground truth) and/or --csv DIR (the drive as CSV logs)")
    if request.plot and request.out is None:
        raise UserError("--plot needs --out FILE.npz")
    check_paths({"NAME": request.name if Path(request.name).is_file() else None},
                {"--out": request.out, "--plot": request.plot, "--csv": request.csv},
                overwrite=request.overwrite)
    if request.csv is not None:
        from ..importer.scenario_csv import options, write_scenario_csv

        logs = options(truth_frame=request.csv_truth_frame, truth_velocity=request.csv_velocity)
        write_scenario_csv(request.name, request.csv, k=request.k, seed=request.seed, logs=logs,
                           overwrite=request.overwrite)
        if request.out is None:
            return WrittenScenario(request, None)
    truth = generate(request.name, k=request.k, seed=request.seed)
    finals = [request.out] + ([request.plot] if request.plot else [])
    with atomic_files(finals, overwrite=request.overwrite) as temps:  # both or neither
        for index, temp in enumerate(temps):
            try:
                with open(temp, "wb") as stream:
                    if index == 0:
                        np.savez(stream, **truth.as_dict())
                    else:
                        plot_truth(truth, f"scenario {request.name}, k={request.k}, seed={request.seed}",
                                   stream)
            except OSError as exc:
                exc.filename = str(temp)  # the error names the file that failed
                raise
    return WrittenScenario(request, truth)


def plot_truth(truth, title: str, stream) -> None:
    """Four panels: path, speed, yaw rate, body specific force (PNG into ``stream``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), constrained_layout=True)
    axes[0, 0].plot(truth.position[:, 0], truth.position[:, 1])
    axes[0, 0].set(xlabel="east [m]", ylabel="north [m]", title="path", aspect="equal")
    axes[0, 1].plot(truth.t, np.hypot(truth.velocity[:, 0], truth.velocity[:, 1]))
    axes[0, 1].set(xlabel="t [s]", ylabel="speed [m/s]", title="horizontal speed")
    axes[1, 0].plot(truth.t, truth.angular_velocity[:, 2])
    axes[1, 0].set(xlabel="t [s]", ylabel="yaw rate [rad/s]", title="body yaw rate")
    for i, axis in enumerate("xy"):
        axes[1, 1].plot(truth.t, truth.specific_force[:, i], label=f"f_{axis}")
    axes[1, 1].set(xlabel="t [s]", ylabel="[m/s²]", title="body specific force (f_z = g not shown)")
    axes[1, 1].legend()
    fig.suptitle(title)
    fig.savefig(stream, format="png", dpi=110)
    plt.close(fig)



# ===================================================================== sim2real-eval sensors
@dataclass(frozen=True)
class SensorsRequest:
    """What ``sim2real-eval sensors`` asks for: the truth (a scenario or an NPZ), the models, the output."""

    out: str
    scenario: str | None = None            # scenario name or YAML (or truth)
    truth: str | None = None               # ground truth NPZ written by ``scenario``
    k: int = 0
    seed: int = 0
    gps: str = "ch_gauss"                  # preset or YAML
    imu: str = "chrono_paper_demo"
    datum: Sequence[float] | None = None   # LAT LON ALT in place of the preset's
    mounting_rpy: Sequence[float] | None = None  # ROLL PITCH YAW (rad) in place of the preset's
    format: str = "both"                   # npz | csv | both
    plot: bool = False
    overwrite: bool = False


@dataclass
class SensorSeries:
    """The series written: the truth, the fixes and the IMU samples drawn from it."""

    request: SensorsRequest
    name: str                   # the scenario's name (the truth file's stem)
    truth: GroundTruth
    gps: GpsModel
    imu: ImuModel
    fixes: GpsSamples
    imu_samples: ImuSamples


def simulate_sensors(request: SensorsRequest) -> SensorSeries:
    """GPS and IMU drawn from the truth with the streams the pipeline derives (``sensor_seed(seed,
    scenario, k, "gps"|"imu")``), written to ``request.out`` (atomic) with sensors.yaml (effective
    parameters and seeds) and, with ``plot``, sensors.png."""
    from ..geodesy import as_datum
    from ..models import load_gps_model, load_imu_model, sensor_seed
    from ..scenarios import generate, load_scenario
    from ..truth import GroundTruth

    if request.datum:
        as_datum(request.datum, "--datum")  # an error names the option, not the preset file
    files = [request.scenario, request.truth, request.gps, request.imu]
    check_paths({"inputs": [f for f in files if f and Path(f).is_file()]}, {"--out": request.out})
    replace = output_folder(request.out, "--out", request.overwrite) != NEW or os.path.lexists(request.out)
    if request.scenario:
        name = load_scenario(request.scenario)[2]
        truth = generate(request.scenario, k=request.k, seed=request.seed)
    else:
        name = Path(request.truth).stem
        truth = GroundTruth.load_npz(request.truth)
    gps_overrides = {"datum": list(request.datum)} if request.datum else {}
    imu_overrides = {"mounting_rpy": list(request.mounting_rpy)} if request.mounting_rpy else {}
    gps = load_gps_model(request.gps, sensor_seed(request.seed, name, request.k, "gps"), **gps_overrides)
    imu = load_imu_model(request.imu, sensor_seed(request.seed, name, request.k, "imu"), **imu_overrides)
    series = SensorSeries(request, name, truth, gps, imu, gps.sample(truth), imu.sample(truth))
    _write_series(series, replace)
    return series


def _write_series(series: SensorSeries, replace: bool) -> None:
    import numpy as np

    from ..geodesy import geodetic_to_enu
    from ..yamlio import dump_yaml

    request, truth, fixes, imu_samples = series.request, series.truth, series.fixes, series.imu_samples
    gps, imu, name = series.gps, series.imu, series.name
    gps_enu = geodetic_to_enu(fixes.latitude, fixes.longitude, fixes.altitude, gps.datum, gps.geodesy)
    description = {
        "source": request.scenario or request.truth,
        "scenario": name,
        "k": request.k,
        "seed": request.seed,
        "seed_keys": {"gps": [request.seed, name, request.k, "gps"],
                      "imu": [request.seed, name, request.k, "imu"]},
        "gps": {"spec": request.gps, **gps.parameters},
        "imu": {"spec": request.imu, **imu.parameters},
        "counts": {"truth": len(truth), "gps": len(fixes), "imu": len(imu_samples)},
    }
    with atomic_directory(request.out, overwrite=replace, empty=False) as folder:
        (folder / "sensors.yaml").write_text(dump_yaml(description), encoding="utf-8")
        if request.format in ("npz", "both"):
            np.savez(folder / "truth.npz", **truth.as_dict())
            np.savez(folder / "gps.npz", frame_id=fixes.frame_id, **fixes.as_dict())
            np.savez(folder / "imu.npz", frame_id=imu_samples.frame_id, **imu_samples.as_dict())
        if request.format in ("csv", "both"):
            truth_columns = {"t": truth.t}
            for field, labels in (
                ("position", "xyz"),
                ("orientation", "xyzw"),
                ("velocity", "xyz"),
                ("angular_velocity", "xyz"),
                ("specific_force", "xyz"),
            ):
                values = getattr(truth, field)
                truth_columns.update({f"{field}_{a}": values[:, i] for i, a in enumerate(labels)})
            _write_csv(folder / "truth.csv", truth_columns)
            _write_csv(folder / "gps.csv", _gps_columns(fixes, gps_enu))
            _write_csv(folder / "imu.csv", _imu_columns(imu_samples))
        if request.plot:
            imu_truth = imu.sensor_frame(truth.interpolate(imu_samples.stamp_ns / 1e9))
            with open(folder / "sensors.png", "wb") as stream:
                plot_sensors(truth, fixes, gps_enu, imu_samples, imu_truth,
                             f"{name} k={request.k} seed={request.seed}: GPS {request.gps}, "
                             f"IMU {request.imu}", stream)


def _write_csv(path: Path, columns: dict) -> None:
    import numpy as np

    names = list(columns)
    data = np.column_stack(
        [np.asarray(columns[n], dtype=float) if "ns" not in n else columns[n] for n in names]
    )
    fmt = ["%d" if "ns" in n else "%.17g" for n in names]
    np.savetxt(path, data, delimiter=",", header=",".join(names), comments="", fmt=fmt)


def _gps_columns(fixes, enu) -> dict:
    columns = {
        "stamp_ns": fixes.stamp_ns,
        "receive_ns": fixes.receive_ns,
        "latitude": fixes.latitude,
        "longitude": fixes.longitude,
        "altitude": fixes.altitude,
        "status": fixes.status,
        "service": fixes.service,
        "covariance_type": fixes.position_covariance_type,
    }
    columns.update({f"covariance_{i}": fixes.position_covariance[:, i] for i in range(9)})
    columns.update({f"enu_{a}": enu[:, i] for i, a in enumerate("enu")})
    columns.update({f"error_{a}": fixes.enu_error[:, i] for i, a in enumerate("enu")})
    return columns


def _imu_columns(imu) -> dict:
    columns = {"stamp_ns": imu.stamp_ns, "receive_ns": imu.receive_ns}
    columns.update({f"q{a}": imu.orientation[:, i] for i, a in enumerate("xyzw")})
    columns.update({f"w{a}": imu.angular_velocity[:, i] for i, a in enumerate("xyz")})
    columns.update({f"a{a}": imu.linear_acceleration[:, i] for i, a in enumerate("xyz")})
    if imu.magnetic_field is not None:
        columns.update({f"m{a}": imu.magnetic_field[:, i] for i, a in enumerate("xyz")})
    return columns


def plot_sensors(truth, fixes, gps_enu, imu, imu_truth, title: str, stream) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), constrained_layout=True)
    axes[0, 0].plot(truth.position[:, 0], truth.position[:, 1], "k-", lw=1, label="truth")
    axes[0, 0].plot(gps_enu[:, 0], gps_enu[:, 1], ".", ms=3, label="GPS")
    axes[0, 0].set(xlabel="east [m]", ylabel="north [m]", title="position", aspect="equal")
    axes[0, 0].legend()
    t_gps = fixes.stamp_ns / 1e9
    for i, axis in enumerate(("east", "north", "up")):
        axes[0, 1].plot(t_gps, fixes.enu_error[:, i], lw=1, label=axis)
    axes[0, 1].set(xlabel="t [s]", ylabel="[m]", title="GPS error (ENU)")
    axes[0, 1].legend()
    t_imu = imu.stamp_ns / 1e9
    _q, rates_true, force_true = imu_truth
    for i, axis in enumerate("xyz"):
        (line,) = axes[1, 0].plot(t_imu, imu.linear_acceleration[:, i], lw=0.5, alpha=0.6, label=f"a_{axis}")
        axes[1, 0].plot(t_imu, force_true[:, i], "-", color=line.get_color(), lw=1.5)
    axes[1, 0].set(xlabel="t [s]", ylabel="[m/s²]", title="IMU specific force (sensor frame; thick = truth)")
    axes[1, 0].legend()
    for i, axis in enumerate("xyz"):
        (line,) = axes[1, 1].plot(t_imu, imu.angular_velocity[:, i], lw=0.5, alpha=0.6, label=f"w_{axis}")
        axes[1, 1].plot(t_imu, rates_true[:, i], "-", color=line.get_color(), lw=1.5)
    axes[1, 1].set(xlabel="t [s]", ylabel="[rad/s]", title="IMU angular velocity (thick = truth)")
    axes[1, 1].legend()
    fig.suptitle(title)
    fig.savefig(stream, format="png", dpi=110)
    plt.close(fig)


__all__ = ["ScenarioRequest", "SensorSeries", "SensorsRequest", "WrittenScenario", "plot_sensors",
           "plot_truth", "simulate_sensors", "write_scenario"]
