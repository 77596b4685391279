"""Judge robustness (issue 33): the same study judged by several state estimators.

A study (``demo --judges ekf,ukf``, or ``judges: [ekf, ukf]`` in the demo file) names judges; every run —
the real bags and every simulated variant, the judge-noise floor's draws too — is judged by each, and
each judge's runs are scored as a study of their own (its Table I, its floor, its letter groups).  What
the judges say is then compared (``metrics.judge_agreement``): Kendall's τ between their VEPD orderings
with a paired bootstrap interval, and which pairwise verdicts flip.  Output: ``judges.json``, a section
of tables.md and report.html, console lines.

Judges, by name (``JUDGES``): ``ekf`` and ``ukf`` are the study's own judge files run as ekf_node and as
ukf_node (robot_localization's UKF defaults α 0.001, κ 0, β 2); ``no_accel`` is the study's judge with the
IMU's linear accelerations not fused; ``art``, ``car`` and ``terrain`` are the shipped templates' files
(config/ekf_*.yaml and navsat_*.yaml).  Everything else of the study's judge — static TFs, timing, the
start from the truth and the warm-up — is kept.  A judge that is the study's own (``ekf`` for the shipped
EKF templates) reuses the study's runs; the others judge them again (``judge_again``, the demo's worker
pool).  Derived parameter files (``ukf``, ``no_accel``) are written to a hidden folder in OUT for the
time of the judging (workers and Ray nodes read them there) and described in judges.json.
"""
from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..resources import config_path
from ..runs import file_sha256

SUMMARY = "judges.json"
ACCELERATIONS = (12, 13, 14)  # ax, ay, az in robot_localization's 15-entry sensor config
TEMPLATES = {"art": ("ekf_art_iros2024.yaml", "navsat_art_iros2024.yaml"),
             "car": ("ekf_car.yaml", "navsat_car.yaml"),
             "terrain": ("ekf_terrain.yaml", "navsat_terrain.yaml")}
JUDGES = {
    "ekf": "the study's judge files run as ekf_node (filter_type ekf)",
    "ukf": "the study's judge files run as ukf_node (filter_type ukf; alpha 0.001, kappa 0, beta 2 unless "
           "set)",
    "no_accel": "the study's judge with the IMU's linear accelerations not fused (imuN_config entries 13–15 "
                "false)",
    "art": "the ART IROS-2024 template: config/ekf_art_iros2024.yaml + navsat_art_iros2024.yaml",
    "car": "the car template: config/ekf_car.yaml + navsat_car.yaml",
    "terrain": "the terrain template (the car's without accelerations): config/ekf_terrain.yaml + "
               "navsat_terrain.yaml",
}
STUDIES = (("gps_study", "GPS study"), ("imu_study", "IMU study"))
FLIP_RULE = ("a flip: a pair of variants separable under both judges with opposite verdicts; a pair "
             "separable under one judge only is not counted as a flip but listed as a change of separability "
             "(the other judge cannot tell the two apart)")
TAU_RULE = ("Kendall's τ-b of the two judges' pooled VEPD over the variants (1: the same order, −1: "
            "reversed; ties count as ties); 95 % interval: percentile bootstrap of (scenario, k) units drawn "
            "within each scenario, each bringing real run k and every variant's run k as judged by both "
            "judges")


# ------------------------------------------------------------------------------------ names
def names_problem(names) -> str | None:
    """What is wrong with a list of judge names (at least two, each once, each in ``JUDGES``), or None."""
    allowed = ", ".join(JUDGES)
    unknown = [name for name in names if name not in JUDGES]
    if unknown:
        return f"unknown judge {unknown[0]!r} (allowed: {allowed})"
    if len(set(names)) != len(names):
        return f"a judge is named twice ({', '.join(names)})"
    if len(names) < 2:
        return f"name at least two judges to compare (allowed: {allowed})"
    return None


def check_names(names, where: str) -> tuple:
    """The judges named (``names_problem``); a one-line UserError naming ``where`` and the allowed names
    otherwise."""
    names = [str(name).strip() for name in names]
    problem = names_problem(names)
    if problem is not None:
        raise UserError(f"{where}: {problem}")
    return tuple(names)


