"""Resume and completeness of a run directory: ``existing_run`` (a complete matching run is kept, a
different or incomplete one refused, its data files checked against run.yaml's ``files``), ``mark_run``
(``complete``/``failure``: a run that did not finish says so) and the leftovers of an interrupted write
(``remove_stale_temporaries``).  Robot-side (Python 3.8)."""
from __future__ import annotations

import contextlib
import math
import os
import shutil
import sqlite3
import stat as stat_module
import struct
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from ..atomic import atomic_file, temp_prefix
from ..errors import UserError
from ..outputs import own_file, plain_relative
from .identity import COMPLETE_KEY, FAILURE_KEY, FILES_KEY, OUTCOME_KEY, RUN_FILE
from .record import RunInfo, incomplete_reason, read_run_info


# ------------------------------------------------------------------------------------------ resume
def _comparable(record: dict) -> dict:
    """run.yaml fields that must match for an existing run to count as this run.

    Not compared: the package version, the judge's outcome, the completeness mark (an incomplete run is
    refused before), the data files' record (checked against the files, ``check_data_files``), the judge
    files' paths (their sha256 are compared) and the values of ``initial_state`` (its source is compared;
    the values are the run's truth at its first instant), so an output tree survives a reinstall or a
    moved config directory.
    """
    out = {k: v for k, v in record.items()
           if k not in ("version", OUTCOME_KEY, FILES_KEY, COMPLETE_KEY, FAILURE_KEY)}
    if isinstance(out.get("judge"), dict):
        out["judge"] = {k: v for k, v in out["judge"].items() if k not in ("ekf", "navsat")}
    if isinstance(out.get("initial_state"), dict):  # its values follow from the run's truth and window
        out["initial_state"] = {"source": out["initial_state"].get("source")}
    return out


