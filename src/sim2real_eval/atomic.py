"""Write outputs atomically: build in a temporary sibling, rename into place only on success.

A crash, an exception or Ctrl-C leaves no half-written output, and an existing result is never
touched until its replacement is complete.  Temporaries are named ``.<final name>.tmp-<random>``
(runs.remove_stale_temporaries finds the leftovers of a SIGKILL by that name).

Permissions follow the user's umask, as if the output had been created directly: tempfile makes
0700 directories and 0600 files, which would make results private whatever the umask says.
While renames commit a result, SIGINT/SIGTERM/SIGHUP are held back (handled right after), so a
Ctrl-C or a ``kill`` never lands between two renames of one commit.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Iterator, List, Sequence

from .errors import UserError

_DEFERRED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                          if hasattr(signal, name))


def current_umask() -> int:
    """The process umask, read without changing it where Linux shows it (/proc, kernel ≥ 4.7)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # the portable way: set and restore at once
    os.umask(mask)
    return mask


# Bytes of the final name kept in a temporary's name: ".<name>.tmp-" + 8 random characters stays <= 255.
TEMP_NAME_BYTES = 200


def temp_prefix(final) -> str:
    """``.<final name>.tmp-``: how temporaries of ``final`` are named (a long name is shortened so the
    temporary's name stays within the file system's 255 bytes)."""
    name = os.fsencode(Path(final).name)[:TEMP_NAME_BYTES]
    return f".{os.fsdecode(name)}.tmp-"


def _temp_sibling(final: Path, kind: str) -> Path:
    parent = final.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{parent}: cannot create output directory ({exc.strerror})") from None
    prefix = temp_prefix(final)
    umask = current_umask()
    try:
        if kind == "dir":
            path = tempfile.mkdtemp(prefix=prefix, dir=parent)
            os.chmod(path, 0o777 & ~umask)
            return Path(path)
        fd, path = tempfile.mkstemp(prefix=prefix, dir=parent)
        try:
            os.fchmod(fd, 0o666 & ~umask)
        finally:
            os.close(fd)
        return Path(path)
    except OSError as exc:
        raise UserError(f"{parent}: cannot write here ({exc.strerror})") from None


def _write_error(final: Path, exc: OSError) -> UserError:
    if exc.errno == errno.ENOSPC:
        return UserError(f"{final}: no space left on device")
    return UserError(f"{final}: cannot write ({exc.strerror or exc})")


