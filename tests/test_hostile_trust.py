"""Hostile cases, round three (issue 30 items 1, 2, 7): nothing is trusted that was not verified.

- An output folder's marker (``.sim2real-eval.json``) that the tool did not write can never make a command
  delete a file it would not itself write, nor reach outside the folder (``..``, absolute paths, a
  symbolic link at any component); ``--overwrite`` replaces such a folder as a whole, as documented, and
  never deletes through a link.  (Against 93b20b2: a forged marker made ``demo --real-sample`` delete
  thesis.tex and notes/n1.txt, and with ``--overwrite`` a file outside OUT behind a linked folder.)
- Every reader of a run checks it: ``score``, ``tune`` and resume verify the sizes and SHA-256 run.yaml
  records (``files``); a run.yaml without them is checked against metadata.yaml's message counts.
  (Against 93b20b2: a .db3 copied over another run's was scored, exit 0, wrong numbers.)

Each case: exit 0 with correct output, or one line and exit 2; no user file lost inside or outside OUT;
inputs unchanged; nothing partial left.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml
from fixtures.hostile import digest, refused, tree
from test_score_bags import FAST, make_run, write_run_bag

from sim2real_eval import outputs, runs
from sim2real_eval.cli import main
from sim2real_eval.errors import UserError
from sim2real_eval.metrics import ScoreOptions

MARKER = outputs.MARKER


def record_of(path: Path) -> dict:
    data = path.read_bytes()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def state(*folders: Path) -> tuple:
    """Everything below ``folders`` (names, links included, and bytes): compared before and after."""
    return tuple((tree(folder), digest(folder)) for folder in folders)


# ------------------------------------------------------------------------------ forged markers
@pytest.fixture
def forged(tmp_path):
    """A user's folder F (thesis.tex, notes/n1.txt, linkdir -> a folder outside F holding secret.txt)
    with a marker claiming the demo wrote all three files, digests right."""
    folder, outside = tmp_path / "F", tmp_path / "outside"
    (folder / "notes").mkdir(parents=True)
    outside.mkdir()
    (folder / "thesis.tex").write_text("\\documentclass{book}\n")
    (folder / "notes" / "n1.txt").write_text("n1\n")
    (outside / "secret.txt").write_text("secret\n")
    (folder / "linkdir").symlink_to(outside, target_is_directory=True)
    files = {"thesis.tex": record_of(folder / "thesis.tex"),
             "notes/n1.txt": record_of(folder / "notes/n1.txt"),
             "linkdir/secret.txt": record_of(outside / "secret.txt")}
    (folder / MARKER).write_text(json.dumps({"command": "demo", "files": files}))
    return folder, outside


def test_a_forged_demo_marker_deletes_nothing(forged, capsys):
    """`demo --real-sample --out F` (no --overwrite): was exit 0 with thesis.tex and notes/n1.txt deleted."""
    folder, outside = forged
    before = state(folder, outside)
    assert main(["demo", "--real-sample", "--out", str(folder), "--no-progress"]) == 2
    refused(capsys, "demo", f"--out {folder}", MARKER, "never writes", "--overwrite")
    assert state(folder, outside) == before
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("entry", ["../outside/secret.txt", "/etc/hostname",
                                   "figures/../../outside/secret.txt", "./tables.md",
                                   "figures//overview.png", "tables.md/", ""])
def test_a_marker_entry_outside_or_not_normalised_is_refused(forged, capsys, entry):
    """`..`, absolute and non-normalised entries (even under the demo's own names) are refused loudly,
    not skipped: such a marker was not written by the tool."""
    folder, outside = forged
    (folder / "thesis.tex").unlink()
    shutil.rmtree(folder / "notes")
    (folder / MARKER).write_text(json.dumps({"command": "demo",
                                             "files": {entry: record_of(outside / "secret.txt")}}))
    before = state(folder, outside)
    assert main(["demo", "--real-sample", "--out", str(folder), "--no-progress"]) == 2
    refused(capsys, "demo", f"--out {folder}", "not a plain relative path", "--overwrite")
    assert state(folder, outside) == before


def test_a_marker_whose_digest_differs_from_the_file_is_refused(tmp_path, capsys):
    """A marker listing the demo's own tables.md with another SHA-256 (same size): the file is not the
    demo's, so it is never replaced nor deleted; refused naming it."""
    folder = tmp_path / "F"
    folder.mkdir()
    (folder / "tables.md").write_text("my own table\n")
    wrong = dict(record_of(folder / "tables.md"), sha256="0" * 64)
    (folder / MARKER).write_text(json.dumps({"command": "demo", "files": {"tables.md": wrong}}))
    before = state(folder)
    assert main(["demo", "--real-sample", "--out", str(folder), "--no-progress"]) == 2
    refused(capsys, "demo", "tables.md: not written by sim2real-eval demo", "--overwrite")
    assert state(folder) == before


def test_a_link_at_an_intermediate_component_is_never_followed(tmp_path, capsys):
    """OUT/imu_study/figures is a link to a user folder; the marker lists imu_study/figures/secret.txt with
    the right digest.  Refused (the link is found, not followed); the policy's removal refuses it too."""
    folder, outside = tmp_path / "F", tmp_path / "outside"
    (folder / "imu_study").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (folder / "imu_study" / "figures").symlink_to(outside, target_is_directory=True)
    rel = "imu_study/figures/secret.txt"
    files = {rel: record_of(outside / "secret.txt")}
    (folder / MARKER).write_text(json.dumps({"command": "demo", "files": files}))
    before = state(folder, outside)
    assert main(["demo", "--real-sample", "--out", str(folder), "--no-progress"]) == 2
    refused(capsys, "demo", "imu_study/figures: not written by sim2real-eval demo")
    assert state(folder, outside) == before
    assert outputs.own_file(folder, rel, files[rel]) is False
    assert outputs.remove_own_file(folder, rel, files[rel]) is False
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_remove_own_file_checks_every_component_and_the_digest(tmp_path):
    root, outside = tmp_path / "OUT", tmp_path / "outside"
    (root / "figures").mkdir(parents=True)
    outside.mkdir()
    (root / "figures" / "a.png").write_bytes(b"png")
    (outside / "b.png").write_bytes(b"png")
    (root / "figures" / "b.png").symlink_to(outside / "b.png")  # a link at the last component
    (root / "linked").symlink_to(outside, target_is_directory=True)  # at the first
    good = record_of(root / "figures" / "a.png")
    assert outputs.remove_own_file(root, "figures/b.png", good) is False
    assert outputs.remove_own_file(root, "linked/b.png", good) is False
    assert outputs.remove_own_file(root, "figures/../../outside/b.png", good) is False
    assert outputs.remove_own_file(root, "figures/a.png", dict(good, sha256="1" * 64)) is False
    assert outputs.remove_own_file(root, "figures/a.png", dict(good, size=4)) is False
    assert (outside / "b.png").read_bytes() == b"png" and (root / "figures" / "b.png").is_symlink()
    assert outputs.remove_own_file(root, "figures/a.png", good) is True
    assert not (root / "figures" / "a.png").exists()


@pytest.mark.parametrize("name, plain", [("a", True), ("a/b.png", True), ("", False), ("/a", False),
                                         ("a/../b", False), ("./a", False), ("a//b", False), ("a/", False),
                                         ("..", False), ("a\0b", False), (3, False)])
def test_plain_relative(name, plain):
    assert outputs.plain_relative(name) is plain


def tune_into(folder: Path) -> list:
    """`tune` args whose only effect before any work is the --out check (the search needs no runs yet)."""
    return ["tune", "--study", "tiny.yaml", "--real", str(folder.parent / "no-runs"),
            "--params", "gps.sigma=1:2", "--out", str(folder), "--budget", "1", "--no-progress"]


@pytest.mark.parametrize("extra", ["thesis.tex", None])
def test_a_forged_tune_marker_never_replaces_a_users_folder(tmp_path, capsys, extra):
    """tune replaces its own --out as a whole: a marker saying "tune" (its five files listed, digests
    right) over a folder that also holds the user's thesis.tex — or lists it — was trusted and the folder
    replaced.  Refused, nothing touched."""
    pytest.importorskip("optuna")
    from sim2real_eval.studies.tune_outputs import OUTPUT_FILES

    folder = tmp_path / "F"
    folder.mkdir()
    for name in OUTPUT_FILES:
        (folder / name).write_text(f"{name}\n")
    (folder / "thesis.tex").write_text("mine\n")
    names = OUTPUT_FILES + ((extra,) if extra else ())
    (folder / MARKER).write_text(json.dumps({"command": "tune",
                                             "files": {n: record_of(folder / n) for n in names}}))
    before = state(folder)
    assert main(tune_into(folder)) == 2
    refused(capsys, "tune", f"--out {folder}", "thesis.tex", "--overwrite")
    assert state(folder) == before


def test_a_verified_tune_output_is_still_its_own(tmp_path):
    """The legitimate case: every file is tune's, as its marker records (what write_outputs writes)."""
    from sim2real_eval.studies.tune_outputs import COMMAND, OUTPUT_FILES

    folder = tmp_path / "F"
    folder.mkdir()
    for name in OUTPUT_FILES:
        (folder / name).write_text(f"{name}\n")
    outputs.write_marker(folder, COMMAND, {n: outputs.file_record(folder / n) for n in OUTPUT_FILES})
    own = outputs.OwnNames(COMMAND, OUTPUT_FILES, whole=True)
    assert outputs.output_folder(folder, "--out", False, command=COMMAND, own=own) == outputs.OWN
    (folder / "best.yaml").write_text("edited\n")
    with pytest.raises(UserError, match="best.yaml: not written by sim2real-eval tune"):
        outputs.output_folder(folder, "--out", False, command=COMMAND, own=own)
    assert outputs.output_folder(folder, "--out", True, command=COMMAND, own=own) == outputs.REPLACE


def test_publish_removes_only_verified_own_files(tmp_path):
    """The previous output's files that the new one does not write are removed only when they are own
    names with the recorded digests, reached without a link."""
    out, staging, outside = tmp_path / "OUT", tmp_path / "staging", tmp_path / "outside"
    for folder in (out / "figures", staging, outside):
        folder.mkdir(parents=True)
    (staging / "tables.md").write_text("new\n")
    (out / "figures" / "old.png").write_bytes(b"old")
    (out / "figures" / "edited.png").write_bytes(b"edited")
    (outside / "x.png").write_bytes(b"x")
    previous = {"figures/old.png": record_of(out / "figures" / "old.png"),
                "figures/edited.png": dict(record_of(out / "figures" / "edited.png"), sha256="2" * 64),
                "../outside/x.png": record_of(outside / "x.png")}
    written = outputs.publish_files(staging, out, previous, "--out", "demo")
    assert set(written) == {"tables.md"} and (out / "tables.md").read_text() == "new\n"
    assert not (out / "figures" / "old.png").exists()
    assert (out / "figures" / "edited.png").read_bytes() == b"edited"
    assert (outside / "x.png").read_bytes() == b"x"


# -------------------------------------------------------------------------- readers check runs
TOPICS = {"estimate": "/odometry/filtered", "ground_truth": "/ground_truth/odom", "gps": "/fix",
          "imu": "/imu"}


def write_runs(root: Path, with_files: bool = True) -> Path:
    """A run tree (2 real, 2 × 2 simulated runs of one scenario) whose run.yaml records its data files as
    the pipeline does (``with_files``), or not (the format before ``files``)."""
    rng = np.random.default_rng(3)
    for side, variant, noise in (("real", "real", 0.04), ("sim", "gauss", 0.1), ("sim", "walk", 0.05)):
        for k in (0, 1):
            path = root / side / variant / "line" / str(k)
            info = {"side": side, "variant": variant, "scenario": "line", "k": k, "seed": 0, "topics": TOPICS}
            write_run_bag(path, make_run(rng, noise, duration=4.0 + k), run_yaml=info)
            if with_files:
                info[runs.FILES_KEY] = runs.data_files(path)
                (path / runs.RUN_FILE).write_text(yaml.safe_dump(info))
    return root


@pytest.fixture(scope="module")
def kept_runs(tmp_path_factory):
    return write_runs(tmp_path_factory.mktemp("kept") / "runs")


@pytest.fixture(scope="module")
def old_runs(tmp_path_factory):
    return write_runs(tmp_path_factory.mktemp("old") / "runs", with_files=False)


def db3(run_dir: Path) -> Path:
    return next(run_dir.glob("*.db3"))


def score(root: Path, out: Path) -> int:
    return main(["score", str(root), "--out", str(out), *FAST, "--workers", "1"])


@pytest.mark.parametrize("fixture", ["kept_runs", "old_runs"])
def test_intact_runs_are_scored(request, tmp_path, fixture):
    root = request.getfixturevalue(fixture)
    before = digest(root)
    assert score(root, tmp_path / "report") == 0
    assert (tmp_path / "report" / "vepd.json").is_file() and digest(root) == before


def test_score_refuses_a_bag_copied_over_another_runs(kept_runs, tmp_path, capsys):
    """Another variant's .db3 copied over sim/walk/line/0's: was exit 0 with wrong numbers."""
    root = tmp_path / "runs"
    shutil.copytree(kept_runs, root)
    shutil.copyfile(db3(root / "sim" / "gauss" / "line" / "0"), db3(root / "sim" / "walk" / "line" / "0"))
    before = digest(root)
    assert score(root, tmp_path / "report") == 2
    refused(capsys, "score", "run sim/walk/line/0", db3(root / "sim" / "walk" / "line" / "0").name,
            "changed after it was written")
    assert digest(root) == before and not (tmp_path / "report").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_score_refuses_a_bag_with_the_same_size_but_other_bytes(kept_runs, tmp_path, capsys):
    root = tmp_path / "runs"
    shutil.copytree(kept_runs, root)
    bag = db3(root / "real" / "real" / "line" / "1")
    data = bytearray(bag.read_bytes())
    data[-1] ^= 0xFF
    bag.write_bytes(bytes(data))
    assert score(root, tmp_path / "report") == 2
    refused(capsys, "score", "run real/real/line/1", "SHA-256 differs")
    assert not (tmp_path / "report").exists()


def test_tune_refuses_a_swapped_real_run(kept_runs, tmp_path):
    """tune reads its real runs through the same check (``studies.tune.load_real_records``)."""
    from sim2real_eval.studies.tune import load_real_records

    root = tmp_path / "runs"
    shutil.copytree(kept_runs, root)
    assert len(load_real_records(root, ["line"], ScoreOptions(bootstrap=0, permutations=0))) == 2
    shutil.copyfile(db3(root / "real" / "real" / "line" / "1"), db3(root / "real" / "real" / "line" / "0"))
    with pytest.raises(UserError, match="run real/real/line/0: .*changed after it was written"):
        load_real_records(root, ["line"], ScoreOptions(bootstrap=0, permutations=0))


def cut_messages(run_dir: Path, keep: float) -> None:
    """Keep the first ``keep`` of each topic's messages in the run's .db3 (metadata.yaml left as it was)."""
    with sqlite3.connect(db3(run_dir)) as conn:
        for (topic_id, count) in conn.execute("SELECT topic_id, COUNT(*) FROM messages GROUP BY topic_id"
                                              ).fetchall():
            conn.execute("DELETE FROM messages WHERE topic_id = ? AND id NOT IN (SELECT id FROM messages "
                         "WHERE topic_id = ? ORDER BY timestamp LIMIT ?)", (topic_id, topic_id,
                                                                         int(count * keep)))
    conn.close()
    conn = sqlite3.connect(db3(run_dir))
    conn.execute("VACUUM")
    conn.close()


def test_an_old_format_run_cut_to_30_percent_is_refused(old_runs, tmp_path, capsys):
    """A run.yaml without ``files`` whose bag holds 30 % of the messages metadata.yaml records: was
    resumed and scored silently.  Score refuses naming the run and the topic; so does resume."""
    root = tmp_path / "runs"
    shutil.copytree(old_runs, root)
    run_dir = root / "sim" / "gauss" / "line" / "1"
    cut_messages(run_dir, 0.3)
    before = digest(root)
    assert score(root, tmp_path / "report") == 2
    err = refused(capsys, "score", "run sim/gauss/line/1", "messages, metadata.yaml records")
    assert "/odometry/filtered" in err or "/ground_truth/odom" in err
    assert digest(root) == before and not (tmp_path / "report").exists()
    found = yaml.safe_load((run_dir / runs.RUN_FILE).read_text())
    with pytest.raises(UserError, match="run sim/gauss/line/1: topic .* holds"):
        runs.check_data_files(run_dir, found)


def test_an_old_format_run_without_a_bag_is_refused(old_runs, tmp_path, capsys):
    root = tmp_path / "runs"
    shutil.copytree(old_runs, root)
    run_dir = root / "real" / "real" / "line" / "0"
    db3(run_dir).unlink()
    assert score(root, tmp_path / "report") == 2
    refused(capsys, "score", "run real/real/line/0", "is missing")


def test_a_recorded_run_must_record_every_storage_file(kept_runs, tmp_path, capsys):
    """run.yaml's files leave out the .db3 (or name a path with a folder): not what a writer records."""
    root = tmp_path / "runs"
    shutil.copytree(kept_runs, root)
    run_dir = root / "sim" / "gauss" / "line" / "0"
    info = yaml.safe_load((run_dir / runs.RUN_FILE).read_text())
    name = db3(run_dir).name
    info[runs.FILES_KEY]["../" + name] = info[runs.FILES_KEY].pop(name)
    (run_dir / runs.RUN_FILE).write_text(yaml.safe_dump(info))
    assert score(root, tmp_path / "report") == 2
    refused(capsys, "score", "run sim/gauss/line/0", "not a file name of the run folder")


def test_an_old_format_mcap_run_cut_short_is_refused(tmp_path, capsys):
    """The same for an MCAP run (its messages read and counted): the file cut to 30 % of its bytes."""
    root = tmp_path / "runs"
    write_runs(root, with_files=False)
    run_dir = root / "sim" / "walk" / "line" / "0"
    info = yaml.safe_load((run_dir / runs.RUN_FILE).read_text())
    shutil.rmtree(run_dir)
    write_run_bag(run_dir, make_run(np.random.default_rng(5), 0.05), run_yaml=info, storage="mcap")
    found = yaml.safe_load((run_dir / runs.RUN_FILE).read_text())
    runs.check_data_files(run_dir, found)  # whole: its counts are metadata.yaml's
    mcap = next(run_dir.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[: int(mcap.stat().st_size * 0.3)])
    assert score(root, tmp_path / "report") == 2
    refused(capsys, "score", "run sim/walk/line/0", "changed after it was written")
    assert not (tmp_path / "report").exists()
