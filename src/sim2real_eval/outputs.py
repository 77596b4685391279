"""The output policy: what every command that writes a file or a folder may do to what is already there.

One policy (docs/pipeline.md, "Outputs"), used by every command:

- ``check_paths(inputs, outputs)`` runs before any work: an output must not be, lie inside or contain an
  input (a judge ``--output`` equal to the bag it reads, a report ``--out`` replacing the runs it scores,
  a ``--storage`` inside the runs tune reads …), nor lie inside or be another output; a path the OS
  cannot use (empty, a symbolic-link loop, a component over 255 bytes, a path over 4095 bytes) is one
  line naming the option.  Paths are compared after resolving symlinks and ``..``; where both exist, by
  file identity too (hard links, bind mounts).  ``overwrite=False`` also refuses outputs that exist.
- ``output_folder(path, option, overwrite, command)`` decides what a command may do with an existing
  output folder: an absent or empty folder is written; a folder holding this command's own earlier
  output (its ``MARKER`` file, written by ``write_marker``, lists what it wrote) is resumed; anything
  else is refused unless ``--overwrite``, which replaces it atomically (``atomic.atomic_directory``: the
  new folder is complete before the old one is moved away).
- Nothing is ever deleted or written *through* a symbolic link: an output that is a link is replaced as
  a link (its target is left alone), and a command refuses to write into a link inside its output.
- Run trees (``simulate``, ``replay``, the demo's ``OUT/runs``) are resumed run by run: a run directory
  that exists is kept only when its run.yaml and data files are what was written
  (``runs.existing_run``), else refused.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple, Union

from .errors import UserError

PathLike = Union[str, os.PathLike]
MARKER = ".sim2real-eval.json"  # inside an output folder: which command wrote which files
NAME_MAX = 255   # bytes per path component (Linux file systems)
PATH_MAX = 4095  # bytes per path (Linux PATH_MAX 4096, terminating NUL included)


def check_name(path: PathLike, label: str) -> None:
    """A path the OS can take: not empty, components of at most NAME_MAX bytes, at most PATH_MAX bytes
    in all (checked on the absolute path: that is what the calls see)."""
    text = os.fspath(path)
    if text in ("", b""):
        raise UserError(f"{label}: an empty path (give a file or folder name; '.' is the current folder)")
    absolute = os.fsencode(os.path.abspath(text))
    if len(absolute) > PATH_MAX:
        raise UserError(f"{label} {text!r:.80}…: the path is {len(absolute)} bytes long, more than the "
                        f"{PATH_MAX} bytes the OS allows")
    for part in absolute.split(b"/"):
        if len(part) > NAME_MAX:
            raise UserError(f"{label} {os.fsdecode(part)[:40]!r}…: a path component of {len(part)} bytes, "
                            f"more than the {NAME_MAX} bytes a file name may have")


def _real(path: PathLike, label: str = "") -> Path:
    """``path`` absolute with symlinks and ``..`` resolved; a loop or a name the OS refuses is a UserError."""
    check_name(path, label or str(path))
    try:
        return Path(os.path.abspath(os.fspath(path))).resolve(strict=False)
    except RuntimeError:  # pathlib before 3.13: "Symlink loop from …"
        raise UserError(f"{label + ' ' if label else ''}{path}: a symbolic link loop") from None
    except OSError as exc:
        from .limits import describe_os_error

        raise UserError(f"{label + ' ' if label else ''}{path}: {describe_os_error(exc)}") from None


def _identity(path: Path) -> Optional[Tuple[int, int]]:
    try:
        stat = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"{path}: a symbolic link loop") from None
        return None
    return stat.st_dev, stat.st_ino


class _Place:
    """A path resolved once: its name, its identity and the identities of its existing ancestors
    (so a pair is compared with set look-ups, not stat calls: a demo checks ~200 × 30 pairs)."""

    def __init__(self, path: PathLike, label: str = ""):
        self.path = _real(path, label)
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
    """[(label, path)] from {label: path | [paths] | None}; an empty string is kept (and refused)."""
    items = []
    for label, value in mapping.items():
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        items += [(label, v) for v in values if v is not None]
    return items


def check_paths(inputs: Mapping[str, object], outputs: Mapping[str, object],
                overwrite: Optional[bool] = None) -> None:
    """Refuse (UserError, one line naming both options) any output overlapping an input or another
    output; with ``overwrite=False`` also any output that already exists.

    ``inputs``/``outputs``: {option label: path, list of paths, or None}.  Cheap: stat calls only.
    """
    ins, outs = _items(inputs), _items(outputs)
    in_places = [_Place(src, label) for label, src in ins if os.fspath(src) != ""]
    ins = [(label, src) for label, src in ins if os.fspath(src) != ""]
    out_places = [_Place(out, label) for label, out in outs]
    for (out_label, out), out_place in zip(outs, out_places):
        for (in_label, src), in_place in zip(ins, in_places):
            how = _relation(out_place, in_place)
            if how is not None:
                raise UserError(f"{out_label} {out}: {how} the input {in_label} {src}; an output must "
                                "not overlap an input (choose another output)")
    for i, ((label_a, a), place_a) in enumerate(zip(outs, out_places)):
        for (label_b, b), place_b in zip(outs[i + 1:], out_places[i + 1:]):
            how = _relation(place_b, place_a)
            if how == "is":
                raise UserError(f"{label_a} {a} and {label_b} {b} are the same path; give each output "
                                "its own")
            if how is not None:
                inner, outer = ((label_b, b), (label_a, a)) if how == "lies inside" else ((label_a, a),
                                                                                        (label_b, b))
                raise UserError(f"{inner[0]} {inner[1]}: lies inside the output {outer[0]} {outer[1]}, "
                                "which is written as a whole (choose a place outside it)")
    if overwrite is False:
        for label, out in outs:
            if os.path.lexists(out):
                raise UserError(f"{label} {out}: already exists (choose another output or pass --overwrite)")
    checked = set()
    for (label, out), place in zip(outs, out_places):
        folder = _existing_ancestor(place.path.parent)
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


# ------------------------------------------------------------------------------- output folders
NEW, OWN, REPLACE = "new", "own", "replace"


def visible_entries(folder: Path) -> list:
    """The names in ``folder`` that are not this package's temporaries (``.<name>.tmp-…``) or marker."""
    return sorted(name for name in os.listdir(folder) if name != MARKER and ".tmp-" not in name)


