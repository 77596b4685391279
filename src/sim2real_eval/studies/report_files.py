"""Step 4 of the demo: its files — the report of both studies (``report.write_report``), the real
sample's section and files, demo.json — built in a staging folder inside OUT and published into OUT by
the one output policy (``outputs.staging_folder``, ``outputs.publish_files``, ``outputs.write_marker``)
only when every score is done, so OUT never holds a half-written report file."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..calibrate import shortfall
from ..outputs import publish_files, staging_folder, write_marker
from . import judges
from . import real_sample as rs
from .accounting import tree_bytes
from .findings import ordering_checks, separation_warnings
from .fit import described
from .job import COMMAND, IMU_STUDY, REAL_SAMPLE, SUMMARY, DemoJob, DemoResult, RealSide
from .plan import imu_variant
from .scoring import ScoredStudies
from .tune_outputs import write_outputs

IMU_STUDY_NOTE = ("The paper's second study: the same real runs replayed with the real GPS and a simulated "
                  "IMU, against the real GPS and the real IMU.  It measures the simulated IMU's gap alone; "
                  "each sim run k replays real bag k, so runs are resampled as (scenario, k) pairs.")


def finish(job: DemoJob, side: RealSide, replayed, groups: list, scored: ScoredStudies,
           sensitivity) -> DemoResult:
    """Step 4: the report files (built aside, then published into OUT), demo.json, the marker."""
    out, stages = job.out, job.stages
    runs_total = sum(1 + len(g.sims) for g in groups)
    with staging_folder(out) as staging:
        gps_doc, imu_doc, sample_doc = _report_files(job, side, scored, sensitivity, staging)
        ordering = ordering_checks(gps_doc, imu_doc, scored.gps_result, scored.imu_result,
                                   job.config.paper_variants, [imu_variant(job.config)])
        stages.done("report")
        runs_bytes = sum(tree_bytes(Path(run.path)) for run in replayed.runs) if job.keep_runs else 0
        stages.total()
        summary = {
            "k": job.k, "scenarios": list(side.bags), "real_source": side.source,
            "imu_study_scenario": ", ".join(side.imu_scenarios),
            "runs": {"groups": len(groups), "groups_with_new_runs": replayed.report.written,
                     "total": runs_total, "bag_bytes": runs_bytes, "kept": job.keep_runs},
            "wall_time_s": {name: round(value, 3) for name, value in stages.wall.items()},
            "cpu_time_s": {name: round(value, 3) for name, value in stages.cpu.items()},
            "workers": job.workers, "ordering": ordering, "config": job.config.source,
            "judge_timing": job.config.judge.timing.describe(), "judge_noise_floor": scored.floors,
            "warnings": separation_warnings(scored.gps_result, scored.imu_result),
        }
        if sample_doc is not None:
            summary["real_sample"] = sample_doc
        (staging / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True, default=float) + "\n",
                                       encoding="utf-8")
        files = publish_files(staging, out, job.previous.get("files", {}), "--out", COMMAND)
    # Run bags an earlier --keep-runs wrote are the user's: a plain demo leaves them as they are.
    runs_dir = job.runs_dir
    earlier_runs = bool(job.previous.get("runs_kept")) and runs_dir.is_dir()
    write_marker(out, COMMAND, files, runs_kept=(job.keep_runs and runs_dir.is_dir()) or earlier_runs)
    note = None
    if earlier_runs and not job.keep_runs:
        note = (f"run bags: {runs_dir} ({tree_bytes(runs_dir) / 1e6:.0f} MB) kept as an earlier --keep-runs "
                "wrote them, untouched (this demo scored in memory; remove the folder to free the space)")
    return DemoResult(out=out, k=job.k, scenarios=list(side.bags), timings=stages.wall, gps=gps_doc,
                      imu=imu_doc, ordering=ordering, real_source=side.source,
                      runs_written=replayed.report.written, runs_total=runs_total, noise_floor=scored.floors,
                      runs_bytes=runs_bytes, runs_kept=job.keep_runs, cpu_times=stages.cpu,
                      gps_result=scored.gps_result, imu_result=scored.imu_result, runs_note=note,
                      real_sample=sample_doc, judges=scored.judges)


def _report_files(job: DemoJob, side: RealSide, scored: ScoredStudies, sensitivity, staging: Path) -> tuple:
    """Write the report (both studies; the real sample's section and files) into ``staging``:
    (GPS vepd document, IMU vepd document, the real sample's record or None)."""
    from ..report import Study, tables, write_report
    from ..report.provenance import collect as collect_provenance

    extra = {"input": "demo", "source": side.source, "k": job.k}
    context = {"command": "sim2real-eval demo" + (" --real-sample" if job.real_sample else ""),
               "demo configuration": job.config.source, "runs per scenario": job.k}
    source = str(job.runs_dir) if job.keep_runs else \
        "judged and scored in memory (--keep-runs writes them to OUT/runs)"
    gps_result, imu_result = scored.gps_result, scored.imu_result
    imu_provenance = collect_provenance(imu_result, "demo runs", source, context, scored.run_records)
    imu_section = Study(IMU_STUDY, f"Simulated-IMU study: {scored.imu_title}", imu_result, scored.imu_series,
                        note=IMU_STUDY_NOTE, provenance=imu_provenance)
    sections, sample_doc, sample_dir = (), None, staging.parent / REAL_SAMPLE
    if side.sample is not None:
        sections, sample_doc = _real_sample_files(side.sample, gps_result, imu_result, sensitivity,
                                                  sample_dir, job.config.seed)
    if scored.judges is not None:
        sections += (judges.report_section(scored.judges),)
    write_report(staging, gps_result, scored.gps_series, source, extra_options=extra, workers=job.workers,
                 provenance=collect_provenance(gps_result, "demo runs", source, context, scored.run_records),
                 studies=[imu_section], pngs=scored.pngs, sections=sections)
    prefix = f"{IMU_STUDY}_"  # the IMU study's own folder: the same figures, drawn once
    write_report(staging / IMU_STUDY, imu_result, scored.imu_series, source,
                 extra_options=dict(extra, study=scored.imu_title), workers=job.workers,
                 provenance=imu_provenance,
                 pngs={name[len(prefix):]: png for name, png in scored.pngs.items()
                       if name.startswith(prefix)})
    if scored.judges is not None:
        judges.write(scored.judges, staging)
    if side.sample is not None:
        os.replace(sample_dir, staging / REAL_SAMPLE)
    return tables.vepd_document(gps_result, extra), tables.vepd_document(imu_result, extra), sample_doc


def _real_sample_files(sample, gps_result, imu_result, sensitivity: dict, folder: Path, seed: int) -> tuple:
    """The real sample's files in ``folder`` (calibration/: calibrate --truth's presets, report and
    plots; tune/: tune's outputs; shortfall/: the closest preset's error statistics against the real
    sensors, shortfall_fitted/: the fitted variant's; real_sample.json) and its report section:
    ((ReportSection,), record)."""
    from ..calibrate.drive import write_drive_calibration
    from ..report import ReportSection

    calibration = folder / "calibration"
    calibration.mkdir(parents=True)
    write_drive_calibration(sample.calibration, calibration / "params.yaml", plots_dir=calibration)
    write_outputs(sample.tuned, folder / "tune", marker=False)
    record = dict(rs.record(sample), sensitivity=sensitivity,
                  verdicts=rs.verdict_rows([("GPS study", gps_result), ("IMU study", imu_result)]),
                  comparisons=rs.fitted_rows(gps_result, imu_result))
    segments = shortfall.segments_from_bags(sum(sample.bags.values(), []))  # read once, for both shortfalls
    gap = shortfall.closest_preset_shortfall(segments, gps_result, sample.gps_variants[0].replace["imu"],
                                             seed)
    gap_files = shortfall.write_shortfall(gap, folder / "shortfall")
    record["shortfall"] = {"variant": gap.vepd["variant"], "differs": gap.differing(), "vepd": gap.vepd}
    gaps = [(gap, gap_files, "real_sample/shortfall/shortfall.png")]
    fitted = next((v for v in sample.gps_variants if v.name == rs.FITTED), None)
    if fitted is not None:  # issue 31: what the fitted families miss
        fit_gap = shortfall.error_statistics(segments, *described(fitted.replace), seed=seed,
                                             study=gps_result, variant=rs.FITTED)
        gaps.append((fit_gap, shortfall.write_shortfall(fit_gap, folder / "shortfall_fitted"),
                     "real_sample/shortfall_fitted/shortfall.png"))
        record["shortfall_fitted"] = {"variant": rs.FITTED, "differs": fit_gap.differing(),
                                      "vepd": fit_gap.vepd}
    text = json.dumps(record, indent=2, sort_keys=True, default=float) + "\n"
    (folder / "real_sample.json").write_text(text, encoding="utf-8")
    images = {"Calibration on the held-out windows: fix minus truth":
              (calibration / "gps_error.png").read_bytes(),
              "Tuning on the held-out windows": (folder / "tune" / "convergence.png").read_bytes()}
    section = ReportSection(rs.section_html(record, gps_result, imu_result, sensitivity, images)
                            + [part for g, files, _png in gaps
                               for part in shortfall.section_html(g, files["figure"].read_bytes())],
                            rs.section_markdown(record, gps_result, imu_result, sensitivity)
                            + "".join(shortfall.markdown_section(g, "##", png) for g, _files, png in gaps))
    return (section,), record
