"""Regenerate the demo's numbers in README.md and docs/demo.md, and docs/img/demo_overview.png, from
``sim2real-eval demo`` outputs — so they cannot drift from what the demo prints.

    python benchmarks/make_readme_numbers.py                 # runs both demos below, then writes
    python benchmarks/make_readme_numbers.py --from report --from-real real_sample   # existing outputs
    python benchmarks/make_readme_numbers.py --check         # exit 1 naming every region that differs

Two demo outputs feed it: ``sim2real-eval demo`` (K = 10, the synthetic reference set: ``--from``) and
``sim2real-eval demo --real-sample`` (the comma2k19 real car drive: ``--from-real``); ``--only
synthetic|real`` uses one of them.  What it writes: every region of README.md, docs/demo.md and
docs/calibration.md between
``<!-- generated: NAME -->`` and ``<!-- end: NAME -->`` (``render``: Table I, the adjacent ranks, Table
II, the judge-noise floor, the paper's ordering checks, the per-side run means; ``render_real``: the
real sample's design, which models the floor cannot tell from the real sensors, the calibrated and
tuned variants against the untuned ones, the covariance sensitivity), and the synthetic demo's
overview figure as docs/img/demo_overview.png, carrying the numbers it shows in a PNG text chunk
(``NUMBERS_KEY``).  tests/test_readme_numbers.py runs both demos with their shipped configurations and
fails when a region or that chunk differs from what this script makes of them.

Why here: it is a maintainer's tool over the repository's own text (like the other scripts in
benchmarks/, it is run by hand and printed numbers come from it), not a command users need.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = {"README.md": REPO / "README.md", "docs/demo.md": REPO / "docs" / "demo.md",
         "docs/calibration.md": REPO / "docs" / "calibration.md"}
PREFIXES = {"README.md": "readme", "docs/demo.md": "demo", "docs/calibration.md": "calibration"}
IMAGE = REPO / "docs" / "img" / "demo_overview.png"
NUMBERS_KEY = "sim2real-eval demo numbers"
REGION = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)
LABELS = {"ch_gauss": "Ch:Gauss", "ch_rw": "Ch:RW", "airsim": "AirSim HDOP",
          "ch_gauss_airsim": "Ch:Gauss + AirSim HDOP", "ch_rw_airsim": "Ch:RW + AirSim HDOP"}
CHECKS = ("ch_gauss_worst", "hdop_improves_ch_gauss", "sim_imu_small", "ch_rw_and_airsim_best")


# ------------------------------------------------------------------------------------- reading
def load(out: Path) -> dict:
    """The demo output's documents: vepd/statistics of both studies, demo.json, runs.csv rows."""
    import csv

    def json_of(path):
        return json.loads(path.read_text(encoding="utf-8"))

    with (out / "runs.csv").open(encoding="utf-8") as stream:
        runs = list(csv.DictReader(stream))
    return {"gps": json_of(out / "vepd.json"), "gps_stats": json_of(out / "statistics.json"),
            "imu": json_of(out / "imu_study" / "vepd.json"),
            "imu_stats": json_of(out / "imu_study" / "statistics.json"),
            "demo": json_of(out / "demo.json"), "runs": runs}


def label(variant: str) -> str:
    if variant.startswith("sim_imu-"):
        return "simulated IMU + real GPS"
    return LABELS.get(variant, variant)


def study(vepd: dict, stats: dict):
    """A ``metrics.StudyResult`` of the documents' numbers (no runs): what ``metrics.separation`` reads, so
    ranks, ties and floor marks here are the report's own."""
    from sim2real_eval.metrics import ScoreOptions, StudyResult

    options = ScoreOptions(bootstrap=stats["bootstrap_resamples"], permutations=stats["permutations"],
                           seed=stats["seed"], exclude_scenarios=())
    statistics = {key: stats[key] for key in ("combined", "per_scenario", "resampling", "comparisons")}
    return StudyResult(options, sorted(vepd["combined"]), list(vepd["options"]["scenarios"]),
                       vepd["combined"], vepd["per_scenario"], statistics, [],
                       judge_noise_floor=stats.get("judge_noise_floor"))


