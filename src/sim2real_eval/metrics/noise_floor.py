"""The judge-noise floor (issue 12): the VEPD that judge timing alone produces.

Real runs of one bag differ by where the real robot_localization's timers happened to tick
(``pipeline.timing``).  The floor measures that: the real side is judged twice more, each time with
independent random timer timing (``TimingModel("random")``, draws 0 and 1 seeded
``sensor_seed(seed, "timing", scenario, k, "noise-floor", draw)``), both sets are scored exactly like
runs, and compared exactly as a variant is compared with the real side — W1 of their E, W2 of their
D, VEPD = (W1 + W2) / 2 — pooled over a variant's scenarios (as Table I) and per scenario (Table II).

It is the score a perfect sensor model would get from judge timing alone: differences of VEPD below
it are not meaningful.
"""
from __future__ import annotations

from .study import REAL, RunRecord, distances

DRAWS = 2
SEED_KEY = "noise-floor"
DEFINITION = ("VEPD between the real runs judged twice with independent random judge timing (timer "
              "phases uniform over their periods, tick latency ~ U(0, 25 ms)): the score a perfect "
              "sensor model would get from judge timing alone; differences of VEPD below it are not "
              "meaningful")


def judge_noise_floor(draws: list, variants, scenarios) -> dict:
    """{"definition", "combined": {variant: {W1, W2, VEPD, n}}, "per_scenario": {variant: {scenario:
    {W1, W2, VEPD, n}}}} from ``draws``: [records of draw 0, records of draw 1] (``RunRecord`` of the
    real runs).  Every variant of a study has the study's scenarios, so their floors are equal; they are
    listed per variant as the tables are."""
    a, b = draws[:2]
    pooled = _cell(a, b, scenarios)
    per_scenario = {scenario: _cell(a, b, [scenario]) for scenario in scenarios}
    return {"definition": DEFINITION,
            "combined": {variant: dict(pooled) for variant in variants},
            "per_scenario": {variant: {s: dict(cell) for s, cell in per_scenario.items()}
                             for variant in variants}}


def _cell(a: list, b: list, scenarios) -> dict:
    """W1, W2, VEPD between the E and D of the records of ``scenarios`` in draw a and in draw b."""
    first = [r.score for r in a if r.scenario in scenarios]
    second = [r.score for r in b if r.scenario in scenarios]
    w1, w2, v = distances([s.rmse for s in first], [s.D for s in first], [s.rmse for s in second],
                          [s.D for s in second])
    return {"W1": w1, "W2": w2, "VEPD": v, "n": len(first)}


def floor_record(scenario: str, k: int, source: str, score) -> RunRecord:
    """A noise-floor judgement of the real run ``k`` of ``scenario`` as a scored run."""
    return RunRecord(REAL, REAL, scenario, int(k), source, score)


__all__ = ["DEFINITION", "DRAWS", "SEED_KEY", "floor_record", "judge_noise_floor"]
