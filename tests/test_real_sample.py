"""The real study end to end (issue 18 item 7): ``sim2real-eval demo --real-sample`` on the shipped comma2k19
drive, and a newcomer's own logs in the generic CSV layout → the report in two commands (``import csv``,
then ``demo --real … --config demo_car.yaml``).  Plus the pieces: the demo_car.yaml section, tuning on
real bags (``studies.tune.tune_replay``), the paper's checks on renamed variants, the IMU study on
every scenario."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.studies import config as studies_config
from sim2real_eval.studies import findings, plan, real_sample

REPO = Path(__file__).resolve().parents[1]
SEGMENT = REPO / "bags" / "real" / "comma2k19" / "b0c9d2329ad1606b_2018-08-02--08-34-47" / "40"
CAR_VARIANTS = ["car_gauss", "car_rw", "car_airsim", "car_gauss_airsim", "car_rw_airsim"]


def rows_of(path: Path) -> list:
    with path.open(encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


# ------------------------------------------------------------------------- the one documented command
@pytest.mark.slow
def test_real_sample_writes_the_report_from_the_raw_segment(real_sample_demo):
    out = real_sample_demo
    for name in ("report.html", "vepd.json", "statistics.json", "runs.csv", "tables.md", "demo.json",
                 "imu_study/report.html", "real_sample/real_sample.json",
                 "real_sample/calibration/params.yaml",
                 "real_sample/calibration/params_gps.yaml", "real_sample/calibration/params_imu.yaml",
                 "real_sample/calibration/gps_error.png", "real_sample/tune/best.yaml",
                 "real_sample/tune/trials.csv", "real_sample/tune/convergence.png",
                 "real_sample/shortfall/shortfall.png", "real_sample/shortfall/shortfall.md",
                 "real_sample/shortfall/shortfall.json", "real_sample/shortfall_fitted/shortfall.md",
                 "real_sample/shortfall_fitted/shortfall.png", "real_sample/shortfall_fitted/shortfall.json"):
        assert (out / name).is_file(), name
    assert not (out / "real_sample" / "tune" / ".sim2real-eval.json").exists()  # the demo's, not tune's
    windows = sorted(p.name for p in (out / "imported" / "windows" / "highway").iterdir())
    assert windows == [f"run_{k:02d}" for k in range(11)]
    for other in ("held_out", "fix_sigma_x0.5", "fix_sigma_x2", "pseudorange"):
        assert (out / "imported" / other / "import.yaml").is_file(), other
    gps = json.loads((out / "vepd.json").read_text())["combined"]
    assert sorted(gps) == sorted(CAR_VARIANTS + ["calibrated", "tuned", "fitted"])
    imu = json.loads((out / "imu_study" / "vepd.json").read_text())["combined"]
    assert sorted(imu) == ["sim_imu-calibrated", "sim_imu-car_mems"]
    assert all(cell["n_real"] == cell["n_sim"] == 6 for cell in {**gps, **imu}.values())
    # the judge-noise floor, intervals and p-values of a real study
    stats = json.loads((out / "statistics.json").read_text())
    assert "combined" in stats["judge_noise_floor"]
    assert all(gps[v]["VEPD_ci95"] and stats["combined"][v]["p_VEPD"] is not None for v in gps)


@pytest.mark.slow
def test_held_out_windows_are_never_scored(real_sample_demo):
    """Calibration and tuning see windows 0–4 only; the scored real runs are windows 5–10."""
    out = real_sample_demo
    record = json.loads((out / "real_sample" / "real_sample.json").read_text())
    assert [w["use"] for w in record["windows"]] == ["held out"] * 5 + ["scored"] * 6
    # every scored run names its real bag (the page's table of scored runs): windows 5–10 only
    page = (out / "report.html").read_text()
    names = sorted(set(re.findall(r"imported/windows/highway/(run_\d\d)", page)))
    assert names == [f"run_{k:02d}" for k in range(5, 11)]
    assert "imported/held_out" not in page.split("All ")[-1]
    held_out = yaml.safe_load((out / "imported" / "held_out" / "import.yaml").read_text())
    assert len(held_out["runs"]) == 1
    span = held_out["runs"][0]["window_s"]
    windows = yaml.safe_load((out / "imported" / "windows" / "import.yaml").read_text())["runs"]
    first_scored = windows[5]["window_s"][0]
    assert span[1] <= first_scored + 1e-6 and span[0] == pytest.approx(windows[0]["window_s"][0])
    assert record["calibration"]["gps"]["duration_s"] < 25.0 + 1e-6
    assert record["tune"]["trials"] == 16 and record["tune"]["base"] == "car_gauss"
    trials = rows_of(out / "real_sample" / "tune" / "trials.csv")
    assert len(trials) == 17 and trials[0]["trial"] == "baseline"
    # the fitted variant says what it is, where the page lists how the real side was used and what each
    # variant models (not "an inline model")
    assert list(record["fit"]) == ["fitted"] and "held-out windows" in record["fit"]["fitted"]
    assert "Fitted (variant `fitted`): a GPS white + Gauss-Markov position error, fitted together" in page
    assert "fitted together with the GPS by sim2real-eval fit" in page


@pytest.mark.slow
def test_the_report_says_what_the_floor_can_and_cannot_separate(real_sample_demo):
    """Every variant's verdict follows the rule (≤ floor / above it with p < 0.05 / above it without),
    the fitted variants are compared with the untuned ones, the sensitivity line is there: in the
    page, in tables.md and in real_sample.json."""
    out = real_sample_demo
    record = json.loads((out / "real_sample" / "real_sample.json").read_text())
    gps = json.loads((out / "vepd.json").read_text())["combined"]
    stats = json.loads((out / "statistics.json").read_text())
    upper = next(iter(stats["judge_noise_floor"]["combined"].values()))["VEPD_interval"][1]
    for study, variant, vepd, _ci, _p, floor, verdict, group in record["verdicts"]:
        assert group and set(group) <= set("abcdefghijklmnopqrstuvwxyz"), (variant, group)
        if study != "GPS study":
            continue
        assert float(vepd) == pytest.approx(gps[variant]["VEPD"], abs=5e-5)
        assert float(floor) == pytest.approx(upper, abs=5e-5)
        p = stats["combined"][variant]["p_VEPD"]
        expected = "≤ floor" if gps[variant]["VEPD"] <= upper else \
            "farther than the floor" if p < 0.05 else "above the floor, p ≥ 0.05"
        assert verdict == expected, variant
    pairs = {(row[0], row[1]) for row in record["comparisons"]}
    assert {("calibrated", "car_gauss"), ("tuned", "car_gauss"),
            ("sim_imu-calibrated", "sim_imu-car_mems")} <= pairs
    assert list(record["sensitivity"]) == ["0.5×", "1×", "2×", "pseudorange"]
    sigma = {label: cell["sigma_m"] for label, cell in record["sensitivity"].items()}
    assert sigma["0.5×"] == pytest.approx(0.15) and sigma["2×"] == pytest.approx(0.6)
    assert sigma["pseudorange"] > 5.0  # the receiver's own (code-phase) statement, median ≈ 7.7 m
    # the 1× column is the main study itself
    assert record["sensitivity"]["1×"]["gps_study"]["car_gauss"]["VEPD"] == gps["car_gauss"]["VEPD"]
    page = (out / "report.html").read_text()
    markdown = (out / "tables.md").read_text()
    for text in ("The real sample: comma2k19, a real car", "Sensitivity to the receiver covariance",
                 "Calibrated and tuned against the untuned variants", "(both must say so;"):
        assert text in page and text in markdown   # every page saying "separable" states the rule
    assert page.index("The real sample") < page.index("Table I")
    # the closest preset's shortfall against the real sensors (calibrate/shortfall.py): its VEPD split
    closest = min((v for v in gps if v not in ("calibrated", "tuned", "fitted")),
                  key=lambda v: gps[v]["VEPD"])
    split = record["shortfall"]["vepd"]
    assert split["variant"] == closest and split["VEPD"] == gps[closest]["VEPD"]
    assert split["W1_half"] + split["W2_half"] == pytest.approx(split["VEPD"])
    assert record["shortfall"]["differs"]   # the presets do not reproduce the phone's IMU residual
    title = f"Why the model falls short: {closest} + car_mems against the real sensors"
    assert title in page and title in markdown
    # and the fitted variant's (issue 31: what the fitted families miss), its VEPD split from the study
    fitted = record["shortfall_fitted"]["vepd"]
    assert fitted["variant"] == "fitted" and fitted["VEPD"] == gps["fitted"]["VEPD"]
    title = "Why the model falls short: fitted GPS + fitted IMU against the real sensors"
    assert title in page and title in markdown
    summary = json.loads((out / "demo.json").read_text())
    assert summary["real_sample"]["k"] == 6 and summary["wall_time_s"]["real_sample"] > 0
    assert summary["ordering"]["paper"]["ch_gauss"] == "car_gauss"


@pytest.mark.slow
def test_real_sample_prints_its_findings(real_sample_demo, capsys, tmp_path):
    """The console summary of a rerun into its own output (the report replaced, no re-import refused)."""
    assert main(["demo", "--real-sample", "--out", str(real_sample_demo), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "real sample: 11 windows of 5 s" in printed
    assert "as close to the real sensors as the judge-noise floor can tell:" in printed
    assert "receiver covariance sensitivity (VEPD at 0.5× / 1× / 2× / pseudorange)" in printed
    assert "calibrated − car_gauss" in printed and "tuned − car_gauss" in printed


def test_real_sample_refuses_what_does_not_apply(tmp_path, capsys):
    for extra in (["--real", str(tmp_path)], ["--k", "3"], ["--quick"]):
        assert main(["demo", "--real-sample", "--out", str(tmp_path / "out"), *extra]) == 2
        assert "--real-sample" in capsys.readouterr().err
    assert main(["demo", "--real-sample", "--config", "demo.yaml", "--out", str(tmp_path / "o")]) == 2
    assert "no real_sample section" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


def test_an_imported_folder_that_is_not_the_demos_is_refused(tmp_path):
    (tmp_path / "imported" / "windows").mkdir(parents=True)
    (tmp_path / "imported" / "windows" / "mine.txt").write_text("mine")
    config = studies_config.load_demo_config(REPO / "config" / "studies" / "demo_car.yaml")
    with pytest.raises(UserError, match="not an import the demo wrote"):
        real_sample.import_windows(config.real_sample, tmp_path)
    assert (tmp_path / "imported" / "windows" / "mine.txt").read_text() == "mine"


# ----------------------------------------------------------------------------------- demo_car.yaml
def test_demo_car_config_parses():
    config = studies_config.load_demo_config(REPO / "config" / "studies" / "demo_car.yaml")
    assert config.gps_variants == tuple(CAR_VARIANTS)
    assert dict(config.paper_variants) == {
        "ch_gauss": "car_gauss", "ch_rw": "car_rw", "airsim": "car_airsim",
        "ch_gauss_airsim": "car_gauss_airsim", "ch_rw_airsim": "car_rw_airsim"}
    assert config.imu_scenario == studies_config.EVERY_SCENARIO
    assert config.judge.initial_state == "truth" and config.judge.warmup_s == 1.0
    assert Path(config.judge.ekf).name == "ekf_car.yaml" and not config.static_tfs_by_layout
    sample = config.real_sample
    assert (sample.window_s, sample.held_out_windows, sample.fix_covariance) == (5.0, 5, 0.3)
    assert sample.sensitivity == (0.5, 2.0) and sample.pseudorange_policy
    # the shipped ART demo has no real sample and the paper's own names
    art = studies_config.load_demo_config()
    assert art.real_sample is None
    assert dict(art.paper_variants) == {v: v for v in studies_config.PAPER_VARIANTS}


@pytest.mark.parametrize("edit, message", [
    (("window_s: 5.0", "window_s: 5.0\n  colour: red"), r"real_sample: unknown key\(s\) colour"),
    (("sensitivity: [0.5, 2.0]", "sensitivity: [0.5, 1]"), r"real_sample\.sensitivity"),
    (("held_out_windows: 5 ", "held_out_windows: 1 "), r"real_sample\.held_out_windows"),
    (("  ch_rw: car_rw\n", "  ch_rw: hector\n"), r"paper_variants\.ch_rw"),
    (('scenario: "*"', "scenario: 'a b'"), r"imu_study\.scenario"),
])
def test_demo_car_config_errors_name_the_key(tmp_path, edit, message):
    text = (REPO / "config" / "studies" / "demo_car.yaml").read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(UserError, match=message):
        studies_config.load_demo_config(bad)


def test_scaled_covariance_is_the_importers_scale():
    from sim2real_eval.importer.comma2k19 import read_segment

    drive, _offset = read_segment(SEGMENT, 0.3, 1.0, True)
    doubled = real_sample._scaled(drive, 2.0)
    assert np.allclose(doubled.fixes.covariance.variances(), 4 * drive.fixes.covariance.variances())
    assert doubled.record["gnss"]["scale"] == 2.0 and drive.record["gnss"]["scale"] == 1.0
    assert real_sample._median_sigma(doubled) == pytest.approx(0.6)


# ---------------------------------------------------------------------------- the pieces of the demo
def test_paper_checks_on_renamed_variants_equal_the_paper_names():
    """The car template's variants checked as the paper's: the same checks as with the paper's names."""
    paper = {"ch_gauss": 0.155, "ch_rw": 0.043, "airsim": 0.039, "ch_gauss_airsim": 0.0627,
             "ch_rw_airsim": 0.0482}

    def car_name(name):
        return name.replace("ch_", "car_") if name.startswith("ch_") else f"car_{name}"

    car = {car_name(name): value for name, value in paper.items()}
    car["calibrated"] = 0.001  # a variant the paper does not have is not part of its checks

    def doc(values):
        return {"combined": {name: {"VEPD": value} for name, value in values.items()}}

    mapping = tuple((name, car_name(name)) for name in studies_config.PAPER_VARIANTS)
    named = findings.ordering_checks(doc(paper), doc({"sim_imu-x": 0.0211}))
    renamed = findings.ordering_checks(doc(car), doc({"sim_imu-x": 0.0211, "sim_imu-y": 0.5}), paper=mapping,
                                   imu_variants=["sim_imu-x"])
    assert renamed["checks"] == named["checks"] == {"ch_gauss_worst": True, "ch_rw_and_airsim_best": True,
                                                    "hdop_improves_ch_gauss": True, "sim_imu_small": True}
    assert renamed["paper"]["airsim"] == "car_airsim" and "paper" not in named


