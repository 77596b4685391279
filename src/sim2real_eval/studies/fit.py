"""``sim2real-eval fit``: a GPS model and an IMU model fitted together to a real drive, by cross-validation
over its windows (docs/calibration.md, "Fitting a GPS + IMU pair: fit").

The drive is a sequence of runs (the windows ``import --window`` cuts, in order).  They are split into
``folds`` contiguous blocks (blocked folds: neighbouring windows share the receiver's slowly varying error,
so a window next to a validation window would leak it; whole blocks keep that leak to the block edges).
For fold f:

1. **Start** — ``calibrate --truth`` (``calibrate.drive``) on the fit windows (every block but f, their
   data joined in time order): the GPS error (white σ, Gauss–Markov σ and τ, bias, stamp lag and jitter,
   the receiver's covariance) and the IMU − truth residual (Chrono drift σ, b0, t_b, constant bias).
   These are the initial values; the search ranges are set around them (``fit_params.start_point``), then
   widened to hold every compared preset mapped into the searched families (``fit_params.preset_point``,
   ``with_points``).
2. **Search** — Optuna TPE (``studies.tune.search``: ask/tell, SQLite storage, local processes or Ray)
   over the searched parameters; one trial replays every fit window with the candidate pair driven by
   the window's ground truth, judged like the real window, ``seeds`` times with fixed independent noise
   streams (common random numbers: the same streams in every trial, so trials differ by their parameters,
   not by their draw), and its objective is the mean VEPD over those seeds.  Trials 0 … n are enqueued:
   the calibrated start, then every preset (so no search ends worse than any of them on its fit runs).
3. **Validation** — the fold's best pair, the calibrated start and every preset of the demo file's GPS
   study are replayed on the fold's own block (never seen by 1–2) with the real runs judged again with
   random judge timing (the judge-noise floor); VEPD with its bootstrap interval, each preset against
   the fitted pair paired by window.

The held-out VEPD of all folds together (every window judged with the pair fitted without it) is the
cross-validated estimate.

4. **The fitted pair** — a final search (1–2) on every run given: cross-validation only estimates the
   held-out error of this procedure and tells which parameters the data identifies (``DESIGN``).
5. **Shortfall** — ``calibrate.shortfall`` of the fitted pair on every run (``fitted_shortfall``): what
   its families miss, with the cross-validated VEPD split.

A parameter whose fold values spread over more than ``SPREAD_LIMIT`` of its search range (in the range's
own scale: log10 for log ranges) is "not identified by this data" (``identified``): for a parameter the
data does not constrain, each fold's value is an arbitrary point of the range, and two such points fall
within 15 % of the range of each other with probability 1 − 0.85² = 28 % (3 folds: 6 %, 4 folds: 1 %);
a parameter the data pins down lands in the same place.

The searched parameters, their ranges and the presets as points of them: ``studies.fit_params``; the
files written and the printed summary: ``studies.fit_outputs``.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..calibrate.shortfall_stats import error_statistics, segment_from_bag
from ..errors import UserError
from ..geodesy import enu_to_geodetic, geodetic_to_enu
from ..metrics import score_study, separation
from ..metrics.options import ScoreOptions
from ..noise_floor.compute import judge_noise_floor
from ..runs import find_real_bags
from ..service import plan_replays, replay_bags
from ..truth import FIELDS, GroundTruth
from .fit_params import (
    DEFAULT_BUDGET,
    DEFAULT_FOLDS,
    DEFAULT_SEEDS,
    PARAMS,
    FitStart,
    build_pair,
    clipped,
    preset_point,
    start_point,
    with_points,
)
from .tune import (
    OBJECTIVE_COMBINED,
    TUNE_VARIANT,
    ReplayTrials,
    TrialContext,
    check_storage,
    search,
)
from .tune_params import ParamRange

FITTED, START = "fitted", "calibrated"
SPREAD_LIMIT = 0.15      # fold spread / search range above which a parameter is not identified
MIN_RUNS_PER_BLOCK = 2   # W1/W2 need two runs on each side
DESIGN = ("cross-validation estimates the held-out VEPD and tells which parameters this data identifies "
          "(each fold searched on its fit blocks, judged on its own block); the fitted pair is a final "
          "search on every run given, started like each fold's from calibrate --truth, the calibrated start "
          "and every compared preset enqueued as its first trials")


# ------------------------------------------------------------------------------------ folds
def blocked_folds(n: int, folds: int) -> list:
    """[(fit indices, validation indices)] of ``n`` runs in ``folds`` contiguous blocks (sizes differ by
    at most one, the larger first); each block and each fit set has at least two runs."""
    if folds < 2:
        raise UserError(f"--folds must be >= 2, got {folds}")
    if n < folds * MIN_RUNS_PER_BLOCK:
        raise UserError(f"{n} runs cannot make {folds} blocked folds of at least {MIN_RUNS_PER_BLOCK} runs "
                        f"each (W1/W2 need two runs a side): give more windows or fewer --folds")
    sizes = [n // folds + (1 if f < n % folds else 0) for f in range(folds)]
    edges = np.concatenate([[0], np.cumsum(sizes)])
    out = []
    for f in range(folds):
        val = list(range(int(edges[f]), int(edges[f + 1])))
        out.append(([i for i in range(n) if i not in val], val))
    return out


# ------------------------------------------------------------------------------------ the real side
@dataclass(frozen=True)
class FitSetup:
    """How the runs are judged and what the fitted pair is compared with (from a demo file)."""

    judge: Any                   # judge.config.JudgeConfig
    ground_truth_rate: float
    static_tfs_by_layout: bool
    presets: tuple               # ((name, gps spec, imu spec), ...): the compared presets
    seed: int = 0                # the runs' seed (judge timing, the validation draw)
    floor_draws: int = 4
    bootstrap: int = 1000
    permutations: int = 1000
    score_seed: int = 0
    t_b: float = 0.1             # calibrate --t-b of the start


def setup_from_demo(config) -> FitSetup:
    """A ``FitSetup`` of a ``demo.DemoConfig``: its judge, and its GPS study's presets with its IMU."""
    presets = tuple((name, name, config.gps_study_imu) for name in config.gps_variants)
    t_b = config.real_sample.t_b if config.real_sample is not None else 0.1
    return FitSetup(config.judge, config.ground_truth_rate, config.static_tfs_by_layout, presets, config.seed,
                    config.noise_floor_draws, config.bootstrap, config.permutations, config.score_seed, t_b)


