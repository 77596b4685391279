"""``--ray`` on a two-node cluster started as docs/pipeline.md ("Several machines") says, on this machine:
what each step costs, the demo on the cluster against the local runner, and the first-run compile
cost of a fresh node.  The numbers of that section come from this script.

The cluster is tests/ray_loopback.py's ``LoopbackCluster`` (loopback address, free port, its own
temporary folder and HOME, one CPU per node, stopped by process id), so the network is not measured.

Prints ``name: value`` lines:
  load_before / load_after       1-min load average (os.getloadavg) around the whole run
  token_s, head_start_s, join_s  `ray get-auth-token --generate`, `ray start --head`, a worker's
                                 `ray start --address`
  connect_s, connect_probe_s     connect_ray() from a fresh driver process (probe + ray.init), the probe alone
  node_check_s                   check_nodes(): one task per node (their Python workers start)
  refused_s, no_token_s, wrong_token_s   a whole `simulate --ray` command to its one-line error
  demo_local_s, demo_cluster_s   `demo --quick` (57 runs, full report): local (--workers 2), on the cluster
  demo_same_numbers              vepd.json (both studies) and runs.csv equal byte for byte but for OUT's path
  task_bytes, outcome_bytes      a demo task (a real bag: its real run + 6 simulated) and its outcome, pickled
  fresh_first_run_s, fresh_second_run_s   on a third node joined with an empty NUMBA_CACHE_DIR: a worker's
                                 first simulated run (imports + compiling the judge) and its second
  fresh_first_run_cpu_s          its CPU time (the worker process's)
  warm_first_run_s, …            the same on a node whose cache is warm (another worker process)

Usage: python benchmarks/bench_ray_cluster.py [--skip-demo]
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from ray_loopback import LoopbackCluster, free_port  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from sim2real_eval.cli import main; sys.exit(main())"]
TINY = REPO / "config" / "studies" / "tiny.yaml"

CONNECT = """
import json, sys, time
from sim2real_eval.pipeline import ray_cluster
start = time.monotonic()
ray, _ = ray_cluster.connect_ray(sys.argv[1], 1)
connected = time.monotonic()
ray_cluster.check_nodes(ray)
print(json.dumps({"connect_s": connected - start, "node_check_s": time.monotonic() - connected}))
"""

PROBE = """
import sys, time
from sim2real_eval.pipeline import ray_cluster
start = time.monotonic()
ray_cluster._probe(sys.argv[1], ray_cluster._decide_token_auth(sys.argv[1]))
print(time.monotonic() - start)
"""

# On a node given the custom resource "fresh" (or "warm"): two simulated runs in one worker, timed.
TWO_RUNS = """
import json, sys, time
from sim2real_eval.pipeline import ray_cluster
ray, _ = ray_cluster.connect_ray(sys.argv[1], 1)

def two_runs(study):
    import tempfile, time
    start = time.monotonic()
    from sim2real_eval.pipeline.study import load_study
    tasks = load_study(study).runs()
    times, cpu = [], []
    with tempfile.TemporaryDirectory() as out:
        for task in tasks[:2]:
            begin, begin_cpu = time.monotonic(), time.process_time()
            task.execute(out)
            times.append(time.monotonic() - begin)
            cpu.append(time.process_time() - begin_cpu)
    return {"first": times[0], "second": times[1], "first_cpu": cpu[0], "task_s": time.monotonic() - start}