def test_imu_study_on_every_scenario(tmp_path):
    from sim2real_eval import reference

    setup = reference.load_setup(REPO / "config" / "studies" / "demo_reference.yaml")
    bags = {s: [reference.run_path(reference.shipped_reference_dir(), s, k) for k in (0, 1)]
            for s in ("line", "circle")}
    config = studies_config.load_demo_config()
    assert setup.scenarios  # the shipped reference runs exist
    one = plan.plan_groups(config, bags, "line")
    every = plan.plan_groups(config, bags, studies_config.EVERY_SCENARIO)
    imu = plan.imu_variant(config)
    assert [any(s.variant == imu for s in g.sims) for g in one] == [True, True, False, False]
    assert all(any(s.variant == imu for s in g.sims) for g in every)


@pytest.mark.slow
def test_tune_on_real_bags_is_seeded_and_never_worse_than_untuned(tmp_path):
    """``tune_replay`` on three imported windows: the same seed gives the same trials; the result is the
    untuned model unless a trial beat it."""
    from sim2real_eval.importer import import_comma2k19
    from sim2real_eval.runs import RealBag
    from sim2real_eval.studies.tune import tune_replay

    result = import_comma2k19(SEGMENT, tmp_path / "windows", window=5, estimate_mounting=True,
                              fix_covariance=0.3)
    bags = [RealBag(run.path, "highway", k) for k, run in enumerate(result.runs[:3])]
    judge = studies_config.load_demo_config(REPO / "config" / "studies" / "demo_car.yaml").judge
    params = "gps.position_noise.sigma=0.01:1:log"
    base = {"gps": "car_gauss", "imu": "car_mems"}
    first = tune_replay(bags, judge, base, params, budget=3, progress=False)
    again = tune_replay(bags, judge, base, params, budget=3, progress=False)
    assert [t.vepd for t in first.trials] == [t.vepd for t in again.trials]
    assert first.baseline.vepd == again.baseline.vepd and len(first.trials) == 3
    assert first.best.vepd <= first.baseline.vepd
    assert all(np.isfinite(t.vepd) for t in first.trials)
    with pytest.raises(UserError, match="at least 2 bags per scenario"):
        tune_replay(bags[:1], judge, {"gps": "car_gauss", "imu": "car_mems"}, params, budget=1,
                    progress=False)