def drive_runs(path, runs: str | None = None) -> list:
    """The runs (``runs.RealBag``) of an imported drive (or any folder of bags of one scenario), in order;
    ``runs`` "A:B" keeps runs A … B−1 (Python slice)."""
    bags = sorted(find_real_bags([path], what="DRIVE"), key=lambda b: (b.scenario, b.k))
    scenarios = sorted({b.scenario for b in bags})
    if len(scenarios) != 1:
        raise UserError(f"DRIVE {path}: runs of {len(scenarios)} scenarios ({', '.join(scenarios)}); "
                        "fit takes the windows of one drive (one scenario folder)")
    if runs:
        try:
            start, _, stop = runs.partition(":")
            chosen = bags[slice(int(start) if start else None, int(stop) if stop else None)]
        except ValueError:
            raise UserError(f"--runs {runs!r}: expected A:B (run indices, Python slice), e.g. 0:5") from None
        if not chosen:
            raise UserError(f"--runs {runs}: selects none of the {len(bags)} runs of {path}")
        bags = chosen
    return [dataclasses.replace(b, k=i) for i, b in enumerate(bags)]


def _joined(parts: list):
    """(data, truth, datum) of several windows of one drive joined in time order (calibrate --truth on
    them as on one recording; the gaps between non-adjacent blocks hold no samples)."""
    from ..calibrate.standstill import GpsSeries, ImuSeries, StandstillData

    parts = sorted(parts, key=lambda p: float(p[1].t[0]))
    datum = parts[0][2]
    moved = []
    for data, truth, own in parts:  # separate runs: each truth's ENU re-expressed at the first's datum
        if not np.allclose(own, datum, rtol=0, atol=1e-9):
            lat, lon, alt = enu_to_geodetic(truth.position, own)
            if float(np.max(np.abs(geodetic_to_enu(lat, lon, alt, datum)[:, :2]))) > 5e3:
                raise UserError(f"{data.source}: more than 5 km from the first run: fit takes runs of one "
                                "place (the ENU frames of runs far apart differ by a rotation)")
            truth = dataclasses.replace(truth, position=geodetic_to_enu(lat, lon, alt, datum))
        moved.append((data, truth, datum))
    parts = moved

    def cat(objects, name):
        return np.concatenate([getattr(o, name) for o in objects])

    truths = [p[1] for p in parts]
    t = cat(truths, "t")
    keep = np.concatenate([[True], np.diff(t) > 0])  # a window's first sample may repeat the last one
    truth = GroundTruth(**{name: cat(truths, name)[keep] for name in FIELDS})
    gps = [p[0].gps for p in parts]
    imu = [p[0].imu for p in parts]
    g = GpsSeries(*(cat(gps, n) for n in ("t", "latitude", "longitude", "altitude", "status", "covariance",
                                          "covariance_type")), sum(x.dropped for x in gps))
    i = ImuSeries(cat(imu, "t"), cat(imu, "gyro"), cat(imu, "accel"))
    first = parts[0][0]
    data = StandstillData(f"{Path(first.source).parent} ({len(parts)} runs)", first.gps_topic,
                          first.imu_topic, g, i, None, None, None)
    return data, truth, parts[0][2]


