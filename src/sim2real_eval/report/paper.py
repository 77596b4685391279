"""The paper's Table I, for orientation beside our numbers.

I. Mahajan et al., "Quantifying the Sim2real Gap for GPS and IMU Sensors", IROS 2024
(arXiv:2403.11000), Table I: VEPD of each simulated variant against the REAL ART recordings (all
scenarios pooled, K = 10), and of the simulated IMU (Chrono drift model, real GPS, straight line).
Keys are our variant names (GPS preset names; the demo's IMU-study variant).  On other data —
the synthetic reference set above all — only the ordering is comparable, not the values.
"""
from __future__ import annotations

PAPER_VEPD = {
    "ch_gauss": 0.155,
    "ch_rw": 0.043,
    "airsim": 0.039,
    "ch_gauss_airsim": 0.0627,
    "ch_rw_airsim": 0.0482,
    "sim_imu-chrono_paper_demo": 0.0211,
}
CITATION = "Mahajan et al., IROS 2024 (arXiv:2403.11000), Table I, real ART data"


def paper_vepd(variant: str):
    """The paper's VEPD for a variant of ours, or None when the paper has no such row."""
    return PAPER_VEPD.get(variant)
