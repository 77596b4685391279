"""`sim2real-eval score` end to end on small reference-layout CSV studies: outputs, bad input, determinism."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest
from test_metrics_reference import write_csv_study

from sim2real_eval.cli import main

FAST = ["--bootstrap", "30", "--permutations", "30", "--workers", "1"]


@pytest.fixture(scope="module")
def csv_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("csv") / "data"
    return write_csv_study(root, {"gauss": 0.10, "walk": 0.05}, runs=3, duration=8.0)


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def _score(capsys, *args):
    code = main(["score", *map(str, args), *FAST])
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines()


@pytest.fixture(scope="module")
def reference_report(csv_study, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "reference"
    assert main(["score", "--csv-dir", str(csv_study), "--out", str(out), "--seed", "1", *FAST]) == 0
    return out


def test_outputs_are_complete_and_readable(reference_report):
    out = reference_report
    names = sorted(p.name for p in out.iterdir())
    assert names == ["figures", "report.html", "runs.csv", "statistics.json", "tables.md", "vepd.json"]
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures == ["distributions.png", "overview.png", "traces_circle_1.png", "traces_line_1.png",
                       "traces_sine_1.png"]
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert list(rows[0]) == ["side", "variant", "scenario", "k", "rmse", "S_est", "S_gt", "D"]
    assert len(rows) == 27                               # 3 scenarios x 3 runs x (real + 2 variants)
    for row in rows:
        assert float(row["D"]) == pytest.approx(abs(float(row["S_est"]) - float(row["S_gt"])), abs=1e-15)
    doc = json.loads((out / "vepd.json").read_text())
    assert doc["options"]["exclude_scenarios"] == ["rest"] and doc["options"]["mode"] == "reference"
    lo, hi = doc["combined"]["gauss"]["VEPD_ci95"]
    assert lo <= hi
    stats = json.loads((out / "statistics.json").read_text())
    assert set(stats["combined"]["gauss"]) == {"W1_ci95", "W2_ci95", "VEPD_ci95", "p_W1", "p_W2", "p_VEPD",
                                               "p_min"}
    tables = (out / "tables.md").read_text()
    assert "Table I" in tables and "Table II" in tables and "| gauss |" in tables
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 5
    assert "http://" not in html and "https://" not in html and "<script" not in html


def test_same_seed_same_bytes_in_parallel_via_the_console_script(csv_study, reference_report, tmp_path):
    out = tmp_path / "again"
    exe = shutil.which("sim2real-eval")
    command = [exe] if exe else [sys.executable, "-c", "import sys; from sim2real_eval.cli import main; "
                                                       "sys.exit(main())"]
    proc = subprocess.run([*command, "score", "--csv-dir", str(csv_study), "--out", str(out), "--seed", "1",
                           *FAST[:-1], "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "closest to real" in proc.stdout
    for name in ("vepd.json", "statistics.json", "runs.csv", "tables.md", "report.html",
                 "figures/distributions.png"):
        assert (out / name).read_bytes() == (reference_report / name).read_bytes(), name


def test_other_seed_and_options_change_only_what_they_should(csv_study, reference_report, tmp_path, capsys):
    _score(capsys, "--csv-dir", csv_study, "--out", tmp_path / "welch", "--spectrum", "welch", "--rate", "20",
           "--smoothing-window", "1", "--seed", "2")
    ref, welch = (json.loads((d / "vepd.json").read_text()) for d in (reference_report, tmp_path / "welch"))
    assert welch["options"]["spectrum"] == "welch" and welch["options"]["mode"] == "custom"
    assert welch["combined"]["gauss"]["W2"] != ref["combined"]["gauss"]["W2"]
    assert welch["combined"]["gauss"]["VEPD_ci95"] != ref["combined"]["gauss"]["VEPD_ci95"]


def _rewrite(path, transform):
    rows = list(csv.reader(open(path)))
    rows = transform(rows)
    with open(path, "w", newline="") as stream:
        csv.writer(stream).writerows(rows)


@pytest.mark.parametrize("target, transform, message", [
    ("Sim/walk/line_2.csv", lambda rows: [r[:3] for r in rows], "missing column(s) gt_vel"),
    ("Real/circle_1.csv", lambda rows: rows[:1] + [[r[0], r[1], "nan", r[3]] for r in rows[1:]], "NaN"),
    ("Sim/gauss/sine_3.csv", lambda rows: rows[:10], "overlap for only"),
    ("Real/line_3.csv", lambda rows: rows[:1] + [[r[0], r[1], "fast", r[3]] for r in rows[1:]],
     "not a number"),
])
def test_bad_run_is_one_line_exit_2_and_no_report(csv_study, tmp_path, capsys, target, transform, message):
    data = _copy(csv_study, tmp_path / "data")
    _rewrite(data / target, transform)
    before = (data / target).read_bytes()
    out = tmp_path / "rep"
    code, err = _score(capsys, "--csv-dir", data, "--out", out)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("sim2real-eval score: error: ")
    assert str(data / target) in err[0] and message in err[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rep")]   # no temporary left over
    assert (data / target).read_bytes() == before                          # input untouched


def test_skip_bad_runs_lists_them_in_the_report(csv_study, tmp_path, capsys):
    data = _copy(csv_study, tmp_path / "data")
    bad = [data / "Sim/walk/line_2.csv", data / "Real/circle_3.csv"]
    _rewrite(bad[0], lambda rows: [r[:3] for r in rows])
    _rewrite(bad[1], lambda rows: rows[:5])
    out = tmp_path / "rep"
    code, _ = _score(capsys, "--csv-dir", data, "--out", out, "--skip-bad-runs")
    assert code == 0
    skipped = json.loads((out / "vepd.json").read_text())["options"]["skipped_runs"]
    assert sorted(s["run"] for s in skipped) == sorted(map(str, bad))
    assert len(list(csv.DictReader(open(out / "runs.csv")))) == 25
    for path in bad:
        assert str(path) in (out / "tables.md").read_text()
        assert str(path) in (out / "report.html").read_text()


@pytest.mark.parametrize("action, message", [
    (lambda d: [p.unlink() for p in (d / "Sim" / "walk").glob("sine_*.csv")], "scenario sets differ"),
    (lambda d: [p.unlink() for p in (d / "Real").glob("line_[23].csv")], "only 1 run"),
    (lambda d: (d / "Sim" / "walk" / "line.csv").write_text("x"), "does not match"),
])
def test_study_level_errors(csv_study, tmp_path, capsys, action, message):
    data = _copy(csv_study, tmp_path / "data")
    action(data)
    code, err = _score(capsys, "--csv-dir", data, "--out", tmp_path / "rep", "--skip-bad-runs")
    assert code == 2 and len(err) == 1 and message in err[0]
    assert not (tmp_path / "rep").exists()


def test_existing_output_needs_overwrite(csv_study, tmp_path, capsys):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "old.txt").write_text("old")
    code, err = _score(capsys, "--csv-dir", csv_study, "--out", out)
    assert code == 2 and "holds old.txt" in err[0] and "--overwrite" in err[0]
    assert (out / "old.txt").read_text() == "old"


def test_input_and_option_errors(csv_study, tmp_path, capsys):
    code, err = _score(capsys, "--out", tmp_path / "rep")
    assert code == 2 and "exactly one input" in err[0]
    code, err = _score(capsys, "--csv-dir", csv_study, "--out", tmp_path / "rep", "--trace-runs", "line:99")
    assert code == 2 and "line:99" in err[0]
    code, err = _score(capsys, "--csv-dir", tmp_path / "nowhere", "--out", tmp_path / "rep")
    assert code == 2 and "Real" in err[0]
    code, err = _score(capsys, "--csv-dir", csv_study, "--out", tmp_path / "rep", "--rate", "0")
    assert code == 2 and "--rate" in err[0]


def test_rest_can_be_included_and_then_its_bad_run_is_reported(csv_study, tmp_path, capsys):
    code, err = _score(capsys, "--csv-dir", csv_study, "--out", tmp_path / "rep", "--exclude-scenario", "")
    assert code == 2 and "rest_1.csv" in err[0]
