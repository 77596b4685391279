"""The library behind the commands: one service function per command, each returning a result object.

The CLI modules parse the arguments, call the command's service function and print its result (as
evo's command line calls ``main_ape.ape``); the demo and tune (the study layer) call these functions
too, so each task is assembled in one place.  A module per command group:

    judge      judge_bag(bag, ekf, navsat, JudgeOptions, output=OUT) -> JudgedBag  (written while judged)
               check_configs(paths, imu_models, bag) -> [CheckedConfig]            (judge --check)
    simulate   simulate_study(study, out) -> SimulatedRuns      simulate_runs(tasks, out)
    replay     replay_request(ReplayRequest) -> ReplayedBags                       (sim2real-eval replay)
               plan_replays(bags, replacements, judge) -> [BagReplay]
               replay_bags(tasks, out) -> ReplayedBags
    score      find_runs_to_score(runs_dir | manifest | csv_dir) -> (kind, source, specs)
               load_runs(specs, options) -> LoadedRuns        score_runs(specs, options) -> ScoredRuns
    common     warn_once, json_key, existing_files, status, parallel_map (what several of them share)

``from sim2real_eval import service`` keeps working: the names below are re-exported here.  Importing
the package is cheap; the heavy packages load when a task runs.
"""
from __future__ import annotations

from .judge import (
    EXPECTED_TYPES,
    NAVSATFIX,
    CheckedConfig,
    JudgedBag,
    JudgeOptions,
    bag_imu_lint,
    check_configs,
    frames_without_transform,
    judge_bag,
    missing_transform_hint,
    sensor_frames,
)
from .replay import (
    ReplayedBags,
    ReplayRequest,
    announce_replays,
    peek_real_bag,
    plan_replays,
    replay_bags,
    replay_request,
    warm_judge,
    warn_judge_health,
)
from .score import (
    LoadedRuns,
    ScoredRuns,
    assess_real_runs,
    find_runs_to_score,
    load_runs,
    noise_floor_draws,
    score_runs,
)
from .simulate import SimulatedRuns, lint_study_imus, simulate_runs, simulate_study

__all__ = ["EXPECTED_TYPES", "NAVSATFIX", "CheckedConfig", "JudgeOptions", "JudgedBag", "LoadedRuns",
           "ReplayRequest", "ReplayedBags", "ScoredRuns", "SimulatedRuns", "announce_replays",
           "assess_real_runs", "bag_imu_lint", "check_configs", "find_runs_to_score",
           "frames_without_transform", "judge_bag", "lint_study_imus", "load_runs", "missing_transform_hint",
           "noise_floor_draws", "peek_real_bag", "plan_replays", "replay_bags", "replay_request",
           "score_runs", "sensor_frames", "simulate_runs", "simulate_study", "warm_judge",
           "warn_judge_health"]
