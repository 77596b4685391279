"""Judge robustness (issue 33): Kendall's τ and its paired bootstrap, the verdict flips between two judges
(``metrics.judge_agreement``), the judge names and derived judge files (``judges``), and ``demo --judges``
end to end on the small demo study."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real_eval.errors import UserError
from sim2real_eval.metrics import RunRecord, RunScore, ScoreOptions, score_study
from sim2real_eval.metrics import judge_agreement as agreement
from sim2real_eval.studies import judges

# ------------------------------------------------------------------------------------ τ, hand cases


def test_tau_same_order_is_one_reversed_is_minus_one():
    assert agreement.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 10, "b": 20, "c": 30}) == pytest.approx(1.0)
    assert agreement.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}) == pytest.approx(-1.0)


def test_tau_one_discordant_pair_of_three():
    # pairs (a, b) +, (a, c) +, (b, c) −: (2 − 1) / 3
    assert agreement.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2}) == pytest.approx(1 / 3)


def test_tau_b_with_a_tie():
    # first ties a and b: C = 2, D = 0, n0 = 3, ties n1 = 1 in the first, none in the second:
    # τ-b = 2 / sqrt((3 − 1)(3 − 0))
    assert agreement.kendall_tau({"a": 1, "b": 1, "c": 2}, {"a": 1, "b": 2, "c": 3}) == \
        pytest.approx(2 / math.sqrt(6))


def test_tau_uses_the_common_variants_and_is_nan_without_an_order():
    assert agreement.kendall_tau({"a": 1, "b": 2, "x": 0}, {"a": 5, "b": 6, "y": 9}) == pytest.approx(1.0)
    assert math.isnan(agreement.kendall_tau({"a": 1}, {"a": 2}))
    assert math.isnan(agreement.kendall_tau({"a": 1, "b": 1}, {"a": 1, "b": 2}))


def test_discordant_pairs_are_the_reversed_ones_not_the_ties():
    assert agreement.discordant_pairs({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2}) == [["b", "c"]]
    assert agreement.discordant_pairs({"a": 1, "b": 1, "c": 2}, {"a": 2, "b": 1, "c": 3}) == []


# ------------------------------------------------------------------------------------ verdicts, hand cases
def test_change_of_one_pair():
    assert agreement.change("a", "a") == agreement.AGREE
    assert agreement.change(None, None) == agreement.AGREE          # not separable under both
    assert agreement.change("a", "b") == agreement.FLIP
    assert agreement.change("a", None) == agreement.ONLY_FIRST      # not a flip: the second cannot tell
    assert agreement.change(None, "b") == agreement.ONLY_SECOND


def test_verdict_changes_and_flips():
    first = {("a", "b"): "a", ("a", "c"): "a", ("b", "c"): None}
    second = {("a", "b"): "b", ("a", "c"): None, ("b", "c"): None}
    rows = agreement.verdict_changes(first, second)
    assert [row["change"] for row in rows] == [agreement.FLIP, agreement.ONLY_FIRST, agreement.AGREE]
    assert rows[1]["second"] == agreement.NOT_SEPARABLE
    assert agreement.flips(rows) == [["a", "b"]]


# ------------------------------------------------------------------------------------ on scored studies
def _records(offsets: dict, k: int = 8, seed: int = 0) -> list:
    """A one-scenario study: real runs with E ~ 0.1 and D ~ 0.3, each variant's run k = real run k +
    its offset (E and D): a large offset is far from real, a small one close."""
    rng = np.random.default_rng(seed)
    real = [(0.1 + 0.01 * rng.standard_normal(), 0.3 + 0.01 * rng.standard_normal()) for _ in range(k)]
    records = [RunRecord("real", "real", "line", i, "t", RunScore(e, 0.0, 0.0, d)) for i, (e, d) in
               enumerate(real)]
    for variant, offset in offsets.items():
        records += [RunRecord("sim", variant, "line", i, "t",
                              RunScore(e + offset + 0.001 * rng.standard_normal(), 0.0, 0.0, d + offset))
                    for i, (e, d) in enumerate(real)]
    return records


OPTIONS = ScoreOptions(bootstrap=200, permutations=200, seed=3)


@pytest.fixture(scope="module")
def studies():
    """Judge 1: near < mid < far, all separable; judge 2: far and near swapped (a flip), mid ~ near."""
    one = score_study(_records({"near": 0.01, "mid": 0.1, "far": 0.3}), OPTIONS)
    two = score_study(_records({"near": 0.3, "mid": 0.3005, "far": 0.01}), OPTIONS)
    return one, two


def test_verdicts_under_the_separability_rule(studies):
    one, two = studies
    first, second = agreement.verdicts(one, one.variants), agreement.verdicts(two, two.variants)
    assert first == {("far", "mid"): "mid", ("far", "near"): "near", ("mid", "near"): "near"}
    assert second[("far", "near")] == "far" and second[("mid", "near")] is None
    rows = {tuple(r["pair"]): r["change"] for r in agreement.verdict_changes(first, second)}
    assert rows[("far", "near")] == agreement.FLIP and rows[("far", "mid")] == agreement.FLIP
    assert rows[("mid", "near")] == agreement.ONLY_FIRST


def test_tau_interval_of_a_study_with_itself_is_one(studies):
    one, _two = studies
    out = agreement.tau_interval(one, one, 200, agreement.tau_seed(0, "gps_study", "a", "b"))
    assert out["tau"] == pytest.approx(1.0) and out["tau_ci95"] == pytest.approx([1.0, 1.0])
    assert out["units"] == 8 and out["resamples"] == 200


def test_tau_interval_is_seeded_and_brackets_a_reversal(studies):
    one, two = studies
    seed = agreement.tau_seed(0, "gps_study", "a", "b")
    out = agreement.tau_interval(one, two, 300, seed)
    assert out == agreement.tau_interval(one, two, 300, agreement.tau_seed(0, "gps_study", "a", "b"))
    # near < mid < far against far < near < mid: (near, mid) concordant, the two pairs with far discordant
    assert out["tau"] == pytest.approx(-1 / 3)
    lo, hi = out["tau_ci95"]
    assert -1.0 <= lo <= out["tau"] <= hi <= 1.0


def test_tau_interval_needs_the_same_runs(studies):
    one, _two = studies
    other = score_study(_records({"near": 0.01, "mid": 0.1, "far": 0.3}, k=9), OPTIONS)
    with pytest.raises(ValueError, match="different runs"):
        agreement.tau_interval(one, other, 10, 0)


# ------------------------------------------------------------------------------------ properties
orders = st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=8, unique=True)


@settings(max_examples=60, deadline=None)
@given(orders)
def test_property_tau_of_a_ranking_with_itself_is_one(values):
    ranking = {f"v{i}": value for i, value in enumerate(values)}
    assert agreement.kendall_tau(ranking, ranking) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=8))
def test_property_tau_is_symmetric(pairs):
    first = {f"v{i}": a for i, (a, _b) in enumerate(pairs)}
    second = {f"v{i}": b for i, (_a, b) in enumerate(pairs)}
    one, other = agreement.kendall_tau(first, second), agreement.kendall_tau(second, first)
    assert (math.isnan(one) and math.isnan(other)) or one == pytest.approx(other)


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(6))))
def test_property_tau_without_ties_counts_the_reversed_pairs(order):
    first = {f"v{i}": i for i in range(6)}
    second = {f"v{i}": rank for i, rank in enumerate(order)}
    reversed_pairs = len(agreement.discordant_pairs(first, second))
    assert agreement.kendall_tau(first, second) == pytest.approx(1 - 2 * reversed_pairs / 15)


verdict_maps = st.dictionaries(st.sampled_from([("a", "b"), ("a", "c"), ("b", "c"), ("c", "d")]),
                               st.sampled_from(["a", "b", "c", "d", None]), min_size=1)


@settings(max_examples=100, deadline=None)
@given(verdict_maps, verdict_maps)
def test_property_flips_are_symmetric(first, second):
    forward = agreement.verdict_changes(first, second)
    backward = agreement.verdict_changes(second, first)
    assert sorted(agreement.flips(forward)) == sorted(agreement.flips(backward))
    swap = {agreement.ONLY_FIRST: agreement.ONLY_SECOND, agreement.ONLY_SECOND: agreement.ONLY_FIRST}
    assert [swap.get(r["change"], r["change"]) for r in forward] == [r["change"] for r in backward]


# ------------------------------------------------------------------------------------ names and files
def test_judge_names_are_checked_in_one_line():
    assert judges.parse_option("ekf,ukf") == ("ekf", "ukf")
    with pytest.raises(UserError, match=r"^--judges: unknown judge 'foo' \(allowed: ekf, ukf, no_accel"):
        judges.parse_option("ekf,foo")
    with pytest.raises(UserError, match="at least two"):
        judges.parse_option("ekf")
    with pytest.raises(UserError, match="named twice"):
        judges.parse_option("ukf,ukf")


def test_demo_file_judges_key(tmp_path):
    from sim2real_eval.studies.config import load_demo_config

    shipped = Path(__file__).resolve().parents[1] / "config" / "studies" / "demo.yaml"
    good = tmp_path / "demo.yaml"
    good.write_text(shipped.read_text() + "judges: [ekf, no_accel]\n")
    assert load_demo_config(good).judges == ("ekf", "no_accel")
    bad = tmp_path / "bad.yaml"
    bad.write_text(shipped.read_text() + "judges: [ekf, foo]\n")
    with pytest.raises(UserError, match=r"bad.yaml: judges: unknown judge 'foo'"):
        load_demo_config(bad)


def test_derived_judges_change_only_what_they_say(tmp_path):
    from sim2real_eval.judge.params import load_ekf_params
    from sim2real_eval.studies.config import load_demo_config

    study = load_demo_config().judge
    base = load_ekf_params(study.ekf)
    ukf = judges.derive("ukf", study, tmp_path)
    assert not ukf.own and ukf.record["changes"] == {"filter_type": "ukf"}
    derived = load_ekf_params(ukf.config.ekf)
    assert derived.filter_type == "ukf" and derived.frequency == base.frequency
    no_accel = judges.derive("no_accel", study, tmp_path)
    cut = load_ekf_params(no_accel.config.ekf)
    assert list(no_accel.record["changes"]) == ["imu0_config"]
    assert judges.derive("ekf", study, tmp_path).own and judges.derive("art", study, tmp_path).own
    assert not judges.derive("car", study, tmp_path).own
    assert cut.filter_type == "ekf" and cut != base


# ------------------------------------------------------------------------------------ the CLI, end to end
def test_cli_judges_bad_name_is_one_line_exit_2(tmp_path, capsys):
    from sim2real_eval.cli import main

    with pytest.raises(SystemExit) as stop:  # refused while parsing (cli.validators.judge_names)
        main(["demo", "--judges", "ekf,foo", "--out", str(tmp_path / "o")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["sim2real-eval demo: error: argument --judges: unknown judge 'foo' (allowed: ekf, ukf, "
                   "no_accel, art, car, terrain) (sim2real-eval demo --help shows the usage)"]
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_cli_demo_with_judges(tmp_path, capsys):
    from test_demo_quick import small_demo_config

    from sim2real_eval.cli import main

    config = small_demo_config(tmp_path, gps=["ch_gauss", "ch_rw", "ch_gauss_airsim"])
    out = tmp_path / "report"
    assert main(["demo", "--quick", "--config", str(config), "--out", str(out), "--no-progress",
                 "--workers", "2", "--judges", "ekf,ukf"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "judges.json").read_text())
    assert [j["name"] for j in doc["judges"]] == ["ekf", "ukf"]
    assert doc["judges"][0]["study_judge"] and doc["judges"][1]["changes"] == {"filter_type": "ukf"}
    gps = doc["studies"]["gps_study"]
    vepd = json.loads((out / "vepd.json").read_text())["combined"]
    # the study's own judge is the study: its column is Table I
    assert {v: c["VEPD"] for v, c in gps["table"]["ekf"].items()} == {v: vepd[v]["VEPD"] for v in vepd}
    ukf = {v: c["VEPD"] for v, c in gps["table"]["ukf"].items()}
    assert ukf != {v: vepd[v]["VEPD"] for v in vepd}     # the UKF judged the runs again
    pair = gps["pairs"][0]
    assert pair["tau"] == pytest.approx(agreement.kendall_tau({v: vepd[v]["VEPD"] for v in vepd}, ukf))
    assert pair["units"] == 4 and pair["resamples"] > 0 and len(pair["verdicts"]) == 3
    assert set(gps["floor"]) == {"ekf", "ukf"}
    assert "## Judge robustness: every run judged by ekf, ukf" in (out / "tables.md").read_text()
    assert "Judge robustness" in (out / "report.html").read_text()
    assert "GPS study, ekf vs ukf: Kendall τ" in printed
    assert "judges.json" in json.loads((out / ".sim2real-eval.json").read_text())["files"]
    assert [p.name for p in out.glob(".*")] == [".sim2real-eval.json"]   # the derived files are gone


def test_section_names_a_judge_that_does_not_track_the_real_vehicle(studies):
    one, two = studies
    judge = [{"name": name, "description": "d", "study_judge": name == "ekf", "ekf": "e.yaml",
              "navsat": "n.yaml"} for name in ("ekf", "ukf")]
    results = {"ekf": {"gps_study": one, "imu_study": one}, "ukf": {"gps_study": two, "imu_study": two}}
    listed = [judges.Judge(j["name"], None, j, j["study_judge"]) for j in judge]
    doc = judges.document(listed, results, OPTIONS)
    assert doc["studies"]["gps_study"]["tracked"] == {"ekf": None, "ukf": None}  # no health assessed here
    assert judges.health_line(doc, "gps_study") == ""
    doc["studies"]["gps_study"]["tracked"] = {"ekf": True, "ukf": False}
    assert judges.health_line(doc, "gps_study").startswith("Judge health: ukf does not track")
    markdown = judges.section_markdown(doc)
    assert "Judge health: ukf does not track" in markdown and "far ~ near" in markdown
    assert any("ukf does not track" in line for line in judges.console_lines(doc))
    pair = doc["studies"]["gps_study"]["pairs"][0]
    assert pair["flips"] == [["far", "mid"], ["far", "near"]] and pair["reordered"] == pair["flips"]