remote = ray.remote(num_cpus=1, resources={sys.argv[2]: 1})(two_runs)
print(json.dumps(ray.get(remote.remote(sys.argv[3]))))
"""


def timed(argv: list, env: dict) -> tuple:
    start = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    return done, time.monotonic() - start


def start_cluster(nodes: LoopbackCluster) -> None:
    """The documented start: a token, the head, one worker node."""
    start = time.monotonic()
    assert nodes.run(["ray", "get-auth-token", "--generate"]).returncode == 0
    print(f"token_s: {time.monotonic() - start:.1f}")
    start = time.monotonic()
    nodes.start(["ray", "start", "--head"])
    print(f"head_start_s: {time.monotonic() - start:.1f}")
    start = time.monotonic()
    nodes.start(["ray", "start", "--address", nodes.address], {"RAY_AUTH_MODE": "token"})
    print(f"join_s: {time.monotonic() - start:.1f}")


def connecting(nodes: LoopbackCluster, tmp: Path) -> None:
    """Joining (probe, ray.init, the nodes' check) and the one-line failures, each a whole command."""
    done, _ = timed([sys.executable, "-c", PROBE, nodes.address], nodes.env)
    print(f"connect_probe_s: {float(done.stdout):.1f}")
    done, _ = timed([sys.executable, "-c", CONNECT, nodes.address], nodes.env)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"connect_s: {answer['connect_s']:.1f}\nnode_check_s: {answer['node_check_s']:.1f}")
    home = tmp / "empty_home"
    home.mkdir()
    for name, address, extra in (("refused", f"127.0.0.1:{free_port()}", {}),
                                 ("no_token", nodes.address, {"HOME": str(home)}),
                                 ("wrong_token", nodes.address, {"RAY_AUTH_TOKEN": "wrong"})):
        done, seconds = timed(CLI + ["simulate", str(TINY), "--out", str(tmp / name), "--ray", address],
                              {**nodes.env, **extra})
        assert done.returncode == 2, done.stderr
        print(f"{name}_s: {seconds:.1f}  # {done.stderr.strip()}")


def demo_local_and_on_the_cluster(nodes: LoopbackCluster, tmp: Path) -> None:
    outs = {}
    for name, extra in (("local", ["--workers", "2"]), ("cluster", ["--ray", nodes.address])):
        out = tmp / f"demo_{name}"
        argv = CLI + ["demo", "--quick", "--out", str(out), "--no-progress"] + extra
        done, seconds = timed(argv, nodes.env)
        assert done.returncode == 0, done.stderr[-2000:]
        print(f"demo_{name}_s: {seconds:.1f}")
        outs[name] = out
    same = all((outs["local"] / f).read_text().replace(str(outs["local"]), "OUT")
               == (outs["cluster"] / f).read_text().replace(str(outs["cluster"]), "OUT")
               for f in ("vepd.json", "imu_study/vepd.json", "runs.csv"))
    print(f"demo_same_numbers: {same}")


def what_crosses(tmp: Path) -> None:
    """A demo task (the first reference bag's) and its outcome, pickled as Ray ships them."""
    from sim2real_eval import reference
    from sim2real_eval.service import replay_bags
    from sim2real_eval.studies import config as studies_config
    from sim2real_eval.studies import plan

    config = studies_config.load_demo_config()
    bags = {s: [reference.run_path(reference.shipped_reference_dir(), s, 0)]
            for s in reference.load_setup(config.reference).scenarios}
    task = plan.plan_groups(config, bags, config.imu_scenario)[0]
    outcome = replay_bags([task], tmp / "one_bag", workers=1, progress=False).report.outcomes[0]
    print(f"task_bytes: {len(pickle.dumps(task))}\noutcome_bytes: {len(pickle.dumps(outcome))}")


def fresh_node(nodes: LoopbackCluster, tmp: Path) -> None:
    """A node joined with an empty numba cache, and one with the warm cache, each running two runs."""
    nodes.start(["ray", "start", "--address", nodes.address, "--resources", '{"fresh": 1}'],
                {"RAY_AUTH_MODE": "token", "NUMBA_CACHE_DIR": str(tmp / "empty_numba_cache")})
    nodes.start(["ray", "start", "--address", nodes.address, "--resources", '{"warm": 1}'],
                {"RAY_AUTH_MODE": "token"})
    for name in ("fresh", "warm"):
        done, _ = timed([sys.executable, "-c", TWO_RUNS, nodes.address, name, str(TINY)], nodes.env)
        assert done.returncode == 0, done.stderr[-2000:]
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{name}_first_run_s: {answer['first']:.1f}\n{name}_first_run_cpu_s: {answer['first_cpu']:.1f}"
              f"\n{name}_second_run_s: {answer['second']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-demo", action="store_true", help="leave out the two demo --quick runs")
    parser.add_argument("--only-nodes", action="store_true",
                        help="only start the cluster and measure the fresh and warm nodes")
    args = parser.parse_args()
    print(f"load_before: {os.getloadavg()[0]:.2f}")
    with LoopbackCluster() as nodes, tempfile.TemporaryDirectory() as tmp:
        start_cluster(nodes)
        if not args.only_nodes:
            connecting(nodes, Path(tmp))
            if not args.skip_demo:
                demo_local_and_on_the_cluster(nodes, Path(tmp))
            what_crosses(Path(tmp))
        fresh_node(nodes, Path(tmp))
    print(f"load_after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