def split_names(text: str) -> list:
    """``ekf,ukf`` → ["ekf", "ukf"] (the form of ``--judges``)."""
    return [part.strip() for part in str(text).split(",") if part.strip()]


def parse_option(text: str, option: str = "--judges") -> tuple:
    """``--judges ekf,ukf`` → ("ekf", "ukf")."""
    return check_names(split_names(text), option)


def from_section(section, key: str = "judges") -> tuple:
    """The demo file's ``judges:`` list (``yamlio.Section``); () when absent."""
    if not section.has(key):
        return ()
    value = section.data[key]
    if not isinstance(value, list):
        raise section.error(key, f"expected a list of judge names ({', '.join(JUDGES)}), got {value!r}")
    return check_names(value, f"{section.source}: {section.name(key)}")


# ------------------------------------------------------------------------------------ configs
@dataclass(frozen=True)
class Judge:
    name: str
    config: Any          # pipeline.run.JudgeConfig
    record: dict         # its judges.json entry
    own: bool            # the study's own judge: its runs are the study's


def _filter_section(path: Path) -> tuple:
    """(the raw YAML, the name of its filter section) of an ekf/ukf parameter file."""
    from ..judge.params import load_ekf_params
    from ..yamlio import load_yaml

    node = load_ekf_params(path).node
    data = load_yaml(path)
    section = data.get(node) if isinstance(data, dict) else None
    if not isinstance(section, dict) or not isinstance(section.get("ros__parameters"), dict):
        raise UserError(f"{path}: its filter section {node!r} is not a top-level 'NAME: ros__parameters:' "
                        "mapping; a judge cannot be derived from it")
    return data, node


def _changes(name: str, params: dict) -> dict:
    """{parameter: new value} that turn the study's filter into judge ``name`` (only what differs)."""
    if name in ("ekf", "ukf"):
        return {} if params.get("filter_type", "ekf") == name else {"filter_type": name}
    changes = {}
    for key, value in params.items():
        if key.startswith("imu") and key.endswith("_config") and isinstance(value, list) and len(value) == 15:
            cut = [False if i in ACCELERATIONS else bool(v) for i, v in enumerate(value)]
            if cut != [bool(v) for v in value]:
                changes[key] = cut
    return changes


def derive(name: str, study_judge, workdir: Path) -> Judge:
    """Judge ``name`` (``JUDGES``) built from the study's ``JudgeConfig``."""
    import yaml

    if name in TEMPLATES:
        ekf, navsat = (str(config_path(file).resolve()) for file in TEMPLATES[name])
        changes, source = {}, None
    else:
        data, node = _filter_section(Path(study_judge.ekf))
        params = data[node]["ros__parameters"]
        changes, source = _changes(name, params), study_judge.ekf
        ekf, navsat = study_judge.ekf, study_judge.navsat
        if changes:
            params.update(changes)
            ekf = str(workdir / f"{name}_{Path(study_judge.ekf).name}")
            Path(ekf).write_text(f"# {JUDGES[name]}: {study_judge.ekf} with {json.dumps(changes)}\n"
                                 + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    config = dataclasses.replace(study_judge, ekf=ekf, navsat=navsat)
    own = Path(ekf).resolve() == Path(study_judge.ekf).resolve() and \
        Path(navsat).resolve() == Path(study_judge.navsat).resolve()
    record = {"name": name, "description": JUDGES[name], "study_judge": own,
              "ekf": source if changes else ekf, "navsat": navsat,
              "ekf_sha256": file_sha256(source if changes else ekf), "navsat_sha256": file_sha256(navsat)}
    if changes:
        record["changes"] = changes  # applied to "ekf" (the file named) for this judge
    return Judge(name, config, record, own)


# ------------------------------------------------------------------------------------ the study
def judge_robustness(names, study_judge, main: dict, judge_again, out: Path, options, notice=None) -> dict:
    """Every judge of ``names`` over the study: ``main`` {study key: StudyResult} are the study's own
    judge's results; ``judge_again(JudgeConfig, name)`` judges and scores every run again → the same
    shape.  Returns the judges.json document (``document``)."""
    Path(out).mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=".judges.tmp-", dir=out))
    try:
        judges = [derive(name, study_judge, workdir) for name in names]
        results = {}
        for judge in judges:
            if notice is not None:
                notice(f"judge {judge.name}: " + ("the study's own judge (its runs reused)" if judge.own
                                                  else "every run judged again"))
            results[judge.name] = main if judge.own else judge_again(judge.config, judge.name)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return document(judges, results, options)


