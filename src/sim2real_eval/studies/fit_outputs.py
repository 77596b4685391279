"""What ``fit`` writes and prints (``studies.fit``; docs/calibration.md, "fit"): OUT/ with the fitted
presets fit_gps.yaml and fit_imu.yaml (provenance in their description and header), fit.yaml (the whole
record: parameters per fold, held-out VEPD, the refit, the shortfall, the pair), trials.csv (every trial
of every search) and the fitted pair's shortfall.png/.md/.json, all or nothing; and the summary lines
the command prints."""
from __future__ import annotations

import csv
import datetime
import io
from pathlib import Path

import numpy as np

from ..atomic import atomic_directory
from ..calibrate.shortfall import shortfall_writers, verdict_lines
from ..outputs import file_record, write_marker
from .fit import DESIGN, FITTED, SPREAD_LIMIT, FitResult
from .fit_params import PARAMS

COMMAND = "fit"
OUTPUT_FILES = ("fit_gps.yaml", "fit_imu.yaml", "fit.yaml", "trials.csv", "shortfall.png", "shortfall.md",
                "shortfall.json")


def provenance(result: FitResult) -> dict:
    """Where the fitted pair comes from: drive, runs, folds, budget, seeds, seed, software, date."""
    from ..report.provenance import software

    return {"command": "sim2real-eval fit", "drive": result.drive, "runs": list(result.runs),
            "folds": [{"fit": fold.fit_runs, "validation": fold.validation_runs} for fold in result.folds],
            "budget_per_fold": result.budget, "seeds_per_trial": result.seeds, "sampler_seed": result.seed,
            "software": software(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _preset_text(kind: str, pair: dict, record: dict, result: FitResult) -> str:
    """A preset file gps_noise_node / imu_noise_node / sensors.launch.py load as it is, provenance in
    its description and in a comment header."""
    from ..yamlio import dump_yaml

    software = record["software"]
    held = result.pooled["variants"].get(FITTED, {})
    description = (f"{kind.upper()} half of the pair fitted by sim2real-eval fit to {result.drive} "
                   f"({len(result.runs)} runs, {len(result.folds)} blocked folds, {result.budget} trials per "
                   f"fold, {result.seeds} seeds per trial, sampler seed {result.seed}; cross-validated "
                   f"held-out VEPD {held.get('VEPD', float('nan')):.4f}); sim2real-eval {software['version']}"
                   f"{' commit ' + software['commit'][:12] if software.get('commit') else ''}, "
                   f"{record['date_utc']}")
    spec = {"description": description, **pair[kind]}
    header = [f"# Fitted by sim2real-eval fit ({record['date_utc']}): {result.drive}",
              f"# runs: {len(result.runs)}; folds: {len(result.folds)} (blocked); budget: {result.budget} "
              f"trials per fold; seeds per trial: {result.seeds}; sampler seed: {result.seed}",
              f"# sim2real-eval {software['version']}, commit {software.get('commit') or 'unknown'}; "
              "the whole record is in fit.yaml beside this file"]
    return "\n".join(header) + "\n" + dump_yaml(_plain(spec))


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def record(result: FitResult, record_provenance: dict | None = None) -> dict:
    """fit.yaml: provenance, the parameters (per fold, fitted, spread, identified), the held-out VEPD per
    fold and pooled against the presets and the floor, the fitted pair."""
    return _plain({
        "provenance": record_provenance or provenance(result),
        "design": DESIGN,
        "identification_rule": (f"a parameter is not identified by this data when its fold values spread "
                                f"over more than {SPREAD_LIMIT:g} of its search range (log10 scale on log "
                                "ranges; a categorical one: the folds chose differently)"),
        "parameters": result.parameters,
        "initial_trials": list(result.folds[0].points),
        "folds": [{"fold": fold.index + 1, "fit_runs": fold.fit_runs, "validation_runs": fold.validation_runs,
                   "search": _search_record(fold.search),
                   "values": fold.values, "held_out": fold.validation} for fold in result.folds],
        "held_out_pooled": result.pooled,
        "refit": None if result.final is None else {
            "fit_runs": result.final.fit_runs, "search": _search_record(result.final.search),
            "values": result.final.values},
        "shortfall": None if result.shortfall is None else shortfall_record(result.shortfall),
        "wall_seconds": round(result.wall_seconds, 1), "executor": result.executor,
        "pair": result.pair,
    })


def _search_record(found) -> dict:
    return {"start_vepd": found.baseline.vepd, "best_vepd": found.best.vepd, "trials": len(found.trials),
            "best_trial": "start" if found.best_is_baseline else found.best.number}


def trials_csv(result: FitResult) -> str:
    """fold, trial, state, VEPD (mean over the seeds), W1, W2, parameters, seconds, error."""

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["fold", "trial", "state", "vepd", "w1", "w2", *PARAMS, "seconds", "enqueued", "error"])

    def fmt(value):
        return "" if value is None else value if isinstance(value, str) else repr(float(value))

    searches = list(result.folds) + ([result.final] if result.final is not None else [])
    for fold in searches:
        label = "all" if fold is result.final else fold.index + 1
        base = fold.search.baseline
        enqueued = list(fold.points)
        writer.writerow([label, "start", "complete", fmt(base.vepd), fmt(base.w1), fmt(base.w2),
                         *(fmt(fold.start.values[n]) for n in PARAMS), fmt(base.seconds), "", ""])
        for t in sorted(fold.search.trials, key=lambda t: t.number):
            values = {k.split(".", 1)[1]: v for k, v in t.values.items()}
            state = "complete" if t.vepd is not None else "failed"
            writer.writerow([label, t.number, state, fmt(t.vepd), fmt(t.w1), fmt(t.w2),
                             *(fmt(values.get(n)) for n in PARAMS), fmt(t.seconds),
                             enqueued[t.number] if t.number < len(enqueued) else "",
                             (t.error or "").replace("\n", " ")])
    return buffer.getvalue()


def write_outputs(result: FitResult, out, overwrite: bool = False) -> Path:
    """OUT/: fit_gps.yaml, fit_imu.yaml (presets), fit.yaml (the record), trials.csv, shortfall.png/.md/.json
    (the fitted pair's error statistics against the real sensors) — built in a temporary sibling and
    renamed on success, with fit's marker."""
    from ..yamlio import dump_yaml

    prov = provenance(result)
    with atomic_directory(out, overwrite=overwrite) as tmp:
        tmp.mkdir()
        (tmp / "fit_gps.yaml").write_text(_preset_text("gps", result.pair, prov, result), encoding="utf-8")
        (tmp / "fit_imu.yaml").write_text(_preset_text("imu", result.pair, prov, result), encoding="utf-8")
        (tmp / "fit.yaml").write_text(dump_yaml(record(result, prov)), encoding="utf-8")
        (tmp / "trials.csv").write_text(trials_csv(result), encoding="utf-8")
        if result.shortfall is not None:
            for path, write in shortfall_writers(result.shortfall, tmp).items():
                write(tmp / path.name)
        write_marker(tmp, COMMAND, {name: file_record(tmp / name) for name in OUTPUT_FILES
                                    if (tmp / name).exists()})
    return Path(out)


def _ci(interval) -> str:
    return "–" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]"


