"""The real sample (issue 18): the paper's study on the real car drive shipped in ``bags/real/comma2k19``,
end to end from its raw numpy arrays — ``sim2real-eval demo --real-sample`` (docs/demo.md, "The real
sample"; the choices are the ``real_sample:`` section of ``config/studies/demo_car.yaml``, parsed
with the rest of the demo file by ``config.load_demo_config``).

``prepare`` turns the segment into what the demo judges, before any run:

1. **Import** (``importer``): the drive cut into back-to-back windows of ``window_s`` into
   ``OUT/imported/windows/<scenario>/run_<kk>/``, with the receiver covariance ``fix_covariance``; the
   same windows again at each ``sensitivity`` multiple of it (``OUT/imported/fix_sigma_x<m>``) and,
   with ``pseudorange_policy``, with the importer's own default for comma2k19
   (``OUT/imported/pseudorange``); and the held-out span — the first ``held_out_windows`` windows — as
   one run (``OUT/imported/held_out``).
2. **Held out**: windows ``0 … held_out_windows − 1`` are used only to fit; the rest are the study's
   real runs (K = their number).  Nothing fitted ever sees a scored window.
3. **Calibrated variants** (``calibrate --truth`` on the held-out run, ``calibrate.drive``): the GPS
   preset (Gauss–Markov error, stamp lag and jitter, the receiver's covariance) with the GPS study's
   IMU → variant ``calibrated`` of the GPS study; the IMU preset (the IMU − truth residual as Chrono
   drift noise) → variant ``sim_imu-calibrated`` of the IMU study.
4. **Tuned variant** (``tune.tune_replay`` on the held-out windows): the search starts from
   ``tune.variant`` (with the GPS study's IMU) and minimises its VEPD against the held-out windows' real
   runs; its best model → variant ``tuned`` of the GPS study.

The demo then judges and scores the evaluated windows as for any real bags, and the whole study once
more on each sensitivity import (``sensitivity_bags``); ``section`` renders what the report says about
it: which models the judge-noise floor cannot tell from this real receiver and IMU, calibrated and tuned
against untuned, the covariance sensitivity.
"""
from __future__ import annotations

import dataclasses
import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..importer import SIDECAR, shipped_comma2k19
from ..importer.comma2k19 import read_segment
from ..importer.drive import write_runs
from ..metrics import separation
from ..resources import share_dir
from ..runs import RealBag
from ..yamlio import load_yaml
from .config import DemoConfig, RealSampleConfig
from .fit import fitted_variant
from .tune import tune_replay
from .tune_outputs import summary

IMPORTED = "imported"                 # OUT/imported: the imported windows (real bags), written by the demo
CALIBRATED, TUNED, CALIBRATED_IMU = "calibrated", "tuned", "sim_imu-calibrated"
FITTED = "fitted"                     # studies.fit.FITTED: `fit`'s pair of the held-out windows (issue 31)
PSEUDORANGE = "pseudorange"
HELD_OUT, WINDOWS = "held_out", "windows"


@dataclass
class Prepared:
    """What ``prepare`` made of the segment (see the module docstring)."""

    config: RealSampleConfig
    segment: str
    bags: dict                # {scenario: [bag paths]}: the evaluated windows (the study's real runs)
    held_out: list            # the held-out windows' bag paths (tune's real runs)
    sensitivity_bags: dict    # {label: {scenario: [bag paths]}}: the evaluated windows, other covariances
    sensitivity_sigma: dict   # {label: median horizontal fix σ (m)} of every import, the main one included
    calibration: Any          # calibrate.drive.DriveCalibration (held-out run)
    tuned: Any                # tune.TuneResult (held-out windows)
    gps_variants: tuple       # replay.offline.Replacement: calibrated, tuned (GPS study)
    imu_variants: tuple       # replay.offline.Replacement: sim_imu-calibrated (IMU study)
    windows: list             # [(run name, start s, end s, "held out" | "scored")] from the drive's start
    warmup_s: float = 0.0     # the judge's warm-up (seconds of every run not scored)

    @property
    def main_label(self) -> str:
        return scale_label(1.0)


