"""Outputs never touch inputs: the one check every command runs on its paths before any work.

``check_paths(inputs, outputs)`` refuses an output that *is*, lies *inside* or *contains* an input
(a judge ``--output`` equal to the bag it reads, a report ``--out`` replacing the runs it scores, a
calibration written into the bag's folder …), and two outputs that are the same path.  Paths are
compared after resolving symlinks and ``..``; where both exist, by file identity too (hard links,
bind mounts).  ``overwrite=False`` also refuses outputs that already exist (commands with
``--overwrite``).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Mapping, Optional, Tuple, Union

from .errors import UserError

PathLike = Union[str, os.PathLike]


def _real(path: PathLike) -> Path:
    return Path(os.path.abspath(os.fspath(path))).resolve(strict=False)


def _identity(path: Path) -> Optional[Tuple[int, int]]:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _lineage(path: Path) -> list:
    """``path`` and its ancestors, nearest first (resolved)."""
    return [path, *path.parents]


def _within(child: Path, parent: Path) -> bool:
    """True when ``child`` is ``parent`` or lies below it (by name, or by identity of what exists)."""
    if child == parent or parent in child.parents:
        return True
    target = _identity(parent)
    if target is None:
        return False
    return any(_identity(p) == target for p in _lineage(child) if p.exists())


def relation(output: PathLike, input_path: PathLike) -> Optional[str]:
    """How ``output`` overlaps ``input_path``: "is", "lies inside", "contains" or None."""
    out, src = _real(output), _real(input_path)
    if out == src or (_identity(out) is not None and _identity(out) == _identity(src)):
        return "is"
    if _within(out, src):
        return "lies inside"
    if _within(src, out):
        return "contains"
    return None


def _items(mapping: Mapping[str, object]) -> list:
    """[(label, path)] from {label: path | [paths] | None}."""
    items = []
    for label, value in mapping.items():
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        items += [(label, v) for v in values if v is not None and str(v) != ""]
    return items


def check_paths(inputs: Mapping[str, object], outputs: Mapping[str, object],
                overwrite: Optional[bool] = None) -> None:
    """Refuse (UserError, one line naming both options) any output overlapping an input or another
    output; with ``overwrite=False`` also any output that already exists.

    ``inputs``/``outputs``: {option label: path, list of paths, or None}.  Cheap: stat calls only.
    """
    ins, outs = _items(inputs), _items(outputs)
    for out_label, out in outs:
        for in_label, src in ins:
            how = relation(out, src)
            if how is not None:
                raise UserError(f"{out_label} {out}: {how} the input {in_label} {src}; an output must "
                                "not overlap an input (choose another output)")
    for i, (label_a, a) in enumerate(outs):
        for label_b, b in outs[i + 1:]:
            if relation(a, b) == "is":
                raise UserError(f"{label_a} {a} and {label_b} {b} are the same path; give each output "
                                "its own")
    if overwrite is False:
        for label, out in outs:
            if os.path.lexists(out):
                raise UserError(f"{label} {out}: already exists (choose another output or pass --overwrite)")
    checked = set()
    for label, out in outs:
        folder = _existing_ancestor(_real(out).parent)
        if folder not in checked:
            checked.add(folder)
            _check_writable(label, out, folder)


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_writable(label: str, out, folder: Path) -> None:
    """Outputs are built in a sibling and renamed: the (nearest existing) parent must take a file.
    A real attempt (a temporary file, removed at once): permission bits do not tell for root, ACLs,
    read-only mounts."""
    if not folder.is_dir():
        raise UserError(f"{label} {out}: {folder} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UserError(f"{label} {out}: cannot write in {folder} ({exc.strerror or exc})") from None
