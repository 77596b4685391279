"""`sim2real-eval import csv` on a long drive: peak memory against the size of the CSV files.

Writes a synthetic straight drive in the CSV layout (docs/import.md: 100 Hz imu.csv, 10 Hz gnss.csv,
20 Hz truth.csv in ENU at a datum), then runs, each in a fresh process (peak RSS = VmHWM of that
process, so neither this script's nor another run's memory is counted):

  csv_bytes_mb                  size of the three CSV files together
  read_imu_peak_rss_mb          importer.csv_layout.read_table of imu.csv alone (the reader)
  read_imu_over_file            (peak - the interpreter's baseline) / imu.csv size
  import_peak_rss_mb            the whole command: read, cut into --window runs, write the bags
  import_over_files             (peak - baseline) / the CSV files' size
  import_seconds                wall time of the command
  baseline_rss_mb               a fresh process with numpy and the importer imported, nothing read

Usage: python benchmarks/bench_csv_import.py [--hours 5.5] [--window 600] [--keep DIR]
(5.5 h of driving is ~209 MB of CSV, the size of the case in issue 30.)
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATUM = (48.0, 11.0, 500.0)
PEAK = """
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("PEAK", hwm_kb / 1024.0)
"""
BASELINE = "import numpy, sim2real_eval.importer.csv_layout, sim2real_eval.cli\n" + PEAK
READ = """
import sys
from pathlib import Path
from sim2real_eval.importer.csv_layout import IMU_COLUMNS, read_table
table = read_table(Path(sys.argv[1]), IMU_COLUMNS)
print("ROWS", len(table["t"]))
""" + PEAK
IMPORT = """
import sys
from sim2real_eval.cli import main
code = main(sys.argv[1:])
assert code == 0, code
""" + PEAK


def write_drive(folder: Path, seconds: float) -> None:
    """A straight drive east at 10 m/s with noisy sensors (the content only has to import cleanly)."""
    from sim2real_eval.geodesy import enu_to_geodetic

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)

    def save(name, header, t, *columns):
        with open(folder / name, "w") as stream:
            stream.write(header + "\n")
            step = 200_000
            for i in range(0, len(t), step):
                block = np.column_stack([t[i:i + step]] + [c[i:i + step] for c in columns])
                np.savetxt(stream, block, delimiter=",", fmt="%.10g")

    t_truth = 1000.0 + np.arange(0.0, seconds, 0.05)
    zero = np.zeros_like(t_truth)
    save("truth.csv", "t,east,north,up,v_east,v_north,v_up", t_truth, 10.0 * (t_truth - 1000.0), zero, zero,
         zero + 10.0, zero, zero)
    t_gnss = 1000.0 + np.arange(0.0, seconds, 0.1)
    enu = np.column_stack([10.0 * (t_gnss - 1000.0), np.zeros_like(t_gnss), np.zeros_like(t_gnss)])
    enu += 0.3 * rng.standard_normal(enu.shape)
    lat, lon, alt = enu_to_geodetic(enu, DATUM)
    save("gnss.csv", "t,lat,lon,alt", t_gnss, lat, lon, alt)
    t_imu = 1000.0 + np.arange(0.0, seconds, 0.01)
    n = len(t_imu)
    noise = rng.standard_normal((n, 6)) * [0.05, 0.05, 0.05, 0.002, 0.002, 0.002]
    save("imu.csv", "t,ax,ay,az,wx,wy,wz", t_imu, noise[:, 0], noise[:, 1], 9.80665 + noise[:, 2],
         noise[:, 3], noise[:, 4], noise[:, 5])


def child(code: str, *args) -> tuple:
    """(peak RSS MB, seconds, stdout) of ``python -c code args`` in a fresh process."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"child failed ({done.returncode}): {done.stderr[-2000:]}")
    peak = next(float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("PEAK"))
    return peak, seconds, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, default=5.5)
    parser.add_argument("--window", type=float, default=600.0, help="import --window (s)")
    parser.add_argument("--keep", type=Path, default=None, help="write the drive here and keep it")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-csv-import-")) if args.keep is None else args.keep
    try:
        drive = root / "drive"
        if not drive.exists():
            write_drive(drive, args.hours * 3600.0)
        sizes = {p.name: p.stat().st_size for p in drive.iterdir()}
        total = sum(sizes.values())
        baseline, _s, _o = child(BASELINE)
        read_peak, _s, _o = child(READ, drive / "imu.csv")
        out = root / "out"
        shutil.rmtree(out, ignore_errors=True)
        import_peak, seconds, _o = child(IMPORT, "import", "csv", drive, "--out", out, "--datum", *DATUM,
                                         "--fix-covariance", "0.3", "--window", args.window)
        mb = 1024.0 * 1024.0
        print(f"csv_bytes_mb: {total / mb:.1f}")
        print(f"baseline_rss_mb: {baseline:.1f}")
        print(f"read_imu_peak_rss_mb: {read_peak:.1f}")
        print(f"read_imu_over_file: {(read_peak - baseline) * mb / sizes['imu.csv']:.2f}")
        print(f"import_peak_rss_mb: {import_peak:.1f}")
        print(f"import_over_files: {(import_peak - baseline) * mb / total:.2f}")
        print(f"import_seconds: {seconds:.1f}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
