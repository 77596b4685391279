"""Every sensor preset's messages in one file, and how two such files differ (another CPU, numpy, Python).

    python benchmarks/preset_streams.py dump OUT.npz          # on each machine / interpreter
    python benchmarks/preset_streams.py compare A.npz B.npz   # anywhere with numpy

``dump`` samples every GPS and IMU preset (config/sensors) on the circle and sine scenarios with seed 3
(``model.sample``, which the node path equals bit for bit) and stores each message field, plus the
scenario truth.  Robot-side only: runs on Python 3.8 with numpy and PyYAML.  ``compare`` prints, per
field, how many values differ and the largest difference, absolute and scaled (|Δ| / max(1, |v|), the
1e-12 promise of docs/models.md "Reproducibility"); integer and string fields (stamps, statuses,
counts) must be equal, and a difference there is printed as such.
"""
from __future__ import annotations

import argparse
import collections
import sys
from typing import Dict

import numpy as np

SCENARIOS = ("circle", "sine")
SEED = 3


def dump(path: str) -> None:
    from sim2real_eval import scenarios
    from sim2real_eval.models import load_gps_model, load_imu_model, sensor_seed
    from sim2real_eval.models.base import available_presets

    arrays: Dict[str, np.ndarray] = {}
    for scenario in SCENARIOS:
        truth = scenarios.generate(scenario, 0, SEED)
        for field in ("position", "orientation", "velocity", "angular_velocity", "specific_force"):
            arrays[f"{scenario}/truth/-/{field}"] = getattr(truth, field)
        for kind, loader in (("gps", load_gps_model), ("imu", load_imu_model)):
            for name in available_presets(kind):
                samples = loader(name, sensor_seed(SEED, scenario, name, kind)).sample(truth)
                for field, value in samples.as_dict().items():
                    arrays[f"{scenario}/{kind}/{name}/{field}"] = np.asarray(value)
    np.savez(path, **arrays)
    print(f"{path}: {len(arrays)} arrays (Python {sys.version.split()[0]}, numpy {np.__version__})")


def compare(path_a: str, path_b: str) -> int:
    a, b = np.load(path_a), np.load(path_b)
    if sorted(a.files) != sorted(b.files):
        print(f"other arrays: {sorted(set(a.files) ^ set(b.files))}")
        return 1
    worst = collections.defaultdict(lambda: [0, 0, 0.0, 0.0])  # values differing, values, max |Δ|, scaled
    unequal = []
    for key in a.files:
        x, y = a[key], b[key]
        kind, field = key.split("/")[1], key.split("/")[-1]
        if x.shape != y.shape or x.dtype != y.dtype or x.dtype.kind not in "fc":
            if x.shape != y.shape or not np.array_equal(x, y):
                unequal.append(key)
            continue
        diff = np.where(np.isnan(x) & np.isnan(y), 0.0, np.abs(x - y))
        entry = worst[f"{kind} {field}"]
        entry[0] += int(np.count_nonzero(diff))
        entry[1] += diff.size
        if diff.size:
            entry[2] = max(entry[2], float(diff.max()))
            entry[3] = max(entry[3], float((diff / np.maximum(1.0, np.abs(x))).max()))
    for name, (count, total, largest, scaled) in sorted(worst.items()):
        print(f"{name}: {count} of {total} values differ, max |d| {largest:.2g}, max scaled {scaled:.2g}")
    for key in unequal:
        print(f"NOT EQUAL (integer/string field or shape): {key}")
    return 1 if unequal else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("dump").add_argument("out")
    pair = sub.add_parser("compare")
    pair.add_argument("a")
    pair.add_argument("b")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
