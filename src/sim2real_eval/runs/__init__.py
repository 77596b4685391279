"""What a run is: its identity, its directory, its ``run.yaml`` — one definition for every writer and reader.

A **run** is one judged bag: ``OUT/<side>/<variant>/<scenario>/<k>/`` is a rosbag2 directory with
``run.yaml`` inside (docs/architecture.md, "runs").  Writers: the offline pipeline (simulated runs,
replayed real bags), the demo, and the ROS launch's recorder_node; readers: the scorer, resume, tune.
All of them use this package for

- the identity ``RunId(side, variant, scenario, k)``: its label, its directory (``RunId.directory``
  encodes the layout, ``find_runs`` decodes it) and the run key of its random streams (``seed_keys``);
- the names of a real bag's runs (``name_real_bag``, ``find_real_bags``): the documented layout of
  real bags is ``DIR/<scenario>/<run>/``, so a bag's scenario is its folder's name and its ``k`` its
  position among the bags of that folder (sorted by name);
- the run.yaml record ``RunInfo`` (typed; ``to_dict``/``to_yaml`` write it in one key order,
  ``RunInfo.from_dict``/``read_run_info`` validate it) and the builders of its parts
  (``judge_record``, ``model_parameters``, ``bag_run_info``);
- resume: ``existing_run`` (a complete matching run is kept, a different or incomplete one refused);
- completeness: ``complete``/``failure`` in run.yaml (``RunInfo.incomplete``, ``mark_run``): a run that
  did not finish (a node died, the launch failed or was stopped) says so, and readers refuse it;
- ``file_sha256``, the one file digest of the package;
- the run's judge timing and start (``runs.timing``, ``runs.start``): what run.yaml's ``timing`` and
  ``initial_state`` record, cheap to import (the command-line options of every command that judges).

Robot-side: Python 3.8, standard library + PyYAML (+ the models, imported lazily), so the ROS
recorder builds its run.yaml with the same code as the offline pipeline.

Modules: ``identity`` (RunId, names, real bags), ``record`` (run.yaml), ``resume`` (existing runs,
completeness), ``timing``, ``start``.  The names below are the package's API.
"""
from __future__ import annotations

from ..outputs import file_record
from .identity import (
    COMPLETE_KEY,
    FAILURE_KEY,
    FILES_KEY,
    LAYOUT,
    NAME_PATTERN,
    NAME_RULE,
    NUMBER_PATTERN,
    OUTCOME_KEY,
    REAL,
    RUN_FILE,
    SENSORS,
    SIDES,
    STORAGES,
    RealBag,
    RunId,
    bag_run_id,
    bags_in,
    check_name,
    find_real_bags,
    find_runs,
    is_bag,
    is_name,
    is_number,
    model_label,
    name_real_bag,
    replay_variant,
    run_directory,
)
from .record import (
    TIMING_MODELS,
    RunInfo,
    bag_run_info,
    data_files,
    file_sha256,
    incomplete_reason,
    judge_record,
    model_parameters,
    plain,
    read_run_info,
    run_topics,
)
from .resume import (
    check_data_files,
    existing_run,
    first_difference,
    mark_run,
    remove_stale_temporaries,
    stored_message_counts,
)

__all__ = ["COMPLETE_KEY", "FAILURE_KEY", "NAME_RULE", "NUMBER_PATTERN", "TIMING_MODELS",
           "FILES_KEY", "LAYOUT", "NAME_PATTERN", "OUTCOME_KEY", "REAL", "RUN_FILE", "SENSORS", "SIDES",
           "STORAGES", "RealBag", "RunId", "RunInfo", "bag_run_id", "bag_run_info", "bags_in",
           "check_data_files", "check_name", "data_files", "existing_run", "file_record", "file_sha256",
           "find_real_bags", "find_runs", "first_difference", "incomplete_reason", "is_bag", "is_name",
           "is_number", "judge_record", "mark_run", "model_label", "model_parameters", "name_real_bag",
           "plain", "read_run_info", "remove_stale_temporaries", "replay_variant",
           "run_directory", "run_topics", "stored_message_counts"]