def document(judges: list, results: dict, options) -> dict:
    """judges.json: the judges, then per study each judge's Table I (VEPD, interval, group, below the
    floor) and, per pair of judges, τ with its interval and the verdicts of every pair of variants."""
    from ..metrics import judge_agreement as agreement
    from ..metrics import separation
    from ..report import health

    names = [judge.name for judge in judges]
    doc = {"judges": [judge.record for judge in judges], "tau_rule": TAU_RULE, "flip_rule": FLIP_RULE,
           "bootstrap": options.bootstrap, "seed": options.seed, "studies": {}}
    for key, _title in STUDIES:
        study = {name: results[name][key] for name in names}
        variants = sorted(set.intersection(*(set(r.variants) for r in study.values())))
        entry = {"variants": variants, "rule": separation.rule(study[names[0]]), "table": {}, "floor": {},
                 "tracked": {name: health.tracked(result) for name, result in study.items()}, "pairs": []}
        for name, result in study.items():
            letters = separation.group_letters(result)
            entry["table"][name] = {v: {"VEPD": result.combined[v]["VEPD"],
                                        "VEPD_ci95": result.combined[v]["VEPD_ci95"],
                                        "group": letters[v], "below_floor": separation.below_floor(result, v),
                                        "rank": separation.order(result).index(v) + 1} for v in variants}
            floor = result.judge_noise_floor
            if floor:
                pooled = next(iter(floor["combined"].values()))
                entry["floor"][name] = {"VEPD": pooled["VEPD"], "VEPD_interval": pooled["VEPD_interval"]}
        for first, second in combinations(names, 2):
            pair = {"first": first, "second": second}
            try:
                pair.update(agreement.tau_interval(study[first], study[second], options.bootstrap,
                                                   agreement.tau_seed(options.seed, key, first, second)))
            except ValueError as exc:
                pair.update(tau=agreement.kendall_tau(
                    {v: study[first].combined[v]["VEPD"] for v in variants},
                    {v: study[second].combined[v]["VEPD"] for v in variants}), tau_ci95=None,
                    why_no_interval=str(exc))
            pair["reordered"] = agreement.discordant_pairs(
                {v: study[first].combined[v]["VEPD"] for v in variants},
                {v: study[second].combined[v]["VEPD"] for v in variants})
            rows = agreement.verdict_changes(agreement.verdicts(study[first], variants),
                                             agreement.verdicts(study[second], variants))
            pair["verdicts"] = rows
            pair["flips"] = agreement.flips(rows)
            pair["separability_changes"] = [row["pair"] for row in rows
                                            if row["change"] in (agreement.ONLY_FIRST, agreement.ONLY_SECOND)]
            entry["pairs"].append(pair)
        doc["studies"][key] = entry
    return doc


def write(doc: dict, folder: Path) -> None:
    """``folder``/judges.json."""
    text = json.dumps(doc, indent=2, sort_keys=True, default=float, allow_nan=True) + "\n"
    (Path(folder) / SUMMARY).write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------------ rendering
def _number(value, digits: int = 4) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def _interval(values, digits: int = 4) -> str:
    return "–" if not values else f"[{_number(values[0], digits)}, {_number(values[1], digits)}]"


def _pair_name(pair) -> str:
    return f"{pair[0]} ~ {pair[1]}"


def table_rows(doc: dict, key: str) -> tuple:
    """(header, rows) of one study's per-judge Table I: a row per variant (in the first judge's order),
    per judge its VEPD, interval, group letters and rank (“≤ floor” marked)."""
    entry = doc["studies"][key]
    names = [judge["name"] for judge in doc["judges"]]
    first = entry["table"][names[0]]
    header = ["variant"] + [f"{name}: {part}" for name in names
                            for part in ("VEPD", "95 % CI", "group", "rank")]
    rows = []
    for variant in sorted(entry["variants"], key=lambda v: first[v]["rank"]):
        row = [variant]
        for name in names:
            cell = entry["table"][name][variant]
            mark = " (≤ floor)" if cell["below_floor"] else ""
            row += [_number(cell["VEPD"]) + mark, _interval(cell["VEPD_ci95"]), cell["group"],
                    str(cell["rank"])]
        rows.append(row)
    return header, rows


