"""Hostile cases, part 1: never lose a user's data (issue 21, "Data loss" and the output policy).

Each case ran against 331a292 and destroyed or replaced something; each now gets a one-line refusal
(exit 2) before any work, or does its work without touching what is not its own.  The policy under
test (docs/pipeline.md, "Outputs"): an existing non-empty output is refused unless ``--overwrite``;
``--overwrite`` replaces it atomically and never follows a symbolic link out of it; ``demo`` resumes and
replaces only what its marker file says it wrote.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from fixtures.hostile import csv_study, digest, refused, tree
from test_demo_quick import small_demo_config
from test_tune_search import setup as tune_setup  # noqa: F401 - a module fixture: real-like runs, a study
from test_tune_search import tune_args

from sim2real_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
MARKER = ".sim2real-eval.json"  # outputs.MARKER: what an output folder's command wrote there


def demo(config: Path, out: Path, *extra) -> int:
    return main(["demo", "--quick", "--config", str(config), "--out", str(out), "--workers", "2",
                 "--no-progress", *extra])


# --------------------------------------------------------------------------------------------- demo
def test_demo_refuses_a_folder_of_user_files(tmp_path, capsys):
    """`demo --out P` into a folder of the user's: refused, nothing touched (was: thesis_fig.png deleted,
    tables.md replaced, exit 0)."""
    config = small_demo_config(tmp_path)
    out = tmp_path / "P"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "thesis_fig.png").write_text("x\n")
    (out / "tables.md").write_text("mine\n")
    before = tree(out), digest(out)
    assert demo(config, out) == 2
    refused(capsys, "demo", f"--out {out}", "--overwrite")
    assert (tree(out), digest(out)) == before


@pytest.fixture(scope="module")
def own_demo(tmp_path_factory):
    """A finished small demo (its marker lists what it wrote), copied by the tests that change it.  It
    was written with --overwrite over a folder of the user's whose `runs` is a link to another folder
    of the user's (what test_demo_overwrite_… checks)."""
    root = tmp_path_factory.mktemp("own_demo")
    config = small_demo_config(root)
    out = root / "report"
    out.mkdir()
    (out / "tables.md").write_text("mine\n")
    user = root / "user"
    (user / "empty").mkdir(parents=True)
    (user / "data.txt").write_text("keep\n")
    (out / "runs").symlink_to(user, target_is_directory=True)
    before = tree(user), digest(user)
    code = demo(config, out, "--overwrite")
    return config, out, (code, root, user, before)


def copy_of(own_demo, tmp_path) -> Path:
    out = tmp_path / "report"
    shutil.copytree(own_demo[1], out, symlinks=True)
    return out


def test_demo_marker_lists_what_it_wrote(own_demo):
    from sim2real_eval import outputs

    out = own_demo[1]
    assert outputs.MARKER == MARKER
    marker = json.loads((out / MARKER).read_text())
    assert marker["command"] == "demo"
    files = marker["files"]
    assert {"report.html", "vepd.json", "tables.md", "demo.json", "imu_study/report.html"} <= set(files)
    assert any(name.startswith("figures/") for name in files)
    for name, record in files.items():
        assert (out / name).stat().st_size == record["size"]
    assert not (out / "runs").exists() and marker["runs_kept"] is False


@pytest.mark.parametrize("where", ["figures/thesis_fig.png", "tables.md", "imu_study/notes.md"])
def test_demo_refuses_a_user_file_among_its_own_report(own_demo, tmp_path, capsys, where):
    """A file the demo did not write (or one it wrote, edited since) where its report goes: refused
    up front, with the file named."""
    config = own_demo[0]
    out = copy_of(own_demo, tmp_path)
    (out / where).write_text("the user's\n")
    before = tree(out), digest(out)
    assert demo(config, out) == 2
    refused(capsys, "demo", where.split("/")[-1], "--overwrite")
    assert (tree(out), digest(out)) == before


@pytest.mark.parametrize("name", ["runs", "reference", "figures"])
def test_demo_never_writes_through_a_symbolic_link(own_demo, tmp_path, capsys, name):
    """OUT/runs as a link to a user folder: refused up front (was: the demo's clean-up deleted the empty
    subfolders in the user's folder)."""
    config = own_demo[0]
    out = copy_of(own_demo, tmp_path)
    user = tmp_path / "user"
    (user / "empty" / "deeper").mkdir(parents=True)
    (user / "data.txt").write_text("keep\n")
    if (out / name).exists():
        shutil.rmtree(out / name)
    (out / name).symlink_to(user, target_is_directory=True)
    before = tree(user), digest(user)
    assert demo(config, out) == 2
    refused(capsys, "demo", f"{name}: a symbolic link")
    assert (tree(user), digest(user)) == before


