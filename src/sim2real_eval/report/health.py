"""Judge health in the reports (``replay.health`` measures it per real run; ``metrics.RunRecord.health``):
vepd.json (each row's ``real_tracked`` and ``options.judge_health``), a tables.md section, report.html's
first-screen warning and section, the console's warning line and Table I mark.  Nothing is shown for
inputs whose real runs were not assessed (CSV files, manifests of bags without a judge)."""
from __future__ import annotations

import html
from collections import Counter

from ..metrics.study import REAL, StudyResult

NOT_TRACKED = "real side not tracked"
SENTENCE = ("The VEPD compares the real side's judged speed errors with the simulated side's; it means "
            "something only while the judge tracks the real vehicle.  Per real run: the scored speed RMSE "
            "E against the truth's speed scale s (RMS of the truth speed on the scored timeline, at least "
            "{floor:g} m/s); a run is not tracked when E / s > {threshold:g}.  NIS: each fused sensor's "
            "innovations against the filter's prior (post hoc, from the published series), the share "
            "outside the 95 % χ² band of one NIS (5 % expected).  Truth noise: the truth's own velocity "
            "noise σ and the share of E² it could explain (σ² / E²).  docs/scoring.md, 'Judge health'.")

NEXT_STEPS = {
    "gravity": ("the judge runs two_d_mode and fuses the IMU's accelerations: on slopes gravity leaks into "
                "its horizontal acceleration; use the terrain template (--config demo_terrain.yaml; "
                "docs/rover.md), give the IMU an orientation (sim2real-eval import ... --imu-orientation "
                "madgwick), or leave the accelerations out of imu0_config"),
    "accelerometer_bias": ("calibrate the IMU against the truth (sim2real-eval calibrate --truth) and "
                           "remove the bias from the data, or leave the accelerations out of imu0_config"),
    "gps_lag": ("correct the GPS stamps by the lag (sim2real-eval calibrate --truth measures it) and import "
                "the drive again"),
    "mount": ("the IMU's static TF does not match its mount: import the drive again with "
              "--estimate-mounting, or give the right --static-tf"),
    "divergence": ("the filter diverges: check its configuration and IMU covariances with "
                   "sim2real-eval judge --check (docs/judge.md, 'Divergence')"),
    None: ("none of the measured causes (gravity in a 2-D judge, accelerometer bias, GPS stamp lag, IMU "
           "mount, divergence) reaches its threshold: check the judge configuration "
           "(sim2real-eval judge --check) and the truth"),
}


def real_runs(records) -> list:
    """The assessed real runs of ``records`` (RunRecord)."""
    return [r for r in records if r.side == REAL and getattr(r, "health", None)]


def tracked(result: StudyResult, scenario: str | None = None) -> bool | None:
    """Whether every assessed real run (of ``scenario``) is tracked; None when none was assessed."""
    runs = [r for r in real_runs(result.runs) if scenario is None or r.scenario == scenario]
    return None if not runs else all(r.health["tracked"] for r in runs)


def row_fields(result: StudyResult, scenario: str | None = None) -> dict:
    """vepd.json row keys: ``{"real_tracked": bool}``, or nothing when no real run was assessed."""
    value = tracked(result, scenario)
    return {} if value is None else {"real_tracked": value}


def describe_cause(name: str | None, cause: dict | None) -> str:
    """The cause a not-tracked run's data point to, with its measure."""
    if name is None or cause is None:
        return "no measured cause"
    value, unit = cause["value"], cause["unit"]
    if name == "gravity":
        how = ("removed along a level attitude: the IMU messages carry no orientation; truth attitude × g"
               if cause.get("removed_along", "a level attitude") == "a level attitude" else
               "removed along the IMU messages' orientation, which is off the truth's")
        return (f"gravity leaking into the 2-D judge ({how}: RMS {value:.3g} {unit} along the fused axes "
                f"{', '.join(cause['axes'])}; threshold {cause['threshold']:g})")
    if name == "accelerometer_bias":
        return f"an accelerometer bias (mean IMU − truth specific force {value:.3g} {unit})"
    if name == "gps_lag":
        removed = 100 * cause["variance_removed"]
        return (f"a GPS stamp lag of {cause['lag_s']:.3f} s (it removes {removed:.0f} % of the fixes' error "
                "variance)")
    if name == "mount":
        return f"a wrong IMU mount (its mean specific force is {value:.1f}° off the truth's)"
    return (f"a diverging filter (speed error {value:.1f}× larger in the last third than in the first, "
            f"velocity variance {cause.get('covariance_growth', float('nan')):.3g}×)")


WARNING_OPENING = "the judge does not track the real vehicle "  # the stderr warning's first words


def warning_line(records) -> str | None:
    """One warning for the real runs of ``records`` that are not tracked: how many, the worst E / s, the
    cause most of them point to with its measure, and a next step; None when every one is tracked."""
    judged = real_runs(records)
    failing = [r for r in judged if not r.health["tracked"]]
    if not failing:
        return None
    counts = Counter(r.health["cause"] for r in failing)
    cause = max(counts, key=lambda name: (counts[name], name is not None, str(name)))
    worst = max(failing, key=lambda r: r.health["speed"]["ratio"])
    example = max((r for r in failing if r.health["cause"] == cause),
                  key=lambda r: r.health["speed"]["ratio"])
    speed = worst.health["speed"]
    pointed = describe_cause(cause, example.health["causes"].get(cause) if cause else None)
    return (f"{WARNING_OPENING}in {len(failing)} of {len(judged)} real run(s): "
            f"speed RMSE up to {speed['rmse']:.3g} m/s against a truth speed scale of {speed['scale']:.3g} "
            f"m/s ({worst.scenario}/{worst.k}, E/s {speed['ratio']:.2f} > {speed['threshold']:g}), so its "
            f"VEPD rows compare a failing estimator with the simulation; the data point to {pointed} in "
            f"{counts[cause]} of them; next step: {NEXT_STEPS[cause]} (docs/scoring.md, 'Judge health')")


