"""Variant against variant (``metrics.study.difference_statistics``), the smallest p a permutation test
can give (``smallest_p``), and what the tables call ties, sub-floor results and too-small K
(``metrics.separation``) — against hand-computed values."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.metrics import ScoreOptions
from sim2real_eval.metrics import separation as sep
from sim2real_eval.metrics.per_run import RunScore
from sim2real_eval.metrics.study import (
    RunRecord,
    difference_statistics,
    distances,
    score_study,
    smallest_p,
)
from sim2real_eval.noise_floor.compute import judge_noise_floor


def rows(*pairs) -> np.ndarray:
    return np.array(pairs, dtype=float).reshape(-1, 2)


def test_smallest_p_by_hand():
    # paired: 2 of the 2^n swap patterns (the observed one and all swapped) give the observed statistic
    assert smallest_p(1000, [3], [3], paired=True) == 2 / 8
    assert smallest_p(1000, [5], [5], paired=True) == 2 / 32          # 0.0625: K = 5 cannot reach 0.05
    assert smallest_p(1000, [6], [6], paired=True) == 2 / 64
    assert smallest_p(1000, [10] * 3, [10] * 3, paired=True) == 1 / 1001  # the permutations' own limit
    assert smallest_p(20, [10] * 3, [10] * 3, paired=True) == 1 / 21
    # unpaired: splits within each stratum; the mirror split counts when both sides have equal sizes
    assert smallest_p(1000, [2], [2], paired=False) == 2 / 6
    assert smallest_p(1000, [2, 2], [2, 2], paired=False) == 2 / 36
    assert smallest_p(1000, [2], [3], paired=False) == 1 / 10


def test_paired_difference_of_a_constant_shift_is_exact():
    """Real E = 0, a's E = 1, 2, 3, b's = a's + 0.5, D equal everywhere: VEPD_b − VEPD_a = 0.25 in every
    paired resample (the same units on all three sides), so its interval is [0.25, 0.25]; resampling the
    sides on their own gives a wide one.  Swapping a's and b's run k: |d| = 0.25 only when none or all are
    swapped, so p = 2/8, the smallest possible."""
    real, a = [rows((0, 0), (0, 0), (0, 0))], [rows((1, 0), (2, 0), (3, 0))]
    b = [rows((1.5, 0), (2.5, 0), (3.5, 0))]
    paired = difference_statistics(real, a, b, 500, 2000, 1, 2, paired=True)
    assert paired["difference"] == pytest.approx(0.25)
    assert paired["difference_ci95"] == pytest.approx([0.25, 0.25])
    assert paired["p"] == pytest.approx(0.25, abs=0.03) and paired["p_min"] == 0.25
    assert paired["resampling"] == "pairs"
    unpaired = difference_statistics(real, a, b, 500, 0, 1, 2, paired=False)
    assert unpaired["difference_ci95"][0] < 0 < unpaired["difference_ci95"][1]
    assert "p" not in unpaired and unpaired["resampling"] == "runs"


def test_paired_permutation_p_matches_the_exact_enumeration():
    rng = np.random.default_rng(4)
    real = [rng.normal(0.1, 0.01, (4, 2)), rng.normal(0.1, 0.01, (3, 2))]
    a = [r + rng.normal(0.02, 0.01, r.shape) for r in real]
    b = [r + rng.normal(0.03, 0.02, r.shape) for r in real]
    got = difference_statistics(real, a, b, 0, 4000, 1, 9, paired=True)

    def vepd(side):
        return distances(*np.concatenate(real).T, *np.concatenate(side).T)[2]

    observed = vepd(b) - vepd(a)
    assert got["difference"] == pytest.approx(observed, abs=1e-15)
    units = [(s, i) for s, g in enumerate(real) for i in range(len(g))]
    hits = 0
    for swap in itertools.product((False, True), repeat=len(units)):
        new_a = [g.copy() for g in a]
        new_b = [g.copy() for g in b]
        for (s, i), flip in zip(units, swap):
            if flip:
                new_a[s][i], new_b[s][i] = b[s][i], a[s][i]
        hits += abs(vepd(new_b) - vepd(new_a)) >= abs(observed) - 1e-12
    exact = hits / 2 ** len(units)
    assert got["p"] == pytest.approx(exact, abs=0.02)
    assert got["p_min"] == 2 / 2 ** 7


def record(side, variant, scenario, k, e, d=0.3):
    return RunRecord(side, variant, scenario, k, f"{side}/{variant}/{scenario}/{k}",
                     RunScore(e, 0.5, 0.5 - d, d))


def study(spread: float, k: int = 4, permutations: int = 200, floor_scale: float | None = None):
    """Real E ≈ 0.10; 'close' +0.01, 'twin' = close + a tiny offset, 'far' +0.2 (per scenario, K runs)."""
    rng = np.random.default_rng(0)
    runs = []
    for scenario in ("line", "circle"):
        for i in range(k):
            e = 0.10 + spread * rng.standard_normal()
            runs.append(record("real", "real", scenario, i, e))
            runs.append(record("sim", "close", scenario, i, e + 0.01 + 0.002 * rng.standard_normal()))
            runs.append(record("sim", "twin", scenario, i, e + 0.0105 + 0.002 * rng.standard_normal()))
            runs.append(record("sim", "far", scenario, i, e + 0.2))
    result = score_study(runs, ScoreOptions(bootstrap=200, permutations=permutations, exclude_scenarios=()),
                         pairs=[("close", "far")])
    if floor_scale is not None:
        draws = [[record("real", "real", s, i, 0.10 + floor_scale * d * (i + 1)) for s in ("line", "circle")
                  for i in range(k)] for d in range(3)]
        result.judge_noise_floor = judge_noise_floor(draws, result.variants, result.scenarios)
    return result


def test_every_pair_is_compared_pooled_and_per_scenario_adjacent_ranks_flagged():
    result = study(0.01)
    pooled = sep.comparisons(result)
    order = sep.order(result)
    assert [(c["better"], c["worse"]) for c in pooled if c["adjacent"]] == list(zip(order, order[1:]))
    assert [(c["better"], c["worse"]) for c in pooled if not c["adjacent"]] == [(order[0], order[2])]
    for scenario in result.scenarios:
        assert len(sep.comparisons(result, scenario)) == 3
    for c in pooled:
        assert c["difference"] == pytest.approx(result.combined[c["worse"]]["VEPD"]
                                                 - result.combined[c["better"]]["VEPD"])
        assert c["difference"] >= 0 and c["resampling"] == "pairs"


def test_ties_share_a_letter_and_far_variants_do_not():
    result = study(0.01)
    labels = sep.group_letters(result)
    assert labels["far"] == "b" and labels["close"] == labels["twin"] == "a"
    assert sep.closest_group(result) == sorted(["close", "twin"], key=lambda v: result.combined[v]["VEPD"])
    ranks, entry, separable, reason = sep.adjacent_rows(result)[0]
    assert ranks == "1–2" and separable is False and "includes 0" in reason
    assert sep.adjacent_rows(result)[1][2] is True
    assert sep.separated(result, "close", "far") is True and sep.separated(result, "far", "close") is False
    assert sep.separated(result, "close", "twin") is None


def test_the_floor_marks_results_and_differences_it_cannot_separate():
    """A floor above 'close' and 'twin' marks both; a floor above the far variant's lead would tie it too."""
    low = study(0.01, floor_scale=0.003)
    limit = sep.floor_threshold(low, "far")
    assert limit == low.judge_noise_floor["combined"]["far"]["VEPD_interval"][1]
    assert sep.below_floor(low, "close") and sep.below_floor(low, "twin") and not sep.below_floor(low, "far")
    assert sep.group_letters(low)["far"] == "b"
    high = study(0.01, floor_scale=0.5)
    assert sep.floor_threshold(high, "far") > high.combined["far"]["VEPD"]
    assert set(sep.group_letters(high).values()) == {"a"}
    separable, reason = sep.verdict(high, sep.comparison(high, "twin", "far"))
    assert separable is False and "not above the judge-noise floor" in reason


