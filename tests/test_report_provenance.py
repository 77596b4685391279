"""The report explains itself (issue 13): what the data are, software and commit, judge files with
their sha256, seeds, one line per variant, the paper's VEPD beside ours, further studies on the page."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from sim2real_eval.judge.config import JudgeConfig
from sim2real_eval.metrics import RunRecord, RunScore, ScoreOptions, score_study
from sim2real_eval.report import Study, tables, write_report
from sim2real_eval.report import provenance as prov
from sim2real_eval.resources import config_path
from sim2real_eval.yamlio import dump_yaml

SYNTHETIC_SIDECAR = {"synthetic": True, "setup": {"name": "demo_reference", "seed": 20240215}}


def _runs_tree(root, synthetic: bool):
    """Run folders with a run.yaml as the pipeline writes them (the keys the report reads), real
    bags with or without a reference.yaml, and their scores."""
    judge = JudgeConfig(str(config_path("ekf_art_iros2024.yaml")),
                        str(config_path("navsat_art_iros2024.yaml"))).record()
    rng = np.random.default_rng(1)
    records = []
    for k in range(3):
        bag = root / "bags" / "line" / f"run_{k:02d}"
        bag.mkdir(parents=True)
        (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
        if synthetic:
            (bag / "reference.yaml").write_text(dump_yaml(SYNTHETIC_SIDECAR))
        e = 0.1 + 0.01 * rng.random()
        for side, variant, run_yaml, score in (
                ("real", "real", {"gps": "real", "imu": "real"}, RunScore(e, 0.5, 0.2, 0.3)),
                ("sim", "ch_rw", {"replaced": ["gps", "imu"], "models": {"gps": "ch_rw",
                                  "imu": "chrono_paper_demo"}}, RunScore(e + 0.02, 0.5, 0.2, 0.2)),
                ("sim", "sim_imu-chrono_paper_demo", {"replaced": ["imu"], "models": {
                    "imu": "chrono_paper_demo"}}, RunScore(e + 0.001, 0.5, 0.2, 0.31))):
            run = root / "runs" / side / variant / "line" / str(k)
            run.mkdir(parents=True)
            record = dict(run_yaml, side=side, variant=variant, scenario="line", k=k, seed=2024,
                          source=str(bag), judge=judge)
            (run / "run.yaml").write_text(dump_yaml(record))
            records.append(RunRecord(side, variant, "line", k, str(run), score))
    return records, judge


def _result(records, variants):
    chosen = [r for r in records if r.side == "real" or r.variant in variants]
    return score_study(chosen, ScoreOptions(bootstrap=40, permutations=40, seed=3))


def test_collect_reads_what_the_runs_recorded(tmp_path):
    records, judge = _runs_tree(tmp_path, synthetic=True)
    result = _result(records, {"ch_rw"})
    got = prov.collect(result, "runs_dir", str(tmp_path / "runs"), {"command": "test"})
    assert got["data"]["real"] == "synthetic"
    assert "synthetic reference data set demo_reference (seed 20240215)" in got["data"]["summary"]
    assert got["data"]["real_folders"] == [{"folder": str(tmp_path / "bags"), "runs": 3}]
    assert got["judge"] == [{"role": "ekf", "path": judge["ekf"], "sha256": judge["ekf_sha256"]},
                            {"role": "navsat", "path": judge["navsat"], "sha256": judge["navsat_sha256"]}]
    assert got["seeds"] == {"study": [2024], "reference": [20240215], "statistics": 3}
    line = got["variants"]["ch_rw"]
    assert line.startswith("GPS: ch_rw — Paper variant Ch:RW") and "IMU: chrono_paper_demo — Chrono" in line
    assert got["context"] == {"command": "test"} and got["input"]["kind"] == "runs_dir"
    json.dumps(got)                                             # JSON-ready (it goes into vepd.json)


def test_recorded_bags_and_csv_inputs(tmp_path):
    records, _judge = _runs_tree(tmp_path, synthetic=False)
    result = _result(records, {"sim_imu-chrono_paper_demo"})
    got = prov.collect(result)
    assert got["data"]["real"] == "recorded" and got["seeds"]["reference"] == []
    assert got["variants"]["sim_imu-chrono_paper_demo"].startswith("GPS: the real sensor as recorded; IMU:")
    csv_like = [RunRecord(r.side, r.variant, r.scenario, r.k, str(tmp_path / f"{r.side}_{r.k}.csv"), r.score)
                for r in records if r.side == "real" or r.variant == "ch_rw"]
    got = prov.collect(score_study(csv_like, ScoreOptions(bootstrap=0, permutations=0)), "csv")
    assert got["data"]["real"] == "not recorded" and got["judge"] == []
    assert got["variants"]["ch_rw"].startswith("not recorded")


def test_software_names_the_commit_of_this_checkout():
    software = prov.software()
    assert software["package"] == "sim2real-eval" and software["version"]
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=prov.__file__.rsplit("/", 1)[0],
                          capture_output=True, text=True)
    if head.returncode != 0:
        assert software["commit"] is None                     # an installed copy: no commit claimed
    else:
        assert software["commit"] == head.stdout.strip() and isinstance(software["modified"], bool)


def test_report_page_explains_itself(tmp_path):
    records, judge = _runs_tree(tmp_path, synthetic=True)
    gps, imu = _result(records, {"ch_rw"}), _result(records, {"sim_imu-chrono_paper_demo"})
    provenance = prov.collect(gps, "demo runs", str(tmp_path / "runs"), {"command": "sim2real-eval demo"})
    out = write_report(tmp_path / "report", gps, {}, str(tmp_path / "runs"), provenance=provenance,
                       studies=[Study("imu_study", "Simulated-IMU study", imu, {}, note="IMU alone")])
    page = (out / "report.html").read_text()
    assert "synthetic data" in page and "demo_reference (seed 20240215)" in page
    assert judge["ekf_sha256"] in page and judge["navsat"] in page
    assert "study 2024 · reference data 20240215 · bootstrap/permutations 3" in page
    assert "Paper variant Ch:RW" in page                       # one line per variant
    assert "paper&#x27;s VEPD (real ART data)" in page and ">0.043<" in page and ">0.0211<" in page
    assert page.index("Simulated-IMU study") > page.index("Table I")
    assert "IMU alone" in page and page.count("data:image/png;base64,") == 4   # 2 figures per study
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "distributions.png", "imu_study_distributions.png", "imu_study_overview.png", "overview.png"]
    document = json.loads((out / "vepd.json").read_text())
    assert document["options"]["provenance"]["data"]["real"] == "synthetic"
    assert json.loads((out / "statistics.json").read_text())["resampling"]["combined"] == {"ch_rw": "pairs"}


def test_an_interval_outside_its_estimate_is_marked():
    assert tables.fmt_ci([0.0007, 0.0033], estimate=0.0004) == "[0.0007, 0.0033] †"
    assert tables.fmt_ci([0.0002, 0.0006], estimate=0.0004) == "[0.0002, 0.0006]"
    assert tables.fmt_ci(None, estimate=0.1) == "–"
