"""Locate the package's shared data (config presets, launch files) in every kind of install.

- source checkout / ``pip install -e .``: ``<repo>/config``
- ``pip install .``: ``<sys.prefix>/share/sim2real_eval/config`` (setup.py data_files)
- colcon (ament_python): ``<install>/share/sim2real_eval/config``, i.e. four levels above the
  module in ``<install>/lib/pythonX.Y/site-packages/sim2real_eval``.
``SIM2REAL_EVAL_SHARE`` overrides all of them.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .errors import UserError

_PACKAGE = "sim2real_eval"


def share_dir() -> Path:
    """The directory holding ``config/`` (and ``launch/``) for this installation."""
    env = os.environ.get("SIM2REAL_EVAL_SHARE")
    here = Path(__file__).resolve().parent
    candidates = [Path(env)] if env else []
    candidates += [
        here.parents[1],  # <repo>/src/sim2real_eval -> <repo>
        Path(sys.prefix) / "share" / _PACKAGE,
        here.parents[3] / "share" / _PACKAGE,
    ]
    for candidate in candidates:
        if (candidate / "config").is_dir():
            return candidate
    raise UserError(
        "cannot find the sim2real_eval config directory (looked in: "
        + ", ".join(str(c) for c in candidates)
        + "); set SIM2REAL_EVAL_SHARE"
    )


def config_path(*parts: str) -> Path:
    """Path of a file below the installed ``config/`` directory (not checked for existence)."""
    return share_dir().joinpath("config", *parts)
