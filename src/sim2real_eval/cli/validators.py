"""argparse ``type=`` validators shared by the commands (as ros2bag's ``check_positive_float`` …).

A bad value is refused while the command line is parsed, before any work: argparse prints
``sim2real-eval CMD: error: argument --k: must be >= 0, got '-1' (…)`` — one line naming the option —
and exits 2 (``cli.OneLineParser``).  Importing it takes the standard library only: ``--help`` stays cheap.
"""
from __future__ import annotations

import argparse
import math
import os
import re


def integer(text: str) -> int:
    """An integer in ASCII digits.  ``int()`` also takes '٢' (Arabic-Indic two) and '1_0'; a count or an
    index is only ever ASCII digits here."""
    if re.fullmatch(r"[+-]?[0-9]+", text) is None:
        raise argparse.ArgumentTypeError(f"expected an integer in ASCII digits, got {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    """An integer >= 0 (a repeat index --k, a seed)."""
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (--workers, a number of draws)."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a rate in Hz, a speed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def finite_float(text: str) -> float:
    """A finite number (an angle, a coordinate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def existing_path(text: str) -> str:
    """A file or folder that exists (a bag: a rosbag2 folder, a .db3/.mcap/.bag file); the refusal says
    why not (missing, a link loop, …) as the CLI says an OSError (``limits.describe_os_error``).  What is
    in it is checked by the reader, which names the problem."""
    try:
        os.stat(text)
    except OSError as exc:  # missing, a symbolic link loop, a folder that may not be read …
        from ..limits import describe_os_error

        raise argparse.ArgumentTypeError(f"{text}: {describe_os_error(exc)}") from None
    return text


def judge_names(text: str) -> tuple:
    """Judge names, comma-separated (``--judges ekf,ukf``): at least two, each once, each a known judge
    (``studies.judges.JUDGES``)."""
    from ..studies.judges import names_problem, split_names

    names = split_names(text)
    problem = names_problem(names)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return tuple(names)


__all__ = ["existing_path", "finite_float", "integer", "judge_names", "non_negative_int", "positive_float",
           "positive_int"]