def _static_tfs(bag, setup: FitSetup) -> tuple:
    """The judge's static TFs for ``bag``: the demo file's, or (no static_tfs there) the bag's default as
    every replay gets it (the ART ones for a bag in the ART layout)."""
    if not setup.static_tfs_by_layout:
        return tuple(setup.judge.static_tfs)

    task = plan_replays([bag], (), setup.judge, real=False, static_tfs_by_layout=True)[0]
    return tuple(task.spec.judge.static_tfs)


def calibrate_runs(bags: list, setup: FitSetup):
    """``calibrate --truth`` on the windows ``bags`` joined (``_joined``)."""
    from ..calibrate.drive import DEFAULT_MIN_IMU_DURATION, calibrate_drive, read_drive

    parts = [read_drive(bag.path, static_tfs=_static_tfs(bag, setup)) for bag in bags]
    data, truth, datum = _joined(parts)
    imu_span = float(data.imu.t[-1] - data.imu.t[0]) if len(data.imu.t) else 0.0
    # the Allan analysis reads what the span allows; a fit window set is shorter than a standstill log
    return calibrate_drive(data, truth, datum, t_b=setup.t_b,
                           min_imu_duration=min(DEFAULT_MIN_IMU_DURATION, 0.5 * imu_span))


# ------------------------------------------------------------------------------------ trials
@dataclass(frozen=True)
class _Averaged:
    """What ``tune._evaluate`` reads of a scored study: the seeds' mean VEPD, W1, W2 as variant "tuned"."""

    combined: dict
    per_scenario: dict


@dataclass(frozen=True)
class FoldTrials(ReplayTrials):
    """``tune.ReplayTrials`` whose candidate is a point of ``PARAMS`` (``models["fit"]``) turned into a
    pair by ``build_pair``, replayed ``seeds`` times (variants ``fit_s<i>``: fixed streams, the same in
    every trial) and scored as the mean over the seeds."""

    start: FitStart = None
    seeds: int = DEFAULT_SEEDS
    static_tfs_by_layout: bool = False

    def _replay(self, replacements, real: bool, options) -> list:
        tasks = plan_replays(self.bags, replacements, self.judge, real=real, scoring=options, write=False,
                             seed=self.seed, ground_truth_rate=self.ground_truth_rate,
                             static_tfs_by_layout=self.static_tfs_by_layout)
        with tempfile.TemporaryDirectory(prefix="sim2real-tune-") as tmp:
            replayed = replay_bags(tasks, tmp, workers=1, progress=False, warn_health=False)
        replayed.raise_on_failure()
        return [run.record for run in replayed.scored]

    def score(self, models: dict, real_records, options):
        from ..replay.real_bag import Replacement

        pair = build_pair(self.start, models["fit"])
        names = [f"fit_s{i}" for i in range(self.seeds)]
        sims = self._replay(tuple(Replacement(dict(pair), name=n) for n in names), False, options)
        result = score_study(list(real_records) + sims, options)
        cells = [result.combined[n] for n in names]
        mean = {key: float(np.mean([c[key] for c in cells])) for key in ("VEPD", "W1", "W2")}
        per = {s: {"VEPD": float(np.mean([result.per_scenario[n][s]["VEPD"] for n in names]))}
               for s in result.per_scenario[names[0]]}
        return _Averaged({TUNE_VARIANT: mean}, {TUNE_VARIANT: per})


