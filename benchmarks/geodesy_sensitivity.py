"""How far the geodesy's outputs move when numpy's elementary functions differ in the last bit.

    python benchmarks/geodesy_sensitivity.py [--trials T] [--with-sqrt]

Across CPUs and numpy builds, +, −, ×, ÷ and sqrt are IEEE 754 correctly rounded (the same bits
everywhere); sin, cos, arctan2, hypot, cbrt, … are not: numpy picks SIMD kernels (SVML on AVX-512) or
the C library's, and they differ in the last bit for a fraction of the inputs (measured on arm64 vs
x86: hypot 10 %, cbrt 37 %; issue 34).  This script stands in for "another CPU": it replaces the
``np`` that ``sim2real_eval.geodesy`` sees by one whose transcendental functions move every output
element by −1, 0 or +1 ulp (``np.nextafter``, chosen at random per element, ``--trials`` seeds, plus
all +1 and all −1), and prints, per function and field, the largest change against the unperturbed
result: absolute, scaled (|Δ| / max(1, |v|), the 1e-12 promise of docs/models.md), and in ulps of
max(1, |v|) (so a value near 0 is measured against the ulp of 1).  ``--with-sqrt`` perturbs sqrt as
well (conservative: sqrt is correctly rounded).

Inputs, the project's use and a global grid:
- ``enu_to_geodetic`` / ``geodetic_to_enu``: datums at latitudes −89..89° (every 8°), four
  longitudes, altitudes −500, 260 and 10 000 m; per datum the origin and 12 ENU offsets uniform in
  ±3 km east/north, ±100 m up;
- ``ecef_to_geodetic`` / ``geodetic_to_ecef``: latitudes −89..89° (every 2°), four longitudes,
  altitudes −500, 0, 260, 3000, 10 000 m (ECEF made unperturbed, so only the function under test
  is perturbed).
"""
from __future__ import annotations

import argparse
import types

import numpy as np

from sim2real_eval import geodesy

NOT_CORRECTLY_ROUNDED = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot", "cbrt",
                         "exp", "log", "power")


def perturbed_numpy(rng, mode: str, names):
    """A stand-in for the numpy module whose functions ``names`` return last-bit-moved outputs."""
    fake = types.SimpleNamespace(**{name: getattr(np, name) for name in dir(np) if not name.startswith("__")})

    def wrap(func):
        def moved(*args, **kwargs):
            out = np.asarray(func(*args, **kwargs), dtype=float)
            step = {"up": 1, "down": -1}.get(mode)
            steps = np.full(out.shape, step) if step is not None else rng.integers(-1, 2, out.shape)
            return np.where(steps > 0, np.nextafter(out, np.inf),
                            np.where(steps < 0, np.nextafter(out, -np.inf), out))
        return moved

    for name in names:
        setattr(fake, name, wrap(getattr(np, name)))
    return fake


def cases():
    rng = np.random.default_rng(34)
    datums = [geodesy.Datum(float(lat), lon, alt) for lat in np.arange(-89.0, 90.0, 8.0)
              for lon in (-179.5, -89.4, 0.3, 120.7) for alt in (-500.0, 260.0, 10000.0)]
    enu = np.concatenate([np.zeros((1, 3)), rng.uniform(-1.0, 1.0, (12, 3)) * [3000.0, 3000.0, 100.0]])
    geodetic = [geodesy.enu_to_geodetic(enu, datum) for datum in datums]
    lat, lon, alt = np.meshgrid(np.arange(-89.0, 90.0, 2.0), [-179.5, -89.4, 0.3, 120.7],
                                [-500.0, 0.0, 260.0, 3000.0, 10000.0], indexing="ij")
    ecef = geodesy.geodetic_to_ecef(lat, lon, alt)
    return {
        "enu_to_geodetic": (("lat", "lon", "alt"),
                            lambda: [np.stack(geodesy.enu_to_geodetic(enu, d)) for d in datums]),
        "geodetic_to_enu": (("east", "north", "up"),
                            lambda: [geodesy.geodetic_to_enu(*g, d).T for g, d in zip(geodetic, datums)]),
        "ecef_to_geodetic": (("lat", "lon", "alt"), lambda: [np.stack(geodesy.ecef_to_geodetic(ecef))]),
        "geodetic_to_ecef": (("x", "y", "z"),
                             lambda: [np.moveaxis(geodesy.geodetic_to_ecef(lat, lon, alt), -1, 0)]),
    }


def measure(run, fields, names, trials: int):
    """{field: (max |Δ|, max scaled, max ulps)} over the perturbation trials."""
    base = [np.asarray(a) for a in run()]
    worst = {f: [0.0, 0.0, 0.0] for f in fields}
    modes = ["up", "down"] + ["random"] * trials
    for seed, mode in enumerate(modes):
        geodesy.np = perturbed_numpy(np.random.default_rng(seed), mode, names)
        try:
            moved = run()
        finally:
            geodesy.np = np
        for b, m in zip(base, moved):
            for i, field in enumerate(fields):
                d = np.abs(np.asarray(m[i]) - b[i])
                v = np.abs(b[i])
                worst[field][0] = max(worst[field][0], float(d.max()))
                worst[field][1] = max(worst[field][1], float((d / np.maximum(1.0, v)).max()))
                worst[field][2] = max(worst[field][2], float((d / np.spacing(np.maximum(1.0, v))).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--with-sqrt", action="store_true")
    args = parser.parse_args()
    all_names = NOT_CORRECTLY_ROUNDED + (("sqrt",) if args.with_sqrt else ())
    print(f"geodesy: {geodesy.__file__}; numpy {np.__version__}; perturbed: {', '.join(all_names)}")
    for case, (fields, run) in cases().items():
        for label, names in [("all", all_names)] + [(n, (n,)) for n in all_names]:
            worst = measure(run, fields, names, args.trials if label == "all" else max(4, args.trials // 5))
            if label != "all" and not any(w[0] for w in worst.values()):
                continue  # the function is not used by this case
            text = "  ".join(f"{f} {w[0]:.2g} (scaled {w[1]:.2g}, {w[2]:.0f} ulp)" for f, w in worst.items())
            print(f"{case} [{label}]: {text}")


if __name__ == "__main__":
    main()
