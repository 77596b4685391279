"""The judge-noise floor (issues 12, 19): the VEPD that judge timing alone produces, with its spread.

Real runs of one bag differ by where the real robot_localization's timers happened to tick
(``runs.timing``).  The floor measures that: the real side is judged ``DRAWS`` more times, each
time with independent random timer timing (``TimingModel("random")``, draw d seeded
``sensor_seed(seed, "timing", scenario, k, "noise-floor", d)``), every set is scored exactly like
runs, and every pair of draws is compared exactly as a variant is compared with the real side — W1 of
their E, W2 of their D, VEPD = (W1 + W2) / 2 — pooled over a variant's scenarios (as Table I) and per
scenario (Table II).

One pair of draws is one sample of the floor, and it varies from draw to draw (on a real drive single
draws gave 0.05 and 0.105), so the floor is reported as the mean over the D(D − 1)/2 pairs with
``VEPD_interval``, the range [lowest, highest] of the pairs.  A result is "above the floor" only when
it exceeds the interval's upper end (``metrics.separation.threshold``): what no pair of draws reached.

It is the score a perfect sensor model would get from judge timing alone: differences of VEPD not
above it are not meaningful.
"""
from __future__ import annotations

from itertools import combinations

from ..metrics.study import REAL, RunRecord, distances

DRAWS = 4  # 6 pairs; each draw costs one judge run per real bag
SEED_KEY = "noise-floor"
DEFINITION = ("VEPD between the real runs judged several times with independent random judge timing "
              "(timer phases uniform over their periods, tick latency ~ U(0, 25 ms)), one value per pair "
              "of draws: the score a perfect sensor model would get from judge timing alone; a VEPD or a "
              "difference of VEPD not above the highest pair value is not meaningful")


def judge_noise_floor(draws: list, variants, scenarios) -> dict:
    """{"definition", "draws", "pairs", "combined": {variant: cell}, "per_scenario": {variant: {scenario:
    cell}}} with cell = {W1, W2, VEPD (means over the pairs of draws), VEPD_interval [min, max] and
    VEPD_pairs (one VEPD per pair), n (runs per draw)}, from ``draws``: [records of draw 0, draw 1, …]
    (``RunRecord`` of the real runs; at least two draws).  Every variant of a study has the study's
    scenarios, so their floors are equal; they are listed per variant as the tables are."""
    if len(draws) < 2:
        raise ValueError("judge_noise_floor: needs at least two draws")
    pooled = _cell(draws, scenarios)
    per_scenario = {scenario: _cell(draws, [scenario]) for scenario in scenarios}
    return {"definition": DEFINITION, "draws": len(draws), "pairs": len(draws) * (len(draws) - 1) // 2,
            "combined": {variant: _copy(pooled) for variant in variants},
            "per_scenario": {variant: {s: _copy(cell) for s, cell in per_scenario.items()}
                             for variant in variants}}


def _copy(cell: dict) -> dict:
    return {key: list(value) if isinstance(value, list) else value for key, value in cell.items()}


def _cell(draws: list, scenarios) -> dict:
    """Mean W1, W2, VEPD over every pair of draws of the records of ``scenarios``, and the VEPD range."""
    samples = [[r.score for r in draw if r.scenario in scenarios] for draw in draws]
    values = [distances([s.rmse for s in a], [s.D for s in a], [s.rmse for s in b], [s.D for s in b])
              for a, b in combinations(samples, 2)]
    vepds = [v for _w1, _w2, v in values]
    return {"W1": sum(w1 for w1, _w2, _v in values) / len(values),
            "W2": sum(w2 for _w1, w2, _v in values) / len(values),
            "VEPD": sum(vepds) / len(vepds), "VEPD_interval": [min(vepds), max(vepds)],
            "VEPD_pairs": vepds, "n": len(samples[0])}


def floor_record(scenario: str, k: int, source: str, score) -> RunRecord:
    """A noise-floor judgement of the real run ``k`` of ``scenario`` as a scored run."""
    return RunRecord(REAL, REAL, scenario, int(k), source, score)


__all__ = ["DEFINITION", "DRAWS", "SEED_KEY", "floor_record", "judge_noise_floor"]
