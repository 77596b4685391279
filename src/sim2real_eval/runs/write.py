"""Writing a run directory: the run's bag records (``bags.records``) and its run.yaml, in one atomic
rename (``bags.write_bag``).  Robot-side to import (rosbags loads when a run is written, offline)."""
from __future__ import annotations

from pathlib import Path
from typing import Union

from ..yamlio import dump_yaml
from .identity import FILES_KEY, RUN_FILE
from .record import RunInfo, data_files


def write_run(path: Path, records: list, record: Union[RunInfo, dict], storage: str) -> dict:
    """Write the run bag + run.yaml atomically; return {topic: count}."""
    from ..bags import write_bag

    counts: dict = {}
    for rec in records:
        counts[rec[1]] = counts.get(rec[1], 0) + 1
    def run_yaml(directory: Path) -> str:
        # The data files' sizes and SHA-256 as written: resume checks them (``resume.existing_run``).
        if isinstance(record, RunInfo):
            return record.with_files(directory).to_yaml()
        return dump_yaml({**record, FILES_KEY: data_files(directory)})

    # write_bag builds the bag in a temporary sibling and renames it: no half directory on failure.
    write_bag(path, records, storage=storage, extra_files={RUN_FILE: run_yaml})
    return counts