# ------------------------------------------------------------------------------------ rendering
def _ci(interval) -> str:
    return "–" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]"


def _vepd(result, variant: str, scenario: str | None = None) -> str:
    from sim2real_eval.metrics import separation

    value = separation.vepd_of(result, variant, scenario)
    return f"{value:.4f}" + (" (≤ floor)" if separation.below_floor(result, variant, scenario) else "")


def _paper(variant: str) -> str:
    from sim2real_eval.report.paper import paper_vepd

    value = paper_vepd(variant)
    return "–" if value is None else f"{value:g}"


def studies(d: dict) -> tuple:
    return study(d["gps"], d["gps_stats"]), study(d["imu"], d["imu_stats"])


def readme_table(d: dict) -> str:
    from sim2real_eval.metrics import separation

    gps, imu = studies(d)
    labels = separation.group_letters(gps)
    scenario = d["demo"]["imu_study_scenario"]
    lines = ["| group | variant | W1 (RMSE, m/s) | W2 (entropy) | VEPD | 95 % CI "
             "| paper's VEPD (real ART data) |", "|---|---|---|---|---|---|---|"]
    for result, names, where in ((gps, separation.order(gps), ""), (imu, imu.variants, f" ({scenario})")):
        for variant in names:
            row = result.combined[variant]
            rank = labels[variant] if result is gps else "–"
            lines.append(f"| {rank} | {label(variant)}{where} | "
                         f"{row['W1']:.4f} | {row['W2']:.4f} | {_vepd(result, variant)} | "
                         f"{_ci(row['VEPD_ci95'])} | {_paper(variant)} |")
    return "\n".join(lines + ["", floor_sentence(d), "", findings_sentence(d)])


def floor_sentence(d: dict) -> str:
    parts = []
    for name, stats in (("GPS study", d["gps_stats"]), ("IMU study", d["imu_stats"])):
        floor = stats.get("judge_noise_floor") or {}
        if "combined" in floor:
            cell = next(iter(floor["combined"].values()))
            parts.append(f"{cell['VEPD']:.4f} {_ci(cell['VEPD_interval'])} ({name})")
    if not parts:
        return "Judge-noise floor: not measured."
    floor = d["gps_stats"]["judge_noise_floor"]
    from sim2real_eval.metrics import separation

    return (f"Judge-noise floor (the VEPD judge timing alone gives; mean and range of the {floor['pairs']} "
            f"pairs of {floor['draws']} timing draws): {'; '.join(parts)}.  “≤ floor”: not above the range's "
            f"upper end.  Group (compact letter display) — {separation.rule(studies(d)[0])}.")


def findings_sentence(d: dict) -> str:
    ordering = d["demo"]["ordering"]
    names = {"ch_gauss_worst": "Ch:Gauss scores worst", "hdop_improves_ch_gauss": "adding the HDOP "
             "covariance improves Ch:Gauss", "sim_imu_small": "the simulated IMU's VEPD is below every GPS "
             "variant's", "ch_rw_and_airsim_best": "Ch:RW and AirSim are the best two"}
    findings, reasons = ordering.get("findings", {}), ordering.get("reasons", {})
    parts = []
    for key in CHECKS:
        if key in findings:
            why = f" ({reasons[key]})" if key in reasons else ""
            parts.append(f"{names[key]} — **{findings[key]}**{why}")
    return "The paper's findings on this data set, as the precision supports them: " + "; ".join(parts) + "."


