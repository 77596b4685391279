"""``--ray`` against a Ray cluster started the way users start one (issue 23).

The ``ray``-marked tests run docs/pipeline.md's "Several machines" block for real, on this machine:
``ray get-auth-token --generate``, ``ray start --head`` and a worker node's ``ray start --address``
(a ``LoopbackCluster``: loopback address, free port, its own temporary folder and HOME), then the
documented demo through ``--ray`` (reduced as test_docs_examples reduces the demo), a study and a
tune search; each result is compared with the local runner's bit for bit.  The cluster is stopped by
process id, also when a test fails.  The other tests need Ray installed but no cluster: bad
addresses give one line within 30 s for every command, and SIGTERM while connecting exits 143.
"""
from __future__ import annotations

import csv
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from ray_loopback import RAY_ENV, LoopbackCluster
from test_demo_quick import small_demo_config
from test_pipeline_runs import messages

from sim2real_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "pipeline.md"
DOC_HEAD = "10.0.0.1:6390"   # the documented head address, replaced by the loopback cluster's
TINY = REPO / "config" / "studies" / "tiny.yaml"
CONNECT_BUDGET_S = 30.0      # the documented bound for any connection failure
CLI = [sys.executable, "-c", "import sys; from sim2real_eval.cli import main; sys.exit(main())"]