AGREEMENT_HEADER = ["judges", "variants", "Kendall τ", "95 % CI", "ordered differently", "flipped pairs",
                    "separable under one judge only"]


def agreement_rows(doc: dict, key: str) -> list:
    rows = []
    for pair in doc["studies"][key]["pairs"]:
        one = [f"{_pair_name(p)} ({_only_whom(pair, p)})" for p in pair["separability_changes"]]
        count = len(doc["studies"][key]["variants"])
        tau = _number(pair["tau"], 2) if count > 1 else "– (one variant: no order)"
        interval = _interval(pair["tau_ci95"], 2) if pair.get("tau_ci95") else "–"
        rows.append([f"{pair['first']} vs {pair['second']}", str(count), tau, interval,
                     ", ".join(_pair_name(p) for p in pair["reordered"]) or "none",
                     ", ".join(_pair_name(p) for p in pair["flips"]) or "none", "; ".join(one) or "none"])
    return rows


def _only_whom(pair: dict, variants) -> str:
    row = next(r for r in pair["verdicts"] if r["pair"] == list(variants))
    judge, closer = (pair["first"], row["first"]) if row["second"] == "not separable" else \
        (pair["second"], row["second"])
    return f"{judge}: {closer} closer"


VERDICT_HEADER = ["pair", "first judge", "second judge", "change"]


def verdict_rows(pair: dict) -> list:
    """Every pair of variants whose verdict is not the same under the two judges, then the count of the
    others."""
    return [[_pair_name(row["pair"]), f"{pair['first']}: {_closer_text(row['first'])}",
             f"{pair['second']}: {_closer_text(row['second'])}", row["change"]]
            for row in pair["verdicts"] if row["change"] != "agree"]


def _closer_text(value: str) -> str:
    return value if value == "not separable" else f"{value} closer"


def _judge_lines(doc: dict) -> list:
    lines = []
    for judge in doc["judges"]:
        what = f"`{judge['ekf']}`" + (f" with {json.dumps(judge['changes'])}" if judge.get("changes") else "")
        own = " — the study's own judge" if judge["study_judge"] else ""
        lines.append(f"- **{judge['name']}**: {judge['description']}; ekf {what}, "
                     f"navsat `{judge['navsat']}`{own}")
    return lines


def study_notes(doc: dict, key: str) -> str:
    """The notes under a study's per-judge table: the floors, the judge health, the group rule."""
    rule = f"Group letters per judge: {doc['studies'][key]['rule']}."
    return "  ".join(s for s in (floor_line(doc, key), health_line(doc, key), rule) if s)


def floor_line(doc: dict, key: str) -> str:
    """Each judge's judge-noise floor of one study (mean [range]; judges in the order named), or that none
    was measured."""
    entry = doc["studies"][key]
    if not entry["floor"]:
        return "Judge-noise floor: not measured (--no-noise-floor)."
    names = [judge["name"] for judge in doc["judges"] if judge["name"] in entry["floor"]]
    return "Judge-noise floor per judge (mean [range] of its timing-draw pairs): " + "; ".join(
        f"{name} {_number(entry['floor'][name]['VEPD'])} {_interval(entry['floor'][name]['VEPD_interval'])}"
        for name in names) + "."


def health_line(doc: dict, key: str) -> str:
    """Which judges do not track the real vehicle in this study's real runs (docs/scoring.md, "Judge
    health"): their VEPDs compare sensors through an estimate that does not follow the vehicle."""
    tracked = doc["studies"][key].get("tracked", {})
    lost = [judge["name"] for judge in doc["judges"] if tracked.get(judge["name"]) is False]
    if lost:
        return (f"Judge health: {', '.join(lost)} does not track the real vehicle in every real run "
                "(docs/scoring.md, \"Judge health\"): its VEPDs are not a measure of the sensors.")
    if tracked and all(value is True for value in tracked.values()):
        return "Judge health: every judge tracks the real vehicle in every real run."
    return ""


def _study_title(key: str) -> str:
    return dict(STUDIES)[key]


