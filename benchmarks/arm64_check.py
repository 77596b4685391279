"""The robot side on arm64: its tests and every preset's streams against x86, under qemu-user.

    python3 benchmarks/arm64_check.py --root /var/tmp/arm64root [--write-docs]

Run it (as root, on a Debian x86_64 machine, Python >= 3.10) when the robot side changes (models/, geodesy.py,
scenarios.py, node/, … — the list of .ci/run section 4).  Three steps, each timed:

1. ``setup`` (once; ``ROOT`` is kept and reused, it must lie outside the repository): installs
   Debian's qemu-user-static, debootstrap and binfmt-support on the host, registers qemu-aarch64 with
   binfmt_misc (mounting /proc/sys/fs/binfmt_misc if needed), and makes a Debian bookworm arm64 root
   from the Debian mirror the host's apt uses (``debootstrap --foreign``, then its second stage inside
   the root under emulation) holding python3, python3-numpy (1.24.2), python3-yaml, python3-pytest,
   python3-hypothesis and python3-pyproj (test_geodesy's oracle).
2. ``tests``: copies the robot-side modules (.ci/run section 4), config/ and the robot-side test files
   into ``ROOT/opt/sim2real_eval`` and runs those tests there with ``chroot`` (arm64 binaries run
   through qemu-aarch64-static by binfmt_misc).  A test file is robot-side when everything it imports
   is: robot-side modules, the standard library, numpy, yaml, pytest, hypothesis, pyproj, and other
   robot-side test files (``robot_side_tests``).
3. ``streams``: ``benchmarks/preset_streams.py dump`` inside the root (arm64) and on the host (x86,
   this interpreter), then ``compare``: per message field, the largest |Δ| / max(1, |v|).

``--write-docs`` rewrites the region ``<!-- generated: arm64-check -->`` … ``<!-- end: arm64-check -->``
of docs/models.md with this run's results.  Exit status 1 when a test fails or an integer field
differs; the scaled differences are reported, not judged (docs/models.md states the bound).
"""
from __future__ import annotations

import argparse
import ast
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITE = "bookworm"
ROOT_PACKAGES = ("python3", "python3-numpy", "python3-yaml", "python3-pytest", "python3-hypothesis",
                 "python3-pyproj")
HOST_TOOLS = {"qemu-aarch64-static": "qemu-user-static", "debootstrap": "debootstrap",
              "update-binfmts": "binfmt-support"}
BINFMT = Path("/proc/sys/fs/binfmt_misc")
READY = ".sim2real_eval_arm64_ready"       # written when the root is complete
IN_ROOT = "opt/sim2real_eval"              # where the copy lives inside the root
TEST_THIRD_PARTY = {"numpy", "yaml", "pytest", "hypothesis", "pyproj"}
DOC = REPO / "docs" / "models.md"
REGION = "arm64-check"


def log(message: str) -> None:
    print(f"[arm64_check] {message}", flush=True)


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(part) for part in cmd))
    kwargs.setdefault("check", True)
    return subprocess.run([str(part) for part in cmd], **kwargs)


# ------------------------------------------------------------------------------------------- setup
def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian archive URI this host's apt uses for bookworm (deb822 .sources or one-line .list)."""
    files = [apt_dir / "sources.list"] + sorted((apt_dir / "sources.list.d").glob("*"))
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if SUITE in fields.get("Suites", "").split():
                for uri in fields.get("URIs", "").split():
                    if uri.rstrip("/").endswith("/debian"):
                        return uri.rstrip("/")
        for match in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", text, re.M):
            if match.group(2) == SUITE and match.group(1).rstrip("/").endswith("/debian"):
                return match.group(1).rstrip("/")
    return "http://deb.debian.org/debian"


