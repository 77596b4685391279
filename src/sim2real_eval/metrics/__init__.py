"""VEPD and its statistics (seed 003 §II-E with the reference preprocessing of computeEPD.py).

Per run: ``score_run`` -> RMSE E, Wiener entropies S_est, S_gt and D = |S_est - S_gt|.
Per study: ``score_study`` -> W1, W2, VEPD pooled (Table I) and per scenario with ranks (Table II),
bootstrap intervals and permutation p-values.  Inputs: ``inputs`` (CSV layout, run dirs, manifest).
"""
from .options import SPECTRA, SPEED_CHOICES, SPEED_EXPRESSIONS, SPEED_PRESETS, ScoreOptions, resolve_speed
from .per_run import (
    RunScore,
    common_timeline,
    moving_average,
    resample_run,
    rmse,
    score_run,
    spectrum,
    wiener_entropy,
)
from .speed import speed_from_velocity
from .study import (
    REAL,
    RunRecord,
    StudyResult,
    average_ranks,
    bootstrap_intervals,
    check_study,
    distances,
    permutation_pvalues,
    score_study,
    vepd,
    wasserstein,
    wasserstein_rows,
)

__all__ = [
    "REAL", "SPECTRA", "SPEED_CHOICES", "SPEED_EXPRESSIONS", "SPEED_PRESETS", "RunRecord", "RunScore",
    "ScoreOptions", "StudyResult", "average_ranks", "bootstrap_intervals", "check_study", "common_timeline",
    "distances", "moving_average", "permutation_pvalues", "resample_run", "resolve_speed", "rmse",
    "score_run", "score_study", "speed_from_velocity", "spectrum", "vepd", "wasserstein",
    "wasserstein_rows", "wiener_entropy",
]