def documented_block() -> list:
    """The command lines of docs/pipeline.md's "Several machines" block (comments dropped)."""
    section = DOC.read_text(encoding="utf-8").split("## Several machines", 1)[1]
    block = section.split("```\n", 2)[1]
    lines = [line.split(" #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def split_env(line: str) -> tuple:
    """(leading VAR=value assignments, argv) of a shell line."""
    words = shlex.split(line)
    env = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return env, words


def cli(args: list, env: dict, timeout: float = 900) -> tuple:
    """(CompletedProcess, seconds) of ``sim2real-eval ARGS`` in a subprocess."""
    start = time.monotonic()
    done = subprocess.run(CLI + [str(a) for a in args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done, time.monotonic() - start


def same_runs(left: Path, right: Path, outs: tuple = ()) -> None:
    """The same run directories, each with the same messages (topic, receive time, CDR bytes),
    metadata.yaml and run.yaml (but for the paths ``outs`` = (left's OUT, right's OUT) in them)."""
    runs = sorted(p.parent.relative_to(left) for p in left.rglob("run.yaml"))
    assert runs and runs == sorted(p.parent.relative_to(right) for p in right.rglob("run.yaml"))
    for run in runs:
        assert messages(left / run) == messages(right / run), run
        for name in ("run.yaml", "metadata.yaml"):
            texts = [(side / run / name).read_text() for side in (left, right)]
            for index, out in enumerate(outs):
                texts[index] = texts[index].replace(str(out), "OUT")
            assert texts[0] == texts[1], (run, name)


def real_runs(tmp_path: Path) -> Path:
    """DIR with two "real" runs of line (DIR/real/real/line/{0,1}, as tune reads them): the tiny study's
    ch_gauss runs, relabelled."""
    assert main(["simulate", str(TINY), "--out", str(tmp_path / "tiny"), "--workers", "1",
                 "--no-progress"]) == 0
    real = tmp_path / "real"
    for k in (0, 1):
        source = tmp_path / "tiny" / "sim" / "ch_gauss" / "line" / str(k)
        target = real / "real" / "real" / "line" / str(k)
        target.mkdir(parents=True)
        for item in source.iterdir():
            (target / item.name).write_bytes(item.read_bytes())
        info = (source / "run.yaml").read_text()
        (target / "run.yaml").write_text(info.replace("side: sim", "side: real").replace(
            "variant: ch_gauss", "variant: real"))
    return real


# --------------------------------------------------------------------------- the real cluster
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The documented start-up lines run for real; the documented ``ray stop`` becomes stopping this
    cluster's own processes (``ray stop`` would stop every Ray on the machine)."""
    pytest.importorskip("ray")
    lines = documented_block()
    kinds = [split_env(line)[1][:2] for line in lines]
    assert kinds == [["ray", "get-auth-token"], ["ray", "start"], ["ray", "start"], ["sim2real-eval", "demo"],
                     ["ray", "stop"]], f"docs/pipeline.md 'Several machines' changed: {lines}"
    nodes = LoopbackCluster()
    try:
        for line in lines[:3]:
            env, argv = split_env(line.replace(DOC_HEAD, "HEAD"))
            if argv[:2] == ["ray", "get-auth-token"]:
                done = nodes.run(argv, env)
                assert done.returncode == 0, done.stderr
                assert (nodes.home / ".ray" / "auth_token").is_file()
            elif "--head" in argv:
                nodes.start([a for a in argv if a not in ("--port", "6390")])  # a free port instead
            else:
                nodes.start([nodes.address if a == "HEAD" else a for a in argv], env)
        yield nodes, lines
    finally:
        nodes.stop()
    assert not nodes.processes(), "processes of the test cluster are left"


@pytest.mark.ray
def test_documented_demo_on_the_cluster_gives_the_local_numbers(cluster, tmp_path):
    nodes, lines = cluster
    _env, argv = split_env(lines[3].replace(DOC_HEAD, nodes.address))
    assert argv[argv.index("--ray") + 1] == nodes.address
    config = small_demo_config(tmp_path)
    reduced = ["--config", config, "--k", "2", "--workers", "2", "--keep-runs", "--no-progress"]
    out = tmp_path / "cluster"
    argv[argv.index("--out") + 1] = str(out)
    done, seconds = cli(argv[1:] + reduced, nodes.env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Ray" not in done.stderr and "INFO" not in done.stderr, done.stderr  # Ray stays quiet
    local = tmp_path / "local"
    assert main(["demo", "--quick", "--out", str(local)] + [str(a) for a in reduced]) == 0
    for name in ("vepd.json", "runs.csv", "imu_study/vepd.json"):  # the same bytes but for OUT's path
        assert (out / name).read_text().replace(str(out), "OUT") == \
            (local / name).read_text().replace(str(local), "OUT"), name
    same_runs(local / "runs", out / "runs", (local, out))


@pytest.mark.ray
def test_study_on_the_cluster_matches_the_local_runner_bit_for_bit(cluster, tmp_path):
    nodes, _lines = cluster
    local = tmp_path / "local"
    assert main(["simulate", str(TINY), "--out", str(local), "--workers", "1", "--no-progress"]) == 0
    out = tmp_path / "cluster"
    done, _seconds = cli(["simulate", TINY, "--out", out, "--ray", nodes.address, "--no-progress"], nodes.env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""  # nothing from Ray
    assert "4 runs written" in done.stdout
    same_runs(local / "sim", out / "sim")
    # resumed on the cluster: nothing is run again
    again, _seconds = cli(["simulate", TINY, "--out", out, "--ray", nodes.address, "--no-progress"],
                          nodes.env)
    assert again.returncode == 0 and "0 runs written, 4 already complete" in again.stdout


@pytest.mark.ray
def test_tune_on_the_cluster_matches_in_process(cluster, tmp_path):
    from test_tune_search import PARAMS, STUDY

    nodes, _lines = cluster
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    real = real_runs(tmp_path)
    common = ["tune", "--study", study, "--real", real, "--params", PARAMS, "--budget", "1", "--no-progress"]
    assert main([str(a) for a in common] + ["--out", str(tmp_path / "inline")]) == 0
    done, _seconds = cli(common + ["--out", tmp_path / "ray", "--ray", nodes.address], nodes.env)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = yaml.safe_load((tmp_path / "ray" / "best.yaml").read_text())["tune"]
    assert summary["executor"] == f"ray:{nodes.address}" and summary["parallel_trials"] == 2  # 2 nodes' CPUs
    inline, on_ray = (list(csv.DictReader((tmp_path / side / "trials.csv").open()))
                      for side in ("inline", "ray"))
    # The baseline and trial 0 (the seeded sampler's first proposal): the same values and scores (the
    # trials' runs are the same bytes; a score may differ in the last bit, as numpy's SIMD reductions
    # depend on array alignment, which differs between processes).
    assert [row["trial"] for row in on_ray] == [row["trial"] for row in inline] == ["baseline", "0"]
    for ours, theirs in zip(on_ray, inline):
        assert ours["gps.position_noise.sigma"] == theirs["gps.position_noise.sigma"]
        assert ours["state"] == theirs["state"] == "complete"
        for column in ("vepd", "w1", "w2"):
            assert float(ours[column]) == pytest.approx(float(theirs[column]), rel=1e-12, abs=0)


@pytest.mark.ray
def test_a_driver_without_the_clusters_token_gets_one_line(cluster, tmp_path):
    nodes, _lines = cluster
    empty_home = tmp_path / "home"
    empty_home.mkdir()
    cases = [
        ({"HOME": str(empty_home)}, "requires token authentication and this machine has no Ray token"),
        ({"RAY_AUTH_TOKEN": "not-the-token"}, "refused this machine's Ray token (from RAY_AUTH_TOKEN)"),
        ({"RAY_AUTH_MODE": "disabled"}, "requires token authentication, but RAY_AUTH_MODE=disabled here"),
    ]
    for extra, expected in cases:
        done, seconds = cli(["simulate", TINY, "--out", tmp_path / "never", "--ray", nodes.address],
                            {**nodes.env, **extra})
        assert done.returncode == 2, (extra, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and expected in done.stderr, (extra, done.stderr)
        assert "ray get-auth-token" in done.stderr and seconds < CONNECT_BUDGET_S, (extra, seconds)
        assert not (tmp_path / "never" / "sim").exists()


@pytest.mark.ray
def test_a_node_with_other_sources_is_named(cluster, tmp_path):
    """A node whose Ray runs another copy of sim2real_eval (one comment added) is refused before any
    run, naming the node and both copies.  (Last of the cluster tests: the cluster keeps the node.)"""
    import shutil

    nodes, _lines = cluster
    other = tmp_path / "other_src"
    shutil.copytree(REPO / "src" / "sim2real_eval", other / "sim2real_eval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with (other / "sim2real_eval" / "__init__.py").open("a") as init:
        init.write("# another copy\n")
    nodes.start(["ray", "start", "--address", nodes.address],
                {"RAY_AUTH_MODE": "token", "PYTHONPATH": str(other)})
    done, _seconds = cli(["simulate", TINY, "--out", tmp_path / "out", "--ray", nodes.address], nodes.env)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "runs another sim2real_eval" in done.stderr and str(other / "sim2real_eval") in done.stderr
    assert not list((tmp_path / "out").rglob("run.yaml"))


# -------------------------------------------------------------------------- no cluster needed
def no_ray_env(tmp_path: Path) -> dict:
    """This checkout's CLI with no Ray token and no Ray settings (a fresh HOME)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in RAY_ENV}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return env


@pytest.fixture(scope="module")
def refused_port():
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def command_lines(tmp_path: Path, address: str) -> dict:
    """Every command with ``--ray``, on inputs that need no work before the runs start."""
    real = REPO / "bags" / "reference" / "line"
    return {
        "simulate": ["simulate", TINY, "--out", tmp_path / "s", "--ray", address],
        "replay": ["replay", real, "--replace", "imu=chrono_paper_demo", "--out", tmp_path / "r",
                   "--ray", address],
        "demo": ["demo", "--quick", "--out", tmp_path / "d", "--ray", address],
    }


def no_ray_settings(monkeypatch, tmp_path: Path) -> None:
    """In this process: no Ray token and no Ray settings (a fresh HOME), and no Ray left initialised
    by another test (``--ray`` would use it as it is)."""
    import ray

    ray.shutdown()
    for name in RAY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(no_ray_env(tmp_path)["HOME"]))


def run_main(args: list, capsys) -> tuple:
    """(exit code, stderr, seconds) of ``main(args)`` in this process."""
    start = time.monotonic()
    code = main([str(a) for a in args])
    # A `note:` line (e.g. the ART static TFs a replay applies) is information, not part of the error.
    err = "".join(line for line in capsys.readouterr().err.splitlines(True) if ": note: " not in line)
    return code, err, time.monotonic() - start


def test_every_command_refuses_a_bad_address_in_one_line(tmp_path, refused_port, monkeypatch, capsys):
    pytest.importorskip("ray")
    no_ray_settings(monkeypatch, tmp_path)
    address = f"127.0.0.1:{refused_port}"
    for name, args in command_lines(tmp_path, address).items():
        code, err, seconds = run_main(args + ["--no-progress"], capsys)
        assert code == 2 and len(err.splitlines()) == 1, (name, err)
        assert f"--ray {address}: nothing answers at" in err and "ray start --head" in err, (name, err)
        assert seconds < CONNECT_BUDGET_S, (name, seconds)
    for bad in ("nonsense", "ray://head:10001", "head:99999", "head:"):
        code, err, _seconds = run_main(["simulate", TINY, "--out", tmp_path / "s", "--ray", bad], capsys)
        assert code == 2 and len(err.splitlines()) == 1 and f"--ray {bad}: " in err, err


def test_tune_refuses_a_bad_address_in_one_line(tmp_path, refused_port, monkeypatch, capsys):
    """tune reaches the same helper after reading its real runs."""
    pytest.importorskip("ray")
    from test_tune_search import PARAMS, STUDY

    no_ray_settings(monkeypatch, tmp_path)
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    real = real_runs(tmp_path)
    capsys.readouterr()
    address = f"localhost:{refused_port}"
    code, err, _seconds = run_main(["tune", "--study", study, "--real", real, "--params", PARAMS,
                                    "--budget", "1", "--out", tmp_path / "t", "--ray", address,
                                    "--no-progress"], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"--ray {address}: nothing answers at" in err, err


def silent_server() -> tuple:
    """(server socket, accepted connections): a TCP port that accepts connections and never answers
    (not a Ray cluster: the slow failure)."""
    server = socket.socket()
    server.bind(("", 0))
    server.listen(64)
    accepted: list = []

    def accept():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


@pytest.mark.slow
def test_a_port_that_never_answers_is_one_line_within_30_s(tmp_path):
    pytest.importorskip("ray")
    server, _accepted = silent_server()
    try:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        done, seconds = cli(["simulate", TINY, "--out", tmp_path / "s", "--ray", address],
                            no_ray_env(tmp_path), timeout=120)
    finally:
        server.close()
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "does not answer as a Ray cluster" in done.stderr, done.stderr
    assert seconds < CONNECT_BUDGET_S, seconds


def test_sigterm_while_connecting_exits_143_with_one_line(tmp_path):
    pytest.importorskip("ray")
    server, accepted = silent_server()
    try:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        argv = CLI + ["simulate", str(TINY), "--out", str(tmp_path / "s"), "--ray", address]
        process = subprocess.Popen(argv, env=no_ray_env(tmp_path), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not accepted and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert accepted, "the command never reached the address"
        time.sleep(0.5)  # the probe is waiting for an answer that never comes
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
        seconds = time.monotonic() - start
    finally:
        server.close()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines() == ["sim2real-eval simulate: terminated (SIGTERM); nothing half-written is left"]
    assert seconds < 5, seconds
