"""Hostile cases, part 3: the process around the work (issue 21: signals, pipes, dying workers, a full
TMPDIR).  Every case runs the real command as a child process (``fixtures.hostile``), in its own
process group, with a time limit."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.hostile import children, csv_study, long_study, one_line_error, run, start, tree, wait_for
from test_cli_guards import art_bag

from sim2real_eval.bags import write_bag
from sim2real_eval.bags.messages import imu_messages, navsatfix_messages
from sim2real_eval.judge.synthetic import art_like_samples

REPO = Path(__file__).resolve().parents[1]
EKF = REPO / "config" / "ekf_art_iros2024.yaml"
NAVSAT = REPO / "config" / "navsat_art_iros2024.yaml"


# ----------------------------------------------------------------------------------- broken pipes
def closed_pipe():
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("command", ["judge_check", "score"])
def test_output_into_a_closed_pipe_is_no_traceback(tmp_path, command):
    """`judge --check … | true` and `score … | true`: BrokenPipeError tracebacks."""
    if command == "judge_check":
        args = ["judge", "--check", EKF, NAVSAT]
    else:
        args = ["score", "--csv-dir", csv_study(tmp_path / "data"), "--out", tmp_path / "report",
                "--bootstrap", "0", "--permutations", "0"]
    write = closed_pipe()
    try:
        process = start(args, stdout=write)
    finally:
        os.close(write)
    _out, err = process.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode(errors="replace")
    assert process.returncode == 128 + signal.SIGPIPE, (process.returncode, err)
    if command == "score":
        assert (tmp_path / "report" / "vepd.json").is_file()  # the work was done before the print


# --------------------------------------------------------------------- signals during a long judge
@pytest.fixture(scope="module")
def gap_bag(tmp_path_factory) -> Path:
    """A GPS fix, then 3 years later an IMU message and a fix: the EKF, not initialised before the IMU
    message, ticks at 30 Hz through the gap (~3e9 ticks, minutes) inside one call of the compiled loop,
    publishing nothing."""
    imu, gps = art_like_samples(duration=2.0, seed=1)
    fixes = list(navsatfix_messages(gps))[:2]
    far = 3 * 365 * 86400 * 10**9

    def later(message):
        recv, topic, msgtype, msg = message
        msg.header.stamp.sec += far // 10**9
        return recv + far, topic, msgtype, msg

    messages = sorted([fixes[0], later(next(iter(imu_messages(imu)))), later(fixes[1])], key=lambda m: m[0])
    folder = tmp_path_factory.mktemp("gap")
    # The judge's kernels compiled and cached first (a fresh clone compiles them for a minute, during
    # which no signal handler runs): the signals below then reach the compiled loop itself.
    in_order = sorted([*navsatfix_messages(gps), *imu_messages(imu)], key=lambda m: m[0])
    warm = write_bag(folder / "warm", in_order)
    done = run(["judge", warm, "--config", EKF, "--navsat", NAVSAT, "--output", folder / "warm_out",
                "--no-progress", "--static-tf", "base_link gps 0 0 0 0 0 0", "--static-tf",
                "base_link imu 0 0 0 3.1416 -1.5708 0"], timeout=900, memory_mb=None)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return write_bag(folder / "gap", messages)


def start_judge(bag: Path, out: Path) -> subprocess.Popen:
    return start(["judge", bag, "--config", EKF, "--navsat", NAVSAT, "--output", out, "--no-progress",
                  "--static-tf", "base_link gps 0 0 0 0 0 0"], memory_mb=None)


def temporaries(folder: Path) -> list:
    return [p for p in folder.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_judge_is_acted_on_at_once_and_leaves_nothing(gap_bag, tmp_path, signum):
    """SIGTERM was not acted on for over 80 s inside the compiled loop; SIGHUP left `.out.tmp-*` with a
    partial bag forever."""
    out = tmp_path / "out"
    process = start_judge(gap_bag, out)
    try:
        # The output's temporary sibling exists from the first message on: the judge is at work.
        wait_for(lambda: temporaries(tmp_path) or process.poll() is not None, 180, "the judge starting")
        assert process.poll() is None, process.communicate()[1].decode(errors="replace")
        time.sleep(2.0)  # inside the gap: the compiled loop is ticking (its kernels loaded from the cache)
        sent = time.monotonic()
        process.send_signal(signum)
        _out, err = process.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    name = signal.Signals(signum).name
    assert process.returncode == 128 + signum, (process.returncode, err.decode(errors="replace"))
    assert err.decode().strip().endswith(f"terminated ({name}); nothing half-written is left"), err
    assert took < 5.0, took
    assert tree(tmp_path) == [], tree(tmp_path)


CONVERTS_THE_SIGNAL = """
import os, signal, sys, time
from sim2real_eval import cli
from sim2real_eval.cli import scenario

