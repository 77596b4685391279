"""The ``sim2real-eval`` command.

Each sub-command lives in its own module ``sim2real_eval.cli.<name>`` exposing
``add_arguments(parser)`` and ``run(args) -> int``; modules are imported only when their command
runs, so ``sim2real-eval --help`` stays fast.  A UserError anywhere becomes one line on stderr and
exit code 2; ``--debug`` shows the traceback instead.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import List, Optional

from .. import __version__
from ..errors import UserError

# The commands parallelise with processes (one per core).  OpenBLAS's own threads would only compete
# with them, and they spin while idle: with them the demo's small BLAS/LAPACK calls (a 1-D KDE, ...)
# cost several times the CPU, for the same numbers (issue 19: the quick demo 18.7 -> 13.3 s CPU).
# Set before numpy is imported (nothing above imports it); a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# name -> (module, one-line help).  Order is the order shown in --help.
COMMANDS = {
    "demo": ("demo", "run the paper's study end to end on the embedded defaults and write a report"),
    "scenario": ("scenario", "generate a ground-truth manoeuvre (line, sine, circle) from the bicycle model"),
    "sensors": ("sensors", "simulate GPS/IMU from a scenario and write the series (and a plot)"),
    "judge": ("judge", "run the embedded robot_localization (ekf + navsat) on a bag"),
    "simulate": ("simulate", "run a study: ground truth -> sensors -> judge -> one bag per run"),
    "replay": ("replay", "replay a real bag with simulated IMU and/or GPS, judged like the real one"),
    "score": ("score", "score run pairs: RMSE, Wiener entropy, W1, W2, VEPD, tables, figures, report"),
    "make-reference": ("make_reference", "generate the synthetic ART-like reference data set in bags/"),
    "calibrate": ("calibrate", "estimate GPS/IMU noise parameters from a standstill bag"),
    "tune": ("tune", "search noise-model parameters that minimise VEPD against real runs"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sim2real-eval",
        description="Measure the sim-to-real gap of simulated GPS and IMU, judged by robot_localization.",
    )
    parser.add_argument("--version", action="version", version=f"sim2real-eval {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # First pass: only find the command; its own parser handles the rest of the arguments.
    known, rest = parser.parse_known_args(argv)
    if known.command is None:
        parser.print_help()
        return 2
    module_name, help_text = COMMANDS[known.command]
    module = importlib.import_module(f"{__name__}.{module_name}")
    command_parser = argparse.ArgumentParser(prog=f"sim2real-eval {known.command}", description=help_text)
    command_parser.add_argument("--debug", action="store_true", default=known.debug,
                                help="show tracebacks instead of one-line errors")
    module.add_arguments(command_parser)
    args = command_parser.parse_args(rest)
    from ..workers import Terminated, handle_sigterm

    handle_sigterm()  # SIGTERM unwinds like Ctrl-C: nothing half-written, workers stopped
    _show_data_warnings(known.command)
    try:
        return int(module.run(args) or 0)
    except UserError as exc:
        if args.debug:
            raise
        print(f"sim2real-eval {known.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Terminated as exc:
        print(f"sim2real-eval {known.command}: terminated (SIGTERM); nothing half-written is left",
              file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"sim2real-eval {known.command}: interrupted", file=sys.stderr)
        return 130


def _show_data_warnings(command: str) -> None:
    """DataWarnings (errors.DataWarning) as one line ``sim2real-eval CMD: warning: …``, each once."""
    import warnings

    from ..errors import DataWarning, one_line

    original = getattr(warnings.showwarning, "original", warnings.showwarning)  # main() may run twice

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, DataWarning):
            print(f"sim2real-eval {command}: warning: {one_line(message)}", file=sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)

    show.original = original
    warnings.showwarning = show


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
