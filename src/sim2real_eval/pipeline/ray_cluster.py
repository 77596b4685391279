"""Joining a Ray cluster: ``--ray ADDRESS|auto|local`` of simulate, replay, demo and tune.

``connect_ray(address, workers)`` is the one way the package starts or joins Ray:

- ``local``: a Ray started in this process with ``workers`` CPUs (``ray.init(num_cpus=…)``).
- ``HOST:PORT`` or ``auto``: the cluster that ``ray start --head`` started.  Ray's own connect retries
  for minutes and logs a line a second when something is wrong, so before Ray is asked to join, a
  probe in a child process checks, each step with a deadline (``CONNECT_TIMEOUT_S`` in all): the address
  (``auto``: ``RAY_ADDRESS``, else the cluster last started on this machine; Ray replaces a loopback
  host by this host's address, and the errors say so), that something listens there, that the cluster
  accepts this driver's token, and that this machine runs a node of the cluster (a Ray driver needs a
  local node: run the command on the head, or on a machine joined with ``ray start --address``).
  Each failure is one line saying what to do.
- Token authentication is decided as ``ray start --head`` decides it: ``RAY_AUTH_MODE`` when it is
  set, else token mode when a token is found (``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH``,
  else ``~/.ray/auth_token``).  (``ray.init`` with an explicit address does not look for a token, and
  Ray 2.60 clusters that found one when they started refuse drivers without it.)
- Ray's own logging stays quiet (errors only, workers' output not forwarded) unless the
  ``sim2real_eval`` logger is at DEBUG (the CLI's ``--debug``).
- ``ray.init`` replaces the SIGTERM handler by one that exits with status 15 and no message; the
  caller's handler is put back, and a SIGTERM during the connection ends the command like any other
  (the CLI: exit 143 and one line).

``check_nodes(ray, folder)`` then asks every node with CPUs, by a small task pinned to it, whether it runs
the same sim2real_eval (version and a digest of its sources: a different copy would give different
results) and sees ``folder``, an existing folder of the command's output (runs are written, and inputs
the command made there are read, by the node that runs them, so OUT must be a shared folder at the
same path on every node).  It sees the folder when it finds there the empty file the driver created
for the check (``NODE_CHECK_PREFIX``…, removed when the check ends, whatever happens): a ``.tmp-``
name, which the output policy takes for a temporary, so one left by a killed command never makes OUT
look foreign to the next run.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from .. import __version__, workers
from ..errors import UserError
from ..workers import Terminated

CONNECT_TIMEOUT_S = 25.0   # the probe, all steps; ray.init then joins a cluster known to accept us
STEP_TIMEOUT_S = 4.0       # each network step of the probe (the GCS client tries up to 3 times)
CHECK_TIMEOUT_S = 120.0    # the per-node check: a fresh node starts a Python worker first
NODE_CHECK_PREFIX = ".ray-node-check.tmp-"  # check_nodes' file in the shared folder (a temporary's name)
LOGGER = "sim2real_eval"
DEFAULT_TOKEN_FILE = "~/.ray/auth_token"

# Run in a child process: Ray's C++ GCS client blocks in native code (a SIGTERM would wait for it) and
# logs to stderr, which the child's captured stderr keeps out of the user's terminal.
PROBE = r"""
import json, socket, sys
address, step = sys.argv[1], float(sys.argv[2])
def say(**fields):
    print(json.dumps(fields))
    sys.exit(0)
from ray._private import services
try:
    target = services.canonicalize_bootstrap_address(address)