def scale_label(scale: float) -> str:
    return f"{scale:g}×"


def _is_import(path: Path) -> bool:
    """``path`` is a folder ``sim2real-eval import`` wrote (its import.yaml lists runs)."""
    summary = path / SIDECAR
    if path.is_symlink() or not summary.is_file():
        return False
    try:
        return isinstance(load_yaml(summary), dict) and "runs" in load_yaml(summary)
    except UserError:
        return False


def _write(path: Path, drive, offset: int, scenario: str, window: float, stride: float | None = None):
    """One import (``importer.drive.write_runs``) into ``path``, replacing an earlier one the demo wrote;
    anything else there is refused."""
    if os.path.lexists(path) and not _is_import(path):
        raise UserError(f"{path}: not an import the demo wrote; move it away (the demo writes its imported "
                        f"windows in {path.parent})")
    return write_runs([drive], path, scenario, window, stride, overwrite=True, epoch_offsets_ns=[offset])


def _scaled(drive, scale: float):
    """The drive with its fix covariance's σ multiplied by ``scale`` (``--fix-covariance-scale``)."""
    covariance = dataclasses.replace(drive.fixes.covariance, scale=drive.fixes.covariance.scale * scale)
    fixes = dataclasses.replace(drive.fixes, covariance=covariance)
    return dataclasses.replace(drive, fixes=fixes, record=dict(drive.record, gnss=covariance.record()))


def _median_sigma(drive) -> float:
    covariance = drive.fixes.covariance
    return float(np.median(covariance.sigma[:, 0]) * covariance.scale)


def import_windows(config: RealSampleConfig, out: Path) -> tuple:
    """Step 1 (module docstring): (windows ImportResult, held-out ImportResult, {label: ImportResult},
    {label: median σ}, segment path)."""
    segment = Path(config.segment) if config.segment else shipped_comma2k19()
    root = out / IMPORTED
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise UserError(f"--out {out}: {IMPORTED}: not a folder of the demo's (the demo writes its imported "
                        "windows there)")
    root.mkdir(exist_ok=True)
    drive, offset = read_segment(segment, config.fix_covariance, 1.0, config.estimate_mounting)
    windows = _write(root / WINDOWS, drive, offset, config.scenario, config.window_s)
    if len(windows.runs) < config.held_out_windows + 2:
        raise UserError(f"{config.source}: real_sample: {len(windows.runs)} windows of "
                        f"{config.window_s:g} s; held_out_windows {config.held_out_windows} leaves fewer "
                        "than 2 to score")
    span = config.held_out_windows * config.window_s
    # one run: the held-out span (a stride longer than the drive cuts no second window)
    held_out = _write(root / HELD_OUT, drive, offset, config.scenario, span, stride=span + 1e6)
    others, sigma = {}, {scale_label(1.0): _median_sigma(drive)}
    for scale in config.sensitivity:
        scaled = _scaled(drive, scale)
        others[scale_label(scale)] = _write(root / f"fix_sigma_x{scale:g}", scaled, offset, config.scenario,
                                            config.window_s)
        sigma[scale_label(scale)] = _median_sigma(scaled)
    if config.pseudorange_policy:
        default, default_offset = read_segment(segment, None, 1.0, config.estimate_mounting)
        others[PSEUDORANGE] = _write(root / PSEUDORANGE, default, default_offset, config.scenario,
                                     config.window_s)
        sigma[PSEUDORANGE] = _median_sigma(default)
    return windows, held_out, others, sigma, segment


def held_out_span(config: RealSampleConfig) -> str:
    """The held-out windows as a span of the drive, e.g. "0–25 s"."""
    return f"0–{config.held_out_windows * config.window_s:g} s"