def _remove(path: Path) -> None:
    """Delete a file, a link (never its target) or a folder tree (shutil.rmtree: on Linux it walks by
    file descriptor and never follows a link below the folder)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        with contextlib.suppress(OSError):
            path.unlink()


remove_path = _remove
temp_sibling = _temp_sibling  # (final, "dir" | "file"): an empty temporary beside ``final``, umask modes


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back for the duration (a few renames); deliver them afterwards.

    Python runs signal handlers in the main thread between bytecodes, so replacing the handlers by
    a recorder is what keeps them out of the block.  Outside the main thread this is a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: List[int] = []
    previous = {}
    for number in _DEFERRED_SIGNALS:
        previous[number] = signal.signal(number, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(received):
            handler = previous[number]
            if callable(handler):
                handler(number, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), number)


@contextlib.contextmanager
def atomic_directory(final, overwrite: bool = False, empty: bool = True) -> Iterator[Path]:
    """Yield a temporary directory; on success it becomes ``final``.

    With ``empty=True`` the yielded directory does not exist yet (some writers, e.g. rosbags'
    Writer, refuse an existing path); the caller creates it.  ``overwrite`` replaces an existing
    ``final`` only after the new one is complete.
    """
    final = Path(final)
    if os.path.lexists(final) and not overwrite:
        raise UserError(f"{final}: already exists (choose another output or remove it)")
    temp = _temp_sibling(final, "dir")
    if empty:
        temp.rmdir()
    try:
        yield temp
        if os.path.lexists(final):  # a link is moved aside and unlinked: its target is never touched
            old = _temp_sibling(final, "dir")
            old.rmdir()
            with deferred_signals():
                os.replace(final, old)
                try:
                    os.replace(temp, final)
                except OSError:
                    os.replace(old, final)
                    raise
            _remove(old)
        else:
            os.replace(temp, final)
    except OSError as exc:
        _remove(temp)
        raise _write_error(final, exc) from None
    except BaseException:
        _remove(temp)
        raise


def _exists_error(final: Path) -> UserError:
    return UserError(f"{final}: already exists (choose another output or pass --overwrite)")


def _place(temp: Path, final: Path, overwrite: bool) -> None:
    """Rename ``temp`` to ``final``; without ``overwrite`` never replace an existing ``final``
    (a hard link fails if the name exists: no window between the check and the rename)."""
    if overwrite:
        os.replace(temp, final)
        return
    try:
        os.link(temp, final)
    except FileExistsError:
        raise _exists_error(final) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if os.path.lexists(final):  # a filesystem without hard links: check, then rename
            raise _exists_error(final) from None
        os.replace(temp, final)
        return
    os.unlink(temp)


@contextlib.contextmanager
def atomic_file(final, mode: str = "w", overwrite: bool = True, **open_kwargs) -> Iterator:
    """Open a temporary sibling file for writing; it becomes ``final`` only on success.

    ``overwrite=False`` refuses an existing ``final`` (UserError), also one that appeared meanwhile.
    """
    final = Path(final)
    if not overwrite and os.path.lexists(final):
        raise _exists_error(final)
    temp = _temp_sibling(final, "file")
    try:
        with open(temp, mode, **open_kwargs) as stream:
            yield stream
        _place(temp, final, overwrite)
    except OSError as exc:
        _remove(temp)
        raise _write_error(final, exc) from None
    except BaseException:
        _remove(temp)
        raise


@contextlib.contextmanager
def atomic_files(finals: Sequence, overwrite: bool = True) -> Iterator[List[Path]]:
    """Several files as one result: all of them appear, or none (and old versions stay).

    Yields one temporary path per final name (existing, empty, umask permissions); the caller
    writes them.  Only when every file is complete are they renamed into place, in one block with
    signals held back; if a rename fails (or a name exists without ``overwrite``), the ones already
    placed are rolled back to what was there before.
    """
    finals = [Path(f) for f in finals]
    if not overwrite:
        for final in finals:
            if os.path.lexists(final):
                raise _exists_error(final)
    temps: List[Path] = []
    try:
        for final in finals:
            temps.append(_temp_sibling(final, "file"))
        yield list(temps)
        _commit(temps, finals, overwrite)
    except OSError as exc:
        names = [str(t) for t in temps]
        index = names.index(exc.filename) if exc.filename in names else 0
        raise _write_error(finals[index], exc) from None
    finally:
        for temp in temps:
            _remove(temp)


def replace_files(temps: Sequence, finals: Sequence) -> None:
    """Rename finished files ``temps`` (each on the file system of its final) to ``finals`` as one
    result: signals held back, the files already placed rolled back if a rename fails.  A final that
    is a symbolic link is replaced as a link (its target is not written)."""
    try:
        _commit([Path(t) for t in temps], [Path(f) for f in finals], True)
    except OSError as exc:
        raise _write_error(Path(exc.filename or finals[0]), exc) from None


def _commit(temps: List[Path], finals: List[Path], overwrite: bool) -> None:
    placed = []  # (final, backup or None)
    with deferred_signals():
        try:
            for temp, final in zip(temps, finals):
                backup = None
                try:
                    if overwrite and os.path.lexists(final):
                        backup = _temp_sibling(final, "file")
                        os.replace(final, backup)
                    _place(temp, final, overwrite)
                except BaseException as exc:
                    if backup is not None and not os.path.lexists(final):
                        os.replace(backup, final)
                    if isinstance(exc, OSError):
                        raise _write_error(final, exc) from None
                    raise
                placed.append((final, backup))
        except BaseException:
            for final, backup in reversed(placed):
                if backup is not None:
                    os.replace(backup, final)
                else:
                    _remove(final)
            raise
    for _final, backup in placed:
        if backup is not None:
            _remove(backup)