# ------------------------------------------------------------------------------------ validation
def _score_options(setup: FitSetup):
    return ScoreOptions(bootstrap=setup.bootstrap, permutations=setup.permutations, seed=setup.score_seed,
                        warmup_s=setup.judge.warmup_s, exclude_scenarios=()).validate()


def replay_pairs(bags: list, pairs: dict, setup: FitSetup, workers: int = 1) -> tuple:
    """(scored records, noise-floor draws) of ``pairs`` ({variant: {"gps": spec, "imu": spec}}) replayed
    on ``bags`` with their real runs, and the real runs judged ``setup.floor_draws`` more times with random
    judge timing (the judge-noise floor)."""
    from ..replay.real_bag import Replacement

    replacements = tuple(Replacement(dict(pair), name=name) for name, pair in pairs.items())
    tasks = plan_replays(bags, replacements, setup.judge, scoring=_score_options(setup), write=False,
                         floor_draws=setup.floor_draws, seed=setup.seed,
                         ground_truth_rate=setup.ground_truth_rate,
                         static_tfs_by_layout=setup.static_tfs_by_layout)
    with tempfile.TemporaryDirectory(prefix="sim2real-fit-") as tmp:
        replayed = replay_bags(tasks, tmp, workers=workers, progress=False, warn_health=False)
    replayed.raise_on_failure()
    return [run.record for run in replayed.scored], replayed.noise_floor_draws()


def score_pairs(records: list, draws: list, setup: FitSetup, fitted: str = FITTED):
    """The ``metrics.StudyResult`` of ``replay_pairs``'s records: intervals, permutation p, ``fitted``
    compared with every other variant (paired by window) and the judge-noise floor of these real runs."""
    names = sorted({r.variant for r in records if r.side != "real"})
    result = score_study(records, _score_options(setup), pairs=[(fitted, n) for n in names if n != fitted])
    if len(draws) >= 2:
        result.judge_noise_floor = judge_noise_floor(draws, result.variants, result.scenarios)
    return result


def result_table(result, fitted: str = FITTED) -> dict:
    """{"k", "floor": {VEPD, interval}, "variants": {name: {VEPD, VEPD_ci95, p, fitted_minus,
    fitted_minus_ci95, fitted_minus_p}}} of a ``score_pairs`` result (fitted − other, paired by window)."""
    floor = None
    if getattr(result, "judge_noise_floor", None):
        cell = next(iter(result.judge_noise_floor["combined"].values()))
        floor = {"VEPD": float(cell["VEPD"]), "interval": _floats(cell["VEPD_interval"])}
    variants = {}
    for name in result.variants:
        row = result.combined[name]
        stats = result.statistics.get("combined", {}).get(name, {})
        entry = {"VEPD": float(row["VEPD"]), "VEPD_ci95": _floats(row.get("VEPD_ci95")),
                 "p": stats.get("p_VEPD")}
        pair = separation.comparison(result, fitted, name) if name != fitted else None
        if pair is not None:
            difference, interval = float(pair["difference"]), _floats(pair.get("difference_ci95"))
            if pair["better"] == fitted:  # the entry holds worse − better ≥ 0; here fitted − other
                difference = -difference
                interval = None if interval is None else [-interval[1], -interval[0]]
            entry.update(fitted_minus=difference, fitted_minus_ci95=interval, fitted_minus_p=pair.get("p"))
        variants[name] = entry
    k = int(next(iter(result.combined.values())).get("n_real", 0) or 0) if result.combined else 0
    return {"k": k, "floor": floor, "variants": variants}


def _floats(values):
    return None if values is None else [float(v) for v in values]