def _evaluated(result, held_out_windows: int) -> list:
    return [run.path for run in result.runs[held_out_windows:]]


def prepare(demo_config: DemoConfig, out: Path, progress: bool = True) -> Prepared:
    """Steps 1–4 of the module docstring on ``demo_config.real_sample``; the rest of the demo file gives
    the judge, the GPS study's IMU and the truth's rate."""
    from ..calibrate.drive import calibrate_drive, read_drive
    from ..replay.real_bag import Replacement

    config = demo_config.real_sample
    windows, held_out_run, others, sigma, segment = import_windows(config, out)
    n = config.held_out_windows
    held_out = [run.path for run in windows.runs[:n]]
    data, truth, datum = read_drive(held_out_run.runs[0].path)
    calibration = calibrate_drive(data, truth, datum, t_b=config.t_b,
                                  min_imu_duration=config.min_imu_duration)
    imu = demo_config.gps_study_imu
    tuned = tune_replay([RealBag(path, config.scenario, k) for k, path in enumerate(held_out)],
                        demo_config.judge, {"gps": config.tune_variant, "imu": imu}, config.tune_params,
                        budget=config.tune_budget, name=TUNED, seed=config.tune_seed,
                        ground_truth_rate=demo_config.ground_truth_rate, progress=progress)
    found = ", ".join(f"{name} = {value:.4g}" for name, value in tuned.best.values.items()) or "none better"
    tuned_gps = dict(tuned.best_models["gps"], description=(
        f"{config.tune_variant} tuned on the held-out windows {held_out_span(config)} "
        f"(tune, {config.tune_budget} trials, {config.tune_params}): {found}"))
    gps_variants = (Replacement({"gps": calibration.gps_preset, "imu": imu}, name=CALIBRATED),
                    Replacement({"gps": tuned_gps, "imu": tuned.best_models["imu"]}, name=TUNED))
    imu_variants = (Replacement({"imu": calibration.imu_preset}, name=CALIBRATED_IMU),)
    # issue 31: fit's GPS + IMU pair of the held-out windows, one more GPS study variant ("fitted")
    gps_variants += (fitted_variant([RealBag(p, config.scenario, k) for k, p in enumerate(held_out)],
                                    demo_config, *config.fit, progress=progress),)
    spans = [(Path(run.path).name, run.start_s - windows.runs[0].start_s, run.end_s - windows.runs[0].start_s,
              "held out" if k < n else "scored") for k, run in enumerate(windows.runs)]
    return Prepared(config, str(segment), {config.scenario: _evaluated(windows, n)}, held_out,
                    {label: {config.scenario: _evaluated(result, n)} for label, result in others.items()},
                    sigma, calibration, tuned, gps_variants, imu_variants, spans, demo_config.judge.warmup_s)


# ------------------------------------------------------------------------------------- record
def record(prepared: Prepared) -> dict:
    """What demo.json and ``OUT/real_sample/real_sample.json`` keep of the preparation (what
    ``design_lines`` and ``console_lines`` read)."""
    config = prepared.config
    cal = prepared.calibration.report
    return {
        "segment": display_path(prepared.segment), "scenario": config.scenario, "window_s": config.window_s,
        "windows": [{"run": name, "span_s": [round(lo, 3), round(hi, 3)], "use": use}
                    for name, lo, hi, use in prepared.windows],
        "held_out_windows": config.held_out_windows,
        "k": sum(len(paths) for paths in prepared.bags.values()), "warmup_s": prepared.warmup_s,
        "fix_covariance_m": config.fix_covariance, "fix_sigma_median_m": prepared.sensitivity_sigma,
        "calibration": {"gps": cal["gps"], "imu": cal["imu"],
                        "presets": {"gps": prepared.calibration.gps_preset,
                                    "imu": prepared.calibration.imu_preset}},
        "tune": dict(summary(prepared.tuned), base=config.tune_variant, params_text=config.tune_params,
                     held_out_windows=config.held_out_windows, best_models=prepared.tuned.best_models),
        "fit": {variant.name: variant.replace["gps"].get("description", "")
                for variant in prepared.gps_variants if variant.name == FITTED},
    }