def demo_table_one(d: dict) -> str:
    from sim2real_eval.metrics import separation
    from sim2real_eval.report.tables import fmt_p

    gps, imu = studies(d)
    labels = separation.group_letters(gps)
    scenario = d["demo"]["imu_study_scenario"]
    lines = ["| group | variant | W1 (m/s) | W2 | VEPD | 95 % CI | p (perm.) | paper |",
             "|---|---|---|---|---|---|---|---|"]
    for result, names, where in ((gps, separation.order(gps), ""), (imu, imu.variants, f" ({scenario})")):
        for variant in names:
            row, cell = result.combined[variant], result.statistics["combined"][variant]
            p = fmt_p(cell.get("p_VEPD"), result.options.permutations)
            lines.append(f"| {labels[variant] if result is gps else '–'} | {label(variant)}{where} | "
                         f"{row['W1']:.4f} | {row['W2']:.4f} | {_vepd(result, variant)} | "
                         f"{_ci(row['VEPD_ci95'])} | {p} | "
                         f"{_paper(variant)} |")
    return "\n".join(lines)


def adjacent_table(d: dict) -> str:
    from sim2real_eval.report.tables import ADJACENT_HEADER, adjacent_rows, markdown_table

    gps, _imu = studies(d)
    rows = [[row[0], label(row[1]), label(row[2]), *row[3:]] for row in adjacent_rows(gps)]
    return markdown_table(ADJACENT_HEADER, rows)


def table_two(d: dict) -> str:
    from sim2real_eval.metrics import separation

    gps, _imu = studies(d)
    per = {s: separation.group_letters(gps, s) for s in gps.scenarios}
    lines = ["| variant | " + " | ".join(f"{s}: VEPD (group)" for s in gps.scenarios) + " |",
             "|---|" + "---|" * len(gps.scenarios)]
    for variant in separation.order(gps):
        cells = [f"{gps.per_scenario[variant][s]['VEPD']:.4f} ({per[s][variant]})"
                 + (" ≤ floor" if separation.below_floor(gps, variant, s) else "") for s in gps.scenarios]
        lines.append(f"| {label(variant)} | " + " | ".join(cells) + " |")
    floor = gps.judge_noise_floor or {}
    if "combined" in floor:
        first = next(iter(floor["per_scenario"].values()))
        lines.append("| judge-noise floor | " + " | ".join(
            f"{first[s]['VEPD']:.4f} {_ci(first[s]['VEPD_interval'])}" for s in gps.scenarios) + " |")
    return "\n".join(lines)


def run_means(d: dict) -> str:
    """Means over the runs of each side (E, S_est, S_gt, D): the numbers the analysis cites."""
    import statistics

    from sim2real_eval.metrics import separation

    sides: dict = {}
    for row in d["runs"]:
        sides.setdefault("real" if row["side"] == "real" else row["variant"], []).append(row)
    lines = ["| runs | n | mean E (m/s) | mean S_est | mean S_gt | mean D |", "|---|---|---|---|---|---|"]
    for key in ["real"] + separation.order(studies(d)[0]):
        rows = sides[key]
        mean = {c: statistics.fmean(float(r[c]) for r in rows) for c in ("rmse", "S_est", "S_gt", "D")}
        lines.append(f"| {'real' if key == 'real' else label(key)} | {len(rows)} | {mean['rmse']:.3f} | "
                     f"{mean['S_est']:.3f} | {mean['S_gt']:.4f} | {mean['D']:.3f} |")
    return "\n".join(lines)


def render(d: dict) -> dict:
    """{region name: text} of every generated region."""
    demo = d["demo"]
    heading = (f"K = {demo['k']} per scenario, {demo['runs']['total']} judged runs, demo seed and statistics "
               f"seed as shipped (config/studies/demo.yaml)")
    return {"readme-table-1": readme_table(d), "demo-heading": heading, "demo-table-1": demo_table_one(d),
            "demo-adjacent": adjacent_table(d), "demo-table-2": table_two(d),
            "demo-findings": findings_sentence(d), "demo-floor": floor_sentence(d),
            "demo-run-means": run_means(d)}


def image_numbers(d: dict) -> str:
    """What docs/img/demo_overview.png shows, as text for its PNG chunk (group letters, VEPD and CI to 4
    decimals, the floor's range)."""
    from sim2real_eval.metrics import separation

    gps, _imu = studies(d)
    labels = separation.group_letters(gps)
    shown = {v: [labels[v], f"{gps.combined[v]['VEPD']:.4f}", _ci(gps.combined[v]["VEPD_ci95"])]
             for v in gps.variants}
    floor = gps.judge_noise_floor or {}
    if "combined" in floor:
        shown["judge-noise floor"] = _ci(next(iter(floor["combined"].values()))["VEPD_interval"])
    return json.dumps(shown, sort_keys=True)


