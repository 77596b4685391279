"""The files of ``tune``'s ``--out`` (``write_outputs``): the best presets (best_gps.yaml, best_imu.yaml), the
best study variant with the numbers (best.yaml, ``summary``), every trial (trials.csv) and the
convergence plot; also what the demo's real sample keeps of its tuning."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ..atomic import atomic_directory, atomic_file
from ..outputs import file_record, write_marker
from .tune import TUNE_VARIANT, TuneResult

COMMAND = "tune"  # in the marker of its --out (outputs.write_marker)
OUTPUT_FILES = ("best_gps.yaml", "best_imu.yaml", "best.yaml", "trials.csv", "convergence.png")  # in --out


def trials_csv(result: TuneResult) -> str:
    """number, state, VEPD, W1, W2, parameters, per-scenario VEPD, seconds, error — one row per trial."""
    from ..report.tables import csv_text

    scenarios = sorted({s for t in result.trials for s in t.per_scenario} | set(result.baseline.per_scenario))
    names = [r.full_name for r in result.ranges]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["trial", "state", "vepd", "w1", "w2", *names, *(f"vepd_{s}" for s in scenarios),
                     "seconds", "error"])

    def fmt(value):
        return "" if value is None else repr(float(value))

    base = result.baseline
    writer.writerow(["baseline", "complete", fmt(base.vepd), fmt(base.w1), fmt(base.w2), *([""] * len(names)),
                     *(fmt(base.per_scenario.get(s)) for s in scenarios), fmt(base.seconds), ""])
    for t in sorted(result.trials, key=lambda t: t.number):
        writer.writerow([t.number, "complete" if t.vepd is not None else "failed", fmt(t.vepd), fmt(t.w1),
                         fmt(t.w2), *(fmt(t.values.get(n)) for n in names),
                         *(fmt(t.per_scenario.get(s)) for s in scenarios), fmt(t.seconds),
                         csv_text(t.error or "")])
    return buffer.getvalue()


def summary(result: TuneResult) -> dict:
    base, best = result.baseline, result.best
    return {
        "study": result.study_name,
        "objective_baseline_vepd": base.vepd,
        "best_vepd": best.vepd,
        "improvement_factor": (base.vepd / best.vepd) if best.vepd else None,
        "best_trial": "baseline" if result.best_is_baseline else best.number,
        "best_params": {k: float(v) for k, v in best.values.items()},
        "best_w1": best.w1,
        "best_w2": best.w2,
        "trials": len(result.trials),
        "failed_trials": sum(1 for t in result.trials if t.vepd is None),
        "wall_seconds": round(result.wall_seconds, 3),
        "executor": result.executor,
        "parallel_trials": result.parallel,
        "params": [{"name": r.full_name, "low": r.low, "high": r.high, "log": r.log} for r in result.ranges],
    }


def convergence_plot(result: TuneResult, path) -> Path:
    """VEPD per trial, the running best, and the untuned baseline (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    trials = sorted((t for t in result.trials if t.vepd is not None), key=lambda t: t.number)
    numbers = np.array([t.number for t in trials])
    values = np.array([t.vepd for t in trials])
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot(numbers, values, "o", ms=4, alpha=0.6, label="trial VEPD")
    ax.step(numbers, np.minimum.accumulate(values), where="post", label="best so far")
    ax.axhline(result.baseline.vepd, color="C3", ls="--", label=f"untuned {result.baseline.vepd:.4g}")
    ax.set_xlabel("trial")
    ax.set_ylabel("VEPD")
    ax.set_yscale("log")
    which = "the untuned model" if result.best_is_baseline else f"trial {result.best.number}"
    ax.set_title(f"{result.study_name}: best {result.best.vepd:.4g} ({which})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    with atomic_file(Path(path), "wb") as stream:
        fig.savefig(stream, format="png", dpi=110)
    plt.close(fig)
    return Path(path)


def write_outputs(result: TuneResult, out, overwrite: bool = False, marker: bool = True) -> Path:
    """OUT/: best_gps.yaml, best_imu.yaml (presets for load_*_model), best.yaml (a study variant plus
    the numbers), trials.csv, convergence.png — built in a temporary sibling, renamed on success.
    ``marker``: tune's output marker (False inside another command's output: the demo's real sample)."""
    from ..yamlio import dump_yaml

    with atomic_directory(out, overwrite=overwrite) as tmp:
        tmp.mkdir()
        (tmp / "best_gps.yaml").write_text(dump_yaml(result.best_models["gps"]), encoding="utf-8")
        (tmp / "best_imu.yaml").write_text(dump_yaml(result.best_models["imu"]), encoding="utf-8")
        best = {"variants": {TUNE_VARIANT: result.best_models}, "tune": summary(result)}
        (tmp / "best.yaml").write_text(dump_yaml(best), encoding="utf-8")
        (tmp / "trials.csv").write_text(trials_csv(result), encoding="utf-8")
        convergence_plot(result, tmp / "convergence.png")
        if marker:  # a later tune with this --out replaces it (an earlier tune output, recognised by it)
            write_marker(tmp, COMMAND, {name: file_record(tmp / name) for name in OUTPUT_FILES})
    return Path(out)