def truth_noise_line(records) -> str | None:
    """How much of the real runs' speed error the truth's own velocity noise could explain."""
    noted = [r for r in real_runs(records) if r.health.get("truth_velocity_noise")]
    if not noted:
        return None
    sigmas = [r.health["truth_velocity_noise"]["sigma_mps"] for r in noted]
    shares = [r.health["truth_velocity_noise"]["explained_fraction"] for r in noted]
    sources = sorted({r.health["truth_velocity_noise"]["source"].split(":")[-1].strip() for r in noted})
    return (f"Truth velocity noise σ {min(sigmas):.3g}–{max(sigmas):.3g} m/s ({'; '.join(sources)}): it "
            f"could explain {100 * min(shares):.2g}–{100 * max(shares):.2g} % of the real runs' mean squared "
            "speed error (σ² / E²).")


def document(result: StudyResult) -> dict | None:
    """vepd.json ``options.judge_health``: the verdict, the warning and every assessed real run's health."""
    runs = real_runs(result.runs)
    if not runs:
        return None
    return {"tracked": tracked(result), "not_tracked": sum(not r.health["tracked"] for r in runs),
            "real_runs": len(runs), "warning": warning_line(result.runs),
            "truth_velocity_noise": truth_noise_line(result.runs),
            # scenario and k name the run; where it was read from (a kept run bag, the real bag in memory,
            # a Ray node's path) is provenance, left out so that the document is the same wherever it ran
            "runs": [{"scenario": r.scenario, "k": r.k, **r.health} for r in runs]}


def _nis_text(health: dict) -> str:
    parts = [f"{name}: mean {entry['mean']:.3g} (dof {entry['dof']}), {100 * entry['outside']:.0f} % outside"
             for name, entry in health["nis"].items()]
    return "; ".join(parts) or "–"


def _rows(result: StudyResult) -> list:
    rows = []
    for r in real_runs(result.runs):
        h = r.health
        noise = h.get("truth_velocity_noise")
        rows.append([r.scenario, str(r.k), f"{h['speed']['rmse']:.4f}", f"{h['speed']['scale']:.3f}",
                     f"{h['speed']['ratio']:.3f}", "yes" if h["tracked"] else "NO",
                     "–" if h["tracked"] else describe_cause(h["cause"], h["causes"].get(h["cause"])),
                     _nis_text(h),
                     "–" if noise is None else
                     f"{noise['sigma_mps']:.3g} ({100 * noise['explained_fraction']:.2g} %)"])
    return rows


HEADER = ["scenario", "k", "E (m/s)", "truth speed scale s (m/s)", "E / s", "tracked", "cause (measured)",
          "NIS of the fused sensors", "truth noise σ m/s (share of E²)"]


def _sentence(result: StudyResult) -> str:
    first = real_runs(result.runs)[0].health["speed"]
    return SENTENCE.format(floor=first["floor"], threshold=first["threshold"])


def markdown(result: StudyResult, table) -> list:
    """tables.md lines (none when no real run was assessed)."""
    if not real_runs(result.runs):
        return []
    lines = ["## Judge health (real side)", "", _sentence(result), ""]  # the warning: at the top
    noise = truth_noise_line(result.runs)
    if noise:
        lines += [noise, ""]
    return lines + [table(HEADER, _rows(result)), ""]


def first_screen_html(result: StudyResult) -> list:
    """The warning shown at the top of report.html when the real side is not tracked (else nothing)."""
    warning = warning_line(result.runs)
    if not warning:
        return []
    # the headline says the first words of the warning: the body goes on from "in N of M real run(s)"
    body = warning[len(WARNING_OPENING):] if warning.startswith(WARNING_OPENING) else warning
    body = body[:1].upper() + body[1:]
    return [f'<div class="banner alarm"><b class="kind">The judge does not track the real vehicle: the VEPD '
            f"rows below compare a failing estimator.</b><br>{html.escape(body)}.</div>"]


def html_parts(result: StudyResult, table, heading: str = "h2") -> list:
    """report.html section (none when no real run was assessed)."""
    if not real_runs(result.runs):
        return []
    parts = [f"<{heading}>Judge health (real side)</{heading}>",
             f'<p class="note">{html.escape(_sentence(result))}</p>']
    noise = truth_noise_line(result.runs)
    if noise:
        parts.append(f'<p class="note">{html.escape(noise)}</p>')
    return parts + [table(HEADER, _rows(result))]


def console_lines(result: StudyResult, label: str = "") -> list:
    """Lines the demo prints under Table I: the verdict and the truth's noise share."""
    runs = real_runs(result.runs)
    if not runs:
        return []
    failing = sum(not r.health["tracked"] for r in runs)
    worst = max(r.health["speed"]["ratio"] for r in runs)
    threshold = runs[0].health["speed"]["threshold"]
    if not failing:
        verdict = (f"judge health{label}: real side tracked in all {len(runs)} real runs (speed RMSE / truth "
                   f"speed scale at most {worst:.3f}; not tracked above {threshold:g})")
    else:
        verdict = (f"judge health{label}: {NOT_TRACKED} in {failing} of {len(runs)} real runs (speed RMSE / "
                   f"truth speed scale up to {worst:.2f} > {threshold:g}): the VEPD rows marked "
                   f"\"{NOT_TRACKED}\" compare a failing estimator")
    noise = truth_noise_line(result.runs)
    return [verdict] + ([noise] if noise else [])
