"""Why a model falls short of a real sensor (issue 31, item 2; docs/calibration.md, "Why a model falls
short"): a GPS + IMU model pair's errors beside the real sensors' on the same ground truth, written as
shortfall.png (one page: PSD, autocorrelation, Allan panels), shortfall.md and shortfall.json, all or
nothing (``write_shortfall``), and as a report section (``markdown_section``, ``section_html``).

The statistics (``error_statistics`` -> ``Shortfall``: PSD, autocorrelation, Allan deviation and the
per-axis comparison, the VEPD split) are ``calibrate.shortfall_stats``'s; the entry points callers use
(``segments_from_bags``, ``segment_of_drive``, ``error_statistics``, ``closest_preset_shortfall``) are
reachable from here.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from ..atomic import atomic_files
from ..errors import UserError
from .shortfall_stats import (
    BAND_SPLIT_HZ,
    ENU_AXES,
    FACTOR,
    IMU_AXES,
    IMU_UNITS,
    SLOPE_TOLERANCE,
    Shortfall,
    closest_variant,
    error_statistics,
    spec_name,
)
from .shortfall_stats import segment_of_drive as segment_of_drive  # re-exported: service.data reads it here
from .shortfall_stats import segments_from_bags as segments_from_bags  # re-exported: the documented API

FILES = ("shortfall.png", "shortfall.md", "shortfall.json")


# ------------------------------------------------------------------------------------ rendering
def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def _pair(entry: dict, digits: int = 3) -> str:
    return f"{_num(entry['real'], digits)} / {_num(entry['model'], digits)}"


def _times(entry: dict) -> str:
    ratio = entry["ratio"]
    if ratio is None:
        return "–"
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"


GPS_HEADER = ["axis", "bias real / model (m)", "std real / model (m)", "std ratio",
              "corr. time real / model (s)", f"power ≤ {BAND_SPLIT_HZ:g} Hz ratio",
              f"power > {BAND_SPLIT_HZ:g} Hz ratio", "differs"]
IMU_HEADER = ["axis", "std real / model", "std ratio", "ADEV at τ min ratio", "ADEV near 1 s (τ) ratio",
              "ADEV min real / model (τ s)", "slope 1st decade real / model", "differs"]
PROPERTY_NAMES = {"std_m": "std", "std": "std", "power_slow_m2": "slow power", "power_fast_m2": "fast power",
                  "correlation_time_s": "correlation time", "adev_shortest_tau": "ADEV at the shortest τ",
                  "adev_near_1s": "ADEV near 1 s", "adev_minimum": "ADEV minimum",
                  "slope_first_decade": "Allan slope"}
PROPERTY_SHORT = {"std_m": "std", "std": "std", "power_slow_m2": "slow", "power_fast_m2": "fast",
                  "correlation_time_s": "corr.", "adev_shortest_tau": "τ min", "adev_near_1s": "1 s",
                  "adev_minimum": "min", "slope_first_decade": "slope"}


def gps_rows(result: Shortfall) -> list:
    rows = []
    for axis, e in result.summary["gps"].items():
        rows.append([axis, _pair(e["bias_m"]), _pair(e["std_m"]), _times(e["std_m"]),
                     _pair(e["correlation_time_s"]), _times(e["power_slow_m2"]), _times(e["power_fast_m2"]),
                     ", ".join(PROPERTY_SHORT[p] for p in e["differs"]) or "–"])
    return rows


def imu_rows(result: Shortfall) -> list:
    rows = []
    for axis, e in result.summary["imu"].items():
        minimum = e["adev_minimum"]
        slope = e["slope_first_decade"]
        rows.append([f"{axis} ({e['unit']})", _pair(e["std"]), _times(e["std"]),
                     _times(e["adev_shortest_tau"]),
                     f"{_times(e['adev_near_1s'])} ({e['adev_near_1s']['tau_s']:.2g} s)",
                     f"{_pair(minimum)} ({minimum['tau_s']['real']:.2g} / {minimum['tau_s']['model']:.2g})",
                     f"{_num(slope['real'], 2)} / {_num(slope['model'], 2)}",
                     ", ".join(PROPERTY_SHORT[p] for p in e["differs"]) or "–"])
    return rows


VEPD_HEADER = ["variant", "VEPD", "W1/2 (RMSE part)", "W2/2 (entropy part)", "mean E real / sim (m/s)",
               "mean D real / sim", "floor (upper end)"]


def vepd_rows(split: dict) -> list:
    def share(half, part):
        return f"{half:.4f} ({part:.0%})" if part is not None else f"{half:.4f}"

    e, d = split.get("mean_rmse_m_s"), split.get("mean_D")
    floor = split.get("floor_upper")
    return [[split["variant"], f"{split['VEPD']:.4f}", share(split["W1_half"], split["W1_share"]),
             share(split["W2_half"], split["W2_share"]),
             "–" if e is None else f"{e['real']:.4f} / {e['sim']:.4f}",
             "–" if d is None else f"{d['real']:.4f} / {d['sim']:.4f}",
             "–" if floor is None else f"{floor:.4f}"]]


def verdict_lines(result: Shortfall) -> list:
    """One sentence per axis that differs: the properties and their model/real ratios."""
    lines = []
    for group in ("gps", "imu"):
        for axis, e in result.summary[group].items():
            parts = []
            for name in e["differs"]:
                entry = e[name]
                if name == "slope_first_decade":
                    parts.append(f"Allan slope {_num(entry['real'], 2)} real vs "
                                 f"{_num(entry['model'], 2)} model")
                elif name == "correlation_time_s" and (entry["real"] is None or entry["model"] is None):
                    parts.append(f"correlation time {_num(entry['real'])} s real vs {_num(entry['model'])} s "
                                 "model (– : ρ stays above 1/e)")
                else:
                    parts.append(f"{PROPERTY_NAMES[name]} {_times(entry)} ({_pair(entry)} real / model)")
            if parts:
                lines.append(f"{axis}: " + "; ".join(parts))
    return lines


def description_lines(result: Shortfall) -> list:
    s = result.settings
    return [f"Model: GPS {spec_name(result.gps_model)}, IMU {spec_name(result.imu_model)} "
            f"(seed {result.seed}), simulated on the truth of {len(result.sources)} real segment(s); fixes "
            "at the real receiver's "
            f"{s.gps_rate_hz:.3g} Hz, IMU at the real stamps ({s.imu_rate_hz:.4g} Hz), both in base_link.",
            "GPS error = fix − truth at the fix stamp (as stamped), each segment's mean removed (the bias "
            f"is listed apart); PSD: Welch, Hann, {s.psd_segment} fixes ({s.psd_segment_s:.3g} s) per "
            f"segment, 50 % overlap; autocorrelation to {s.max_lag / s.gps_rate_hz:.3g} s, correlation time "
            "= first lag with "
            "ρ < 1/e.",
            "IMU error = IMU − truth (the truth's rates and specific force); overlapping Allan deviation "
            "at τ "
            f"{s.taus_s[0]:.2g}–{s.taus_s[-1]:.2g} s, pooled over segments.",
            f"“differs”: a ratio model/real outside [1/{FACTOR:g}, {FACTOR:g}], an Allan slope apart by "
            f"more than {SLOPE_TOLERANCE:g}, or a correlation on one side only (std; slow / fast: PSD power "
            f"≤ / > {BAND_SPLIT_HZ:g} Hz; corr.: correlation time; τ min / 1 s / min: Allan deviation at the "
            "shortest τ, near 1 s, at its minimum; slope: of the Allan deviation's first decade)."]


def markdown_section(result: Shortfall, heading: str = "##", image: str | None = "shortfall.png") -> str:
    """shortfall.md's text (also the report's section, with ``heading`` its level)."""
    from ..report.tables import markdown_table

    lines = [f"{heading} Why the model falls short: {spec_name(result.gps_model)} + "
             f"{spec_name(result.imu_model)} against the real sensors", ""]
    lines += [f"- {line}" for line in description_lines(result)] + [""]
    if result.vepd is not None:
        lines += [f"{heading}# The VEPD that remains, split (VEPD = W1/2 + W2/2)", "",
                  markdown_table(VEPD_HEADER, vepd_rows(result.vepd)), ""]
    lines += [f"{heading}# GPS: fix − truth per ENU axis", "",
              markdown_table(GPS_HEADER, gps_rows(result)), "",
              f"{heading}# IMU: IMU − truth per axis (Allan deviation)", "",
              markdown_table(IMU_HEADER, imu_rows(result)), "",
              f"{heading}# What the model does not reproduce", ""]
    lines += [f"- {line}" for line in verdict_lines(result)] or ["- nothing beyond a factor "
                                                                 f"{FACTOR:g}"]
    lines += [f"- note: {note}" for note in result.notes]
    if image:
        lines += ["", f"![real vs model error statistics]({image})"]
    return "\n".join(lines) + "\n"


def section_html(result: Shortfall, png: bytes) -> list:
    """The report.html parts of the section (``markdown_section`` says the same in tables.md)."""
    from ..report.html import image_html, table_html

    parts = [f"<h2>Why the model falls short: {html.escape(spec_name(result.gps_model))} + "
             f"{html.escape(spec_name(result.imu_model))} against the real sensors</h2>", "<ul>"]
    parts += [f"<li>{html.escape(line)}</li>" for line in description_lines(result)] + ["</ul>"]
    if result.vepd is not None:
        parts += ["<h3>The VEPD that remains, split (VEPD = W1/2 + W2/2)</h3>",
                  table_html(VEPD_HEADER, vepd_rows(result.vepd))]
    parts += ["<h3>GPS: fix − truth per ENU axis</h3>", table_html(GPS_HEADER, gps_rows(result)),
              "<h3>IMU: IMU − truth per axis (Allan deviation)</h3>",
              table_html(IMU_HEADER, imu_rows(result)),
              "<h3>What the model does not reproduce</h3>", "<ul>"]
    parts += [f"<li>{html.escape(line)}</li>" for line in verdict_lines(result) + result.notes] + ["</ul>"]
    parts.append(image_html(png, "real vs model error statistics"))
    return parts


def _lag_text(value) -> str:
    return "no lag shown" if value is None else f"{value:.3g} s"


def plot_shortfall(result: Shortfall, path) -> Path:
    """One page: GPS PSD and autocorrelation per ENU axis, gyroscope and accelerometer Allan deviation
    per axis; real solid, model dashed."""
    from . import plots  # matplotlib with the Agg backend

    plt = plots.plt
    real, model = result.real, result.model
    fig, axes = plt.subplots(4, 3, figsize=(15, 15))
    for i, axis in enumerate(ENU_AXES):
        ax = axes[0, i]
        ax.semilogy(real.psd_f[1:], real.psd[i][1:], "-", color="C0", label="real")
        ax.semilogy(model.psd_f[1:], model.psd[i][1:], "--", color="C3", label="model")
        ax.set_title(f"GPS {axis}: PSD of fix − truth")
        ax.set_xlabel("frequency (Hz)")
        ax.set_ylabel("m²/Hz")
        ax = axes[1, i]
        ax.plot(real.lags_s, real.rho[i], "-", color="C0",
                label=f"real (1/e at {_lag_text(real.correlation_time[i])})")
        ax.plot(model.lags_s, model.rho[i], "--", color="C3",
                label=f"model (1/e at {_lag_text(model.correlation_time[i])})")
        ax.axhline(np.exp(-1.0), color="grey", lw=0.6, ls=":")
        ax.set_title(f"GPS {axis}: autocorrelation")
        ax.set_xlabel("lag (s)")
        ax.set_ylabel("ρ")
    for i, axis in enumerate(IMU_AXES):
        ax = axes[2 + i // 3, i % 3]
        ax.loglog(real.taus_s, real.adev[i], "-", color="C0", label="real")
        ax.loglog(model.taus_s, model.adev[i], "--", color="C3", label="model")
        ax.set_title(f"IMU {axis}: Allan deviation of IMU − truth")
        ax.set_xlabel("τ (s)")
        ax.set_ylabel(IMU_UNITS[i])
    for ax in axes.flat:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    s = result.settings
    fig.suptitle(f"Real sensors (solid) vs {spec_name(result.gps_model)} + {spec_name(result.imu_model)} "
                 f"(dashed, seed {result.seed}) on the same truth: {len(result.sources)} segment(s); Welch "
                 f"{s.psd_segment_s:.3g} s segments")
    # fixed margins: tight_layout measures every log-axis tick label, two thirds of the drawing time
    fig.subplots_adjust(left=0.06, right=0.985, bottom=0.04, top=0.95, hspace=0.38, wspace=0.24)
    return plots.save_png(fig, Path(path))


def shortfall_files(out_dir) -> dict:
    out_dir = Path(out_dir)
    return {"figure": out_dir / FILES[0], "markdown": out_dir / FILES[1], "json": out_dir / FILES[2]}


def write_shortfall(result: Shortfall, out_dir, overwrite: bool = True) -> dict:
    """shortfall.png, shortfall.md and shortfall.json in ``out_dir`` (made if missing), all or nothing
    (``atomic.atomic_files``); returns {"figure" | "markdown" | "json": path}."""
    files = shortfall_files(out_dir)
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out_dir}: cannot create the folder ({exc.strerror})") from None
    writers = shortfall_writers(result, out_dir)
    with atomic_files(list(writers), overwrite=overwrite) as temps:
        for write, temp in zip(writers.values(), temps):
            write(temp)
    return files


def shortfall_writers(result: Shortfall, out_dir) -> dict:
    """{final path: write(temporary path)} of the three files, for a caller that writes them together
    with its own in one ``atomic_files`` set (``calibrate --truth --shortfall``)."""
    files = shortfall_files(out_dir)

    def write_markdown(path):
        path.write_text(markdown_section(result), encoding="utf-8")

    def write_json(path):
        path.write_text(json.dumps(result.as_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    return {files["figure"]: lambda path: plot_shortfall(result, path), files["markdown"]: write_markdown,
            files["json"]: write_json}


def closest_preset_shortfall(segments: list, study, imu, seed: int) -> Shortfall:
    """The shortfall of a scored GPS study's closest preset variant (smallest VEPD among the variants
    named after a GPS preset; fitted variants carry their own models) with the study's IMU ``imu``,
    against the real ``segments`` it was scored on, its VEPD split from ``study``: what ``demo
    --real-sample`` adds to its report."""
    from ..models import available_presets  # models load PyYAML, which the rendering never needs

    presets = set(available_presets("gps"))
    variant = closest_variant(study, exclude=[v for v in study.combined if v not in presets])
    return error_statistics(segments, variant, imu, seed=seed, study=study, variant=variant)
