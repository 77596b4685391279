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


def config_candidates(value, *folders: str) -> list:
    """Where a config file given on the command line is looked for, in order: the path as given
    (relative to the working directory), then — for a relative path — inside the installed
    ``config/``: ``config/<folder>/<value>`` for each of ``folders``, then ``config/<value>``.  The
    same rule as study files (``pipeline.study.resolve_config_file``), so a bare name such as
    ``ekf_art_iros2024.yaml`` or ``demo.yaml`` works from any directory."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return [path]
    return [path] + [config_path(folder, str(path)) for folder in folders] + [config_path(str(path))]


def find_config(value, *folders: str, option: str = "") -> Path:
    """The first existing file of ``config_candidates``; a UserError naming ``option`` and every place
    looked in when there is none.  Anything else that exists there but a folder (a FIFO, a device) is
    returned too: its reader refuses it as not a regular file (``limits``), naming it."""
    candidates = config_candidates(value, *folders)
    for candidate in candidates:
        if candidate.is_file() or (os.path.exists(candidate) and not candidate.is_dir()):
            return candidate
    where = f"{option} {value}" if option else str(value)
    raise UserError(f"{where}: file not found (looked in: {', '.join(str(c) for c in candidates)})")
