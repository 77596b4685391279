"""``--ray`` into a new OUT and the same OUT resumed, on a cluster started the way a user starts a first
one (issue 30): docs/pipeline.md's one-machine block, run for real.

The block's ``ray start --head`` starts a ``LoopbackCluster`` (tests/ray_loopback.py: one node with two
CPUs, no token, a free port instead of 6390, its own temporary folder and HOME); the documented ``ray
stop`` becomes stopping this cluster's own processes by process id (``ray stop`` stops every Ray on the
machine, other test runs' too).  Its demo lines run as written, in order, in one folder; before the
second ``--keep-runs`` one real bag's runs are removed (what an interrupted run leaves: they are judged
again on the cluster, the others kept), and a check file a killed command would have left is put in
OUT.  Every demo on the cluster must exit 0 with the local demo's numbers; then ``replay --ray`` into a
new OUT and resumed.  (``score`` has no ``--ray``; ``tune --ray`` checks the nodes without a folder and
is run on a cluster in tests/test_ray_cluster.py.)

Wall time on this 2-core machine, measured 2026-11-28 at load average 7.7 (the machine shared): starting
the cluster 9 s, the five quick demos 83 s (four on the cluster, one local), the replays 27 s, stopping
6 s: 128 s in all, hence ``slow``.
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ray_loopback import LoopbackCluster
from test_ray_cluster import same_runs

from sim2real_eval.outputs import MARKER, visible_entries

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "pipeline.md"
DOC_PORT = "6390"
CLI = [sys.executable, "-c", "import sys; from sim2real_eval.cli import main; sys.exit(main())"]
# What LoopbackCluster.start adds itself (with cpus=2): taken off the documented line, checked there.
START_OPTIONS = (("--port", DOC_PORT), ("--num-cpus", "2"), ("--include-dashboard", "false"),
                 ("--disable-usage-stats",))
DEMO_FILES = {MARKER, "demo.json", "figures", "imu_study", "report.html", "runs.csv", "statistics.json",
              "tables.md", "vepd.json"}


def one_machine_block() -> list:
    """The command lines of docs/pipeline.md's one-machine block: the first block after its "A first try
    on one machine" paragraph (comments dropped)."""
    section = DOC.read_text(encoding="utf-8").split("## Several machines", 1)[1]
    block = section.split("A first try on one machine", 1)[1].split("```\n", 2)[1]
    lines = [line.split(" #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def start_argv(line: str) -> list:
    argv = shlex.split(line)
    for option in START_OPTIONS:
        index = argv.index(option[0])
        assert argv[index:index + len(option)] == list(option), line
        del argv[index:index + len(option)]
    return argv


@pytest.fixture(scope="module")
def head():
    pytest.importorskip("ray")
    lines = one_machine_block()
    assert [shlex.split(line)[:2] for line in lines] == [["ray", "start"]] + [["sim2real-eval", "demo"]] * 5 \
        + [["ray", "stop"]], f"docs/pipeline.md's one-machine block changed: {lines}"
    nodes = LoopbackCluster()
    try:
        nodes.start(start_argv(lines[0]), cpus=2)
        yield nodes, lines[1:-1]
    finally:
        nodes.stop()
    assert not nodes.processes(), "processes of the test cluster are left"


def cli(args: list, env: dict, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + [str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def numbers(out: Path, name: str) -> dict:
    """A vepd.json, OUT's path replaced and the report's input line (OUT/runs with --keep-runs, else
    "judged in memory") dropped."""
    document = json.loads((out / name).read_text().replace(str(out), "OUT"))
    document["options"]["provenance"]["input"].pop("source")
    return document


def check_files(out: Path) -> None:
    """OUT holds the demo's files (and OUT/runs), no node-check file, nothing foreign."""
    assert not [p for p in out.rglob(".ray-node-check*") if "stale" not in p.name], out
    assert set(visible_entries(out)) <= DEMO_FILES | {"runs"}, visible_entries(out)


@pytest.mark.ray
@pytest.mark.slow
def test_demo_on_a_new_and_a_resumed_out_gives_the_local_numbers(head, tmp_path):
    from sim2real_eval.pipeline.ray_cluster import NODE_CHECK_PREFIX

    nodes, demos = head
    outs, reports = [], []
    for number, line in enumerate(demos):
        argv = [nodes.address if word == f"127.0.0.1:{DOC_PORT}" else word for word in shlex.split(line)]
        out = tmp_path / argv[argv.index("--out") + 1]
        if number == 2:  # the second --keep-runs: one bag's runs gone, a killed command's check file left
            for run in (out / "runs").glob("*/*/line/0"):
                shutil.rmtree(run)
            (out / f"{NODE_CHECK_PREFIX}stale").touch()
        done = cli(argv[1:] + ["--no-progress"], nodes.env, tmp_path)
        assert done.returncode == 0, (line, done.stderr[-3000:])
        assert "Ray" not in done.stderr and "INFO" not in done.stderr, done.stderr  # Ray stays quiet
        check_files(out)
        runs = json.loads((out / "demo.json").read_text())["runs"]
        kept = (out / "runs").is_dir()
        # what each line did: judged all 9 real bags' groups (no run bags), wrote them, judged line/0's
        # group again and kept the others, judged in memory leaving the run bags; the local one
        expected = [(9, False, False), (9, True, True), (1, True, True), (9, False, True), (9, False, False)]
        assert (runs["groups_with_new_runs"], runs["kept"], kept) == expected[number], (line, runs)
        outs.append(out)
        reports.append({name: numbers(out, name) for name in ("vepd.json", "imu_study/vepd.json")}
                       | {"runs.csv": (out / "runs.csv").read_text()})
    assert "--ray" not in demos[4] and len(set(outs)) == 2
    for number, report in enumerate(reports[:4]):  # each demo on the cluster has the local numbers
        assert report == reports[4], demos[number]
    on_ray, local = outs[0], outs[4]
    for name in ("vepd.json", "imu_study/vepd.json"):  # the last one, scored in memory: all but OUT's path
        assert (on_ray / name).read_text().replace(str(on_ray), "OUT") == \
            (local / name).read_text().replace(str(local), "OUT"), name
    # the left check file did not stop the resumed demos, and is left alone (another command may own it)
    assert (on_ray / f"{NODE_CHECK_PREFIX}stale").is_file()


@pytest.mark.ray
@pytest.mark.slow
def test_replay_on_a_new_and_a_resumed_out_gives_the_local_runs(head, tmp_path):
    nodes, _demos = head
    common = ["replay", REPO / "bags" / "reference" / "line", "--replace", "imu=chrono_paper_demo",
              "--no-progress"]
    local = cli(common + ["--out", tmp_path / "local", "--workers", "1"], nodes.env, tmp_path)
    assert local.returncode == 0, local.stderr[-3000:]
    for attempt in ("new", "resumed"):
        done = cli(common + ["--out", tmp_path / "cluster", "--ray", nodes.address], nodes.env, tmp_path)
        assert done.returncode == 0, (attempt, done.stderr[-3000:])
        assert not list((tmp_path / "cluster").rglob(".ray-node-check*")), attempt
    same_runs(tmp_path / "local", tmp_path / "cluster", (tmp_path / "local", tmp_path / "cluster"))


def test_a_left_check_file_is_a_temporary_to_the_output_policy(tmp_path):
    """The nodes' check file that a killed command leaves (SIGKILL: no clean-up) is a temporary: a folder
    holding only it is an empty output, so it never makes OUT look foreign (no Ray needed)."""
    from sim2real_eval.outputs import NEW, output_folder
    from sim2real_eval.pipeline.ray_cluster import NODE_CHECK_PREFIX

    out = tmp_path / "out"
    out.mkdir()
    (out / f"{NODE_CHECK_PREFIX}x1y2z3").touch()
    assert visible_entries(out) == []
    assert output_folder(out, "--out", overwrite=False, command="demo") == NEW