# ----------------------------------------------------------------------------- the real sample
REAL_LABELS = {"car_gauss": "Ch:Gauss (car)", "car_rw": "Ch:RW (car)", "car_airsim": "AirSim HDOP (car)",
               "car_gauss_airsim": "Ch:Gauss + AirSim HDOP (car)",
               "car_rw_airsim": "Ch:RW + AirSim HDOP (car)",
               "calibrated": "calibrated GPS (calibrate --truth)", "tuned": "tuned Ch:Gauss (car)",
               "sim_imu-car_mems": "simulated IMU car_mems + real GPS",
               "sim_imu-calibrated": "calibrated IMU + real GPS"}


def load_real(out: Path) -> dict:
    """A ``demo --real-sample`` output's documents: both studies, demo.json, real_sample.json."""
    d = load(out)
    d["record"] = json.loads((out / "real_sample" / "real_sample.json").read_text(encoding="utf-8"))
    d["out"] = out
    return d


def real_label(variant: str) -> str:
    return f"{REAL_LABELS.get(variant, variant)} (`{variant}`)"


def real_verdicts(d: dict) -> str:
    from sim2real_eval.report.tables import markdown_table
    from sim2real_eval.studies.real_sample import VERDICT_HEADER, verdict_rows

    gps, imu = studies(d)
    rows = [[row[0], real_label(row[1]), *row[2:]]
            for row in verdict_rows([("GPS study", gps), ("IMU study", imu)])]
    return markdown_table(VERDICT_HEADER, rows)


def real_fitted(d: dict) -> str:
    from sim2real_eval.report.tables import markdown_table
    from sim2real_eval.studies.real_sample import COMPARISON_HEADER, fitted_rows

    return markdown_table(COMPARISON_HEADER, fitted_rows(*studies(d)))


def calibration_fit(d: dict) -> str:
    """docs/calibration.md's record of ``fit`` in the demo: the fitted variant against every other variant
    of the GPS study on the scored windows (paired), and the floor."""
    from sim2real_eval.report.tables import markdown_table
    from sim2real_eval.studies.real_sample import COMPARISON_HEADER, FITTED, comparison_rows

    gps = studies(d)[0]
    rows = [row for row in comparison_rows(gps, (FITTED,)) if row[0] == FITTED]
    return (f"`demo --real-sample` as shipped (fit on the held-out windows 0–"
            f"{d['record']['held_out_windows'] - 1}, scored on the K = {d['record']['k']} others):\n\n"
            + markdown_table(COMPARISON_HEADER, rows) + "\n\n" + real_floor_sentence(d) + "  "
            + real_rule_note(gps))


def real_sensitivity(d: dict) -> str:
    from sim2real_eval.report.tables import markdown_table
    from sim2real_eval.studies.real_sample import sensitivity_rows

    return markdown_table(*sensitivity_rows(d["record"]["sensitivity"]))


def real_run_means(d: dict) -> str:
    """Mean E and D of every side of both studies (the real runs once)."""
    import csv
    import statistics

    rows = list(d["runs"])
    with (d["out"] / "imu_study" / "runs.csv").open(encoding="utf-8") as stream:
        rows += [row for row in csv.DictReader(stream) if row["side"] != "real"]
    sides: dict = {}
    for row in rows:
        sides.setdefault(row["variant"], []).append(row)
    order = sorted(sides, key=lambda v: (v != "real", statistics.fmean(float(r["rmse"]) for r in sides[v])))
    lines = ["| runs | n | mean E (m/s) | mean D |", "|---|---|---|---|"]
    for variant in order:
        found = sides[variant]
        lines.append(f"| {'real' if variant == 'real' else real_label(variant)} | {len(found)} | "
                     f"{statistics.fmean(float(r['rmse']) for r in found):.3f} | "
                     f"{statistics.fmean(float(r['D']) for r in found):.3f} |")
    return "\n".join(lines)


