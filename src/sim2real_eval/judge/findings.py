"""What a judged run says about its inputs: the IMU covariances ekf_node cannot fuse (``imu_findings``,
through ``judge.lint``) and a diverged run (``check_divergence``: an error naming the cause, or a
warning when the filter follows a GPS input as fast as itself); docs/judge.md, "Divergence"."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..errors import DataWarning, UserError
from .config import JudgeConfig, judge_parts, load_imu
from .lint import imu_covariance_findings, model_covariances

# A run whose /odometry/filtered horizontal speed exceeds DIVERGENCE_FACTOR × the truth's peak speed (the
# peak taken as at least DIVERGENCE_MIN_PEAK, so a standstill run may reach 10 m/s) has diverged: an error.
DIVERGENCE_FACTOR = 10.0
DIVERGENCE_MIN_PEAK = 1.0  # m/s


def imu_findings(judge: JudgeConfig, frame_id: str, covariances: dict, where: str) -> list:
    """``judge.lint`` findings for an IMU in ``frame_id`` publishing ``covariances`` ({part: 9 values}),
    under this judge's configuration and static TFs: one line each (none when valid; a frame without a
    TF is the run's own error)."""
    ekf, _navsat, tfs = judge_parts(judge.ekf, judge.navsat, tuple(judge.static_tfs))
    return imu_covariance_findings(ekf, tfs, frame_id, covariances, where, unresolved=False)


def model_imu_findings(judge: JudgeConfig, spec: Any, where: str | None = None, frame: str | None = None
                       ) -> list:
    """``imu_findings`` for the covariances the IMU model ``spec`` publishes (mounted by the judge's TF;
    in ``frame`` when given, as ``load_imu``)."""
    model = load_imu(spec, judge, frame=frame)
    name = spec if isinstance(spec, str) else (spec.get("name") if isinstance(spec, dict) else None)
    return imu_findings(judge, model.frame_id, model_covariances(model),
                        where or (f"imu model {name}" if name else f"imu model {spec!r}"))


def gps_implied_speeds(result):
    """Horizontal speeds (m/s) between consecutive /odometry/gps positions: what the GPS input itself says
    (the ART configuration fuses exactly these differences as velocities); empty without navsat."""
    gps = result.gps_odometry
    if gps is None or len(gps) < 2:
        return np.empty(0)
    dt = np.diff(gps.stamp_ns) * 1e-9
    steps = np.hypot(*np.diff(gps.position[:, :2], axis=0).T)
    return steps[dt > 0] / dt[dt > 0]


def check_divergence(result, truth, where: str, causes=None) -> None:
    """A UserError when the run's judge diverged: its filtered horizontal speed is non-finite, or above
    ``DIVERGENCE_FACTOR`` × the truth's peak horizontal speed (at least ``DIVERGENCE_MIN_PEAK``) while
    its GPS input does not say so (``gps_implied_speeds`` below half that speed): the filter left both
    the truth and its measurements.  ``causes()`` → lines naming what made it diverge (``imu_findings``),
    called only then; the first is put in the message.  A filter that follows a GPS input as fast as
    itself is no divergence but a GPS model the judge cannot use: a DataWarning naming both speeds, and
    the run is kept (it scores as far from real as it is)."""
    filtered = result.filtered
    if filtered is None or len(filtered) == 0:
        return
    speed = np.hypot(filtered.linear_velocity[:, 0], filtered.linear_velocity[:, 1])
    peak_truth = float(np.max(np.hypot(truth.velocity[:, 0], truth.velocity[:, 1])))
    limit = DIVERGENCE_FACTOR * max(peak_truth, DIVERGENCE_MIN_PEAK)
    bad = ~np.isfinite(speed) | (speed > limit)
    if not bad.any():
        return
    first = int(np.argmax(bad))
    at = (int(filtered.stamp_ns[first]) - int(filtered.stamp_ns[0])) * 1e-9
    finite = speed[np.isfinite(speed)]
    peak = float(finite.max()) if finite.size else float("nan")
    what = (f"reaches {peak:.3g} m/s (above {limit:.3g} m/s from {at:.2f} s on)"
            if np.isfinite(speed[first]) else f"is not finite from {at:.2f} s on")
    gps = gps_implied_speeds(result)
    gps_peak = float(gps.max()) if gps.size else 0.0
    if np.isfinite(speed).all() and gps_peak >= 0.5 * peak:
        warnings.warn(f"{where}: /odometry/filtered's speed {what}, more than {DIVERGENCE_FACTOR:g} × the "
                      f"ground truth's peak {peak_truth:.3g} m/s, following its GPS input, whose consecutive "
                      f"/odometry/gps positions imply up to {gps_peak:.3g} m/s: the GPS model's noise is far "
                      "beyond what its covariance tells the judge (docs/judge.md, 'Divergence')",
                      DataWarning, stacklevel=2)
        return
    found = list(causes()) if causes is not None else []
    cause = (f"cause: {found[0]}" if found else
             "no invalid IMU covariance found: check the static TFs and the sensors' covariances and stamps "
             "(docs/judge.md, 'Divergence')")
    raise UserError(f"{where}: the judge diverged: /odometry/filtered's speed {what}, more than "
                    f"{DIVERGENCE_FACTOR:g} × the ground truth's peak {peak_truth:.3g} m/s while its GPS "
                    f"input implies at most {gps_peak:.3g} m/s; nothing written for this run; {cause}")