# ------------------------------------------------------------------------------------ the fit
@dataclass
class FoldResult:
    index: int
    fit_runs: list
    validation_runs: list
    start: FitStart
    search: Any              # tune.TuneResult
    values: dict             # the fold's best parameter values (all PARAMS)
    validation: dict         # result_table of its block
    records: list = field(default_factory=list)   # its block's scored runs (metrics.RunRecord)
    draws: list = field(default_factory=list)     # its block's noise-floor draws
    points: dict = field(default_factory=dict)    # the enqueued first trials ({name: values}, in order)


@dataclass
class FitResult:
    drive: str
    runs: list               # run paths, in order
    folds: list              # FoldResult
    parameters: list         # per parameter: name, unit, fold values, fitted value, spread, identified
    pair: dict               # the fitted pair {"gps", "imu"}
    pooled: dict             # result_table of every window judged with the pair fitted without it
    budget: int
    seeds: int
    seed: int
    wall_seconds: float
    executor: str
    trials: list = field(default_factory=list)   # (fold, TrialResult)
    final: Any = None        # FoldResult of the refit on every run (no validation block)
    shortfall: Any = None    # calibrate.shortfall_stats.Shortfall of the fitted pair on every run


def _agreed(params: list, values: list):
    """The folds' common value of a parameter: the median (geometric on log ranges), on a categorical one
    the most frequent choice (the first fold's on a tie)."""
    if params[0].choices:
        return max(values, key=lambda v: (values.count(v), -values.index(v)))
    if params[0].log:
        return float(np.exp(np.median(np.log(values))))
    return float(np.median(values))


def summarise_parameters(folds: list, final=None) -> tuple:
    """(per-parameter rows, fitted values): the fold values, their median (geometric on log ranges; the
    most frequent choice on a categorical one), the spread (max − min) as a fraction of the search range,
    identified = spread ≤ ``SPREAD_LIMIT``.  The fitted value is ``final``'s (the refit on every run)
    when given, else the median."""
    rows, fitted = [], {}
    for i, name in enumerate(PARAMS):
        params = [fold.start.params[i] for fold in folds]
        values = [fold.values[name] if params[0].choices else float(fold.values[name]) for fold in folds]
        median = _agreed(params, values)
        positions = [p.position(v) for p, v in zip(params, values)]
        spread = float(max(positions) - min(positions))
        value = median if final is None else final.values[name]
        fitted[name] = value
        row = {"name": name, "unit": params[0].unit, "folds": values, "median_over_folds": median,
               "fitted": value, "start": [p.start for p in params],
               "range": [list(p.choices) if p.choices else [p.low, p.high] for p in params],
               "scale": "categorical" if params[0].choices else "log" if params[0].log else "linear",
               "spread_of_range": spread, "identified": spread <= SPREAD_LIMIT}
        if final is not None:
            p = final.start.params[i]
            row.update(refit_start=p.start, refit_range=list(p.choices) if p.choices else [p.low, p.high])
        rows.append(row)
    return rows, fitted


def _param_ranges(start: FitStart) -> tuple:
    return tuple(ParamRange(p.name, ("fit", p.name), p.low, p.high, p.log, p.choices) for p in start.params)


@dataclass
class Searched:
    """One search (a fold's fit runs, or every run for the final pair): its start, the points enqueued
    first, the search and its best values."""

    start: FitStart
    points: dict             # {START or preset name: values}, enqueued as trials 0 … n−1 in this order
    search: Any              # tune.TuneResult
    values: dict             # the best values (all PARAMS)


