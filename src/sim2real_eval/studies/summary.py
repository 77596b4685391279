"""The demo's printed summary (``summary_table``): Table I of both studies with group letters, intervals
and sub-floor marks, the judge-noise floor, the paper's findings, warnings, the real sample's lines and
the time of each step."""
from __future__ import annotations

from ..metrics import separation
from . import judges
from .findings import CHECK_NAMES, separation_warnings
from .job import RUNS, DemoResult
from .real_sample import console_lines


def summary_table(result: DemoResult) -> str:
    """The text the CLI prints: Table I with group letters (compact letter display) and the rule they
    follow, intervals and sub-floor marks, the adjacent ranks compared, the IMU study, the judge-noise
    floor, the ordering checks as the precision supports them, permutation-limit warnings, and the time
    of each step."""
    from ..report import health

    gps, imu = result.gps_result, result.imu_result
    rows = [(gps, variant, "") for variant in separation.order(gps)]
    rows += [(imu, variant, "  (IMU study)") for variant in separation.order(imu)]
    width = max([len("variant")] + [len(variant) for _r, variant, _note in rows])
    lines = [f"VEPD (lower = closer to real), K = {result.k} per scenario, real = {result.real_source}",
             f"{'group':<5} {'variant':<{width}} {'W1 m/s':>8} {'W2':>8} {'VEPD':>8}  {'95 % CI':<18}"]
    for study, variant, note in rows:
        row = study.combined[variant]
        rank = separation.group_letters(study)[variant]
        ci = row["VEPD_ci95"]
        interval = f"[{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "–"
        mark = "  ≤ floor" if separation.below_floor(study, variant) else ""
        mark += f"  {health.NOT_TRACKED}" if health.tracked(study) is False else ""
        lines.append(f"{rank:<5} {variant:<{width}} {row['W1']:>8.4f} {row['W2']:>8.4f} {row['VEPD']:>8.4f}  "
                     f"{interval:<18}{mark}{note}")
    ties = [f"{entry['better']} ~ {entry['worse']} ({reason})"
            for _ranks, entry, separable, reason in separation.adjacent_rows(gps) if separable is False]
    if ties:
        lines.append("adjacent variants not separable: " + "; ".join(ties))
    lines.append(f"group: {separation.rule(gps)}")
    if result.noise_floor:
        floor = ", ".join(f"{name.replace('_', ' ')} {value['VEPD']:.4f} [{value['VEPD_interval'][0]:.4f}, "
                          f"{value['VEPD_interval'][1]:.4f}]" for name, value in result.noise_floor.items())
        draws = gps.judge_noise_floor
        lines.append(f"judge-noise floor (VEPD from judge timing alone, mean [range] of {draws['pairs']} "
                     f"pairs of {draws['draws']} draws; \"≤ floor\": not above its upper end): {floor}")
    else:
        lines.append("judge-noise floor: not measured (--no-noise-floor); sub-floor results are not marked")
    findings = result.ordering.get("findings", {})
    reasons = result.ordering.get("reasons", {})
    marks = ", ".join(f"{CHECK_NAMES[key]}: {findings.get(key, 'n/a')}"
                      + (f" ({reasons[key]})" if key in reasons else "")
                      for key in result.ordering["checks"])
    mapped = [variant for name, variant in result.ordering.get("paper", {}).items() if variant != name]
    lines.append(f"paper's ordering{' (on ' + ', '.join(mapped) + ')' if mapped else ''} — {marks}")
    lines += health.console_lines(gps)
    lines += [f"warning: {line}" for line in separation_warnings(gps, imu)]
    if result.real_sample is not None:
        lines += console_lines(result.real_sample, gps, imu)
    if result.judges is not None:
        lines += judges.console_lines(result.judges)
    lines.append(_time_line(result))
    if result.runs_note:
        lines.append(result.runs_note)
    else:
        lines.append(f"run bags: {result.out / RUNS} ({result.runs_bytes / 1e6:.0f} MB)" if result.runs_kept
                     else f"run bags: none written (scored in memory); --keep-runs writes them to "
                          f"{result.out / RUNS}")
    return "\n".join(lines)


def _time_line(result: DemoResult) -> str:
    """Wall and CPU time of the demo and of each of its steps."""
    wall, cpu = result.timings, result.cpu_times or {}
    labels = {"startup": "startup", "real_sample": "import + calibrate + tune", "real_bags": "real bags",
              "runs": "runs", "score": "scores + figures", "judges": "other judges",
              "sensitivity": "sensitivity",
              "report": "report files"}
    steps = ", ".join(f"{label} {wall[name]:.1f}" + (f" ({cpu[name]:.1f} CPU)" if name in cpu else "")
                      for name, label in labels.items() if name in wall)
    return (f"wall time {wall['total']:.1f} s, CPU {cpu.get('total', 0.0):.1f} s ({steps}); "
            f"report: {result.out / 'report.html'}")
