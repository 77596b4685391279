"""The paper's findings, checked on a demo's Table I (``ordering_checks``): Ch:Gauss scores worst, the
HDOP covariance improves it, Ch:RW and AirSim are the best two, the simulated IMU's VEPD is below every
GPS variant's — each "yes", "no" or "not separable" as the precision supports it (the pairs compared,
the judge-noise floor); a finding the floor or the intervals cannot support is never stated as one."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ..metrics import separation
from ..metrics.separation import permutation_warnings
from .config import PAPER_VARIANTS

# Pooled pairs the ordering checks compare, beyond the adjacent ranks every study compares.
CHECKED_PAIRS = tuple(combinations(PAPER_VARIANTS, 2))
CHECK_NAMES = {"ch_gauss_worst": "Ch:Gauss worst", "ch_rw_and_airsim_best": "Ch:RW and AirSim best",
               "hdop_improves_ch_gauss": "HDOP covariance improves Ch:Gauss",
               "sim_imu_small": "sim-IMU VEPD below every GPS variant"}
NOT_SEPARABLE = "not separable"


def ordering_checks(gps_doc: dict, imu_doc: dict | None, gps_result=None, imu_result=None,
                    paper=None, imu_variants=None) -> dict:
    """The paper's qualitative findings, checked on Table I (combined VEPD) of this demo.

    ``paper``: ((paper name, variant), …) — which variant plays which paper variant (default: the paper's
    names themselves); the checks compare those variants only, and ``imu_variants`` (default: all) of
    the IMU study.  ``checks``: what the VEPD values say (True/False; None when a variant is missing).
    With the studies' results (``metrics.StudyResult``), ``findings`` says what the precision supports:
    "yes", "no", or "not separable" (a tie, or a VEPD not above the judge-noise floor; ``reasons`` says
    which) — a finding the floor or the intervals cannot support is never stated as one."""
    names = dict(paper if paper is not None else ((name, name) for name in PAPER_VARIANTS))
    every = {variant: row["VEPD"] for variant, row in gps_doc["combined"].items()}
    vepd = {name: every[variant] for name, variant in names.items() if variant in every}  # paper names
    ranked = sorted(vepd, key=vepd.get)
    checks = _gps_checks(vepd, ranked) if every else {}
    if imu_doc is not None and vepd:
        imu_vepd = [row["VEPD"] for variant, row in imu_doc["combined"].items()
                    if imu_variants is None or variant in imu_variants]
        checks["sim_imu_small"] = bool(imu_vepd) and max(imu_vepd) < min(vepd.values())
    out = {"ranking_best_first": sorted(every, key=every.get), "vepd": every, "checks": checks}
    if any(name != variant for name, variant in names.items()):
        out["paper"] = names  # which variant played which paper variant
    if gps_result is not None:
        context = _Checked(gps_result, imu_result, [names[name] for name in ranked], names, imu_variants)
        findings = {name: FINDINGS[name](context, value) for name, value in checks.items()
                    if value is not None}
        out["findings"] = {name: verdict for name, (verdict, _why) in findings.items()}
        out["reasons"] = {name: why for name, (_verdict, why) in findings.items() if why}
    return out


def _gps_checks(vepd: dict, ranked: list) -> dict:
    """The GPS study's checks on {paper name: VEPD} (``ranked``: best first); None when a variant is
    missing."""
    best = {"ch_rw", "airsim"}
    return {"ch_gauss_worst": ranked[-1] == "ch_gauss" if "ch_gauss" in vepd else None,
            "ch_rw_and_airsim_best": set(ranked[:2]) == best if best <= set(vepd) else None,
            "hdop_improves_ch_gauss": vepd["ch_gauss_airsim"] < vepd["ch_gauss"]
            if {"ch_gauss", "ch_gauss_airsim"} <= set(vepd) else None}


@dataclass(frozen=True)
class _Checked:
    """What the ordering findings read: both studies, the checked GPS variants best first, the paper
    names' variants (``names``) and the IMU study's checked variants."""

    gps: Any
    imu: Any
    ranked: list
    names: dict
    imu_variants: Any = None

    def apart(self, better: str, worse: str) -> bool:
        """``better`` separably below ``worse`` (pooled); variant names."""
        return separation.separated(self.gps, better, worse) is True

    def tie(self, a: str, b: str) -> str:
        entry = separation.comparison(self.gps, a, b)
        return separation.verdict(self.gps, entry)[1] if entry else f"{a} and {b} not compared"


def _worst_finding(c: _Checked, value: bool) -> tuple:
    """Ch:Gauss scores worst."""
    gauss, ranked = c.names["ch_gauss"], c.ranked
    word = "yes" if value else "no"
    if value:
        runner_up = ranked[-2] if len(ranked) > 1 else None
        if runner_up is None or c.apart(runner_up, gauss):
            return word, ""
        return NOT_SEPARABLE, f"{gauss} vs {runner_up}: {c.tie(runner_up, gauss)}"
    if c.apart(gauss, ranked[-1]):
        return word, ""
    return NOT_SEPARABLE, f"{gauss} vs {ranked[-1]}: {c.tie(gauss, ranked[-1])}"


def _hdop_finding(c: _Checked, value: bool) -> tuple:
    """Adding the HDOP covariance improves Ch:Gauss."""
    gauss, hdop = c.names["ch_gauss"], c.names["ch_gauss_airsim"]
    better, worse = (hdop, gauss) if value else (gauss, hdop)
    return ("yes" if value else "no", "") if c.apart(better, worse) else (NOT_SEPARABLE, c.tie(better, worse))


def _best_two_finding(c: _Checked, value: bool) -> tuple:
    """Ch:RW and AirSim are the best two."""
    ranked = c.ranked
    best = [c.names["ch_rw"], c.names["airsim"]]
    if value:
        if len(ranked) < 3 or c.apart(ranked[1], ranked[2]):
            return "yes", ""
        return NOT_SEPARABLE, f"{ranked[1]} vs {ranked[2]}: {c.tie(ranked[1], ranked[2])}"
    others = [v for v in ranked[:2] if v not in best]
    if any(c.apart(other, member) for other in others for member in set(best)):
        return "no", ""
    member = max(set(best), key=ranked.index)
    return NOT_SEPARABLE, f"{others[0]} vs {member}: {c.tie(others[0], member)}"


def _imu_finding(c: _Checked, value: bool) -> tuple:
    """The simulated IMU's VEPD is below every GPS variant's (different studies: intervals)."""
    word = "yes" if value else "no"
    imu = c.imu
    if imu is None:
        return word, ""
    variants = [v for v in imu.variants if c.imu_variants is None or v in c.imu_variants]
    for variant in variants:
        if separation.below_floor(imu, variant):
            limit = separation.floor_threshold(imu, variant)
            return NOT_SEPARABLE, (f"{variant}'s VEPD {imu.combined[variant]['VEPD']:.4f} is not above its "
                                   f"judge-noise floor {limit:.4f}: its gap is not measured")

    def interval(study, variant):
        return study.combined[variant]["VEPD_ci95"] or [study.combined[variant]["VEPD"]] * 2

    imu_high = max(interval(imu, v)[1] for v in variants)
    gps_low = min(interval(c.gps, v)[0] for v in c.ranked)
    if (imu_high < gps_low) == bool(value):
        return word, ""
    return NOT_SEPARABLE, f"95 % intervals overlap (sim IMU up to {imu_high:.4f}, GPS from {gps_low:.4f})"


FINDINGS = {"ch_gauss_worst": _worst_finding, "hdop_improves_ch_gauss": _hdop_finding,
            "ch_rw_and_airsim_best": _best_two_finding, "sim_imu_small": _imu_finding}


def separation_warnings(gps_result, imu_result) -> list:
    """The permutation-limit warnings of both studies (``metrics.separation.permutation_warnings``)."""
    return [f"{name}: {line}" for name, result in (("GPS study", gps_result), ("IMU study", imu_result))
            for line in permutation_warnings(result)]
