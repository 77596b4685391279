"""Write outputs atomically: build in a temporary sibling, rename into place only on success.

A crash, an exception or Ctrl-C leaves no half-written output, and an existing result is never
touched until its replacement is complete.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import UserError


def _temp_sibling(final: Path, kind: str) -> Path:
    parent = final.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{parent}: cannot create output directory ({exc.strerror})") from None
    prefix = f".{final.name}.tmp-"
    try:
        if kind == "dir":
            return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        fd, name = tempfile.mkstemp(prefix=prefix, dir=parent)
        os.close(fd)
        return Path(name)
    except OSError as exc:
        raise UserError(f"{parent}: cannot write here ({exc.strerror})") from None


def _write_error(final: Path, exc: OSError) -> UserError:
    if exc.errno == errno.ENOSPC:
        return UserError(f"{final}: no space left on device")
    return UserError(f"{final}: cannot write ({exc.strerror or exc})")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        with contextlib.suppress(OSError):
            path.unlink()


@contextlib.contextmanager
def atomic_directory(final, overwrite: bool = False, empty: bool = True) -> Iterator[Path]:
    """Yield a temporary directory; on success it becomes ``final``.

    With ``empty=True`` the yielded directory does not exist yet (some writers, e.g. rosbags'
    Writer, refuse an existing path); the caller creates it.  ``overwrite`` replaces an existing
    ``final`` only after the new one is complete.
    """
    final = Path(final)
    if final.exists() and not overwrite:
        raise UserError(f"{final}: already exists (choose another output or remove it)")
    temp = _temp_sibling(final, "dir")
    if empty:
        temp.rmdir()
    try:
        yield temp
        if final.exists():
            old = _temp_sibling(final, "dir")
            old.rmdir()
            os.replace(final, old)
            os.replace(temp, final)
            _remove(old)
        else:
            os.replace(temp, final)
    except OSError as exc:
        _remove(temp)
        raise _write_error(final, exc) from None
    except BaseException:
        _remove(temp)
        raise


@contextlib.contextmanager
def atomic_file(final, mode: str = "w", **open_kwargs) -> Iterator:
    """Open a temporary sibling file for writing; it replaces ``final`` only on success."""
    final = Path(final)
    temp = _temp_sibling(final, "file")
    try:
        with open(temp, mode, **open_kwargs) as stream:
            yield stream
        os.replace(temp, final)
    except OSError as exc:
        _remove(temp)
        raise _write_error(final, exc) from None
    except BaseException:
        _remove(temp)
        raise