def real_fitted_sentence(d: dict) -> str:
    """The fitted variants against the untuned one they improve on, one clause each."""
    from sim2real_eval.metrics import separation
    from sim2real_eval.studies.real_sample import (
        CALIBRATED,
        CALIBRATED_IMU,
        FITTED,
        TUNED,
        comparison_rows,
        imu_variants_base,
    )

    gps, imu = studies(d)
    base = d["record"]["tune"]["base"]
    parts = []
    for study, mine, other in ((gps, CALIBRATED, base), (gps, TUNED, base), (gps, FITTED, base),
                               (imu, CALIBRATED_IMU, imu_variants_base(imu))):
        entry = separation.comparison(study, mine, other)
        row = next(r for r in comparison_rows(study, (mine,)) if r[1] == other)
        separable = separation.verdict(study, entry)[0]
        parts.append(f"`{mine}` − `{other}` = {row[4]} {row[5]}, p {row[6]}: "
                     + ("**separable**" if separable else f"**not separable** ({row[7][4:-1]})"))
    return ("Fitted on the held-out windows, scored on the others (VEPD of the fitted variant minus the "
            "untuned one's: negative = closer to the real sensors; paired 95 % interval): "
            + "; ".join(parts) + ".  " + real_rule_note(gps))


def real_rule_note(gps) -> str:
    from sim2real_eval.studies.real_sample import rule_note

    return rule_note(gps)


def real_sensitivity_sentence(d: dict) -> str:
    """How far the covariance choice moves the VEPDs (ratios to the 1× ones)."""
    from sim2real_eval.studies.real_sample import PSEUDORANGE, scale_label

    sensitivity = d["record"]["sensitivity"]
    main = sensitivity[scale_label(1.0)]
    scaled = [label for label in sensitivity if label not in (scale_label(1.0), PSEUDORANGE)]

    def ratios(labels):
        return [sensitivity[label][study][v]["VEPD"] / main[study][v]["VEPD"]
                for label in labels for study in ("gps_study", "imu_study") for v in main[study]]

    low, high = min(ratios(scaled)), max(ratios(scaled))
    parts = [f"at {' and '.join(scaled)} that σ every VEPD is {low:.2f}–{high:.2f}× its value here"]
    if PSEUDORANGE in sensitivity:
        sigma = sensitivity[PSEUDORANGE]["sigma_m"]
        parts.append(f"with the importer's pseudorange σ (median {sigma:.1f} m) "
                     f"{min(ratios([PSEUDORANGE])):.2f}–{max(ratios([PSEUDORANGE])):.2f}×")
    return (f"Receiver covariance (σ {d['record']['fix_covariance_m']:g} m; the fix logs no accuracy): "
            + "; ".join(parts) + " (docs/demo.md, \"The real sample\").")


def real_floor_sentence(d: dict) -> str:
    floor = d["gps_stats"].get("judge_noise_floor") or {}
    if "combined" not in floor:
        return "Judge-noise floor: not measured."
    cell = next(iter(floor["combined"].values()))
    return (f"Judge-noise floor of these windows: {cell['VEPD']:.4f} {_ci(cell['VEPD_interval'])} (mean and "
            f"range of the {floor['pairs']} pairs of {floor['draws']} timing draws); “≤ floor”: not above "
            "the range's upper end, i.e. as close to the real sensors as judge timing alone lets one tell.")