def first_difference(a: Any, b: Any, prefix: str = "") -> Optional[str]:
    """The dotted path of the first difference between two YAML documents (None when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{prefix}.{key}" if prefix else str(key)
            if key not in a or key not in b:
                return where
            diff = first_difference(a[key], b[key], where)
            if diff:
                return diff
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return prefix
        for i, (x, y) in enumerate(zip(a, b)):
            diff = first_difference(x, y, f"{prefix}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else (prefix or "value")


def existing_run(path, record: Union[RunInfo, Mapping]) -> bool:
    """True when ``path`` holds this run already: its run.yaml is the requested record and its data files
    are the ones written (``check_data_files``); False when absent; UserError when either differs."""
    import yaml

    from ..yamlio import dump_yaml, load_yaml

    path = Path(path)
    if not os.path.lexists(path):
        return False
    run_file = path / RUN_FILE
    if path.is_symlink() or not run_file.is_file():
        raise UserError(f"{path}: exists but has no {RUN_FILE}, so it is not a run; "
                        "remove it or choose another --out")
    found = load_yaml(run_file)
    if not isinstance(found, dict):
        raise UserError(f"{run_file}: not a run description (expected a mapping)")
    if incomplete_reason(found):
        raise UserError(f"{path}: an incomplete run ({incomplete_reason(found)}); "
                        "remove it or choose another --out")
    expected = record.to_dict() if isinstance(record, RunInfo) else dict(record)
    # Round-trip the expected record through YAML so tuples/lists and floats compare like on disk.
    expected = yaml.safe_load(dump_yaml(expected))
    diff = first_difference(_comparable(found), _comparable(expected))
    if diff:
        raise UserError(
            f"{run_file}: an existing run differs from the requested one at '{diff}'; "
            "remove it or choose another --out"
        )
    check_data_files(path, found)
    return True


def check_data_files(path, found: Mapping) -> None:
    """The run's data files are what run.yaml ``files`` recorded when they were written (size, then
    SHA-256, each file read once); a run written before ``files`` existed (or by the ROS recorder, which
    does not write it) must have the storage files its metadata.yaml names, holding per topic the
    number of messages metadata.yaml records (``stored_message_counts``).  Otherwise one line naming
    the run: it is not resumed nor scored (its bag was truncated, deleted or replaced after it was
    written — rejudging or scoring it would hide that), the user removes it.  Every reader calls this:
    resume (``existing_run``), score and tune (``metrics.inputs.load_and_score``)."""
    path = Path(path)
    label = "/".join(str(found.get(key)) for key in ("side", "variant", "scenario", "k"))
    recorded = found.get(FILES_KEY)
    problem = None
    if isinstance(recorded, Mapping):
        problem = _recorded_files_problem(path, recorded)
    else:
        problem = _unrecorded_files_problem(path)
    if problem:
        raise UserError(f"{path}: run {label}: {problem}; the run's data changed after it was written "
                        f"(truncated, deleted or replaced): remove {path} to judge it again")


def _recorded_files_problem(path: Path, recorded: Mapping) -> Optional[str]:
    for name in sorted(recorded):
        record = recorded[name]
        if not plain_relative(str(name)) or "/" in str(name):
            return f"run.yaml lists {name!r} among its files, not a file name of the run folder"
        file = path / str(name)
        try:
            found = os.stat(file, follow_symlinks=False)
        except OSError:
            return f"{name} is missing"
        if not stat_module.S_ISREG(found.st_mode):
            return f"{name} is missing (a {'symbolic link' if file.is_symlink() else 'non-file'} is there)"
        if not isinstance(record, Mapping) or found.st_size != record.get("size"):
            size = record.get("size") if isinstance(record, Mapping) else record
            return f"{name} has {found.st_size} bytes, {size} when written"
        if not own_file(path, str(name), dict(record)):
            return f"{name} has other bytes than when written (SHA-256 differs)"
    listed = _metadata_files(path)
    if listed is not None and "metadata.yaml" not in recorded:
        return "metadata.yaml is there, but run.yaml's files do not record it"
    if isinstance(listed, list):
        unlisted = [name for name in listed if name not in recorded]
        if unlisted:
            return f"metadata.yaml names {unlisted[0]}, which run.yaml's files do not record"
    return None


def _metadata_files(path: Path):
    """The storage files metadata.yaml names (a list), None without metadata.yaml, or a problem (str)."""
    from ..yamlio import load_yaml

    metadata = path / "metadata.yaml"
    if not metadata.is_file():
        return None
    try:
        names = load_yaml(metadata)["rosbag2_bagfile_information"]["relative_file_paths"]
    except (UserError, KeyError, TypeError):
        return "metadata.yaml is not a rosbag2 metadata file"
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "metadata.yaml is not a rosbag2 metadata file"
    return names


def _unrecorded_files_problem(path: Path) -> Optional[str]:
    """A run.yaml without ``files``: its bag must be whole as metadata.yaml describes it."""
    names = _metadata_files(path)
    if names is None:
        return "run.yaml records no data files (files:) and there is no metadata.yaml to check the bag " \
               "against"
    if isinstance(names, str):
        return names
    for name in names:
        if "/" in name or not (path / name).is_file() or (path / name).is_symlink():
            return f"{name} is missing"
    try:
        stored = stored_message_counts(path, names)
    except UserError as exc:
        return f"its bag cannot be read ({exc})"
    from ..yamlio import load_yaml

    info = load_yaml(path / "metadata.yaml")["rosbag2_bagfile_information"]
    for entry in info.get("topics_with_message_count") or []:
        try:
            topic, count = entry["topic_metadata"]["name"], int(entry["message_count"])
        except (KeyError, TypeError, ValueError):
            return "metadata.yaml is not a rosbag2 metadata file"
        if stored.get(topic, 0) != count:
            return f"topic {topic} holds {stored.get(topic, 0)} messages, metadata.yaml records {count}"
    return None


def stored_message_counts(path, names: Sequence[str]) -> Dict[str, int]:
    """{topic: messages actually stored} in the storage files ``names`` of the bag directory ``path``
    (each read once, read-only): SQLite files counted by SQL, MCAP files by reading them (``bags``)."""
    path = Path(path)
    counts: Dict[str, int] = {}
    if any(not name.endswith(".db3") for name in names):
        from rosbags.rosbag2 import Reader, ReaderError  # offline only: MCAP runs are written offline

        try:
            with Reader(path) as reader:
                for connection, _stamp, _data in reader.messages():
                    counts[connection.topic] = counts.get(connection.topic, 0) + 1
        except (ReaderError, struct.error, EOFError, OSError, ValueError, KeyError, IndexError,
                AssertionError, RuntimeError) as exc:  # what a damaged MCAP file raises in rosbags
            raise UserError(" ".join(str(exc).split()) or type(exc).__name__) from None
        return counts
    for name in names:
        uri = f"file:{quote(os.path.abspath(path / name))}?mode=ro&immutable=1"
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
                rows = conn.execute("SELECT topics.name, COUNT(messages.id) FROM topics LEFT JOIN messages "
                                    "ON messages.topic_id = topics.id GROUP BY topics.id").fetchall()
        except sqlite3.Error as exc:
            raise UserError(f"{name}: {exc}") from None
        for topic, count in rows:
            counts[topic] = counts.get(topic, 0) + int(count)
    return counts


def mark_run(run_dir, failure: Optional[str]) -> RunInfo:
    """Rewrite ``run_dir``/run.yaml marked complete (``failure`` None) or incomplete for ``failure``
    (atomically: the file is whole before and after).  Every other key keeps its value and order."""
    info = read_run_info(run_dir).marked(failure)
    with atomic_file(Path(run_dir) / RUN_FILE, overwrite=True, encoding="utf-8") as stream:
        stream.write(info.to_yaml())
    return info


def remove_stale_temporaries(path) -> None:
    """Remove leftovers of a run killed hard (SIGKILL) while building ``path`` (atomic.py siblings).
    Links are unlinked, never followed."""
    path = Path(path)
    parent = path.parent
    if parent.is_dir() and not parent.is_symlink():
        prefix = temp_prefix(path)
        for name in os.listdir(parent):
            stale = parent / name
            if not name.startswith(prefix):
                continue
            if stale.is_symlink() or not stale.is_dir():
                stale.unlink(missing_ok=True)
            else:
                shutil.rmtree(stale, ignore_errors=True)