def test_too_small_k_is_said_with_the_k_that_would_do():
    small = study(0.01, k=3)
    lines = sep.permutation_warnings(small)
    assert any("per-scenario tests against the real runs" in line and "0.25" in line and "K ≥ 6" in line
               for line in lines), lines
    assert not any("pooled tests" in line for line in lines)   # 2 scenarios x 3 pairs: 2/64 < 0.05
    assert sep.permutation_warnings(study(0.01, k=6)) == []
    few = study(0.01, k=6, permutations=10)
    assert any("--permutations ≥ 20" in line for line in sep.permutation_warnings(few))


# ------------------------------------------------------------------ one rule: interval and test agree
def entry(difference, interval, p, worse="b"):
    return {"better": "a", "worse": worse, "difference": difference, "difference_ci95": interval, "p": p}


def test_interval_and_permutation_test_must_both_separate():
    """The case of issue 31: an interval above 0 beside p 0.075 is not separable, and the reason names
    the test; either one alone not separating is enough."""
    result = study(0.01)
    result.judge_noise_floor = None
    assert sep.verdict(result, entry(0.0656, [0.0226, 0.1034], 0.075)) == (
        False, "difference 0.0656: p 0.075 ≥ 0.05")
    assert sep.verdict(result, entry(0.0656, [-0.01, 0.1034], 0.01)) == (
        False, "difference 0.0656: its 95 % interval includes 0")
    assert sep.verdict(result, entry(0.0656, [0.0226, 0.1034], 0.01))[0] is True
    assert sep.verdict(result, entry(0.0656, None, 0.01))[0] is True       # only a test: it decides
    assert sep.verdict(result, entry(0.0656, [0.02, 0.1], None))[0] is True  # only an interval
    assert sep.verdict(result, entry(0.0656, None, None))[0] is None
    assert "both must say so" in sep.rule(result) and "floor" not in sep.rule(result)


