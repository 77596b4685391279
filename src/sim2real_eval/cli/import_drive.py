"""``sim2real-eval import FORMAT SRC... --out DIR``: real recorded drives → ``DIR/<scenario>/run_<kk>/``
rosbag2 bags (/fix, /imu, /ground_truth/odom) that ``replay``, ``score`` and the demo read.

Formats: ``comma2k19`` (segment folders of the public comma2k19 data set), ``csv`` (the generic
layout of docs/import.md) and ``nmea`` (a GNSS receiver's NMEA 0183 log: /fix-only bags).
The work is ``sim2real_eval.importer``; the inputs are only read.
"""
from __future__ import annotations

import sys

from . import REPLACED

FORMATS = ("comma2k19", "csv", "nmea")  # importer.FORMATS (not imported here: --help stays cheap)
OUTPUTS = REPLACED.format(what="--out DIR")


def add_arguments(parser) -> None:
    parser.add_argument("format", choices=FORMATS, metavar="FORMAT",
                        help="comma2k19 (segment folders: global_pose/ + processed_log/), csv "
                             "(folders with gnss.csv, imu.csv, truth.csv; docs/import.md) or nmea "
                             "(NMEA 0183 log files: GGA, RMC, GST, VTG)")
    parser.add_argument("sources", nargs="+", metavar="SRC",
                        help="one or more drives (their runs are numbered in the order given)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder: DIR/<scenario>/run_<kk>/ bags + DIR/import.yaml")
    parser.add_argument("--scenario", default=None,
                        help="scenario (folder) name of the runs (default: highway for comma2k19, the first "
                             "SRC folder's name for csv)")
    parser.add_argument("--window", type=float, default=None, metavar="SECONDS",
                        help="cut each drive into runs of this length (default: one run per drive)")
    parser.add_argument("--stride", type=float, default=None, metavar="SECONDS",
                        help="start a window every STRIDE s (default: the window; smaller overlaps "
                             "windows, which makes runs correlated: see docs/import.md)")
    parser.add_argument("--fix-covariance", type=float, default=None, metavar="SIGMA",
                        help="1-sigma horizontal position accuracy of every fix, m (vertical 2x); "
                             "default: the data's own (csv sigma_h, comma2k19 pseudorange sigma)")
    parser.add_argument("--fix-covariance-scale", type=float, default=1.0, metavar="K",
                        help="multiply every fix sigma by K (the sensitivity runs use 0.5 and 2)")
    parser.add_argument("--estimate-mounting", action="store_true",
                        help="estimate the IMU's rotation in base_link from the drive and write the IMU "
                             "data rotated into base_link (comma2k19: base_link = the vehicle frame)")
    parser.add_argument("--imu-axes", choices=("flu", "frd"), default="flu",
                        help="csv: axes of imu.csv, forward-left-up (REP-103) or forward-right-down")
    parser.add_argument("--datum", type=float, nargs=3, default=None, metavar=("LAT", "LON", "ALT"),
                        help="csv, nmea: the ENU origin (csv: needed for truth in east/north/up; "
                             "else the first truth position, nmea: the first fix)")
    parser.add_argument("--time-offset", type=float, default=0.0, metavar="SECONDS",
                        help="csv: added to every t (header stamps must be > 0)")
    parser.add_argument("--imu-orientation", choices=("none", "madgwick"), default="none",
                        help="the /imu orientation: none (not provided, the default) or madgwick (what "
                             "imu_filter_madgwick publishes for a raw IMU: its 6-DoF filter run offline, "
                             "ENU, covariance on the diagonal; recorded with its roll/pitch error against "
                             "the truth in import.yaml)")
    parser.add_argument("--madgwick-gain", type=float, default=None, metavar="BETA",
                        help="the Madgwick filter's gain (imu_filter_madgwick's 'gain', default 0.1)")
    parser.add_argument("--date", default=None, metavar="DATE",
                        help="nmea: the UTC date YYYY-MM-DD of the log's first epoch (needed when the log "
                             "has no RMC date; checked against it otherwise)")
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing non-empty DIR (atomically, once the new one is complete)")


def run(args) -> int:
    from ..importer.vehicle import template_line, truth_line
    from ..service.data import ImportRequest, import_drives

    result = import_drives(ImportRequest(
        format=args.format, sources=args.sources, out=args.out, scenario=args.scenario, window=args.window,
        stride=args.stride, fix_covariance=args.fix_covariance,
        fix_covariance_scale=args.fix_covariance_scale,
        estimate_mounting=args.estimate_mounting, imu_axes=args.imu_axes, datum=args.datum,
        time_offset=args.time_offset, imu_orientation=args.imu_orientation,
        madgwick_gain=args.madgwick_gain, date=args.date, storage=args.storage, overwrite=args.overwrite))
    if args.format == "nmea":
        print_logs(result)
        return 0
    for drive in result.summary["drives"]:
        mounting = drive["frames"]["mounting"]
        gnss = drive["gnss"]
        print(f"{drive['source']}: datum {', '.join(f'{v:.7g}' for v in drive['datum'])}; fix sigma "
              f"{gnss['sigma_m']['median'][0]:.3g} m ({gnss['policy']}, x{gnss['scale']:g}); IMU mounting "
              f"rpy {', '.join(f'{v:.2f}' for v in mounting['rpy_deg'])} deg "
              f"({mounting['method'].split(':')[0]})")
    first = {}
    for run_ in result.runs:
        first.setdefault(run_.source, run_.start_s)
    for run_ in result.runs:
        counts = ", ".join(f"{topic} {count}" for topic, count in sorted(run_.messages.items()))
        origin = first[run_.source]
        print(f"{run_.path}: {run_.start_s - origin:.1f}..{run_.end_s - origin:.1f} s of the drive; {counts}")
    print(f"{len(result.runs)} runs in {result.scenario_dir} ({result.summary['windows']})")
    print(f"sim2real-eval import: {truth_line(result.summary['truth'])}", file=sys.stderr)
    print(template_line(result.summary["vehicle"]))
    return 0


def print_logs(result) -> None:
    """import nmea: what each receiver log held, and the /fix-only runs."""
    for log in result.summary["drives"]:
        qualities = ", ".join(f"{name} {n}" for name, n in log["fix_quality"].items())
        sources = ", ".join(f"{name} {n}" for name, n in log["gnss"]["covariance_sources"].items() if n)
        bad = "; ".join(f"{entry['count']} {reason} (first at line {entry['first_line']})"
                        for reason, entry in log["bad_lines"].items()) or "none"
        print(f"{log['source']}: {log['fixes']} fixes at {log['rate_hz']} Hz, {log['clock']['date']}; GGA "
              f"fix quality: {qualities}; covariance from {sources}; bad lines: {bad}")
    for run_ in result.runs:
        counts = ", ".join(f"{topic} {count}" for topic, count in sorted(run_.messages.items()))
        print(f"{run_.path}: {run_.end_s - run_.start_s:.1f} s; {counts}")
    print(f"{len(result.runs)} runs in {result.scenario_dir} ({result.summary['windows']})")
