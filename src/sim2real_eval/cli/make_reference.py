"""``sim2real-eval make-reference [--out bags/reference] [--k K] [--seed S] [--scenario NAME]``.

Writes the synthetic ART-like reference data set (``sim2real_eval.reference``): per scenario K
real-like runs, rosbag2 v8 sqlite3, ``OUT/<scenario>/run_<kk>/``, and ``OUT/README.md`` labelling the
data synthetic.  ``--scenario standstill`` (any scenario of config/scenarios, not only the study's)
writes a standstill recording for ``calibrate``.  Same seed → same messages (docs/models.md,
"Reproducibility").  Existing runs are kept unless --overwrite.
"""
from __future__ import annotations

from .validators import integer, non_negative_int, positive_int

OUTPUTS = ("Outputs (docs/pipeline.md, 'Outputs'): runs it wrote before with the same setup are kept (a "
           "rerun resumes); a bag or README.md of yours at one of its places, or a run of another setup, is "
           "refused unless --overwrite, which rewrites exactly what it writes; nothing else in OUT is "
           "touched, nothing is written through a symbolic link.")


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="bags/reference", help="output folder (default: bags/reference)")
    parser.add_argument("--k", type=integer, default=None,
                        help="runs per scenario (default: the setup's shipped_repeats, 3)")
    parser.add_argument("--seed", type=non_negative_int, default=None,
                        help="seed (default: the setup's, 20240215)")
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
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="worker processes (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    from ..service.data import ReferenceRequest, make_reference

    done = make_reference(ReferenceRequest(
        out=args.out, k=args.k, seed=args.seed, scenarios=args.scenario, setup=args.setup,
        overwrite=args.overwrite, workers=args.workers, progress=not args.no_progress))
    print(f"{done.out}: {done.written} runs written, {done.kept} kept "
          f"({done.size_bytes / 1e6:.1f} MB in total) in {done.seconds:.1f} s")
    return 0
