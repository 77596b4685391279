"""Tables and documents from a hand-made study: ordering, formatting, schema, missing statistics."""
from __future__ import annotations

import csv
import io
import json

import pytest

from sim2real_eval.errors import UserError
from sim2real_eval.metrics import RunRecord, RunScore, ScoreOptions, score_study
from sim2real_eval.report import parse_trace_run, tables


def _study(bootstrap=0, permutations=0):
    # real E = {0, 1} per scenario; variant "near" E = {0, 1} (W1 = 0), "far" E = {2, 3} (W1 = 2)
    records = []
    for scenario in ("line", "sine"):
        for k, e in enumerate((0.0, 1.0)):
            same = RunScore(e, 0.3, 0.2, 0.1)
            records.append(RunRecord("real", "real", scenario, k, f"r/{scenario}/{k}", same))
            records.append(RunRecord("sim", "near", scenario, k, f"n/{scenario}/{k}", same))
            records.append(RunRecord("sim", "far", scenario, k, f"f/{scenario}/{k}",
                                     RunScore(e + 2.0, 0.6, 0.2, 0.4)))
    options = ScoreOptions(bootstrap=bootstrap, permutations=permutations)
    return score_study(records, options, skipped=[("bad/run", "no overlap")])


def test_hand_made_study_numbers_and_ranks():
    result = _study()
    assert result.combined["near"]["VEPD"] == 0.0
    assert result.combined["far"]["W1"] == pytest.approx(2.0)
    assert result.combined["far"]["W2"] == pytest.approx(0.3)
    assert result.combined["far"]["VEPD"] == pytest.approx(1.15)     # > 1: VEPD is not bounded
    assert [result.per_scenario[v]["line"]["rank"] for v in ("far", "near")] == [2.0, 1.0]


def test_documents_schema_and_markdown_without_statistics():
    result = _study()
    doc = tables.vepd_document(result)
    assert set(doc) == {"combined", "per_scenario", "options", "version"}
    assert doc["combined"]["far"]["VEPD_ci95"] is None
    assert doc["options"]["skipped_runs"] == [{"run": "bad/run", "reason": "no overlap"}]
    json.loads(tables.to_json(doc))
    md = tables.tables_markdown(result)
    table_one = md.split("## Table I")[1].split("## Table II")[0]
    assert table_one.index("| near |") < table_one.index("| far |")      # best first
    # no interval, p or floor: nothing shows the two apart, so they share group "a"
    assert "| far | a | 2.0000 | – | 0.3000 | – | 1.1500 | – | – | 4 | 4 |" in table_one
    assert "| near | 0.0000 (a) | 0.0000 (a) | 1.00 |" in md
    assert "`bad/run`: no overlap" in md
    rows = list(csv.DictReader(io.StringIO(tables.runs_csv(result))))
    assert len(rows) == 12 and rows[0]["side"] == "real"


def test_markdown_with_statistics_shows_intervals():
    md = tables.tables_markdown(_study(bootstrap=30, permutations=30))
    assert "[0.0000, " in md and "p (perm.)" in md


def test_trace_run_parsing():
    assert parse_trace_run("half_sine:3") == ("half_sine", 3)
    assert parse_trace_run("a:b:2") == ("a:b", 2)
    with pytest.raises(UserError, match="SCENARIO:K"):
        parse_trace_run("line")
