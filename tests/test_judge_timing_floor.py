"""The judge-noise floor (noise_floor.compute): its distances, its judgements scored exactly as the scorer
scores a run bag, and its place in statistics.json, tables.md and report.html."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim2real_eval import service
from sim2real_eval.judge.config import JudgeConfig
from sim2real_eval.metrics import ScoreOptions
from sim2real_eval.metrics.inputs import discover_runs_dir, load_and_score
from sim2real_eval.metrics.per_run import RunScore
from sim2real_eval.metrics.study import RunRecord, score_study, wasserstein
from sim2real_eval.noise_floor.compute import DEFINITION, judge_noise_floor
from sim2real_eval.replay.offline import judged_scores
from sim2real_eval.replay.real_bag import read_real_streams
from sim2real_eval.report import write_report
from sim2real_eval.resources import config_path
from sim2real_eval.runs import RealBag
from sim2real_eval.runs.timing import RunTiming

REFERENCE = Path(__file__).resolve().parents[1] / "bags" / "reference"
OPTIONS = ScoreOptions(bootstrap=0, permutations=0).validate()


def records(values, side="real", variant="real"):
    """RunRecords of (scenario, k, E, D)."""
    return [RunRecord(side, variant, s, k, f"{s}/{k}", RunScore(e, 0.4, 0.4 - d, d)) for s, k, e, d in values]


def test_floor_of_two_draws_is_the_vepd_between_them():
    a = records([("line", 0, 0.10, 0.30), ("line", 1, 0.11, 0.35), ("sine", 0, 0.09, 0.31),
                 ("sine", 1, 0.08, 0.3)])
    b = records([("line", 0, 0.12, 0.33), ("line", 1, 0.10, 0.34), ("sine", 0, 0.095, 0.29),
                 ("sine", 1, 0.08, 0.3)])
    floor = judge_noise_floor([a, b], ["v1", "v2"], ["line", "sine"])
    assert floor["definition"] == DEFINITION and (floor["draws"], floor["pairs"]) == (2, 1)
    w1 = wasserstein([0.10, 0.11, 0.09, 0.08], [0.12, 0.10, 0.095, 0.08])
    w2 = wasserstein([0.30, 0.35, 0.31, 0.3], [0.33, 0.34, 0.29, 0.3])
    v = (w1 + w2) / 2
    assert floor["combined"]["v1"] == {"W1": w1, "W2": w2, "VEPD": v, "VEPD_interval": [v, v],
                                       "VEPD_pairs": [v], "n": 4}
    assert floor["combined"]["v2"] == floor["combined"]["v1"]
    line = floor["per_scenario"]["v1"]["line"]
    assert line["W1"] == pytest.approx(wasserstein([0.10, 0.11], [0.12, 0.10])) and line["n"] == 2
    assert judge_noise_floor([a, a], ["v"], ["line", "sine"])["combined"]["v"]["VEPD"] == 0.0
    # Only the study's scenarios count (the IMU study has one).
    assert judge_noise_floor([a, b], ["v"], ["sine"])["combined"]["v"]["n"] == 2
    with pytest.raises(ValueError, match="two draws"):
        judge_noise_floor([a], ["v"], ["line"])


def test_floor_of_several_draws_is_the_mean_over_their_pairs_with_their_range():
    """Three draws: one VEPD per pair (0-1, 0-2, 1-2), the floor their mean, the interval their range;
    ``threshold`` (what a result must exceed) is the range's upper end."""
    from sim2real_eval.metrics.separation import threshold
    from sim2real_eval.metrics.study import distances

    draws = [records([("line", 0, 0.10 + d, 0.30), ("line", 1, 0.11, 0.35 - d), ("line", 2, 0.12, 0.31)])
             for d in (0.0, 0.004, 0.02)]
    floor = judge_noise_floor(draws, ["v"], ["line"])
    pairs = [distances(*[[r.score.rmse for r in x], [r.score.D for r in x]], *[[r.score.rmse for r in y],
                                                                             [r.score.D for r in y]])
             for x, y in ((draws[0], draws[1]), (draws[0], draws[2]), (draws[1], draws[2]))]
    cell = floor["combined"]["v"]
    assert (floor["draws"], floor["pairs"]) == (3, 3)
    assert cell["VEPD_pairs"] == [v for _w1, _w2, v in pairs]
    assert cell["VEPD"] == pytest.approx(sum(v for *_w, v in pairs) / 3)
    assert cell["W1"] == pytest.approx(sum(w1 for w1, *_rest in pairs) / 3)
    assert cell["VEPD_interval"] == [min(cell["VEPD_pairs"]), max(cell["VEPD_pairs"])]
    assert cell["VEPD_interval"][0] < cell["VEPD"] < cell["VEPD_interval"][1]
    assert threshold(floor, "v") == cell["VEPD_interval"][1]
    assert threshold(floor, "v", "line") == floor["per_scenario"]["v"]["line"]["VEPD_interval"][1]
    assert threshold(None, "v") is None and threshold({"unavailable": "csv"}, "v") is None


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("floor")
    judge = JudgeConfig(str(config_path("ekf_art_iros2024.yaml")),
                        str(config_path("navsat_art_iros2024.yaml")))
    bags = [RealBag(str(REFERENCE / "line" / f"run_0{k}"), "line", k) for k in range(2)]
    tasks = service.plan_replays(bags, [], judge, seed=5)
    service.replay_bags(tasks, out, workers=1, progress=False).raise_on_failure()
    return out, tasks


