"""``sim2real-eval make-reference [--out bags/reference] [--k K] [--seed S] [--scenario NAME]``.

Writes the synthetic ART-like reference data set (``sim2real_eval.reference``): per scenario K
real-like runs, rosbag2 v8 sqlite3, ``OUT/<scenario>/run_<kk>/``, and ``OUT/README.md`` labelling the
data synthetic.  ``--scenario standstill`` (any scenario of config/scenarios, not only the study's)
writes a standstill recording for ``calibrate``.  Same seed → same messages (docs/models.md,
"Reproducibility").  Existing runs are kept unless --overwrite.
"""
from __future__ import annotations

from . import integer

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): runs it wrote before with the same setup are kept (a "
           "rerun resumes); a bag or README.md of yours at one of its places, or a run of another setup, is "
           "refused unless --overwrite, which rewrites exactly what it writes; nothing else in OUT is "
           "touched, nothing is written through a symbolic link.")


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="bags/reference", help="output folder (default: bags/reference)")
    parser.add_argument("--k", type=integer, default=None,
                        help="runs per scenario (default: the setup's shipped_repeats, 3)")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: the setup's, 20240215)")
    parser.add_argument("--scenario", action="append", default=None,
                        help="only this scenario (repeatable; default: every scenario of the setup's "
                             "study). Any scenario of config/scenarios also works, e.g. 'standstill' "
                             "(10 min at rest, ~24 MB, for `sim2real-eval calibrate`)")
    parser.add_argument("--setup", default=None,
                        help="reference setup YAML (default: config/studies/demo_reference.yaml)")
    parser.add_argument("--overwrite", action="store_true",
                        help="rewrite the runs and README.md it writes even when they exist (default: its "
                             "own runs of the same setup are kept, anything else there is refused); other "
                             "files in OUT are never touched")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    import dataclasses
    import os
    import time
    from pathlib import Path

    from .. import reference as ref
    from ..errors import UserError
    from ..limits import check_repeats
    from ..pipeline.batch import available_cores
    from ..scenarios import available_scenarios
    from ..studies.real_bags import map_items as _map

    setup = ref.load_setup(args.setup)
    if args.seed is not None:
        if args.seed < 0:
            raise UserError(f"--seed must be >= 0, got {args.seed}")
        setup = dataclasses.replace(setup, seed=args.seed)
    k = setup.shipped_repeats if args.k is None else args.k
    check_repeats(k, "--k")
    scenarios = args.scenario or list(setup.scenarios)
    known = available_scenarios()
    for name in scenarios:
        if name not in setup.scenarios and name not in known:
            raise UserError(f"--scenario {name!r}: neither a scenario of {setup.source} "
                            f"({', '.join(setup.scenarios)}) nor of config/scenarios ({', '.join(known)})")
    workers = available_cores() if args.workers is None else args.workers
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    from ..outputs import check_name, check_paths

    check_name(args.out, "--out")
    out = Path(args.out)
    check_paths({"--setup": setup.source}, {"--out": [out / name for name in scenarios] + [out / ref.README]})
    if os.path.lexists(out / ref.README) and not args.overwrite and not ref.readme_is_ours(out / ref.README):
        raise UserError(f"--out {out}: README.md: not written by make-reference; move it away or pass "
                        "--overwrite")
    todo = []
    for name in scenarios:
        if (out / name).is_symlink():
            raise UserError(f"--out {out}: {name}: a symbolic link; make-reference never writes through a "
                            "link (remove it or choose another --out)")
        for index in range(k):
            path = ref.run_path(out, name, index)
            if not os.path.lexists(path) or args.overwrite or ref.owned_item(path, setup) != "same":
                todo.append((setup, str(out), name, index, args.overwrite))
    start = time.perf_counter()
    _map(ref.write_reference_run, todo, workers, not args.no_progress, f"writing {len(todo)} reference runs")
    ref.write_readme(setup, out, overwrite=args.overwrite)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(todo)} runs written, {k * len(scenarios) - len(todo)} kept "
          f"({size / 1e6:.1f} MB in total) in {time.perf_counter() - start:.1f} s")
    return 0
