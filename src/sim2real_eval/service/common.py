"""What several services share: warnings said once, model specs as keys, the files among the inputs, a
spinner, and a process map with a progress bar."""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import os
import warnings
from pathlib import Path
from typing import Callable, Iterable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import DataWarning
from ..workers import WorkerPool


def warn_once(lines: Iterable[str]) -> None:
    """Each distinct line as a DataWarning (the CLI prints ``sim2real-eval CMD: warning: …``)."""
    for line in dict.fromkeys(lines):
        warnings.warn(line, DataWarning, stacklevel=3)


def json_key(value) -> str:
    """A model spec (name, path or mapping) as a hashable key."""
    return json.dumps(value, sort_keys=True, default=str)


def existing_files(values: Iterable) -> list:
    """The values that name existing files (model specs may also be preset names or mappings)."""
    return sorted({str(v) for v in values if isinstance(v, (str, os.PathLike)) and Path(v).is_file()})


def status(enabled: bool, text: str):
    """A rich spinner with ``text`` on stderr while the block runs (nothing when disabled)."""
    if not enabled:
        return contextlib.nullcontext()

    return Console(stderr=True).status(text)


def parallel_map(function: Callable, items: list, workers: int, progress: bool, description: str,
                 meanwhile: Callable | None = None) -> list:
    """``function(*item)`` for every item, in ``workers`` forked processes, with a progress bar;
    ``meanwhile()`` runs here once the items are handed out (after them with one worker)."""

    results = [None] * len(items)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=False) as bar:
        task = bar.add_task(description, total=len(items))
        if workers <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                results[i] = function(*item)
                bar.advance(task)
            if meanwhile is not None:
                meanwhile()
            return results
        with WorkerPool(min(workers, len(items))) as pool:
            futures = {pool.submit(function, *item): i for i, item in enumerate(items)}
            if meanwhile is not None:
                meanwhile()
            for future in cf.as_completed(futures):
                results[futures[future]] = future.result()
                bar.advance(task)
    return results


__all__ = ["existing_files", "json_key", "parallel_map", "status", "warn_once"]