def display_path(path) -> str:
    """A path inside this installation's share directory relative to it (``bags/real/…``), else as is."""
    try:
        return Path(path).resolve().relative_to(share_dir().resolve()).as_posix()
    except ValueError:
        return str(path)


# ----------------------------------------------------------------------------------- verdicts
def verdict(result, variant: str) -> tuple:
    """(short verdict, explanation) of one variant against the real runs: not above the judge-noise floor
    (the floor cannot tell it from the real sensor), above it with p < 0.05 (measurably farther), or
    above it without a significant p."""
    cell = result.statistics.get("combined", {}).get(variant, {})
    p, limit = cell.get("p_VEPD"), separation.floor_threshold(result, variant)
    vepd = separation.vepd_of(result, variant)
    if limit is None:
        return "floor not measured", "without a judge-noise floor nothing can be said about closeness"
    if vepd <= limit:
        return "≤ floor", (f"VEPD {vepd:.4f} is not above the judge-noise floor {limit:.4f}: as close to the "
                           "real sensors as judge timing alone lets one tell")
    if p is not None and p < separation.ALPHA:
        return "farther than the floor", (f"VEPD {vepd:.4f} is above the floor {limit:.4f} and p = {p:.3g} < "
                                          f"{separation.ALPHA}: measurably farther from the real sensors")
    return "above the floor, p ≥ 0.05", (f"VEPD {vepd:.4f} is above the floor {limit:.4f}, but p = "
                                         f"{'n/a' if p is None else f'{p:.3g}'}: not shown to differ from "
                                         "the real sensors")


def verdict_rows(studies: list) -> list:
    """[[study, variant, VEPD, 95 % CI, p, floor, verdict, group]] of every variant of every (name, result);
    group: the variant's letters within its study (``separation.group_letters``)."""
    from ..report.tables import fmt_p

    rows = []
    for name, result in studies:
        letters = separation.group_letters(result)
        for variant in separation.order(result):
            row = result.combined[variant]
            cell = result.statistics.get("combined", {}).get(variant, {})
            limit = separation.floor_threshold(result, variant)
            rows.append([name, variant, f"{row['VEPD']:.4f}", _ci(row.get("VEPD_ci95")),
                         fmt_p(cell.get("p_VEPD"), result.options.permutations),
                         "–" if limit is None else f"{limit:.4f}", verdict(result, variant)[0],
                         letters[variant]])
    return rows


def comparison_rows(result, variants=(CALIBRATED, TUNED, FITTED)) -> list:
    """[[fitted, other, VEPD fitted, VEPD other, difference, 95 % CI, p, separable?]] of every compared
    pair that involves a fitted variant (``variants``)."""
    from ..report.tables import fmt_p

    rows = []
    for entry in separation.comparisons(result):
        pair = {entry["better"], entry["worse"]}
        fitted = [v for v in variants if v in pair]
        if not fitted:
            continue
        mine = fitted[0]
        other = entry["worse"] if entry["better"] == mine else entry["better"]
        separable, reason = separation.verdict(result, entry)
        # entry: d = VEPD(worse) − VEPD(better) ≥ 0 and its interval; here: the fitted one's minus the other's
        difference, interval = entry["difference"], entry.get("difference_ci95")
        if entry["better"] == mine:
            difference, interval = -difference, None if interval is None else [-interval[1], -interval[0]]
        verdict_text = _separable_text(result, entry, separable, reason)
        rows.append([mine, other, f"{separation.vepd_of(result, mine):.4f}",
                     f"{separation.vepd_of(result, other):.4f}", f"{difference:+.4f}", _ci(interval),
                     fmt_p(entry.get("p"), result.options.permutations), verdict_text])
    return sorted(rows, key=lambda row: (row[0], float(row[4])))