# ------------------------------------------------------------------ compact letter display
def test_letters_by_hand():
    names = ["a1", "b1", "c1"]
    # a chain: a ~ b, b ~ c, a ≁ c -> a, ab, b
    assert sep.letter_groups(names, [("a1", "c1")]) == {"a1": "a", "b1": "ab", "c1": "b"}
    assert sep.letter_groups(names, []) == {"a1": "a", "b1": "a", "c1": "a"}
    assert sep.letter_groups(names, [("a1", "b1"), ("a1", "c1"), ("b1", "c1")]) == {
        "a1": "a", "b1": "b", "c1": "c"}
    # the best separable from both others, those two tied: a, b, b
    assert sep.letter_groups(names, [("a1", "b1"), ("a1", "c1")]) == {"a1": "a", "b1": "b", "c1": "b"}
    # four: 1 ≁ 3, 1 ≁ 4, 2 ≁ 4 -> columns {1, 2}, {2, 3}, {3, 4}: a, ab, bc, c
    four = ["w", "x", "y", "z"]
    assert sep.letter_groups(four, [("w", "y"), ("w", "z"), ("x", "z")]) == {
        "w": "a", "x": "ab", "y": "bc", "z": "c"}
    # a best variant separable from nothing but the worst, which is tied with the middle ones only
    assert sep.letter_columns(four, [("w", "z")]) == [frozenset("wxy"), frozenset("xyz")]
    assert sep.letter_groups([], []) == {}


names_strategy = st.integers(min_value=1, max_value=7).map(lambda n: [f"v{i}" for i in range(n)])


@given(names_strategy.flatmap(lambda names: st.tuples(
    st.just(names),
    st.sets(st.sampled_from([(a, b) for i, a in enumerate(names) for b in names[i + 1:]] or [("x", "y")])))))
@settings(max_examples=200, deadline=None)
def test_letters_share_exactly_when_not_separable(case):
    names, separable = case
    separable = {pair for pair in separable if pair[0] in names}
    letters = sep.letter_groups(names, sorted(separable))
    assert letters[names[0]].startswith("a")
    for i, a in enumerate(names):
        assert letters[a]
        for b in names[i + 1:]:
            shared = set(letters[a]) & set(letters[b])
            assert bool(shared) == ((a, b) not in separable), (a, b, letters)


def test_pages_state_the_rule_and_name_the_closest_group_only():
    from sim2real_eval.report import html as report_html
    from sim2real_eval.report import tables

    result = study(0.01)
    closest = sep.closest_group(result)
    assert sorted(closest) == ["close", "twin"]
    headline = f"{', '.join(closest)} (group a: not separable from each other)"
    assert tables.closest_to_real(result) == headline
    markdown = tables.tables_markdown(result)
    page = report_html.report_html(result, {}, "hand-made")
    for text in (markdown, page):
        assert "(both must say so;" in text and "variants sharing a letter are" in text
    assert "| far | b |" in markdown and "closest to real: <b>" + headline in page.replace("&lt;", "<")