except Exception as exc:
    say(error="address", detail=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
if target is None:
    say(error="address", detail="no running Ray cluster found")
host, port = services.parse_address(target)
try:
    socket.create_connection((host, int(port)), timeout=step).close()
except OSError as exc:
    say(error="unreachable", target=target, detail=exc.strerror or str(exc) or type(exc).__name__)
try:
    from ray._raylet import InnerGcsClient
    from ray.exceptions import AuthenticationError
except ImportError:
    say(target=target, nodes=None)
try:
    client = InnerGcsClient.standalone(target, None, int(step * 1000))
    nodes = client.get_all_node_info(timeout=step)
except AuthenticationError:
    say(error="auth", target=target)
except Exception as exc:
    say(error="gcs", target=target, detail=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
local = set(services.find_node_ids())
alive = [{"ip": info.node_manager_address, "head": bool(info.is_head_node), "local": key.hex() in local}
         for key, info in nodes.items() if info.state == 0]
say(target=target, nodes=alive)
"""


def verbose() -> bool:
    """Ray's own logs are shown when the ``sim2real_eval`` logger is at DEBUG (``--debug``)."""
    return logging.getLogger(LOGGER).isEnabledFor(logging.DEBUG)


def connect_ray(address: str, workers: int):
    """(ray module, started_here): join the cluster at ``address`` ("auto", ``HOST:PORT``, or "local" to
    start one with ``workers`` CPUs here) unless Ray is already initialised in this process."""
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs the 'ray' package (pip install 'sim2real_eval[all]')") from None
    if ray.is_initialized():
        return ray, False
    debug = verbose()
    options = dict(log_to_driver=debug, logging_level=logging.INFO if debug else logging.ERROR)
    if address == "local":
        _init(ray, address, num_cpus=workers, include_dashboard=False, **options)
        return ray, True
    _check_syntax(address)
    token = _decide_token_auth(address)
    probe = _probe(address, token)
    target = probe["target"]
    local = [node for node in probe.get("nodes") or () if node["local"]]
    if probe.get("nodes") is not None and not local:
        ips = ", ".join(sorted({node["ip"] for node in probe["nodes"]})) or "none alive"
        raise UserError(f"--ray {address}: this machine runs no node of the Ray cluster at {target} "
                        f"(its nodes: {ips}); a Ray driver needs one: run the command on the head node, or "
                        f"first join this machine with `ray start --address {target}`")
    if local:  # the driver attaches to this node (Ray's own guess of this host's address may differ)
        options["_node_ip_address"] = sorted(local, key=lambda node: not node["head"])[0]["ip"]
    _init(ray, address, address=target, **options)
    return ray, True


def _init(ray, given: str, **options) -> None:
    """``ray.init(**options)``, keeping the caller's SIGTERM handler (Ray installs one that exits 15)."""
    handler = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(**options)
    except SystemExit as exc:
        if exc.code == signal.SIGTERM and _is_cli_handler(handler):
            raise Terminated() from None
        raise
    except (ConnectionError, ValueError, RuntimeError, ray.exceptions.RayError) as exc:
        raise UserError(f"--ray {given}: cannot connect to a Ray cluster ({exc})") from None
    finally:
        if handler is not None and signal.getsignal(signal.SIGTERM) is not handler:
            signal.signal(signal.SIGTERM, handler)


def _is_cli_handler(handler) -> bool:
    return handler is getattr(workers, "_raise_terminated", None)


def _check_syntax(address: str) -> None:
    if address == "auto":
        return
    if "://" in address:
        raise UserError(f"--ray {address}: Ray Client addresses (ray://) are not supported; run the "
                        "command on a node of the cluster and give the address `ray start --head` printed "
                        "(HOST:PORT)")
    host, _, port = address.rpartition(":")
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--ray {address}: expected HOST:PORT (the address `ray start --head` printed), "
                        "'auto' (the cluster started on this machine) or 'local' (a Ray started here)")


# ------------------------------------------------------------------------------------ the token
def token_source() -> str | None:
    """Where Ray would read its token from, in Ray's order, or None when there is none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return f"RAY_AUTH_TOKEN_PATH={path}"
    default = Path(DEFAULT_TOKEN_FILE).expanduser()
    try:
        if default.is_file() and default.read_text().strip():
            return str(default)
    except OSError:
        pass
    return None


def _decide_token_auth(address: str) -> dict:
    """Token mode as ``ray start --head`` decides it (RAY_AUTH_MODE if set, else on when a token is
    found); turned on in this process's environment, where Ray (and the probe) read it."""
    mode = os.environ.get("RAY_AUTH_MODE")
    source = token_source()
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path and not os.environ.get("RAY_AUTH_TOKEN"):
        try:
            readable = bool(Path(path).expanduser().read_text().strip())
        except OSError:
            readable = False
        if not readable:
            raise UserError(f"--ray {address}: RAY_AUTH_TOKEN_PATH={path}: no token there (missing, "
                            "unreadable or empty); put the cluster's token in it (`ray get-auth-token` on "
                            "the head prints it)")
    if mode is None and source is not None:
        os.environ["RAY_AUTH_MODE"] = "token"  # what `ray start --head` does when it finds a token
        _reload_ray_config()
        mode = "token"
    elif mode is not None and mode.lower() == "token" and source is None:
        raise UserError(f"--ray {address}: RAY_AUTH_MODE=token but this machine has no Ray token: copy "
                        "the cluster's token (`ray get-auth-token` on the head prints it) into "
                        f"{DEFAULT_TOKEN_FILE}, or set RAY_AUTH_TOKEN_PATH to a file holding it")
    return {"mode": (mode or "disabled").lower(), "source": source}


def _reload_ray_config() -> None:
    """Ray caches its configuration (the auth mode among it) once its core is loaded: re-read it."""
    try:
        from ray._raylet import Config
    except ImportError:  # pragma: no cover - a Ray without token authentication
        return
    Config.initialize("")


# ------------------------------------------------------------------------------------ the probe
def _probe(address: str, token: dict) -> dict:
    """The probe's answer for a reachable cluster that accepts this driver; a UserError otherwise."""
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, address, str(STEP_TIMEOUT_S)],
                              capture_output=True, text=True, timeout=CONNECT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UserError(f"--ray {address}: no answer from a Ray cluster within {CONNECT_TIMEOUT_S:.0f} s; "
                        "check the address `ray start --head` printed and that its port is open") from None
    if verbose() and done.stderr:
        sys.stderr.write(done.stderr)
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise UserError(f"--ray {address}: cannot probe the Ray cluster ({detail})") from None
    answer["seconds"] = time.monotonic() - start
    error = answer.get("error")
    if error is None:
        return answer
    target = answer.get("target", address)
    where = _where(address, target)
    if error == "address":
        if address == "auto":
            raise UserError("--ray auto: no running Ray cluster found on this machine (RAY_ADDRESS is "
                            f"{'set' if os.environ.get('RAY_ADDRESS') else 'not set'}); start one with `ray "
                            "start --head --port PORT`, or give its address as --ray HOST:PORT")
        raise UserError(f"--ray {address}: not a Ray cluster address ({answer.get('detail')})")
    if error == "unreachable":
        raise UserError(f"--ray {address}: nothing answers at {where}: {answer.get('detail')}; start "
                        "the head with `ray start --head --port PORT` (it prints its address), or check the "
                        "address and that the port is open")
    if error == "auth":
        raise UserError(f"--ray {address}: the Ray cluster at {where} {_auth_advice(token)}")
    raise UserError(f"--ray {address}: {where} does not answer as a Ray cluster ({answer.get('detail')})")