def _separable_text(result, entry: dict, separable, reason: str) -> str:
    """"yes", or "no" with every criterion of ``metrics.separation.RULE`` that stands in the way
    (``metrics.separation.verdict`` decides)."""
    if separable is None:
        return reason
    if separable:
        return "yes"
    interval, limit = entry.get("difference_ci95"), separation.floor_threshold(result, entry["worse"])
    why = []
    if interval is not None and not interval[0] > 0:
        why.append("CI includes 0")
    if entry.get("p") is not None and not entry["p"] < separation.ALPHA:
        why.append(f"p ≥ {separation.ALPHA}")
    if limit is not None and not entry["difference"] > limit:
        why.append("≤ floor")
    return "no (" + ", ".join(why) + ")"


def _ci(interval) -> str:
    return "–" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]"


STUDY_NAMES = {"gps_study": "GPS study", "imu_study": "IMU study"}
VERDICT_HEADER = ["study", "variant", "VEPD", "95 % CI", "p (perm.)", "floor (upper end)", "verdict", "group"]
COMPARISON_HEADER = ["fitted", "against", "VEPD fitted", "VEPD other", "fitted − other", "95 % CI (paired)",
                     "p (perm.)", "separable?"]


def sensitivity_rows(sensitivity: dict) -> tuple:
    """(header, rows) of the covariance sensitivity: per variant the VEPD (≤ floor marked) for each
    import, the floor's range last."""
    labels = list(sensitivity)
    header = ["study", "variant"] + [
        f"{label} (σ {sensitivity[label]['sigma_m']:.2g} m)" if label != PSEUDORANGE
        else f"pseudorange σ (median {sensitivity[label]['sigma_m']:.2g} m)" for label in labels]
    rows, floors = [], {}
    main = sensitivity.get(scale_label(1.0), sensitivity[labels[0]])
    for study in ("gps_study", "imu_study"):
        for variant in sorted(main[study], key=lambda v: (main[study][v]["VEPD"], v)):
            cells = []
            for label in labels:
                cell = sensitivity[label][study].get(variant)
                mark = " ≤ floor" if cell is not None and cell["below_floor"] else ""
                cells.append("–" if cell is None else f"{cell['VEPD']:.4f}{mark}")
            rows.append([STUDY_NAMES[study], variant, *cells])
        floors[study] = [sensitivity[label]["floor"].get(study) for label in labels]
    for study, values in floors.items():
        rows.append([STUDY_NAMES[study], "judge-noise floor",
                     *["–" if v is None else _ci(v["VEPD_interval"]) for v in values]])
    return header, rows


# ------------------------------------------------------------------------------------ rendering
def section_markdown(record: dict, gps, imu, sensitivity: dict) -> str:
    """The real sample's part of tables.md (``section_html`` says the same on the page)."""
    from ..report.tables import markdown_table

    header, rows = sensitivity_rows(sensitivity)
    lines = ["", "## The real sample: comma2k19, a real car", "", *design_lines(record), "",
             "### Which models the judge-noise floor cannot tell from the real receiver and IMU", "",
             markdown_table(VERDICT_HEADER, verdict_rows([("GPS study", gps), ("IMU study", imu)])), "",
             "### Calibrated and tuned against the untuned variants (evaluated windows only)", "",
             markdown_table(COMPARISON_HEADER, fitted_rows(gps, imu)),
             "", rule_note(gps) + "  ",
             "", "### Sensitivity to the receiver covariance (the whole study per import)", "",
             markdown_table(header, rows), ""]
    return "\n".join(lines)


