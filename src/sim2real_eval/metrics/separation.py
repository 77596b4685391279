"""What a scored study can and cannot tell apart (issue 19): the judgements every table, figure and
console line reads, so they all say the same thing.

- **Below the floor**: a VEPD not above the judge-noise floor's upper end (``noise_floor.compute.threshold``)
  is what judge timing alone produces: the variant's gap is not measurable.
- **Separable pair**: variant b scores worse than a (d = VEPD_b − VEPD_a ≥ 0) and the difference is
  real: its paired 95 % bootstrap interval lies above 0 (``study.difference_statistics``; without
  intervals, its permutation p < 0.05) and d is above the floor.  Anything else is a **tie**.
- **Ranks with ties**: variants in VEPD order, adjacent ones that are not separable share a rank,
  written "3=" (competition style: the next rank after a pair tied at 3 is 5).
- **K too small**: a permutation p cannot fall below ``study.smallest_p``; when that is above 0.05 for
  a cell, no data could make its p significant, and ``permutation_warnings`` says so and which K can.
"""
from __future__ import annotations

from ..noise_floor.compute import threshold
from .study import StudyResult, ranked, smallest_p

ALPHA = 0.05
TIE = "="


def floor_threshold(result: StudyResult, variant: str, scenario: str | None = None) -> float | None:
    """The floor a VEPD of ``variant`` (pooled, or in ``scenario``) must exceed; None without a floor."""
    return threshold(result.judge_noise_floor, variant, scenario)


def vepd_of(result: StudyResult, variant: str, scenario: str | None = None) -> float:
    cell = result.combined[variant] if scenario is None else result.per_scenario[variant][scenario]
    return cell["VEPD"]


def below_floor(result: StudyResult, variant: str, scenario: str | None = None) -> bool:
    """The VEPD of ``variant`` is not above the judge-noise floor (False without a floor)."""
    limit = floor_threshold(result, variant, scenario)
    return limit is not None and vepd_of(result, variant, scenario) <= limit


def comparisons(result: StudyResult, scenario: str | None = None) -> list:
    """The compared pairs of the pooled table (``scenario`` None) or of one scenario."""
    found = result.statistics.get("comparisons", {})
    if scenario is None:
        return list(found.get("combined", []))
    return list(found.get("per_scenario", {}).get(scenario, []))


def comparison(result: StudyResult, a: str, b: str, scenario: str | None = None) -> dict | None:
    """The entry comparing ``a`` and ``b`` (either order), or None when they were not compared."""
    for entry in comparisons(result, scenario):
        if {entry["better"], entry["worse"]} == {a, b}:
            return entry
    return None


def verdict(result: StudyResult, entry: dict, scenario: str | None = None) -> tuple:
    """(separable: bool | None, reason): None when nothing was measured that could tell (no interval,
    no p-value, no floor)."""
    reasons, tested = [], False
    difference = entry["difference"]
    interval = entry.get("difference_ci95")
    if interval is not None:
        tested = True
        if not interval[0] > 0:
            reasons.append("its 95 % interval includes 0")
    elif entry.get("p") is not None:
        tested = True
        if not entry["p"] < ALPHA:
            reasons.append(f"p {entry['p']:.3f} ≥ {ALPHA}")
    limit = floor_threshold(result, entry["worse"], scenario)
    if limit is not None:
        tested = True
        if not difference > limit:
            reasons.append(f"it is not above the judge-noise floor {limit:.4f}")
    if not tested:
        return None, "not tested (no intervals, p-values or floor)"
    if reasons:
        return False, f"difference {difference:.4f}: " + " and ".join(reasons)
    return True, f"difference {difference:.4f} is separable"


def order(result: StudyResult, scenario: str | None = None) -> list:
    """Variants best (lowest VEPD) first, pooled or in ``scenario``."""
    return ranked({v: vepd_of(result, v, scenario) for v in result.variants})


def tie_groups(result: StudyResult, scenario: str | None = None) -> list:
    """Variants in rank order, grouped: adjacent variants that are not separable share a group."""
    groups: list = []
    names = order(result, scenario)
    for i, variant in enumerate(names):
        if i and _tied(result, names[i - 1], variant, scenario):
            groups[-1].append(variant)
        else:
            groups.append([variant])
    return groups


