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
- A command that writes its folder piece by piece (the demo) claims it (``claim_folder``: its own output
  resumed, a new one marked at once, anything else moved aside with ``--overwrite`` and put back on
  failure), builds its report files in a staging folder inside it (``staging_folder``) and moves them in
  only when all are done (``publish_files``), then writes its marker.
- Run trees (``simulate``, ``replay``, the demo's ``OUT/runs``) are resumed run by run: a run directory
  that exists is kept only when its run.yaml and data files are what was written
  (``runs.existing_run``), else refused.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Dict, Iterator, Mapping, Optional, Sequence, Tuple, Union

from . import __version__
from .atomic import atomic_file, deferred_signals, remove_path, replace_files, temp_sibling
from .errors import UserError
from .limits import describe_os_error, read_file

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


class OwnNames:
    """What a command writes in its output folder, so a marker is believed only as far as that goes.

    ``names``: the top-level names it writes (files, or folders whose whole content it writes);
    ``whole``: it replaces the folder as a whole (``tune``), so every entry must be its own;
    ``links``: further names it writes below (run trees, resumed run by run) that must not be links.
    """

    def __init__(self, command: str, names: Sequence[str], whole: bool = False, links: Sequence[str] = ()):
        self.command, self.names, self.whole, self.links = command, tuple(names), whole, tuple(links)


def output_folder(path: PathLike, option: str, overwrite: bool, command: Optional[str] = None,
                  owned=None, own: Optional[OwnNames] = None) -> str:
    """What a command may do with its output folder ``path`` (the policy above):

    - ``NEW``: absent, or an empty folder: write it;
    - ``OWN``: this ``command``'s own earlier output, or ``owned(path)`` says so: resume it, replacing
      only what the command wrote.  With ``own`` (the names the command writes) a marker is believed only
      when it is verified (``own_output_problem``): every file it lists is one of those names, and every
      file found at those names is listed with its size and SHA-256; a marker that fails is not the
      command's, and the folder is treated as anyone's;
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
    problem = None
    if command is not None and marker is not None and marker.get("command") == command:
        problem = None if own is None else own_output_problem(path, marker, own)
        if problem is None:
            return OWN
    if owned is not None and entries and owned(path):
        return OWN
    if not entries and marker is None:
        return NEW
    if overwrite:
        return REPLACE
    if problem is not None:
        raise UserError(f"{option} {path}: {problem}; choose an empty or new folder, or pass --overwrite to "
                        "replace the whole folder")
    shown = ", ".join(entries[:3]) + (", …" if len(entries) > 3 else "")
    whose = f"not an output of sim2real-eval {command}" if command else "not empty"
    raise UserError(f"{option} {path}: holds {shown or MARKER} ({whose}); choose an empty or new folder, or "
                    "pass --overwrite to replace it")


@contextlib.contextmanager
def claim_folder(out: PathLike, option: str, overwrite: bool, own: OwnNames,
                 **marker_extra) -> Iterator[dict]:
    """The output folder ``out`` of a command that writes into it piece by piece (the demo), yielding the
    marker of its verified earlier output ({} when new or replaced):

    - its own output (``output_folder`` with ``own``: the marker verified): yielded as it is, nothing moved;
    - new or empty: created, and marked at once (an empty marker: an interrupted command resumes here);
    - anything else, only with ``overwrite``: moved aside (a hidden sibling ``.OUT.tmp-…``; a link is moved
      as a link, its target untouched) and deleted (never following a link) only when the command
      finished; a failed or interrupted command puts it back.
    """
    out = Path(out)
    mode = output_folder(out, option, overwrite, command=own.command, own=own)
    if mode == OWN:
        yield read_marker(out) or {}
        return
    aside = None
    created = not os.path.lexists(out)
    if mode != NEW:
        aside = temp_sibling(out, "dir")
        aside.rmdir()
        os.replace(out, aside)
    try:
        try:
            out.mkdir(parents=True, exist_ok=mode == NEW)
        except OSError as exc:
            raise UserError(f"{option} {out}: cannot create the folder ({exc.strerror})") from None
        write_marker(out, own.command, {}, **marker_extra)
        yield {}
    except BaseException:
        if aside is not None:
            with deferred_signals():
                remove_path(out)
                os.replace(aside, out)
        elif created and out.is_dir() and not visible_entries(out):  # failed before writing anything
            remove_path(out)
        raise
    if aside is not None:
        remove_path(aside)


def publish_files(staging: PathLike, out: PathLike, previous: Mapping, option: str, command: str) -> dict:
    """Move the finished files of ``staging`` into the output folder ``out`` (same relative paths; all
    renamed in one block, rolled back if one fails), then delete the files of the previous output
    (``previous``: its marker's files) that this one does not write — each only if it is still what
    the marker recorded (``remove_own_file``: no link followed).  Returns {relative path: {size, sha256}}
    for the marker.  A file at a target that the previous marker does not record (it appeared meanwhile),
    or a target folder that is a link or not a folder, is one line and nothing is moved."""
    staging, out = Path(staging), Path(out)
    sources = sorted(p for p in staging.rglob("*") if p.is_file() and not p.is_symlink())
    names = [p.relative_to(staging).as_posix() for p in sources]
    targets = [out / name for name in names]
    for name, target in zip(names, targets):
        for parent in reversed(target.relative_to(out).parents[:-1]):
            folder = out / parent
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise UserError(f"{option} {out}: {parent.as_posix()}: not a folder of sim2real-eval "
                                f"{command}'s")
            folder.mkdir(exist_ok=True)
        if os.path.lexists(target) and not own_file(out, name, previous.get(name)):
            raise UserError(f"{option} {out}: {name}: appeared while sim2real-eval {command} ran and is not "
                            f"its own; nothing was written (move the file away and run it again)")
    records = {name: file_record(source) for name, source in zip(names, sources)}
    replace_files(sources, targets)
    for name in sorted(previous):
        if name not in records and plain_relative(name):
            remove_own_file(out, name, previous[name])
    return records


_SHA256 = re.compile(r"[0-9a-f]{64}")


@contextlib.contextmanager
def staging_folder(out: PathLike) -> Iterator[Path]:
    """Yields a folder path ``report`` inside a hidden staging folder in ``out`` (``.report.tmp-*``: on the
    same file system, so ``publish_files`` renames), where a command builds its files; the staging folder
    is removed whatever happens."""
    root = Path(tempfile.mkdtemp(prefix=".report.tmp-", dir=out))
    try:
        yield root / "report"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def plain_relative(name: object) -> bool:
    """``name`` is a normalised relative POSIX path below a folder: no empty, ``.`` or ``..`` component,
    not absolute, no NUL (what a marker or run.yaml may name; anything else could reach out of it)."""
    if not isinstance(name, str) or not name or "\0" in name or name.startswith("/"):
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def _record_shape(record: object) -> bool:
    size = record.get("size") if isinstance(record, dict) else None
    return (isinstance(size, int) and not isinstance(size, bool) and size >= 0
            and isinstance(record.get("sha256"), str) and _SHA256.fullmatch(record["sha256"]) is not None)


def own_output_problem(folder: PathLike, marker: Mapping, own: OwnNames) -> Optional[str]:
    """Why ``folder`` is not (only) ``own.command``'s output as ``marker`` claims, or None.

    Nothing the marker says is taken on trust: every file it lists must be a plain relative path under one
    of the command's own names, with a {size, sha256} record; no own name may be a symbolic link (nor
    lead through one); every file found under an own name must be listed, with the size and SHA-256 on
    disk; with ``own.whole`` every entry of the folder must be one of its own names.
    """
    folder = Path(folder)
    files = marker.get("files", {})
    command = own.command
    for name in sorted(files):
        if not plain_relative(name):
            return f"its {MARKER} lists {name!r}, not a plain relative path (not written by sim2real-eval " \
                   f"{command})"
        if name.split("/")[0] not in own.names:
            return f"its {MARKER} lists {name}, which sim2real-eval {command} never writes (not its marker)"
        if not _record_shape(files[name]):
            return f"its {MARKER} lists {name} without a size and SHA-256 (not written by sim2real-eval " \
                   f"{command})"
    for name in (*own.names, *own.links):
        if (folder / name).is_symlink():
            return (f"{name}: a symbolic link; sim2real-eval {command} writes {name} itself and never writes "
                    "through a link (remove the link or choose another folder)")
    if own.whole:
        for entry in visible_entries(folder):
            if entry not in own.names:
                return f"holds {entry}, which sim2real-eval {command} does not write"
    for rel in _found_below(folder, own.names):
        if not own_file(folder, rel, files.get(rel)):
            return f"{rel}: not written by sim2real-eval {command} (or changed since)"
    return None


def _found_below(folder: Path, names: Sequence[str]) -> list:
    """Relative paths of everything but folders below ``folder``'s ``names`` (links, to folders too, are
    listed, never followed), temporaries left out."""
    found = []
    for name in names:
        top = folder / name
        if not os.path.lexists(top):
            continue
        if top.is_symlink() or not top.is_dir():
            found.append(name)
            continue
        for where, dirs, entries in os.walk(top):
            base = Path(where)
            found += [(base / e).relative_to(folder).as_posix()
                      for e in entries + [d for d in dirs if (base / d).is_symlink()]]
    return sorted(rel for rel in found if ".tmp-" not in rel.rsplit("/", 1)[-1])


def read_marker(folder: PathLike) -> Optional[dict]:
    """The marker of an output folder (None when absent, a link, unreadable or not ours)."""
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


# Opening below a folder without following any symbolic link on the way (every component is opened
# with O_NOFOLLOW relative to its parent's descriptor), so a link anywhere in a path, not only at its
# end, stops the walk instead of leading out of the folder.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def _parent_of(root: PathLike, rel: str) -> Iterator[Tuple[int, str]]:
    """(descriptor of the folder holding ``rel`` below ``root``, the last name); OSError (ELOOP,
    ENOTDIR, ENOENT) when a component is a link, not a folder, or absent.  ``rel`` must be plain."""
    if not plain_relative(rel):
        raise ValueError(f"not a plain relative path: {rel!r}")
    parts = rel.split("/")
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the folder the user named: taken as given
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _fd_record(fd: int) -> Dict[str, object]:
    digest = hashlib.sha256()
    size = 0
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            break
        digest.update(block)
        size += len(block)
    return {"size": size, "sha256": digest.hexdigest()}


def _matching_file(parent: int, name: str, record: object) -> Optional[os.stat_result]:
    """The stat of ``name`` in the folder ``parent`` when it is a regular file (not a link) with
    ``record``'s size and SHA-256, else None."""
    if not _record_shape(record):
        return None
    fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_size != record["size"]:
            return None
        if _fd_record(fd) != {"size": record["size"], "sha256": record["sha256"]}:
            return None
        return found
    finally:
        os.close(fd)