@pytest.mark.slow
def test_demo_resumes_replaces_its_report_and_keeps_kept_runs(own_demo, tmp_path, capsys):
    """Its own output: the report is replaced, the user's other files stay, a link named like the old
    staging folder is left alone (was: the whole demo ran, then 'Cannot call rmtree on a symbolic
    link'), and runs kept by --keep-runs are not deleted by a later plain demo (were: deleted silently)."""
    config = own_demo[0]
    out = copy_of(own_demo, tmp_path)
    (out / "notes.txt").write_text("mine\n")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "x").write_text("x\n")
    (out / ".report-staging").symlink_to(target, target_is_directory=True)
    old_report = (out / "report.html").stat().st_mtime_ns
    assert demo(config, out, "--keep-runs") == 0
    printed = capsys.readouterr().out
    assert (out / "notes.txt").read_text() == "mine\n" and (target / "x").read_text() == "x\n"
    assert (out / ".report-staging").is_symlink()
    assert (out / "report.html").stat().st_mtime_ns != old_report
    runs = sorted(p.parent for p in (out / "runs").rglob("run.yaml"))
    assert len(runs) == 4 + 8 + 2  # real runs, 2 GPS variants, the IMU study
    assert f"run bags: {out / 'runs'}" in printed
    kept = digest(out / "runs")

    assert demo(config, out) == 0  # plain demo: leaves the kept runs as they are, saying so
    printed = capsys.readouterr().out
    assert digest(out / "runs") == kept
    assert "kept" in printed and "--keep-runs" in printed and str(out / "runs") in printed
    assert json.loads((out / MARKER).read_text())["runs_kept"] is True


def test_demo_overwrite_replaces_a_user_folder_without_following_links(own_demo):
    """--overwrite replaces a folder of the user's (tables.md) once the new output is complete, and
    never deletes through its link `runs` into the folder it points to."""
    _config, out, (code, root, user, before) = own_demo
    assert code == 0
    assert (tree(user), digest(user)) == before
    assert "mine" not in (out / "tables.md").read_text()
    assert (out / MARKER).is_file() and not (out / "runs").exists()
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.slow
def test_demo_overwrite_of_a_folder_with_a_forged_marker_never_deletes_outside_it(own_demo, tmp_path):
    """Issue 30: a user's folder whose forged marker lists linkdir/secret.txt, OUT/linkdir a link to a
    folder outside OUT (was: --overwrite deleted the file outside OUT).  --overwrite replaces the folder
    as a whole, as documented, without following the link; a later demo resumes its own output."""
    config = own_demo[0]
    real = tmp_path / "real"
    shutil.copytree(own_demo[1] / "reference", real)  # the small demo's real bags, as --real
    out, outside = tmp_path / "F", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "thesis.tex").write_text("mine\n")
    (outside / "secret.txt").write_text("secret\n")
    (out / "linkdir").symlink_to(outside, target_is_directory=True)
    secret = (outside / "secret.txt").read_bytes()
    import hashlib

    files = {"linkdir/secret.txt": {"size": len(secret), "sha256": hashlib.sha256(secret).hexdigest()}}
    (out / MARKER).write_text(json.dumps({"command": "demo", "files": files}))
    real_before, outside_before = digest(real), (tree(outside), digest(outside))
    assert demo(config, out, "--overwrite", "--real", str(real)) == 0
    assert (tree(outside), digest(outside)) == outside_before and digest(real) == real_before
    assert (out / "vepd.json").is_file() and not (out / "thesis.tex").exists()
    assert not os.path.lexists(out / "linkdir")
    marker = json.loads((out / MARKER).read_text())
    assert not [name for name in marker["files"] if name.split("/")[0] not in
                ("vepd.json", "statistics.json", "runs.csv", "tables.md", "report.html", "figures",
                 "imu_study", "demo.json")]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    report = (out / "report.html").stat().st_mtime_ns
    assert demo(config, out, "--real", str(real)) == 0  # its own output now: resumed, report replaced
    assert (out / "report.html").stat().st_mtime_ns != report
    assert (tree(outside), digest(outside)) == outside_before


