"""The embedded judge: a Python port of robot_localization humble 3.5.2 (ekf_node + navsat_transform_node).

Public API (docs/architecture.md "judge"): load_ekf_params, load_navsat_params, parse_static_tf, Judge,
JudgeTiming, JudgeResult, OdometrySeries, SensorBlock (+ bag_records, JudgeStream / output_records for
streaming a long bag).
Behaviour follows ../shared/spec/judge.md; see docs/judge.md.
"""

from __future__ import annotations

from .compiled_cache import refresh_stale_caches
from .params import EkfParams, NavsatParams, SensorConfig, load_ekf_params, load_navsat_params
from .runner import Judge, JudgeResult, JudgeStream, JudgeTiming, SensorBlock, bag_records, output_records
from .series import OdometrySeries
from .tf import StaticTransform, parse_static_tf

refresh_stale_caches(__name__)  # before any kernel runs: numba tracks only each kernel's own file

__all__ = [
    "EkfParams",
    "NavsatParams",
    "SensorConfig",
    "load_ekf_params",
    "load_navsat_params",
    "Judge",
    "JudgeResult",
    "JudgeStream",
    "JudgeTiming",
    "OdometrySeries",
    "SensorBlock",
    "bag_records",
    "output_records",
    "StaticTransform",
    "parse_static_tf",
]