def table_lines(table: dict, indent: str = "  ") -> list:
    lines = []
    floor = table.get("floor")
    if floor:
        lines.append(f"{indent}judge-noise floor {floor['VEPD']:.4f} [{floor['interval'][0]:.4f}, "
                     f"{floor['interval'][1]:.4f}] (mean [range] over pairs of timing draws)")
    ordered = sorted(table["variants"].items(), key=lambda item: (item[0] != FITTED, item[1]["VEPD"]))
    for name, cell in ordered:
        line = f"{indent}{name:<18} VEPD {cell['VEPD']:.4f} {_ci(cell['VEPD_ci95'])}"
        if "fitted_minus" in cell:
            p = cell.get("fitted_minus_p")
            line += (f"   fitted − this {cell['fitted_minus']:+.4f} {_ci(cell['fitted_minus_ci95'])}"
                     f"{'' if p is None else f' p {p:.3g}'}")
        lines.append(line)
    return lines


def summary_lines(result: FitResult) -> list:
    """What ``fit`` prints: the folds' held-out VEPD against the presets and the floor, the pooled
    (cross-validated) one, each parameter with its spread and whether the folds agree on it."""
    lines = [f"fit: {len(result.runs)} runs of {result.drive}, {len(result.folds)} blocked folds, "
             f"{result.budget} trials per fold, {result.seeds} seeds per trial, seed {result.seed} "
             f"({result.wall_seconds:.0f} s, {result.executor})"]
    for fold in result.folds:
        search = fold.search
        lines.append(f"fold {fold.index + 1}: validate on {len(fold.validation_runs)} runs (search on "
                     f"{len(fold.fit_runs)}: start {search.baseline.vepd:.4f} → best {search.best.vepd:.4f})")
        lines += table_lines(fold.validation)
    lines.append(f"held out, every fold (K = {result.pooled['k']}: each run judged with the pair fitted "
                 "without it):")
    lines += table_lines(result.pooled)
    if result.final is not None:
        search = result.final.search
        lines.append(f"final pair: searched on all {len(result.final.fit_runs)} runs (start "
                     f"{search.baseline.vepd:.4f} → best {search.best.vepd:.4f}, in-sample; the held-out "
                     "estimate is the table above)")
    lines.append(f"parameters (fitted: the final search's; spread = fold max − min as a fraction of the "
                 f"search range; > {SPREAD_LIMIT:g}: not identified by this data):")
    for row in result.parameters:
        folds = ", ".join(_value(v) for v in row["folds"])
        verdict = "identified" if row["identified"] else "not identified by this data"
        lines.append(f"  {row['name']:<24} {_value(row['fitted'])} {row['unit']}  folds [{folds}]  spread "
                     f"{row['spread_of_range']:.2f}  {verdict}")
    if result.shortfall is not None:
        lines += shortfall_lines(result.shortfall)
    return lines


def _value(value) -> str:
    return value if isinstance(value, str) else f"{value:.4g}"


def shortfall_record(gap) -> dict:
    """fit.yaml's "shortfall": what the fitted families miss, per axis, and the held-out VEPD split."""
    return {"files": ["shortfall.md", "shortfall.json", "shortfall.png"], "vepd": gap.vepd,
            "differs": gap.differing(), "verdict": verdict_lines(gap), "gps": gap.summary["gps"],
            "imu": gap.summary["imu"]}


def shortfall_lines(gap) -> list:
    """What ``fit`` prints of the shortfall: the held-out VEPD split and each axis the pair misses."""
    split = gap.vepd or {}
    lines = []
    if split:
        rmse = split.get("mean_rmse_m_s") or {}
        lines.append(f"what the fitted families miss (shortfall.md; held-out VEPD {split['VEPD']:.4f} = W1/2 "
                     f"{split['W1_half']:.4f} + W2/2 {split['W2_half']:.4f}"
                     + (f"; mean per-run speed RMSE real {rmse['real']:.3f} vs fitted {rmse['sim']:.3f} m/s"
                        if rmse else "") + "):")
    verdicts = [f"  {line}" for line in verdict_lines(gap)] or ["  nothing beyond the stated factor"]
    return lines + verdicts