def run(args):
    try:  # a library (numba compiling a kernel) turns the Terminated the handler raises into its own error
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    except KeyboardInterrupt:
        raise AttributeError("'record' object has no attribute 'data'") from None
    return 0

scenario.run = run
sys.exit(cli.main(["scenario", "line", "--out", sys.argv[1]]))
"""


def test_a_signal_turned_into_another_error_by_a_library_is_still_the_signal(tmp_path):
    """SIGHUP while numba loaded the judge's kernels came out as numba's AttributeError traceback (exit 1).
    The signal is what happened: exit 143 and the one line."""
    done = subprocess.run([sys.executable, "-c", CONVERTS_THE_SIGNAL, str(tmp_path / "t.npz")],
                          capture_output=True, timeout=120)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 128 + signal.SIGTERM, (done.returncode, err)
    assert err.strip() == "sim2real-eval scenario: terminated (SIGTERM); nothing half-written is left", err


# ------------------------------------------------------------------------------ a worker that dies
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_worker_killed_mid_run_is_named(tmp_path, signum):
    """SIGKILL (what the OOM killer does) or SIGTERM to one worker of `simulate --workers 2`:
    BrokenProcessPool traceback.  Now: one line naming the run the worker was judging, and the runs
    already written are complete (the next run resumes them)."""
    study = long_study(tmp_path)
    out = tmp_path / "out"
    process = start(["simulate", study, "--out", out, "--workers", "2", "--no-progress"], memory_mb=None)
    try:
        workers = wait_for(lambda: len(children(process.pid)) >= 2 and children(process.pid), 120,
                           "two workers")
        time.sleep(0.5)
        os.kill(workers[0], signum)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    result = subprocess.CompletedProcess([], process.returncode, b"", err)
    line = one_line_error(result, "simulate", "worker", signal.Signals(signum).name, "rerun")
    assert "sim/ch_" in line, line  # the run the worker was running
    # As the line says: a rerun resumes (the killed run's temporary is removed, the others kept).
    again = run(["simulate", study, "--out", out, "--workers", "2", "--no-progress"], timeout=300,
                memory_mb=None)
    assert again.returncode == 0, again.stderr.decode(errors="replace")
    assert b"already complete" in again.stdout
    assert [p for p in out.rglob("*") if ".tmp-" in p.name] == []


# ------------------------------------------------------------------------- a full TMPDIR and a WAL
def test_a_bag_with_a_wal_and_a_full_tmpdir_is_one_line(tmp_path):
    """A bag with a non-empty -wal is copied to TMPDIR and checkpointed there; TMPDIR full: shutil.Error."""
    live = art_bag(tmp_path / "live")
    db = next(live.glob("*.db3"))
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO messages(topic_id, timestamp, data) SELECT topic_id, timestamp + 1, data "
                 "FROM messages")
    conn.commit()
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for item in live.iterdir():
        (crashed / item.name).write_bytes(item.read_bytes())
    conn.close()
    assert (crashed / (db.name + "-wal")).stat().st_size > 0
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    size = (crashed / db.name).stat().st_size
    args = ["judge", crashed, "--config", EKF, "--navsat", NAVSAT, "--output", tmp_path / "o",
            "--no-progress"]
    result = run(args, timeout=120, memory_mb=None, file_bytes=size // 2, TMPDIR=scratch)
    one_line_error(result, "judge", str(crashed), "TMPDIR")
    assert tree(scratch) == [] and not (tmp_path / "o").exists()
