"""Each simulator's default sensor model on the shipped real car segment: the VEPD table of docs/models.md
("Simulators' default models on the real sample"), with the judge-noise floor.

    python benchmarks/simulator_table.py                  # run the study, write the record and the table
    python benchmarks/simulator_table.py --check          # exit 1 if docs/models.md differs from the record

It runs ``sim2real-eval demo --real-sample --config config/studies/simulators.yaml`` once per simulator
IMU (``IMUS``: the study file's imu_study.imu replaced; the GPS study's rows come from the first run),
keeps what it read (VEPD, 95 % intervals, the floor, wall and CPU time, the date) in
``benchmarks/simulator_table.json``, and renders that record into the region of docs/models.md between
``<!-- generated: simulators-real-sample -->`` and ``<!-- end: simulators-real-sample -->``.
tests/test_simulator_presets.py checks that the region is this record rendered.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "config" / "studies" / "simulators.yaml"
RECORD = REPO / "benchmarks" / "simulator_table.json"
DOC = REPO / "docs" / "models.md"
NAME = "simulators-real-sample"
REGION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)
IMUS = ("carla_leaderboard", "gz_imu", "airsim_imu", "chrono_paper_demo")
SIMULATOR = {
    "ideal": "CARLA, gz-sim (their defaults: no noise)",
    "ch_rw": "Project Chrono",
    "airsim_default": "AirSim",
    "hector": "Gazebo classic (hector_gazebo_plugins)",
    "carla_leaderboard": "CARLA (Leaderboard settings)",
    "gz_navsat": "gz-sim (our values)",
    "gz_imu": "gz-sim (Gazebo tutorial values)",
    "airsim_imu": "AirSim",
    "chrono_paper_demo": "Project Chrono (the paper's demo)",
    "calibrated": "car_mems calibrated on the held-out windows",
    "tuned": "car_gauss tuned on the held-out windows (2 trials)",
}


def _floor(stats: dict):
    floor = stats.get("judge_noise_floor") or {}
    if "combined" not in floor:
        return None
    cell = next(iter(floor["combined"].values()))
    return {"VEPD": cell["VEPD"], "interval": cell["VEPD_interval"]}


def _rows(vepd: dict) -> dict:
    return {
        variant: {"VEPD": row["VEPD"], "ci95": row["VEPD_ci95"]} for variant, row in vepd["combined"].items()
    }


def read_output(out: Path) -> dict:
    def doc(*parts):
        return json.loads(out.joinpath(*parts).read_text(encoding="utf-8"))

    return {
        "gps": _rows(doc("vepd.json")),
        "gps_floor": _floor(doc("statistics.json")),
        "imu": _rows(doc("imu_study", "vepd.json")),
        "imu_floor": _floor(doc("imu_study", "statistics.json")),
    }


def run_study(imu: str, out: Path) -> dict:
    """One ``demo --real-sample`` with the study file, its IMU study's IMU replaced by ``imu``."""
    import yaml

    from sim2real_eval.studies.demo import DemoOptions, run_demo

    data = yaml.safe_load(STUDY.read_text(encoding="utf-8"))
    data["imu_study"]["imu"] = imu
    config = out.parent / f"simulators_{imu}.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    result = run_demo(out, DemoOptions(config_path=config, real_sample=True, progress=False, overwrite=True))
    numbers = read_output(out)
    numbers["wall_s"] = round(time.perf_counter() - start_wall, 1)
    cpu = (result.cpu_times or {}).get("total")
    numbers["cpu_s"] = round(cpu if cpu is not None else time.process_time() - start_cpu, 1)
    return numbers


def measure(imus) -> dict:
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "study": "config/studies/simulators.yaml",
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for imu in imus:
            record["runs"][imu] = run_study(imu, Path(tmp) / imu)
            print(f"{imu}: {record['runs'][imu]['wall_s']} s", file=sys.stderr)
    return record


def _ci(interval) -> str:
    return f"[{interval[0]:.4f}, {interval[1]:.4f}]" if interval else "–"


def render(record: dict) -> str:
    runs = record["runs"]
    first = runs[next(iter(runs))]
    lines = [
        "GPS study (each simulator's GPS model, the IMU held fixed: car_mems):",
        "",
        "| GPS preset | simulator | VEPD | 95 % interval |",
        "|---|---|---|---|",
    ]
    for variant, row in sorted(first["gps"].items(), key=lambda item: item[1]["VEPD"]):
        lines.append(
            f"| `{variant}` | {SIMULATOR.get(variant, '')} | {row['VEPD']:.4f} | {_ci(row['ci95'])} |"
        )
    floor = first["gps_floor"]
    if floor:
        lines.append(f"| judge-noise floor | | {floor['VEPD']:.4f} | {_ci(floor['interval'])} |")
    lines += [
        "",
        "IMU study (the real GPS with each simulator's IMU model; one demo run per IMU):",
        "",
        "| IMU preset | simulator | VEPD | 95 % interval | floor of that run |",
        "|---|---|---|---|---|",
    ]
    for imu, numbers in runs.items():
        row = numbers["imu"].get(f"sim_imu-{imu}")
        if row is None:
            continue
        floor = numbers["imu_floor"]
        cell = f"{floor['VEPD']:.4f} {_ci(floor['interval'])}" if floor else "–"
        lines.append(
            f"| `{imu}` | {SIMULATOR.get(imu, '')} | {row['VEPD']:.4f} | {_ci(row['ci95'])} | {cell} |"
        )
    walls = [n["wall_s"] for n in runs.values()]
    cpus = [n["cpu_s"] for n in runs.values()]
    lines += [
        "",
        f"Measured {record['date']} with `python benchmarks/simulator_table.py` ({len(runs)} demo runs "
        f"of the study file, {min(walls):.0f}–{max(walls):.0f} s wall and {min(cpus):.0f}–{max(cpus):.0f} s "
        "CPU each on this 2-core machine, shared with other jobs; K = 6 scored 5-s windows of the shipped "
        "comma2k19 segment).",
    ]
    return "\n".join(lines) + "\n"


def regions(text: str) -> dict:
    return {m.group("name"): m.group("body") for m in REGION.finditer(text)}


def write(record: dict) -> None:
    text = DOC.read_text(encoding="utf-8")
    if NAME not in regions(text):
        raise SystemExit(f"{DOC}: no <!-- generated: {NAME} --> region")
    body = render(record)
    text = REGION.sub(
        lambda m: m.group(1) + body + m.group(4) if m.group("name") == NAME else m.group(0), text
    )
    DOC.write_text(text, encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare docs/models.md with the record; no runs"
    )
    parser.add_argument("--render", action="store_true", help="write docs/models.md from the record; no runs")
    parser.add_argument(
        "--imu", nargs="+", default=list(IMUS), help=f"IMU presets (default {' '.join(IMUS)})"
    )
    args = parser.parse_args(argv)
    if args.check:
        record = json.loads(RECORD.read_text(encoding="utf-8"))
        same = regions(DOC.read_text(encoding="utf-8")).get(NAME) == render(record)
        print("docs/models.md matches the record" if same else "docs/models.md differs from the record")
        return 0 if same else 1
    if not args.render:
        record = measure(args.imu)
        RECORD.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    write(json.loads(RECORD.read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
