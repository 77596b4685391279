"""``sim2real-eval demo --quick`` end to end on a small reference set (files, vepd.json schema, resume),
plus the demo's own logic (config, bag discovery, ordering checks, errors)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.studies import config as studies_config
from sim2real_eval.studies import findings, plan, real_bags

REPO = Path(__file__).resolve().parents[1]
ALL_GPS_VARIANTS = ["ch_gauss", "ch_rw", "airsim", "ch_gauss_airsim", "ch_rw_airsim"]
# The test study keeps two of the five variants (the judge dominates the cost: fewer runs).
GPS_VARIANTS = ["ch_gauss", "ch_gauss_airsim"]

# Short manoeuvres (4 s) keep the end-to-end run to a few seconds of judging.
SCENARIOS = {
    "line": "  - {duration: 2.5, speed: 1.0, steer: 0.0}\n",
    "circle": "  - {duration: 2.5, speed: 1.0, steer: 0.1974}\n",
}
SCENARIO = """\
wheelbase: 0.5
rate: 200.0
start_time: 10.0
phases:
  - {{duration: 1.0, speed: 0.0}}
{moving}  - {{duration: 0.5, speed: 0.0}}
variation: {{speed_scale_sigma: 0.03, steer_scale_sigma: 0.05, speed_noise_sigma: 0.02}}
"""


def small_demo_config(tmp_path: Path, gps=GPS_VARIANTS, name="small_demo.yaml") -> Path:
    """A demo YAML like the shipped one, on 4 s manoeuvres, quick K = 2, few resamples."""
    for name, moving in SCENARIOS.items():
        (tmp_path / f"short_{name}.yaml").write_text(SCENARIO.format(moving=moving))
    setup = (REPO / "config" / "studies" / "demo_reference.yaml").read_text()
    setup = setup.replace("scenarios: [line, sine, circle]",
                          "scenarios: {line: short_line.yaml, circle: short_circle.yaml}")
    (tmp_path / "small_reference.yaml").write_text(setup)
    config = (REPO / "config" / "studies" / "demo.yaml").read_text()
    for old, new in (("reference: demo_reference.yaml", "reference: small_reference.yaml"),
                     ("quick_repeats: 3", "quick_repeats: 2"), ("bootstrap: 1000", "bootstrap: 20"),
                     ("permutations: 1000", "permutations: 20"),
                     (f"gps: [{', '.join(ALL_GPS_VARIANTS)}]", f"gps: [{', '.join(gps)}]")):
        assert old in config
        config = config.replace(old, new)
    path = tmp_path / name
    path.write_text(config)
    return path


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    config = small_demo_config(tmp)
    out = tmp / "report"
    args = ["demo", "--quick", "--config", str(config), "--out", str(out), "--workers", "2", "--no-progress",
            "--keep-runs"]
    return tmp, config, out, args, main(args)


def test_quick_demo_writes_the_report(quick_demo):
    _tmp, _config, out, _args, code = quick_demo
    assert code == 0
    for name in ("report.html", "vepd.json", "statistics.json", "runs.csv", "tables.md", "demo.json"):
        assert (out / name).is_file(), name
    assert list((out / "figures").glob("*.png"))
    for name in ("report.html", "vepd.json", "runs.csv", "tables.md"):
        assert (out / "imu_study" / name).is_file(), name
    # Run directories follow the pipeline convention; regenerated reference runs sit beside them.
    assert sorted(p.name for p in (out / "runs" / "sim").iterdir()) == sorted(
        GPS_VARIANTS + ["sim_imu-chrono_paper_demo"])
    assert sorted(p.name for p in (out / "runs" / "real" / "real").iterdir()) == ["circle", "line"]
    assert sorted(p.name for p in (out / "reference" / "line").iterdir()) == ["run_00", "run_01"]
    # no staging or temporary leftovers; the marker lists what the demo wrote (docs/pipeline.md, "Outputs")
    assert [p.name for p in out.glob(".*")] == [".sim2real-eval.json"]


def test_vepd_json_schema(quick_demo):
    out = quick_demo[2]
    doc = json.loads((out / "vepd.json").read_text())
    assert set(doc) == {"combined", "per_scenario", "options", "version"}
    assert sorted(doc["combined"]) == sorted(GPS_VARIANTS)
    for row in doc["combined"].values():
        assert set(row) == {"W1", "W2", "VEPD", "VEPD_ci95", "n_real", "n_sim", "real_tracked"}
        assert row["real_tracked"] is True  # the reference set: the judge tracks every real run
        assert row["n_real"] == row["n_sim"] == 4  # 2 scenarios x K = 2
        assert math.isclose(row["VEPD"], (row["W1"] + row["W2"]) / 2)
        assert row["W1"] >= 0 and row["W2"] >= 0
        low, high = row["VEPD_ci95"]
        assert low <= high
    for cells in doc["per_scenario"].values():
        assert set(cells) == {"line", "circle"}
        for cell in cells.values():
            assert set(cell) == {"W1", "W2", "VEPD", "rank", "real_tracked"} and cell["real_tracked"]
            assert 1 <= cell["rank"] <= len(GPS_VARIANTS)
    imu = json.loads((out / "imu_study" / "vepd.json").read_text())
    assert list(imu["combined"]) == ["sim_imu-chrono_paper_demo"]
    assert list(imu["per_scenario"]["sim_imu-chrono_paper_demo"]) == ["line"]
    summary = json.loads((out / "demo.json").read_text())
    assert summary["k"] == 2 and summary["runs"]["total"] == 4 * (1 + len(GPS_VARIANTS)) + 2
    assert set(summary["ordering"]["checks"]) == {"ch_gauss_worst", "ch_rw_and_airsim_best",
                                                  "hdop_improves_ch_gauss", "sim_imu_small"}
    assert sorted(summary["ordering"]["ranking_best_first"]) == sorted(GPS_VARIANTS)
    stages = {"startup", "real_bags", "runs", "score", "report", "total"}
    assert set(summary["wall_time_s"]) == set(summary["cpu_time_s"]) == stages
    assert summary["runs"]["kept"] is True
    assert summary["runs"]["bag_bytes"] == sum(p.stat().st_size for p in (out / "runs").rglob("*")
                                               if p.is_file())


def test_every_run_of_a_bag_is_judged_on_the_same_window(quick_demo):
    """All runs made from one real bag (real, five GPS variants, sim IMU) record the same window_ns and
    carry the same ground truth, so the scorer's S_gt of a bag is the same number on every side."""
    import csv

    import yaml

    out = quick_demo[2]
    windows: dict = {}
    for run_yaml in (out / "runs").rglob("run.yaml"):
        record = yaml.safe_load(run_yaml.read_text())
        windows.setdefault((record["scenario"], record["k"]), set()).add(tuple(record["window_ns"]))
    assert len(windows) == 4 and all(len(found) == 1 for found in windows.values()), windows
    s_gt: dict = {}
    for table in (out / "runs.csv", out / "imu_study" / "runs.csv"):
        with table.open() as handle:
            for row in csv.DictReader(handle):
                s_gt.setdefault((row["scenario"], row["k"]), set()).add((row["side"], row["S_gt"]))
    assert len(s_gt) == 4
    for key, found in s_gt.items():
        assert {side for side, _value in found} == {"real", "sim"}
        assert len({value for _side, value in found}) == 1, (key, found)