def search_runs(name: str, fit_bags: list, setup: FitSetup, budget: int, seeds: int, seed: int,
                storage: str | None, ray_address: str | None, workers: int, progress: bool,
                progress_label: str) -> Searched:
    """Calibrate on ``fit_bags``, map the presets into the searched families, widen the ranges to hold them,
    enqueue the start and the presets as the first trials, search (module docstring, 1–2)."""
    start = start_point(calibrate_runs(fit_bags, setup))
    mapped = {preset: preset_point(gps, imu, start) for preset, gps, imu in setup.presets}
    start = with_points(start, list(mapped.values()))
    points = {START: start.values, **{preset: clipped(start, v) for preset, v in mapped.items()}}
    options = ScoreOptions(bootstrap=0, permutations=0, warmup_s=setup.judge.warmup_s,
                           exclude_scenarios=()).validate()
    trials = FoldTrials(name, tuple(fit_bags), setup.judge, setup.seed, setup.ground_truth_rate,
                        start=start, seeds=seeds, static_tfs_by_layout=setup.static_tfs_by_layout)
    models = {"gps": start.gps, "imu": start.imu, "fit": start.values}
    context = TrialContext(trials, trials.scenarios, models, _param_ranges(start),
                           trials.real_records(options), OBJECTIVE_COMBINED, options)
    initial = tuple({f"fit.{k}": v for k, v in point.items()} for point in points.values())
    found = search(context, name, START, budget, storage=storage, ray_address=ray_address, workers=workers,
                   seed=seed, progress=progress, real_label=", ".join(b.path for b in fit_bags),
                   progress_label=progress_label, initial=initial)
    values = dict(start.values)
    values.update({key.split(".", 1)[1]: v if isinstance(v, str) else float(v)
                   for key, v in found.best.values.items()})
    return Searched(start, points, found, values)


def fit_fold(index: int, bags: list, fit_idx: list, val_idx: list, setup: FitSetup, budget: int, seeds: int,
             seed: int, storage: str | None, ray_address: str | None, workers: int,
             progress: bool) -> FoldResult:
    """One fold: calibrate on its fit runs, search there, validate on its block (module docstring)."""
    fit_bags = [bags[i] for i in fit_idx]
    found = search_runs(f"fit-fold{index}", fit_bags, setup, budget, seeds, seed + index, storage,
                        ray_address, workers, progress, f"fit, fold {index + 1}")
    pairs = compared_pairs(found.start, found.values, setup)
    records, draws = replay_pairs([bags[i] for i in val_idx], pairs, setup, workers)
    return FoldResult(index, [bags[i].path for i in fit_idx], [bags[i].path for i in val_idx], found.start,
                      found.search, found.values, result_table(score_pairs(records, draws, setup)), records,
                      draws, found.points)


def refit_all(bags: list, setup: FitSetup, budget: int, seeds: int, seed: int, storage: str | None,
              ray_address: str | None, workers: int, progress: bool, index: int) -> FoldResult:
    """The final search on every run given (module docstring, 4): no block is left to validate on."""
    found = search_runs("fit-all", list(bags), setup, budget, seeds, seed + index, storage, ray_address,
                        workers, progress, "fit, all runs")
    return FoldResult(index, [b.path for b in bags], [], found.start, found.search, found.values, {},
                      points=found.points)


def compared_pairs(start: FitStart, values: dict, setup: FitSetup) -> dict:
    """{variant: pair}: the fitted pair, the calibrated start and the presets compared with them."""
    pairs = {FITTED: build_pair(start, values), START: build_pair(start, start.values)}
    pairs.update({name: {"gps": gps, "imu": imu} for name, gps, imu in setup.presets})
    return pairs


def check_inputs(budget: int, seeds: int, seed: int, workers: int, storage) -> None:
    for value, name, low in ((budget, "--budget", 1), (seeds, "--seeds", 1), (seed, "--seed", 0),
                             (workers, "--workers", 1)):
        if value < low:
            raise UserError(f"{name} must be >= {low}, got {value}")
    if storage:
        check_storage(storage)