# --------------------------------------------------------------------------------- make-reference
def test_make_reference_keeps_a_users_readme(tmp_path, capsys):
    out = tmp_path / "DIR"
    out.mkdir()
    (out / "README.md").write_text("# my data set\n")
    assert main(["make-reference", "--out", str(out), "--scenario", "line", "--k", "1", "--no-progress"]) == 2
    refused(capsys, "make-reference", "README.md", "--overwrite")
    assert tree(out) == ["README.md"] and (out / "README.md").read_text() == "# my data set\n"


def test_make_reference_never_calls_a_users_bag_synthetic(tmp_path, capsys):
    """A user's real line/run_00 (no reference.yaml: not made by make-reference): refused (was: kept
    and described in README.md as synthetic 'line run 0')."""
    out = tmp_path / "DIR"
    shutil.copytree(REPO / "bags" / "reference" / "line" / "run_00", out / "line" / "run_00")
    (out / "line" / "run_00" / "reference.yaml").unlink()
    before = tree(out), digest(out)
    assert main(["make-reference", "--out", str(out), "--scenario", "line", "--k", "2", "--no-progress",
                 "--workers", "1"]) == 2
    refused(capsys, "make-reference", "run_00", "not written by make-reference")
    assert (tree(out), digest(out)) == before


def test_make_reference_resumes_its_own_output(tmp_path, capsys):
    out = tmp_path / "DIR"
    args = ["make-reference", "--out", str(out), "--scenario", "standstill", "--k", "1", "--no-progress",
            "--setup", str(short_setup(tmp_path))]
    assert main(args) == 0
    first = digest(out)
    assert main(args) == 0
    assert "0 runs written, 1 kept" in capsys.readouterr().out
    assert digest(out) == first


def short_setup(tmp_path: Path) -> Path:
    """The reference setup with a 3 s standstill (writing the 10-minute one takes too long here)."""
    (tmp_path / "standstill.yaml").write_text(
        "wheelbase: 0.5\nrate: 200.0\nstart_time: 10.0\nphases:\n  - {duration: 3.0, speed: 0.0}\n")
    setup = (REPO / "config" / "studies" / "demo_reference.yaml").read_text()
    setup = setup.replace("scenarios: [line, sine, circle]", "scenarios: {standstill: standstill.yaml}")
    path = tmp_path / "setup.yaml"
    path.write_text(setup)
    return path


# ----------------------------------------------------------------------------------------------- tune
def test_tune_storage_inside_the_real_runs_is_refused(tune_setup, tmp_path, capsys):  # noqa: F811 - the imported fixture
    """`--storage real/real/real/line/0/<bag>.db3` (an SQLite file: a run bag) was written into: 13
    Optuna tables in the user's input bag."""
    real = tune_setup[2]
    bag = next((real / "real" / "real" / "line" / "0").glob("*.db3"))
    before = digest(real)
    assert main(tune_args(tune_setup, tmp_path / "out", "--budget", "1", "--storage", str(bag))) == 2
    refused(capsys, "tune", "--storage", "the input --real")
    assert digest(real) == before and not (tmp_path / "out").exists()


def test_tune_storage_that_is_another_sqlite_database_is_refused(tune_setup, tmp_path, capsys):  # noqa: F811 - the imported fixture
    storage = tmp_path / "mine.db"
    with sqlite3.connect(storage) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES ('thesis')")
    conn.close()
    before = digest(storage)
    assert main(tune_args(tune_setup, tmp_path / "out", "--budget", "1", "--storage", str(storage))) == 2
    refused(capsys, "tune", f"--storage {storage}", "not an Optuna")
    assert digest(storage) == before


def test_tune_out_inside_another_output_is_refused(tune_setup, tmp_path, capsys):  # noqa: F811 - the imported fixture
    assert main(tune_args(tune_setup, tmp_path / "out", "--budget", "1", "--storage",
                          str(tmp_path / "out" / "tune.db"))) == 2
    refused(capsys, "tune", "--storage", "inside the output --out")


def test_tune_refuses_a_folder_of_user_files(tune_setup, tmp_path, capsys):  # noqa: F811 - the imported fixture
    out = tmp_path / "out"
    out.mkdir()
    (out / "trials.csv").write_text("mine\n")
    assert main(tune_args(tune_setup, out, "--budget", "1")) == 2
    refused(capsys, "tune", f"--out {out}", "--overwrite")
    assert (out / "trials.csv").read_text() == "mine\n"