def test_judged_scores_equal_the_scorer_on_the_written_run(replayed):
    """The floor's judgements are scored exactly like a run bag: with the run's own timing, the numbers
    are the scorer's, bit for bit (same /ground_truth/odom records, same estimate values, same window)."""
    out, tasks = replayed
    spec = tasks[0].spec
    streams = read_real_streams(spec)
    (score,) = judged_scores(spec, streams, OPTIONS, [RunTiming()])
    run = next(s for s in discover_runs_dir(out, OPTIONS) if (s.scenario, s.k) == ("line", 0))
    record, _series = load_and_score(run, OPTIONS)
    assert score == record.score


def test_report_carries_the_floor_only_when_there_is_one(tmp_path):
    rng = np.random.default_rng(1)

    def draw(side, variant, scale):
        return records([(s, k, 0.1 + scale * rng.standard_normal(), 0.3 + scale * rng.standard_normal())
                        for s in ("line", "sine") for k in range(3)], side, variant)

    runs = draw("real", "real", 0.01) + draw("sim", "a", 0.02) + draw("sim", "b", 0.03)
    result = score_study(runs, OPTIONS)
    write_report(tmp_path / "plain", result, {}, "x")
    assert "judge_noise_floor" not in json.loads((tmp_path / "plain" / "statistics.json").read_text())
    assert "noise floor" not in (tmp_path / "plain" / "tables.md").read_text()
    result.judge_noise_floor = judge_noise_floor([draw("real", "real", 0.01) for _ in range(3)],
                                                 result.variants, result.scenarios)
    write_report(tmp_path / "floor", result, {}, "x")
    stats = json.loads((tmp_path / "floor" / "statistics.json").read_text())
    assert stats["judge_noise_floor"] == json.loads(json.dumps(result.judge_noise_floor))
    tables = (tmp_path / "floor" / "tables.md").read_text()
    page = (tmp_path / "floor" / "report.html").read_text()
    cell = result.judge_noise_floor["combined"]["a"]
    low, high = cell["VEPD_interval"]
    for text in (tables, page):
        assert "not above the judge-noise floor is not meaningful" in text
        assert f"{cell['VEPD']:.4f}" in text and f"[{low:.4f}, {high:.4f}]" in text
        assert "every variant" in text
        assert "3 timing draws of every real run, 3 pairs of draws" in text
    result.judge_noise_floor = {"unavailable": "a CSV run records no real bag"}
    write_report(tmp_path / "none", result, {}, "x")
    assert "Not measured: a CSV run records no real bag" in (tmp_path / "none" / "tables.md").read_text()