def section_markdown(doc: dict) -> str:
    """The judges' part of tables.md."""
    from ..report.tables import markdown_table

    names = ", ".join(judge["name"] for judge in doc["judges"])
    lines = ["", f"## Judge robustness: every run judged by {names}", "", *_judge_lines(doc), "",
             f"τ: {doc['tau_rule']} ({doc['bootstrap']} resamples, seed {doc['seed']}).  Verdicts: "
             f"{doc['flip_rule']}.", ""]
    for key, entry in doc["studies"].items():
        header, rows = table_rows(doc, key)
        lines += [f"### {_study_title(key)}: each variant's VEPD under each judge", "",
                  markdown_table(header, rows),
                  "", study_notes(doc, key), "",
                  markdown_table(AGREEMENT_HEADER, agreement_rows(doc, key)), ""]
        for pair in entry["pairs"]:
            changed = verdict_rows(pair)
            if changed:
                lines += [f"Pairs of variants whose verdict differs, {pair['first']} vs {pair['second']} "
                          f"({len(pair['verdicts']) - len(changed)} of {len(pair['verdicts'])} agree):", "",
                          markdown_table(VERDICT_HEADER, changed), ""]
    return "\n".join(lines)


def section_html(doc: dict) -> list:
    """The judges' section of report.html (``section_markdown`` says the same in tables.md)."""
    from ..report.html import table_html

    def inline(text: str) -> str:  # the markdown's **bold** and `code`
        text = html.escape(text)
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", text)

    names = ", ".join(judge["name"] for judge in doc["judges"])
    parts = [f"<h2>Judge robustness: every run judged by {html.escape(names)}</h2>", "<ul>"]
    parts += [f"<li>{inline(line[2:])}</li>" for line in _judge_lines(doc)]
    parts += ["</ul>", f'<p class="note">τ: {html.escape(doc["tau_rule"])} ({doc["bootstrap"]} resamples, '
                       f'seed {doc["seed"]}).  Verdicts: {html.escape(doc["flip_rule"])}.</p>']
    for key, entry in doc["studies"].items():
        header, rows = table_rows(doc, key)
        parts += [f"<h3>{_study_title(key)}: each variant's VEPD under each judge</h3>",
                  table_html(header, rows),
                  f'<p class="note">{html.escape(study_notes(doc, key))}</p>',
                  table_html(AGREEMENT_HEADER, agreement_rows(doc, key), css_class="variants")]
        for pair in entry["pairs"]:
            changed = verdict_rows(pair)
            if changed:
                parts += [f'<p class="note">Pairs whose verdict differs, {html.escape(pair["first"])} vs '
                          f'{html.escape(pair["second"])} ({len(pair["verdicts"]) - len(changed)} of '
                          f'{len(pair["verdicts"])} agree):</p>',
                          table_html(VERDICT_HEADER, changed, css_class="variants")]
    return parts


def report_section(doc: dict):
    """The comparison as a section of report.html and tables.md (``report.ReportSection``)."""
    from ..report import ReportSection

    return ReportSection(section_html(doc), section_markdown(doc))


def console_lines(doc: dict) -> list:
    """What the demo prints: per study and pair of judges, τ with its interval, the flips and the changes
    of separability; each judge's order."""
    lines = [f"judges: {', '.join(judge['name'] for judge in doc['judges'])} (every run judged by each; "
             "judges.json, tables.md)"]
    for key, entry in doc["studies"].items():
        if any(value is False for value in entry.get("tracked", {}).values()):
            lines.append(f"  {_study_title(key)}: {health_line(doc, key)}")
        for name, table in entry["table"].items():
            order = sorted(table, key=lambda v: table[v]["rank"])
            lines.append(f"  {_study_title(key)}, {name}: " + ", ".join(
                f"{v} {table[v]['VEPD']:.4f} {table[v]['group']}" for v in order))
        for row in agreement_rows(doc, key):
            lines.append(f"  {_study_title(key)}, {row[0]}: Kendall τ {row[2]} {row[3]} over {row[1]} "
                         f"variants; ordered differently: {row[4]}; flipped: {row[5]}; separable under one "
                         f"judge only: {row[6]}")
    return lines


__all__ = ["JUDGES", "SUMMARY", "Judge", "check_names", "console_lines", "derive", "document", "from_section",
           "judge_robustness", "parse_option", "section_html", "section_markdown", "write"]