@pytest.mark.slow
def test_tune_never_reports_a_trial_worse_than_the_untuned_model(tune_setup, tmp_path, capsys):  # noqa: F811 - the imported fixture
    """`--budget 2` where every trial is worse than the untuned model: best_*.yaml are the untuned
    model and the line says so (was: the worse trial written as the result, "x0.12 lower")."""
    _root, study_path, real = tune_setup
    out = tmp_path / "out"
    args = ["tune", "--study", str(study_path), "--real", str(real), "--params", "gps.sigma=5:10",
            "--out", str(out), "--no-progress", "--budget", "2"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "lower" not in err and "no trial beat the untuned model" in err
    best = yaml.safe_load((out / "best.yaml").read_text())["tune"]
    assert best["best_trial"] == "baseline" and best["improvement_factor"] == 1.0
    gps = yaml.safe_load((out / "best_gps.yaml").read_text())
    assert gps["position_noise"]["sigma"] == [0.6, 0.6, 0.6] or gps["position_noise"]["sigma"] == 0.6


# ---------------------------------------------------------------------------- replay, scenario, score
def test_replay_with_an_empty_out_writes_nothing_here(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["replay", str(REPO / "bags" / "reference" / "line"), "--replace", "imu=chrono_paper_demo",
                 "--out", "", "--workers", "1", "--no-progress"]) == 2
    refused(capsys, "replay", "--out", "empty")
    assert tree(tmp_path) == []


@pytest.mark.parametrize("command", [
    ["score", "RUNS", "--out", ""],
    ["simulate", str(REPO / "config/studies/tiny.yaml"), "--out", ""],
    ["scenario", "line", "--out", ""],
    ["sensors", "--scenario", "line", "--out", ""],
    ["make-reference", "--out", ""],
])
def test_every_command_refuses_an_empty_output_name(tmp_path, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "RUNS").mkdir()
    assert main(command) == 2
    refused(capsys, command[0], "empty")
    assert tree(tmp_path) == ["RUNS"]


def test_scenario_out_and_plot_appear_both_or_neither(tmp_path):
    """The plot cannot be written (the disk is 'full' after the NPZ, as RLIMIT_FSIZE makes it): no NPZ
    either (was: t.npz left alone)."""
    from fixtures.hostile import one_line_error, run

    scenario = tmp_path / "short.yaml"
    scenario.write_text("wheelbase: 0.5\nrate: 100.0\nphases:\n  - {duration: 1.0, speed: 1.0}\n")
    result = run(["scenario", str(scenario), "--out", "t.npz", "--plot", "t.png"], cwd=tmp_path,
                 file_bytes=64 * 1024)
    one_line_error(result, "scenario", "t.png")
    assert tree(tmp_path) == ["short.yaml"]


def test_score_overwrite_replaces_a_linked_out_not_its_target(tmp_path, capsys):
    """--overwrite of an output that is a symbolic link replaces the link; the folder it points to
    keeps every file."""
    data = csv_study(tmp_path / "data")
    user = tmp_path / "user"
    user.mkdir()
    (user / "thesis.tex").write_text("keep\n")
    out = tmp_path / "report"
    out.symlink_to(user, target_is_directory=True)
    args = ["score", "--csv-dir", str(data), "--out", str(out), "--bootstrap", "0", "--permutations", "0"]
    assert main(args) == 2
    refused(capsys, "score", "thesis.tex", "--overwrite")
    assert main(args + ["--overwrite"]) == 0
    assert not out.is_symlink() and (out / "vepd.json").is_file()
    assert (user / "thesis.tex").read_text() == "keep\n" and tree(user) == ["thesis.tex"]


def test_runs_csv_neutralises_spreadsheet_formulas(tmp_path, capsys):
    """A variant named `=HYPERLINK(...)` (a --csv-dir folder) went into runs.csv as a live formula."""
    data = csv_study(tmp_path / "data", variant='=HYPERLINK("evil.invalid","click")')
    out = tmp_path / "report"
    assert main(["score", "--csv-dir", str(data), "--out", str(out), "--bootstrap", "0",
                 "--permutations", "0"]) == 0
    with open(out / "runs.csv", newline="") as stream:
        cells = [row[1] for row in csv.reader(stream)][1:]
    assert "'=HYPERLINK(\"evil.invalid\",\"click\")" in cells, cells
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in cells), cells


@pytest.mark.parametrize("command", ["demo", "scenario", "sensors", "judge", "simulate", "replay", "score",
                                     "make-reference", "calibrate", "tune", "import"])
def test_every_writing_command_states_the_output_policy_in_its_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Outputs (docs/pipeline.md, 'Outputs'):" in text
    assert "link" in text or command in ("simulate", "replay")
