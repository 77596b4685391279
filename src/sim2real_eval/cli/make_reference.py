"""``sim2real-eval make-reference [--out bags/reference] [--k K] [--seed S] [--scenario NAME]``.

Writes the synthetic ART-like reference data set (``sim2real_eval.reference``): per scenario K
real-like runs, rosbag2 v8 sqlite3, ``OUT/<scenario>/run_<kk>/``, and ``OUT/README.md`` labelling the
data synthetic.  ``--scenario standstill`` (any scenario of config/scenarios, not only the study's)
writes a standstill recording for ``calibrate``.  Same seed → same messages (docs/models.md,
"Reproducibility").  Existing runs are kept unless --overwrite.
"""
from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="bags/reference", help="output folder (default: bags/reference)")
    parser.add_argument("--k", type=int, default=None,
                        help="runs per scenario (default: the setup's shipped_repeats, 3)")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: the setup's, 20240215)")
    parser.add_argument("--scenario", action="append", default=None,
                        help="only this scenario (repeatable; default: every scenario of the setup's "
                             "study). Any scenario of config/scenarios also works, e.g. 'standstill' "
                             "(10 min at rest, ~24 MB, for `sim2real-eval calibrate`)")
    parser.add_argument("--setup", default=None,
                        help="reference setup YAML (default: config/studies/demo_reference.yaml)")
    parser.add_argument("--overwrite", action="store_true", help="rewrite runs that already exist")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    import dataclasses
    import time
    from pathlib import Path

    from .. import reference as ref
    from ..demo import _map
    from ..errors import UserError
    from ..pipeline.batch import available_cores
    from ..scenarios import available_scenarios

    setup = ref.load_setup(args.setup)
    if args.seed is not None:
        if args.seed < 0:
            raise UserError(f"--seed must be >= 0, got {args.seed}")
        setup = dataclasses.replace(setup, seed=args.seed)
    k = setup.shipped_repeats if args.k is None else args.k
    if k < 1:
        raise UserError(f"--k must be >= 1, got {k}")
    scenarios = args.scenario or list(setup.scenarios)
    known = available_scenarios()
    for name in scenarios:
        if name not in setup.scenarios and name not in known:
            raise UserError(f"--scenario {name!r}: neither a scenario of {setup.source} "
                            f"({', '.join(setup.scenarios)}) nor of config/scenarios ({', '.join(known)})")
    workers = available_cores() if args.workers is None else args.workers
    if workers < 1:
        raise UserError(f"--workers must be >= 1, got {workers}")
    out = Path(args.out)
    from ..outputs import check_paths

    check_paths({"--setup": setup.source}, {"--out": [out / name for name in scenarios] + [out / ref.README]})
    todo = [(setup, str(out), name, index, args.overwrite) for name in scenarios for index in range(k)
            if args.overwrite or not (ref.run_path(out, name, index) / "metadata.yaml").is_file()]
    start = time.perf_counter()
    _map(ref.write_reference_run, todo, workers, not args.no_progress, f"writing {len(todo)} reference runs")
    ref.write_readme(setup, out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(todo)} runs written, {k * len(scenarios) - len(todo)} kept "
          f"({size / 1e6:.1f} MB in total) in {time.perf_counter() - start:.1f} s")
    return 0
