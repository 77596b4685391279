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


class _Place:
    """A path resolved once: its name, its identity and the identities of its existing ancestors
    (so a pair is compared with set look-ups, not stat calls: a demo checks ~200 × 30 pairs)."""

    def __init__(self, path: PathLike):
        self.path = _real(path)
        self.names = {self.path, *self.path.parents}
        self.identity = _identity(self.path)
        self.lineage = {i for i in map(_identity, (self.path, *self.path.parents)) if i is not None}

    def within(self, other: _Place) -> bool:
        """This place is ``other`` or lies below it (by name, or by the identity of what exists)."""
        return other.path in self.names or (other.identity is not None and other.identity in self.lineage)


def _relation(out: _Place, src: _Place) -> Optional[str]:
    if out.path == src.path or (out.identity is not None and out.identity == src.identity):
        return "is"
    if out.within(src):
        return "lies inside"
    if src.within(out):
        return "contains"
    return None


def relation(output: PathLike, input_path: PathLike) -> Optional[str]:
    """How ``output`` overlaps ``input_path``: "is", "lies inside", "contains" or None."""
    return _relation(_Place(output), _Place(input_path))


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
    in_places = [_Place(src) for _label, src in ins]
    out_places = [_Place(out) for _label, out in outs]
    for (out_label, out), out_place in zip(outs, out_places):
        for (in_label, src), in_place in zip(ins, in_places):
            how = _relation(out_place, in_place)
            if how is not None:
                raise UserError(f"{out_label} {out}: {how} the input {in_label} {src}; an output must "
                                "not overlap an input (choose another output)")
    seen: dict = {}
    for (label_b, b), place in zip(outs, out_places):
        for key in (place.path, place.identity):
            if key is not None and key in seen:
                label_a, a = seen[key]
                raise UserError(f"{label_a} {a} and {label_b} {b} are the same path; give each output "
                                "its own")
        seen.update({key: (label_b, b) for key in (place.path, place.identity) if key is not None})
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