def _where(address: str, target: str) -> str:
    """The address Ray connects to, saying so when Ray replaced a loopback host by this host's address."""
    host = address.rpartition(":")[0].strip("[]")
    if address != "auto" and target != address and host in ("localhost", "127.0.0.1", "::1"):
        return f"{target} (Ray replaces the loopback address {host} by this host's address)"
    return target if address != "auto" else f"{target} (found by 'auto')"


def _auth_advice(token: dict) -> str:
    head = "`ray get-auth-token` on the head prints the cluster's token"
    if token["mode"] == "token":
        return (f"refused this machine's Ray token (from {token['source']}): it is not the one the head was "
                f"started with; {head}: put it there")
    if os.environ.get("RAY_AUTH_MODE"):
        return (f"requires token authentication, but RAY_AUTH_MODE={os.environ['RAY_AUTH_MODE']} here: "
                f"unset it (or set it to token) and make the cluster's token available ({head}; save it as "
                f"{DEFAULT_TOKEN_FILE} or point RAY_AUTH_TOKEN_PATH at it)")
    return (f"requires token authentication and this machine has no Ray token: {head}; save it as "
            f"{DEFAULT_TOKEN_FILE} here (or point RAY_AUTH_TOKEN_PATH at it, or set RAY_AUTH_TOKEN)")


