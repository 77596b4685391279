"""What a scored study can and cannot tell apart (issue 19): the judgements every table, figure and
console line reads, so they all say the same thing.

- **Below the floor**: a VEPD not above the judge-noise floor's upper end (``threshold``)
  is what judge timing alone produces: the variant's gap is not measurable.
- **Separable pair**: variant b scores worse than a (d = VEPD_b − VEPD_a ≥ 0) and the difference is
  real: its paired 95 % bootstrap interval lies above 0 (``study.difference_statistics``), its
  two-sided permutation p < 0.05, and d is above the floor.  Every measured one of the three must say
  so (``RULE``): the interval and the test cannot contradict each other on a page, because a pair they
  disagree on is a tie, and the reason names the one that does not separate.  Anything else is a **tie**.
- **Groups (compact letter display)**: every pair of variants is compared; variants sharing a letter are
  not separable, variants that share none are (Piepho 2004, insert-and-absorb: ``letter_groups``).  The
  best variant's letters start with "a"; the group of closest variants is those sharing its "a".
- **K too small**: a permutation p cannot fall below ``study.smallest_p``; when that is above 0.05 for
  a cell, no data could make its p significant, and ``permutation_warnings`` says so and which K can.
"""
from __future__ import annotations

from .study import StudyResult, ranked, smallest_p

ALPHA = 0.05


def threshold(floor: dict | None, variant: str, scenario: str | None = None) -> float | None:
    """The value a VEPD (or a difference of VEPD) must exceed to be above the floor: the upper end of
    the floor's interval for ``variant`` pooled (``scenario`` None) or in ``scenario``; None without a
    floor.  ``floor``: statistics.json's ``judge_noise_floor`` (``noise_floor.compute`` makes it; the
    reading is here, with the judgements that use it)."""
    if not floor or "combined" not in floor:  # none, or {"unavailable": why}
        return None
    cell = floor["combined"].get(variant) if scenario is None else \
        floor["per_scenario"].get(variant, {}).get(scenario)
    return None if cell is None else float(cell["VEPD_interval"][1])


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


RULE = ("separable: the paired 95 % interval of the VEPD difference lies above 0 and the permutation "
        "p < 0.05 (both must say so; where they disagree the pair is not separable){floor}; variants "
        "sharing a letter are not separable, variants sharing none are")


def rule(result: StudyResult) -> str:
    """The separability rule as every page that says "separable" states it (the floor clause when a
    floor was measured)."""
    return RULE.format(floor=" and the difference is above the judge-noise floor" if result.judge_noise_floor
                       else "")


def verdict(result: StudyResult, entry: dict, scenario: str | None = None) -> tuple:
    """(separable: bool | None, reason) under ``RULE``: every measured criterion — the interval above 0,
    p < ALPHA, the difference above the floor — must hold; None when none was measured."""
    reasons, tested = [], False
    difference = entry["difference"]
    interval = entry.get("difference_ci95")
    if interval is not None:
        tested = True
        if not interval[0] > 0:
            reasons.append("its 95 % interval includes 0")
    if entry.get("p") is not None:
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


def letter_columns(names: list, separable_pairs) -> list:
    """The columns of a compact letter display (Piepho 2004, "An algorithm for a letter-based
    representation of all-pairwise comparisons", J. Comput. Graph. Stat. 13(2), insert-and-absorb step):
    [set of names] in letter order.

    ``names`` best first; ``separable_pairs``: the pairs that are separable.  Start from one column holding
    every name; for each separable pair, split every column that holds both into a copy without the one
    and a copy without the other, then drop columns contained in another.  What is left are the largest
    sets of mutually inseparable names, ordered by their best members (then their next ones), so the
    best name is in the first column."""
    position = {name: i for i, name in enumerate(names)}
    columns = [frozenset(names)] if names else []
    for a, b in separable_pairs:
        split = []
        for column in columns:
            split += [column - {a}, column - {b}] if a in column and b in column else [column]
        unique = list(dict.fromkeys(split))
        columns = [c for c in unique if not any(c < other for other in unique)]
    return sorted(columns, key=lambda column: sorted(position[name] for name in column))


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def letter_groups(names: list, separable_pairs) -> dict:
    """{name: letters} (``letter_columns`` lettered a, b, …; the best name's letters start with "a"): two
    names share a letter exactly when they are not separable."""
    columns = letter_columns(names, separable_pairs)
    return {name: "".join(_letter(i) for i, column in enumerate(columns) if name in column) for name in names}


def _letter(i: int) -> str:
    """a … z, then a1 … z1, …"""
    return LETTERS[i % len(LETTERS)] + (str(i // len(LETTERS)) if i >= len(LETTERS) else "")


def separable_pairs(result: StudyResult, scenario: str | None = None) -> list:
    """[(better, worse)] of every compared pair that is separable under ``RULE``."""
    return [(e["better"], e["worse"]) for e in comparisons(result, scenario)
            if verdict(result, e, scenario)[0] is True]


def group_letters(result: StudyResult, scenario: str | None = None) -> dict:
    """{variant: letters} of the pooled table (or of ``scenario``): ``letter_groups`` of the variants in
    VEPD order under ``RULE``.  A pair never compared (or not tested) counts as not separable."""
    return letter_groups(order(result, scenario), separable_pairs(result, scenario))


def closest_group(result: StudyResult, scenario: str | None = None) -> list:
    """The variants sharing the best variant's letter "a", best first: the closest variants, not
    separable from each other."""
    names = order(result, scenario)
    first = letter_columns(names, separable_pairs(result, scenario))[0]
    return [v for v in names if v in first]


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


__all__ = ["ALPHA", "RULE", "adjacent_rows", "below_floor", "closest_group", "comparison", "comparisons",
           "floor_threshold", "group_letters", "letter_groups", "order", "permutation_warnings", "rule",
           "separable_pairs", "separated", "threshold", "verdict"]