def install_host_tools() -> None:
    missing = sorted({package for tool, package in HOST_TOOLS.items() if shutil.which(tool) is None})
    if missing:
        run(["apt-get", "update"])
        run(["apt-get", "install", "-y", *missing], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def register_binfmt(root: Path) -> None:
    """qemu-aarch64 in binfmt_misc with the F flag (the kernel opens the interpreter at registration,
    so it runs inside the chroot without a copy there)."""
    if not (BINFMT / "register").exists():
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT])
    entry = BINFMT / "qemu-aarch64"
    if not entry.exists() or not entry.read_text().startswith("enabled"):
        run(["update-binfmts", "--enable", "qemu-aarch64"])
    text = entry.read_text() if entry.exists() else ""
    if not text.startswith("enabled"):
        raise SystemExit(f"arm64_check: error: {entry} is not enabled after update-binfmts")
    if "F" not in re.search(r"^flags:\s*(\S*)", text, re.M).group(1):
        interpreter = re.search(r"^interpreter\s+(\S+)", text, re.M).group(1)
        target = root / interpreter.lstrip("/")  # an older qemu-user-static registers without F
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(shutil.which("qemu-aarch64-static"), target)



def setup(root: Path) -> None:
    """The root, made once: its READY file records how long that took."""
    install_host_tools()
    if (root / READY).exists():
        log(f"{root}: arm64 root ready (cached)")
        register_binfmt(root)  # binfmt_misc registrations do not survive a reboot
        return
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"arm64_check: error: {root} exists but is not a finished root "
                         f"(no {READY}): remove it or give another --root")
    mirror = debian_mirror()
    start, load = time.monotonic(), f"{os.getloadavg()[0]:.1f}"
    run(["debootstrap", "--arch=arm64", "--foreign", "--variant=minbase",
         "--include=" + ",".join(ROOT_PACKAGES), SUITE, root, mirror])
    register_binfmt(root)
    run(["chroot", root, "/debootstrap/debootstrap", "--second-stage"])
    (root / READY).write_text(f"{time.monotonic() - start:.0f} s on {datetime.date.today()}, "
                              f"load average {load}, {SUITE} arm64 from {mirror}\n")


def chroot_python(root: Path, *args: str, cwd: str = f"/{IN_ROOT}", **kwargs) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
           "PYTHONPATH": f"/{IN_ROOT}/src", "PYTHONDONTWRITEBYTECODE": "1"}
    return run(["chroot", root, "/usr/bin/env", "-C", cwd, "python3", *args], env=env, **kwargs)


# -------------------------------------------------------------------------------- what is copied
def robot_side_paths(repo: Path = REPO) -> list:
    """The robot-side source files: .ci/run's vermin list (section 4), directories expanded."""
    text = (repo / ".ci" / "run").read_text(encoding="utf-8")
    match = re.search(r"py38\(\) \{.*?for path in (.*?); do", text, re.S)
    if not match:
        raise SystemExit("arm64_check: error: .ci/run: the robot-side list (section 4) was not found")
    paths = []
    for item in match.group(1).replace("\\", " ").split():
        path = repo / item
        paths += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return paths


