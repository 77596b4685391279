"""Keep numba's on-disk cache of the judge's kernels in step with all of the judge's sources.

numba invalidates a cached function only when *its own* file changes; a kernel inlined from another
file (``inline="always"`` helpers of kernels.py into loop.py, navsat.py…) is not tracked.  After a
``git pull`` that edits kernels.py alone, an editable install would run the old compiled code with the
new Python source.  So: one digest of every judge source file is stamped beside each cache directory;
when it differs, every judge kernel's cache index is emptied once (numba recompiles and re-caches).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

STAMP_NAME = "sim2real_eval-sources.sha256"


def sources_digest(package_dir: Path) -> str:
    """SHA-256 over the names and bytes of the package's .py files (sorted: independent of listing order)."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def compiled_dispatchers(package: str) -> list:
    """The cached numba dispatchers defined in the already imported modules of ``package``."""
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == package or name.startswith(package + ".")):
            continue
        for value in vars(module).values():
            cache = getattr(value, "_cache", None)
            if callable(getattr(cache, "flush", None)) and getattr(cache, "cache_path", None):
                found[id(value)] = value
    return list(found.values())


def refresh_stale_caches(package: str) -> int:
    """Empty the cache index of every kernel of ``package`` whose cache directory was stamped with other
    sources; returns how many were emptied.  A directory that cannot be written is left alone (numba
    then does not cache there either)."""
    package_dir = Path(sys.modules[package].__file__).parent
    digest = None
    by_directory: dict = {}
    for dispatcher in compiled_dispatchers(package):
        by_directory.setdefault(Path(dispatcher._cache.cache_path), []).append(dispatcher)
    flushed = 0
    for directory, dispatchers in by_directory.items():
        stamp = directory / STAMP_NAME
        digest = digest or sources_digest(package_dir)
        try:
            if stamp.is_file() and stamp.read_text().strip() == digest:
                continue
            for dispatcher in dispatchers:
                index = getattr(dispatcher._cache._cache_file, "_index_path", None)
                if index is None or Path(index).exists():  # never compiled here: nothing to forget
                    dispatcher._cache.flush()
                    flushed += 1
            directory.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest + "\n")
        except OSError:
            continue
    return flushed
