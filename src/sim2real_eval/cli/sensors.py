"""``sim2real-eval sensors``: simulate GPS and IMU from a scenario and write the series for inspection.

    sim2real-eval sensors --scenario circle --gps ch_rw --imu chrono_paper_demo --seed 3 --out DIR --plot

DIR gets truth/gps/imu as NPZ and/or CSV, ``sensors.yaml`` (effective model parameters and seeds) and,
with --plot, ``sensors.png`` (truth vs measured position, acceleration and yaw rate).  Streams:
``sensor_seed(seed, scenario, k, "gps")`` and ``(…, "imu")``, as the pipeline derives them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import REPLACED, integer

OUTPUTS = REPLACED.format(what="--out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scenario", metavar="NAME", help="scenario name (line, sine, circle, rest) or YAML path"
    )
    source.add_argument(
        "--truth", metavar="FILE.npz", help="ground truth written by `sim2real-eval scenario`"
    )
    parser.add_argument("--k", type=integer, default=0, help="repeat index (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="study seed (default 0)")
    parser.add_argument(
        "--gps", default="ch_gauss", metavar="PRESET", help="GPS preset or YAML (default ch_gauss)"
    )
    parser.add_argument(
        "--imu",
        default="chrono_paper_demo",
        metavar="PRESET",
        help="IMU preset or YAML (default chrono_paper_demo)",
    )
    parser.add_argument(
        "--datum",
        nargs=3,
        type=float,
        metavar=("LAT", "LON", "ALT"),
        help="GPS datum (default: the preset's, the paper's 43.070 -89.400 260)",
    )
    parser.add_argument(
        "--mounting-rpy",
        nargs=3,
        type=float,
        metavar=("ROLL", "PITCH", "YAW"),
        help="IMU frame in base_link, rad (default: the preset's, identity)",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder, new or empty (written "
                                                                    "atomically)")
    parser.add_argument("--format", choices=("npz", "csv", "both"), default="both", help="series format")
    parser.add_argument("--plot", action="store_true", help="also write sensors.png")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --out folder, once the new one is complete")


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


def run(args) -> int:
    import math
    import os

    import numpy as np

    from ..atomic import atomic_directory
    from ..errors import UserError
    from ..geodesy import as_datum, geodetic_to_enu
    from ..models import load_gps_model, load_imu_model, sensor_seed
    from ..outputs import NEW, check_paths, output_folder
    from ..scenarios import generate, load_scenario
    from ..truth import GroundTruth
    from ..yamlio import dump_yaml

    if args.k < 0 or args.seed < 0:
        raise UserError("--k and --seed must be >= 0")
    if args.datum:
        as_datum(args.datum, "--datum")  # an error names the option, not the preset file
    if args.mounting_rpy and not all(math.isfinite(v) for v in args.mounting_rpy):
        raise UserError(f"--mounting-rpy: expected three finite angles (rad), got {args.mounting_rpy}")
    files = [args.scenario, args.truth, args.gps, args.imu]
    check_paths({"inputs": [f for f in files if f and Path(f).is_file()]}, {"--out": args.out})
    replace = output_folder(args.out, "--out", args.overwrite) != NEW or os.path.lexists(args.out)
    if args.scenario:
        name = load_scenario(args.scenario)[2]
        truth = generate(args.scenario, k=args.k, seed=args.seed)
    else:
        name = Path(args.truth).stem
        truth = GroundTruth.load_npz(args.truth)
    gps_overrides = {"datum": list(args.datum)} if args.datum else {}
    imu_overrides = {"mounting_rpy": list(args.mounting_rpy)} if args.mounting_rpy else {}
    gps = load_gps_model(args.gps, sensor_seed(args.seed, name, args.k, "gps"), **gps_overrides)
    imu = load_imu_model(args.imu, sensor_seed(args.seed, name, args.k, "imu"), **imu_overrides)
    fixes = gps.sample(truth)
    imu_samples = imu.sample(truth)
    gps_enu = geodetic_to_enu(fixes.latitude, fixes.longitude, fixes.altitude, gps.datum, gps.geodesy)
    description = {
        "source": args.scenario or args.truth,
        "scenario": name,
        "k": args.k,
        "seed": args.seed,
        "seed_keys": {"gps": [args.seed, name, args.k, "gps"], "imu": [args.seed, name, args.k, "imu"]},
        "gps": {"spec": args.gps, **gps.parameters},
        "imu": {"spec": args.imu, **imu.parameters},
        "counts": {"truth": len(truth), "gps": len(fixes), "imu": len(imu_samples)},
    }
    with atomic_directory(args.out, overwrite=replace, empty=False) as folder:
        (folder / "sensors.yaml").write_text(dump_yaml(description), encoding="utf-8")
        if args.format in ("npz", "both"):
            np.savez(folder / "truth.npz", **truth.as_dict())
            np.savez(folder / "gps.npz", frame_id=fixes.frame_id, **fixes.as_dict())
            np.savez(folder / "imu.npz", frame_id=imu_samples.frame_id, **imu_samples.as_dict())
        if args.format in ("csv", "both"):
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
        if args.plot:
            imu_truth = imu.sensor_frame(truth.interpolate(imu_samples.stamp_ns / 1e9))
            with open(folder / "sensors.png", "wb") as stream:
                plot_sensors(
                    truth,
                    fixes,
                    gps_enu,
                    imu_samples,
                    imu_truth,
                    f"{name} k={args.k} seed={args.seed}: GPS {args.gps}, IMU {args.imu}",
                    stream,
                )
    print(f"{args.out}: {len(truth)} truth samples, {len(fixes)} GPS fixes, {len(imu_samples)} IMU samples")
    return 0