def module_of(path: Path, repo: Path = REPO) -> str:
    parts = list(path.relative_to(repo / "src").with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set:
    """Every module a file imports, anywhere in it (``from P import n`` counts as P and P.n)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def robot_side_tests(repo: Path = REPO) -> list:
    """The test files importing only robot-side code (see the module docstring), sorted."""
    robot = {module_of(path, repo) for path in robot_side_paths(repo)}
    package_files = {module_of(path, repo) for path in (repo / "src" / "sim2real_eval").rglob("*.py")}
    tests = {path.stem: path for path in (repo / "tests").glob("*.py")}
    tests.update({f"fixtures.{path.stem}": path for path in (repo / "tests" / "fixtures").glob("*.py")})
    verdict: dict = {}

    def ok(name: str) -> bool:
        if name not in verdict:
            verdict[name] = True  # a cycle counts as robot-side until shown otherwise
            for module in imported_modules(tests[name]):
                top, parent = module.split(".")[0], module.rpartition(".")[0]
                if module in tests:
                    verdict[name] = verdict[name] and ok(module)
                elif parent in tests or module == "fixtures" or top == "__future__" \
                        or top in sys.stdlib_module_names or top in TEST_THIRD_PARTY:
                    continue  # a name from a local helper; the standard library; numpy, yaml, …
                elif top != "sim2real_eval" or (module in package_files and module not in robot):
                    verdict[name] = False  # another package, or an offline module
        return verdict[name]

    def tests_robot_side(name: str) -> bool:  # not a check of the repository's files (architecture, …)
        return any(module in robot for module in imported_modules(tests[name]))

    return sorted(path for name, path in tests.items()
                  if name.startswith("test_") and tests_robot_side(name) and ok(name))


def copy_tree(root: Path, tests: list) -> Path:
    """The robot-side modules, config/, the chosen tests and their helpers, and preset_streams.py."""
    dest = root / IN_ROOT
    if dest.exists():
        shutil.rmtree(dest)
    for path in robot_side_paths():
        target = dest / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    shutil.copytree(REPO / "config", dest / "config")
    shutil.copytree(REPO / "tests" / "fixtures", dest / "tests" / "fixtures")
    shutil.copytree(REPO / "tests" / "data", dest / "tests" / "data")
    for path in [REPO / "tests" / "conftest.py", *tests]:
        shutil.copy2(path, dest / "tests" / path.name)
    for name in ("setup.cfg", "pyproject.toml"):  # pytest's configuration (markers)
        if (REPO / name).exists():
            shutil.copy2(REPO / name, dest / name)
    (dest / "benchmarks").mkdir()
    texts = [path.read_text(encoding="utf-8") for path in tests]
    for path in sorted((REPO / "benchmarks").glob("*.py")):  # preset_streams.py, and those tests load
        if path.name == "preset_streams.py" or any(path.name in text for text in texts):
            shutil.copy2(path, dest / "benchmarks" / path.name)
    return dest


# -------------------------------------------------------------------------------------- results
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", re.M)  # "=== 1 failed, 2 passed in 3.1s ==="
SKIPPED = re.compile(r"^SKIPPED \[\d+\] tests/(\w+)\.py:\d+: (.*)$", re.M)
COMPARE_LINE = re.compile(r"^(?P<field>\w+ \w+): (?P<count>\d+) of (?P<total>\d+) values differ, "
                          r"max \|d\| (?P<abs>\S+), max scaled (?P<scaled>\S+)$")


def parse_compare(text: str) -> tuple:
    """``preset_streams.py compare`` output → ([(field, differing, total, max |d|, max scaled)], unequal
    keys); a line of neither form is an error (the format changed)."""
    fields, unequal = [], []
    for line in text.splitlines():
        match = COMPARE_LINE.match(line)
        if match:
            fields.append((match["field"], int(match["count"]), int(match["total"]),
                           float(match["abs"]), float(match["scaled"])))
        elif line.startswith("NOT EQUAL"):
            unequal.append(line.split(": ", 1)[1])
        elif line.strip():
            raise ValueError(f"preset_streams.py compare: unexpected line {line!r}")
    return fields, unequal


def pytest_summary(text: str) -> tuple:
    """pytest's closing line ('245 passed, 2 skipped') and each skip's 'file: reason' (-rs), sorted."""
    matches = SUMMARY.findall(text)
    if not matches:
        raise ValueError("pytest printed no closing summary line")
    return matches[-1], sorted({f"{name}: {reason}" for name, reason in SKIPPED.findall(text)})


def render(result: dict) -> str:
    """The docs region: sub-bullets of docs/models.md's Reproducibility item 2 (5 spaces in)."""
    fields, unequal = result["fields"], result["unequal"]
    worst = max(fields, key=lambda row: row[4])
    within = sum(row[4] <= 1e-12 for row in fields)
    integers = ("stamps, statuses and every integer and string field equal" if not unequal else
                f"**{len(unequal)} integer/string arrays differ** ({', '.join(unequal[:5])})")
    lines = [
        f"- {result['date']}, commit {result['commit']}, Debian {SUITE} arm64 under qemu-user "
        f"(Python {result['arm_python']}, numpy {result['arm_numpy']}) against this x86 machine "
        f"(Python {result['x86_python']}, numpy {result['x86_numpy']});",
        f"- the {len(result['tests'])} robot-side test files ({', '.join(result['tests'])}): "
        f"**{result['pytest'][0]}** on arm64"
        + (f" (skipped: {'; '.join(result['pytest'][1])});" if result["pytest"][1] else ";"),
        f"- every GPS and IMU preset on circle and sine, seed 3: {integers}; {within} of {len(fields)} "
        f"float fields within 1e-12 scaled (|Δ| / max(1, |v|)), the largest {worst[4]:.2g} "
        f"({worst[0]}, |Δ| {worst[3]:.2g}); per field, the largest scaled difference: "
        + "; ".join(f"{name} {scaled:.2g}" for name, _, _, _, scaled in fields if scaled)
        + "; equal: " + ", ".join(name for name, _, _, _, scaled in fields if not scaled) + ";",
        f"- time on this 2-core machine (other work running: load average {result['load']} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end): "
        f"setting up the root {result['t_setup']}; the tests {result['t_tests']:.0f} s; the streams "
        f"{result['t_streams']:.0f} s (arm64 dump under emulation, x86 dump, compare).",
    ]
    return "".join(textwrap.fill(line, 105, initial_indent="     ", subsequent_indent="       ",
                                 break_on_hyphens=False) + "\n" for line in lines)


def write_docs(body: str, doc: Path = DOC) -> None:
    text = doc.read_text(encoding="utf-8")
    pattern = re.compile(rf"(<!-- generated: {REGION} -->\n).*?(<!-- end: {REGION} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"arm64_check: error: {doc}: no <!-- generated: {REGION} --> region")
    new = pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, doc)


# ------------------------------------------------------------------------------------------- main
def check(root: Path, load: str) -> tuple:
    commit = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h"], capture_output=True,
                            text=True).stdout.strip()  # the code as it is when the run starts
    setup(root)
    t_setup = (root / READY).read_text(encoding="utf-8").split(", ")[0]  # "404 s on 2026-11-28"
    versions = chroot_python(root, "-c", "import sys, numpy, platform; "
                             "print(sys.version.split()[0], numpy.__version__, platform.machine())",
                             cwd="/", capture_output=True, text=True).stdout.split()
    if versions[2] != "aarch64":
        raise SystemExit(f"arm64_check: error: the root's python3 runs as {versions[2]}, not aarch64")

    tests = robot_side_tests()
    copy_tree(root, tests)
    start = time.monotonic()
    names = [f"tests/{path.name}" for path in tests]
    log(f"{len(names)} robot-side test files under emulation (pytest's output when it ends; ≈ 3-4 min)")
    done = chroot_python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *names,
                         capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout[-6000:])
    sys.stderr.write(done.stderr[-3000:])
    t_tests = time.monotonic() - start

    start = time.monotonic()
    chroot_python(root, "benchmarks/preset_streams.py", "dump", "/tmp/arm64.npz")
    with tempfile.TemporaryDirectory() as tmp:
        x86 = Path(tmp) / "x86.npz"
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        run([sys.executable, REPO / "benchmarks" / "preset_streams.py", "dump", x86], env=env)
        compared = run([sys.executable, REPO / "benchmarks" / "preset_streams.py", "compare", x86,
                        root / "tmp" / "arm64.npz"], capture_output=True, text=True, check=False)
    print(compared.stdout, end="")
    t_streams = time.monotonic() - start
    fields, unequal = parse_compare(compared.stdout)
    import numpy
    result = {"date": datetime.date.today().isoformat(), "commit": commit or "?",
              "arm_python": versions[0], "arm_numpy": versions[1],
              "x86_python": platform.python_version(), "x86_numpy": numpy.__version__,
              "tests": [path.stem for path in tests], "pytest": pytest_summary(done.stdout),
              "fields": fields, "unequal": unequal, "load": load, "t_setup": t_setup,
              "t_tests": t_tests, "t_streams": t_streams}
    failed = done.returncode != 0 or compared.returncode != 0 or bool(unequal)
    return result, failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, type=Path,
                        help="folder of the Debian arm64 root (made once, reused) outside the repository")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"rewrite docs/models.md's '{REGION}' region with this run's results")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if root == REPO or REPO in root.parents:
        parser.error(f"--root {root}: must lie outside the repository")
    if os.geteuid() != 0:
        parser.error("run as root (apt-get, debootstrap, binfmt_misc and chroot need it)")
    if platform.machine() != "x86_64":
        parser.error(f"this machine is {platform.machine()}: the check compares arm64 with x86_64")
    try:
        result, failed = check(root, f"{os.getloadavg()[0]:.1f}")
    except subprocess.CalledProcessError as error:
        command = " ".join(error.cmd[:4])
        print(f"arm64_check: error: {command} … exited with {error.returncode}", file=sys.stderr)
        return 2
    body = render(result)
    print(body, end="")
    if args.write_docs:
        write_docs(body)
        log(f"wrote {DOC.relative_to(REPO)} ({REGION})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