def design_lines(record: dict) -> list:
    """What the real side is and how it was used, one markdown bullet each (from ``record``)."""
    cal, tune = record["calibration"], record["tune"]
    scored = [w for w in record["windows"] if w["use"] == "scored"]
    held = [w for w in record["windows"] if w["use"] == "held out"]
    gps = cal["gps"]
    best = ", ".join(f"{name} = {value:.4g}" for name, value in tune["best_params"].items()) \
        or "none better than the untuned model"
    sigma = record["fix_covariance_m"]
    return [
        f"- Data: {record['segment']} (comma2k19, MIT licence: a car on a highway, its real u-blox fixes "
        "and phone IMU, comma's post-processed pose as the ground truth), imported from its raw arrays.",
        f"- Windows: {len(record['windows'])} back-to-back windows of {record['window_s']:g} s; "
        f"{held[0]['run']}–{held[-1]['run']} ({held[0]['span_s'][0]:.0f}–{held[-1]['span_s'][1]:.0f} s of "
        "the drive) are held out for calibration and tuning, "
        f"{scored[0]['run']}–{scored[-1]['run']} ({scored[0]['span_s'][0]:.0f}–{scored[-1]['span_s'][1]:.0f}"
        f" s) are the real runs scored (K = {len(scored)}).  Windows stand in for repeats of one manoeuvre; "
        "neighbours share the receiver's slowly varying error, so the intervals are on the optimistic side.",
        f"- Receiver covariance: σ = {sigma:g} m horizontal, {2 * sigma:g} m vertical (the fix logs no "
        "accuracy: docs/demo.md, \"The real sample\").  Judge: the car template, started from the truth at "
        f"each window's start; the first {record['warmup_s']:g} s of every run are not scored.",
        f"- Calibrated (calibrate --truth on the held-out {gps['duration_s']:.0f} s): stamp lag "
        f"{gps['stamp_lag_s'] * 1e3:.0f} ms, jitter ±{gps['stamp_jitter_half_width_s'] * 1e3:.0f} ms; fix − "
        f"truth std {_axes(gps['std_m'])} m (east/north/up) with the lag removed, "
        f"{_axes(gps['std_as_stamped_m'])} m as stamped; IMU − truth residual std "
        + "/".join(f"{v:.2f}" for v in cal["imu"]["accel_residual_std_m_s2"].values()) + " m/s² (x/y/z).",
        f"- Tuned ({tune['base']}, {tune['params_text']}, {tune['trials']} trials on the held-out windows): "
        f"held-out VEPD {tune['objective_baseline_vepd']:.4f} untuned → {tune['best_vepd']:.4f} with {best}.",
    ] + [f"- Fitted (variant `{name}`): a GPS {text}." for name, text in record.get("fit", {}).items()]


def _axes(values: dict) -> str:
    return "/".join(f"{v:.2f}" for v in values.values())


def section_html(record: dict, gps, imu, sensitivity: dict, images: dict) -> list:
    """HTML parts of the real sample's section of report.html; ``images`` {title: PNG bytes} (the
    calibration's GPS error plot, the tuning's convergence)."""
    from ..report.html import image_html, table_html

    header, rows = sensitivity_rows(sensitivity)
    parts = ["<h2>The real sample: comma2k19, a real car</h2>", "<ul>"]
    parts += [f"<li>{html.escape(line[2:])}</li>" for line in design_lines(record)]
    parts += ["</ul>",
              "<h3>Which models the judge-noise floor cannot tell from the real receiver and IMU</h3>",
              '<p class="note">“≤ floor”: the VEPD is not above the upper end of the judge-noise floor — '
              "judge timing alone gives a gap that large, so the model is as close to this real receiver "
              "or IMU as the study can tell.  “farther than the floor”: above it with permutation "
              "p &lt; 0.05.</p>",
              table_html(VERDICT_HEADER, verdict_rows([("GPS study", gps), ("IMU study", imu)])),
              "<h3>Calibrated and tuned against the untuned variants</h3>",
              '<p class="note">Fitted on the held-out windows only, scored on the others; paired by window '
              "(sim run k of both variants replays real window k).</p>",
              table_html(COMPARISON_HEADER, fitted_rows(gps, imu)),
              f'<p class="note">{html.escape(rule_note(gps))}</p>',
              "<h3>Sensitivity to the receiver covariance</h3>",
              '<p class="note">The receiver logs no accuracy, so its covariance is a choice; the whole study '
              "again with the covariance's σ scaled, and with the importer's default for comma2k19 (the "
              "pseudorange σ).</p>",
              table_html(header, rows)]
    for title, png in images.items():
        parts += [f"<h3>{html.escape(title)}</h3>", image_html(png, title)]
    return parts