def output_folder(path: PathLike, option: str, overwrite: bool, command: Optional[str] = None,
                  owned=None) -> str:
    """What a command may do with its output folder ``path`` (the policy above):

    - ``NEW``: absent, or an empty folder: write it;
    - ``OWN``: this ``command``'s own earlier output (its marker names the command), or ``owned(path)``
      says so: resume it, replacing only what the command wrote;
    - ``REPLACE``: anything else, with ``overwrite``: build the new output aside and swap it in;
    - otherwise a UserError naming ``option``, what is there, and ``--overwrite``.
    """
    path = Path(path)
    check_name(path, option)
    _real(path, option)
    if not os.path.lexists(path):
        return NEW
    if path.is_symlink() and not path.is_dir():
        if overwrite:
            return REPLACE
        raise UserError(f"{option} {path}: a symbolic link to no folder; remove it, choose another output "
                        "or pass --overwrite")
    if not path.is_dir():
        if overwrite:
            return REPLACE
        raise UserError(f"{option} {path}: exists and is not a folder (choose another output or pass "
                        "--overwrite to replace it)")
    try:
        entries = visible_entries(path)
    except OSError as exc:
        raise UserError(f"{option} {path}: cannot be listed ({exc.strerror})") from None
    marker = read_marker(path)
    if command is not None and marker is not None and marker.get("command") == command:
        return OWN
    if owned is not None and entries and owned(path):
        return OWN
    if not entries and marker is None:
        return NEW
    if overwrite:
        return REPLACE
    shown = ", ".join(entries[:3]) + (", …" if len(entries) > 3 else "")
    whose = f"not an output of sim2real-eval {command}" if command else "not empty"
    raise UserError(f"{option} {path}: holds {shown or MARKER} ({whose}); choose an empty or new folder, or "
                    "pass --overwrite to replace it")


def read_marker(folder: PathLike) -> Optional[dict]:
    """The marker of an output folder (None when absent, a link, unreadable or not ours)."""
    from .limits import read_file

    path = Path(folder) / MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        data = json.loads(read_file(path, "marker file").decode("utf-8"))
    except (UserError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str) \
            or not isinstance(data.get("files", {}), dict):
        return None
    return data


def write_marker(folder: PathLike, command: str, files: Mapping[str, dict], **extra) -> None:
    """``folder/MARKER``: the command and every file it wrote there ({relative path: {size, sha256}})."""
    from . import __version__
    from .atomic import atomic_file

    document = {"command": command, "version": __version__, "files": dict(sorted(files.items())), **extra}
    with atomic_file(Path(folder) / MARKER, encoding="utf-8") as stream:
        stream.write(json.dumps(document, indent=1, sort_keys=False) + "\n")


def file_record(path: PathLike) -> Dict[str, object]:
    """{size, sha256} of a regular file, read in blocks (flat memory)."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"size": size, "sha256": digest.hexdigest()}


def same_file(path: PathLike, record: object) -> bool:
    """``path`` is a regular file (not a link) whose size and sha256 are ``record``'s."""
    path = Path(path)
    if not isinstance(record, dict) or path.is_symlink() or not path.is_file():
        return False
    try:
        if path.stat().st_size != record.get("size"):
            return False
        return file_record(path) == {"size": record.get("size"), "sha256": record.get("sha256")}
    except OSError:
        return False


__all__ = ["MARKER", "NEW", "OWN", "REPLACE", "check_name", "check_paths", "file_record", "output_folder",
           "read_marker", "relation", "same_file", "visible_entries", "write_marker"]
