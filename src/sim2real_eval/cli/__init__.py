"""The ``sim2real-eval`` command.

Each sub-command lives in its own module ``sim2real_eval.cli.<name>`` exposing
``add_arguments(parser)`` and ``run(args) -> int``: parse (values checked by the shared argparse
validators of ``cli.validators``) → one service function returning a result object → print
(docs/architecture.md, "cli — how a command is written").  Modules are imported only when their command
runs, so ``sim2real-eval --help`` stays fast.  A UserError anywhere becomes one line on stderr and
exit code 2; ``--debug`` shows the traceback instead.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
import warnings
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
    "scenario": ("scenario", "a ground-truth manoeuvre (line, sine, circle, terrain...) or its CSV logs"),
    "sensors": ("sensors", "simulate GPS/IMU from a scenario and write the series (and a plot)"),
    "judge": ("judge", "run the embedded robot_localization (ekf + navsat) on a bag"),
    "simulate": ("simulate", "run a study: ground truth -> sensors -> judge -> one bag per run"),
    "replay": ("replay", "replay a real bag with simulated IMU and/or GPS, judged like the real one"),
    "score": ("score", "score run pairs: RMSE, Wiener entropy, W1, W2, VEPD, tables, figures, report"),
    "make-reference": ("make_reference", "generate the synthetic ART-like reference data set in bags/"),
    "import": ("import_drive", "import a real drive (comma2k19, generic CSV) as bags DIR/<scenario>/<run>/"),
    "calibrate": ("calibrate", "estimate GPS/IMU noise parameters from a standstill bag, or a drive + truth"),
    "tune": ("tune", "search noise-model parameters that minimise VEPD against real runs"),
    "fit": ("fit", "fit a GPS + IMU model pair to a real drive's windows (blocked cross-validation)"),
}


# The output policy (outputs.py; docs/pipeline.md, "Outputs"), as each command's --help says it.
REPLACED = ("Outputs (docs/pipeline.md, 'Outputs'): an existing non-empty {what} is refused unless "
            "--overwrite, which replaces it atomically (the new one is complete before the old one goes); "
            "nothing is ever written or deleted through a symbolic link; an output may not overlap an input.")
RUN_TREE = ("Outputs (docs/pipeline.md, 'Outputs'): OUT is a run tree; a run already there is resumed only "
            "when its run.yaml is the requested run and its data files have the size and SHA-256 run.yaml "
            "recorded; any other run there is refused (never overwritten); nothing else in OUT is touched.")


class OneLineParser(argparse.ArgumentParser):
    """argparse with the project's one-line errors: ``PROG: error: MESSAGE (PROG --help …)``, exit 2, and
    no usage block before it (1-14 lines that hid the one line that matters).  Sub-parsers made by
    ``add_subparsers`` are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help shows the usage)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
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
    command_parser = OneLineParser(prog=f"sim2real-eval {known.command}", description=help_text)
    command_parser.add_argument("--debug", action="store_true", default=known.debug,
                                help="show tracebacks instead of one-line errors")
    module.add_arguments(command_parser)
    policy = getattr(module, "OUTPUTS", None)  # the output policy, in every command's --help
    if policy:
        command_parser.epilog = f"{command_parser.epilog}  {policy}" if command_parser.epilog else policy
    args = command_parser.parse_args(rest)
    if args.debug:  # e.g. Ray's own logs (pipeline.ray_cluster) are shown only then

        logging.getLogger("sim2real_eval").setLevel(logging.DEBUG)
    from ..workers import Terminated, handle_sigterm, termination_received

    handle_sigterm()  # SIGTERM/SIGHUP unwind like Ctrl-C: nothing half-written, workers stopped
    _show_data_warnings(known.command)
    _names_as_bytes()
    try:
        with _plain_numbers():
            code = int(module.run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not as "Exception ignored" at exit
        return code
    except UserError as exc:
        if args.debug:
            raise
        print(f"sim2real-eval {known.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Terminated as exc:
        return _terminated(known.command, exc)
    except KeyboardInterrupt:
        print(f"sim2real-eval {known.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as exc:  # the environment refused (a path the OS cannot take, a full disk …)
        if termination_received() is not None:
            return _terminated(known.command, termination_received())
        if args.debug:
            raise
        from ..limits import describe_os_error

        where = f"{exc.filename}: " if exc.filename else ""
        print(f"sim2real-eval {known.command}: error: {where}{describe_os_error(exc)}", file=sys.stderr)
        return 2
    except Exception:
        # The stop signal came while a library ran that turned it into an error of its own (numba
        # compiling or loading a kernel): the unwinding cleaned up all the same; report the signal.
        if termination_received() is None or args.debug:
            raise
        return _terminated(known.command, termination_received())


def _terminated(command: str, exc) -> int:
    print(f"sim2real-eval {command}: terminated ({exc.name}); nothing half-written is left", file=sys.stderr)
    return exc.exit_code


def _names_as_bytes() -> None:
    """Print file names as the bytes they are: a name that is not UTF-8 (a \\xff byte) reaches Python as
    a surrogate escape and is written back as that byte, never a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            reconfigure(errors="surrogateescape")


def _broken_pipe() -> int:
    """The reader of stdout went away (``| head``, ``| true``): stop quietly with the status a process
    killed by SIGPIPE has, as other command-line tools do (the work itself finished or was unwound)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit must not fail again
    except (OSError, ValueError):
        pass
    return 128 + signal.SIGPIPE


def note(command: str):
    """A ``notice(text)`` callback for the library (``service``): one line ``sim2real-eval COMMAND: note:
    text`` on stderr, for what a command applied without being asked (e.g. the ART static TFs)."""
    from ..errors import one_line

    def notice(text: str) -> None:
        print(f"sim2real-eval {command}: note: {one_line(text)}", file=sys.stderr)

    return notice


def _plain_numbers():
    """While a command runs, numpy 2's scalars print as ``0.3``, not ``np.float64(0.3)``: in a message a
    number reached through ``!r``, a tuple or a list reads as a number (the repr is for programmers).
    numpy 1.x printed them plainly already."""
    import numpy as np

    if int(np.__version__.split(".")[0]) < 2:
        return contextlib.nullcontext()
    return np.printoptions(legacy="1.25")


def _show_data_warnings(command: str) -> None:
    """DataWarnings (errors.DataWarning) as one line ``sim2real-eval CMD: warning: …``, each once."""
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