# --------------------------------------------------------------------- a newcomer's logs, two commands
def write_csv_logs(folder: Path) -> Path:
    """The three CSV files a logger writes (here from the shipped segment's arrays, as docs/import.md's
    worked example does): fixes without accuracy, an FRD IMU, ECEF truth."""
    folder.mkdir(parents=True)

    def load(name):
        return np.load(SEGMENT / name)

    def save(name, header, *columns):
        np.savetxt(folder / name, np.column_stack(columns), delimiter=",", header=header, comments="",
                   fmt="%.12g")

    fix = load("processed_log/GNSS/live_gnss_ublox/value")
    save("gnss.csv", "t,lat,lon,alt", load("processed_log/GNSS/live_gnss_ublox/t"), fix[:, 0], fix[:, 1],
         fix[:, 4])
    save("imu.csv", "t,ax,ay,az,wx,wy,wz", load("processed_log/IMU/accelerometer/t"),
         load("processed_log/IMU/accelerometer/value"), load("processed_log/IMU/gyro/value"))
    save("truth.csv", "t,x_ecef,y_ecef,z_ecef,vx_ecef,vy_ecef,vz_ecef", load("global_pose/frame_times"),
         load("global_pose/frame_positions"), load("global_pose/frame_velocities"))
    return folder