@pytest.fixture(scope="module")
def memory_demo(quick_demo):
    """The same quick demo without --keep-runs (scored in memory), and ``score`` on the kept run bags."""
    tmp, _config, kept, args, _code = quick_demo
    memory = tmp / "memory"
    code = main([a for a in args if a != "--keep-runs"] + ["--out", str(memory)])
    scored = tmp / "scored"
    assert main(["score", str(kept / "runs"), "--exclude-variant", "sim_imu-*", "--out", str(scored),
                 "--bootstrap", "20", "--permutations", "20", "--workers", "2"]) == 0
    return memory, kept, scored, code


def test_in_memory_scores_equal_the_kept_bags_scores(memory_demo):
    """The demo scores its runs from the judged series in memory: vepd.json, statistics.json (intervals,
    comparisons, judge-noise floor) and runs.csv are those of the demo that writes the run bags, and
    those ``score`` gives on the kept bags — floor included (it judges the real bags run.yaml names)."""
    memory, kept, scored, code = memory_demo
    assert code == 0 and not (memory / "runs").exists()
    for name in ("vepd.json", "statistics.json", "imu_study/vepd.json", "imu_study/statistics.json"):
        one, two = (json.loads((out / name).read_text()) for out in (memory, kept))
        for doc in (one, two):  # where the runs were ("in memory" / OUT/runs), each OUT's reference runs
            doc.get("options", {}).get("provenance", {}).pop("input", None)
            doc.get("options", {}).get("provenance", {}).get("data", {}).pop("real_folders", None)
        assert one == two, name
    for name in ("runs.csv", "imu_study/runs.csv"):
        assert (memory / name).read_text() == (kept / name).read_text()
    assert (scored / "runs.csv").read_text() == (memory / "runs.csv").read_text()
    demo_doc, score_doc = (json.loads((out / "vepd.json").read_text()) for out in (memory, scored))
    assert demo_doc["combined"] == score_doc["combined"]
    assert demo_doc["per_scenario"] == score_doc["per_scenario"]
    # the judge health: the same numbers, and the same document, in memory and from the bags
    assert demo_doc["options"]["judge_health"] == score_doc["options"]["judge_health"]
    demo_stats, score_stats = (json.loads((out / "statistics.json").read_text()) for out in (memory, scored))
    assert demo_stats == score_stats
    assert demo_stats["judge_noise_floor"]["draws"] == 4 and demo_stats["judge_noise_floor"]["pairs"] == 6