def fit(bags: list, setup: FitSetup, folds: int = DEFAULT_FOLDS, budget: int = DEFAULT_BUDGET,
        seeds: int = DEFAULT_SEEDS, seed: int = 0, storage: str | None = None, ray_address: str | None = None,
        workers: int = 1, progress: bool = True, drive: str = "") -> FitResult:
    """The cross-validated fit of ``bags`` (the drive's windows in order; module docstring)."""
    check_inputs(budget, seeds, seed, workers, storage)
    plan = blocked_folds(len(bags), folds)
    begin = time.perf_counter()
    results = []
    for index, (fit_idx, val_idx) in enumerate(plan):
        if progress:
            Console(stderr=True).print(f"fold {index + 1}/{len(plan)}: fit on runs {_spans(fit_idx)}, "
                                       f"validate on runs {_spans(val_idx)}")
        results.append(fit_fold(index, bags, fit_idx, val_idx, setup, budget, seeds, seed, storage,
                                ray_address, workers, progress))
    if progress:
        Console(stderr=True).print(f"final pair: fit on every run ({_spans(list(range(len(bags))))})")
    final = refit_all(bags, setup, budget, seeds, seed, storage, ray_address, workers, progress, len(plan))
    rows, fitted = summarise_parameters(results, final)
    pair = build_pair(final.start, fitted)
    pooled, pooled_study = _pooled(results, setup)
    gap = fitted_shortfall(bags, setup, pair, pooled_study, seed)
    trials = [(fold.index, t) for fold in results + [final] for t in fold.search.trials]
    return FitResult(drive, [b.path for b in bags], results, rows, pair, pooled, budget, seeds, seed,
                     time.perf_counter() - begin, results[0].search.executor, trials, final, gap)


def fitted_shortfall(bags: list, setup: FitSetup, pair: dict, pooled_study, seed: int):
    """``calibrate.shortfall`` of the fitted pair on every run given: the real sensors' error statistics
    against the pair's on the same truth, and the split of the cross-validated held-out VEPD (each run
    judged with the pair fitted without it)."""
    segments = [segment_from_bag(bag.path, static_tfs=_static_tfs(bag, setup)) for bag in bags]
    return error_statistics(segments, *described(pair), seed=seed, study=pooled_study, variant=FITTED)


def described(pair: dict) -> tuple:
    """(GPS spec, IMU spec) of the fitted pair, each with a description naming it (the shortfall's
    headings read a dict model's name from its description)."""
    return tuple({**pair[kind], "description": f"fitted {kind.upper()} (sim2real-eval fit)"}
                 for kind in ("gps", "imu"))


def _spans(indices: list) -> str:
    """[0, 1, 2, 5, 6] → "0–2, 5–6"."""
    parts, begin = [], None
    for i, value in enumerate(indices):
        if begin is None:
            begin = value
        if i == len(indices) - 1 or indices[i + 1] != value + 1:
            parts.append(f"{begin}" if begin == value else f"{begin}–{value}")
            begin = None
    return ", ".join(parts)


def _pooled(folds: list, setup: FitSetup) -> dict:
    """Every window judged with the pair its fold fitted without it (and the other variants), scored
    together: the cross-validated held-out VEPD, its interval, the presets paired, the floor (the
    table, and the scored study)."""
    records = [r for fold in folds for r in fold.records]
    draws = [[r for fold in folds for r in fold.draws[d]] for d in range(min(len(f.draws) for f in folds))]
    study = score_pairs(records, draws, setup)
    return result_table(study), study


# ------------------------------------------------------------------------------------ the demo's hook
def fitted_variant(bags: list, demo_config, budget: int = DEFAULT_BUDGET, seeds: int = DEFAULT_SEEDS,
                   folds: int = DEFAULT_FOLDS, seed: int = 0, progress: bool = True):
    """The demo's real sample: the pair ``fit`` makes of the held-out windows ``bags`` (the demo file's
    ``real_sample.fit``), as the GPS study's variant ``fitted`` (``replay.offline.Replacement``)."""
    from ..replay.real_bag import Replacement

    result = fit(bags, setup_from_demo(demo_config), folds=folds, budget=budget, seeds=seeds, seed=seed,
                 progress=progress, drive="held-out windows")
    held_out = result.pooled["variants"][FITTED]["VEPD"]
    how = (f"fitted together with the {{other}} by sim2real-eval fit on the held-out windows ({folds} "
           f"blocked folds, {budget} trials per search, {seeds} noise draws per trial; cross-validated "
           f"held-out VEPD {held_out:.4f}; docs/calibration.md, 'fit')")
    pair = {"gps": dict(result.pair["gps"], description="white + Gauss-Markov position error, "
                        + how.format(other="IMU")),
            "imu": dict(result.pair["imu"], description="Chrono drift model " + how.format(other="GPS"))}
    return Replacement(pair, name=FITTED)