def render_real(d: dict) -> dict:
    """{region name: text} of every region generated from the real sample."""
    from sim2real_eval.studies.real_sample import design_lines

    record = d["record"]
    heading = (f"`demo --real-sample` as shipped (config/studies/demo_car.yaml): "
               f"K = {record['k']} scored windows, seeds as shipped")
    readme = [heading + ":", "", real_verdicts(d), "", real_floor_sentence(d), "", real_fitted_sentence(d),
              "", real_sensitivity_sentence(d)]
    return {"readme-real-sample": "\n".join(readme),
            "demo-real-heading": heading, "demo-real-design": "\n".join(design_lines(record)),
            "demo-real-verdicts": real_verdicts(d) + "\n\n" + real_floor_sentence(d),
            "demo-real-fitted": real_fitted(d) + "\n\n" + real_rule_note(studies(d)[0]),
            "demo-real-sensitivity": real_sensitivity(d),
            "demo-real-run-means": real_run_means(d),
            "calibration-fit-real": calibration_fit(d)}


# -------------------------------------------------------------------------------------- regions
def regions(text: str) -> dict:
    return {m["name"]: m["body"].rstrip("\n") for m in REGION.finditer(text)}


def replace_regions(text: str, blocks: dict) -> str:
    return REGION.sub(lambda m: m.group(1) + (blocks[m["name"]] + "\n" if m["name"] in blocks else m["body"])
                      + m.group(4), text)


def differences(blocks: dict, image: str | None) -> list:
    """Regions (file: name) whose text differs from ``blocks``, and the image when its numbers do
    (``image`` None: not compared)."""
    found = []
    for name, path in FILES.items():
        for region, body in regions(path.read_text(encoding="utf-8")).items():
            if region in blocks and body != blocks[region]:
                found.append(f"{name}: {region}")
    if image is not None and png_numbers(IMAGE) != image:
        found.append(f"{IMAGE.relative_to(REPO)}: its numbers")
    return found


def png_numbers(path: Path) -> str | None:
    from PIL import Image

    with Image.open(path) as picture:
        return picture.text.get(NUMBERS_KEY)


def write_image(source: Path, numbers: str) -> None:
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text(NUMBERS_KEY, numbers)
    with Image.open(source) as picture:
        picture.save(IMAGE, pnginfo=info)


def run_demo(out: Path, *extra: str) -> None:
    from sim2real_eval.cli import main as cli

    if cli(["demo", "--out", str(out), "--no-progress", *extra]) != 0:
        raise SystemExit(1)


def degraded_blocks() -> dict:
    """README's and docs/demo.md's GNSS-degraded regions: benchmarks/degraded_gnss.json rendered (that
    script runs the two demos it compares; here its record is only rendered)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import degraded_gnss

    return degraded_gnss.render(json.loads(degraded_gnss.RECORD.read_text(encoding="utf-8")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", metavar="OUT",
                        help="an existing `sim2real-eval demo` output")
    parser.add_argument("--from-real", dest="real", metavar="OUT",
                        help="an existing `sim2real-eval demo --real-sample` output")
    parser.add_argument("--only", choices=("synthetic", "real"), help="regenerate one demo's regions only")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when something differs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="readme_numbers_") as tmp:
        blocks, numbers, out = {}, None, None
        if args.only != "real":
            out = Path(args.source) if args.source else Path(tmp) / "report"
            if not args.source:
                run_demo(out)
            data = load(out)
            blocks, numbers = render(data), image_numbers(data)
        if args.only != "synthetic":
            real = Path(args.real) if args.real else Path(tmp) / "real_sample"
            if not args.real:
                run_demo(real, "--real-sample")
            blocks.update(render_real(load_real(real)))
        blocks.update(degraded_blocks())
        if args.check:
            found = differences(blocks, numbers)
            for item in found:
                print(f"differs: {item}")
            return 1 if found else 0
        for name, path in FILES.items():
            text = path.read_text(encoding="utf-8")
            missing = [r for r in blocks if r.startswith(PREFIXES[name]) and r not in regions(text)]
            if missing:
                print(f"{name}: no region {', '.join(missing)} "
                      "(add <!-- generated: NAME --> … <!-- end: NAME -->)")
            path.write_text(replace_regions(text, blocks), encoding="utf-8")
        if out is not None:
            write_image(out / "figures" / "overview.png", numbers)
        print(f"wrote the generated regions ({', '.join(sorted(blocks))}) of {', '.join(FILES)}"
              + (f" and {IMAGE.relative_to(REPO)}" if out is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