def test_default_report_has_the_floor_and_marks_what_it_cannot_separate(memory_demo, capsys):
    memory = memory_demo[0]
    stats = json.loads((memory / "statistics.json").read_text())
    floor = stats["judge_noise_floor"]["combined"]["ch_gauss"]
    assert floor["VEPD_interval"][0] <= floor["VEPD"] <= floor["VEPD_interval"][1]
    assert len(floor["VEPD_pairs"]) == 6
    imu = json.loads((memory / "imu_study" / "statistics.json").read_text())
    imu_floor = imu["judge_noise_floor"]["combined"]["sim_imu-chrono_paper_demo"]["VEPD_interval"][1]
    imu_vepd = json.loads((memory / "imu_study" / "vepd.json").read_text())["combined"]
    assert imu_vepd["sim_imu-chrono_paper_demo"]["VEPD"] <= imu_floor  # this tiny study: below its floor
    tables_md = (memory / "imu_study" / "tables.md").read_text()
    assert "(≤ floor)" in tables_md and "not above the judge-noise floor" in tables_md
    assert "K = 2 per scenario is too small" in (memory / "tables.md").read_text()
    summary = json.loads((memory / "demo.json").read_text())
    assert summary["ordering"]["findings"]["sim_imu_small"] == "not separable"
    assert "judge-noise floor" in summary["ordering"]["reasons"]["sim_imu_small"]
    assert summary["judge_noise_floor"]["imu_study"]["VEPD_interval"][1] == imu_floor
    page = (memory / "report.html").read_text()
    assert "Judge-noise floor" in page and "Adjacent ranks" in page and "≤ floor" in page


def test_no_noise_floor_turns_it_off(quick_demo, capsys):
    tmp, _config, _kept, args, _code = quick_demo
    out = tmp / "no_floor"
    assert main([a for a in args if a != "--keep-runs"] + ["--out", str(out), "--no-noise-floor"]) == 0
    printed = capsys.readouterr().out
    assert "judge-noise floor: not measured (--no-noise-floor)" in printed
    assert "judge_noise_floor" not in json.loads((out / "statistics.json").read_text())
    assert json.loads((out / "demo.json").read_text())["judge_noise_floor"] is None


def test_rerun_resumes_without_rejudging(quick_demo):
    from sim2real_eval.pipeline.batch import run_batch

    _tmp, config_path, out, _args, _code = quick_demo
    config = studies_config.load_demo_config(config_path)
    bags = {scenario: sorted((out / "reference" / scenario).iterdir()) for scenario in ("circle", "line")}
    groups = plan.plan_groups(config, bags, "line")
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("run.yaml")}
    report = run_batch(groups, out / "runs", workers=1, progress=False)
    assert report.written == 0 and report.skipped == len(groups) and not report.failures
    assert stamps == {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("run.yaml")}


