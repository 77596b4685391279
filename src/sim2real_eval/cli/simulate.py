"""``sim2real-eval simulate STUDY.yaml --out OUT``: every run of a study, one bag per run.

Runs land in ``OUT/sim/<variant>/<scenario>/<k>/`` (docs/pipeline.md).  Re-running the same command
skips complete runs; a run directory that differs from the study is refused.
"""
from __future__ import annotations

from ..runs import timing  # standard library only: --help stays cheap
from . import RUN_TREE
from .validators import positive_int

OUTPUTS = RUN_TREE


def add_arguments(parser) -> None:
    parser.add_argument("study", help="study file (a path, or the name of one in config/studies/)")
    parser.add_argument("--out", required=True,
                        help="output directory (runs go to OUT/sim/...; complete runs there are resumed)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="local worker processes (default: all cores; 1 = in this process)")
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="run on Ray: a cluster address, 'auto' (existing cluster) or 'local'")
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default=None,
                        help="bag storage (default: the study's, sqlite3)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    timing.add_arguments(parser, seed_help="the study's seed")


def run(args) -> int:
    from ..resources import find_config
    from ..service import simulate_study

    # a bare name (paper_gps.yaml) is looked up in config/studies/ and config/ too, from any directory
    study = find_config(args.study, "studies", option="STUDY")
    done = simulate_study(study, args.out, storage=args.storage, workers=args.workers, ray_address=args.ray,
                          progress=not args.no_progress, timing=timing.from_args(args))
    done.report.raise_on_failure()
    report = done.report
    print(f"{done.study.name}: {report.written} runs written, {report.skipped} already complete "
          f"({len(done.tasks)} in the study) in {done.seconds:.1f} s → {args.out}/sim")
    return 0