def own_file(root: PathLike, rel: str, record: object) -> bool:
    """``root/rel`` is a regular file reached without any symbolic link, with ``record``'s size and
    SHA-256 (``rel``: a plain relative path; anything else is False)."""
    if not plain_relative(rel):
        return False
    try:
        with _parent_of(root, rel) as (parent, name):
            return _matching_file(parent, name, record) is not None
    except OSError:
        return False


def remove_own_file(root: PathLike, rel: str, record: object) -> bool:
    """Delete ``root/rel`` only when it is what ``record`` says the command wrote there (``own_file``),
    reached and removed without following any link; True when removed.  The file is unlinked by name
    in the folder it was checked in, and only while that name is still the file that was checked."""
    if not plain_relative(rel):
        return False
    try:
        with _parent_of(root, rel) as (parent, name):
            checked = _matching_file(parent, name, record)
            if checked is None:
                return False
            now = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino):
                return False
            os.unlink(name, dir_fd=parent)
            return True
    except OSError:
        return False


__all__ = ["MARKER", "NEW", "OWN", "REPLACE", "OwnNames", "check_name", "check_paths", "claim_folder",
           "file_record", "output_folder", "own_file", "own_output_problem", "plain_relative",
           "publish_files", "read_marker", "relation", "remove_own_file", "same_file", "visible_entries",
           "write_marker"]