def test_user_bags_with_real(quick_demo, capsys):
    """--real DIR/<scenario>/<run>/: the user's bags (here the regenerated reference) are only read."""
    tmp, _config, out, _args, _code = quick_demo
    config = small_demo_config(tmp, gps=["ch_gauss"], name="one_variant.yaml")
    real = tmp / "mine"
    (real / "line").mkdir(parents=True)
    for run in ("run_00", "run_01"):  # the user's folder: one scenario, two bags
        (real / "line" / run).symlink_to(out / "reference" / "line" / run)
    stamp = {p: p.stat().st_mtime_ns for p in (out / "reference").rglob("*") if p.is_file()}
    second = tmp / "second"
    code = main(["demo", "--config", str(config), "--real", str(real), "--out", str(second), "--workers", "1",
                 "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "ch_gauss" in printed and "(IMU study)" in printed and "wall time" in printed
    summary = json.loads((second / "demo.json").read_text())
    assert summary["k"] == 2 and summary["scenarios"] == ["line"]
    assert summary["real_source"] == str(real.resolve())
    assert summary["runs"]["total"] == 2 * 3
    assert not (second / "reference").exists()
    # Without --keep-runs no run bag is written: every run is scored from memory.
    assert not (second / "runs").exists() and summary["runs"]["kept"] is False
    assert summary["runs"]["bag_bytes"] == 0 and "none written (scored in memory)" in printed
    assert stamp == {p: p.stat().st_mtime_ns for p in (out / "reference").rglob("*") if p.is_file()}


# ------------------------------------------------------------------------------ demo logic
def test_shipped_demo_config_parses():
    config = studies_config.load_demo_config()
    assert config.gps_variants == tuple(ALL_GPS_VARIANTS)
    assert (config.repeats, config.quick_repeats) == (10, 3)
    assert config.imu_scenario == "line" and config.gps_study_imu == "chrono_paper_demo"
    assert Path(config.judge.ekf).name == "ekf_art_iros2024.yaml"
    assert Path(config.reference).is_file()


def test_config_errors_name_file_and_key(tmp_path):
    text = (REPO / "config" / "studies" / "demo.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("gps: [ch_gauss,", "gps: [ch gauss,"))
    with pytest.raises(UserError, match=r"bad\.yaml.*gps_study\.gps\[0\]"):
        studies_config.load_demo_config(bad)
    bad.write_text(text + "extra: 1\n")
    with pytest.raises(UserError, match=r"bad\.yaml.*extra"):
        studies_config.load_demo_config(bad)


def test_find_real_bags_layout(tmp_path):
    for scenario, runs in (("line", ["b", "a", "c"]), ("sine", ["x"])):
        for run in runs:
            (tmp_path / scenario / run).mkdir(parents=True)
            (tmp_path / scenario / run / "metadata.yaml").write_text("x")
    (tmp_path / "line" / ".a.tmp-1").mkdir()            # atomic-write leftover: ignored
    (tmp_path / "line" / "notes").mkdir()                # not a bag: ignored
    (tmp_path / "rest").mkdir()                          # no bags: no scenario
    (tmp_path / "sine" / "old.bag").write_bytes(b"")     # ROS 1 bag file
    found = real_bags.find_real_bags(tmp_path, 2)
    assert {s: [p.name for p in paths] for s, paths in found.items()} == {"line": ["a", "b"],
                                                                          "sine": ["old.bag", "x"]}
    with pytest.raises(UserError, match="no bags found"):
        real_bags.find_real_bags(tmp_path / "rest", 2)
    with pytest.raises(UserError, match="not a directory"):
        real_bags.find_real_bags(tmp_path / "missing", 2)


def doc(vepd: dict) -> dict:
    return {"combined": {name: {"VEPD": value} for name, value in vepd.items()}}


def test_ordering_checks():
    paper = {"ch_gauss": 0.155, "ch_rw": 0.043, "airsim": 0.039, "ch_gauss_airsim": 0.0627,
             "ch_rw_airsim": 0.0482}  # Table I of seed 003
    result = findings.ordering_checks(doc(paper), doc({"sim_imu-x": 0.0211}))
    assert result["ranking_best_first"] == ["airsim", "ch_rw", "ch_rw_airsim", "ch_gauss_airsim", "ch_gauss"]
    assert result["checks"] == {"ch_gauss_worst": True, "ch_rw_and_airsim_best": True,
                                "hdop_improves_ch_gauss": True, "sim_imu_small": True}
    swapped = dict(paper, ch_gauss=0.04, ch_gauss_airsim=0.2)
    result = findings.ordering_checks(doc(swapped), doc({"sim_imu-x": 0.05}))
    assert result["checks"] == {"ch_gauss_worst": False, "ch_rw_and_airsim_best": False,
                                "hdop_improves_ch_gauss": False, "sim_imu_small": False}
    assert findings.ordering_checks(doc({"x": 1.0}), None)["checks"] == {
        "ch_gauss_worst": None, "ch_rw_and_airsim_best": None, "hdop_improves_ch_gauss": None}


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["demo", "--real", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sim2real-eval demo: error: --real") and "\n" not in err
    assert main(["demo", "--k", "0", "--out", str(tmp_path / "o")]) == 2
    assert "--k: 0 runs is below the limit of 1 runs" in capsys.readouterr().err
    (tmp_path / "mine" / "line" / "run_00").mkdir(parents=True)
    (tmp_path / "mine" / "line" / "run_00" / "metadata.yaml").write_text("x")
    assert main(["demo", "--real", str(tmp_path / "mine"), "--out", str(tmp_path / "o")]) == 2
    assert "scenario line: 1 real run(s)" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