def call_in(cwd: str, function, *args):
    """``function(*args)`` in the driver's working directory ``cwd`` when this node has it: a Ray worker
    starts in the folder its node's Ray was started from, and the runs' inputs may be relative paths."""
    if os.path.isdir(cwd):
        os.chdir(cwd)
    return function(*args)


# ---------------------------------------------------------------------------- the nodes' check
@lru_cache(maxsize=1)
def package_digest() -> str:
    """SHA-256 of this sim2real_eval's Python sources (relative paths and bytes, in path order)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def node_report(marker: str | None) -> dict:
    """What a node says about itself (runs there, as a Ray task): its sim2real_eval and whether it sees
    the file the driver created for the check in the shared folder (and may write there)."""
    seen = None
    if marker is not None:
        path = Path(marker)
        seen = path.is_file() and os.access(path.parent, os.W_OK)
    import ray

    return {"ip": ray.util.get_node_ip_address(), "version": __version__, "digest": package_digest(),
            "package": str(Path(__file__).resolve().parents[1]), "sees_out": seen}


def check_nodes(ray, folder=None) -> list:
    """Ask every alive node with CPUs (one small task pinned to each) for ``node_report``; a UserError
    names the first node that runs another sim2real_eval or does not see ``folder`` (an existing folder
    of the output that every node must share; None: not checked).  Returns the reports."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
    if not nodes:
        raise UserError("the Ray cluster has no node with CPUs to run on")
    remote = ray.remote(num_cpus=0, max_retries=0)(node_report)
    mine = {"version": __version__, "digest": package_digest(),
            "package": str(Path(__file__).resolve().parents[1])}
    try:
        check_file = tempfile.NamedTemporaryFile(dir=folder, prefix=NODE_CHECK_PREFIX) if folder is not None \
            else contextlib.nullcontext()
    except OSError as exc:
        raise UserError(f"{folder}: cannot write here ({exc.strerror or exc})") from None
    with check_file as marker:
        name = getattr(marker, "name", None)
        refs = {remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(name): n for n in nodes}
        answers = {}
        for ref, node in refs.items():  # every answer is taken (Ray logs errors nobody fetched)
            try:
                answers[node["NodeID"]] = ray.get(ref, timeout=CHECK_TIMEOUT_S)
            except (ray.exceptions.GetTimeoutError, ray.exceptions.RayError) as exc:
                answers[node["NodeID"]] = exc
    reports = []
    for node in nodes:
        ip, report = node.get("NodeManagerAddress", "?"), answers[node["NodeID"]]
        if isinstance(report, ray.exceptions.GetTimeoutError):
            raise UserError(f"Ray node {ip} did not answer within {CHECK_TIMEOUT_S:.0f} s")
        if isinstance(report, Exception):
            first = str(report).strip().splitlines()[-1] if str(report).strip() else type(report).__name__
            raise UserError(f"Ray node {ip} cannot run sim2real_eval ({first}); install the same "
                            f"sim2real_eval as here ({mine['package']}) on every node")
        if (report["version"], report["digest"]) != (mine["version"], mine["digest"]):
            raise UserError(
                f"Ray node {ip} runs another sim2real_eval ({report['version']} at {report['package']}, "
                f"sources {report['digest'][:12]}) than this driver ({mine['version']} at {mine['package']}, "
                f"sources {mine['digest'][:12]}): results would differ; install the same version on "
                "every node (and start its Ray with that Python environment)")
        if folder is not None and not report["sees_out"]:
            raise UserError(f"Ray node {ip} does not see {Path(folder).resolve()} (or cannot write there): "
                            "runs are written, and their inputs below --out read, by the node that runs "
                            "them, so --out must be a shared folder at the same path on every node (e.g. an "
                            "NFS mount)")
        reports.append(report)
    return reports