def rule_note(result) -> str:
    """The separability rule the "separable?" column and the group letters follow (one sentence)."""
    return (f"“separable?” and “group” (within each study) follow one rule — {separation.rule(result)}; "
            "the interval and the p are both shown.")


def fitted_rows(gps, imu) -> list:
    """``comparison_rows`` of both studies: the GPS study's calibrated and tuned variants, the IMU
    study's calibrated IMU."""
    return comparison_rows(gps) + comparison_rows(imu, (CALIBRATED_IMU,))


# -------------------------------------------------------------------------------------- console
def console_lines(record: dict, gps, imu) -> list:
    """What the demo prints about the real sample: its design, which models the floor cannot tell from
    the real sensors, the fitted variants against the untuned one, the covariance sensitivity."""
    scored = [w for w in record["windows"] if w["use"] == "scored"]
    held = [w for w in record["windows"] if w["use"] == "held out"]
    lines = [f"real sample: {len(record['windows'])} windows of {record['window_s']:g} s of a real car "
             "drive; "
             f"{held[0]['run']}–{held[-1]['run']} held out (calibrate --truth, tune), "
             f"{scored[0]['run']}–{scored[-1]['run']} scored (K = {len(scored)}); receiver covariance σ "
             f"{record['fix_covariance_m']:g} m"]
    groups: dict = {}
    for study in (gps, imu):
        for variant in separation.order(study):
            groups.setdefault(verdict(study, variant)[0], []).append(variant)
    for key, text in (("≤ floor", "as close to the real sensors as the judge-noise floor can tell"),
                      ("farther than the floor", "farther than the floor (p < 0.05)"),
                      ("above the floor, p ≥ 0.05", "above the floor, not shown to differ (p ≥ 0.05)")):
        lines.append(f"  {text}: {', '.join(groups.get(key, [])) or 'none'}")
    base = record["tune"]["base"]
    compared = []
    for study, mine, other in ((gps, CALIBRATED, base), (gps, TUNED, base), (gps, FITTED, base),
                               (imu, CALIBRATED_IMU, imu_variants_base(imu))):
        entry = separation.comparison(study, mine, other)
        if entry is None:
            continue
        row = next(r for r in comparison_rows(study, (mine,)) if r[1] == other)
        separable = separation.verdict(study, entry)[0]
        compared.append(f"{mine} − {other} {row[4]} {row[5]} ({'' if separable else 'not '}separable)")
    lines.append("  fitted on held-out windows vs untuned (VEPD difference, paired 95 % CI): "
                 + "; ".join(compared))
    labels = list(record["sensitivity"])
    first = record["sensitivity"][labels[0]]
    cells = []
    for study in ("gps_study", "imu_study"):
        for variant in first[study]:
            values = "/".join(f"{record['sensitivity'][label][study][variant]['VEPD']:.3f}"
                              for label in labels)
            cells.append(f"{variant} {values}")
    lines.append(f"  receiver covariance sensitivity (VEPD at {' / '.join(labels)}): " + "; ".join(cells))
    return lines


def imu_variants_base(imu) -> str:
    """The IMU study's untuned variant (the demo file's IMU): the one that is not the calibrated IMU."""
    return next((v for v in imu.variants if v != CALIBRATED_IMU), CALIBRATED_IMU)