def _tied(result: StudyResult, a: str, b: str, scenario: str | None) -> bool:
    entry = comparison(result, a, b, scenario)
    if entry is None:  # never compared (no resampling at all): equal values still tie
        return vepd_of(result, a, scenario) == vepd_of(result, b, scenario)
    return verdict(result, entry, scenario)[0] is False


def rank_labels(result: StudyResult, scenario: str | None = None) -> dict:
    """{variant: "1" | "3="}: competition ranks, ties marked with "="."""
    labels, position = {}, 1
    for group in tie_groups(result, scenario):
        for variant in group:
            labels[variant] = f"{position}{TIE}" if len(group) > 1 else str(position)
        position += len(group)
    return labels


def adjacent_rows(result: StudyResult, scenario: str | None = None) -> list:
    """[(rank label pair "1–2", entry, separable, reason)] for every pair of adjacent ranks."""
    names = order(result, scenario)
    position = {v: i + 1 for i, v in enumerate(names)}
    rows = []
    for entry in comparisons(result, scenario):
        if entry.get("adjacent"):
            separable, reason = verdict(result, entry, scenario)
            rows.append((f"{position[entry['better']]}–{position[entry['worse']]}", entry, separable, reason))
    return sorted(rows, key=lambda row: position[row[1]["better"]])


def separated(result: StudyResult, better: str, worse: str) -> bool | None:
    """Pooled: ``better`` is separably below ``worse`` (True), separably above it (False), or neither
    (None: a tie, or never compared)."""
    entry = comparison(result, better, worse)
    if entry is None:
        return None
    separable, _reason = verdict(result, entry)
    if not separable:
        return None
    return entry["better"] == better


# ---------------------------------------------------------------------------- permutation limits
def _k_needed(paired: bool, permutations: int, strata: int) -> int | None:
    """The smallest K per scenario whose pooled-over-``strata`` test could reach p < 0.05."""
    for k in range(2, 64):
        if smallest_p(permutations, [k] * strata, [k] * strata, paired) < ALPHA:
            return k
    return None


def permutation_warnings(result: StudyResult) -> list:
    """One line per kind of test whose p cannot reach 0.05 with this K (``study.smallest_p``): the
    variant-vs-real tests per scenario and pooled, and the variant-vs-variant comparisons.  Empty when
    every p could (or no permutations were run)."""
    stats = result.statistics
    kinds = []  # (what, [(p_min, paired, strata)])
    pooled = [(c.get("p_min"), stats["resampling"]["combined"].get(v) == "pairs", len(result.scenarios))
              for v, c in stats.get("combined", {}).items()]
    per_scenario = [(c.get("p_min"), stats["resampling"]["per_scenario"].get(v, {}).get(s) == "pairs", 1)
                    for v, cells in stats.get("per_scenario", {}).items() for s, c in cells.items()]
    pairs = [(e.get("p_min"), e.get("resampling") == "pairs", len(result.scenarios))
             for e in comparisons(result)]
    pairs += [(e.get("p_min"), e.get("resampling") == "pairs", 1)
              for s in result.scenarios for e in comparisons(result, s)]
    if len(result.scenarios) > 1:
        kinds += [("per-scenario tests against the real runs", per_scenario)]
    kinds += [("pooled tests against the real runs" if len(result.scenarios) > 1 else
               "tests against the real runs", pooled),
              ("variant-vs-variant tests", pairs)]
    k = min((len([r for r in result.runs if r.side == "real" and r.scenario == s]) for s in result.scenarios),
            default=0)
    lines = []
    for what, cells in kinds:
        blocked = [(p, paired, strata) for p, paired, strata in cells if p is not None and p > ALPHA]
        if not blocked:
            continue
        p_min, paired, strata = max(blocked)
        needed = _k_needed(paired, result.options.permutations, strata)
        if needed is None or result.options.permutations < 1 / ALPHA:
            fix = f"more permutations (--permutations ≥ {int(1 / ALPHA)}) are needed first" \
                if result.options.permutations < 1 / ALPHA else "more runs are needed"
        else:
            fix = f"K ≥ {needed} per scenario could"
        lines.append(f"K = {k} per scenario is too small for the {what} to reach p < {ALPHA}: the smallest "
                     f"p they can give is {p_min:.3g}; {fix}")
    return lines


__all__ = ["ALPHA", "adjacent_rows", "below_floor", "comparison", "comparisons", "floor_threshold",
           "order", "permutation_warnings", "rank_labels", "separated", "tie_groups", "verdict"]
