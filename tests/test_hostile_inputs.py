"""Hostile cases, part 2: what an input may ask for (issue 21: resource bounds, silent wrong results,
names, tracebacks).

Cases that exploded on 331a292 (MemoryError after gigabytes, a FIFO read forever) run the real command
in a child process with a memory cap and a time limit (``fixtures.hostile``), so a regression fails
here in seconds instead of taking the machine down.  The others run ``cli.main`` in-process.
"""
from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

import pytest
import yaml
from fixtures.hostile import digest, one_line_error, refused, run, tree
from test_cli_guards import ART_TFS, art_bag

from sim2real_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "config" / "studies" / "tiny.yaml"
EKF = REPO / "config" / "ekf_art_iros2024.yaml"
NAVSAT = REPO / "config" / "navsat_art_iros2024.yaml"
ALIAS_BOMB = """\
      a: &a [x, x, x, x, x, x, x, x, x]
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
      h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
      i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def study(tmp_path: Path, text: str, name: str = "study.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    for config in (EKF, NAVSAT):
        shutil.copy(config, tmp_path / config.name)
    return path


def tiny_with(tmp_path: Path, old: str, new: str) -> Path:
    text = TINY.read_text()
    assert old in text
    return study(tmp_path, text.replace(old, new))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "runs"
    assert main(["simulate", str(TINY), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    return out


# ------------------------------------------------------------------------------- resume verification
def test_run_yaml_records_the_size_and_sha256_of_its_data_files(runs):
    import hashlib

    run = runs / "sim" / "ch_gauss" / "line" / "0"
    files = yaml.safe_load((run / "run.yaml").read_text())["files"]
    assert set(files) == {p.name for p in run.iterdir()} - {"run.yaml"}
    for name, record in files.items():
        data = (run / name).read_bytes()
        assert record == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _truncate(run: Path, other: Path) -> None:
    bag = next(run.glob("*.db3"))
    with open(bag, "r+b") as stream:
        stream.truncate(bag.stat().st_size // 2)


def _delete(run: Path, other: Path) -> None:
    next(run.glob("*.db3")).unlink()


def _swap(run: Path, other: Path) -> None:
    shutil.copy(next(other.glob("*.db3")), next(run.glob("*.db3")))


def _flip(run: Path, other: Path) -> None:
    bag = next(run.glob("*.db3"))
    data = bytearray(bag.read_bytes())
    data[len(data) // 2] ^= 0x01
    bag.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _delete, _swap, _flip], ids=["truncated", "deleted",
                                                                          "swapped", "one_bit"])
def test_resume_refuses_a_run_whose_data_changed(runs, tmp_path, capsys, damage):
    """Resume trusted run.yaml alone: a truncated or deleted bag, or another variant's bag copied over,
    gave "0 runs written, 4 already complete" and the swapped bag then scored silently wrong."""
    out = tmp_path / "runs"
    shutil.copytree(runs, out)
    damage(out / "sim" / "ch_gauss" / "line" / "1", out / "sim" / "ch_rw" / "line" / "1")
    before = digest(out)
    assert main(["simulate", str(TINY), "--out", str(out), "--workers", "1", "--no-progress"]) == 2
    refused(capsys, "simulate", "sim/ch_gauss/line/1", "remove")
    assert digest(out) == before


# ------------------------------------------------------------------------------------------ names
@pytest.mark.parametrize("old, new, key", [
    ("scenarios: [line]", 'scenarios: ["line\\n"]', "scenarios[0]"),
    ("  ch_gauss: {gps", '  "ch_gauss\\n": {gps', "ch_gauss"),
    ("name: tiny", 'name: "tiny\\n"', "name"),
])
def test_names_ending_in_a_newline_are_refused(tmp_path, capsys, old, new, key):
    """`$` matched before a final newline: folders `line\\n` and variant `ch_gauss\\n` were created."""
    path = tiny_with(tmp_path, old, new)
    out = tmp_path / "out"
    assert main(["simulate", str(path), "--out", str(out), "--workers", "1", "--no-progress"]) == 2
    refused(capsys, "simulate", key)
    assert not out.exists()


@pytest.mark.parametrize("folder", ["\u0662", "\u00b2", "1\n"])
def test_run_folders_need_ascii_digits(runs, tmp_path, capsys, folder):
    """A run folder named `٢` was scored as k = 2; `²` gave a traceback."""
    out = tmp_path / "runs"
    shutil.copytree(runs, out)
    os.rename(out / "sim" / "ch_gauss" / "line" / "1", out / "sim" / "ch_gauss" / "line" / folder)
    assert main(["score", str(out), "--out", str(tmp_path / "report")]) == 2
    refused(capsys, "score", "run folder name must be the run number")


@pytest.mark.parametrize("name", ["line_\u0662.csv", "line_\u00b2.csv"])
def test_csv_names_need_ascii_digits(tmp_path, capsys, name):
    for folder in ("Real", "Sim/gauss"):
        (tmp_path / "data" / folder).mkdir(parents=True)
        (tmp_path / "data" / folder / name).write_text("se_time,gt_time,se_vel,gt_vel\n1,1,1,1\n")
    assert main(["score", "--csv-dir", str(tmp_path / "data"), "--out", str(tmp_path / "report")]) == 2
    refused(capsys, "score", "<scenario>_<k>.csv")


@pytest.mark.parametrize("text", ["line:\u00b2", "line:\u0662"])
def test_trace_runs_need_ascii_digits(runs, tmp_path, capsys, text):
    assert main(["score", str(runs), "--out", str(tmp_path / "r"), "--trace-runs", text]) == 2
    refused(capsys, "score", "--trace-runs")


@pytest.mark.parametrize("command", [["replay", "BAG", "--replace", "imu=chrono_paper_demo", "--out", "o"],
                                     ["scenario", "line", "--out", "o.npz"]])
def test_k_options_need_ascii_digits(tmp_path, capsys, command):
    args = [str(tmp_path / c) if c in ("BAG", "o", "o.npz") else c for c in command]
    try:
        code = main(args + ["--k", "\u0662"])  # int() reads '٢' as 2
    except SystemExit as stop:  # argparse: usage and one error line
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert "--k" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.npz").exists()


def test_bag_and_output_names_that_are_not_utf8(tmp_path):
    """A bag folder with a \\xff byte in its name was refused although the bag is fine; an output name
    with one gave a UnicodeEncodeError."""
    root = os.fsencode(tmp_path)
    bag = os.fsdecode(root + b"/bag\xff")
    os.rename(art_bag(tmp_path / "bag"), bag)
    output = os.fsdecode(root + b"/judged\xff")
    tfs = [arg for tf in ART_TFS for arg in ("--static-tf", tf)]  # no INS: not the ART layout
    result = run(["judge", bag, "--config", EKF, "--navsat", NAVSAT, "--output", output, "--no-progress",
                  *tfs], timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"judged\xff" in result.stdout and b"Traceback" not in result.stderr
    assert (Path(output) / "metadata.yaml").is_file() and (Path(output) / "summary.json").is_file()
    npz = os.fsdecode(root + b"/truth\xff.npz")
    result = run(["scenario", "line", "--out", npz], timeout=60, PYTHONIOENCODING="utf-8:strict")
    assert result.returncode == 0 and Path(npz).is_file(), result.stderr.decode(errors="replace")


@pytest.mark.slow
def test_real_bags_in_a_folder_that_is_not_utf8_replay_resume_and_score(tmp_path):
    """The name goes into run.yaml (``source``) and the report: written as ``\\xff`` (YAML cannot hold
    the byte), read back, resumed, scored."""
    root = os.fsencode(tmp_path)
    line = Path(os.fsdecode(root + b"/bags\xff/line"))
    for k in range(2):
        name = os.fsdecode(b"run\xff" + str(k).encode())
        shutil.copytree(REPO / f"bags/reference/line/run_0{k}", line / name)
    runs = os.fsdecode(root + b"/runs\xff")
    args = ["replay", line, "--replace", "imu=chrono_paper_demo", "--out", runs, "--workers", "1"]
    first = run(args, timeout=300, memory_mb=None)
    assert first.returncode == 0, first.stderr.decode(errors="replace")
    again = run(args, timeout=300, memory_mb=None)
    assert again.returncode == 0 and again.stdout.count(b"already complete") == 4, again
    report = os.fsdecode(root + b"/report\xff")
    scored = run(["score", runs, "--out", report, "--bootstrap", "0", "--permutations", "0"], timeout=300,
                 memory_mb=None)
    assert scored.returncode == 0, scored.stderr.decode(errors="replace")
    assert (Path(report) / "report.html").is_file()


# ------------------------------------------------------------------------- paths the OS refuses
def _loop(tmp_path: Path) -> Path:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return loop


@pytest.mark.parametrize("make_out", [
    _loop,
    lambda tmp: _loop(tmp) / "report",
    lambda tmp: tmp / ("a" * 300),
    lambda tmp: tmp / "/".join(["b" * 200] * 22),
], ids=["loop", "loop_parent", "component_300_bytes", "path_4400_bytes"])
def test_outputs_the_os_refuses_are_one_line(runs, tmp_path, capsys, make_out):
    """A symlink loop as --out or its parent: RuntimeError; a component over 255 bytes or a path over
    4096: ENAMETOOLONG (tracebacks)."""
    out = make_out(tmp_path)
    assert main(["score", str(runs), "--out", str(out)]) == 2
    refused(capsys, "score", "--out")
    assert main(["judge", str(runs / "sim/ch_gauss/line/0"), "--config", str(EKF), "--output", str(out)]) == 2
    refused(capsys, "judge", "--output")


def test_a_bag_that_is_a_symlink_loop_is_one_line(tmp_path, capsys):
    loop = _loop(tmp_path)
    with pytest.raises(SystemExit) as stop:  # BAG is checked while parsing (cli.validators.existing_path)
        main(["judge", str(loop), "--config", str(EKF), "--output", str(tmp_path / "o")])
    assert stop.value.code == 2
    refused(capsys, "judge", str(loop), "a symbolic link loop")
    assert main(["replay", str(loop), "--replace", "imu=chrono_paper_demo", "--out",
                 str(tmp_path / "o")]) == 2
    refused(capsys, "replay", str(loop))


# ------------------------------------------------------------------------------------------ bounds
def test_the_docs_table_is_the_bounds_table():
    from sim2real_eval import limits

    text = (REPO / "docs" / "limits.md").read_text()
    assert limits.markdown_table() in text
    assert "docs/limits.md" in (REPO / "README.md").read_text()


@pytest.mark.parametrize("node, key", [("ekf_filter_node", "frequency"), ("navsat_transform", "frequency")])
def test_judge_frequency_is_bounded(tmp_path, capsys, node, key):
    """`frequency: 1e9` was accepted: at 1e7 Hz a 31 s bag took 158 s."""
    source = EKF if node.startswith("ekf") else NAVSAT
    text = source.read_text()
    path = tmp_path / source.name
    path.write_text(re.sub(r"frequency: [0-9.]+", "frequency: 1.0e9", text, count=1))
    assert main(["judge", "--check", str(path)]) == 2
    out = capsys.readouterr().out
    assert "frequency" in out and "1000" in out
    bag = art_bag(tmp_path / "bag")
    args = ["judge", bag, "--config", path if node.startswith("ekf") else EKF, "--navsat",
            path if not node.startswith("ekf") else NAVSAT, "--output", tmp_path / "o", "--no-progress"]
    one_line_error(run(args, timeout=60), "judge", "frequency", "1000 Hz")
    assert not (tmp_path / "o").exists()


def test_tick_latency_is_bounded(tmp_path, capsys):
    """`--tick-latency-ms 1e30`: OverflowError traceback."""
    assert main(["simulate", str(TINY), "--out", str(tmp_path / "o"), "--tick-latency-ms", "1e30",
                 "--no-progress"]) == 2
    refused(capsys, "simulate", "--tick-latency-ms", "1000 ms")
    text = TINY.read_text().replace("  navsat: navsat_art_iros2024.yaml",
                                    "  navsat: navsat_art_iros2024.yaml\n  timing: {model: fixed, "
                                    "tick_latency_ms: 1.0e30}")
    path = study(tmp_path, text)
    assert main(["simulate", str(path), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    refused(capsys, "simulate", "tick_latency_ms", "1000 ms")
    assert not (tmp_path / "o").exists()


def test_permutations_and_bootstrap_are_bounded(runs, tmp_path, capsys):
    for option in ("--permutations", "--bootstrap"):
        assert main(["score", str(runs), "--out", str(tmp_path / "r"), option, "1000000000"]) == 2
        refused(capsys, "score", option, "100000")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("rate", ["1.0e-9", "0.5"])
def test_ground_truth_rate_too_low_is_refused(tmp_path, capsys, rate):
    """`ground_truth_rate: 1.0e-9` wrote runs without any /ground_truth/odom message, exit 0."""
    path = tiny_with(tmp_path, "ground_truth_rate: 50", f"ground_truth_rate: {rate}")
    assert main(["simulate", str(path), "--out", str(tmp_path / "o"), "--workers", "1", "--no-progress"]) == 2
    refused(capsys, "simulate", "ground_truth_rate", "1 Hz")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["ground_truth_rate", "duration", "scenario_rate", "repeats",
                                  "replay_ground_truth_rate"])
def test_sizes_that_exhausted_memory_are_bounded(tmp_path, case):
    """numpy _ArrayMemoryError (231-693 GiB) for ground_truth_rate 1e9, a duration of 1e7 s, a rate of
    1e9; a study with 1e9 repeats built 1e9 run descriptions."""
    if case == "ground_truth_rate":
        args = ["simulate", tiny_with(tmp_path, "ground_truth_rate: 50", "ground_truth_rate: 1.0e9")]
        words = ["ground_truth_rate", "1000 Hz"]
    elif case == "repeats":
        args = ["simulate", tiny_with(tmp_path, "repeats: 2", "repeats: 1000000000")]
        words = ["repeats", "1000"]
    elif case == "replay_ground_truth_rate":
        args = ["replay", REPO / "bags/reference/line/run_00", "--replace", "imu=chrono_paper_demo",
                "--ground-truth-rate", "1e9"]
        words = ["--ground-truth-rate", "1000 Hz"]
    else:
        scenario = tmp_path / "s.yaml"
        duration, rate = ("1.0e7", "200.0") if case == "duration" else ("10.0", "1.0e9")
        scenario.write_text(f"rate: {rate}\nphases:\n  - {{duration: {duration}, speed: 1.0}}\n")
        args = ["scenario", scenario]
        words = ["duration", "3600 s"] if case == "duration" else ["rate", "10000 Hz"]
    args += ["--out", tmp_path / "out"]
    one_line_error(run(args, timeout=60, memory_mb=2000), args[0], *words)
    assert not (tmp_path / "out").exists()


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("case", ["simulate_dev_zero", "demo_config_dev_urandom", "judge_config_dev_zero",
                                  "judge_check_dev_zero", "score_manifest_dev_zero", "simulate_fifo",
                                  "score_manifest_fifo", "judge_config_fifo", "study_of_20_mib"])
def test_config_files_are_regular_files_of_bounded_size(tmp_path, case):
    """`--config /dev/zero`, `simulate /dev/zero`: read until MemoryError (5.3 GB); a FIFO as a config or
    manifest blocked forever."""
    fifo = _fifo(tmp_path, "fifo.yaml") if case.endswith("fifo") else None
    big = tmp_path / "big.yaml"
    if case == "study_of_20_mib":
        with open(big, "wb") as stream:
            stream.truncate(20 << 20)
    bag = REPO / "bags/reference/line/run_00"
    args = {
        "simulate_dev_zero": ["simulate", "/dev/zero", "--out", tmp_path / "o"],
        "demo_config_dev_urandom": ["demo", "--config", "/dev/urandom", "--out", tmp_path / "o"],
        "judge_config_dev_zero": ["judge", bag, "--config", "/dev/zero", "--output", tmp_path / "o"],
        "judge_check_dev_zero": ["judge", "--check", "/dev/zero"],
        "score_manifest_dev_zero": ["score", "--manifest", "/dev/zero", "--out", tmp_path / "o"],
        "simulate_fifo": ["simulate", fifo, "--out", tmp_path / "o"],
        "score_manifest_fifo": ["score", "--manifest", fifo, "--out", tmp_path / "o"],
        "judge_config_fifo": ["judge", bag, "--config", fifo, "--output", tmp_path / "o"],
        "study_of_20_mib": ["simulate", big, "--out", tmp_path / "o"],
    }[case]
    result = run(args, timeout=30, memory_mb=1500)
    if case == "judge_check_dev_zero":  # --check prints its findings: one line per file, exit 2
        assert result.returncode == 2 and b"Traceback" not in result.stderr, result.stderr
        assert b"not a regular file" in result.stdout + result.stderr
    else:
        one_line_error(result, args[0], "not a regular file" if case != "study_of_20_mib" else "16 MiB")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["sparse_ros1_bag", "nul_metadata", "sparse_db3"])
def test_huge_bag_files_are_refused_before_reading(tmp_path, case):
    """A 1 GB sparse `.bag` or a 1 GB NUL metadata.yaml peaked at 2.2 GB before 'File magic is invalid'."""
    if case == "sparse_ros1_bag":
        bag = tmp_path / "big.bag"
        with open(bag, "wb") as stream:
            stream.truncate(1 << 30)
    else:
        bag = tmp_path / "bag"
        shutil.copytree(REPO / "bags/reference/line/run_00", bag)
        target = bag / "metadata.yaml" if case == "nul_metadata" else next(bag.glob("*.db3"))
        with open(target, "wb") as stream:
            stream.truncate(1 << 30)
    args = ["judge", bag, "--config", EKF, "--navsat", NAVSAT, "--output", tmp_path / "o", "--no-progress"]
    one_line_error(run(args, timeout=60, memory_mb=1500), "judge", str(bag))
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("where", ["inline_model", "scenario_params", "manifest", "demo_config"])
def test_yaml_alias_bombs_are_refused_everywhere(tmp_path, where):
    """A ~700-byte alias bomb inside an inline model spec of a study hung, then MemoryError (it was
    refused only at the top level and in run.yaml)."""
    bomb = ALIAS_BOMB
    if where == "inline_model":
        text = TINY.read_text().replace("  ch_gauss: {gps: ch_gauss, imu: chrono_paper_demo}",
                                        "  ch_gauss:\n    imu: chrono_paper_demo\n    gps:\n      preset: "
                                        "ch_gauss\n" + bomb)
        args = ["simulate", study(tmp_path, text), "--out", tmp_path / "o"]
    elif where == "scenario_params":
        text = TINY.read_text().replace("scenarios: [line]", "scenarios:\n  line:\n    junk:\n" + bomb)
        args = ["simulate", study(tmp_path, text), "--out", tmp_path / "o"]
    elif where == "manifest":
        (tmp_path / "m.yaml").write_text("defaults:\n  junk:\n" + bomb.replace("      ", "    ")
                                         + "runs: []\n")
        args = ["score", "--manifest", tmp_path / "m.yaml", "--out", tmp_path / "o"]
    else:
        text = (REPO / "config/studies/demo.yaml").read_text() + "junk:\n" + bomb.replace("      ", "  ")
        (tmp_path / "demo.yaml").write_text(text)
        args = ["demo", "--config", tmp_path / "demo.yaml", "--out", tmp_path / "o"]
    one_line_error(run(args, timeout=60, memory_mb=2000), args[0], "aliases (*name) expand the document")
    assert not (tmp_path / "o").exists()


def test_a_fifo_config_does_not_block_in_process(tmp_path, capsys):
    """The same refusal in-process (what a library caller gets): no thread left waiting on the FIFO."""
    fifo = _fifo(tmp_path, "study.yaml")
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("code", main(
        ["simulate", str(fifo), "--out", str(tmp_path / "o")])), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the reader so the test process can end
        with open(fifo, "w"):
            pass
        pytest.fail("simulate blocked on a FIFO")
    assert result["code"] == 2
    refused(capsys, "simulate", "not a regular file")
    assert tree(tmp_path) == ["study.yaml"]