@pytest.mark.slow
def test_csv_logs_to_report_in_two_commands(tmp_path, capsys):
    """``import csv`` then ``demo --real … --config demo_car.yaml`` (a bare config name, from any
    directory): the car study on the newcomer's windows, judged from the truth, with the small-K
    warning where K cannot reach p < 0.05."""
    logs = write_csv_logs(tmp_path / "my_drive")
    windows, report = tmp_path / "my_windows", tmp_path / "my_report"
    assert main(["import", "csv", str(logs), "--out", str(windows), "--window", "10", "--imu-axes", "frd",
                 "--estimate-mounting", "--fix-covariance", "0.3"]) == 0
    capsys.readouterr()
    assert main(["demo", "--real", str(windows), "--config", "demo_car.yaml", "--out", str(report),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    gps = json.loads((report / "vepd.json").read_text())["combined"]
    assert sorted(gps) == sorted(CAR_VARIANTS)
    assert all(cell["n_real"] == 5 for cell in gps.values())
    imu = json.loads((report / "imu_study" / "vepd.json").read_text())
    assert list(imu["combined"]) == ["sim_imu-car_mems"] and imu["options"]["scenarios"] == ["my_drive"]
    assert "K = 5 per scenario is too small" in printed and "K = 5 per scenario is too small" in \
        (report / "tables.md").read_text()
    assert "paper's ordering (on car_gauss" in printed
    run_yaml = [row for row in rows_of(report / "runs.csv") if row["side"] == "real"]
    assert len(run_yaml) == 5
    summary = json.loads((report / "demo.json").read_text())
    assert summary["imu_study_scenario"] == "my_drive" and "real_sample" not in summary


@pytest.mark.slow
def test_kept_runs_score_to_the_demos_numbers_floor_included(tmp_path):
    """``demo --real-sample --keep-runs``, then ``score`` on its run bags: the same VEPDs and the same
    judge-noise floor — the floor's judgements start from the truth as the runs did (run.yaml's
    ``initial_state``).  A reduced real sample (2 tuning trials, no sensitivity imports) keeps it short."""
    text = (REPO / "config" / "studies" / "demo_car.yaml").read_text()
    for old, new in (("budget: 16", "budget: 2"), ("budget: 40", "budget: 2"),  # tune, fit
                     ("sensitivity: [0.5, 2.0]", "sensitivity: []"),
                     ("pseudorange_policy: true", "pseudorange_policy: false")):
        text = text.replace(old, new)
    config = tmp_path / "small_real.yaml"
    config.write_text(text)
    out, scored = tmp_path / "kept", tmp_path / "scored"
    assert main(["demo", "--real-sample", "--config", str(config), "--out", str(out), "--keep-runs",
                 "--no-progress"]) == 0
    assert main(["score", str(out / "runs"), "--exclude-variant", "sim_imu-*", "--out", str(scored)]) == 0
    demo_vepd = json.loads((out / "vepd.json").read_text())["combined"]
    score_vepd = json.loads((scored / "vepd.json").read_text())["combined"]
    assert {v: c["VEPD"] for v, c in demo_vepd.items()} == {v: c["VEPD"] for v, c in score_vepd.items()}
    floors = [json.loads((folder / "statistics.json").read_text())["judge_noise_floor"]["combined"]
              for folder in (out, scored)]
    assert floors[0] == floors[1]
    record = json.loads((out / "real_sample" / "real_sample.json").read_text())
    assert list(record["sensitivity"]) == ["1×"]
