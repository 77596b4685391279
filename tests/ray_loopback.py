"""A Ray cluster on this machine, started the way a user starts one (``ray start --head``, then
``ray start --address`` for a worker node), for tests/test_ray_cluster.py and
benchmarks/bench_ray_cluster.py.

Isolated so that it cannot meet any other Ray on the machine: its own temporary folder (Ray's
``--temp-dir``: sessions, sockets, logs), its own HOME (so its own ``~/.ray/auth_token``), free ports
for the head, a small object store.  ``stop()`` ends exactly the processes it started: every process
of the sessions its ``ray start`` commands led (Ray's daemons stay in the ``ray start`` process's
group) and their descendants (the workers the raylets forked), by process id — never ``ray stop``,
which would stop every Ray on the machine.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RAY_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Ray's minimum is 75 MB; its default is 30 % of the RAM per node


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def ray_cli() -> str:
    """The ``ray`` command of this interpreter's Ray."""
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.is_file() else (shutil.which("ray") or "ray")


class LoopbackCluster:
    def __init__(self, base_env: dict | None = None):
        # Short: Ray's unix sockets live below --temp-dir and a socket path holds at most 107 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="s2r-ray-", dir="/tmp"))
        self.home = self.root / "home"
        self.home.mkdir()
        env = {k: v for k, v in (base_env or os.environ).items() if k not in RAY_ENV}
        env["HOME"] = str(self.home)
        # Ray's workers run the sim2real_eval of the environment `ray start` ran in: this checkout.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
        real_mpl = Path(os.environ.get("HOME", "/")) / ".config" / "matplotlib"
        if "MPLCONFIGDIR" not in env and real_mpl.is_dir():
            env["MPLCONFIGDIR"] = str(real_mpl)  # the new HOME would rebuild matplotlib's font cache
        self.env = env
        self.groups: list = []     # process groups of the `ray start` commands (their daemons' groups)
        self.port = None
        self.nodes = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def run(self, argv: list, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        """A command in the cluster's environment (``ray`` resolves to this interpreter's)."""
        argv = [ray_cli()] + argv[1:] if argv[0] == "ray" else argv
        return subprocess.run(argv, env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout, cwd=self.root)

    def start(self, argv: list, env: dict | None = None, cpus: int = 1) -> subprocess.CompletedProcess:
        """``ray start …`` (head or worker) with the isolation options added, in a new session whose
        process group the daemons keep; raises with Ray's output when it fails."""
        assert argv[:2] == ["ray", "start"], argv
        head = "--head" in argv
        if head and "--port" not in argv:
            argv = argv + ["--port", str(free_port())]
        if head:
            self.port = int(argv[argv.index("--port") + 1])
        extra = ["--temp-dir", str(self.root / f"t{self.nodes}"), "--num-cpus", str(cpus),
                 "--object-store-memory", str(OBJECT_STORE_BYTES), "--disable-usage-stats"]
        if head:
            extra += ["--include-dashboard", "false"]
        process = subprocess.Popen([ray_cli()] + argv[1:] + extra, env={**self.env, **(env or {})},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   cwd=self.root, start_new_session=True)
        self.groups.append(process.pid)
        self.nodes += 1
        try:
            output, _ = process.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed (exit {process.returncode}):\n{output[-3000:]}")
        return subprocess.CompletedProcess(argv, process.returncode, output, "")

    # ------------------------------------------------------------------------------- stopping
    def processes(self) -> set:
        """Live pids of the cluster: members of its process groups and all their descendants."""
        table = _process_table()
        mine = {pid for pid, (_ppid, pgid, state) in table.items() if pgid in self.groups and state != "Z"}
        grown = True
        while grown:
            children = {pid for pid, (ppid, _pgid, state) in table.items()
                        if ppid in mine and pid not in mine and state != "Z"}
            grown = bool(children)
            mine |= children
        return mine

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM every process of the cluster, SIGKILL what is left after ``grace_s``; remove its folder."""
        try:
            targets = self.processes()
            _signal(targets, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and _alive(targets):
                time.sleep(0.2)
            # SIGKILL is not instantaneous, and a raylet may fork a worker while being stopped: kill
            # until nothing of the cluster is left (or give up after 10 s; the caller checks).
            deadline = time.monotonic() + 10.0
            left = _alive(targets) | self.processes()
            while left and time.monotonic() < deadline:
                _signal(left, signal.SIGKILL)
                time.sleep(0.2)
                left = _alive(left) | self.processes()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _process_table() -> dict:
    """{pid: (ppid, pgid, state)} from /proc (Linux)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()  # after "pid (comm)": comm may hold spaces
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


def _alive(pids: set) -> set:
    table = _process_table()
    return {pid for pid in pids if pid in table and table[pid][2] != "Z"}


def _signal(pids: set, signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
